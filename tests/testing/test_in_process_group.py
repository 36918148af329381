"""``InProcessGroup``: real members and a real coordinator reach a stable group, in process.

One test per protocol (eager, cooperative, KIP-848) that the group settles on
the assignment the assignor is known to produce; then membership changes
(remove, crash, pause), the application stalling, metadata changes, the
invariants, and replay of what the coordinator wrote.
"""

from __future__ import annotations

import pytest

from regroup.assignors.classic.api import (
    Assignment,
    ClusterMetadata,
    ConsumerPartitionAssignor,
    GroupAssignment,
    GroupSubscription,
    RebalanceProtocol,
)
from regroup.classic.member.config import ClassicMemberConfig
from regroup.classic.member.member import ClassicMember
from regroup.consumer.member.config import ConsumerMemberConfig
from regroup.consumer.member.member import ConsumerMember
from regroup.consumer.member.state import MemberState as ConsumerState
from regroup.events import MemberLeft, PartitionsLost
from regroup.members.errors import InvalidMemberConfigError
from regroup.model import TopicPartition
from regroup.testing import (
    CoordinatorTestContext,
    GroupNotStableError,
    InProcessGroup,
    InvariantViolation,
    RecordingListener,
)

NO_DELAY = {"group.initial.rebalance.delay.ms": 0}


def t(*partitions: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition("t", p) for p in partitions)


def classic_group(strategy: str, *names: str) -> InProcessGroup:
    group = InProcessGroup(topics={"t": 4}, config=NO_DELAY)
    for name in names:
        group.add_member(name, {"partition.assignment.strategy": strategy})
    return group


# -- a stable group under each protocol ---------------------------------------------------


def test_eager_range_group_settles_on_ranges_in_member_id_order() -> None:
    group = classic_group("range", "a", "b")
    assert group.run_until_stable(max_ms=30_000) == 0  # no initial delay, zero latency
    # Member ids are client id + "-" + a uuid, so a's sorts first: range gives it t-0, t-1.
    assert group.assignments() == {"a": t(0, 1), "b": t(2, 3)}
    assert {group.classic_member(n).protocol for n in group.members} == {RebalanceProtocol.EAGER}
    assert group.is_balanced() and not group.errors
    group.context.assert_replay_matches()


def test_cooperative_sticky_group_settles_and_a_newcomer_takes_only_what_moves() -> None:
    group = classic_group("cooperative-sticky", "a", "b")
    group.run_until_stable(max_ms=30_000)
    assert group.assignments() == {"a": t(0, 2), "b": t(1, 3)}
    group.add_member("c", {"partition.assignment.strategy": "cooperative-sticky"})
    took = group.run_until_stable(max_ms=30_000)
    assert took > 0 and group.is_balanced()
    assert group.assignments() == {"a": t(0, 2), "b": t(1), "c": t(3)}
    b = group.listener("b")
    assert isinstance(b, RecordingListener)
    assert ("revoked", [TopicPartition("t", 3)]) in b.calls  # the one partition that moved
    a = group.listener("a")
    assert isinstance(a, RecordingListener) and "revoked" not in a.kinds()
    assert {group.classic_member(n).protocol for n in group.members} == {
        RebalanceProtocol.COOPERATIVE
    }


def test_consumer_protocol_group_settles_with_the_named_server_assignor() -> None:
    group = InProcessGroup(topics={"t": 4}, group_protocol="consumer")
    a = group.add_member("a", {"group.remote.assignor": "range"})
    b = group.add_member("b", {"group.remote.assignor": "range"})
    assert isinstance(a, ConsumerMember) and isinstance(b, ConsumerMember)
    group.run_until_stable(max_ms=30_000)
    first, second = sorted((a, b), key=lambda m: m.member_id)  # range: by member id
    assert (first.assignment, second.assignment) == (t(0, 1), t(2, 3))
    assert a.member_epoch == b.member_epoch == group.context.consumer_group("g").group_epoch
    group.context.assert_replay_matches()


def test_config_objects_pick_the_member_and_mappings_use_kafka_names() -> None:
    group = InProcessGroup(topics={"t": 2})
    classic = group.add_member("c", ClassicMemberConfig(group_id="g", client_id="c"))
    consumer = group.add_member("k", ConsumerMemberConfig("g"))
    by_name = group.add_member("n", {"group.protocol": "consumer", "max.poll.interval.ms": "9000"})
    assert isinstance(classic, ClassicMember) and isinstance(consumer, ConsumerMember)
    assert isinstance(by_name, ConsumerMember) and by_name.config.max_poll_interval_ms == 9000
    assert by_name.config.client_id == "n" and by_name.config.group_id == "g"
    with pytest.raises(InvalidMemberConfigError):
        group.add_member("x", {"group.protocol": "consumer", "session.timeout.ms": 10000})
    with pytest.raises(ValueError):
        group.add_member("c", ClassicMemberConfig(group_id="g"))  # already running


# -- membership changes ---------------------------------------------------------------------


def test_removed_and_crashed_members_are_replaced_by_the_rest() -> None:
    group = InProcessGroup(topics={"t": 4}, group_protocol="consumer")
    for name in "abc":
        group.add_member(name)
    group.run_until_stable(max_ms=30_000)
    b = group.consumer_member("b")
    group.remove_member("b")  # revokes, leaves with its next heartbeat
    group.run_until_stable(max_ms=30_000)
    assert b.state is ConsumerState.UNSUBSCRIBED and "b" not in group.members
    group.crash("c")  # no leave: the coordinator notices at the session timeout
    assert group.run_until_stable(max_ms=60_000) == 45_000  # group.consumer.session.timeout.ms
    assert group.assignments() == {"a": t(0, 1, 2, 3)}
    reasons = [e.reason for e in group.context.events_of(MemberLeft)]
    assert reasons == ["leave", "session_timeout"]


