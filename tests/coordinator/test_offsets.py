"""OffsetCommit / OffsetFetch: fencing by the group, simple groups, records and events."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from regroup.classic.group.group_state import ClassicGroupState
from regroup.coordinator.offsets import delete_group_offsets, delete_offsets
from regroup.events import OffsetCommitRejected, OffsetsCommitted
from regroup.model import TopicPartition
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from regroup.records.offsets import OffsetCommitKey, OffsetCommitValue

if TYPE_CHECKING:
    from tests.coordinator.conftest import ClassicContext

S = ClassicGroupState


def commit(
    cc: ClassicContext,
    member_id: str = "",
    generation: int = -1,
    offsets: dict[tuple[str, int], int] | None = None,
    *,
    group_id: str = "g",
    instance_id: str | None = None,
    metadata: str | None = None,
    supports_member_epoch: bool = True,
) -> dict[tuple[str, int], ErrorCode]:
    offsets = offsets if offsets is not None else {("t", 0): 10}
    topics: dict[str, list[OffsetCommitRequestPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            OffsetCommitRequestPartition(
                partition, offset, committed_leader_epoch=3, committed_metadata=metadata
            )
        )
    response = cc.call(
        OffsetCommitRequest(
            group_id=group_id,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            topics=tuple(OffsetCommitRequestTopic(t, tuple(ps)) for t, ps in topics.items()),
            group_instance_id=instance_id,
            supports_member_epoch=supports_member_epoch,
        )
    )
    assert isinstance(response, OffsetCommitResponse)
    return {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }


def fetch(
    cc: ClassicContext, topics: dict[str, tuple[int, ...]] | None = None, group_id: str = "g"
) -> OffsetFetchResponse:
    request = OffsetFetchRequest(
        group_id,
        None
        if topics is None
        else tuple(OffsetFetchRequestTopic(t, ps) for t, ps in topics.items()),
    )
    response = cc.call(request)
    assert isinstance(response, OffsetFetchResponse)
    return response


def offsets_of(response: OffsetFetchResponse) -> dict[tuple[str, int], int]:
    return {
        (t.name, p.partition_index): p.committed_offset
        for t in response.topics
        for p in t.partitions
    }


def test_simple_commit_creates_empty_classic_group(classic_cc: ClassicContext) -> None:
    assert commit(classic_cc) == {("t", 0): ErrorCode.NONE}
    group = classic_cc.group()
    assert group.group_type == "classic" and group.state is S.EMPTY
    assert group.is_simple_group()
    assert classic_cc.records[-1].key == OffsetCommitKey("g", "t", 0)
    assert classic_cc.records[-1].value == OffsetCommitValue(10, 3, "", 0)
    assert offsets_of(fetch(classic_cc)) == {("t", 0): 10}


def test_commit_to_unknown_group_with_generation(classic_cc: ClassicContext) -> None:
    assert commit(classic_cc, "m", 1) == {("t", 0): ErrorCode.GROUP_ID_NOT_FOUND}
    assert commit(classic_cc, "m", 1, supports_member_epoch=False) == {
        ("t", 0): ErrorCode.ILLEGAL_GENERATION
    }
    assert classic_cc.groups == {}
    rejected = classic_cc.events_of(OffsetCommitRejected)
    assert [e.error for e in rejected] == ["GROUP_ID_NOT_FOUND", "ILLEGAL_GENERATION"]


def test_empty_group_id(classic_cc: ClassicContext) -> None:
    assert commit(classic_cc, group_id="") == {("t", 0): ErrorCode.INVALID_GROUP_ID}


def test_member_commit_with_generation_fencing(classic_cc: ClassicContext) -> None:
    a, _b = classic_cc.stable_group(2)
    assert commit(classic_cc, a, 1) == {("t", 0): ErrorCode.NONE}
    assert commit(classic_cc, a, 2) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert commit(classic_cc, "ghost", 1) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    # outside commits into an active group are refused
    assert commit(classic_cc) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    committed = classic_cc.events_of(OffsetsCommitted)
    assert len(committed) == 1 and dict(committed[0].offsets) == {TopicPartition("t", 0): 10}


def test_static_member_commit_fencing(classic_cc: ClassicContext) -> None:
    t = classic_cc.join(instance_id="i1")
    classic_cc.settle(t)
    member = classic_cc.join_reply(t).member_id
    classic_cc.sync(member, 1, {member: b""})
    assert commit(classic_cc, member, 1, instance_id="i1") == {("t", 0): ErrorCode.NONE}
    assert commit(classic_cc, "old-id", 1, instance_id="i1") == {
        ("t", 0): ErrorCode.FENCED_INSTANCE_ID
    }
    assert commit(classic_cc, member, 1, instance_id="i9") == {
        ("t", 0): ErrorCode.UNKNOWN_MEMBER_ID
    }


def test_commit_in_completing_rebalance_is_rebalance_in_progress(
    classic_cc: ClassicContext,
) -> None:
    a, ta = classic_cc.join_new()
    classic_cc.settle(ta)
    assert classic_cc.group().state is S.COMPLETING_REBALANCE
    assert commit(classic_cc, a, 1) == {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}


def test_commit_in_preparing_rebalance(classic_cc: ClassicContext) -> None:
    """KIP-429 "Allow Consumer to Return Records in Rebalance", broker side.

    A member that already rejoined is in the rebalance: REBALANCE_IN_PROGRESS.
    A member that has not rejoined yet may still commit its generation (the
    eager member's commit in onPartitionsRevoked, as Kafka allows).
    """
    a, b = classic_cc.stable_group(2)
    classic_cc.join(a)
    assert classic_cc.group().state is S.PREPARING_REBALANCE
    assert commit(classic_cc, a, 1) == {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}
    assert commit(classic_cc, b, 1) == {("t", 0): ErrorCode.NONE}


def test_metadata_too_large(classic_cc: ClassicContext) -> None:
    codes = commit(classic_cc, offsets={("t", 0): 1}, metadata="x" * 4097)
    assert codes == {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    assert commit(classic_cc, offsets={("t", 0): 1}, metadata="x" * 4096) == {
        ("t", 0): ErrorCode.NONE
    }


def test_fetch_requested_and_all(classic_cc: ClassicContext) -> None:
    commit(classic_cc, offsets={("b", 1): 5, ("a", 0): 7, ("a", 2): 9}, metadata="m")
    assert offsets_of(fetch(classic_cc, {"a": (0, 1)})) == {("a", 0): 7, ("a", 1): -1}
    everything = fetch(classic_cc)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in everything.topics] == [
        ("a", [0, 2]),
        ("b", [1]),
    ]
    assert everything.topics[0].partitions[0].metadata == "m"
    assert everything.topics[0].partitions[0].committed_leader_epoch == 3


def test_fetch_unknown_group(classic_cc: ClassicContext) -> None:
    response = fetch(classic_cc, {"t": (0,)}, group_id="none")
    assert response.error_code == ErrorCode.NONE
    assert offsets_of(response) == {("t", 0): -1}
    assert fetch(classic_cc, group_id="none").topics == ()
    kip848 = classic_cc.call(
        OffsetFetchRequest("none", None, member_id="m", member_epoch=3), OffsetFetchResponse
    )
    assert kip848.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_fetch_from_dead_group_refused(classic_cc: ClassicContext) -> None:
    commit(classic_cc)
    classic_cc.group().state = S.DEAD
    assert fetch(classic_cc).error_code == ErrorCode.GROUP_ID_NOT_FOUND
    with pytest.raises(KafkaProtocolError):
        classic_cc.group().validate_offset_commit("", None, -1, True)


def test_delete_offsets_writes_tombstones_and_replays(classic_cc: ClassicContext) -> None:
    commit(classic_cc, offsets={("t", 0): 1, ("t", 1): 2})
    result = classic_cc.absorb(
        delete_offsets(classic_cc.coordinator.state, "g", [TopicPartition("t", 0)])
    )
    assert [r.is_tombstone for r in result.records] == [True]
    assert offsets_of(fetch(classic_cc)) == {("t", 1): 2}
    replayed = classic_cc.replayed()
    assert replayed.coordinator.offsets.by_group == classic_cc.coordinator.offsets.by_group
    classic_cc.absorb(delete_group_offsets(classic_cc.coordinator.state, "g"))
    assert classic_cc.coordinator.offsets.group_offsets("g") == {}
    assert classic_cc.replayed().coordinator.offsets.by_group == {}


def test_replay_of_offsets_recreates_simple_group(classic_cc: ClassicContext) -> None:
    classic_cc.advance(1234)
    commit(classic_cc)
    replayed = classic_cc.replayed()
    group = replayed.group()
    assert group.state is S.EMPTY and group.current_state_timestamp_ms == 1234
    committed = replayed.coordinator.offsets.committed("g", TopicPartition("t", 0))
    assert committed is not None and committed.offset == 10


def test_group_with_offsets_then_members(classic_cc: ClassicContext) -> None:
    commit(classic_cc)
    a, _b = classic_cc.stable_group(2)
    assert commit(classic_cc, a, 1, offsets={("t", 0): 11}) == {("t", 0): ErrorCode.NONE}
    assert offsets_of(fetch(classic_cc)) == {("t", 0): 11}
