"""``join_on_application_poll``: a needed JoinGroup waits for the application's poll().

Kafka's classic consumer sends JoinGroup from ``KafkaConsumer.poll`` ->
``ConsumerCoordinator.poll`` -> ``ensureActiveGroup`` (the application thread),
so a rebalance reported by a heartbeat is joined after the current batch; the
heartbeat thread keeps heartbeating meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import TypeVar

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
from regroup.classic.member.state import MemberState
from regroup.classic.protocol import encode_assignment
from regroup.events import Event
from regroup.model import ErrorCode, TopicPartition
from regroup.model.metadata import MetadataImage
from regroup.model.requests.classic import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

T = "t"
COOP = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)
EAGER = (RebalanceProtocol.EAGER,)
R = TypeVar("R")


class _NoopAssignor(ConsumerPartitionAssignor):
    name = "a"

    def __init__(self, protocols: tuple[RebalanceProtocol, ...]) -> None:
        self._protocols = protocols

    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]:
        return self._protocols

    def assign(
        self, metadata: ClusterMetadata, group_subscription: GroupSubscription
    ) -> GroupAssignment:
        return GroupAssignment({m: Assignment(()) for m in group_subscription.subscriptions})

    def subscription_user_data(self, topics: Set[str]) -> bytes | None:
        return None


def member_of(
    *, held: bool = True, protocols: tuple[RebalanceProtocol, ...] = COOP
) -> ClassicMember:
    member = ClassicMember(
        ClassicMemberConfig(group_id="g", client_id="c"),
        assignors=[_NoopAssignor(protocols)],
        metadata=MetadataImage.from_partition_counts({T: 4}),
        join_on_application_poll=held,
    )
    member.subscribe([T])
    return member


def tp(n: int) -> TopicPartition:
    return TopicPartition(T, n)


def of(requests: Sequence[MemberRequest], kind: type[R]) -> list[R]:
    return [r for r in requests if isinstance(r, kind)]


def join_and_sync(
    member: ClassicMember, join: JoinGroupRequest, now: int, gen: int, parts: Sequence[int]
) -> None:
    member.on_response(
        join,
        JoinGroupResponse(
            ErrorCode.NONE,
            generation_id=gen,
            protocol_type="consumer",
            protocol_name="a",
            leader="x",
            member_id="m1",
        ),
        now,
    )
    (sync,) = of(member.poll(now), SyncGroupRequest)
    member.on_response(
        sync,
        SyncGroupResponse(
            ErrorCode.NONE,
            protocol_type="consumer",
            protocol_name="a",
            assignment=encode_assignment(Assignment(tuple(tp(p) for p in parts))),
        ),
        now,
    )


def stable(member: ClassicMember, parts: Sequence[int], now: int = 0) -> None:
    member.on_application_poll(now)
    (join,) = of(member.poll(now), JoinGroupRequest)
    join_and_sync(member, join, now, 1, parts)
    assert member.state is MemberState.STABLE


# -- scripted --------------------------------------------------------------------------------


def test_the_first_join_waits_for_the_application_poll_after_subscribe() -> None:
    member = member_of()
    assert member.poll(0) == []
    assert member.next_deadline() is None  # only the application's poll can start it
    member.on_application_poll(5)
    assert len(of(member.poll(5), JoinGroupRequest)) == 1


def test_without_the_flag_the_join_goes_out_from_the_member_step() -> None:
    member = member_of(held=False)
    assert len(of(member.poll(0), JoinGroupRequest)) == 1


def test_a_rebalance_reported_by_a_heartbeat_is_joined_at_the_next_application_poll() -> None:
    member = member_of()
    stable(member, [0, 1])
    (hb,) = of(member.poll(3000), HeartbeatRequest)
    member.on_response(hb, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS), 3000)
    assert member.rejoin_pending
    # the application is busy with a batch: heartbeats go on, no JoinGroup
    assert member.poll(3000) == []
    deadline = member.next_deadline()
    assert deadline is not None and deadline > 3000
    member.on_application_poll(4000)  # still in max.poll.interval.ms: nothing is lost
    member.on_application_poll(4000)
    requests = member.poll(5999)
    assert of(requests, JoinGroupRequest) and member.assignment == {tp(0), tp(1)}


def test_heartbeats_continue_while_the_join_is_held() -> None:
    member = member_of()
    stable(member, [0])
    (hb,) = of(member.poll(3000), HeartbeatRequest)
    member.on_response(hb, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS), 3000)
    later = member.poll(6000)
    assert of(later, HeartbeatRequest) and not of(later, JoinGroupRequest)
    member.on_application_poll(6500)
    assert of(member.poll(6500), JoinGroupRequest)


def test_eager_revocation_waits_with_the_join() -> None:
    """onJoinPrepare's revocation runs with the JoinGroup, after the batch (Kafka)."""
    member = member_of(protocols=EAGER)
    stable(member, [0, 1])
    (hb,) = of(member.poll(3000), HeartbeatRequest)
    member.on_response(hb, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS), 3000)
    member.poll(3100)
    assert member.assignment == {tp(0), tp(1)}
    member.on_application_poll(3200)
    assert len(of(member.poll(3200), JoinGroupRequest)) == 1
    assert member.assignment == frozenset()


def test_a_failed_join_is_retried_at_the_next_application_poll() -> None:
    member = member_of()
    member.on_application_poll(0)
    (join,) = of(member.poll(0), JoinGroupRequest)
    member.on_response(join, JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id="m1"), 1)
    assert member.poll(1) == []
    member.on_application_poll(2)
    (again,) = of(member.poll(2), JoinGroupRequest)
    assert again.member_id == "m1"


