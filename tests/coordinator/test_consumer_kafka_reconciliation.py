"""Reconciliation, static members and fencing: Kafka 4.0's ``GroupMetadataManagerTest``, ported.

Each test keeps the Kafka test's name (snake_case) and its scenario: the group is
built from records as Kafka's ``ConsumerGroupBuilder`` builds it, the assignor's
result is scripted as Kafka's ``MockPartitionAssignor.prepareGroupAssignment``
does (``ScriptedAssignor``, repeating), and every response and record the Kafka
test checks is checked here. Written from reading Kafka's tests, not copied; all
run under ``regroup.consumer.semantics=kafka`` (the default).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from regroup.assignors.consumer.api import GroupAssignment, MemberAssignment, TopicMetadata
from regroup.consumer.group.group_member import Assignment, ConsumerGroupMember, MemberState
from regroup.coordinator.consumer import records
from regroup.coordinator.consumer.rebalance import ScriptedAssignor
from regroup.model.errors import ErrorCode
from regroup.model.requests.consumer import ConsumerGroupHeartbeatResponse
from regroup.model.uuid import Uuid
from regroup.records.consumer import ConsumerGroupCurrentMemberAssignmentValue
from tests.coordinator.consumer_group_harness import Harness

G = "fooup"
FOO = Uuid.for_name("foo")
BAR = Uuid.for_name("bar")
S = MemberState


def a(foo: tuple[int, ...] = (), bar: tuple[int, ...] = ()) -> Assignment:
    result: dict[Uuid, frozenset[int]] = {}
    if foo:
        result[FOO] = frozenset(foo)
    if bar:
        result[BAR] = frozenset(bar)
    return result


def tps(foo: tuple[int, ...] = (), bar: tuple[int, ...] = ()) -> dict[str, tuple[int, ...]]:
    """Owned partitions by topic name, as a request's TopicPartitions."""
    return {name: ps for name, ps in (("foo", foo), ("bar", bar)) if ps}


def stable_member(member_id: str, assigned: Assignment, **fields: Any) -> ConsumerGroupMember:
    member = ConsumerGroupMember(
        member_id,
        rebalance_timeout_ms=5000,
        client_id="client",
        client_host="localhost/127.0.0.1",
        subscribed_topic_names=frozenset({"foo", "bar"}),
        server_assignor="range",
        state=S.STABLE,
        member_epoch=10,
        previous_member_epoch=9,
        assigned_partitions=assigned,
    )
    return replace(member, **fields)


def group_with(h: Harness, epoch: int, members: list[ConsumerGroupMember]) -> None:
    """Kafka's ``ConsumerGroupBuilder``: the group's records, then its timers."""
    out = [records.epoch_record(G, epoch)]
    out.append(
        records.partition_metadata_record(
            G,
            {
                "bar": TopicMetadata(BAR, "bar", 3, ()),
                "foo": TopicMetadata(FOO, "foo", 6, ()),
            },
        )
    )
    for member in members:
        out.append(records.member_metadata_record(G, member))
    for member in members:
        out.append(records.target_member_record(G, member.member_id, member.assigned_partitions))
    out.append(records.target_metadata_record(G, epoch))
    for member in members:
        out.append(records.current_assignment_record(G, member))
    h.replay(out)
    h.on_loaded()


def prepare(h: Harness, assignment: Mapping[str, Assignment]) -> None:
    """Kafka ``MockPartitionAssignor.prepareGroupAssignment``: every computation returns it."""
    result = GroupAssignment({m: MemberAssignment(p) for m, p in assignment.items()})
    h.coordinator.consumer.scripted[G] = [ScriptedAssignor(result, repeat=True)]


def hb(
    h: Harness, member_id: str, epoch: int, owned: dict[str, tuple[int, ...]] | None = None
) -> ConsumerGroupHeartbeatResponse:
    return h.consumer_group_heartbeat(G, member_id, epoch, owned=owned)


def assignment_of(response: ConsumerGroupHeartbeatResponse) -> Assignment | None:
    if response.assignment is None:
        return None
    return {tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions}


