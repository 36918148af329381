"""Property tests of the classic member alone: its steps, its state table, and the member
driven by random scripted responses (no coordinator)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.classic.api import (
    Assignment,
    ClusterMetadata,
    ConsumerPartitionAssignor,
    GroupAssignment,
    GroupSubscription,
    RebalanceProtocol,
)
from regroup.classic.member.config import ClassicMemberConfig
from regroup.classic.member.member import ClassicMember, MemberRequest
from regroup.classic.member.state import (
    TRANSITIONS,
    IllegalMemberTransition,
    MemberState,
    MemberStateMachine,
    Trigger,
)
from regroup.classic.member.steps import complete_join, prepare_join
from regroup.classic.protocol import decode_subscription, encode_assignment
from regroup.events import Event, PartitionsAssigned, PartitionsLost, PartitionsRevoked
from regroup.model import ErrorCode, TopicPartition
from regroup.model.metadata import MetadataImage
from regroup.model.requests.classic import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

TOPICS = ("t", "u")
ALL = [TopicPartition(t, p) for t in TOPICS for p in range(4)]
partition_sets = st.frozensets(st.sampled_from(ALL))
protocols = st.sampled_from([RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE])

# -- the pure steps --------------------------------------------------------------------------


@given(
    owned=partition_sets,
    reset=st.booleans(),
    protocol=protocols,
    subscription=st.frozensets(st.sampled_from(TOPICS)),
)
def test_prepare_join_splits_the_owned_partitions(
    owned: frozenset[TopicPartition],
    reset: bool,
    protocol: RebalanceProtocol,
    subscription: frozenset[str],
) -> None:
    plan = prepare_join(owned, generation_reset=reset, protocol=protocol, subscription=subscription)
    assert plan.kept | plan.partitions == owned
    assert not plan.kept & plan.partitions
    if reset:  # step 1.d
        assert plan.kept == frozenset()
        assert plan.callback == ("lost" if owned else None)
    elif protocol is RebalanceProtocol.EAGER:  # revoke all, always
        assert plan.kept == frozenset() and plan.callback == "revoked"
    else:  # step 1.a
        assert all(tp.topic in subscription for tp in plan.kept)
        assert all(tp.topic not in subscription for tp in plan.partitions)
        assert plan.callback == ("revoked" if plan.partitions else None)


@given(owned=partition_sets, assigned=partition_sets, protocol=protocols)
def test_complete_join_never_revokes_what_it_assigns(
    owned: frozenset[TopicPartition],
    assigned: frozenset[TopicPartition],
    protocol: RebalanceProtocol,
) -> None:
    plan = complete_join(owned, assigned, protocol)
    assert not plan.revoked & plan.added
    assert plan.assigned == assigned
    assert plan.added == assigned - owned
    if protocol is RebalanceProtocol.COOPERATIVE:
        assert (owned - plan.revoked) | plan.added == assigned
        assert plan.needs_follow_up == bool(owned - assigned)
    else:
        assert plan.revoked == frozenset() and not plan.needs_follow_up


# -- the state table ---------------------------------------------------------------------------


@given(st.lists(st.sampled_from(list(Trigger)), max_size=30))
def test_state_machine_follows_the_table_and_illegal_steps_change_nothing(
    triggers: list[Trigger],
) -> None:
    machine = MemberStateMachine()
    for trigger in triggers:
        before = machine.state
        expected = TRANSITIONS[before].get(trigger)
        if expected is None:
            with pytest.raises(IllegalMemberTransition):
                machine.process(trigger)
            assert machine.state is before
        else:
            assert machine.process(trigger) == (before, expected)


def test_closed_is_terminal_and_every_state_can_close_or_is_closed() -> None:
    assert TRANSITIONS[MemberState.CLOSED] == {}
    for state in MemberState:
        if state is not MemberState.CLOSED:
            assert TRANSITIONS[state][Trigger.CLOSE] is MemberState.CLOSED


# -- the member under random scripted responses --------------------------------------------------


class _FixedAssignor(ConsumerPartitionAssignor):
    def __init__(self, name: str, protocols: tuple[RebalanceProtocol, ...]) -> None:
        self.name = name  # type: ignore[misc]  # a test double named per instance
        self._protocols = protocols

    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]:
        return self._protocols

    def assign(
        self, metadata: ClusterMetadata, group_subscription: GroupSubscription
    ) -> GroupAssignment:
        return GroupAssignment({m: Assignment(()) for m in group_subscription.subscriptions})


@dataclass
class _FlakyListener:
    calls: list[tuple[str, tuple[TopicPartition, ...]]] = field(default_factory=list)
    failing: bool = False

    def _call(self, name: str, partitions: Sequence[TopicPartition]) -> None:
        self.calls.append((name, tuple(partitions)))
        if self.failing:
            raise RuntimeError(name)

    def on_partitions_revoked(self, partitions: Sequence[TopicPartition]) -> None:
        self._call("revoked", partitions)

    def on_partitions_assigned(self, partitions: Sequence[TopicPartition]) -> None:
        self._call("assigned", partitions)

    def on_partitions_lost(self, partitions: Sequence[TopicPartition]) -> None:
        self._call("lost", partitions)


JOIN_ERRORS = [
    ErrorCode.MEMBER_ID_REQUIRED,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
]
SYNC_ERRORS = [
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.NOT_COORDINATOR,
]
HEARTBEAT_ERRORS = [
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.ILLEGAL_GENERATION,
]

steps = st.one_of(
    st.tuples(st.just("ok"), partition_sets),
    st.tuples(st.just("join_error"), st.sampled_from(JOIN_ERRORS)),
    st.tuples(st.just("sync_error"), st.sampled_from(SYNC_ERRORS)),
    st.tuples(st.just("heartbeat_error"), st.sampled_from(HEARTBEAT_ERRORS)),
    st.tuples(st.just("subscribe"), st.frozensets(st.sampled_from(TOPICS), min_size=1)),
    st.tuples(st.just("listener_fails"), st.booleans()),
)


class _Driver:
    def __init__(self, protocol: RebalanceProtocol) -> None:
        protocols = (
            (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)
            if protocol is RebalanceProtocol.COOPERATIVE
            else (RebalanceProtocol.EAGER,)
        )
        self.listener = _FlakyListener()
        self.member = ClassicMember(
            ClassicMemberConfig(group_id="g"),
            listener=self.listener,
            assignors=[_FixedAssignor("a", protocols)],
            metadata=MetadataImage.from_partition_counts(dict.fromkeys(TOPICS, 4)),
        )
        self.member.subscribe(TOPICS)
        self.protocol = protocol
        self.now = 0
        self.generation = 0
        self.replayed: set[TopicPartition] = set()
        self.events: list[Event] = []
        self.joins: list[tuple[JoinGroupRequest, frozenset[TopicPartition]]] = []

    def poll(self) -> list[MemberRequest]:
        self.member.on_application_poll(self.now)
        try:
            out = self.member.poll(self.now)
        except RuntimeError:
            out = self.member.poll(self.now)  # the requests stay queued after a callback error
        self.check()
        for request in out:
            if isinstance(request, JoinGroupRequest):
                self.joins.append((request, self.member.assignment))
        return out

    def check(self) -> None:
        for event in self.member.take_events():
            self.events.append(event)
            if isinstance(event, PartitionsAssigned):
                assert not self.replayed & set(event.partitions)
                self.replayed |= set(event.partitions)
            elif isinstance(event, PartitionsRevoked | PartitionsLost):
                assert set(event.partitions) <= self.replayed
                self.replayed -= set(event.partitions)
        # the event log alone reconstructs what the member owns
        assert self.replayed == set(self.member.assignment)
        # the listener saw exactly what the events say, errors or not
        assert len(self.listener.calls) == sum(
            isinstance(e, PartitionsAssigned | PartitionsRevoked | PartitionsLost)
            for e in self.events
        )

    def join(self) -> JoinGroupRequest | None:
        if self.member.state is MemberState.STABLE:
            self.member.enforce_rebalance("test")
        joins = [r for r in self.poll() if isinstance(r, JoinGroupRequest)]
        return joins[0] if joins else None

    def step(self, kind: str, arg: object) -> None:
        if kind == "listener_fails":
            self.listener.failing = bool(arg)
            return
        if kind == "subscribe":
            assert isinstance(arg, frozenset)
            self.member.subscribe(arg)
            self.poll()
            return
        if kind == "heartbeat_error":
            if self.member.state is not MemberState.STABLE:
                return
            self.now += 3000
            beats = [r for r in self.poll() if isinstance(r, HeartbeatRequest)]
            if beats:
                assert isinstance(arg, ErrorCode)
                self.member.on_response(beats[0], HeartbeatResponse(arg), self.now)
                self.check()
            return
        join = self.join()
        if join is None:
            return
        if kind == "join_error":
            assert isinstance(arg, ErrorCode)
            self.member.on_response(join, JoinGroupResponse(arg, member_id="m"), self.now)
            self.check()
            return
        self.generation += 1
        self.member.on_response(
            join,
            JoinGroupResponse(
                ErrorCode.NONE,
                generation_id=self.generation,
                protocol_name="a",
                leader="x",
                member_id="m",
            ),
            self.now,
        )
        self.check()
        syncs = [r for r in self.poll() if isinstance(r, SyncGroupRequest)]
        assert len(syncs) == 1
        if kind == "sync_error":
            assert isinstance(arg, ErrorCode)
            self.member.on_response(syncs[0], SyncGroupResponse(arg), self.now)
            self.check()
            return
        assert isinstance(arg, frozenset)
        owned_before = self.member.assignment
        calls_before = len(self.listener.calls)
        wanted = frozenset(tp for tp in arg if tp.topic in self.member.subscription)
        self.member.on_response(
            syncs[0],
            SyncGroupResponse(
                ErrorCode.NONE, assignment=encode_assignment(Assignment(tuple(sorted(wanted))))
            ),
            self.now,
        )
        self.check()
        # the assignment is installed whatever the listener raised (KIP-429 error rule)
        assert self.member.assignment == wanted
        calls = self.listener.calls[calls_before:]
        if self.protocol is RebalanceProtocol.EAGER:
            assert owned_before == frozenset()
            assert calls == [("assigned", tuple(sorted(wanted)))]
        else:
            revoked = owned_before - wanted
            expected = [("revoked", tuple(sorted(revoked)))] if revoked else []
            expected.append(("assigned", tuple(sorted(wanted - owned_before))))
            assert calls == expected  # revoked strictly before assigned, never overlapping
            assert self.member.rejoin_pending == bool(revoked)


@settings(max_examples=150, deadline=None)
@given(protocol=protocols, script=st.lists(steps, max_size=25))
def test_member_under_random_responses(
    protocol: RebalanceProtocol, script: list[tuple[str, object]]
) -> None:
    """Callbacks come in KIP-429's order, the event log reconstructs the assignment, the
    listener's errors change nothing, and under EAGER the member joins owning nothing."""
    driver = _Driver(protocol)
    for kind, arg in script:
        driver.step(kind, arg)
    for request, owned_then in driver.joins:
        claimed = frozenset(decode_subscription(request.protocols[0].metadata).owned_partitions)
        assert claimed == owned_then
        if protocol is RebalanceProtocol.EAGER:
            assert claimed == frozenset()  # nothing owned between revoking and the new assignment
