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
Offset expiry (``offsets.retention.minutes``) is not implemented yet.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from regroup.classic.group import ClassicGroup
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
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

__all__ = ["OFFSET_METADATA_MAX_BYTES", "CommittedOffset", "OffsetManager"]

#: Kafka's ``offset.metadata.max.bytes`` default.
OFFSET_METADATA_MAX_BYTES = 4096

Handler = Callable[[Hashable, Any, int], CoordinatorResult]

#: How many partition indexes keep a shared "no committed offset" answer (a bound on memory
#: that a client naming arbitrary indexes cannot push up).
_NO_OFFSET_ANSWERS = 1 << 16


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = 0

    def __init__(
        self,
        offset: int,
        leader_epoch: int = -1,
        metadata: str = "",
        commit_timestamp_ms: int = 0,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "leader_epoch", leader_epoch)
        object.__setattr__(self, "metadata", metadata)
        object.__setattr__(self, "commit_timestamp_ms", commit_timestamp_ms)


class OffsetManager:
    """The committed offsets of every group of one coordinator."""

    def __init__(self, state: GroupCoordinatorState) -> None:
        self.state = state
        #: group id -> partition -> committed offset.
        self.offsets: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        #: The OffsetFetch answer "no committed offset" by partition index (immutable, shared).
        self._no_offset: dict[int, OffsetFetchResponsePartition] = {}

    def handlers(self) -> dict[type, Handler]:
        return {OffsetCommitRequest: self.commit, OffsetFetchRequest: self.fetch}

    # -- queries -----------------------------------------------------------------------

    def committed(self, group_id: str, partition: TopicPartition) -> CommittedOffset | None:
        return self.offsets.get(group_id, {}).get(partition)

    def group_offsets(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        return dict(self.offsets.get(group_id, {}))

    # -- OffsetCommit ------------------------------------------------------------------

    def commit(
        self, token: Hashable, request: OffsetCommitRequest, now_ms: int
    ) -> CoordinatorResult:
        out = CoordinatorResult()
        partitions = [
            topic_partition(t.name, p.partition_index) for t in request.topics for p in t.partitions
        ]
        try:
            self._validate_commit(request, now_ms)
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
                self._apply(request.group_id, tp, value)
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

    def _validate_commit(self, request: OffsetCommitRequest, now_ms: int) -> None:
        if not request.group_id:
            raise KafkaProtocolError(ErrorCode.INVALID_GROUP_ID)
        group = self.state.groups.get(request.group_id)
        if group is None:
            if request.generation_id_or_member_epoch < 0:
                # Kafka: a "simple" classic group, created by a commit from outside any group.
                self.state.groups[request.group_id] = ClassicGroup(request.group_id, now_ms)
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

    # -- OffsetFetch -------------------------------------------------------------------

    def fetch(self, token: Hashable, request: OffsetFetchRequest, now_ms: int) -> CoordinatorResult:
        del now_ms
        out = CoordinatorResult()
        group = self.state.groups.get(request.group_id)
        try:
            if group is None:
                if request.member_id and request.member_epoch >= 0:
                    raise KafkaProtocolError(ErrorCode.GROUP_ID_NOT_FOUND)
            else:
                group.validate_offset_fetch(request.member_id, request.member_epoch)
        except KafkaProtocolError as exc:
            return out.reply(token, OffsetFetchResponse(exc.code))
        stored = self.offsets.get(request.group_id, {})
        topics: list[OffsetFetchResponseTopic] = []
        if request.topics is None:
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(stored, key=lambda t: (t.topic, t.partition)):
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            wanted: Iterable[tuple[str, Iterable[int]]] = by_topic.items()
        else:
            wanted = ((t.name, t.partition_indexes) for t in request.topics)
        none = self._no_offset
        for name, indexes in wanted:
            answers = []
            for index in indexes:
                offset = stored.get(topic_partition(name, index)) if stored else None
                if offset is None:
                    # Frozen and equal for equal indexes: one shared answer per index.
                    answer = none.get(index)
                    if answer is None:
                        answer = OffsetFetchResponsePartition(index, metadata="")
                        if len(none) < _NO_OFFSET_ANSWERS:
                            none[index] = answer
                    answers.append(answer)
                else:
                    answers.append(
                        OffsetFetchResponsePartition(
                            index, offset.offset, offset.leader_epoch, offset.metadata
                        )
                    )
            topics.append(OffsetFetchResponseTopic(name, tuple(answers)))
        return out.reply(token, OffsetFetchResponse(ErrorCode.NONE, tuple(topics)))

    # -- deletion ----------------------------------------------------------------------

    def delete_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition]
    ) -> CoordinatorResult:
        """Tombstone and forget the given partitions' offsets (OffsetDelete, expiry)."""
        out = CoordinatorResult()
        stored = self.offsets.get(group_id, {})
        for tp in list(partitions):
            if tp in stored:
                out.records.append(
                    CoordinatorRecord(OffsetCommitKey(group_id, tp.topic, tp.partition), None)
                )
                self._apply(group_id, tp, None)
        return out

    def delete_group_offsets(self, group_id: str) -> CoordinatorResult:
        """Tombstones for every offset of ``group_id`` (group deletion)."""
        return self.delete_offsets(group_id, sorted(self.offsets.get(group_id, {})))

    # -- records -----------------------------------------------------------------------

    def replay(self, record: CoordinatorRecord) -> bool:
        """Apply an OffsetCommit record (Kafka ``OffsetMetadataManager.replay``).

        As Kafka does, an offset for a group that does not exist creates the
        "simple" empty classic group it belongs to.
        """
        if not isinstance(record.key, OffsetCommitKey):
            return False
        key = record.key
        value = record.value
        assert value is None or isinstance(value, OffsetCommitValue)
        if value is not None and key.group not in self.state.groups:
            self.state.groups[key.group] = ClassicGroup(key.group, value.commit_timestamp)
        self._apply(key.group, topic_partition(key.topic, key.partition), value)
        return True

    def _apply(self, group_id: str, tp: TopicPartition, value: OffsetCommitValue | None) -> None:
        if value is None:
            stored = self.offsets.get(group_id)
            if stored is not None:
                stored.pop(tp, None)
                if not stored:
                    del self.offsets[group_id]
            return
        self.offsets.setdefault(group_id, {})[tp] = CommittedOffset(
            value.offset, value.leader_epoch, value.metadata, value.commit_timestamp
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