def current(h: Harness, member_id: str) -> tuple[S, int, int, Assignment, Assignment]:
    m = h.consumer_group(G).members[member_id]
    return (
        m.state,
        m.member_epoch,
        m.previous_member_epoch,
        dict(m.assigned_partitions),
        dict(m.partitions_pending_revocation),
    )


def only_current_assignment_record(h: Harness, member_id: str) -> None:
    written = h.last_result.records
    assert [(r.key.record_name, getattr(r.key, "member_id", None)) for r in written] == [
        ("ConsumerGroupCurrentMemberAssignment", member_id)
    ]


def test_reconciliation_process() -> None:
    h = Harness(topics={"foo": 6, "bar": 3}, group_consumer_assignors=("range",))
    group_with(
        h,
        10,
        [
            stable_member("member-1", a((0, 1, 2), (0, 1))),
            stable_member("member-2", a((3, 4, 5), (2,))),
        ],
    )
    prepare(
        h,
        {
            "member-1": a((0, 1), (0,)),
            "member-2": a((2, 3), (2,)),
            "member-3": a((4, 5), (1,)),
        },
    )
    assert h.consumer_group(G).state_name() == "Stable"

    # Member 3 joins: new target at epoch 11; everything it gets is still owned, so it
    # is at epoch 11 in UNRELEASED_PARTITIONS with nothing.
    joined = h.consumer_group_heartbeat(
        G,
        "member-3",
        0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        server_assignor="range",
        owned={},
    )
    assert (joined.member_epoch, assignment_of(joined)) == (11, {})
    assert current(h, "member-3") == (S.UNRELEASED_PARTITIONS, 11, 0, {}, {})
    assert h.last_result.records[-1].key.record_name == "ConsumerGroupCurrentMemberAssignment"
    assert h.consumer_group(G).state_name() == "Reconciling"

    # Member 1 heartbeats: stays at 10, must revoke foo-2 and bar-1; previous epoch 10.
    r = hb(h, "member-1", 10)
    assert (r.member_epoch, assignment_of(r)) == (10, a((0, 1), (0,)))
    assert current(h, "member-1") == (
        S.UNREVOKED_PARTITIONS,
        10,
        10,
        a((0, 1), (0,)),
        a((2,), (1,)),
    )
    only_current_assignment_record(h, "member-1")

    # Member 2 likewise: keeps foo-3 and bar-2, revokes foo-4 and foo-5.
    r = hb(h, "member-2", 10)
    assert (r.member_epoch, assignment_of(r)) == (10, a((3,), (2,)))
    assert current(h, "member-2") == (S.UNREVOKED_PARTITIONS, 10, 10, a((3,), (2,)), a((4, 5)))
    only_current_assignment_record(h, "member-2")

    # Member 3 heartbeats: still waiting; no assignment, but the previous epoch moves.
    r = hb(h, "member-3", 11)
    assert (r.member_epoch, r.assignment) == (11, None)
    assert current(h, "member-3") == (S.UNRELEASED_PARTITIONS, 11, 11, {}, {})
    only_current_assignment_record(h, "member-3")

    # Member 1 acknowledges the revocation: epoch 11, STABLE (its partitions did not
    # change in this heartbeat, so Kafka 4.0 does not repeat them).
    r = hb(h, "member-1", 10, tps((0, 1), (0,)))
    assert (r.member_epoch, r.assignment) == (11, None)
    assert current(h, "member-1") == (S.STABLE, 11, 10, a((0, 1), (0,)), {})
    only_current_assignment_record(h, "member-1")

    # Member 2 heartbeats without acknowledging: a no-op.
    r = hb(h, "member-2", 10)
    assert (r.member_epoch, r.assignment) == (10, None)
    assert h.last_result.records == []
    assert current(h, "member-2")[0] is S.UNREVOKED_PARTITIONS

    # Member 3 gets bar-1 (released by member 1), still waits for foo-4 and foo-5.
    r = hb(h, "member-3", 11)
    assert (r.member_epoch, assignment_of(r)) == (11, a(bar=(1,)))
    assert current(h, "member-3") == (S.UNRELEASED_PARTITIONS, 11, 11, a(bar=(1,)), {})
    only_current_assignment_record(h, "member-3")

    # Member 3 again: member 2 has not released yet; nothing changes, nothing written.
    r = hb(h, "member-3", 11)
    assert (r.member_epoch, r.assignment) == (11, None)
    assert h.last_result.records == []

    # Member 2 acknowledges: epoch 11 with foo-2 (released by member 1), foo-3, bar-2.
    r = hb(h, "member-2", 10, tps((3,), (2,)))
    assert (r.member_epoch, assignment_of(r)) == (11, a((2, 3), (2,)))
    assert current(h, "member-2") == (S.STABLE, 11, 10, a((2, 3), (2,)), {})
    only_current_assignment_record(h, "member-2")

    # Member 3 gets everything now.
    r = hb(h, "member-3", 11)
    assert (r.member_epoch, assignment_of(r)) == (11, a((4, 5), (1,)))
    assert current(h, "member-3") == (S.STABLE, 11, 11, a((4, 5), (1,)), {})
    assert h.consumer_group(G).state_name() == "Stable"
    h.assert_replay_matches(G)


