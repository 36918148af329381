"""Committed offsets: OffsetCommit, OffsetFetch and their records (Kafka ``OffsetMetadataManager``).

Commit (Kafka ``OffsetMetadataManager.commitOffset``):

1. an empty group id: INVALID_GROUP_ID for every partition;
2. an unknown group: a commit from outside group management (generation or
   member epoch < 0) creates an empty classic group, a "simple" group that
   only stores offsets (Kafka ``getOrMaybeCreateClassicGroup(id, true)``);
   otherwise GROUP_ID_NOT_FOUND (OffsetCommit v9+, ``supports_member_epoch``)
   or ILLEGAL_GENERATION (older versions), as Kafka answers;
3. the group fences the committer: ``group.validate_offset_commit`` (classic
   groups: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
   REBALANCE_IN_PROGRESS, see ``ClassicGroup.validate_offset_commit``; KIP-848
   groups: STALE_MEMBER_EPOCH and friends); a refusal answers every partition
   with the error and emits ``offset_commit_rejected``;
4. per partition, metadata longer than ``offset.metadata.max.bytes`` (4096,
   Kafka's default) is OFFSET_METADATA_TOO_LARGE; every other partition is
   stored with one OffsetCommit record and the commit time.

Fetch (Kafka ``fetchOffsets`` / ``fetchAllOffsets``): the group may refuse
(``validate_offset_fetch``: a Dead classic group, a KIP-848 member with a stale
epoch); an unknown group has no offsets, except that a KIP-848 member naming
itself (member id and epoch >= 0) gets GROUP_ID_NOT_FOUND. A partition without
an offset answers offset -1, leader epoch -1, metadata "". ``topics=None``
returns every committed partition of the group, sorted by topic and partition.

Unlike Kafka's ``KafkaApis``, topics are not checked against the metadata
image (Kafka's coordinator itself does not check them either); transactional
offsets (``require_stable``) do not exist here, so fetches are always stable.
Offset expiry (``offsets.retention.minutes``) is ``expiry``'s.

The offsets are the state's ``CommittedOffsets``; they change by the handlers
here and by ``replay`` of OffsetCommit records, which also creates the simple
group an offset belongs to, as Kafka's ``OffsetMetadataManager.replay`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from functools import lru_cache

from regroup.classic.group.group import ClassicGroup
from regroup.coordinator.group import Group
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import CommittedOffset, GroupCoordinatorState
from regroup.events.schema import OffsetCommitRejected, OffsetsCommitted
from regroup.model import TopicPartition, topic_partition
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from regroup.records import CoordinatorRecord
from regroup.records.offsets import OffsetCommitKey, OffsetCommitValue

__all__ = [
    "OFFSET_METADATA_MAX_BYTES",
    "delete_group_offsets",
    "delete_offsets",
    "handle_offset_commit",
    "handle_offset_fetch",
    "replay",
]

#: Kafka's ``offset.metadata.max.bytes`` default.
OFFSET_METADATA_MAX_BYTES = 4096


# -- OffsetCommit ----------------------------------------------------------------------


def handle_offset_commit(
    state: GroupCoordinatorState, token: Hashable, request: OffsetCommitRequest, now_ms: int
) -> CoordinatorResult:
    out = CoordinatorResult()
    partitions = [
        topic_partition(t.name, p.partition_index) for t in request.topics for p in t.partitions
    ]
    try:
        _validate_commit(state, request, now_ms)
    except KafkaProtocolError as exc:
        error = exc.code
        out.events.append(
            OffsetCommitRejected(
                ts_ms=now_ms,
                group_id=request.group_id,
                member_id=request.member_id,
                generation_or_epoch=request.generation_id_or_member_epoch,
                error=error.name,
                partitions=tuple(partitions),
            )
        )
        return out.reply(token, _commit_response(request, lambda _tp: error))

    codes: dict[TopicPartition, ErrorCode] = {}
    committed: dict[TopicPartition, int] = {}
    too_large: list[TopicPartition] = []
    for topic in request.topics:
        for p in topic.partitions:
            tp = topic_partition(topic.name, p.partition_index)
            metadata = p.committed_metadata or ""
            if len(metadata.encode("utf-8")) > OFFSET_METADATA_MAX_BYTES:
                codes[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                too_large.append(tp)
                continue
            value = OffsetCommitValue(
                offset=p.committed_offset,
                leader_epoch=p.committed_leader_epoch,
                metadata=metadata,
                commit_timestamp=now_ms,
            )
            record = CoordinatorRecord(
                OffsetCommitKey(request.group_id, topic.name, p.partition_index), value
            )
            _apply(state, request.group_id, tp, value)
            out.records.append(record)
            codes[tp] = ErrorCode.NONE
            committed[tp] = p.committed_offset
    if committed:
        out.events.append(
            OffsetsCommitted(
                ts_ms=now_ms,
                group_id=request.group_id,
                member_id=request.member_id,
                generation_or_epoch=request.generation_id_or_member_epoch,
                offsets=committed,
            )
        )
    if too_large:
        out.events.append(
            OffsetCommitRejected(
                ts_ms=now_ms,
                group_id=request.group_id,
                member_id=request.member_id,
                generation_or_epoch=request.generation_id_or_member_epoch,
                error=ErrorCode.OFFSET_METADATA_TOO_LARGE.name,
                partitions=tuple(too_large),
            )
        )
    return out.reply(token, _commit_response(request, lambda tp: codes[tp]))


def _validate_commit(
    state: GroupCoordinatorState, request: OffsetCommitRequest, now_ms: int
) -> None:
    if not request.group_id:
        raise KafkaProtocolError(ErrorCode.INVALID_GROUP_ID)
    group: Group | None = state.groups.get(request.group_id)
    if group is None:
        if request.generation_id_or_member_epoch < 0:
            # Kafka: a "simple" classic group, created by a commit from outside any group.
            state.groups[request.group_id] = ClassicGroup(request.group_id, now_ms)
            return
        if request.supports_member_epoch:
            raise KafkaProtocolError(ErrorCode.GROUP_ID_NOT_FOUND)
        raise KafkaProtocolError(ErrorCode.ILLEGAL_GENERATION)
    group.validate_offset_commit(
        request.member_id,
        request.group_instance_id,
        request.generation_id_or_member_epoch,
        request.supports_member_epoch,
    )


def _commit_response(
    request: OffsetCommitRequest, code_of: Callable[[TopicPartition], ErrorCode]
) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        tuple(
            OffsetCommitResponseTopic(
                t.name,
                tuple(
                    OffsetCommitResponsePartition(
                        p.partition_index, code_of(topic_partition(t.name, p.partition_index))
                    )
                    for p in t.partitions
                ),
            )
            for t in request.topics
        )
    )


# -- OffsetFetch -----------------------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def _no_offset(index: int) -> OffsetFetchResponsePartition:
    """The answer "no committed offset" for a partition index: frozen, so one per index."""
    return OffsetFetchResponsePartition(index, metadata="")


def handle_offset_fetch(
    state: GroupCoordinatorState, token: Hashable, request: OffsetFetchRequest, now_ms: int
) -> CoordinatorResult:
    del now_ms
    out = CoordinatorResult()
    group: Group | None = state.groups.get(request.group_id)
    try:
        if group is None:
            if request.member_id and request.member_epoch >= 0:
                raise KafkaProtocolError(ErrorCode.GROUP_ID_NOT_FOUND)
        else:
            group.validate_offset_fetch(request.member_id, request.member_epoch)
    except KafkaProtocolError as exc:
        return out.reply(token, OffsetFetchResponse(exc.code))
    stored = state.offsets.by_group.get(request.group_id, {})
    topics: list[OffsetFetchResponseTopic] = []
    if request.topics is None:
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(stored, key=lambda t: (t.topic, t.partition)):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        wanted: Iterable[tuple[str, Iterable[int]]] = by_topic.items()
    else:
        wanted = ((t.name, t.partition_indexes) for t in request.topics)
    for name, indexes in wanted:
        answers = []
        for index in indexes:
            offset = stored.get(topic_partition(name, index)) if stored else None
            if offset is None:
                answers.append(_no_offset(index))
            else:
                answers.append(
                    OffsetFetchResponsePartition(
                        index, offset.offset, offset.leader_epoch, offset.metadata
                    )
                )
        topics.append(OffsetFetchResponseTopic(name, tuple(answers)))
    return out.reply(token, OffsetFetchResponse(ErrorCode.NONE, tuple(topics)))


# -- deletion and replay ----------------------------------------------------------------


def delete_offsets(
    state: GroupCoordinatorState, group_id: str, partitions: Iterable[TopicPartition]
) -> CoordinatorResult:
    """Tombstone and forget the given partitions' offsets (OffsetDelete, expiry)."""
    out = CoordinatorResult()
    stored = state.offsets.by_group.get(group_id, {})
    for tp in list(partitions):
        if tp in stored:
            out.records.append(
                CoordinatorRecord(OffsetCommitKey(group_id, tp.topic, tp.partition), None)
            )
            _apply(state, group_id, tp, None)
    return out


def delete_group_offsets(state: GroupCoordinatorState, group_id: str) -> CoordinatorResult:
    """Tombstones for every offset of ``group_id`` (group deletion)."""
    return delete_offsets(state, group_id, sorted(state.offsets.by_group.get(group_id, {})))


def replay(state: GroupCoordinatorState, record: CoordinatorRecord) -> None:
    """Apply an OffsetCommit record (Kafka ``OffsetMetadataManager.replay``).

    As Kafka does, an offset for a group that does not exist creates the
    "simple" empty classic group it belongs to.
    """
    key = record.key
    value = record.value
    assert isinstance(key, OffsetCommitKey)
    assert value is None or isinstance(value, OffsetCommitValue)
    if value is not None and key.group not in state.groups:
        state.groups[key.group] = ClassicGroup(key.group, value.commit_timestamp)
    _apply(state, key.group, topic_partition(key.topic, key.partition), value)


def _apply(
    state: GroupCoordinatorState,
    group_id: str,
    tp: TopicPartition,
    value: OffsetCommitValue | None,
) -> None:
    state.offsets.put(
        group_id,
        tp,
        None
        if value is None
        else CommittedOffset(
            value.offset, value.leader_epoch, value.metadata, value.commit_timestamp
        ),
    )
