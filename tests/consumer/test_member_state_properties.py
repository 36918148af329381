"""Property tests of the member's state table: every state x input either raises a typed
error and leaves the state unchanged, or lands in a state the table allows."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.consumer.client_side import ServerLogicAssignor
from regroup.consumer.member.config import ConsumerMemberConfig, TopicAuthorizationError
from regroup.consumer.member.member import ConsumerMember
from regroup.consumer.member.state import (
    ALLOWED_PREDECESSORS,
    IllegalMemberStateTransition,
    MemberState,
    check_transition,
    is_transition_allowed,
)
from regroup.events.schema import MemberStateChanged
from regroup.members.errors import IllegalStateError, MemberFatalError
from regroup.model import ErrorCode, TopicPartition, Uuid
from regroup.model.metadata import MetadataImage
from regroup.model.requests.consumer import (
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentMember,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    PartitionMetadata,
    TopicPartitions,
)
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)

S = MemberState
FOO, BAR, GHOST = Uuid.for_name("foo"), Uuid.for_name("bar"), Uuid.for_name("ghost")
FULL = MetadataImage.from_partition_counts({"foo": 3, "bar": 2, "ghost": 1})
PARTIAL = MetadataImage.from_partition_counts({"foo": 3, "bar": 2})

# -- the table itself ---------------------------------------------------------------------------


def test_fatal_is_terminal() -> None:
    assert not any(S.FATAL in preds for preds in ALLOWED_PREDECESSORS.values())


def test_every_state_but_the_start_has_a_predecessor() -> None:
    assert set(ALLOWED_PREDECESSORS) == set(S)
    for state, preds in ALLOWED_PREDECESSORS.items():
        assert preds, state


def test_kafka_table_spot_checks() -> None:
    assert ALLOWED_PREDECESSORS[S.ACKNOWLEDGING] == {S.RECONCILING}
    assert ALLOWED_PREDECESSORS[S.STALE] == {S.LEAVING}
    assert ALLOWED_PREDECESSORS[S.JOINING] == {S.FENCED, S.UNSUBSCRIBED, S.STALE}
    assert is_transition_allowed(S.RECONCILING, S.RECONCILING)


@given(st.sampled_from(list(S)), st.sampled_from(list(S)))
def test_check_transition_agrees_with_the_table(old: MemberState, new: MemberState) -> None:
    if old in ALLOWED_PREDECESSORS[new]:
        check_transition(old, new)
    else:
        with pytest.raises(IllegalMemberStateTransition) as raised:
            check_transition(old, new)
        assert (raised.value.old, raised.value.new) == (old, new)


def test_heartbeat_rules() -> None:
    assert {s for s in S if not s.sends_heartbeats} == {S.UNSUBSCRIBED, S.FENCED, S.STALE, S.FATAL}
    assert {s for s in S if s.heartbeats_now} == {S.JOINING, S.ACKNOWLEDGING, S.LEAVING}


# -- random inputs against the member -------------------------------------------------------------


class Listener:
    def __init__(self, flaky: bool) -> None:
        self.flaky = flaky

    def _maybe_fail(self, partitions: Sequence[TopicPartition]) -> None:
        if self.flaky and len(partitions) % 2 == 1:
            raise ValueError("listener failed")

    def on_partitions_revoked(self, partitions: Sequence[TopicPartition]) -> None:
        self._maybe_fail(partitions)

    def on_partitions_assigned(self, partitions: Sequence[TopicPartition]) -> None:
        self._maybe_fail(partitions)

    def on_partitions_lost(self, partitions: Sequence[TopicPartition]) -> None:
        self._maybe_fail(partitions)


HEARTBEAT_ERRORS = [
    ErrorCode.FENCED_MEMBER_EPOCH,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ErrorCode.COMPUTE_ASSIGNMENT,
    ErrorCode.INVALID_REQUEST,
    ErrorCode.UNRELEASED_INSTANCE_ID,
]

#: What the application may see raised: each leaves the state unchanged.
TYPED = (MemberFatalError, IllegalStateError, TopicAuthorizationError, ValueError)

_dicts = st.dictionaries(
    st.sampled_from([FOO, BAR, GHOST]),
    st.lists(st.integers(0, 2), max_size=3, unique=True),
    max_size=3,
)
assignments = st.one_of(_dicts, _dicts, _dicts, st.none())
#: Each action's argument.
_ARGS: dict[str, st.SearchStrategy[object]] = {
    "ok": st.tuples(st.integers(0, 6), assignments),
    "tick": st.integers(0, 10_000),
    "long_tick": st.just(400_000),  # past max.poll.interval.ms
    "subscribe": st.lists(st.sampled_from(["foo", "bar"]), max_size=2),
    "pattern": st.sampled_from(["fo.*", "b.*"]),
    "close": st.none(),
    "app_poll": st.none(),
    "error": st.sampled_from(HEARTBEAT_ERRORS),
    "fail": st.booleans(),
    "commit_ok": st.booleans(),
    "assignment_rpc": st.sampled_from([ErrorCode.NONE, ErrorCode.FENCED_MEMBER_EPOCH]),
    "enforce": st.none(),
    "metadata": st.booleans(),
    "commit": st.none(),
}
#: Heartbeat answers, ticks and commit answers are drawn most often, so that members
#: get far into their lives; the rest once each.
_WEIGHTED = ["ok"] * 8 + ["tick"] * 3 + ["commit_ok"] * 2 + ["app_poll"] * 2 + list(_ARGS)
actions = st.sampled_from(_WEIGHTED).flatmap(lambda name: st.tuples(st.just(name), _ARGS[name]))


class Driver:
    """Holds the requests in flight and applies one action."""

    def __init__(self, member: ConsumerMember) -> None:
        self.member = member
        self.now = 0
        self.in_flight: list[object] = []

    def _take(self, kind: type) -> object | None:
        """The oldest request of ``kind`` in flight; without one, this action is a poll."""
        for request in self.in_flight:
            if isinstance(request, kind):
                self.in_flight.remove(request)
                return request
        deadline = self.member.next_deadline()
        if deadline is not None and self.now < deadline <= self.now + 10_000:
            self.now = deadline
        self.in_flight.extend(self.member.poll(self.now))
        return None

    def apply(self, action: str, arg: object) -> None:
        m = self.member
        if action == "subscribe":
            assert isinstance(arg, list)
            m.subscribe(arg)
        elif action == "pattern":
            assert isinstance(arg, str)
            m.subscribe_pattern(arg)
        elif action == "close":
            m.close(self.now)
        elif action in ("tick", "long_tick"):
            assert isinstance(arg, int)
            self.now += arg
            self.in_flight.extend(m.poll(self.now))
        elif action == "app_poll":
            m.on_application_poll(self.now)
        elif action == "ok":
            hb = self._take(ConsumerGroupHeartbeatRequest)
            if hb is not None:
                assert isinstance(arg, tuple)
                epoch, parts = arg
                payload = None
                if parts is not None:
                    payload = ConsumerGroupHeartbeatAssignment(
                        tuple(TopicPartitions(t, tuple(p)) for t, p in parts.items())
                    )
                m.on_response(
                    hb,
                    ConsumerGroupHeartbeatResponse(
                        ErrorCode.NONE,
                        member_epoch=epoch,
                        # 0 keeps the interval at 0: a heartbeat is due at every poll.
                        heartbeat_interval_ms=0,
                        assignment=payload,
                    ),
                    self.now,
                )
        elif action == "error":
            hb = self._take(ConsumerGroupHeartbeatRequest)
            if hb is not None:
                assert isinstance(arg, ErrorCode)
                m.on_response(hb, ConsumerGroupHeartbeatResponse(arg), self.now)
        elif action == "fail":
            kind = ConsumerGroupHeartbeatRequest if arg else OffsetCommitRequest
            request = self._take(kind)
            if request is not None:
                m.on_request_failed(request, self.now)
        elif action == "commit_ok":
            commit = self._take(OffsetCommitRequest)
            if isinstance(commit, OffsetCommitRequest):
                code = ErrorCode.NONE if arg else ErrorCode.STALE_MEMBER_EPOCH
                m.on_response(commit, _commit_response(commit, code), self.now)
        elif action == "assignment_rpc":
            assert isinstance(arg, ErrorCode)
            install = next(
                (r for r in self.in_flight if isinstance(r, ConsumerGroupInstallAssignmentRequest)),
                None,
            )
            if install is not None:
                self.in_flight.remove(install)
                m.on_response(install, ConsumerGroupInstallAssignmentResponse(arg), self.now)
                return
            prepare = self._take(ConsumerGroupPrepareAssignmentRequest)
            if isinstance(prepare, ConsumerGroupPrepareAssignmentRequest):
                m.on_response(prepare, _prepared(arg, prepare.member_id), self.now)
        elif action == "enforce":
            m.enforce_rebalance("test")
        elif action == "metadata":
            m.update_metadata(FULL if arg else PARTIAL)
        elif action == "commit":
            m.commit({TopicPartition("foo", 0): 1}, self.now)


def _commit_response(request: OffsetCommitRequest, code: ErrorCode) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        tuple(
            OffsetCommitResponseTopic(
                t.name,
                tuple(OffsetCommitResponsePartition(p.partition_index, code) for p in t.partitions),
            )
            for t in request.topics
        )
    )


def _prepared(code: ErrorCode, member_id: str) -> ConsumerGroupPrepareAssignmentResponse:
    return ConsumerGroupPrepareAssignmentResponse(
        code,
        group_epoch=3,
        client_assignor_name="uniform",
        members=(ConsumerGroupPrepareAssignmentMember(member_id, 1, None, (FOO,), 0, 0, b"", ()),),
        partition_metadata=(PartitionMetadata(FOO, 3),),
    )


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(actions, min_size=1, max_size=60),
    static=st.booleans(),
    flaky=st.booleans(),
    client_side=st.booleans(),
    seed=st.integers(0, 3),
)
def test_random_inputs_raise_typed_errors_or_follow_the_table(
    steps: list[tuple[str, object]], static: bool, flaky: bool, client_side: bool, seed: int
) -> None:
    positions = {TopicPartition("foo", p): 10 for p in range(3)}
    member = ConsumerMember(
        ConsumerMemberConfig(
            "grp", group_instance_id="i" if static else None, max_poll_interval_ms=300_000
        ),
        rng=random.Random(seed),
        listener=Listener(flaky),
        client_assignors=[ServerLogicAssignor("uniform")] if client_side else (),
        positions=lambda: positions,
        metadata=PARTIAL,
    )
    driver = Driver(member)
    previous = member.state
    for action, arg in [("subscribe", ["foo", "bar"]), *steps]:
        before = member.state
        try:
            driver.apply(action, arg)
        except TYPED:
            assert member.state is before, (action, arg)
            events = member.take_events()
            assert not [e for e in events if isinstance(e, MemberStateChanged)]
            continue
        for event in member.take_events():
            if isinstance(event, MemberStateChanged):
                old, new = S(event.old_state), S(event.new_state)
                assert old is previous
                assert is_transition_allowed(old, new), (old, new)
                previous = new
        assert member.state is previous
        if member.state in (S.UNSUBSCRIBED, S.STALE, S.FATAL, S.FENCED):
            assert member.assignment == frozenset()
        if member.state is S.LEAVING:
            assert member.member_epoch == (-2 if static else -1)
        assert member.assignment <= {
            TopicPartition(t, p)
            for t, n in (("foo", 3), ("bar", 2), ("ghost", 1))
            for p in range(3)
        }
        deadline = member.next_deadline()
        assert deadline is None or deadline >= 0


# -- next_deadline only names instants poll acts on ------------------------------------------------


def _polls_to_settle(driver: Driver) -> int:
    """Poll at ``driver.now`` while the member names that instant; how many polls it took.

    A poll that raises surfaces one pending error (a listener's, the fatal one) and does
    nothing else, so the deadline may name the same instant again after it."""
    member = driver.member
    for polls in range(1, 9):
        try:
            driver.in_flight.extend(member.poll(driver.now))
        except TYPED:
            continue
        deadline = member.next_deadline()
        if deadline is None or deadline > driver.now:
            return polls
    raise AssertionError(f"next_deadline() keeps naming {driver.now} in {member.state}")


@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(actions, min_size=1, max_size=60),
    static=st.booleans(),
    flaky=st.booleans(),
    auto_commit=st.booleans(),
    seed=st.integers(0, 3),
)
def test_after_poll_the_next_deadline_is_later(
    steps: list[tuple[str, object]], static: bool, flaky: bool, auto_commit: bool, seed: int
) -> None:
    """After ``poll(t)`` with no new input, ``next_deadline()`` is ``None`` or after ``t``:
    a driver that trusts the deadline never loops at one instant (the simulator found a
    member in JOINING, epoch 0, whose auto-commit deadline ``poll`` never acted on)."""
    positions = {TopicPartition("foo", p): 10 for p in range(3)}
    member = ConsumerMember(
        ConsumerMemberConfig(
            "grp",
            group_instance_id="i" if static else None,
            max_poll_interval_ms=300_000,
            enable_auto_commit=auto_commit,
            auto_commit_interval_ms=1_000,
        ),
        rng=random.Random(seed),
        listener=Listener(flaky),
        positions=lambda: positions,
        metadata=PARTIAL,
    )
    driver = Driver(member)
    for action, arg in [("subscribe", ["foo", "bar"]), *steps]:
        with contextlib.suppress(*TYPED):
            driver.apply(action, arg)
        polls = _polls_to_settle(driver)
        if not flaky:
            # No listener errors to surface: one poll(t) leaves nothing due at t.
            assert polls == 1 or (action == "error" and polls == 2), (action, member.state)


def test_joining_after_the_poll_timer_has_no_stale_auto_commit_deadline() -> None:
    """The simulator's case: the poll timer expired, the member rejoined (JOINING, epoch 0)
    with its auto-commit clock in the past; the deadline must not name that past instant."""
    positions = {TopicPartition("foo", 0): 5}
    member = ConsumerMember(
        ConsumerMemberConfig("grp", max_poll_interval_ms=1_000, auto_commit_interval_ms=500),
        rng=random.Random(0),
        positions=lambda: positions,
        metadata=PARTIAL,
    )
    member.on_application_poll(0)
    member.subscribe(["foo"])
    (hb,) = member.poll(0)
    assignment = ConsumerGroupHeartbeatAssignment((TopicPartitions(FOO, (0,)),))
    response = ConsumerGroupHeartbeatResponse(
        ErrorCode.NONE, member_epoch=1, heartbeat_interval_ms=5_000, assignment=assignment
    )
    member.on_response(hb, response, 0)
    member.on_application_poll(0)  # reconcile (auto-commit: on the application's poll)
    in_flight = member.poll(0)  # acknowledge
    assert member.state is S.STABLE
    for request in in_flight:
        if isinstance(request, ConsumerGroupHeartbeatRequest):
            member.on_response(
                request, ConsumerGroupHeartbeatResponse(ErrorCode.NONE, member_epoch=1), 0
            )
    member.poll(2_000)  # the poll timer expired: leave, STALE
    assert member.state in (S.STALE,)
    member.on_application_poll(2_000)
    assert member.state is S.JOINING
    member.poll(2_000)
    deadline = member.next_deadline()
    assert deadline is None or deadline > 2_000