def test_static_member_gets_back_assignment_upon_rejoin() -> None:
    """A static member leaving with -2 and rejoining (same subscription) gets its
    partitions back at the group's epoch, without a rebalance."""
    h = Harness(topics={"foo": 6, "bar": 3}, group_consumer_assignors=("range",))
    group_with(
        h,
        10,
        [
            stable_member("member-1", a((0, 1, 2), (0, 1)), instance_id="instance-id-1"),
            stable_member("member-2", a((3, 4, 5), (2,)), instance_id="instance-id-2"),
        ],
    )
    left = h.consumer_group_heartbeat(G, "member-2", -2, instance_id="instance-id-2")
    assert (left.error_code, left.member_epoch) == (ErrorCode.NONE, -2)
    assert current(h, "member-2")[1] == -2
    back = h.consumer_group_heartbeat(
        G,
        "member-2-rejoin",
        0,
        instance_id="instance-id-2",
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        server_assignor="range",
        owned={},
    )
    assert (back.member_epoch, assignment_of(back)) == (10, a((3, 4, 5), (2,)))
    assert h.consumer_group(G).group_epoch == 10
    assert "member-2" not in h.consumer_group(G).members
    assert current(h, "member-2-rejoin") == (S.STABLE, 10, 0, a((3, 4, 5), (2,)), {})


def test_static_member_rejoins_with_instance_id_still_in_use() -> None:
    """Kafka ``testConsumerGroupMemberEpochValidation`` family: the instance id is held
    by a member that has not left (epoch != -2): UNRELEASED_INSTANCE_ID."""
    h = Harness(topics={"foo": 6, "bar": 3})
    group_with(
        h, 10, [stable_member("member-1", a((0, 1, 2), (0, 1, 2)), instance_id="instance-id-1")]
    )
    r = h.consumer_group_heartbeat(
        G,
        "member-1-other",
        0,
        instance_id="instance-id-1",
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo",),
        owned={},
    )
    assert r.error_code is ErrorCode.UNRELEASED_INSTANCE_ID


def test_consumer_group_member_epoch_validation() -> None:
    """Kafka ``testConsumerGroupMemberEpochValidation``: an epoch above the member's is
    fenced; below it, only the previous epoch with owned partitions within the
    assignment is accepted (the lost response)."""
    h = Harness(topics={"foo": 6, "bar": 3})
    member = stable_member("member", a((1, 2, 3)), member_epoch=100, previous_member_epoch=99)
    group_with(h, 100, [member])
    assert hb(h, "member", 200, tps()).error_code is ErrorCode.FENCED_MEMBER_EPOCH
    assert hb(h, "member", 50, tps()).error_code is ErrorCode.FENCED_MEMBER_EPOCH
    # the previous epoch, owning partitions it does not have: fenced.
    assert hb(h, "member", 99, tps((4, 5, 6))).error_code is ErrorCode.FENCED_MEMBER_EPOCH
    # the previous epoch with a subset of its partitions: accepted at the current epoch.
    r = hb(h, "member", 99, tps((1, 2, 3)))
    assert (r.error_code, r.member_epoch) == (ErrorCode.NONE, 100)


