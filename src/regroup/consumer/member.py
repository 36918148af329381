"""The KIP-848 member (client side), sans-IO: ``group.protocol=consumer``.

Theory of operation
-------------------

The member is Apache Kafka's ``AsyncKafkaConsumer`` membership logic
(``ConsumerMembershipManager`` + ``ConsumerHeartbeatRequestManager``) without
threads or sockets. A driver (the simulator, a test) owns the clock and the
network::

    requests = member.poll(now_ms)           # send these (heartbeats, commits, ...)
    member.on_response(request, response, now_ms)
    member.on_request_failed(request, now_ms)   # no response: lost, timed out
    deadline = member.next_deadline()        # call poll again by then
    events = member.take_events()

``poll`` first raises what the application must see (KIP-429's first
callback exception; the fatal error once), then starts a join, checks the
poll timer, reconciles, and returns the requests due now; ``next_deadline``
names only instants at which ``poll`` acts. State changes are checked
against ``member_state.ALLOWED_PREDECESSORS``; an illegal one raises and
changes nothing.

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

from collections.abc import Iterable, Mapping

from regroup.consumer.member_config import IllegalStateError
from regroup.consumer.member_core import PositionsProvider
from regroup.consumer.member_heartbeating import MemberHeartbeating
from regroup.consumer.member_state import MemberState
from regroup.model import TopicPartition
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


class ConsumerMember(MemberHeartbeating):
    """One KIP-848 consumer's group membership (see the module docstring).

    The layers it is built from are described in ``regroup.consumer.member_core``.
    """

    # -- application calls -------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        """Subscribe to topic names; an empty set unsubscribes (as Kafka's ``subscribe``)."""
        self._check_not_fatal()
        wanted = tuple(sorted(set(topics)))
        if not wanted:
            self.unsubscribe(self._now)
            return
        self._topics, self._regex = wanted, None
        self._start_poll_timer()
        self._maybe_join()

    def subscribe_pattern(self, regex: str) -> None:
        """Subscribe by a regular expression the coordinator resolves (heartbeat v1)."""
        self._check_not_fatal()
        if not regex:
            raise ValueError("the subscription pattern must not be empty")
        self._topics, self._regex = None, regex
        self._start_poll_timer()
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
        """The application polled: reset the poll timer; a STALE member rejoins."""
        self._now = max(self._now, now_ms)
        self._last_app_poll_ms = now_ms
        if self._state is MemberState.STALE:
            self._poll_timer_expired = False
            if self._subscribed:
                self._transition_to_joining()

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
        self._maybe_auto_commit()
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

        Rule: every deadline returned is one ``poll`` acts on (sends, changes state, raises,
        or moves the deadline on), so after a ``poll(t)`` that returned normally and with no
        new input, the next deadline is ``None`` or later than ``t``.
        """
        if (
            self._errors.pending
            or (self._fatal is not None and not self._fatal_raised)
            or self._commits.has_queued
            or self._process.has_request_ready
            or self._reconcile_ready()
            or (self._state is MemberState.UNSUBSCRIBED and self._subscribed)
        ):
            return self._now
        deadlines: list[int] = []
        if self._state.sends_heartbeats:
            due = self._schedule.next_due_ms()
            if due is not None:
                urgent = self._heartbeat_now and self._state.heartbeats_now
                deadlines.append(self._now if urgent else due)
        if self._state.is_active and self._last_app_poll_ms is not None:
            deadlines.append(self._last_app_poll_ms + self.config.max_poll_interval_ms + 1)
        auto_commit_ms = self._commits.next_auto_commit_ms
        if auto_commit_ms is not None and self._auto_commit_applies:
            # Only while ``_maybe_auto_commit`` would act on it: a deadline ``poll`` ignores
            # (e.g. JOINING at epoch 0, after the poll timer expired) would be returned forever.
            deadlines.append(auto_commit_ms)
        return min(deadlines) if deadlines else None

    def on_response(self, request: object, response: object, now_ms: int) -> None:
        """A response to a request ``poll`` returned."""
        self._now = max(self._now, now_ms)
        if isinstance(request, ConsumerGroupHeartbeatRequest) and isinstance(
            response, ConsumerGroupHeartbeatResponse
        ):
            if request is self._heartbeat_request:
                self._heartbeat_request = None
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
            if request is self._heartbeat_request:
                self._heartbeat_request = None
                # Kafka: onFailure resets the sent fields and backs off.
                self._builder.reset()
                self._schedule.on_failure(self._now)
        elif isinstance(request, OffsetCommitRequest):
            self._on_commit_done(request, None)
        else:
            self._process.on_request_failed(request)

    def _on_commit_done(
        self, request: OffsetCommitRequest, response: OffsetCommitResponse | None
    ) -> None:
        result = self._commits.on_done(request, response)
        if result is None:
            return
        if result.purpose == "revocation" and self._reconciling is not None:
            self._finish_reconciliation(self._reconciling)
        elif result.purpose == "leave" and self._leave_commit_pending:
            self._finish_prepare_leaving()