def test_a_paused_process_is_fenced_and_rejoins_when_it_resumes() -> None:
    group = InProcessGroup(topics={"t": 2}, group_protocol="consumer")
    a = group.add_member("a")
    group.run_until_stable(max_ms=10_000)
    group.pause("a")
    group.advance(50_000)  # past the session timeout: the coordinator removed it
    assert "a" not in group.context.consumer_group("g").members
    assert a.state is ConsumerState.STABLE  # frozen, it knows nothing of it
    group.resume("a")
    group.run_until_stable(max_ms=30_000)
    assert [e.partitions for e in group.member_events_of("a", PartitionsLost)] == [
        (TopicPartition("t", 0), TopicPartition("t", 1))
    ]


def test_a_stalled_application_loses_its_partitions_then_rejoins() -> None:
    group = InProcessGroup(topics={"t": 2}, config=NO_DELAY)
    for name in "ab":
        group.add_member(
            name, {"partition.assignment.strategy": "range", "max.poll.interval.ms": 20_000}
        )
    group.run_until_stable(max_ms=10_000)
    group.stall_application("b")
    group.advance(30_000)
    assert group.assignments()["b"] == frozenset() and group.assignments()["a"] == t(0, 1)
    group.resume_application("b")
    group.run_until_stable(max_ms=30_000)
    assert group.is_balanced()


def test_new_partitions_reach_the_coordinator_and_the_members() -> None:
    group = InProcessGroup(topics={"t": 2}, group_protocol="consumer")
    group.add_member("a")
    group.add_member("b")
    group.run_until_stable(max_ms=30_000)
    group.set_topics({"t": 4})
    group.run_until_stable(max_ms=30_000)
    assert sorted(len(p) for p in group.assignments().values()) == [2, 2]


def test_run_until_stable_gives_up_after_max_ms() -> None:
    group = InProcessGroup(topics={"t": 2})  # Kafka's 3 s initial rebalance delay
    group.add_member("a")
    with pytest.raises(GroupNotStableError):
        group.run_until_stable(max_ms=1_000)
    assert group.run_until_stable(max_ms=10_000) > 0


def test_the_group_drives_an_existing_context() -> None:
    context = CoordinatorTestContext(NO_DELAY, topics={"t": 2})
    group = InProcessGroup(context=context)
    group.add_member("a", {"partition.assignment.strategy": "range"})
    group.run_until_stable(max_ms=1_000)
    assert group.context is context and context.classic_group("g").state_name() == "Stable"
    with pytest.raises(ValueError):
        InProcessGroup(topics={"t": 1}, context=context)


# -- invariants and logs -----------------------------------------------------------------------


class _NaiveCooperative(ConsumerPartitionAssignor):
    """Round-robin that claims COOPERATIVE but hands partitions straight to new owners."""

    name = "naive"

    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]:
        return (RebalanceProtocol.COOPERATIVE,)

    def assign(
        self, metadata: ClusterMetadata, group_subscription: GroupSubscription
    ) -> GroupAssignment:
        members = sorted(group_subscription.subscriptions)
        out: dict[str, list[TopicPartition]] = {m: [] for m in members}
        for i in range(metadata.partition_count("t")):
            out[members[i % len(members)]].append(TopicPartition("t", i))
        return GroupAssignment({m: Assignment(ps) for m, ps in out.items()})


def test_a_user_assignor_breaking_the_cooperative_rule_is_refused_by_the_leader() -> None:
    """KIP-429: a partition may not move between owners in one cooperative rebalance; the
    leader checks a user's assignor (Kafka ``validateCooperativeAssignment``) and the error
    reaches the application through ``poll`` -- in ``group.errors``."""
    group = InProcessGroup(topics={"t": 4}, config=NO_DELAY)
    group.add_member("a", assignors=[_NaiveCooperative()])
    group.run_until_stable(max_ms=1_000)
    group.add_member("b", assignors=[_NaiveCooperative()])
    group.advance(5_000)  # a hears of the rebalance at its next heartbeat (3 s)
    errors = group.errors_of("a")
    assert errors and "violates its requirements" in str(errors[0])
    assert group.assignment("a") == t(0, 1, 2, 3) and group.assignment("b") == frozenset()


def test_a_test_invariant_is_checked_at_every_step() -> None:
    seen: list[int] = []

    def at_most_one_partition_each(group: InProcessGroup) -> None:
        seen.append(group.now_ms)
        for name, owned in group.assignments().items():
            if len(owned) > 1:
                raise InvariantViolation(f"{name} owns {sorted(owned)}")

    group = classic_group("range", "a")
    group.add_invariant(at_most_one_partition_each)
    with pytest.raises(InvariantViolation, match="a owns"):
        group.run_until_stable(max_ms=10_000)
    assert seen


def test_requests_and_events_are_logged_in_order() -> None:
    group = classic_group("range", "a", "b")
    group.run_until_stable(max_ms=10_000)
    kinds = [type(s.request).__name__ for s in group.sent if s.member == "a"]
    assert kinds[:3] == ["JoinGroupRequest", "JoinGroupRequest", "SyncGroupRequest"]
    assert {e.kind for _, e in group.member_events} >= {"partitions_assigned"}
    assert [e for e in group.events if e.kind == "rebalance_completed"]  # the coordinator's
    assert group.context.events_of("rebalance_completed") == [
        e for e in group.events if e.kind == "rebalance_completed"
    ]