def test_unknown_member_and_fenced_instance() -> None:
    """Kafka ``testMemberIdGeneration``-era checks: an unknown member id is
    UNKNOWN_MEMBER_ID; a static member heartbeating with another's instance id is
    FENCED_INSTANCE_ID; an unknown instance id UNKNOWN_MEMBER_ID."""
    h = Harness(topics={"foo": 6, "bar": 3})
    group_with(
        h, 10, [stable_member("member-1", a((0, 1, 2), (0, 1, 2)), instance_id="instance-id-1")]
    )
    r = h.consumer_group_heartbeat(G, "ghost", 10)
    assert r.error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert r.error_message == "Member ghost is not a member of group fooup."
    r = h.consumer_group_heartbeat(G, "member-x", 10, instance_id="instance-id-1")
    assert r.error_code is ErrorCode.FENCED_INSTANCE_ID
    r = h.consumer_group_heartbeat(G, "member-1", 10, instance_id="instance-id-9")
    assert r.error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert r.error_message == "Instance id instance-id-9 is unknown."
    r = h.consumer_group_heartbeat(G, "member-x", 10, instance_id="instance-id-1")
    assert r.error_message == (
        "Static member member-x with instance id instance-id-1 was fenced by member member-1."
    )


def test_no_group_epoch_bump_when_static_member_temporarily_leaves() -> None:
    h = Harness(topics={"foo": 6, "bar": 3})
    group_with(
        h,
        10,
        [
            stable_member("member-1", a((0, 1, 2), (0, 1)), instance_id="member-1"),
            stable_member("member-2", a((3, 4, 5), (2,)), instance_id="member-2"),
        ],
    )
    r = h.consumer_group_heartbeat(
        G,
        "member-2",
        -2,
        instance_id="member-2",
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        owned={},
    )
    assert (r.member_epoch, r.heartbeat_interval_ms) == (-2, 0)
    written = h.last_result.records
    assert len(written) == 1
    value = written[0].value
    assert isinstance(value, ConsumerGroupCurrentMemberAssignmentValue)
    assert value.member_epoch == -2
    assert h.consumer_group(G).group_epoch == 10


def test_leaving_static_member_bumps_group_epoch() -> None:
    h = Harness(topics={"foo": 6, "bar": 3})
    group_with(
        h,
        10,
        [
            stable_member("member-1", a((0, 1, 2), (0, 1)), instance_id="member-1"),
            stable_member("member-2", a((3, 4, 5), (2,)), instance_id="member-2"),
        ],
    )
    r = h.consumer_group_heartbeat(G, "member-2", -1, instance_id="member-2")
    assert (r.error_code, r.member_epoch) == (ErrorCode.NONE, -1)
    names = [(rec.key.record_name, rec.value is None) for rec in h.last_result.records]
    assert names == [
        ("ConsumerGroupCurrentMemberAssignment", True),
        ("ConsumerGroupTargetAssignmentMember", True),
        ("ConsumerGroupMemberMetadata", True),
        ("ConsumerGroupMetadata", False),
    ]
    assert h.consumer_group(G).group_epoch == 11


def test_partition_assignor_exception_on_regular_heartbeat() -> None:
    """Kafka ``testPartitionAssignorExceptionOnRegularHeartbeat``: the assignor throws;
    the heartbeat is UNKNOWN_SERVER_ERROR and nothing is written. Kafka's
    ``updateTargetAssignment`` words the failure ("Failed to compute a new target
    assignment for epoch 1: ...") for its log; ``GroupCoordinatorService``'s
    ``handleOperationException`` answers UNKNOWN_SERVER_ERROR with no message."""
    h = Harness(topics={"foo": 6, "bar": 3})
    h.coordinator.consumer.scripted[G] = [ScriptedAssignor(None, error="Assignment failed.")]
    r = h.consumer_group_heartbeat(
        G,
        "member-1",
        0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        owned={},
    )
    assert r.error_code is ErrorCode.UNKNOWN_SERVER_ERROR
    assert r.error_message is None
    assert h.last_result.records == []
    assert G not in h.coordinator.groups
