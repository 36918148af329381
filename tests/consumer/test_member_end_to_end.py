"""KIP-848 members against the real group coordinator, in process.

One ``GroupCoordinator``, N ``ConsumerMember`` s, a fake clock and an in-memory
network with zero latency: every request a member's ``poll`` returns is served
at once and its response handed back. After every member step the test checks
that no partition is owned by two live members, and that member epochs only
move forward (except to 0 on a rejoin and to a leave epoch).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence
from typing import TypeVar

from regroup.assignors.consumer.client_side import PartitionAssignor, ServerLogicAssignor
from regroup.consumer.member import ConsumerMember
from regroup.consumer.member_config import ConsumerMemberConfig, MemberFatalError
from regroup.consumer.member_state import MemberState
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.service import GroupCoordinator
from regroup.events.schema import (
    Event,
    GroupEpochBumped,
    MemberLeft,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from regroup.model import ErrorCode, TopicPartition
from regroup.model.metadata import MetadataImage

S = MemberState
HEARTBEAT = 5000
E = TypeVar("E", bound=Event)


class InProcessGroup:
    """A coordinator and its members on one virtual clock."""

    def __init__(self, partitions: dict[str, int]) -> None:
        self.now = 0
        self.metadata = MetadataImage.from_partition_counts(partitions)
        self.coordinator = GroupCoordinator(
            GroupCoordinatorConfig(), metadata=self.metadata, rng=random.Random(0)
        )
        self.members: dict[str, ConsumerMember] = {}
        self.live: set[str] = set()
        #: Members whose application stopped calling poll (max.poll.interval.ms runs).
        self.stuck: set[str] = set()
        self.member_events: list[tuple[str, Event]] = []
        self.coordinator_events: list[Event] = []
        self._tokens = itertools.count()
        self._last_epoch: dict[str, int] = {}
        #: What each member's poll raised (the application would see it).
        self.raised: dict[str, list[Exception]] = {}

    def add(
        self,
        name: str,
        topics: Sequence[str] = ("foo",),
        *,
        instance_id: str | None = None,
        assignors: Sequence[PartitionAssignor] = (),
        seed: int | None = None,
    ) -> ConsumerMember:
        member = ConsumerMember(
            ConsumerMemberConfig("grp", client_id=name, group_instance_id=instance_id),
            rng=random.Random(seed if seed is not None else len(self.members) + 1),
            metadata=self.metadata,
            client_assignors=assignors,
        )
        member.on_application_poll(self.now)
        if topics:
            member.subscribe(topics)
        self.members[name] = member
        self.live.add(name)
        return member

    def crash(self, name: str) -> None:
        """The process dies: no more polls, no leave."""
        self.live.discard(name)

    def _apply(self, result: CoordinatorResult) -> None:
        self.coordinator_events.extend(result.events)

    def step(self) -> None:
        """Everything due now, once: coordinator timers, then each live member."""
        deadline = self.coordinator.next_deadline()
        if deadline is not None and deadline <= self.now:
            self._apply(self.coordinator.on_timer(self.now))
        for name in sorted(self.live):
            member = self.members[name]
            if name not in self.stuck:
                member.on_application_poll(self.now)
            try:
                requests = member.poll(self.now)
            except Exception as error:
                self.raised.setdefault(name, []).append(error)
                continue
            for request in requests:
                token = next(self._tokens)
                result = self.coordinator.handle(token, request, self.now)
                self._apply(result)
                response = result.response_for(token)
                assert response is not None, request
                member.on_response(request, response, self.now)
            self.member_events.extend((name, e) for e in member.take_events())
            self._check(name)

    def _check(self, name: str) -> None:
        owners: dict[TopicPartition, str] = {}
        for other in sorted(self.live):
            for tp in self.members[other].assignment:
                assert tp not in owners, f"{tp} owned by {owners[tp]} and {other}"
                owners[tp] = other
        epoch = self.members[name].member_epoch
        last = self._last_epoch.get(name, 0)
        assert epoch >= last or epoch <= 0, (name, last, epoch)
        self._last_epoch[name] = epoch

    def _next_time(self) -> int | None:
        deadlines = [self.members[n].next_deadline() for n in self.live]
        deadlines.append(self.coordinator.next_deadline())
        due = [d for d in deadlines if d is not None]
        return min(due) if due else None

    def run(self, duration_ms: int) -> None:
        """Run the clock forward by ``duration_ms``."""
        end = self.now + duration_ms
        while True:
            for _ in range(50):
                self.step()
                nxt = self._next_time()
                if nxt is None or nxt > self.now:
                    break
            else:
                raise AssertionError(f"livelock at {self.now} ms")
            nxt = self._next_time()
            if nxt is None or nxt > end:
                self.now = end
                self.step()
                return
            self.now = max(self.now, nxt)

    def stable(self, names: Iterable[str]) -> bool:
        return all(self.members[n].state is S.STABLE for n in names)

    def assignment(self, name: str) -> set[TopicPartition]:
        return set(self.members[name].assignment)

    def events(self, name: str, kind: type[E]) -> list[E]:
        return [e for n, e in self.member_events if n == name and isinstance(e, kind)]


def foo(*partitions: int) -> set[TopicPartition]:
    return {TopicPartition("foo", p) for p in partitions}


def all_of(group: InProcessGroup, names: Iterable[str]) -> set[TopicPartition]:
    owned: set[TopicPartition] = set()
    for name in names:
        owned |= group.assignment(name)
    return owned


def test_case_study_a_b_c_join_foo_with_three_partitions() -> None:
    group = InProcessGroup({"foo": 3})
    a = group.add("A")
    group.run(1)
    # A joins: epoch 1, foo-0..2.
    assert (a.member_epoch, group.assignment("A"), a.state) == (1, foo(0, 1, 2), S.STABLE)

    b = group.add("B")
    group.run(3 * HEARTBEAT)
    # A revoked one partition (acknowledged) and moved to epoch 2; B got it at epoch 2.
    assert (a.member_epoch, b.member_epoch) == (2, 2)
    assert len(group.assignment("A")) == 2 and len(group.assignment("B")) == 1
    given_to_b = group.assignment("B")
    [revoked] = group.events("A", PartitionsRevoked)
    assert set(revoked.partitions) == given_to_b and revoked.generation_or_epoch == 1

    c = group.add("C")
    group.run(3 * HEARTBEAT)
    assert (a.member_epoch, b.member_epoch, c.member_epoch) == (3, 3, 3)
    assert group.assignment("B") == given_to_b  # B keeps its partition
    assert len(group.assignment("A")) == 1 and len(group.assignment("C")) == 1
    assert all_of(group, "ABC") == foo(0, 1, 2)
    assert group.stable("ABC")
    # B moved to epoch 3 without any callback: no revocation, no new partitions.
    b_assigned = [e for e in group.events("B", PartitionsAssigned) if e.partitions]
    assert len(b_assigned) == 1
    epochs = [e.epoch for e in group.coordinator_events if isinstance(e, GroupEpochBumped)]
    assert epochs == [1, 2, 3]


def test_a_member_leaves_and_the_rest_take_over() -> None:
    group = InProcessGroup({"foo": 4})
    for name in "AB":
        group.add(name)
    group.run(4 * HEARTBEAT)
    assert group.stable("AB") and all_of(group, "AB") == foo(0, 1, 2, 3)
    owned_by_b = group.assignment("B")
    group.members["B"].close(group.now)
    group.run(3 * HEARTBEAT)
    assert group.members["B"].state is S.UNSUBSCRIBED
    assert [set(e.partitions) for e in group.events("B", PartitionsRevoked)] == [owned_by_b]
    assert group.assignment("A") == foo(0, 1, 2, 3) and group.stable("A")
    left = [e for e in group.coordinator_events if isinstance(e, MemberLeft)]
    assert [e.member_id for e in left] == [group.members["B"].member_id]


def test_a_crashed_member_is_removed_after_the_session_timeout() -> None:
    group = InProcessGroup({"foo": 4})
    for name in "AB":
        group.add(name)
    group.run(4 * HEARTBEAT)
    group.crash("B")
    group.run(40_000)
    assert len(group.assignment("A")) == 2  # still within the 45 s session timeout
    group.run(20_000)
    assert group.assignment("A") == foo(0, 1, 2, 3) and group.stable("A")
    left = [e for e in group.coordinator_events if isinstance(e, MemberLeft)]
    assert [e.reason for e in left] == ["session_timeout"]


def test_a_static_member_bounce_keeps_its_partitions_without_a_rebalance() -> None:
    group = InProcessGroup({"foo": 4})
    group.add("A", instance_id="host-a")
    group.add("B", instance_id="host-b")
    group.run(4 * HEARTBEAT)
    before_b = group.assignment("B")
    before_a = group.assignment("A")
    epochs_before = [e for e in group.coordinator_events if isinstance(e, GroupEpochBumped)]
    revocations_before = len(group.events("A", PartitionsRevoked))
    group.members["B"].close(group.now)
    group.run(1)
    assert group.members["B"].state is S.UNSUBSCRIBED
    group.live.discard("B")
    group.run(HEARTBEAT)
    # The new incarnation: same instance id, a new member id.
    b2 = group.add("B2", instance_id="host-b", seed=99)
    assert b2.member_id != group.members["B"].member_id
    group.run(3 * HEARTBEAT)
    assert group.assignment("B2") == before_b
    assert group.assignment("A") == before_a
    assert len(group.events("A", PartitionsRevoked)) == revocations_before
    epochs_after = [e for e in group.coordinator_events if isinstance(e, GroupEpochBumped)]
    assert epochs_after == epochs_before  # no rebalance


def test_a_fenced_member_rejoins_and_gets_partitions_again() -> None:
    group = InProcessGroup({"foo": 2})
    a = group.add("A")
    group.run(HEARTBEAT)
    # The coordinator forgets A (its session expires while A is paused).
    group.crash("A")
    group.run(50_000)
    group.live.add("A")
    group.run(2 * HEARTBEAT)
    assert [set(e.partitions) for e in group.events("A", PartitionsLost)] == [foo(0, 1)]
    assert a.state is S.STABLE and group.assignment("A") == foo(0, 1)
    assert a.member_epoch > 1


def test_the_client_side_assignor_flow_end_to_end() -> None:
    group = InProcessGroup({"foo": 3, "bar": 2})
    for name in "ABC":
        group.add(name, ("foo", "bar"), assignors=[ServerLogicAssignor("uniform")])
    group.run(6 * HEARTBEAT)
    assert group.stable("ABC")
    owned = all_of(group, "ABC")
    assert owned == foo(0, 1, 2) | {TopicPartition("bar", 0), TopicPartition("bar", 1)}
    assert sorted(len(group.assignment(n)) for n in "ABC") == [1, 2, 2]
    outcomes = [o for n in "ABC" for o in group.members[n].take_assignment_outcomes()]
    assert outcomes and all(o.result == "installed" for o in outcomes)


def test_an_application_that_stops_polling_leaves_and_rejoins() -> None:
    group = InProcessGroup({"foo": 2})
    a = group.add("A")
    b = group.add("B")
    b_config_poll = b.config.max_poll_interval_ms
    group.run(3 * HEARTBEAT)
    assert len(group.assignment("A")) == 1 and len(group.assignment("B")) == 1
    group.stuck.add("B")
    group.run(b_config_poll + HEARTBEAT)
    assert b.state is S.STALE and group.assignment("A") == foo(0, 1)
    assert [len(e.partitions) for e in group.events("B", PartitionsLost)] == [1]
    assert not group.events("B", PartitionsRevoked)
    group.stuck.discard("B")
    group.run(3 * HEARTBEAT)
    assert group.stable("AB") and all_of(group, "AB") == foo(0, 1)
    assert len(group.assignment("B")) == 1 and a.member_epoch == b.member_epoch


def test_a_pattern_subscription_end_to_end() -> None:
    group = InProcessGroup({"foo": 2, "food": 1, "bar": 3})
    member = group.add("A", ())
    member.subscribe_pattern("foo.*")
    group.run(30_000)
    assert member.state is S.STABLE
    assert group.assignment("A") == foo(0, 1) | {TopicPartition("food", 0)}


def test_a_second_instance_with_a_live_instance_id_is_fatal() -> None:
    group = InProcessGroup({"foo": 2})
    group.add("A", instance_id="host-a")
    group.run(HEARTBEAT)
    twin = group.add("A2", instance_id="host-a", seed=42)
    group.run(HEARTBEAT)
    assert twin.state is S.FATAL
    [error] = group.raised["A2"]
    assert isinstance(error, MemberFatalError)
    assert error.code is ErrorCode.UNRELEASED_INSTANCE_ID
    assert group.members["A"].state is S.STABLE and group.assignment("A") == foo(0, 1)
