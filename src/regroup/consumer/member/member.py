"""The KIP-848 member (client side), sans-IO: ``group.protocol=consumer``.

The member is Apache Kafka's ``AsyncKafkaConsumer`` membership logic
(``ConsumerMembershipManager`` + ``ConsumerHeartbeatRequestManager``) without
threads or sockets. A driver (the simulator, a test) owns the clock and the
network::

    requests = member.poll(now_ms)           # send these (heartbeats, commits, ...)
    member.on_response(request, response, now_ms)
    member.on_request_failed(request, now_ms)   # no response: lost, timed out
    deadline = member.next_deadline()        # call poll again by then
    events = member.take_events()

Rules
-----

Rule 1: the member's state changes only in ``_transition``, checked against
        ``state.ALLOWED_PREDECESSORS`` first (an illegal change raises
        and changes nothing); every change is a ``MemberStateChanged`` event.
Rule 2: what an error in a heartbeat response does is the table
        ``heartbeat.HEARTBEAT_ERROR_ACTIONS``; the heartbeat part
        reschedules, the member carries out the rest (fence, surface, FATAL).
Rule 3: every listener callback goes through ``_callback``: KIP-429's error
        rule (every callback runs, the first exception is raised from the next
        ``poll``) and then its event.
Rule 4: ``next_deadline`` names only instants at which ``poll`` acts (sends,
        changes state, raises, or moves the deadline on).
Rule 5: ``ConsumerMember`` is a façade over parts, each owning one concern and
        its state. A part is told what it needs (the state, the time, the owned
        partitions) and answers; it never calls back into the member:

        * ``HeartbeatRequestManager`` (``heartbeat``): the request
          builder (send only what changed), the schedule (interval, backoff),
          the heartbeat in flight, the heartbeat-now flag, the poll timer;
        * ``AssignmentTracker`` (``reconciler``): the owned partitions,
          the current and target assignments with their local epochs, the
          partitions being revoked and the reconciliation waiting for its commit;
        * ``CommitTracker`` (``offsets``): the consumed positions, the
          queued and in-flight OffsetCommits, their results, the auto-commit clock;
        * ``ListenerInvoker`` (``reconciler``): the listener and
          KIP-429's first exception;
        * ``Leave`` (``leaving``): the leave epoch, the commit a leave
          waits for, whether the poll timer caused it;
        * ``ClientAssignmentProcess`` (``client_assignor``): KIP-848's
          client-side assignment, Prepare -> assign -> Install.

        The member itself holds the state, the member id and epoch, the
        subscription, the metadata, the fatal error, its clock and its events.

Theory of operation
-------------------

``poll`` (Kafka's background thread) first raises what the application must
see (KIP-429's first callback exception; the fatal error once), then starts a
join, checks the poll timer, reconciles (KIP-848, "ConsumerGroupHeartbeat
API", "Response Handling": commit, revoke, assign, acknowledge), and returns
the requests due now: commits, a client-side assignment request, a heartbeat.
With auto-commit on, the reconciliation and the auto-commit run in
``on_application_poll`` instead (Kafka's ``maybeReconcile(canCommit)``; see
``_next_plan``): inside the application's ``poll()``, after it finished the
previous batch, so the commit before a revocation covers that batch.
A heartbeat response moves the member epoch and hands the target to the
``AssignmentTracker`` (Kafka ``onHeartbeatSuccess``); a fencing error drops
every partition (``onPartitionsLost``) and rejoins with epoch 0; a leave runs
PREPARE_LEAVING -> LEAVING -> UNSUBSCRIBED (``leaving``).

Kafka's choices this follows (KIP-848 is silent on them), from Kafka 4.0's
clients ``consumer/internals``:

* the acknowledging heartbeat and the leave heartbeat are sent at once and the
  state moves (ACKNOWLEDGING -> STABLE/RECONCILING, LEAVING -> UNSUBSCRIBED/STALE)
  when the request is *built*, not when it is answered
  (``onHeartbeatRequestGenerated``); responses to leave heartbeats are ignored;
* a response is ignored while LEAVING or out of the group; an assignment is
  ignored while leaving (``canHandleNewAssignment``);
* the target is kept with a *local epoch* that grows when its partitions
  change; if it equals the current assignment the member goes STABLE without
  acknowledging (``targetAssignmentReconciled``);
* callbacks: ``onPartitionsRevoked`` / ``onPartitionsLost`` only with partitions,
  ``onPartitionsAssigned`` after every reconciliation, even with none;
* fencing during PREPARE_LEAVING ends the leave without a leave heartbeat;
* an expired poll timer (``max.poll.interval.ms``) sends a leave heartbeat
  without callbacks, then STALE: ``onPartitionsLost``; the next application
  poll rejoins with epoch 0.

Where this member differs from Kafka (stated, on purpose):

* the KIP-429 error rule is applied to every callback (the brief of this
  project; Kafka's async consumer instead leaves the member RECONCILING and
  unacknowledged when a callback throws, and relies on the rebalance timeout);
* one heartbeat "now" per entry into JOINING / ACKNOWLEDGING / LEAVING; later
  heartbeats in the same state wait for the interval (Kafka re-sends at once
  while the state lasts, which in a zero-latency simulation never ends);
* the commit before a revocation is one OffsetCommit of the positions the
  driver reports (``positions``); its failure does not stop the revocation,
  and it is not retried (Kafka retries until the rebalance timeout);
* with ``enable_auto_commit`` the same commit happens before a leave
  (Kafka: ``close`` commits before it leaves).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Final

from regroup.assignors.consumer.client_side import MemberAssignmentUpdate, PartitionAssignor
from regroup.consumer.member.client_assignor import (
    AssignmentOutcome,
    ClientAssignmentProcess,
    client_assignors_of,
    is_compute_assignment,
)
from regroup.consumer.member.config import (
    CommitResult,
    ConsumerMemberConfig,
    TopicAuthorizationError,
)
from regroup.consumer.member.heartbeat import (
    HeartbeatErrorAction,
    HeartbeatFields,
    HeartbeatRequestBuilder,
    HeartbeatRequestManager,
    heartbeat_error_action,
)
from regroup.consumer.member.leaving import Leave
from regroup.consumer.member.offsets import CommitTracker, PositionsProvider
from regroup.consumer.member.reconciler import (
    AssignmentTracker,
    Reconciliation,
    ReconciliationPlan,
)
from regroup.consumer.member.state import MemberState, check_transition
from regroup.events.schema import (
    Event,
    MemberStateChanged,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from regroup.members.errors import IllegalStateError, MemberFatalError
from regroup.members.listener import ListenerInvoker
from regroup.model import ErrorCode, TopicPartition, new_consumer_member_id
from regroup.model.listener import ConsumerRebalanceListener
from regroup.model.metadata import MetadataImage
from regroup.model.requests.consumer import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
)
from regroup.model.requests.offsets import OffsetCommitRequest, OffsetCommitResponse

__all__ = ["ConsumerMember", "MemberRequest", "PositionsProvider"]

MemberRequest = (
    ConsumerGroupHeartbeatRequest
    | OffsetCommitRequest
    | ConsumerGroupPrepareAssignmentRequest
    | ConsumerGroupInstallAssignmentRequest
)


#: The event of each listener callback.
_EVENT_KINDS: Final = {
    "revoked": PartitionsRevoked,
    "assigned": PartitionsAssigned,
    "lost": PartitionsLost,
}


class ConsumerMember:
    """One KIP-848 consumer's group membership (see the module docstring)."""

    def __init__(
        self,
        config: ConsumerMemberConfig,
        *,
        rng: random.Random,
        listener: ConsumerRebalanceListener | None = None,
        client_assignors: Sequence[PartitionAssignor] = (),
        positions: PositionsProvider | None = None,
        metadata: MetadataImage | None = None,
        member_id: str | None = None,
    ) -> None:
        if client_assignors and config.group_remote_assignor is not None:
            raise ValueError("a member uses a server-side or client-side assignors, not both")
        self.config = config
        self._assignors = tuple(client_assignors)

        # The parts (Rule 5).
        self._heartbeats = HeartbeatRequestManager(
            backoff_ms=config.retry_backoff_ms,
            backoff_max_ms=config.retry_backoff_max_ms,
            max_poll_interval_ms=config.max_poll_interval_ms,
        )
        self._assigned = AssignmentTracker()
        self._commits = CommitTracker(
            config.auto_commit_interval_ms,
            positions=positions,
            enable_auto_commit=config.enable_auto_commit,
        )
        self._listener = ListenerInvoker(listener)
        self._leave = Leave(static=config.group_instance_id is not None)
        self._process = ClientAssignmentProcess(self._assignors)

        # The state machine and the member's identity in the group.
        self._state = MemberState.UNSUBSCRIBED
        #: KIP-848 / KIP-1082: generated by the client once, kept for its lifetime.
        self.member_id: str = member_id or new_consumer_member_id(rng)
        self.member_epoch = 0
        self._fatal: MemberFatalError | None = None
        self._fatal_raised = False

        # What the member wants, and the metadata that names the topic ids it gets.
        self._topics: tuple[str, ...] | None = None
        self._regex: str | None = None
        self._metadata = metadata or MetadataImage()

        # The clock, and the events the member hands out.
        self._now = 0
        self._events: list[Event] = []

    # -- what the application sees -------------------------------------------------------

    @property
    def state(self) -> MemberState:
        return self._state

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions the member owns now."""
        return self._assigned.owned

    @property
    def pending_revocation(self) -> frozenset[TopicPartition]:
        """Partitions being revoked (fetching stopped; waiting for the commit)."""
        return self._assigned.pending_revocation

    @property
    def subscription(self) -> tuple[str, ...] | None:
        return self._topics

    @property
    def fatal_error(self) -> MemberFatalError | None:
        return self._fatal

    def take_events(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    def take_commit_results(self) -> list[CommitResult]:
        return self._commits.take_results()

    def take_assignment_outcomes(self) -> list[AssignmentOutcome]:
        """How client-side assignment runs this member made ended."""
        return self._process.take_outcomes()

    # -- application calls -------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        """Subscribe to topic names; an empty set unsubscribes (as Kafka's ``subscribe``)."""
        self._check_not_fatal()
        wanted = tuple(sorted(set(topics)))
        if not wanted:
            self.unsubscribe(self._now)
            return
        self._topics, self._regex = wanted, None
        self._heartbeats.start_poll_timer(self._now)
        self._maybe_join()

    def subscribe_pattern(self, regex: str) -> None:
        """Subscribe by a regular expression the coordinator resolves (heartbeat v1)."""
        self._check_not_fatal()
        if not regex:
            raise ValueError("the subscription pattern must not be empty")
        self._topics, self._regex = None, regex
        self._heartbeats.start_poll_timer(self._now)
        self._maybe_join()

    def unsubscribe(self, now_ms: int) -> None:
        """Leave the group and forget the subscription."""
        self._now = max(self._now, now_ms)
        self._topics, self._regex = None, None
        self._leave_group()

    def close(self, now_ms: int) -> None:
        """Leave the group (Kafka's ``close``): PREPARE_LEAVING -> LEAVING -> UNSUBSCRIBED."""
        self.unsubscribe(now_ms)

    def enforce_rebalance(self, reason: str | None = None) -> None:
        """KIP-848, "Deprecate Enforcing Rebalances": not allowed under this protocol."""
        raise IllegalStateError(
            "enforceRebalance is not supported with group.protocol=consumer; "
            "change the assignor metadata or its reason instead"
        )

    def commit(self, offsets: Mapping[TopicPartition, int], now_ms: int) -> None:
        """Commit offsets with the member's id and epoch; sent by the next ``poll``."""
        self._check_not_fatal()
        self._now = max(self._now, now_ms)
        if offsets:
            self._queue_commit(dict(offsets), "application")

    def on_application_poll(self, now_ms: int) -> None:
        """The application polled: reset the poll timer; a STALE member rejoins; then the
        work that runs only inside the application's ``poll()``.

        Kafka 4.x ``ApplicationEventProcessor`` (the application's poll event): first
        ``maybeReconcile(canCommit=true)``, then ``updateTimerAndMaybeCommit`` (the
        auto-commit). With auto-commit on, a reconciliation starts only here, so its commit
        before the revocation carries every record the application finished (the
        application calls ``poll()`` after processing the previous batch); the requests go
        out at the next ``poll(now_ms)``.
        """
        self._now = max(self._now, now_ms)
        self._heartbeats.application_polled(now_ms)
        if self._state is MemberState.STALE:
            self._leave.due_to_poll_timer = False
            if self._subscribed:
                self._transition_to_joining()
        if self._fatal is None:
            self._maybe_reconcile(can_commit=True)
            self._maybe_auto_commit()

    def update_metadata(self, image: MetadataImage) -> None:
        """New topic metadata: resolves topic ids the member was waiting for."""
        self._metadata = image

    # -- driving -------------------------------------------------------------------------------

    def poll(self, now_ms: int) -> list[MemberRequest]:
        """Raise what the application must see, then return the requests due now."""
        self._now = max(self._now, now_ms)
        self._raise_pending()
        self._maybe_join()
        self._check_poll_timer()
        self._maybe_reconcile()
        requests: list[MemberRequest] = list(self._commits.take_queued())
        assignment_request = self._process.next_request(
            self.config.group_id, self.member_id, self.member_epoch
        )
        if assignment_request is not None:
            requests.append(assignment_request)
        heartbeat = self._maybe_heartbeat()
        if heartbeat is not None:
            requests.append(heartbeat)
            # A leave heartbeat ends in UNSUBSCRIBED: a member subscribed again meanwhile
            # rejoins now, not at a second poll at the same instant (``next_deadline`` rule),
            # and an application that stopped polling leaves again at once.
            self._maybe_join()
            self._check_poll_timer()
            # Sending from ACKNOWLEDGING with the target not yet reached moves the member to
            # RECONCILING (Kafka ``onHeartbeatRequestGenerated``). Kafka's network thread polls
            # the membership manager right after the heartbeat manager (``RequestManagers``
            # order), so that reconciliation runs in the same pass, and so it does here.
            if self._reconcile_ready():
                self._maybe_reconcile()
                requests.extend(self._commits.take_queued())
        return requests

    def next_deadline(self) -> int | None:
        """When ``poll`` has something to do next (``None``: nothing until an input).

        Rule 4: every deadline returned is one ``poll`` acts on, so after a ``poll(t)`` that
        returned normally and with no new input, the next deadline is ``None`` or later
        than ``t``.
        """
        if (
            self._listener.error_pending
            or (self._fatal is not None and not self._fatal_raised)
            or self._commits.has_queued
            or self._process.has_request_ready
            or self._reconcile_ready()
            or (self._state is MemberState.UNSUBSCRIBED and self._subscribed)
        ):
            return self._now
        deadlines: list[int] = []
        heartbeat_ms = self._heartbeats.next_deadline(self._state, self._now)
        if heartbeat_ms is not None:
            deadlines.append(heartbeat_ms)
        poll_timer_ms = self._heartbeats.poll_timer_deadline()
        if self._state.is_active and poll_timer_ms is not None:
            deadlines.append(poll_timer_ms)
        # No auto-commit deadline: the auto-commit runs in ``on_application_poll`` only.
        return min(deadlines) if deadlines else None

    def is_idle(self, now_ms: int) -> bool:
        """Whether ``poll(now_ms)`` would do nothing: send no request, raise nothing, report
        no event and change nothing but the member's clock (a driver may then skip it).

        Idle when no event waits in ``take_events`` and ``next_deadline`` is after
        ``now_ms``: every step of ``poll`` (a pending error to raise, a join, the poll
        timer, a reconciliation, a queued commit, a client-side assignment request, a
        heartbeat) acts only when ``next_deadline`` says so (Rule 4). It only reads the
        member.
        """
        if self._events:
            return False
        deadline = self.next_deadline()
        return deadline is None or deadline > now_ms

    def on_response(self, request: object, response: object, now_ms: int) -> None:
        """A response to a request ``poll`` returned."""
        self._now = max(self._now, now_ms)
        if isinstance(request, ConsumerGroupHeartbeatRequest) and isinstance(
            response, ConsumerGroupHeartbeatResponse
        ):
            if self._heartbeats.answered(request):
                self._on_heartbeat_response(request, response)
        elif isinstance(request, OffsetCommitRequest) and isinstance(
            response, OffsetCommitResponse
        ):
            self._on_commit_done(request, response)
        elif isinstance(request, ConsumerGroupPrepareAssignmentRequest) and isinstance(
            response, ConsumerGroupPrepareAssignmentResponse
        ):
            self._process.on_prepare_response(request, response, self._metadata)
        elif isinstance(request, ConsumerGroupInstallAssignmentRequest) and isinstance(
            response, ConsumerGroupInstallAssignmentResponse
        ):
            self._process.on_install_response(request, response)
        else:
            raise TypeError(f"{type(response).__name__} does not answer {type(request).__name__}")

    def on_request_failed(self, request: object, now_ms: int) -> None:
        """No response will come (lost, timed out, disconnected)."""
        self._now = max(self._now, now_ms)
        if isinstance(request, ConsumerGroupHeartbeatRequest):
            self._heartbeats.failed(request, self._now)
        elif isinstance(request, OffsetCommitRequest):
            self._on_commit_done(request, None)
        else:
            self._process.on_request_failed(request)

    def _on_commit_done(
        self, request: OffsetCommitRequest, response: OffsetCommitResponse | None
    ) -> None:
        if response is None:
            result = self._commits.failed(request)
        else:
            result = self._commits.answered(request, response)
        if result is None:
            return
        waiting = self._assigned.waiting
        if result.purpose == "revocation" and waiting is not None:
            self._finish_reconciliation(waiting)
        elif result.purpose == "leave" and self._leave.commit_pending:
            self._finish_prepare_leaving()

    # -- heartbeats ---------------------------------------------------------------------------

    def _maybe_heartbeat(self) -> ConsumerGroupHeartbeatRequest | None:
        state = self._state
        if not self._heartbeats.can_send(state, self._now):
            return None
        request = self._heartbeats.send(
            self._heartbeat_fields(), full=state is MemberState.JOINING, now_ms=self._now
        )
        self._on_heartbeat_generated()
        return request

    def retry_request(self, request: object) -> object:
        """The request this client sends when ``request``'s answer is lost and it retries.

        A ConsumerGroupHeartbeat is retried full: Kafka's client resets the sent fields
        when a request fails (``ConsumerHeartbeatRequestManager.onFailure`` calls
        ``HeartbeatState.reset``), so the next heartbeat carries every field and the
        coordinator answers it with the whole assignment. It is built from a fresh
        builder, so this member's own record of what it sent does not change (a full
        request carries the values that record already holds); it keeps the request's
        member epoch. A leave heartbeat (a negative epoch) and any other request are
        retried unchanged.
        """
        if not isinstance(request, ConsumerGroupHeartbeatRequest) or request.member_epoch < 0:
            return request
        full = HeartbeatRequestBuilder().build(self._heartbeat_fields(), full=True)
        return replace(full, member_epoch=request.member_epoch)

    def _heartbeat_fields(self) -> HeartbeatFields:
        return HeartbeatFields(
            group_id=self.config.group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            instance_id=self.config.group_instance_id,
            rack_id=self.config.client_rack,
            rebalance_timeout_ms=self.config.rebalance_timeout_ms,
            subscribed_topic_names=self._topics if self._regex is None else None,
            subscribed_topic_regex=self._regex,
            server_assignor=self.config.group_remote_assignor,
            client_assignors=client_assignors_of(self._assignors, frozenset(self._topics or ()))
            if self._assignors
            else None,
            owned=self._assigned.current,
            client_id=self.config.client_id,
        )

    def _on_heartbeat_generated(self) -> None:
        """Kafka's ``onHeartbeatRequestGenerated``."""
        if self._state is MemberState.ACKNOWLEDGING:
            self._transition(
                MemberState.STABLE if self._assigned.reconciled else MemberState.RECONCILING
            )
        elif self._state is MemberState.LEAVING:
            self._end_leave()

    def _on_heartbeat_response(
        self, request: ConsumerGroupHeartbeatRequest, response: ConsumerGroupHeartbeatResponse
    ) -> None:
        code = response.error_code
        if request.member_epoch < 0:
            # The answer to a leave heartbeat: the member already moved on.
            self._heartbeats.on_success(self._now, response.heartbeat_interval_ms)
            return
        if code is ErrorCode.NONE or is_compute_assignment(code):
            self._heartbeats.on_success(self._now, response.heartbeat_interval_ms)
            if is_compute_assignment(code) and self._state.is_active:
                self._process.on_compute_assignment()
            if code is ErrorCode.NONE or response.member_epoch >= 0:
                self._on_heartbeat_success(response)
            return
        action = heartbeat_error_action(code)
        self._heartbeats.on_error(action, self._now, response.heartbeat_interval_ms)
        if action is HeartbeatErrorAction.FENCED:
            self._transition_to_fenced()
        elif action is HeartbeatErrorAction.SURFACE:
            self._listener.remember(TopicAuthorizationError(response.error_message or code.name))
        elif action is HeartbeatErrorAction.FATAL:
            self._transition_to_fatal(code, response.error_message)

    def _on_heartbeat_success(self, response: ConsumerGroupHeartbeatResponse) -> None:
        """Kafka's ``onHeartbeatSuccess``."""
        if self._state is MemberState.LEAVING or not self._state.in_group:
            return
        self.member_epoch = response.member_epoch
        if response.assignment is None or not self._state.can_handle_new_assignment:
            return
        self._assigned.receive(response.assignment.topic_partitions)
        if not self._assigned.reconciled:
            if self._state is not MemberState.RECONCILING:
                self._transition(MemberState.RECONCILING)
        elif self._state in (MemberState.JOINING, MemberState.RECONCILING):
            self._transition(MemberState.STABLE)

    # -- reconciliation -----------------------------------------------------------------------

    def _next_plan(self, *, can_commit: bool = False) -> ReconciliationPlan | None:
        """The reconciliation that would start now (``None``: none).

        Kafka's ``AbstractMembershipManager.maybeReconcile(canCommit)``: an acknowledgement
        of the same partitions goes ahead anywhere; a real reconciliation with auto-commit
        on waits for the application's poll (``can_commit``), because its commit must
        carry the positions the application has finished; the background ``poll`` passes
        ``canCommit=false``.
        """
        if self._state is not MemberState.RECONCILING or self._assigned.waiting is not None:
            return None
        plan = self._assigned.plan(self._metadata)
        if (
            plan is not None
            and not plan.acknowledge_only
            and not can_commit
            and self._commits.auto_commits
        ):
            return None
        return plan

    def _reconcile_ready(self) -> bool:
        return self._next_plan() is not None

    def _maybe_reconcile(self, *, can_commit: bool = False) -> None:
        """KIP-848, "Response Handling" steps 1-3 (Kafka's ``maybeReconcile``)."""
        plan = self._next_plan(can_commit=can_commit)
        if plan is None:
            return
        if plan.acknowledge_only:
            # Only unresolved topics differ: acknowledge the resolved part at the new epoch.
            self._assigned.apply(plan)
            self._enter(MemberState.ACKNOWLEDGING)
            return
        reconciliation = Reconciliation(plan, self.member_epoch)
        if plan.revoked:
            self._assigned.pending_revocation = frozenset(plan.revoked)
            offsets = self._consumed_positions()
            if offsets:
                self._assigned.wait_for_commit(reconciliation)
                self._queue_commit(offsets, "revocation")
                return
        self._finish_reconciliation(reconciliation)

    def _finish_reconciliation(self, reconciliation: Reconciliation) -> None:
        """Revoke, onPartitionsRevoked, assign, onAssignment, onPartitionsAssigned, ack."""
        self._assigned.stop_waiting()
        if (
            self._state is not MemberState.RECONCILING
            or self.member_epoch < reconciliation.member_epoch
        ):
            return  # Kafka's maybeAbortReconciliation: left RECONCILING or rejoined meanwhile.
        plan = reconciliation.plan
        if plan.revoked:
            self._callback("revoked", plan.revoked)
        self._assigned.apply(plan)
        if self._assignors:
            update = MemberAssignmentUpdate(self._assigned.owned, self.member_epoch)
            try:
                self._assignors[0].on_assignment(update)
            except Exception as error:
                self._listener.remember(error)
        self._callback("assigned", plan.added)
        self._enter(MemberState.ACKNOWLEDGING)

    # -- leaving ------------------------------------------------------------------------------

    def _transition_to_fenced(self) -> None:
        """KIP-848: abandon all partitions (onPartitionsLost), rejoin with epoch 0, same id."""
        state = self._state
        if state is MemberState.PREPARE_LEAVING:
            # Kafka: fenced while preparing to leave; finish the leave without a heartbeat.
            self._leave.commit_pending = False
            self._lose_all()
            self._transition(MemberState.LEAVING)
            self.member_epoch = self._leave.epoch
            self._transition(MemberState.UNSUBSCRIBED)
            return
        if state is MemberState.LEAVING:
            self._end_leave()
            return
        if not state.in_group:
            return
        self._abort_work("fenced")
        self._transition(MemberState.FENCED)
        self.member_epoch = 0
        self._lose_all()
        if self._subscribed:
            self._transition_to_joining()
        else:
            self._transition(MemberState.UNSUBSCRIBED)

    def _transition_to_fatal(self, code: ErrorCode, message: str | None) -> None:
        if self._state is MemberState.FATAL:
            return
        previous = self._state
        self._transition(MemberState.FATAL)
        self._fatal = MemberFatalError(code, message)
        self._abort_work(code.name)
        self._leave.commit_pending = False
        if previous is not MemberState.UNSUBSCRIBED:
            self._lose_all()

    def _leave_group(self) -> None:
        """Kafka's ``leaveGroup``: PREPARE_LEAVING, release the partitions, then LEAVING."""
        state = self._state
        if state is MemberState.FENCED:
            self._transition(MemberState.UNSUBSCRIBED)
            return
        if not state.is_active:
            return  # already leaving, out of the group, or FATAL
        self._abort_work("leaving")
        self._transition(MemberState.PREPARE_LEAVING)
        if self.member_epoch > 0:
            offsets = self._consumed_positions()
            if offsets:
                self._leave.commit_pending = True
                self._queue_commit(offsets, "leave")
                return
        self._finish_prepare_leaving()

    def _finish_prepare_leaving(self) -> None:
        self._leave.commit_pending = False
        if self._state is not MemberState.PREPARE_LEAVING:
            return
        owned = tuple(sorted(self._assigned.owned))
        if owned:
            self._callback(self._leave.release_callback(self.member_epoch), owned)
        self._assigned.clear()
        self._transition_to_leaving()

    def _transition_to_leaving(self) -> None:
        self._transition(MemberState.LEAVING)
        self.member_epoch = self._leave.epoch
        self._heartbeats.request_now()

    def _end_leave(self) -> None:
        """The leave heartbeat went out, or a fencing ended the leave (Rule 4 of the leave)."""
        if self._leave.due_to_poll_timer:
            self._transition(MemberState.STALE)
            self._lose_all()
        else:
            self._transition(MemberState.UNSUBSCRIBED)

    def _check_poll_timer(self) -> None:
        """``max.poll.interval.ms`` expired: leave without callbacks, then STALE (Kafka)."""
        if not self._state.is_active or not self._heartbeats.poll_timer_expired(self._now):
            return
        self._abort_work("poll timer expired")
        self._leave.due_to_poll_timer = True
        self._transition(MemberState.PREPARE_LEAVING)
        self._transition_to_leaving()

    # -- joining, state changes, callbacks -------------------------------------------------------

    @property
    def _subscribed(self) -> bool:
        return self._topics is not None or self._regex is not None

    def _check_not_fatal(self) -> None:
        if self._fatal is not None:
            raise self._fatal

    def _maybe_join(self) -> None:
        if self._state is MemberState.UNSUBSCRIBED and self._subscribed:
            self._transition_to_joining()

    def _transition_to_joining(self) -> None:
        self._transition(MemberState.JOINING)
        self.member_epoch = 0
        self._assigned.clear()
        self._heartbeats.restart(self._now)

    def _enter(self, state: MemberState) -> None:
        self._transition(state)
        if state.heartbeats_now:
            self._heartbeats.request_now()

    def _transition(self, new: MemberState) -> None:
        """Rule 1/2 of ``state``: check first, then change and report."""
        old = self._state
        if old is new and new is not MemberState.RECONCILING:
            return
        check_transition(old, new)
        self._state = new
        self._events.append(
            MemberStateChanged(
                ts_ms=self._now,
                group_id=self.config.group_id,
                member_id=self.member_id,
                group_protocol="consumer",
                old_state=old.value,
                new_state=new.value,
            )
        )

    def _abort_work(self, reason: str) -> None:
        self._assigned.stop_waiting()
        self._process.abandon(reason)

    def _lose_all(self) -> None:
        owned = tuple(sorted(self._assigned.owned))
        if owned:
            self._callback("lost", owned)
        self._assigned.clear()

    def _callback(self, name: str, partitions: Sequence[TopicPartition]) -> None:
        """Run one listener callback (KIP-429's error rule) and log its event."""
        self._listener.invoke(name, partitions)
        self._events.append(
            _EVENT_KINDS[name](
                ts_ms=self._now,
                group_id=self.config.group_id,
                member_id=self.member_id,
                partitions=tuple(partitions),
                generation_or_epoch=self.member_epoch,
            )
        )

    def _raise_pending(self) -> None:
        if self._fatal is not None and not self._fatal_raised:
            self._fatal_raised = True
            raise self._fatal
        error = self._listener.take_error()
        if error is not None:
            raise error

    # -- commits ------------------------------------------------------------------------------

    def _consumed_positions(self) -> dict[TopicPartition, int]:
        return self._commits.consumed_positions(self._assigned.owned)

    @property
    def _auto_commit_applies(self) -> bool:
        """Auto-commit runs only for an active member with an epoch (Kafka commits with it)."""
        return self._commits.auto_commits and self._state.is_active and self.member_epoch > 0

    def _maybe_auto_commit(self) -> None:
        """``enable.auto.commit``: commit moved positions every ``auto.commit.interval.ms``."""
        if not self._auto_commit_applies:
            return
        offsets = self._commits.auto_commit_due(self._now, self._consumed_positions)
        if offsets:
            self._queue_commit(offsets, "auto")

    def _queue_commit(self, offsets: Mapping[TopicPartition, int], purpose: str) -> None:
        in_group = self.member_epoch > 0 and self._state.in_group
        self._commits.queue(
            offsets,
            purpose,
            group_id=self.config.group_id,
            member_id=self.member_id if in_group else "",
            member_epoch=self.member_epoch if in_group else -1,
            instance_id=self.config.group_instance_id,
        )
