"""The KIP-848 member against scripted coordinator responses: every transition and error path.

The case study of KIP-848 ("Case Studies": A, B and C join a group on topic
``foo`` with 3 partitions) is replayed from each member's point of view, with
the responses the coordinator gives in the text.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from regroup.consumer.member.config import ConsumerMemberConfig, TopicAuthorizationError
from regroup.consumer.member.member import ConsumerMember
from regroup.consumer.member.state import MemberState
from regroup.events.schema import (
    MemberStateChanged,
    PartitionsRevoked,
)
from regroup.members.errors import IllegalStateError, MemberFatalError
from regroup.model import ErrorCode, TopicPartition, Uuid
from regroup.model.metadata import MetadataImage
from regroup.model.requests.consumer import (
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)

S = MemberState
FOO = Uuid.for_name("foo")
BAR = Uuid.for_name("bar")
METADATA = MetadataImage.from_partition_counts({"foo": 3, "bar": 2})
INTERVAL = 5000


def foo(*partitions: int) -> list[TopicPartition]:
    return [TopicPartition("foo", p) for p in partitions]


class Recorder:
    """A listener that records every call, and can raise from chosen callbacks."""

    def __init__(self, raise_on: Sequence[str] = ()) -> None:
        self.calls: list[tuple[str, list[TopicPartition]]] = []
        self.raise_on = set(raise_on)

    def _record(self, name: str, partitions: Sequence[TopicPartition]) -> None:
        self.calls.append((name, list(partitions)))
        if name in self.raise_on:
            raise RuntimeError(f"{name} failed")

    def on_partitions_revoked(self, partitions: Sequence[TopicPartition]) -> None:
        self._record("revoked", partitions)

    def on_partitions_assigned(self, partitions: Sequence[TopicPartition]) -> None:
        self._record("assigned", partitions)

    def on_partitions_lost(self, partitions: Sequence[TopicPartition]) -> None:
        self._record("lost", partitions)


def make_member(
    *,
    listener: Recorder | None = None,
    instance_id: str | None = None,
    positions: Mapping[TopicPartition, int] | None = None,
    metadata: MetadataImage = METADATA,
    **config: Any,
) -> ConsumerMember:
    cfg = ConsumerMemberConfig(group_id="grp", group_instance_id=instance_id, **config)
    return ConsumerMember(
        cfg,
        rng=random.Random(7),
        listener=listener,
        metadata=metadata,
        positions=(lambda: dict(positions)) if positions is not None else None,
    )


def response(
    epoch: int,
    assignment: Mapping[Uuid, Sequence[int]] | None = None,
    *,
    error: ErrorCode = ErrorCode.NONE,
    interval: int = INTERVAL,
) -> ConsumerGroupHeartbeatResponse:
    payload = None
    if assignment is not None:
        payload = ConsumerGroupHeartbeatAssignment(
            tuple(TopicPartitions(t, tuple(p)) for t, p in assignment.items())
        )
    return ConsumerGroupHeartbeatResponse(
        error_code=error, member_epoch=epoch, heartbeat_interval_ms=interval, assignment=payload
    )


def error_response(code: ErrorCode) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(error_code=code, error_message="scripted")


def heartbeat(member: ConsumerMember, now: int) -> ConsumerGroupHeartbeatRequest:
    """The single heartbeat ``poll`` returns now."""
    requests = [r for r in member.poll(now) if isinstance(r, ConsumerGroupHeartbeatRequest)]
    assert len(requests) == 1, requests
    return requests[0]


def exchange(
    member: ConsumerMember, now: int, answer: ConsumerGroupHeartbeatResponse
) -> ConsumerGroupHeartbeatRequest:
    request = heartbeat(member, now)
    member.on_response(request, answer, now)
    return request


def owned(request: ConsumerGroupHeartbeatRequest) -> dict[Uuid, tuple[int, ...]] | None:
    if request.topic_partitions is None:
        return None
    return {tp.topic_id: tp.partitions for tp in request.topic_partitions}


def states(member: ConsumerMember) -> list[str]:
    return [e.new_state for e in member.take_events() if isinstance(e, MemberStateChanged)]


def joined(member: ConsumerMember, partitions: Sequence[int], epoch: int = 1) -> None:
    """Subscribe to foo and reach STABLE at ``epoch`` owning ``foo-<partitions>``."""
    member.subscribe(["foo"])
    exchange(member, 0, response(epoch, {FOO: partitions}))
    member.on_application_poll(0)  # with auto-commit, reconciling waits for the app's poll
    ack = heartbeat(member, 0)
    member.on_response(ack, response(epoch), 0)
    assert member.state is S.STABLE
    assert member.assignment == frozenset(foo(*partitions))


# -- joining --------------------------------------------------------------------------------


def test_a_new_member_sends_a_full_heartbeat_with_epoch_zero() -> None:
    member = make_member(instance_id="i-1", client_rack="r1")
    assert member.state is S.UNSUBSCRIBED
    assert member.poll(0) == []
    member.subscribe(["foo", "bar", "foo"])
    assert member.state is S.JOINING
    request = heartbeat(member, 0)
    assert request.group_id == "grp"
    assert request.member_id == member.member_id and request.member_id
    assert request.member_epoch == 0
    assert request.instance_id == "i-1"
    assert request.rack_id == "r1"
    assert request.rebalance_timeout_ms == 300000
    assert request.subscribed_topic_names == ("bar", "foo")
    assert request.topic_partitions == ()
    assert request.server_assignor is None and request.client_assignors is None


def test_member_id_comes_from_the_injected_rng() -> None:
    assert make_member().member_id == make_member().member_id
    other = ConsumerMember(ConsumerMemberConfig("grp"), rng=random.Random(8))
    assert other.member_id != make_member().member_id


def test_join_reconcile_acknowledge_stable() -> None:
    listener = Recorder()
    member = make_member(listener=listener)
    member.subscribe(["foo"])
    exchange(member, 0, response(1, {FOO: [0, 1, 2]}))
    assert member.state is S.RECONCILING
    assert member.member_epoch == 1
    ack = heartbeat(member, 0)  # reconciles, then the ack goes out at once
    assert listener.calls == [("assigned", foo(0, 1, 2))]
    assert owned(ack) == {FOO: (0, 1, 2)}
    assert ack.member_epoch == 1
    assert member.state is S.STABLE
    assert states(member) == ["JOINING", "RECONCILING", "ACKNOWLEDGING", "STABLE"]


def test_an_empty_first_assignment_still_calls_on_partitions_assigned() -> None:
    listener = Recorder()
    member = make_member(listener=listener)
    member.subscribe(["foo"])
    exchange(member, 0, response(1, {}))
    ack = heartbeat(member, 0)
    assert listener.calls == [("assigned", [])]
    assert owned(ack) == {}
    assert member.state is S.STABLE


def test_joining_without_an_assignment_stays_joining_and_waits_the_interval() -> None:
    member = make_member()
    member.subscribe(["foo"])
    exchange(member, 0, response(0))
    assert member.state is S.JOINING
    assert member.next_deadline() == INTERVAL
    assert member.poll(INTERVAL - 1) == []
    again = heartbeat(member, INTERVAL)
    assert again.member_epoch == 0 and again.subscribed_topic_names == ("foo",)


# -- the case study ---------------------------------------------------------------------------


def test_case_study_member_a() -> None:
    """A: epoch 1 with foo-0..2; revokes foo-2 for B (epoch 2); revokes foo-1 for C (epoch 3)."""
    listener = Recorder()
    positions = {tp: 10 + tp.partition for tp in foo(0, 1, 2)}
    member = make_member(listener=listener, positions=positions)
    joined(member, [0, 1, 2])
    listener.calls.clear()
    member.take_events()

    # B joined: A's next heartbeat is answered with epoch 1 and foo-0, foo-1 (revoke foo-2).
    exchange(member, INTERVAL, response(1, {FOO: [0, 1]}))
    assert member.state is S.RECONCILING
    member.on_application_poll(INTERVAL)
    requests = member.poll(INTERVAL)
    commits = [r for r in requests if isinstance(r, OffsetCommitRequest)]
    assert len(commits) == 1 and not any(
        isinstance(r, ConsumerGroupHeartbeatRequest) for r in requests
    )
    commit = commits[0]
    assert commit.member_id == member.member_id
    assert commit.generation_id_or_member_epoch == 1
    assert listener.calls == []  # onPartitionsRevoked waits for the commit
    assert member.pending_revocation == frozenset(foo(2))
    member.on_response(commit, _commit_ok(commit), INTERVAL)
    assert listener.calls == [("revoked", foo(2)), ("assigned", [])]
    assert member.state is S.ACKNOWLEDGING
    ack = heartbeat(member, INTERVAL)
    assert owned(ack) == {FOO: (0, 1)} and ack.member_epoch == 1
    member.on_response(ack, response(2), INTERVAL)
    assert member.member_epoch == 2 and member.state is S.STABLE
    assert member.assignment == frozenset(foo(0, 1))

    # C joined: epoch 2 with foo-0 (revoke foo-1); the ack moves A to epoch 3.
    listener.calls.clear()
    exchange(member, 2 * INTERVAL, response(2, {FOO: [0]}))
    member.on_application_poll(2 * INTERVAL)
    commit = next(r for r in member.poll(2 * INTERVAL) if isinstance(r, OffsetCommitRequest))
    assert commit.generation_id_or_member_epoch == 2
    member.on_response(commit, _commit_ok(commit), 2 * INTERVAL)
    ack = heartbeat(member, 2 * INTERVAL)
    assert owned(ack) == {FOO: (0,)}
    member.on_response(ack, response(3), 2 * INTERVAL)
    assert (member.member_epoch, member.state) == (3, S.STABLE)
    assert member.assignment == frozenset(foo(0))
    revoked = [e for e in member.take_events() if isinstance(e, PartitionsRevoked)]
    assert [(e.partitions, e.generation_or_epoch) for e in revoked] == [
        (tuple(foo(2)), 1),
        (tuple(foo(1)), 2),
    ]


def test_case_study_member_b() -> None:
    """B: blocked at epoch 0 until A revokes foo-2; then epoch 2 with foo-2; then epoch 3."""
    listener = Recorder()
    member = make_member(listener=listener)
    member.subscribe(["foo"])
    exchange(member, 0, response(0, {}))
    exchange(member, 0, response(0))  # acknowledges the empty assignment
    assert member.state is S.STABLE and member.member_epoch == 0
    exchange(member, INTERVAL, response(2, {FOO: [2]}))
    ack = heartbeat(member, INTERVAL)
    assert owned(ack) == {FOO: (2,)}
    member.on_response(ack, response(2), INTERVAL)
    assert (member.member_epoch, member.assignment) == (2, frozenset(foo(2)))
    listener.calls.clear()
    member.take_events()
    # C joined: B keeps foo-2 and moves to epoch 3 at once, without callbacks or an ack.
    exchange(member, 2 * INTERVAL, response(3, {FOO: [2]}))
    assert (member.member_epoch, member.state) == (3, S.STABLE)
    assert listener.calls == []
    assert states(member) == []
    nxt = heartbeat(member, 3 * INTERVAL)
    assert nxt.member_epoch == 3 and nxt.topic_partitions is None


def test_case_study_member_c() -> None:
    """C: epoch 0 and no partitions until A revoked foo-1; then epoch 3 with foo-1."""
    listener = Recorder()
    member = make_member(listener=listener)
    member.subscribe(["foo"])
    exchange(member, 0, response(0))
    exchange(member, INTERVAL, response(0))
    assert member.state is S.JOINING and member.assignment == frozenset()
    exchange(member, 2 * INTERVAL, response(3, {FOO: [1]}))
    ack = heartbeat(member, 2 * INTERVAL)
    assert owned(ack) == {FOO: (1,)} and ack.member_epoch == 3
    assert listener.calls == [("assigned", foo(1))]
    assert member.state is S.STABLE


def _commit_ok(request: OffsetCommitRequest) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        tuple(
            OffsetCommitResponseTopic(
                t.name,
                tuple(
                    OffsetCommitResponsePartition(p.partition_index, ErrorCode.NONE)
                    for p in t.partitions
                ),
            )
            for t in request.topics
        )
    )


# -- send only what changed --------------------------------------------------------------------


def test_heartbeats_send_only_what_changed_and_everything_after_an_error() -> None:
    member = make_member()
    joined(member, [0])
    steady = heartbeat(member, INTERVAL)
    assert steady.member_epoch == 1
    assert steady.subscribed_topic_names is None
    assert steady.rebalance_timeout_ms == -1
    assert steady.topic_partitions is None
    member.on_response(steady, response(1), INTERVAL)
    member.subscribe(["foo", "bar"])
    changed = heartbeat(member, 2 * INTERVAL)
    assert changed.subscribed_topic_names == ("bar", "foo")
    assert changed.topic_partitions is None and changed.rebalance_timeout_ms == -1
    member.on_response(changed, error_response(ErrorCode.COORDINATOR_NOT_AVAILABLE), 2 * INTERVAL)
    full = heartbeat(member, 2 * INTERVAL)  # retried at once, with every field
    assert full.subscribed_topic_names == ("bar", "foo")
    assert full.rebalance_timeout_ms == 300000
    assert owned(full) == {FOO: (0,)}


def test_a_failed_heartbeat_backs_off_and_resends_everything() -> None:
    member = make_member(retry_backoff_ms=100, retry_backoff_max_ms=1000)
    joined(member, [0])
    request = heartbeat(member, INTERVAL)
    member.on_request_failed(request, INTERVAL)
    assert member.next_deadline() == INTERVAL + 100
    assert member.poll(INTERVAL + 99) == []
    again = heartbeat(member, INTERVAL + 100)
    assert again.rebalance_timeout_ms == 300000 and owned(again) == {FOO: (0,)}
    member.on_request_failed(again, INTERVAL + 100)
    assert member.next_deadline() == INTERVAL + 300  # exponential


def test_a_retried_heartbeat_is_full_and_keeps_its_epoch() -> None:
    """What a client sends when a heartbeat's answer was lost (the simulator's duplicated
    request): Kafka resets the sent fields on failure, so the retry carries everything and
    the coordinator answers it with the whole assignment (soak seed consumer 5525)."""
    member = make_member()
    joined(member, [0])
    steady = heartbeat(member, INTERVAL)
    assert steady.topic_partitions is None and steady.subscribed_topic_names is None
    retry = member.retry_request(steady)
    assert isinstance(retry, ConsumerGroupHeartbeatRequest) and retry is not steady
    assert retry.member_epoch == steady.member_epoch == 1
    assert retry.member_id == steady.member_id
    assert retry.subscribed_topic_names == ("foo",)
    assert retry.rebalance_timeout_ms == 300000
    assert owned(retry) == {FOO: (0,)}
    # The member's own record of what it sent is unchanged: its next heartbeat is partial.
    member.on_response(steady, response(1), INTERVAL)
    assert heartbeat(member, 2 * INTERVAL).topic_partitions is None


def test_a_leave_heartbeat_and_other_requests_are_retried_unchanged() -> None:
    member = make_member()
    joined(member, [0])
    member.close(INTERVAL)
    leave = heartbeat(member, INTERVAL)
    assert leave.member_epoch == -1
    assert member.retry_request(leave) is leave
    other = OffsetCommitRequest(
        group_id="g", generation_id_or_member_epoch=1, member_id="m", topics=()
    )
    assert member.retry_request(other) is other


def test_load_in_progress_retries_with_backoff() -> None:
    member = make_member()
    member.subscribe(["foo"])
    exchange(member, 0, error_response(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    assert member.state is S.JOINING
    assert member.next_deadline() == 100


def test_the_heartbeat_interval_comes_from_the_response() -> None:
    member = make_member()
    member.subscribe(["foo"])
    exchange(member, 0, response(1, {FOO: [0]}, interval=1234))
    ack = heartbeat(member, 10)
    member.on_response(ack, response(1, interval=777), 20)
    assert member.next_deadline() == 20 + 777


# -- fencing --------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_fenced_member_loses_its_partitions_and_rejoins_with_epoch_zero(code: ErrorCode) -> None:
    listener = Recorder()
    member = make_member(listener=listener)
    joined(member, [0, 1])
    member_id = member.member_id
    listener.calls.clear()
    member.take_events()
    exchange(member, INTERVAL, error_response(code))
    assert listener.calls == [("lost", foo(0, 1))]
    assert member.assignment == frozenset()
    assert states(member) == ["FENCED", "JOINING"]
    rejoin = heartbeat(member, INTERVAL)
    assert rejoin.member_id == member_id
    assert rejoin.member_epoch == 0
    assert rejoin.topic_partitions == () and rejoin.subscribed_topic_names == ("foo",)


def test_fencing_aborts_a_revocation_waiting_for_its_commit() -> None:
    listener = Recorder()
    member = make_member(listener=listener, positions={tp: 5 for tp in foo(0, 1)})
    joined(member, [0, 1])
    listener.calls.clear()
    exchange(member, INTERVAL, response(1, {FOO: [0]}))
    member.on_application_poll(INTERVAL)
    commit = next(r for r in member.poll(INTERVAL) if isinstance(r, OffsetCommitRequest))
    hb = heartbeat(member, 2 * INTERVAL)
    member.on_response(hb, error_response(ErrorCode.FENCED_MEMBER_EPOCH), 2 * INTERVAL)
    member.on_response(commit, _commit_ok(commit), 2 * INTERVAL)
    assert listener.calls == [("lost", foo(0, 1))]
    assert member.state is S.JOINING


# -- leaving --------------------------------------------------------------------------------


@pytest.mark.parametrize(("instance_id", "leave_epoch"), [(None, -1), ("static-1", -2)])
def test_leave_revokes_then_heartbeats_the_leave_epoch(
    instance_id: str | None, leave_epoch: int
) -> None:
    listener = Recorder()
    member = make_member(listener=listener, instance_id=instance_id)
    joined(member, [0, 1, 2])
    listener.calls.clear()
    member.take_events()
    member.close(INTERVAL)
    assert listener.calls == [("revoked", foo(0, 1, 2))]
    assert member.state is S.LEAVING
    leave = heartbeat(member, INTERVAL)
    assert leave.member_epoch == leave_epoch
    assert leave.instance_id == instance_id
    assert member.state is S.UNSUBSCRIBED
    assert states(member) == ["PREPARE_LEAVING", "LEAVING", "UNSUBSCRIBED"]
    member.on_response(leave, response(leave_epoch), INTERVAL)  # ignored
    assert member.state is S.UNSUBSCRIBED and member.poll(10 * INTERVAL) == []


def test_leave_commits_consumed_positions_first_with_auto_commit() -> None:
    listener = Recorder()
    member = make_member(listener=listener, positions={tp: 3 for tp in foo(0, 1, 2)})
    joined(member, [0, 1, 2])
    listener.calls.clear()
    member.close(INTERVAL)
    assert member.state is S.PREPARE_LEAVING
    requests = member.poll(INTERVAL)
    commit = next(r for r in requests if isinstance(r, OffsetCommitRequest))
    assert listener.calls == []
    member.on_response(commit, _commit_ok(commit), INTERVAL)
    assert listener.calls == [("revoked", foo(0, 1, 2))]
    assert member.state is S.LEAVING
    [result] = member.take_commit_results()
    assert result.purpose == "leave" and result.ok


def test_leaving_at_epoch_zero_runs_no_callbacks() -> None:
    listener = Recorder()
    member = make_member(listener=listener)
    member.subscribe(["foo"])
    exchange(member, 0, response(0))
    member.unsubscribe(0)
    assert listener.calls == []
    assert heartbeat(member, 0).member_epoch == -1
    assert member.state is S.UNSUBSCRIBED


def test_fenced_while_preparing_to_leave_ends_without_a_leave_heartbeat() -> None:
    listener = Recorder()
    member = make_member(listener=listener, positions={tp: 1 for tp in foo(0)})
    joined(member, [0])
    listener.calls.clear()
    hb = heartbeat(member, INTERVAL)
    member.close(INTERVAL)
    assert member.state is S.PREPARE_LEAVING
    member.on_response(hb, error_response(ErrorCode.FENCED_MEMBER_EPOCH), INTERVAL)
    assert member.state is S.UNSUBSCRIBED
    assert listener.calls == [("lost", foo(0))]
    assert [r for r in member.poll(INTERVAL) if isinstance(r, ConsumerGroupHeartbeatRequest)] == []


def test_resubscribing_after_a_leave_rejoins() -> None:
    member = make_member()
    joined(member, [0])
    member.close(INTERVAL)
    leave = heartbeat(member, INTERVAL)
    member.on_response(leave, response(-1), INTERVAL)
    member.subscribe(["foo"])
    rejoin = heartbeat(member, INTERVAL)
    assert rejoin.member_epoch == 0 and rejoin.topic_partitions == ()


# -- fatal errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        ErrorCode.UNSUPPORTED_ASSIGNOR,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.INVALID_REGULAR_EXPRESSION,
        ErrorCode.UNRELEASED_INSTANCE_ID,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.UNKNOWN_SERVER_ERROR,
    ],
)
def test_fatal_errors_lose_the_partitions_and_surface_once(code: ErrorCode) -> None:
    listener = Recorder()
    member = make_member(listener=listener)
    joined(member, [0, 1])
    listener.calls.clear()
    exchange(member, INTERVAL, error_response(code))
    assert member.state is S.FATAL
    assert listener.calls == [("lost", foo(0, 1))]
    with pytest.raises(MemberFatalError) as raised:
        member.poll(INTERVAL)
    assert raised.value.code is code
    assert member.poll(2 * INTERVAL) == []
    assert member.next_deadline() is None
    with pytest.raises(MemberFatalError):
        member.subscribe(["bar"])
    assert member.state is S.FATAL


def test_topic_authorization_failed_is_raised_from_poll_and_the_member_stays() -> None:
    member = make_member()
    joined(member, [0])
    exchange(member, INTERVAL, error_response(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    assert member.state is S.STABLE
    with pytest.raises(TopicAuthorizationError):
        member.poll(INTERVAL)
    assert member.state is S.STABLE


# -- listener errors (KIP-429 rule) -------------------------------------------------------------


def test_every_callback_runs_and_the_first_error_is_raised_from_poll() -> None:
    listener = Recorder(raise_on=["revoked", "assigned"])
    member = make_member(listener=listener)
    member.subscribe(["foo"])
    exchange(member, 0, response(1, {FOO: [0, 1]}))
    [ack] = member.poll(0)  # reconciles (onPartitionsAssigned raises), still acknowledges
    assert isinstance(ack, ConsumerGroupHeartbeatRequest)
    assert owned(ack) == {FOO: (0, 1)}
    with pytest.raises(RuntimeError, match="assigned failed"):
        member.poll(0)
    member.on_response(ack, response(1), 0)
    listener.calls.clear()
    exchange(member, INTERVAL, response(1, {FOO: [1, 2]}))
    member.poll(INTERVAL)
    # A revocation and an assignment in one step: both callbacks ran, the first error wins.
    assert [name for name, _ in listener.calls] == ["revoked", "assigned"]
    with pytest.raises(RuntimeError, match="revoked failed"):
        member.poll(INTERVAL)
    member.poll(INTERVAL)  # the error was raised once
    assert member.assignment == frozenset(foo(1, 2))  # the callbacks failed, the step did not


def test_enforce_rebalance_raises_under_this_protocol() -> None:
    member = make_member()
    joined(member, [0])
    with pytest.raises(IllegalStateError):
        member.enforce_rebalance("because")
    assert member.state is S.STABLE


# -- topic ids that do not resolve yet --------------------------------------------------------


def test_unresolved_topic_ids_wait_for_metadata() -> None:
    listener = Recorder()
    image = MetadataImage.from_partition_counts({"foo": 3})
    member = make_member(listener=listener, metadata=image)
    member.subscribe(["foo", "bar"])
    exchange(member, 0, response(1, {FOO: [0], BAR: [0, 1]}))
    ack = heartbeat(member, 0)
    assert owned(ack) == {FOO: (0,)}  # the resolved part is acknowledged
    assert member.state is S.RECONCILING
    member.on_response(ack, response(1), 0)
    assert member.next_deadline() == INTERVAL  # nothing to do until metadata arrives
    member.update_metadata(METADATA)
    assert member.next_deadline() == 0
    ack2 = heartbeat(member, 0 + 1)
    assert owned(ack2) == {FOO: (0,), BAR: (0, 1)}
    assert listener.calls == [
        ("assigned", foo(0)),
        ("assigned", [TopicPartition("bar", 0), TopicPartition("bar", 1)]),
    ]
    assert member.state is S.STABLE


# -- the poll timer ---------------------------------------------------------------------------


def test_poll_timer_expiry_leaves_goes_stale_and_rejoins_on_the_next_poll() -> None:
    listener = Recorder()
    member = make_member(listener=listener, max_poll_interval_ms=10_000)
    member.on_application_poll(0)
    joined(member, [0, 1])
    listener.calls.clear()
    member.take_events()
    assert member.next_deadline() == INTERVAL
    member.on_response(heartbeat(member, INTERVAL), response(1), INTERVAL)
    leave = heartbeat(member, 10_001)
    assert leave.member_epoch == -1
    assert member.state is S.STALE
    assert listener.calls == [("lost", foo(0, 1))]  # no onPartitionsRevoked
    assert states(member) == ["PREPARE_LEAVING", "LEAVING", "STALE"]
    member.on_response(leave, response(-1), 10_001)
    assert member.poll(20_000) == []
    member.on_application_poll(20_000)
    rejoin = heartbeat(member, 20_000)
    assert rejoin.member_epoch == 0 and member.state is S.JOINING


# -- commits ----------------------------------------------------------------------------------


def test_commit_uses_the_member_epoch_and_reports_results() -> None:
    member = make_member()
    joined(member, [0], epoch=4)
    member.commit({TopicPartition("foo", 0): 42}, INTERVAL)
    commit = next(r for r in member.poll(INTERVAL) if isinstance(r, OffsetCommitRequest))
    assert (commit.member_id, commit.generation_id_or_member_epoch) == (member.member_id, 4)
    stale = OffsetCommitResponse(
        (
            OffsetCommitResponseTopic(
                "foo", (OffsetCommitResponsePartition(0, ErrorCode.STALE_MEMBER_EPOCH),)
            ),
        )
    )
    member.on_response(commit, stale, INTERVAL)
    [result] = member.take_commit_results()
    assert result.purpose == "application"
    assert result.errors == {TopicPartition("foo", 0): ErrorCode.STALE_MEMBER_EPOCH}


def test_auto_commit_commits_moved_positions_every_interval() -> None:
    positions = {TopicPartition("foo", 0): 1}
    member = make_member(positions=positions, auto_commit_interval_ms=1000)
    joined(member, [0])
    member.on_application_poll(0)  # starts the auto-commit clock

    def commits_at(now: int) -> list[OffsetCommitRequest]:
        member.on_application_poll(now)
        return [r for r in member.poll(now) if isinstance(r, OffsetCommitRequest)]

    assert not commits_at(999)
    # Kafka's updateTimerAndMaybeCommit: the auto-commit runs on the application's poll,
    # never from the background poll alone.
    assert member.next_deadline() != 1000
    assert not [r for r in member.poll(1000) if isinstance(r, OffsetCommitRequest)]
    [commit] = commits_at(1000)
    assert commit.topics[0].partitions[0].committed_offset == 1
    member.on_response(commit, _commit_ok(commit), 1000)
    assert not commits_at(2000)


def test_a_failed_revocation_commit_does_not_stop_the_revocation() -> None:
    listener = Recorder()
    member = make_member(listener=listener, positions={tp: 9 for tp in foo(0, 1)})
    joined(member, [0, 1])
    listener.calls.clear()
    exchange(member, INTERVAL, response(1, {FOO: [1]}))
    member.on_application_poll(INTERVAL)
    commit = next(r for r in member.poll(INTERVAL) if isinstance(r, OffsetCommitRequest))
    member.on_request_failed(commit, INTERVAL)
    assert listener.calls == [("revoked", foo(0)), ("assigned", [])]
    [result] = member.take_commit_results()
    assert result.failed and result.purpose == "revocation"


def test_with_auto_commit_a_revocation_waits_for_the_applications_poll() -> None:
    """Kafka's ``maybeReconcile(canCommit)``: the background poll does not start a
    reconciliation while auto-commit is on; the application's next poll does, and its
    commit carries the positions the application reached meanwhile (no records
    processed twice in a clean reassignment)."""
    listener = Recorder()
    positions = {tp: 100 for tp in foo(0, 1)}
    member = make_member(listener=listener, positions=positions)
    joined(member, [0, 1])
    listener.calls.clear()
    exchange(member, INTERVAL, response(1, {FOO: [1]}))  # revoke foo-0
    assert member.state is S.RECONCILING
    # The application is processing a batch: the background thread polls, nothing moves.
    assert member.pending_revocation == frozenset()
    assert not [r for r in member.poll(INTERVAL + 1) if isinstance(r, OffsetCommitRequest)]
    assert member.next_deadline() != INTERVAL + 1
    assert listener.calls == []
    # The batch ends (positions move), then the application polls: commit, then revoke.
    positions.update({tp: 150 for tp in foo(0, 1)})
    member.on_application_poll(INTERVAL + 500)
    assert member.pending_revocation == frozenset(foo(0))
    [commit] = [r for r in member.poll(INTERVAL + 500) if isinstance(r, OffsetCommitRequest)]
    assert {p.committed_offset for t in commit.topics for p in t.partitions} == {150}
    member.on_response(commit, _commit_ok(commit), INTERVAL + 500)
    assert listener.calls == [("revoked", foo(0)), ("assigned", [])]


def test_without_auto_commit_the_background_poll_reconciles() -> None:
    """``enable.auto.commit=false``: nothing to commit first, so no wait for the app."""
    listener = Recorder()
    member = make_member(
        listener=listener, positions={tp: 5 for tp in foo(0, 1)}, enable_auto_commit=False
    )
    joined(member, [0, 1])
    listener.calls.clear()
    exchange(member, INTERVAL, response(1, {FOO: [1]}))
    heartbeat(member, INTERVAL)
    assert listener.calls == [("revoked", foo(0)), ("assigned", [])]