def test_the_cooperative_follow_up_rejoin_is_not_held() -> None:
    """KIP-429 step 3.b: Kafka's joinGroupIfNeeded rejoins in the poll that completed."""
    member = member_of()
    stable(member, [0, 1])
    (hb,) = of(member.poll(3000), HeartbeatRequest)
    member.on_response(hb, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS), 3000)
    member.on_application_poll(3000)
    (join,) = of(member.poll(3000), JoinGroupRequest)
    join_and_sync(member, join, 3001, 2, [0])  # partition 1 revoked: rejoin
    assert member.rejoin_pending
    assert of(member.poll(3001), JoinGroupRequest)


# -- properties ------------------------------------------------------------------------------

HB_ERRORS = [
    ErrorCode.NONE,
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.ILLEGAL_GENERATION,
]
JOIN_ERRORS = [ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED, ErrorCode.REBALANCE_IN_PROGRESS]
SYNC_ERRORS = [ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION]

actions = st.one_of(
    st.tuples(st.just("tick"), st.integers(0, 4000)),
    st.tuples(st.just("app_poll"), st.integers(0, 2000)),
    st.tuples(st.just("answer"), st.integers(0, 3)),
    st.tuples(st.just("answer"), st.integers(0, 3)),
    st.tuples(st.just("enforce"), st.just(0)),
)


class _Driver:
    """Feeds one member a script; answers the oldest request in flight."""

    def __init__(self, member: ClassicMember, *, app_poll_always: bool) -> None:
        self.member = member
        self.app_poll_always = app_poll_always
        self.now = 0
        self.gen = 0
        self.in_flight: list[MemberRequest] = []
        self.log: list[object] = []

    def poll(self) -> None:
        if self.app_poll_always:
            self.member.on_application_poll(self.now)
        out = self.member.poll(self.now)
        self.log.extend(out)
        self.in_flight.extend(out)
        deadline = self.member.next_deadline()
        # the deadline names only instants poll acts on
        assert (
            deadline is None
            or deadline > self.now
            or self.member.state
            in (
                MemberState.CLOSED,
                MemberState.FATAL,
            )
        )

    def step(self, kind: str, arg: int) -> None:
        member = self.member
        if kind == "tick":
            self.now += arg
        elif kind == "app_poll":
            self.now += arg
            member.on_application_poll(self.now)
        elif kind == "enforce":
            if member.state is MemberState.STABLE:
                member.enforce_rebalance("test")
        elif self.in_flight:
            request = self.in_flight.pop(0)
            self._answer(request, arg)
        self.poll()
        events: list[Event] = member.take_events()
        self.log.extend(events)

    def _answer(self, request: MemberRequest, choice: int) -> None:
        member, now = self.member, self.now
        if isinstance(request, HeartbeatRequest):
            member.on_response(request, HeartbeatResponse(HB_ERRORS[choice % 4]), now)
        elif isinstance(request, JoinGroupRequest):
            code = JOIN_ERRORS[choice % 3]
            if code is ErrorCode.NONE:
                self.gen += 1
            response = JoinGroupResponse(
                code,
                generation_id=self.gen,
                protocol_type="consumer",
                protocol_name="a" if code is ErrorCode.NONE else None,
                leader="x",
                member_id="m1",
            )
            member.on_response(request, response, now)
        elif isinstance(request, SyncGroupRequest):
            code = SYNC_ERRORS[choice % 3]
            assignment = encode_assignment(Assignment((tp(self.gen % 4), tp((self.gen + 1) % 4))))
            member.on_response(
                request,
                SyncGroupResponse(
                    code,
                    protocol_type="consumer",
                    protocol_name="a",
                    assignment=assignment if code is ErrorCode.NONE else b"",
                ),
                now,
            )
        elif isinstance(request, LeaveGroupRequest):
            member.on_response(request, LeaveGroupResponse(ErrorCode.NONE), now)


@settings(max_examples=120, deadline=None)
@given(script=st.lists(actions, max_size=40), eager=st.booleans())
def test_with_an_application_poll_before_every_step_the_flag_changes_nothing(
    script: list[tuple[str, int]], eager: bool
) -> None:
    """An application that is always polling sees the member of Kafka's default model."""
    protocols = EAGER if eager else COOP
    plain = _Driver(member_of(held=False, protocols=protocols), app_poll_always=True)
    held = _Driver(member_of(held=True, protocols=protocols), app_poll_always=True)
    for kind, arg in script:
        plain.step(kind, arg)
        held.step(kind, arg)
    assert plain.log == held.log


@settings(max_examples=120, deadline=None)
@given(script=st.lists(actions, max_size=40), eager=st.booleans())
def test_a_held_join_goes_out_only_after_an_application_poll(
    script: list[tuple[str, int]], eager: bool
) -> None:
    """Every JoinGroup follows an application poll made after the last input that asked
    for it, except the follow-up rejoin right after a completed SyncGroup (step 3.b)."""
    driver = _Driver(
        member_of(held=True, protocols=EAGER if eager else COOP), app_poll_always=False
    )
    app_polled = False
    for kind, arg in script:
        completed_sync = False
        if kind == "app_poll":
            app_polled = True
        elif kind == "answer" and driver.in_flight:
            head = driver.in_flight[0]
            completed_sync = isinstance(head, SyncGroupRequest) and arg % 3 == 0
        before = len(driver.log)
        driver.step(kind, arg)
        joins = [r for r in driver.log[before:] if isinstance(r, JoinGroupRequest)]
        if joins:
            assert app_polled or completed_sync, (kind, arg)
            app_polled = False
