"""The KIP-848 member leaving the group: fenced, fatal, leave, poll timer expired.

Kafka: ``ConsumerMembershipManager`` (``transitionToFenced``,
``transitionToFatal``, ``leaveGroup``, ``maybeRejoinStaleMember``). The
choices that differ from Kafka are listed in ``regroup.consumer.member``.
"""

from __future__ import annotations

from regroup.consumer.member_config import MemberFatalError
from regroup.consumer.member_core import MemberCore
from regroup.consumer.member_state import MemberState
from regroup.events.schema import PartitionsLost, PartitionsRevoked
from regroup.model import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, ErrorCode

__all__ = ["MemberLeaving"]


class MemberLeaving(MemberCore):
    """How a member leaves the group, by choice or not."""

    def _transition_to_fenced(self) -> None:
        """KIP-848: abandon all partitions (onPartitionsLost), rejoin with epoch 0, same id."""
        state = self._state
        if state is MemberState.PREPARE_LEAVING:
            # Kafka: fenced while preparing to leave; finish the leave without a heartbeat.
            self._leave_commit_pending = False
            self._lose_all()
            self._transition(MemberState.LEAVING)
            self.member_epoch = self._leave_epoch
            self._transition(MemberState.UNSUBSCRIBED)
            return
        if state is MemberState.LEAVING:
            if self._poll_timer_expired:
                self._transition(MemberState.STALE)
                self._lose_all()
            else:
                self._transition(MemberState.UNSUBSCRIBED)
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
        self._leave_commit_pending = False
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
                self._leave_commit_pending = True
                self._queue_commit(offsets, "leave")
                return
        self._finish_prepare_leaving()

    def _finish_prepare_leaving(self) -> None:
        self._leave_commit_pending = False
        if self._state is not MemberState.PREPARE_LEAVING:
            return
        owned = tuple(sorted(self._assigned.owned))
        if owned and self.member_epoch > 0:
            self._errors.call(self._listener.on_partitions_revoked, owned)
            self._emit_partitions(PartitionsRevoked, owned)
        elif owned:
            self._errors.call(self._listener.on_partitions_lost, owned)
            self._emit_partitions(PartitionsLost, owned)
        self._assigned.clear()
        self._transition_to_leaving()

    def _transition_to_leaving(self) -> None:
        self._transition(MemberState.LEAVING)
        self.member_epoch = self._leave_epoch
        self._heartbeat_now = True

    @property
    def _leave_epoch(self) -> int:
        if self.config.group_instance_id is not None:
            return LEAVE_GROUP_STATIC_MEMBER_EPOCH
        return LEAVE_GROUP_MEMBER_EPOCH

    def _check_poll_timer(self) -> None:
        """``max.poll.interval.ms`` expired: leave without callbacks, then STALE (Kafka)."""
        if self._last_app_poll_ms is None or not self._state.is_active:
            return
        if self._now - self._last_app_poll_ms <= self.config.max_poll_interval_ms:
            return
        self._abort_work("poll timer expired")
        self._poll_timer_expired = True
        self._transition(MemberState.PREPARE_LEAVING)
        self._transition_to_leaving()
