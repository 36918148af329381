"""KIP-848 members against the real group coordinator, in process.

``regroup.testing.InProcessGroup``: one ``GroupCoordinator``, N
``ConsumerMember`` s, a fake clock and an in-memory network with zero latency:
every request a member's ``poll`` returns is served at once and its response
handed back. After every member step the group checks that no partition is
owned by two live members, and that member epochs only move forward (except to
0 on a rejoin and to a leave epoch).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from regroup.assignors.consumer.client_side import PartitionAssignor, ServerLogicAssignor
from regroup.consumer.member.config import ConsumerMemberConfig
from regroup.consumer.member.member import ConsumerMember
from regroup.consumer.member.state import MemberState
from regroup.events.schema import (
    GroupEpochBumped,
    MemberLeft,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from regroup.members.errors import MemberFatalError
from regroup.model import ErrorCode, TopicPartition
from regroup.testing import InProcessGroup

S = MemberState
HEARTBEAT = 5000


def group_of(partitions: dict[str, int]) -> InProcessGroup:
    return InProcessGroup(partitions, group_id="grp", group_protocol="consumer")


def add(
    group: InProcessGroup,
    name: str,
    topics: Sequence[str] = ("foo",),
    *,
    instance_id: str | None = None,
    assignors: Sequence[PartitionAssignor] = (),
    seed: int | None = None,
) -> ConsumerMember:
    return group.add_member(
        name,
        ConsumerMemberConfig("grp", client_id=name, group_instance_id=instance_id),
        topics=topics,
        client_assignors=assignors,
        rng=None if seed is None else random.Random(seed),
    )


def stable(group: InProcessGroup, names: Iterable[str]) -> bool:
    return all(group.consumer_member(n).state is S.STABLE for n in names)


def assignment(group: InProcessGroup, name: str) -> set[TopicPartition]:
    return set(group.assignment(name))


def foo(*partitions: int) -> set[TopicPartition]:
    return {TopicPartition("foo", p) for p in partitions}


def all_of(group: InProcessGroup, names: Iterable[str]) -> set[TopicPartition]:
    owned: set[TopicPartition] = set()
    for name in names:
        owned |= assignment(group, name)
    return owned


def test_case_study_a_b_c_join_foo_with_three_partitions() -> None:
    group = group_of({"foo": 3})
    a = add(group, "A")
    group.advance(1)
    # A joins: epoch 1, foo-0..2.
    assert (a.member_epoch, assignment(group, "A"), a.state) == (1, foo(0, 1, 2), S.STABLE)

    b = add(group, "B")
    group.advance(3 * HEARTBEAT)
    # A revoked one partition (acknowledged) and moved to epoch 2; B got it at epoch 2.
    assert (a.member_epoch, b.member_epoch) == (2, 2)
    assert len(assignment(group, "A")) == 2 and len(assignment(group, "B")) == 1
    given_to_b = assignment(group, "B")
    [revoked] = group.member_events_of("A", PartitionsRevoked)
    assert set(revoked.partitions) == given_to_b and revoked.generation_or_epoch == 1

    c = add(group, "C")
    group.advance(3 * HEARTBEAT)
    assert (a.member_epoch, b.member_epoch, c.member_epoch) == (3, 3, 3)
    assert assignment(group, "B") == given_to_b  # B keeps its partition
    assert len(assignment(group, "A")) == 1 and len(assignment(group, "C")) == 1
    assert all_of(group, "ABC") == foo(0, 1, 2)
    assert stable(group, "ABC")
    # B moved to epoch 3 without any callback: no revocation, no new partitions.
    b_assigned = [e for e in group.member_events_of("B", PartitionsAssigned) if e.partitions]
    assert len(b_assigned) == 1
    epochs = [e.epoch for e in group.context.events if isinstance(e, GroupEpochBumped)]
    assert epochs == [1, 2, 3]


def test_a_member_leaves_and_the_rest_take_over() -> None:
    group = group_of({"foo": 4})
    for name in "AB":
        add(group, name)
    group.advance(4 * HEARTBEAT)
    assert stable(group, "AB") and all_of(group, "AB") == foo(0, 1, 2, 3)
    owned_by_b = assignment(group, "B")
    b = group.consumer_member("B")
    group.remove_member("B")  # close(): revoke, then the leave heartbeat
    group.advance(3 * HEARTBEAT)
    assert b.state is S.UNSUBSCRIBED
    assert [set(e.partitions) for e in group.member_events_of("B", PartitionsRevoked)] == [
        owned_by_b
    ]
    assert assignment(group, "A") == foo(0, 1, 2, 3) and stable(group, "A")
    left = [e for e in group.context.events if isinstance(e, MemberLeft)]
    assert [e.member_id for e in left] == [b.member_id]


def test_a_crashed_member_is_removed_after_the_session_timeout() -> None:
    group = group_of({"foo": 4})
    for name in "AB":
        add(group, name)
    group.advance(4 * HEARTBEAT)
    group.crash("B")
    group.advance(40_000)
    assert len(assignment(group, "A")) == 2  # still within the 45 s session timeout
    group.advance(20_000)
    assert assignment(group, "A") == foo(0, 1, 2, 3) and stable(group, "A")
    left = [e for e in group.context.events if isinstance(e, MemberLeft)]
    assert [e.reason for e in left] == ["session_timeout"]


def test_a_static_member_bounce_keeps_its_partitions_without_a_rebalance() -> None:
    group = group_of({"foo": 4})
    add(group, "A", instance_id="host-a")
    add(group, "B", instance_id="host-b")
    group.advance(4 * HEARTBEAT)
    before_b = assignment(group, "B")
    before_a = assignment(group, "A")
    epochs_before = [e for e in group.context.events if isinstance(e, GroupEpochBumped)]
    revocations_before = len(group.member_events_of("A", PartitionsRevoked))
    b = group.consumer_member("B")
    group.remove_member("B")
    group.advance(1)
    assert b.state is S.UNSUBSCRIBED and "B" not in group.members
    group.advance(HEARTBEAT)
    # The new incarnation: same instance id, a new member id.
    b2 = add(group, "B2", instance_id="host-b", seed=99)
    assert b2.member_id != b.member_id
    group.advance(3 * HEARTBEAT)
    assert assignment(group, "B2") == before_b
    assert assignment(group, "A") == before_a
    assert len(group.member_events_of("A", PartitionsRevoked)) == revocations_before
    epochs_after = [e for e in group.context.events if isinstance(e, GroupEpochBumped)]
    assert epochs_after == epochs_before  # no rebalance


def test_a_fenced_member_rejoins_and_gets_partitions_again() -> None:
    group = group_of({"foo": 2})
    a = add(group, "A")
    group.advance(HEARTBEAT)
    # The coordinator forgets A (its session expires while A is paused).
    group.pause("A")
    group.advance(50_000)
    group.resume("A")
    group.advance(2 * HEARTBEAT)
    assert [set(e.partitions) for e in group.member_events_of("A", PartitionsLost)] == [foo(0, 1)]
    assert a.state is S.STABLE and assignment(group, "A") == foo(0, 1)
    assert a.member_epoch > 1


def test_the_client_side_assignor_flow_end_to_end() -> None:
    group = group_of({"foo": 3, "bar": 2})
    for name in "ABC":
        add(group, name, ("foo", "bar"), assignors=[ServerLogicAssignor("uniform")])
    group.advance(6 * HEARTBEAT)
    assert stable(group, "ABC")
    owned = all_of(group, "ABC")
    assert owned == foo(0, 1, 2) | {TopicPartition("bar", 0), TopicPartition("bar", 1)}
    assert sorted(len(assignment(group, n)) for n in "ABC") == [1, 2, 2]
    outcomes = [o for n in "ABC" for o in group.consumer_member(n).take_assignment_outcomes()]
    assert outcomes and all(o.result == "installed" for o in outcomes)


def test_an_application_that_stops_polling_leaves_and_rejoins() -> None:
    group = group_of({"foo": 2})
    a = add(group, "A")
    b = add(group, "B")
    b_config_poll = b.config.max_poll_interval_ms
    group.advance(3 * HEARTBEAT)
    assert len(assignment(group, "A")) == 1 and len(assignment(group, "B")) == 1
    group.stall_application("B")
    group.advance(b_config_poll + HEARTBEAT)
    assert b.state is S.STALE and assignment(group, "A") == foo(0, 1)
    assert [len(e.partitions) for e in group.member_events_of("B", PartitionsLost)] == [1]
    assert not group.member_events_of("B", PartitionsRevoked)
    group.resume_application("B")
    group.advance(3 * HEARTBEAT)
    assert stable(group, "AB") and all_of(group, "AB") == foo(0, 1)
    assert len(assignment(group, "B")) == 1 and a.member_epoch == b.member_epoch


def test_a_pattern_subscription_end_to_end() -> None:
    group = group_of({"foo": 2, "food": 1, "bar": 3})
    member = add(group, "A", ())
    member.subscribe_pattern("foo.*")
    group.advance(30_000)
    assert member.state is S.STABLE
    assert assignment(group, "A") == foo(0, 1) | {TopicPartition("food", 0)}


def test_a_second_instance_with_a_live_instance_id_is_fatal() -> None:
    group = group_of({"foo": 2})
    add(group, "A", instance_id="host-a")
    group.advance(HEARTBEAT)
    twin = add(group, "A2", instance_id="host-a", seed=42)
    group.advance(HEARTBEAT)
    assert twin.state is S.FATAL
    [error] = group.errors_of("A2")
    assert isinstance(error, MemberFatalError)
    assert error.code is ErrorCode.UNRELEASED_INSTANCE_ID
    assert group.consumer_member("A").state is S.STABLE and assignment(group, "A") == foo(0, 1)


def _sending_rebalance_timeout(group: InProcessGroup, name: str, timeout_ms: int) -> ConsumerMember:
    """A member whose heartbeat sends ``timeout_ms`` as RebalanceTimeoutMs (the soak's
    ``--zero-timeouts`` client, ``regroup.heartbeat.rebalance.timeout.ms``)."""
    config = ConsumerMemberConfig(
        "grp", client_id=name, regroup_heartbeat_rebalance_timeout_ms=timeout_ms
    )
    return group.add_member(name, config, topics=("foo",))


def test_a_member_sending_rebalance_timeout_minus_one_is_refused_and_fatal() -> None:
    group = group_of({"foo": 2})
    bad = _sending_rebalance_timeout(group, "A", -1)
    group.advance(HEARTBEAT)
    assert bad.state is S.FATAL
    [error] = group.errors_of("A")
    assert isinstance(error, MemberFatalError)
    assert error.code is ErrorCode.INVALID_REQUEST
    assert "RebalanceTimeoutMs must be provided in first request." in str(error)


def test_a_member_sending_rebalance_timeout_zero_is_accepted() -> None:
    """0 is taken (only -1 is refused). Its revocation timer is due at once
    (``test_a_rebalance_timeout_of_zero_is_accepted_and_leaves_no_time_to_revoke`` in
    the coordinator's tests); here the network has no latency, so A's acknowledgement
    reaches the coordinator at the instant it was asked, before the timer runs, and the
    group balances without fencing it. The soak's network takes at least 1 ms."""
    group = group_of({"foo": 2})
    a = _sending_rebalance_timeout(group, "A", 0)
    group.advance(HEARTBEAT)
    assert a.state is S.STABLE and assignment(group, "A") == foo(0, 1)
    coordinator_group = group.context.consumer_group("grp")
    assert coordinator_group.members[a.member_id].rebalance_timeout_ms == 0
    add(group, "B")
    group.run_until_stable()
    assert sorted(len(assignment(group, n)) for n in ("A", "B")) == [1, 1]
