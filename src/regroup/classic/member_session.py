"""The classic member between and around rebalances: errors, heartbeats, commits, leaving.

``ClassicMember`` (``member``) runs the rebalance itself (KIP-429's three
steps); this base class holds what Kafka's ``AbstractCoordinator`` and
``ConsumerCoordinator`` do around it:

* what a JoinGroup, SyncGroup, Heartbeat or OffsetCommit error does
  (``_on_rebalance_error`` / ``_apply_session_error``, by the table
  ``member_errors.ERROR_ACTIONS``);
* the heartbeat thread: one Heartbeat in flight, every
  ``heartbeat.interval.ms`` while STABLE or COMPLETING_REBALANCE (Kafka
  ``HeartbeatThread``), and the poll timer (``pollTimeoutExpired`` ->
  ``maybeLeaveGroup``, KIP-62);
* leaving: ``onLeavePrepare``'s callback (KIP-429: revoked when the
  generation is valid, lost otherwise) and ``maybeLeaveGroup`` (only a dynamic
  member sends LeaveGroup, KIP-345);
* Kafka's ``rejoinNeededOrPending`` checks: the leader's assignment snapshot
  against the metadata, the joined subscription against the current one, and
  partitions whose topic vanished (KIP-429 step 1.b).
"""

from __future__ import annotations

from regroup.classic.member_base import MemberBase
from regroup.classic.member_errors import ErrorAction, error_action
from regroup.classic.member_leader import partition_counts
from regroup.classic.member_requests import heartbeat_request, leave_request
from regroup.classic.member_state import HEARTBEATING, REBALANCING, MemberState, Trigger
from regroup.classic.member_steps import leave_callback, vanished_partitions
from regroup.model import NO_GENERATION, ErrorCode
from regroup.model.requests.classic import HeartbeatRequest, HeartbeatResponse
from regroup.model.requests.offsets import OffsetCommitRequest, OffsetCommitResponse

__all__ = ["MemberSession"]


class MemberSession(MemberBase):
    """Errors, heartbeats, commit responses, the poll timer, leaving, metadata checks."""

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
            self._next_heartbeat_ms = self._now + self.config.retry_backoff_ms
        elif action is ErrorAction.FATAL:
            self._fail(error, api)

    # -- heartbeats, commits, leaving --------------------------------------------------

    def _maybe_heartbeat(self) -> None:
        if self._sm.state not in HEARTBEATING or self._heartbeat is not None:
            return
        if self._next_heartbeat_ms is None or self._now < self._next_heartbeat_ms:
            return
        self._heartbeat = heartbeat_request(
            self.config, generation_id=self.generation_id, member_id=self.member_id
        )
        self._next_heartbeat_ms = self._now + self.config.heartbeat_interval_ms
        self._outbox.append(self._heartbeat)

    def _on_heartbeat_response(
        self, request: HeartbeatRequest, response: HeartbeatResponse
    ) -> None:
        if request is self._heartbeat:
            self._heartbeat = None
        current = (
            request.generation_id == self.generation_id and request.member_id == self.member_id
        )
        if response.error_code is not ErrorCode.NONE and current:
            action = error_action("Heartbeat", response.error_code)
            self._apply_session_error("Heartbeat", response.error_code, action)

    def _on_commit_response(
        self, request: OffsetCommitRequest, response: OffsetCommitResponse
    ) -> None:
        if request in self._commits:
            self._commits.remove(request)
        errors = [p.error_code for t in response.topics for p in t.partitions if p.error_code]
        self.last_commit_error = errors[0] if errors else None
        if errors and request.generation_id_or_member_epoch == self.generation_id:
            self._apply_session_error(
                "OffsetCommit", errors[0], error_action("OffsetCommit", errors[0])
            )

    def _check_poll_timer(self) -> None:
        """Kafka's heartbeat thread: ``pollTimeoutExpired`` -> ``maybeLeaveGroup``."""
        if self._sm.state not in HEARTBEATING:
            return
        if self._now < self._last_application_poll_ms + self.config.max_poll_interval_ms:
            return
        self._poll_timeout_expired = True
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
