"""The KIP-848 member's leave: what it depends on, and what the member remembers meanwhile.

KIP-848, "ConsumerGroupHeartbeat API": a member leaves by heartbeating with
member epoch -1, a static member (KIP-345) with -2, which tells the
coordinator to keep its assignment for the session timeout. Kafka:
``AbstractMembershipManager.leaveGroup``, ``transitionToSendingLeaveGroup``
and ``isPollTimerExpired``.

The member (``ConsumerMember``) holds one ``Leave`` and moves its own state
(``state``) through PREPARE_LEAVING -> LEAVING -> UNSUBSCRIBED (or
STALE); this part answers what each step depends on.

Rule 1: a member with an epoch that auto-commits commits its consumed
        positions first, and releases its partitions only once that commit is
        answered (``commit_pending``); a fencing or a fatal error ends the wait.
Rule 2: the partitions are released with ``onPartitionsRevoked`` when the
        member has an epoch, else with ``onPartitionsLost`` (they may be
        another member's already).
Rule 3: the leave heartbeat carries epoch -1, or -2 for a static member.
Rule 4: a leave because the poll timer expired (``max.poll.interval.ms``) runs
        no callback before the leave heartbeat and ends STALE, with
        ``onPartitionsLost``, instead of UNSUBSCRIBED; the member rejoins at the
        application's next poll (``due_to_poll_timer`` until then).
"""

from __future__ import annotations

from dataclasses import dataclass

from regroup.model import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH

__all__ = ["Leave"]


@dataclass(slots=True)
class Leave:
    """How the member's leave goes (see the module rules)."""

    #: The member has a ``group.instance.id`` (KIP-345).
    static: bool
    #: Rule 1: the leave waits for the commit of the consumed positions.
    commit_pending: bool = False
    #: Rule 4: the leave (or the STALE state after it) was caused by the poll timer.
    due_to_poll_timer: bool = False

    @property
    def epoch(self) -> int:
        """Rule 3: the member epoch of the leave heartbeat."""
        return LEAVE_GROUP_STATIC_MEMBER_EPOCH if self.static else LEAVE_GROUP_MEMBER_EPOCH

    @staticmethod
    def release_callback(member_epoch: int) -> str:
        """Rule 2: the listener callback that releases the owned partitions."""
        return "revoked" if member_epoch > 0 else "lost"
