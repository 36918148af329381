"""The classic protocol's member: Kafka's ``ConsumerCoordinator``, sans-IO.

Driven by time and responses, it produces requests -- the same shape as the
KIP-848 member, so one simulator drives both::

    requests = member.poll(now_ms)             # what to send now
    member.on_response(request, response, now_ms)
    member.on_request_failed(request, now_ms)  # timeout or disconnect
    member.on_application_poll(now_ms)         # the application called poll()
    deadline = member.next_deadline()          # when to call poll again
    events = member.take_events()

Rules
-----

Rule 1: the member's state changes only through the table of ``state``
        (``MemberStateMachine.process``); an illegal step raises and changes
        nothing. Every change is a ``MemberStateChanged`` event.
Rule 2: what an error code in a response does is the table
        ``errors.ERROR_ACTIONS``; the member carries the action out.
Rule 3: what KIP-429's "Consumer Coordinator Algorithm" does to the owned
        partitions is decided by pure plans -- step 1 (before every JoinGroup)
        and step 3 (after SyncGroup) in ``steps``, step 2 (the leader's
        assignment) in ``leader``; the member decides *when* they run
        and runs their callbacks.
Rule 4: ``ClassicMember`` is a façade over parts, each owning one concern and
        its state. A part is told what it needs and answers; it never calls
        back into the member:

        * ``Session`` (``session``): the heartbeat schedule, the
          Heartbeat in flight, the poll timer (Kafka ``Heartbeat``);
        * ``CommitTracker`` (``offsets``): the OffsetCommits in flight,
          the last commit error, the refusal rules (KIP-429, KIP-726);
        * ``ListenerInvoker`` (``listener``): the listener, callback time
          and latency, KIP-429's first exception;
        * ``ProtocolSelector`` (``rebalance_protocol``): EAGER or COOPERATIVE
          (Kafka's static rule, or KIP-726's dynamic one);
        * ``MemberMetrics`` (``metrics``): KIP-429's metrics.

        The member itself holds the state machine, the generation (member id,
        generation id, selected protocol, leader), the owned partitions and the
        subscription, Kafka's rejoin bookkeeping (``rejoinNeeded``,
        ``needsJoinPrepare``), the JoinGroup and SyncGroup in flight, the
        metadata it compares, its clock, and the requests and events it hands out.
Rule 5: a listener callback may take virtual time (``listener``): the
        member's clock moves on by it, and the callback's event carries the time
        at which it returned.

Theory of operation
-------------------

A rebalance is one trip through ``state``: a JoinGroup (KIP-429
step 1 first: ``steps.prepare_join``), the JoinGroup response (the
leader runs step 2: ``leader``), a SyncGroup, and its response (step 3:
``steps.complete_join``). The requests are built by
``requests``; listener calls go through the ``ListenerInvoker``
(KIP-429's error rule: every callback runs, the first exception is raised from
the next ``poll``). Every state change, rejoin request and callback is an
event (``regroup.events``). Around a rebalance the member heartbeats while
COMPLETING_REBALANCE or STABLE, commits while STABLE, leaves on ``close``,
``unsubscribe`` or an expired poll timer (Kafka ``onLeavePrepare`` and
``maybeLeaveGroup``), and asks for a rejoin when Kafka's
``rejoinNeededOrPending`` would: the leader's assignment snapshot no longer
matches the metadata, the subscription changed since the JoinGroup, or owned
partitions vanished from the metadata (KIP-429 step 1.b).

Deviations from Kafka, on purpose (a sans-IO member has no threads):
``poll`` plays both Kafka's heartbeat thread and ``KafkaConsumer.poll``, so by
default a JoinGroup goes out as soon as a rejoin is needed and callbacks run
inside ``poll`` / ``on_response``. With ``join_on_application_poll=True`` a
needed JoinGroup (and ``onJoinPrepare``'s callbacks) waits until the
application has called ``on_application_poll`` since the need arose, as
Kafka's consumer sends it from ``KafkaConsumer.poll`` -> ``ConsumerCoordinator
.poll`` -> ``ensureActiveGroup``, after the application's current batch;
heartbeats go on meanwhile (Kafka's heartbeat thread). The follow-up rejoin of
a cooperative rebalance (step 3.b) is not held: Kafka's ``joinGroupIfNeeded``
sends it in the poll that completed the join. Still not modelled: Kafka also
runs ``onJoinComplete`` (the SyncGroup's assignment and its callbacks) on the
application thread; here it runs when the SyncGroup response arrives.

A slow application is modelled by ``on_application_poll`` alone: after
``max.poll.interval.ms`` without it the member leaves (Kafka
``maybeLeaveGroup``), calls ``onPartitionsLost`` at once (Kafka defers it to
the application's next ``poll``) and does not rejoin before the application
polls again. Coordinator discovery is the driver's:
retriable coordinator errors back off ``retry.backoff.ms`` and retry. The
member does not own fetch positions: with ``enable.auto.commit`` the driver
commits through ``commit``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from regroup.assignors.classic.api import (
    Assignment,
    ConsumerGroupMetadata,
    ConsumerPartitionAssignor,
    RebalanceProtocol,
)
from regroup.classic.member.config import ClassicMemberConfig
from regroup.classic.member.errors import (
    ErrorAction,
    error_action,
)
from regroup.classic.member.leader import (
    group_subscribed_topics,
    partition_counts,
    run_leader_assignment,
)
from regroup.classic.member.metrics import MemberMetrics
from regroup.classic.member.offsets import CommitTracker
from regroup.classic.member.rebalance_protocol import ProtocolSelector
from regroup.classic.member.requests import (
    commit_request,
    heartbeat_request,
    join_request,
    leave_request,
    sync_request,
)
from regroup.classic.member.session import Session
from regroup.classic.member.state import (
    HEARTBEATING,
    REBALANCING,
    MemberState,
    MemberStateMachine,
    Trigger,
)
from regroup.classic.member.steps import (
    complete_join,
    leave_callback,
    prepare_join,
    vanished_partitions,
)
from regroup.classic.protocol import ConsumerProtocolError, decode_assignment
from regroup.events import (
    Event,
    MemberStateChanged,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    RebalanceRequested,
)
from regroup.members.errors import IllegalStateError, MemberFatalError
from regroup.members.listener import CallbackClock, ListenerInvoker
from regroup.model import NO_GENERATION, ErrorCode, TopicPartition, sorted_partitions
from regroup.model.listener import ConsumerRebalanceListener
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
from regroup.model.requests.offsets import OffsetCommitRequest, OffsetCommitResponse

__all__ = ["GROUP_PROTOCOL", "ClassicMember", "MemberRequest"]

MemberRequest = (
    JoinGroupRequest | SyncGroupRequest | HeartbeatRequest | LeaveGroupRequest | OffsetCommitRequest
)

#: ``group_protocol`` of the events this member emits.
GROUP_PROTOCOL: Final = "classic"

_EVENT_KINDS: Final = {
    "revoked": PartitionsRevoked,
    "assigned": PartitionsAssigned,
    "lost": PartitionsLost,
}

_ENFORCED_REASON: Final = "rebalance enforced by user"


class ClassicMember:
    """One consumer's membership in a classic group (see the module docstring)."""

    def __init__(
        self,
        config: ClassicMemberConfig,
        *,
        listener: ConsumerRebalanceListener | None = None,
        assignors: Sequence[ConsumerPartitionAssignor] | None = None,
        metadata: MetadataImage | None = None,
        callback_clock: CallbackClock | None = None,
        now_ms: int = 0,
        join_on_application_poll: bool = False,
    ) -> None:
        self.config = config
        #: Send a needed JoinGroup only after the application's next ``poll()`` (Kafka's
        #: ``ConsumerCoordinator.poll`` runs on the application thread); see ``ClassicMember``.
        self.join_on_application_poll = join_on_application_poll
        if assignors is None:
            # Imported at call time: the registry imports every assignor implementation.
            from regroup.assignors.classic.registry import create_classic_assignor

            assignors = [create_classic_assignor(name) for name in config.assignment_strategy]
        self._assignors: tuple[ConsumerPartitionAssignor, ...] = tuple(assignors)
        self._by_name = {a.name: a for a in self._assignors}

        # The parts (Rule 4).
        self._selector = ProtocolSelector(config.rebalance_protocol_selection, self._assignors)
        self.metrics = MemberMetrics(config.metrics_sample_window_ms, config.metrics_num_samples)
        self._invoker = ListenerInvoker(
            listener, clock=callback_clock, on_completed=self.metrics.callback_completed
        )
        self._session = Session(
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            retry_backoff_ms=config.retry_backoff_ms,
            max_poll_interval_ms=config.max_poll_interval_ms,
            now_ms=now_ms,
        )
        self._commits = CommitTracker()

        # The state machine and the generation (Kafka ``AbstractCoordinator``).
        self._sm = MemberStateMachine()
        self.member_id = ""
        #: The id the member had before it was reset (its events keep naming it).
        self._former_member_id = ""
        self.generation_id = NO_GENERATION
        #: The assignor the group selected in the current generation.
        self.protocol_name: str | None = None
        self.leader_id = ""
        self.is_leader = False
        self._join: JoinGroupRequest | None = None
        self._sync: SyncGroupRequest | None = None
        self._fatal: MemberFatalError | None = None

        # What the member owns and wants, and the metadata it compares.
        self._owned: frozenset[TopicPartition] = frozenset()
        self._subscription: frozenset[str] = frozenset()
        #: The subscription sent in the last JoinGroup (Kafka ``joinedSubscription``).
        self._joined_subscription: frozenset[str] | None = None
        self._metadata = metadata or MetadataImage()
        #: The image before the updates not yet compared (KIP-429 step 1.b).
        self._metadata_changed_from: MetadataImage | None = None
        #: Kafka ``assignmentSnapshot`` (leader only): partition counts at assignment time.
        self._assignment_snapshot: dict[str, int] | None = None

        # Kafka's rejoin bookkeeping: ``rejoinNeeded``, ``rejoinReason``, ``needsJoinPrepare``.
        self._rejoin_needed = False
        self._rejoin_reason = ""
        self._needs_join_prepare = True
        #: The application polled since the rejoin became needed (``join_on_application_poll``).
        self._app_polled_since_rejoin_needed = True
        self._join_retry_at = now_ms

        # The clock, and what the member hands out.
        self._now = now_ms
        self._outbox: list[MemberRequest] = []
        self._events: list[Event] = []
        #: A listener exception raised during ``close`` (close itself never raises).
        self.close_error: Exception | None = None

    # -- what the driver and the application read ----------------------------------------

    @property
    def state(self) -> MemberState:
        return self._sm.state

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions the member owns now."""
        return self._owned

    @property
    def poll_records_allowed(self) -> frozenset[TopicPartition]:
        """The partitions the application may fetch and process now.

        The owned ones, also during a rebalance (KIP-429, "Allow Consumer to Return
        Records in Rebalance"): under EAGER they were all revoked before the
        JoinGroup, under COOPERATIVE the kept ones stay processable.
        """
        if self._sm.state in (MemberState.FATAL, MemberState.CLOSED):
            return frozenset()
        return self._owned

    @property
    def protocol(self) -> RebalanceProtocol:
        """The rebalance protocol the member follows now."""
        return self._selector.current

    @property
    def subscription(self) -> frozenset[str]:
        return self._subscription

    @property
    def clock_ms(self) -> int:
        """The member's clock: the driver's time plus any callback time charged since."""
        return self._now

    @property
    def rebalance_in_progress(self) -> bool:
        return self._sm.state in REBALANCING

    @property
    def rejoin_pending(self) -> bool:
        """A rejoin is requested and not yet completed (Kafka ``rejoinNeededOrPending``)."""
        return self._rejoin_needed

    @property
    def last_commit_error(self) -> ErrorCode | None:
        """The error of the last failed commit (``None``: the last one succeeded)."""
        return self._commits.last_error

    @property
    def group_id(self) -> str:
        return self.config.group_id

    @property
    def event_member_id(self) -> str:
        """The member id events carry: the current one, else the one the member had.

        Kafka clears the member id on UNKNOWN_MEMBER_ID, on a poll timeout and on a
        leave before ``onJoinPrepare`` reports the loss; the events still name the
        member that lost the partitions (``""`` only before the first JoinGroup reply).
        """
        return self.member_id or self._former_member_id

    def metrics_snapshot(self, now_ms: int | None = None) -> dict[str, float]:
        return self.metrics.snapshot(self._now if now_ms is None else now_ms)

    def request_timeout_ms(self, request: MemberRequest) -> int:
        """How long the driver should wait for a response before ``on_request_failed``."""
        if isinstance(request, JoinGroupRequest):
            return self.config.join_group_request_timeout_ms
        return self.config.request_timeout_ms

    def take_events(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    # -- the application's calls -------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        """Kafka ``subscribe``: takes effect at the next ``poll`` (KIP-429 step 1.a).

        An empty subscription is ``unsubscribe`` (as in Kafka).
        """
        self._ensure_open()
        wanted = frozenset(topics)
        if not wanted:
            self.unsubscribe(self._now)
            return
        if wanted == self._subscription:
            return
        first = not self._subscription
        self._subscription = wanted
        if first:
            self._request_rejoin("subscribed")
        elif self._sm.state is not MemberState.STABLE and not self._rejoin_needed:
            self._request_rejoin("subscription changed")

    def unsubscribe(self, now_ms: int) -> None:
        """Kafka ``unsubscribe``: give the partitions up, leave the group, do not rejoin."""
        self._ensure_open()
        self._advance(now_ms)
        self._on_leave_prepare()
        self._leave_group("the consumer unsubscribed from all topics")
        self._subscription = frozenset()
        self._joined_subscription = None
        self._rejoin_needed = False
        self._raise_callback_error()

    def update_metadata(self, image: MetadataImage) -> None:
        """New topic metadata; compared with the previous image at the next ``poll``."""
        if self._metadata_changed_from is None:
            self._metadata_changed_from = self._metadata
        self._metadata = image

    def on_application_poll(self, now_ms: int) -> None:
        """The application called ``poll()``: resets the ``max.poll.interval.ms`` timer.

        With ``join_on_application_poll`` it also lets a needed JoinGroup go out at the
        next ``poll(now_ms)`` of the driver (Kafka ``ConsumerCoordinator.poll`` ->
        ``ensureActiveGroup``, on the application thread).
        """
        self._advance(now_ms)
        self._session.application_polled(self._now)
        self._app_polled_since_rejoin_needed = True

    def enforce_rebalance(self, reason: str | None = None) -> bool:
        """KIP-568 ``enforceRebalance``: rejoin at the next ``poll``, without revoking.

        A no-op (returns ``False``) while a rebalance is pending or in progress
        (Kafka ``requestRejoinIfNecessary``). An empty reason becomes Kafka's
        "rebalance enforced by user". Under EAGER the rejoin revokes all, as always.
        """
        self._ensure_open()
        if not self._subscription:
            raise IllegalStateError(
                "Tried to force a rebalance but consumer does not have a group."
            )
        if self._rejoin_needed or self._sm.state in REBALANCING:
            return False
        self._request_rejoin(reason or _ENFORCED_REASON)
        return True

    def commit(self, offsets: Mapping[TopicPartition, int], now_ms: int) -> OffsetCommitRequest:
        """Queue an OffsetCommit for the next ``poll`` and return it (send it once, from poll).

        Refused outside a stable generation (Kafka ``sendOffsetCommitRequest``:
        ``RebalanceInProgressException`` during a rebalance, else
        ``CommitFailedException``), and, under KIP-726, by a member that lost its
        partitions to an EAGER selection until it has rejoined.
        """
        self._advance(now_ms)
        if self._fatal is not None:
            raise self._fatal
        refusal = self._commits.refusal(self._sm.state)
        if refusal is not None:
            raise refusal
        request = commit_request(
            self.config, offsets, generation_id=self.generation_id, member_id=self.member_id
        )
        self._commits.sent(request)
        self._outbox.append(request)
        return request

    def close(self, now_ms: int) -> list[MemberRequest]:
        """Kafka ``close``: ``onLeavePrepare``, LeaveGroup for a dynamic member, done."""
        self._advance(now_ms)
        if self._sm.state is MemberState.CLOSED:
            return []
        if self._sm.state is not MemberState.FATAL:
            self._on_leave_prepare()
            self._leave_group("the consumer is being closed")
        self._transition(Trigger.CLOSE)
        self.close_error = self._invoker.take_error()
        return self._drain()

    # -- the driver's calls ------------------------------------------------------------

    def poll(self, now_ms: int) -> list[MemberRequest]:
        """Everything due at ``now_ms``; raises the first listener exception or a fatal error.

        After a listener exception the requests stay queued for the next ``poll``.
        """
        self._advance(now_ms)
        if self._sm.state is MemberState.CLOSED:
            return self._drain()
        if self._fatal is not None:
            raise self._fatal
        self._check_poll_timer()
        self._check_metadata()
        self._check_subscription()
        self._maybe_join()
        self._maybe_heartbeat()
        self._raise_callback_error()
        return self._drain()

    def next_deadline(self) -> int | None:
        """When ``poll`` has something to do next (``None``: only a response can wake it)."""
        state = self._sm.state
        if self._outbox:
            return self._now
        if state in (MemberState.CLOSED, MemberState.FATAL):
            return None
        if self._invoker.error_pending or self._metadata_changed_from is not None:
            return self._now
        deadline: int | None = None
        if self._can_join():
            deadline = self._join_retry_at if self._join_retry_at > self._now else self._now
        if state in HEARTBEATING:
            expiry = self._session.next_deadline()
            deadline = expiry if deadline is None else min(deadline, expiry)
        return deadline

    def is_idle(self, now_ms: int) -> bool:
        """``True`` only when ``poll(now_ms)`` would do nothing: send no request, raise
        nothing, report no event and change nothing but the member's clock (a driver may
        then skip it). ``False`` when it may do something.

        Idle when no event waits in ``take_events`` and no request in the outbox, no fatal
        error or listener exception waits to be raised, no metadata change waits to be
        compared, the subscription is the one last joined with, the member is not a stable
        group leader (Kafka's leader compares its assignment snapshot with the metadata on
        every ``poll``), and ``next_deadline`` (a needed JoinGroup, the next Heartbeat, the
        poll timer's expiry) is after ``now_ms``. It only reads the member.
        """
        if self._events or self._fatal is not None:
            return False
        if self._sm.state is MemberState.STABLE and not self._rejoin_needed:
            if self.is_leader and self._assignment_snapshot is not None:
                return False
            joined = self._joined_subscription
            if joined is not None and joined != self._subscription:
                return False
        deadline = self.next_deadline()
        return deadline is None or deadline > now_ms

    def on_response(self, request: object, response: object, now_ms: int) -> None:
        """A response to a request this member sent (stale ones are ignored)."""
        self._advance(now_ms)
        if self._sm.state is MemberState.CLOSED:
            return
        if isinstance(request, JoinGroupRequest) and isinstance(response, JoinGroupResponse):
            self._on_join_response(request, response)
        elif isinstance(request, SyncGroupRequest) and isinstance(response, SyncGroupResponse):
            self._on_sync_response(request, response)
        elif isinstance(request, HeartbeatRequest) and isinstance(response, HeartbeatResponse):
            self._on_heartbeat_response(request, response)
        elif isinstance(request, OffsetCommitRequest) and isinstance(
            response, OffsetCommitResponse
        ):
            self._on_commit_response(request, response)
        elif not (
            isinstance(request, LeaveGroupRequest) and isinstance(response, LeaveGroupResponse)
        ):
            raise TypeError(
                f"{type(response).__name__} is not a response to {type(request).__name__}"
            )

    def on_request_failed(self, request: object, now_ms: int) -> None:
        """A request timed out or its connection broke (Kafka: coordinator marked unknown)."""
        self._advance(now_ms)
        if request is self._join or request is self._sync:
            self._rebalance_failed("the coordinator did not answer", backoff=True)
        elif not self._commits.failed(request):
            self._session.failed(request, self._now)

    # -- KIP-429 step 1: before the JoinGroup ------------------------------------------

    def _can_join(self) -> bool:
        return (
            self._rejoin_needed
            and bool(self._subscription)
            and self._sm.state in (MemberState.UNJOINED, MemberState.STABLE)
            and self._join is None
            and self._sync is None
            and not self._session.poll_timeout_expired
            and (self._app_polled_since_rejoin_needed or not self.join_on_application_poll)
        )

    def _maybe_join(self) -> None:
        if not self._can_join() or self._now < self._join_retry_at:
            return
        if self._needs_join_prepare:
            plan = prepare_join(
                self._owned,
                generation_reset=self.generation_id == NO_GENERATION or not self.member_id,
                protocol=self._selector.current,
                subscription=self._subscription,
            )
            self._owned = plan.kept
            if plan.callback is not None:
                self._callback(plan.callback, plan.partitions)
            self.is_leader = False
            self._assignment_snapshot = None
            self._needs_join_prepare = False
        self.metrics.rebalance_started(self._now)
        request = join_request(
            self.config,
            self._assignors,
            member_id=self.member_id,
            topics=self._subscription,
            owned=self._owned,
            generation_id=self.generation_id,
            reason=self._rejoin_reason,
        )
        self._joined_subscription = self._subscription
        self._join = request
        self._transition(Trigger.JOIN_SENT)
        self._outbox.append(request)

    # -- JoinGroup response and KIP-429 step 2 -----------------------------------------

    def _on_join_response(self, request: JoinGroupRequest, response: JoinGroupResponse) -> None:
        if request is not self._join:
            return
        self._join = None
        if response.error_code is ErrorCode.NONE:
            self._on_join_succeeded(response)
        else:
            self._on_rebalance_error("JoinGroup", response.error_code, response.member_id)

    def _on_join_succeeded(self, response: JoinGroupResponse) -> None:
        self.member_id = response.member_id or self.member_id
        self.generation_id = response.generation_id
        self.protocol_name = response.protocol_name
        self.leader_id = response.leader
        self._transition(Trigger.JOIN_SUCCEEDED)
        self._session.start(self._now)
        name = response.protocol_name or ""
        assignor = self._by_name.get(name)
        if assignor is None:  # Kafka: "Coordinator selected invalid assignment protocol"
            self.metrics.rebalance_failed(self._now)
            self._fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"JoinGroup (selected {name!r})")
            return
        before = self._selector.current
        after = self._selector.on_assignor_selected(name)
        if before is RebalanceProtocol.COOPERATIVE and after is RebalanceProtocol.EAGER:
            # KIP-726: we kept our partitions, but an EAGER assignor may hand them out now.
            self._commits.disabled = True
            owned, self._owned = self._owned, frozenset()
            if owned:
                self._callback("lost", owned)
        assignments: dict[str, bytes] = {}
        if response.leader == self.member_id:
            self.is_leader = True
            if response.skip_assignment:
                # KIP-814: a returning static leader keeps the group's assignment, but still
                # watches the group's topics: Kafka's ``ConsumerCoordinator.onLeaderElected``
                # sets ``assignmentSnapshot = metadataSnapshot`` here, so a partition count
                # that changes later makes it rejoin (without it, added partitions are never
                # assigned).
                watched = group_subscribed_topics(response.members) | set(self._subscription)
                self._assignment_snapshot = partition_counts(self._metadata, frozenset(watched))
            else:
                try:
                    computed = run_leader_assignment(
                        assignor, after, response.members, self._metadata
                    )
                except Exception as error:  # raised from poll, as Kafka does
                    self._invoker.remember(error)
                    self._rebalance_failed(type(error).__name__, backoff=True)
                    return
                self._assignment_snapshot = computed.topic_partition_counts
                assignments = computed.encoded
        self._sync = sync_request(
            self.config,
            generation_id=self.generation_id,
            member_id=self.member_id,
            protocol_name=name,
            assignments=assignments,
        )
        self._outbox.append(self._sync)

    # -- SyncGroup response and KIP-429 step 3 -----------------------------------------

    def _on_sync_response(self, request: SyncGroupRequest, response: SyncGroupResponse) -> None:
        if request is not self._sync:
            return
        self._sync = None
        error = response.error_code
        if error is ErrorCode.NONE and response.protocol_name not in (None, self.protocol_name):
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if error is not ErrorCode.NONE:
            self._on_rebalance_error("SyncGroup", error)
            return
        self._transition(Trigger.SYNC_SUCCEEDED)
        self._rejoin_needed = False
        self._rejoin_reason = ""
        self._commits.disabled = False
        self.metrics.rebalance_succeeded(self._now)
        self._on_join_complete(response.assignment)
        self._needs_join_prepare = True
        if self._rejoin_needed:
            # Kafka runs onJoinComplete on the application thread and its
            # joinGroupIfNeeded loop rejoins in that same poll (KIP-429 step 3.b's
            # follow-up rebalance): no further application poll is awaited.
            self._app_polled_since_rejoin_needed = True

    def _on_join_complete(self, data: bytes) -> None:
        """Kafka ``onJoinComplete``: KIP-429 steps 3.a to 3.d."""
        try:
            assignment = decode_assignment(data)
        except ConsumerProtocolError as error:
            self._invoker.remember(error)
            self._request_rejoin("received an assignment that cannot be read")
            return
        assigned = frozenset(assignment.partitions)
        if not self._subscription.issuperset([tp[0] for tp in assigned]):
            self._request_rejoin("received assignment does not match the current subscription")
            return
        plan = complete_join(self._owned, assigned, self._selector.current)
        if plan.revoked:
            self._owned = self._owned - plan.revoked
            self._callback("revoked", plan.revoked)
            self._request_rejoin("need to revoke partitions and re-join")
        assignor = self._by_name.get(self.protocol_name or "")
        if assignor is not None:
            metadata = ConsumerGroupMetadata(
                self.group_id, self.generation_id, self.member_id, self.config.group_instance_id
            )
            try:
                assignor.on_assignment(
                    Assignment(tuple(sorted_partitions(assigned)), assignment.user_data),
                    metadata,
                )
            except Exception as callback_error:  # KIP-429: remembered, raised from poll
                self._invoker.remember(callback_error)
        self._owned = plan.assigned
        self._callback("assigned", plan.added)

    # -- errors --------------------------------------------------------------------------

    def _on_rebalance_error(self, api: str, error: ErrorCode, member_id: str = "") -> None:
        """A JoinGroup or SyncGroup error: every one is a failed rebalance (Kafka)."""
        action = error_action(api, error)
        if action is ErrorAction.ADOPT_MEMBER_ID:
            self.member_id = member_id  # KIP-429 step 1.e
            self._rebalance_failed(error.name, backoff=False)
        elif action is ErrorAction.REJOIN_AT_ONCE:
            if api == "SyncGroup":
                self._request_rejoin("group is already rebalancing")
            self._rebalance_failed(error.name, backoff=False)
        elif action is ErrorAction.REJOIN_AFTER_BACKOFF:
            self._rebalance_failed(error.name, backoff=True)
        else:
            self.metrics.rebalance_failed(self._now)
            self._apply_session_error(api, error, action)

    def _apply_session_error(self, api: str, error: ErrorCode, action: ErrorAction) -> None:
        if action is ErrorAction.REQUEST_REJOIN:
            if api == "OffsetCommit":
                self._request_rejoin("offset commit failed since group is already rebalancing")
            elif self._sm.state is MemberState.STABLE:
                self._request_rejoin("group is already rebalancing")  # KIP-429 step 1.c
        elif action is ErrorAction.RESET_GENERATION:
            self._reset_generation(f"encountered {error.name} from {api} response", False)
        elif action is ErrorAction.RESET_MEMBER:
            self._reset_generation(f"encountered {error.name} from {api} response", True)
        elif action is ErrorAction.RETRY_AFTER_BACKOFF:
            self._session.back_off(self._now)
        elif action is ErrorAction.FATAL:
            self._fail(error, api)

    # -- heartbeats, commits, leaving --------------------------------------------------

    def _maybe_heartbeat(self) -> None:
        if self._sm.state not in HEARTBEATING or not self._session.heartbeat_due(self._now):
            return
        request = heartbeat_request(
            self.config, generation_id=self.generation_id, member_id=self.member_id
        )
        self._session.sent(request, self._now)
        self._outbox.append(request)

    def _on_heartbeat_response(
        self, request: HeartbeatRequest, response: HeartbeatResponse
    ) -> None:
        self._session.answered(request)
        current = (
            request.generation_id == self.generation_id and request.member_id == self.member_id
        )
        if response.error_code is not ErrorCode.NONE and current:
            action = error_action("Heartbeat", response.error_code)
            self._apply_session_error("Heartbeat", response.error_code, action)

    def _on_commit_response(
        self, request: OffsetCommitRequest, response: OffsetCommitResponse
    ) -> None:
        error = self._commits.answered(request, response)
        if error is not None and request.generation_id_or_member_epoch == self.generation_id:
            self._apply_session_error("OffsetCommit", error, error_action("OffsetCommit", error))

    def _check_poll_timer(self) -> None:
        """Kafka's heartbeat thread: ``pollTimeoutExpired`` -> ``maybeLeaveGroup``."""
        if self._sm.state not in HEARTBEATING or not self._session.poll_timer_expired(self._now):
            return
        self._session.poll_timeout_expired = True
        owned, self._owned = self._owned, frozenset()
        self._leave_group("consumer poll timeout has expired.")
        if owned:
            self._callback("lost", owned)

    def _on_leave_prepare(self) -> None:
        owned = self._owned
        callback = leave_callback(
            owned,
            generation_reset=self.generation_id == NO_GENERATION,
            rebalancing=self._sm.state in REBALANCING,
        )
        self._owned = frozenset()
        if callback is not None:
            self._callback(callback, owned)

    def _leave_group(self, reason: str) -> None:
        """Kafka ``maybeLeaveGroup``: only a dynamic member sends LeaveGroup."""
        if (
            self.config.group_instance_id is None
            and self.member_id
            and self._sm.state is not MemberState.UNJOINED
        ):
            self._outbox.append(leave_request(self.config, member_id=self.member_id, reason=reason))
        self._clear_generation(reset_member_id=True)
        if self._sm.can(Trigger.LEFT):
            self._transition(Trigger.LEFT)
        if self._subscription:
            self._need_rejoin(reason)
        else:
            self._rejoin_needed = False
            self._rejoin_reason = reason
        self._needs_join_prepare = True

    # -- metadata and subscription checks (Kafka ``rejoinNeededOrPending``) -------------

    def _check_metadata(self) -> None:
        previous = self._metadata_changed_from
        if previous is not None:
            self._metadata_changed_from = None
            vanished = vanished_partitions(self._owned, previous, self._metadata)
            if vanished:  # KIP-429 step 1.b
                self._owned = self._owned - vanished
                self._callback("lost", vanished)
        # Kafka: the leader compares its assignment snapshot with the metadata on every poll
        # once the rebalance completed (a change during the rebalance is caught here too).
        snapshot = self._assignment_snapshot
        if (
            self.is_leader
            and snapshot is not None
            and self._sm.state is MemberState.STABLE
            and not self._rejoin_needed
        ):
            current = partition_counts(self._metadata, frozenset(snapshot))
            if current != snapshot:
                self._request_rejoin(
                    f"cached metadata has changed from {snapshot} at the beginning of the "
                    f"rebalance to {current}"
                )

    def _check_subscription(self) -> None:
        if (
            self._sm.state is MemberState.STABLE
            and self._joined_subscription is not None
            and self._joined_subscription != self._subscription
            and not self._rejoin_needed
        ):
            self._request_rejoin("subscription changed")

    # -- bookkeeping -------------------------------------------------------------------

    def _need_rejoin(self, reason: str) -> None:
        """Kafka ``rejoinNeeded = true``: from now on the JoinGroup waits for an app poll."""
        self._rejoin_needed = True
        self._rejoin_reason = reason
        self._app_polled_since_rejoin_needed = False

    def _request_rejoin(self, reason: str) -> None:
        self._need_rejoin(reason)
        self._emit(
            RebalanceRequested(
                ts_ms=self._now,
                group_id=self.group_id,
                member_id=self.event_member_id,
                reason=reason,
            )
        )

    def _rebalance_failed(self, cause: str, *, backoff: bool) -> None:
        """Kafka ``recordRebalanceFailure``: count it, drop to UNJOINED, join again."""
        self.metrics.rebalance_failed(self._now)
        self._join = self._sync = None
        self._session.stop()
        if self._sm.can(Trigger.REBALANCE_FAILED):
            self._transition(Trigger.REBALANCE_FAILED)
        # Kafka: the failed join future is retried by ``joinGroupIfNeeded``, app thread.
        self._need_rejoin(f"rebalance failed due to {cause}")
        self._join_retry_at = self._now + (self.config.retry_backoff_ms if backoff else 0)

    def _clear_generation(self, *, reset_member_id: bool) -> None:
        self.generation_id = NO_GENERATION
        self.protocol_name = None
        if reset_member_id:
            self._former_member_id = self.member_id or self._former_member_id
            self.member_id = ""
        self._join = self._sync = None
        self._session.stop()
        self.is_leader = False
        self._assignment_snapshot = None

    def _reset_generation(self, reason: str, reset_member_id: bool) -> None:
        """Kafka ``resetStateAndRejoin``: KIP-429 step 1.d (the loss runs before the join)."""
        self._clear_generation(reset_member_id=reset_member_id)
        self._transition(Trigger.GENERATION_RESET)
        self._needs_join_prepare = True
        self._join_retry_at = self._now
        self._request_rejoin(reason)

    def _fail(self, code: ErrorCode, context: str) -> None:
        """A fatal error: the partitions are lost (another member may own them now)."""
        self._fatal = MemberFatalError(code, f"in {context}")
        owned, self._owned = self._owned, frozenset()
        self._join = self._sync = None
        self._session.stop()
        self._outbox.clear()  # a fatal member sends nothing more
        self._commits.clear()
        self._transition(Trigger.FATAL_ERROR)
        if owned:
            self._callback("lost", owned)

    def _callback(self, name: str, partitions: frozenset[TopicPartition]) -> None:
        """Run one listener callback, charge its time, remember its error, log the event."""
        generation = self.generation_id
        ordered = sorted_partitions(partitions)
        outcome = self._invoker.invoke(name, ordered, self._now)
        self._now += outcome.elapsed_ms
        self._emit(
            _EVENT_KINDS[name](
                ts_ms=self._now,
                group_id=self.group_id,
                member_id=self.event_member_id,
                partitions=tuple(ordered),
                generation_or_epoch=generation,
            )
        )

    def _raise_callback_error(self) -> None:
        error = self._invoker.take_error()
        if error is not None:
            raise error

    def _transition(self, trigger: Trigger) -> None:
        old, new = self._sm.process(trigger)
        if old is not new:
            self._events.append(
                MemberStateChanged(
                    ts_ms=self._now,
                    group_id=self.config.group_id,
                    member_id=self.member_id or self._former_member_id,
                    group_protocol=GROUP_PROTOCOL,
                    old_state=old.value,  # str(state): its Kafka name
                    new_state=new.value,
                )
            )

    def _emit(self, event: Event) -> None:
        self._events.append(event)

    def _advance(self, now_ms: int) -> None:
        if now_ms > self._now:
            self._now = now_ms

    def _drain(self) -> list[MemberRequest]:
        out, self._outbox = self._outbox, []
        return out

    def _ensure_open(self) -> None:
        if self._sm.state is MemberState.CLOSED:
            raise IllegalStateError("This consumer has already been closed.")
