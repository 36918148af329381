"""The classic member driven by scripted responses: every KIP-429 step and error path."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest

from regroup.assignors.classic.api import (
    Assignment,
    ClusterMetadata,
    ConsumerPartitionAssignor,
    GroupAssignment,
    GroupSubscription,
    RebalanceProtocol,
    Subscription,
)
from regroup.classic.member.config import ClassicMemberConfig
from regroup.classic.member.errors import CommitFailedError, RebalanceInProgressError
from regroup.classic.member.leader import CooperativeAssignmentViolation
from regroup.classic.member.member import ClassicMember, MemberRequest
from regroup.classic.member.state import MemberState
from regroup.classic.protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from regroup.events import PartitionsAssigned, PartitionsLost, PartitionsRevoked
from regroup.members.errors import IllegalStateError, MemberFatalError
from regroup.model import ErrorCode, TopicPartition
from regroup.model.metadata import MetadataImage
from regroup.model.requests.classic import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)

T = "t"


def tp(n: int, topic: str = T) -> TopicPartition:
    return TopicPartition(topic, n)


def tps(*ns: int) -> frozenset[TopicPartition]:
    return frozenset(tp(n) for n in ns)


@dataclass
class RecordingListener:
    calls: list[tuple[str, list[TopicPartition]]] = field(default_factory=list)
    fail: Mapping[str, Exception] = field(default_factory=dict)

    def _record(self, name: str, partitions: Sequence[TopicPartition]) -> None:
        self.calls.append((name, list(partitions)))
        if name in self.fail:
            raise self.fail[name]

    def on_partitions_revoked(self, partitions: Sequence[TopicPartition]) -> None:
        self._record("revoked", partitions)

    def on_partitions_assigned(self, partitions: Sequence[TopicPartition]) -> None:
        self._record("assigned", partitions)

    def on_partitions_lost(self, partitions: Sequence[TopicPartition]) -> None:
        self._record("lost", partitions)


class ScriptedAssignor(ConsumerPartitionAssignor):
    """An assignor whose output the test decides."""

    def __init__(
        self,
        name: str,
        protocols: tuple[RebalanceProtocol, ...],
        plan: Callable[[GroupSubscription], Mapping[str, Sequence[TopicPartition]]] | None = None,
    ) -> None:
        self.name = name  # type: ignore[misc]  # a test double named per instance
        self._protocols = protocols
        self._plan = plan
        self.seen: list[GroupSubscription] = []
        self.on_assignment_calls: list[Assignment] = []

    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]:
        return self._protocols

    def assign(
        self, metadata: ClusterMetadata, group_subscription: GroupSubscription
    ) -> GroupAssignment:
        self.seen.append(group_subscription)
        plan = self._plan(group_subscription) if self._plan else {}
        return GroupAssignment(
            {m: Assignment(tuple(plan.get(m, ()))) for m in group_subscription.subscriptions}
        )

    def subscription_user_data(self, topics: Set[str]) -> bytes | None:
        return None

    def on_assignment(self, assignment: Assignment, metadata: object) -> None:
        self.on_assignment_calls.append(assignment)


EAGER = (RebalanceProtocol.EAGER,)
COOP = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)


def make(
    *,
    protocols: tuple[RebalanceProtocol, ...] = COOP,
    name: str = "coop",
    listener: RecordingListener | None = None,
    assignors: Sequence[ConsumerPartitionAssignor] | None = None,
    clock: Callable[[str, Sequence[TopicPartition]], int] | None = None,
    metadata: Mapping[str, int] | None = None,
    **config: Any,
) -> tuple[ClassicMember, RecordingListener]:
    listener = listener or RecordingListener()
    cfg = ClassicMemberConfig(group_id="g", client_id="c", **config)
    member = ClassicMember(
        cfg,
        listener=listener,
        assignors=assignors or [ScriptedAssignor(name, protocols)],
        metadata=MetadataImage.from_partition_counts(metadata or {T: 4}),
        callback_clock=clock,
    )
    member.subscribe([T])
    return member, listener


R = TypeVar("R")


def only(requests: list[MemberRequest], kind: type[R]) -> R:
    found = [r for r in requests if isinstance(r, kind)]
    assert len(found) == 1, requests
    return found[0]


def join_ok(
    member: ClassicMember,
    now: int,
    *,
    generation: int = 1,
    member_id: str = "m1",
    protocol: str | None = None,
    leader: str = "leader",
    members: tuple[JoinGroupResponseMember, ...] = (),
    skip: bool = False,
) -> SyncGroupRequest:
    join = only(member.poll(now), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    name = protocol or join.protocols[0].name
    member.on_response(
        join,
        JoinGroupResponse(
            ErrorCode.NONE,
            generation_id=generation,
            protocol_type="consumer",
            protocol_name=name,
            leader=leader,
            member_id=member_id,
            members=members,
            skip_assignment=skip,
        ),
        now,
    )
    sync = only(member.poll(now), SyncGroupRequest)
    assert isinstance(sync, SyncGroupRequest)
    return sync


def sync_ok(
    member: ClassicMember, sync: SyncGroupRequest, partitions: Sequence[TopicPartition], now: int
) -> None:
    member.on_response(
        sync,
        SyncGroupResponse(
            ErrorCode.NONE,
            protocol_type="consumer",
            protocol_name=sync.protocol_name,
            assignment=encode_assignment(Assignment(tuple(partitions))),
        ),
        now,
    )


def stable(
    member: ClassicMember, partitions: Sequence[TopicPartition], now: int = 0, generation: int = 1
) -> None:
    sync = join_ok(member, now, generation=generation)
    sync_ok(member, sync, partitions, now)
    assert member.state is MemberState.STABLE


# -- step 1: joining ------------------------------------------------------------------------


def test_first_join_request_carries_kafka_configs_and_protocols_in_preference_order() -> None:
    a = ScriptedAssignor("coop", COOP)
    b = ScriptedAssignor("eager", EAGER)
    member, _ = make(assignors=[a, b], rebalance_protocol_selection="dynamic")
    join = only(member.poll(0), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    assert join.member_id == ""
    assert join.session_timeout_ms == 45000
    assert join.rebalance_timeout_ms == 300000
    assert join.protocol_type == "consumer"
    assert [p.name for p in join.protocols] == ["coop", "eager"]
    sub = decode_subscription(join.protocols[0].metadata)
    assert list(sub.topics) == [T]
    assert list(sub.owned_partitions) == []
    assert sub.generation_id == -1
    assert member.state is MemberState.PREPARING_REBALANCE
    assert member.request_timeout_ms(join) == 305000


def test_member_id_required_adopts_the_id_and_rejoins_at_once() -> None:
    member, listener = make()
    join = only(member.poll(0), JoinGroupRequest)
    member.on_response(join, JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id="m-1"), 5)
    again = only(member.poll(5), JoinGroupRequest)
    assert isinstance(again, JoinGroupRequest)
    assert again.member_id == "m-1"
    assert listener.calls == []
    assert member.metrics.failed_rebalance_total == 1


def test_follower_gets_its_assignment_and_everything_is_assigned_callback() -> None:
    member, listener = make()
    sync = join_ok(member, 0)
    assert sync.assignments == ()
    assert member.state is MemberState.COMPLETING_REBALANCE
    sync_ok(member, sync, [tp(0), tp(1)], 10)
    assert member.assignment == tps(0, 1)
    assert listener.calls == [("assigned", [tp(0), tp(1)])]
    assert member.metrics.rebalance_total == 1
    events = member.take_events()
    kinds = [e.kind for e in events]
    assert kinds.count("member_state_changed") == 3
    assert isinstance(events[-1], PartitionsAssigned)
    assert events[-1].generation_or_epoch == 1


def test_an_assignor_that_overrides_on_assignment_gets_the_assignment_in_order() -> None:
    assignor = ScriptedAssignor("coop", COOP)
    member, _ = make(assignors=[assignor])
    sync = join_ok(member, 0)
    sync_ok(member, sync, [tp(3), tp(1)], 10)
    assert [a.partitions for a in assignor.on_assignment_calls] == [(tp(1), tp(3))]


def test_leader_runs_the_selected_assignor_over_decoded_subscriptions() -> None:
    def plan(gs: GroupSubscription) -> dict[str, list[TopicPartition]]:
        return {"m1": [tp(0), tp(1)], "m2": [tp(2), tp(3)]}

    assignor = ScriptedAssignor("coop", COOP, plan)
    member, _ = make(assignors=[assignor])
    other = encode_subscription(Subscription((T,), owned_partitions=(tp(3),), generation_id=0))
    mine = encode_subscription(Subscription((T,)))
    sync = join_ok(
        member,
        0,
        leader="m1",
        members=(
            JoinGroupResponseMember("m1", None, mine),
            JoinGroupResponseMember("m2", "i-2", other),
        ),
    )
    assert member.is_leader
    subs = assignor.seen[0].subscriptions
    assert subs["m2"].group_instance_id == "i-2"
    assert list(subs["m2"].owned_partitions) == [tp(3)]
    decoded = {
        a.member_id: list(decode_assignment(a.assignment).partitions) for a in sync.assignments
    }
    assert decoded == {"m1": [tp(0), tp(1)], "m2": [tp(2), tp(3)]}


def test_leader_refuses_a_cooperative_assignor_that_revokes_and_assigns_in_one_round() -> None:
    def plan(gs: GroupSubscription) -> dict[str, list[TopicPartition]]:
        return {"m1": [], "m2": [tp(0)]}  # moves t-0 from m1 to m2 at once

    member, _ = make(assignors=[ScriptedAssignor("custom-coop", COOP, plan)])
    member.poll(0)
    owned = encode_subscription(Subscription((T,), owned_partitions=(tp(0),), generation_id=1))
    fresh = encode_subscription(Subscription((T,)))
    join = member._join
    assert join is not None
    member.on_response(
        join,
        JoinGroupResponse(
            ErrorCode.NONE,
            generation_id=2,
            protocol_name="custom-coop",
            leader="m1",
            member_id="m1",
            members=(
                JoinGroupResponseMember("m1", None, owned),
                JoinGroupResponseMember("m2", None, fresh),
            ),
        ),
        1,
    )
    with pytest.raises(CooperativeAssignmentViolation, match="violates its requirements"):
        member.poll(1)
    assert member.state is MemberState.UNJOINED
    assert member.metrics.failed_rebalance_total == 1


def test_the_validation_is_skipped_for_cooperative_sticky_itself() -> None:
    def plan(gs: GroupSubscription) -> dict[str, list[TopicPartition]]:
        return {"m1": [], "m2": [tp(0)]}

    member, _ = make(assignors=[ScriptedAssignor("cooperative-sticky", COOP, plan)])
    owned = encode_subscription(Subscription((T,), owned_partitions=(tp(0),), generation_id=1))
    sync = join_ok(
        member,
        0,
        leader="m1",
        members=(
            JoinGroupResponseMember("m1", None, owned),
            JoinGroupResponseMember("m2", None, encode_subscription(Subscription((T,)))),
        ),
    )
    assert len(sync.assignments) == 2


def test_static_leader_told_to_skip_assignment_sends_none() -> None:
    member, _ = make(group_instance_id="i-1")
    sync = join_ok(member, 0, leader="m1", skip=True)
    assert sync.assignments == ()
    assert sync.group_instance_id == "i-1"


# -- steps 1 and 3 under each protocol ------------------------------------------------------


def test_eager_revokes_everything_before_joining_and_assigns_everything_after() -> None:
    member, listener = make(protocols=EAGER, name="eager")
    stable(member, [tp(0), tp(1)])
    assert member.enforce_rebalance("go")
    listener.calls.clear()
    join = only(member.poll(100), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    assert listener.calls == [("revoked", [tp(0), tp(1)])]
    assert member.assignment == frozenset()
    assert list(decode_subscription(join.protocols[0].metadata).owned_partitions) == []
    member.on_response(
        join,
        JoinGroupResponse(
            ErrorCode.NONE, generation_id=2, protocol_name="eager", leader="x", member_id="m1"
        ),
        100,
    )
    sync = only(member.poll(100), SyncGroupRequest)
    assert isinstance(sync, SyncGroupRequest)
    sync_ok(member, sync, [tp(1), tp(2)], 100)
    assert listener.calls[1:] == [("assigned", [tp(1), tp(2)])]


def test_eager_member_revokes_even_an_empty_assignment() -> None:
    member, listener = make(protocols=EAGER, name="eager")
    stable(member, [])
    listener.calls.clear()
    member.enforce_rebalance()
    member.poll(1)
    assert listener.calls == [("revoked", [])]


def test_cooperative_callback_example_of_kip_429() -> None:
    """{1,2} -> {2,3}: revoked(1) then assigned(3); the first exception is re-raised from
    poll; the assignment is {2,3} all the same; the event log records both callbacks."""
    first = RuntimeError("revoke failed")
    listener = RecordingListener(fail={"revoked": first, "assigned": ValueError("second")})
    member, _ = make(listener=listener)
    member._invoker._listener = RecordingListener()  # the first assignment succeeds quietly
    stable(member, [tp(1), tp(2)])
    member._invoker._listener = listener
    member.take_events()
    member.enforce_rebalance()
    join = only(member.poll(10), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    sub = decode_subscription(join.protocols[0].metadata)
    assert list(sub.owned_partitions) == [tp(1), tp(2)]
    assert sub.generation_id == 1
    member.on_response(
        join,
        JoinGroupResponse(
            ErrorCode.NONE, generation_id=2, protocol_name="coop", leader="x", member_id="m1"
        ),
        10,
    )
    sync = only(member.poll(10), SyncGroupRequest)
    assert isinstance(sync, SyncGroupRequest)
    sync_ok(member, sync, [tp(2), tp(3)], 11)
    assert listener.calls == [("revoked", [tp(1)]), ("assigned", [tp(3)])]
    assert member.assignment == tps(2, 3)
    with pytest.raises(RuntimeError) as raised:
        member.poll(12)
    assert raised.value is first
    assert member.assignment == tps(2, 3)
    events = [
        e for e in member.take_events() if isinstance(e, PartitionsRevoked | PartitionsAssigned)
    ]
    assert [(e.kind, e.partitions) for e in events] == [
        ("partitions_revoked", (tp(1),)),
        ("partitions_assigned", (tp(3),)),
    ]
    # the follow-up rebalance of step 3.c is sent by the next poll
    follow_up = only(member.poll(13), JoinGroupRequest)
    assert isinstance(follow_up, JoinGroupRequest)
    assert follow_up.reason == "need to revoke partitions and re-join"
    assert list(decode_subscription(follow_up.protocols[0].metadata).owned_partitions) == [
        tp(2),
        tp(3),
    ]


def test_cooperative_member_with_nothing_revoked_does_not_rejoin_and_still_calls_assigned() -> None:
    member, listener = make()
    stable(member, [tp(1)])
    member.enforce_rebalance()
    sync = join_ok(member, 5, generation=2)
    sync_ok(member, sync, [tp(1)], 6)
    assert listener.calls[-1] == ("assigned", [])
    assert member.poll(7) == []


def test_cooperative_subscription_change_revokes_only_the_unsubscribed_topic_step_1a() -> None:
    member, listener = make(metadata={T: 2, "u": 2})
    member.subscribe([T, "u"])
    stable(member, [tp(0), tp(0, "u")])
    listener.calls.clear()
    member.subscribe(["u"])
    join = only(member.poll(5), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    assert listener.calls == [("revoked", [tp(0)])]
    assert list(decode_subscription(join.protocols[0].metadata).owned_partitions) == [tp(0, "u")]
    assert join.reason == "subscription changed"


def test_assignment_outside_the_subscription_makes_the_member_rejoin() -> None:
    member, _ = make()
    sync = join_ok(member, 0)
    sync_ok(member, sync, [tp(0, "other")], 1)
    assert member.assignment == frozenset()
    join = only(member.poll(2), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    assert join.reason == "received assignment does not match the current subscription"


# -- step 1.c / 1.d: errors -------------------------------------------------------------


def heartbeat(member: ClassicMember, now: int) -> HeartbeatRequest:
    hb = only(member.poll(now), HeartbeatRequest)
    assert isinstance(hb, HeartbeatRequest)
    return hb


def test_heartbeats_every_interval_and_rebalance_in_progress_rejoins_keeping_partitions() -> None:
    member, listener = make()
    stable(member, [tp(0)])
    assert member.next_deadline() == 3000
    assert member.poll(2999) == []
    hb = heartbeat(member, 3000)
    assert hb.generation_id == 1 and hb.member_id == "m1"
    member.on_response(hb, HeartbeatResponse(ErrorCode.NONE), 3001)
    assert member.next_deadline() == 6000
    hb = heartbeat(member, 6000)
    member.on_response(hb, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS), 6001)
    listener.calls.clear()
    join = only(member.poll(6001), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    assert join.reason == "group is already rebalancing"
    assert listener.calls == []
    assert member.assignment == tps(0)
    assert list(decode_subscription(join.protocols[0].metadata).owned_partitions) == [tp(0)]


@pytest.mark.parametrize(
    ("error", "keeps_id"),
    [(ErrorCode.ILLEGAL_GENERATION, True), (ErrorCode.UNKNOWN_MEMBER_ID, False)],
)
def test_fenced_heartbeat_loses_partitions_and_rejoins_empty_step_1d(
    error: ErrorCode, keeps_id: bool
) -> None:
    member, listener = make()
    stable(member, [tp(0), tp(1)])
    hb = heartbeat(member, 3000)
    member.on_response(hb, HeartbeatResponse(error), 3001)
    assert member.state is MemberState.UNJOINED
    listener.calls.clear()
    join = only(member.poll(3001), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    assert listener.calls == [("lost", [tp(0), tp(1)])]
    assert join.member_id == ("m1" if keeps_id else "")
    sub = decode_subscription(join.protocols[0].metadata)
    assert list(sub.owned_partitions) == [] and sub.generation_id == -1


def test_a_stale_heartbeat_error_is_ignored() -> None:
    member, _ = make()
    stable(member, [tp(0)])
    hb = heartbeat(member, 3000)
    member.enforce_rebalance()
    sync = join_ok(member, 3000, generation=2)
    sync_ok(member, sync, [tp(0)], 3000)
    member.on_response(hb, HeartbeatResponse(ErrorCode.ILLEGAL_GENERATION), 3001)
    assert member.state is MemberState.STABLE


def test_fenced_instance_id_is_fatal_and_the_partitions_are_lost() -> None:
    member, listener = make(group_instance_id="i")
    stable(member, [tp(0)])
    hb = heartbeat(member, 3000)
    member.on_response(hb, HeartbeatResponse(ErrorCode.FENCED_INSTANCE_ID), 3001)
    assert member.state is MemberState.FATAL
    assert listener.calls[-1] == ("lost", [tp(0)])
    with pytest.raises(MemberFatalError) as raised:
        member.poll(3002)
    assert raised.value.code is ErrorCode.FENCED_INSTANCE_ID
    with pytest.raises(MemberFatalError):
        member.commit({tp(0): 1}, 3003)


@pytest.mark.parametrize(
    "error",
    [
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        ErrorCode.INVALID_SESSION_TIMEOUT,
    ],
)
def test_fatal_join_errors(error: ErrorCode) -> None:
    member, _ = make()
    join = only(member.poll(0), JoinGroupRequest)
    member.on_response(join, JoinGroupResponse(error), 1)
    with pytest.raises(MemberFatalError):
        member.poll(1)


def test_retriable_join_error_backs_off_and_keeps_the_rebalance_start() -> None:
    member, _ = make(retry_backoff_ms=100)
    join = only(member.poll(0), JoinGroupRequest)
    member.on_response(join, JoinGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE), 10)
    assert member.poll(50) == []
    assert member.next_deadline() == 110
    sync = join_ok(member, 110)
    sync_ok(member, sync, [tp(0)], 200)
    snap = member.metrics_snapshot(200)
    assert snap["rebalance-latency-max"] == 200
    assert snap["failed-rebalance-total"] == 1


def test_sync_rebalance_in_progress_rejoins_at_once_keeping_partitions() -> None:
    member, listener = make()
    stable(member, [tp(0)])
    member.enforce_rebalance()
    sync = join_ok(member, 10, generation=2)
    member.on_response(sync, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS), 11)
    listener.calls.clear()
    join = only(member.poll(11), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    assert listener.calls == []
    assert list(decode_subscription(join.protocols[0].metadata).owned_partitions) == [tp(0)]


def test_sync_unknown_member_loses_partitions() -> None:
    member, listener = make()
    stable(member, [tp(0)])
    member.enforce_rebalance()
    sync = join_ok(member, 10, generation=2)
    member.on_response(sync, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID), 11)
    listener.calls.clear()
    join = only(member.poll(11), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    assert listener.calls == [("lost", [tp(0)])]
    assert join.member_id == ""


def test_request_failures_back_off() -> None:
    member, _ = make(retry_backoff_ms=100)
    join = only(member.poll(0), JoinGroupRequest)
    member.on_request_failed(join, 305000)
    member.on_application_poll(305000)
    assert member.state is MemberState.UNJOINED
    assert member.next_deadline() == 305100
    sync = join_ok(member, 305100)
    sync_ok(member, sync, [tp(0)], 305100)
    hb = heartbeat(member, 308100)
    member.on_request_failed(hb, 338100)
    assert member.next_deadline() == 338200


# -- commits (KIP-429 "Allow Consumer to Return Records in Rebalance") ----------------------


def commit_response(request: OffsetCommitRequest, error: ErrorCode) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        tuple(
            OffsetCommitResponseTopic(
                t.name,
                tuple(
                    OffsetCommitResponsePartition(p.partition_index, error) for p in t.partitions
                ),
            )
            for t in request.topics
        )
    )


def test_commit_is_refused_outside_a_stable_generation() -> None:
    member, _ = make()
    with pytest.raises(CommitFailedError):
        member.commit({tp(0): 5}, 0)
    member.poll(0)
    with pytest.raises(RebalanceInProgressError):
        member.commit({tp(0): 5}, 0)


def test_commit_in_a_stable_generation_and_its_errors() -> None:
    member, listener = make()
    stable(member, [tp(0), tp(1)])
    request = member.commit({tp(1): 7, tp(0): 5}, 10)
    assert request.generation_id_or_member_epoch == 1 and request.member_id == "m1"
    assert [
        (t.name, [(p.partition_index, p.committed_offset) for p in t.partitions])
        for t in request.topics
    ] == [(T, [(0, 5), (1, 7)])]
    assert member.poll(10) == [request]
    member.on_response(request, commit_response(request, ErrorCode.REBALANCE_IN_PROGRESS), 11)
    assert member.last_commit_error is ErrorCode.REBALANCE_IN_PROGRESS
    join = only(member.poll(11), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    assert listener.calls == [("assigned", [tp(0), tp(1)])]  # 1.c: nothing revoked

    member2, listener2 = make()
    stable(member2, [tp(0)])
    request = member2.commit({tp(0): 1}, 10)
    member2.poll(10)
    member2.on_response(request, commit_response(request, ErrorCode.ILLEGAL_GENERATION), 11)
    member2.poll(11)
    assert listener2.calls[-1] == ("lost", [tp(0)])


# -- KIP-568 enforceRebalance ----------------------------------------------------------------


def test_enforce_rebalance_idle_and_in_progress() -> None:
    member, _ = make()
    with pytest.raises(IllegalStateError):
        ClassicMember(
            ClassicMemberConfig(group_id="g"), assignors=[ScriptedAssignor("x", EAGER)]
        ).enforce_rebalance()
    assert not member.enforce_rebalance("before the first join")  # a join is already pending
    stable(member, [tp(0)])
    assert member.enforce_rebalance("x" * 300)
    assert not member.enforce_rebalance("again")
    join = only(member.poll(1), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    assert join.reason == "x" * 255
    assert not member.enforce_rebalance("while in progress")
    assert member.assignment == tps(0)


def test_enforce_rebalance_default_reason() -> None:
    member, _ = make()
    stable(member, [tp(0)])
    member.enforce_rebalance()
    join = only(member.poll(1), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    assert join.reason == "rebalance enforced by user"


# -- max.poll.interval.ms ------------------------------------------------------------------


@pytest.mark.parametrize("instance", [None, "i-1"])
def test_poll_timeout_leaves_the_group_until_the_application_polls(instance: str | None) -> None:
    member, listener = make(
        group_instance_id=instance, max_poll_interval_ms=10000, heartbeat_interval_ms=3000
    )
    stable(member, [tp(0)])
    member.on_application_poll(5000)
    out = member.poll(9000)
    assert [type(r) for r in out] == [HeartbeatRequest]
    assert member.next_deadline() == 12000 or member.next_deadline() == 15000
    out = member.poll(15000)
    leaves = [r for r in out if isinstance(r, LeaveGroupRequest)]
    assert len(leaves) == (1 if instance is None else 0)
    if leaves:
        assert leaves[0].members[0].reason == "consumer poll timeout has expired."
    assert listener.calls[-1] == ("lost", [tp(0)])
    assert member.state is MemberState.UNJOINED
    assert member.poll(20000) == []
    member.on_application_poll(20000)
    join = only(member.poll(20000), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    assert join.member_id == ""
    assert join.group_instance_id == instance


# -- metadata (steps 1.b and the leader's snapshot) ----------------------------------------


def test_leader_rejoins_when_a_subscribed_topic_grows_and_a_follower_does_not() -> None:
    assignor = ScriptedAssignor("coop", COOP, lambda gs: {"m1": [tp(0)]})
    leader, _ = make(assignors=[assignor], metadata={T: 1})
    mine = encode_subscription(Subscription((T,)))
    sync = join_ok(leader, 0, leader="m1", members=(JoinGroupResponseMember("m1", None, mine),))
    sync_ok(leader, sync, [tp(0)], 0)
    follower, _ = make(metadata={T: 1})
    stable(follower, [tp(0)])
    grown = MetadataImage.from_partition_counts({T: 2})
    leader.update_metadata(grown)
    follower.update_metadata(grown)
    assert isinstance(only(leader.poll(1), JoinGroupRequest), JoinGroupRequest)
    assert follower.poll(1) == []


def test_owned_partitions_that_vanish_are_lost_step_1b() -> None:
    member, listener = make(metadata={T: 4, "u": 1})
    member.subscribe([T, "u"])
    stable(member, [tp(0), tp(3), tp(0, "u")])
    listener.calls.clear()
    member.update_metadata(MetadataImage.from_partition_counts({T: 2}))
    member.poll(1)
    assert listener.calls == [("lost", [tp(3), tp(0, "u")])]
    assert member.assignment == tps(0)


# -- close / leave ---------------------------------------------------------------------------


def test_close_revokes_and_a_dynamic_member_leaves() -> None:
    member, listener = make()
    stable(member, [tp(0)])
    out = member.close(5)
    assert listener.calls[-1] == ("revoked", [tp(0)])
    leave = only(out, LeaveGroupRequest)
    assert isinstance(leave, LeaveGroupRequest)
    assert leave.members[0].member_id == "m1"
    assert member.state is MemberState.CLOSED
    assert member.poll(6) == []
    assert member.next_deadline() is None


def test_close_of_a_static_member_sends_no_leave_and_close_during_rebalance_loses() -> None:
    member, listener = make(group_instance_id="i")
    stable(member, [tp(0)])
    member.enforce_rebalance()
    member.poll(1)
    assert member.close(2) == []
    assert listener.calls[-1] == ("lost", [tp(0)])


def test_unsubscribe_leaves_and_does_not_rejoin() -> None:
    member, listener = make()
    stable(member, [tp(0)])
    member.subscribe([])
    assert listener.calls[-1] == ("revoked", [tp(0)])
    out = member.poll(1)
    assert [type(r) for r in out] == [LeaveGroupRequest]
    assert member.poll(100000) == []


# -- KIP-726 dynamic protocol selection ----------------------------------------------------


def test_static_selection_is_kafka_default_list_runs_eager() -> None:
    cfg = ClassicMemberConfig(group_id="g", rebalance_protocol_selection="static")
    member = ClassicMember(cfg)
    assert cfg.assignment_strategy == ("range", "cooperative-sticky")
    assert member.protocol is RebalanceProtocol.EAGER


def test_dynamic_selection_default_list_starts_cooperative() -> None:
    member = ClassicMember(ClassicMemberConfig(group_id="g"))
    assert [a.name for a in member._assignors] == ["cooperative-sticky", "range"]
    assert member.protocol is RebalanceProtocol.COOPERATIVE


def test_cooperative_member_that_finds_an_eager_assignor_selected_loses_and_refuses_commits() -> (
    None
):
    coop = ScriptedAssignor("coop", COOP)
    eager = ScriptedAssignor("eager", EAGER)
    member, listener = make(assignors=[coop, eager])
    stable(member, [tp(0), tp(1)])
    member.enforce_rebalance()
    join = only(member.poll(10), JoinGroupRequest)
    assert isinstance(join, JoinGroupRequest)
    assert list(decode_subscription(join.protocols[0].metadata).owned_partitions) == [tp(0), tp(1)]
    member.on_response(
        join,
        JoinGroupResponse(
            ErrorCode.NONE, generation_id=2, protocol_name="eager", leader="x", member_id="m1"
        ),
        11,
    )
    assert listener.calls[-1] == ("lost", [tp(0), tp(1)])
    assert member.assignment == frozenset()
    assert member.protocol is RebalanceProtocol.EAGER
    with pytest.raises(RebalanceInProgressError):
        member.commit({tp(0): 1}, 11)
    sync = only(member.poll(11), SyncGroupRequest)
    assert isinstance(sync, SyncGroupRequest)
    sync_ok(member, sync, [tp(0), tp(2)], 12)
    assert listener.calls[-1] == ("assigned", [tp(0), tp(2)])
    member.commit({tp(0): 1}, 12)
    # from now on the member is eager: the next rebalance revokes everything first
    member.enforce_rebalance()
    member.poll(13)
    assert listener.calls[-1] == ("revoked", [tp(0), tp(2)])


def test_static_selection_never_switches_protocol() -> None:
    coop = ScriptedAssignor("coop", COOP)
    member, _ = make(assignors=[coop], rebalance_protocol_selection="static")
    assert member.protocol is RebalanceProtocol.COOPERATIVE
    stable(member, [tp(0)])
    assert member.protocol is RebalanceProtocol.COOPERATIVE


# -- metrics -----------------------------------------------------------------------------------


def test_callback_time_charged_by_the_driver_is_the_callback_latency() -> None:
    member, _ = make(clock=lambda name, parts: 40 if name == "assigned" else 10)
    sync = join_ok(member, 1000)
    sync_ok(member, sync, [tp(0)], 1500)
    assert member.clock_ms == 1540
    snap = member.metrics_snapshot(1540)
    assert snap["partitions-assigned-latency-avg"] == 40
    assert snap["partition-assigned-latency-max"] == 40
    assert snap["rebalance-latency-avg"] == 500
    assert snap["rebalance-latency-total"] == 500
    assert snap["rebalance-total"] == 1
    assert snap["last-rebalance-seconds-ago"] == 0
    assert member.metrics_snapshot(4600)["last-rebalance-seconds-ago"] == 3
    # 1 rebalance over 40 ms elapsed padded by one 30 s window (Kafka's Rate.windowSize)
    assert snap["rebalance-rate-per-hour"] == pytest.approx(3_600_000 / 30040)
    assert snap["failed-rebalance-rate-per-hour"] == 0
    # avg / max are windowed: after two windows they are NaN again
    later = member.metrics_snapshot(1540 + 60000)
    assert later["rebalance-latency-avg"] != later["rebalance-latency-avg"]


def test_no_last_rebalance_is_minus_one() -> None:
    member, _ = make()
    assert member.metrics_snapshot(0)["last-rebalance-seconds-ago"] == -1


def test_lost_event_and_revoked_event_carry_the_generation() -> None:
    member, _ = make()
    stable(member, [tp(0)])
    hb = heartbeat(member, 3000)
    member.on_response(hb, HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID), 3000)
    member.take_events()
    member.poll(3000)
    lost = [e for e in member.take_events() if isinstance(e, PartitionsLost)]
    assert len(lost) == 1 and lost[0].partitions == (tp(0),)


def test_events_after_unknown_member_id_name_the_member_that_had_the_partitions() -> None:
    """The id is cleared before onJoinPrepare reports the loss (Kafka); the event still
    names the member that lost the partitions, and the new id once one is given."""
    member, _ = make()
    stable(member, [tp(0), tp(1)])
    member.take_events()
    hb = heartbeat(member, 3000)
    member.on_response(hb, HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID), 3000)
    assert member.member_id == ""
    sync = join_ok(member, 3000, generation=2, member_id="m2")
    events = member.take_events()
    lost = [e for e in events if isinstance(e, PartitionsLost)]
    assert len(lost) == 1 and lost[0].member_id == "m1"
    assert lost[0].partitions == (tp(0), tp(1))
    assert all(getattr(e, "member_id", "x") for e in events)
    sync_ok(member, sync, [tp(2)], 3001)
    (assigned,) = [e for e in member.take_events() if isinstance(e, PartitionsAssigned)]
    assert assigned.member_id == "m2"


def test_poll_timeout_loss_names_the_member() -> None:
    member, _ = make(max_poll_interval_ms=10_000)
    stable(member, [tp(0)])
    member.take_events()
    member.poll(10_000)  # no application poll for max.poll.interval.ms: leave, lose
    lost = [e for e in member.take_events() if isinstance(e, PartitionsLost)]
    assert len(lost) == 1 and lost[0].member_id == "m1"
    assert member.member_id == ""


def test_leader_notices_a_metadata_change_made_during_the_rebalance() -> None:
    assignor = ScriptedAssignor("coop", COOP, lambda gs: {"m1": [tp(0)]})
    leader, _ = make(assignors=[assignor], metadata={T: 1})
    mine = encode_subscription(Subscription((T,)))
    sync = join_ok(leader, 0, leader="m1", members=(JoinGroupResponseMember("m1", None, mine),))
    leader.update_metadata(MetadataImage.from_partition_counts({T: 3}))
    assert leader.poll(1) == []  # still completing the rebalance
    sync_ok(leader, sync, [tp(0)], 2)
    join = only(leader.poll(3), JoinGroupRequest)
    assert join.reason is not None and join.reason.startswith("cached metadata has changed")


def test_a_fatal_member_sends_nothing_more() -> None:
    member, _ = make()
    stable(member, [tp(0)])
    member.commit({tp(0): 1}, 1)
    hb = heartbeat(member, 3000)
    member.on_response(hb, HeartbeatResponse(ErrorCode.GROUP_AUTHORIZATION_FAILED), 3001)
    assert member.next_deadline() is None
    with pytest.raises(MemberFatalError):
        member.poll(3002)
    assert member.close(3003) == []
