"""The KIP-848 group timers of the coordinator: session, rebalance, classic join/sync, expiry.

Kafka (``GroupMetadataManager``) arms, per member, a session timer
(``scheduleConsumerGroupSessionTimeout``: the member is fenced when no
heartbeat arrives within ``group.consumer.session.timeout.ms``, or a classic
member's own session timeout) and, while it revokes partitions, a rebalance
timer (``scheduleConsumerGroupRebalanceTimeout``: fenced if still
UNREVOKED_PARTITIONS at the same epoch after its rebalance timeout); a classic
member inside a consumer group also has a join and a sync timer
(``scheduleConsumerGroupJoinTimeout`` / ``scheduleConsumerGroupSyncTimeout``).
An EMPTY group expires after ``offsets.retention.minutes``.

Timers are keyed in the coordinator's ``Timer``; re-arming a key replaces the
deadline, so a heartbeat simply re-schedules its member's session. This base
class of ``ConsumerGroupManager`` holds the keys and the callbacks; what a
timeout does (``remove_member``, ``delete_group``) is the manager's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from regroup.coordinator.result import CoordinatorResult

if TYPE_CHECKING:
    from regroup.consumer.client_assignors import ClientAssignmentInFlight
    from regroup.consumer.group import ConsumerGroup
    from regroup.consumer.group_member import ConsumerGroupMember
    from regroup.coordinator.consumer_txn import ConsumerTxn
    from regroup.coordinator.state import GroupCoordinatorState

__all__ = ["ConsumerGroupTimers"]


class ConsumerGroupTimers:
    """Timer keys and callbacks of the KIP-848 groups (see the module docstring)."""

    if TYPE_CHECKING:  # provided by ConsumerGroupManager
        state: GroupCoordinatorState
        in_flight: dict[str, ClientAssignmentInFlight]
        _target_names: dict[str, Any]
        _spec_cache: dict[str, Any]

        def session_timeout_ms(self, group_id: str) -> int: ...
        def consumer_group(self, group_id: str) -> ConsumerGroup | None: ...
        def begin(self, group_id: str, now_ms: int) -> ConsumerTxn: ...
        def remove_member(
            self, txn: ConsumerTxn, member: ConsumerGroupMember, reason: str
        ) -> None: ...
        def delete_group(self, txn: ConsumerTxn) -> None: ...

    @staticmethod
    def session_key(group_id: str, member_id: str) -> str:
        return f"consumer-session-{group_id}-{member_id}"

    @staticmethod
    def rebalance_key(group_id: str, member_id: str) -> str:
        return f"consumer-rebalance-{group_id}-{member_id}"

    @staticmethod
    def client_assign_key(group_id: str) -> str:
        return f"consumer-client-assign-{group_id}"

    @staticmethod
    def expire_key(group_id: str) -> str:
        return f"consumer-expire-{group_id}"

    @staticmethod
    def classic_join_key(group_id: str, member_id: str) -> str:
        return f"consumer-classic-join-{group_id}-{member_id}"

    @staticmethod
    def classic_sync_key(group_id: str, member_id: str) -> str:
        return f"consumer-classic-sync-{group_id}-{member_id}"

    def schedule_session(
        self, group_id: str, member_id: str, now_ms: int, timeout_ms: int | None = None
    ) -> None:
        """(Re)arm the session timer; ``timeout_ms``: a classic member's own timeout."""
        timeout = self.session_timeout_ms(group_id) if timeout_ms is None else timeout_ms
        self.state.timer.schedule(
            self.session_key(group_id, member_id),
            now_ms + timeout,
            lambda now: self._on_session_timeout(group_id, member_id, now),
        )

    def schedule_classic_timeout(
        self, key: str, group_id: str, member_id: str, timeout_ms: int, now_ms: int, reason: str
    ) -> None:
        """Kafka ``scheduleConsumerGroupJoinTimeout`` / ``scheduleConsumerGroupSyncTimeout``."""
        self.state.timer.schedule(
            key,
            now_ms + max(timeout_ms, 0),
            lambda now: self._on_classic_timeout(group_id, member_id, reason, now),
        )

    def cancel_classic_timers(self, group_id: str, member_id: str) -> None:
        self.state.timer.cancel(self.classic_join_key(group_id, member_id))
        self.state.timer.cancel(self.classic_sync_key(group_id, member_id))

    def _on_classic_timeout(
        self, group_id: str, member_id: str, reason: str, now_ms: int
    ) -> CoordinatorResult:
        group = self.consumer_group(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is None or not member.use_classic_protocol:
            return CoordinatorResult()
        txn = self.begin(group_id, now_ms)
        self.remove_member(txn, member, reason)
        return txn.finish()

    def schedule_rebalance(self, group_id: str, member: ConsumerGroupMember, now_ms: int) -> None:
        epoch = member.member_epoch
        member_id = member.member_id
        self.state.timer.schedule(
            self.rebalance_key(group_id, member_id),
            now_ms + max(member.rebalance_timeout_ms, 0),
            lambda now: self._on_rebalance_timeout(group_id, member_id, epoch, now),
        )

    def cancel_member_timers(self, group_id: str, member_id: str) -> None:
        self.state.timer.cancel(self.session_key(group_id, member_id))
        self.state.timer.cancel(self.rebalance_key(group_id, member_id))
        self.cancel_classic_timers(group_id, member_id)

    def _on_session_timeout(self, group_id: str, member_id: str, now_ms: int) -> CoordinatorResult:
        group = self.consumer_group(group_id)
        if group is None or member_id not in group.members:
            return CoordinatorResult()
        txn = self.begin(group_id, now_ms)
        self.remove_member(txn, group.members[member_id], "session_timeout")
        return txn.finish()

    def _on_rebalance_timeout(
        self, group_id: str, member_id: str, epoch: int, now_ms: int
    ) -> CoordinatorResult:
        from regroup.consumer.group_member import MemberState

        group = self.consumer_group(group_id)
        member = None if group is None else group.members.get(member_id)
        if (
            member is None
            or member.member_epoch != epoch
            or member.state is not MemberState.UNREVOKED_PARTITIONS
        ):
            return CoordinatorResult()
        txn = self.begin(group_id, now_ms)
        self.remove_member(txn, member, "rebalance_timeout")
        return txn.finish()

    def _on_expire(self, group_id: str, now_ms: int) -> CoordinatorResult:
        group = self.consumer_group(group_id)
        if group is None or not group.is_empty():
            return CoordinatorResult()
        txn = self.begin(group_id, now_ms)
        self.delete_group(txn)
        return txn.finish()

    def after_change(self, group_id: str, state_name: str | None, now_ms: int) -> None:
        """Arm or disarm the expiration of an EMPTY group (called at each operation's end)."""
        key = self.expire_key(group_id)
        if state_name == "Empty":
            if not self.state.timer.is_scheduled(key):
                retention = int(self.state.config.offsets_retention_minutes) * 60_000
                self.state.timer.schedule(
                    key, now_ms + retention, lambda now: self._on_expire(group_id, now)
                )
        else:
            self.state.timer.cancel(key)
        if state_name in (None, "Dead"):
            self._target_names.pop(group_id, None)
            self._spec_cache.pop(group_id, None)
            self.in_flight.pop(group_id, None)
            self.state.timer.cancel(self.client_assign_key(group_id))
