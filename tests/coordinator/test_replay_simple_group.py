"""Replaying a group that began as a simple group.

A commit from outside group management (generation -1, no member id) creates a
"simple" classic group that no record describes; a KIP-848 member joining the
group later replaces it. The coordinator writes the offsets first and the
consumer group after, so a replay meets the offsets, rebuilds the simple group,
then meets consumer group records for a group id that holds a classic group.
Kafka replaces the simple group there
(``GroupMetadataManager.getOrMaybeCreatePersistedConsumerGroup``); so must
regroup, or a data directory with such a group never starts again.

The property at the end drives one group through random simple commits, KIP-848
and classic members, migrations and timeouts, and replays what was written
after every step, in full and compacted as ``regroup.server.log.store`` keeps it.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.classic.group.group import ClassicGroup
from regroup.consumer.group.group import ConsumerGroup, IllegalGroupStateError
from regroup.coordinator.service import GroupCoordinator
from regroup.model import TopicPartition
from regroup.model.errors import ErrorCode
from regroup.model.requests.classic import JoinGroupResponse, SyncGroupRequest
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from regroup.records import CoordinatorRecord, RecordKey
from regroup.records.classic import GroupMetadataKey
from regroup.records.consumer import ConsumerGroupMemberMetadataKey, ConsumerGroupMetadataKey
from regroup.records.offsets import OffsetCommitKey
from tests.coordinator.migration_harness import MigrationHarness


def commit(h: MigrationHarness, offset: int, member_id: str = "", generation: int = -1) -> None:
    reply = h.call(
        OffsetCommitRequest(
            "g",
            generation,
            member_id,
            (OffsetCommitRequestTopic("foo", (OffsetCommitRequestPartition(0, offset),)),),
            supports_member_epoch=False,
        ),
        OffsetCommitResponse,
    )
    assert reply.topics[0].partitions[0].error_code == ErrorCode.NONE


def compacted(records: list[CoordinatorRecord]) -> list[CoordinatorRecord]:
    """What log compaction leaves (``regroup.server.log.store``, rule 2): each key's last
    value, in the order of those last writes, without tombstones."""
    latest: dict[RecordKey, CoordinatorRecord] = {}
    for record in records:
        latest.pop(record.key, None)
        if record.value is not None:
            latest[record.key] = record
    return list(latest.values())


def replayed(h: MigrationHarness, records: list[CoordinatorRecord]) -> GroupCoordinator:
    fresh = GroupCoordinator(h.coordinator.config, metadata=h.coordinator.metadata)
    for record in records:
        fresh.replay(record)
    return fresh


def assert_same_consumer_group(h: MigrationHarness, fresh: GroupCoordinator) -> None:
    live, rebuilt = h.group(), fresh.groups["g"]
    assert isinstance(rebuilt, ConsumerGroup)
    assert rebuilt.group_epoch == live.group_epoch
    assert rebuilt.assignment_epoch == live.assignment_epoch
    assert rebuilt.members == live.members
    assert fresh.offsets.by_group == h.coordinator.offsets.by_group


def simple_commit_then_kip848_join() -> MigrationHarness:
    h = MigrationHarness()
    commit(h, 10)
    simple = h.coordinator.groups["g"]
    assert isinstance(simple, ClassicGroup) and simple.is_simple_group()
    assert h.join("k").error_code == ErrorCode.NONE
    assert isinstance(h.coordinator.groups["g"], ConsumerGroup)
    return h


def test_a_kip848_join_writes_the_simple_groups_tombstone_first() -> None:
    # Kafka getOrMaybeCreateConsumerGroup -> maybeDeleteEmptyClassicGroup writes a
    # GroupMetadata tombstone for every empty classic group, a simple one included,
    # ahead of the new consumer group's records.
    h = MigrationHarness()
    commit(h, 10)
    before = len(h.records)
    assert h.join("k").error_code == ErrorCode.NONE
    written = h.records[before:]
    assert written[0] == CoordinatorRecord(GroupMetadataKey("g"), None)
    assert all(not isinstance(r.key, GroupMetadataKey) for r in written[1:])
    assert isinstance(written[1].key, ConsumerGroupMemberMetadataKey)


def test_replaying_the_simple_groups_tombstone_removes_it_and_keeps_the_offsets() -> None:
    # Kafka replay(GroupMetadataKey, null) -> removeGroup; the offsets are the
    # OffsetMetadataManager's and stay.
    h = MigrationHarness()
    commit(h, 10)
    fresh = replayed(h, [*h.records, CoordinatorRecord(GroupMetadataKey("g"), None)])
    assert "g" not in fresh.groups
    assert fresh.offsets.committed("g", TopicPartition("foo", 0)) is not None


def test_simple_commit_then_kip848_join_replays_in_full() -> None:
    h = simple_commit_then_kip848_join()
    assert_same_consumer_group(h, replayed(h, h.records))


def test_simple_commit_then_kip848_join_replays_compacted() -> None:
    h = simple_commit_then_kip848_join()
    records = compacted(h.records)
    assert isinstance(records[0].key, OffsetCommitKey)  # the offset still comes first
    assert_same_consumer_group(h, replayed(h, records))


def test_an_upgraded_classic_group_with_offsets_replays_compacted() -> None:
    # Compaction removes the classic group's record with its tombstone; its offsets stay
    # ahead of the consumer group's records and rebuild a simple group on replay.
    h = MigrationHarness()
    a, _b = h.stable_classic_group([[0, 1], [2]])
    commit(h, 5, a, 1)
    assert h.join("k").error_code == ErrorCode.NONE
    assert h.coordinator.offsets.committed("g", TopicPartition("foo", 0)) is not None
    assert_same_consumer_group(h, replayed(h, compacted(h.records)))


def test_a_consumer_group_tombstone_leaves_a_simple_group_alone() -> None:
    h = MigrationHarness()
    commit(h, 10)
    fresh = replayed(
        h, [*h.records, CoordinatorRecord(ConsumerGroupMemberMetadataKey("g", "x"), None)]
    )
    group = fresh.groups["g"]
    assert isinstance(group, ClassicGroup) and group.is_simple_group()


def test_a_classic_group_with_members_is_never_replaced_by_replay() -> None:
    # Only a simple group, which no record describes, may give way; a record of a
    # consumer group over a group its records describe is a contradiction (Kafka:
    # IllegalStateException), left to the caller to report.
    h = MigrationHarness()
    h.stable_classic_group([[0, 1, 2]])
    epoch_record = next(
        r
        for r in simple_commit_then_kip848_join().records
        if isinstance(r.key, ConsumerGroupMetadataKey)
    )
    with pytest.raises(IllegalGroupStateError):
        replayed(h, [*h.records, epoch_record])


# -- property: whatever the group went through, its records replay ----------------------------

#: (operation, argument): the argument picks a member, or is the time a tick advances.

OPS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["simple_commit", "member_commit", "kip848_join"]), st.just(0)),
        st.tuples(st.sampled_from(["kip848_heartbeat", "kip848_leave"]), st.integers(0, 3)),
        st.tuples(
            st.sampled_from(["classic_join", "classic_sync", "classic_leave"]), st.integers(0, 3)
        ),
        st.tuples(st.just("tick"), st.sampled_from([1, 3000, 50000, 400000])),
    ),
    min_size=4,
    max_size=25,
)


def _offsets(tp: int, offset: int) -> tuple[OffsetCommitRequestTopic, ...]:
    return (OffsetCommitRequestTopic("foo", (OffsetCommitRequestPartition(tp, offset),)),)


def _step(h: MigrationHarness, op: str, arg: int, classic: dict[str, int], step: int) -> None:
    group = h.coordinator.groups.get("g")
    kip848 = (
        sorted(m for m, v in group.members.items() if v.classic_member_metadata is None)
        if isinstance(group, ConsumerGroup)
        else []
    )
    if op == "simple_commit":
        h.submit(OffsetCommitRequest("g", -1, "", _offsets(step % 3, step)))
    elif op == "member_commit" and kip848:
        member = kip848[0]
        epoch = h.group().members[member].member_epoch
        h.submit(OffsetCommitRequest("g", epoch, member, _offsets(0, step)))
    elif op == "member_commit" and classic:
        member = sorted(classic)[0]
        request = OffsetCommitRequest(
            "g", classic[member], member, _offsets(0, step), supports_member_epoch=False
        )
        h.submit(request)
    elif op == "kip848_join":
        h.join(f"k{len(h.records)}".ljust(22, "A"))
    elif op in ("kip848_heartbeat", "kip848_leave") and kip848:
        member = kip848[arg % len(kip848)]
        if op == "kip848_leave":
            h.hb(member, -1, None)
        else:
            h.hb(member, h.group().members[member].member_epoch, h.parts(member))
    elif op == "classic_join":
        known = sorted(classic)
        call = h.submit(h.join_request(known[arg] if arg < len(known) else ""), JoinGroupResponse)
        reply = call.response if call.answered else None
        if reply is not None and reply.error_code == ErrorCode.NONE:
            classic[reply.member_id] = reply.generation_id
    elif op == "classic_sync" and classic:
        member = sorted(classic)[arg % len(classic)]
        h.submit(SyncGroupRequest("g", classic[member], member, protocol_type="consumer"))
    elif op == "classic_leave" and classic:
        member = sorted(classic)[arg % len(classic)]
        h.cleave(member)
        del classic[member]
    elif op == "tick":
        h.advance(arg)


def _assert_replays(h: MigrationHarness, fresh: GroupCoordinator) -> None:
    live, rebuilt = h.coordinator.groups.get("g"), fresh.groups.get("g")
    assert fresh.offsets.by_group == h.coordinator.offsets.by_group
    if isinstance(live, ConsumerGroup):
        assert isinstance(rebuilt, ConsumerGroup)
        assert rebuilt.members == live.members
    elif isinstance(live, ClassicGroup) and rebuilt is not None:
        assert isinstance(rebuilt, ClassicGroup)  # a group joining has no record yet


@pytest.mark.parametrize("policy", ["BIDIRECTIONAL", "DISABLED"])
@settings(max_examples=40, deadline=None)
@given(ops=OPS)
def test_property_every_record_written_replays(policy: str, ops: list[tuple[str, int]]) -> None:
    h = MigrationHarness(group_consumer_migration_policy=policy)
    classic: dict[str, int] = {}
    for step, (op, arg) in enumerate(ops):
        _step(h, op, arg, classic, step)
        _assert_replays(h, replayed(h, h.records))
        _assert_replays(h, replayed(h, compacted(h.records)))
