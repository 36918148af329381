"""The timers of KIP-848 groups: their keys, what fires them, and cancelling a member's.

Kafka (``GroupMetadataManager``) arms, per member, a session timer
(``scheduleConsumerGroupSessionTimeout``) and, while it revokes partitions, a
rebalance timer (``scheduleConsumerGroupRebalanceTimeout``); a member that uses
the classic protocol also has a join and a sync timer
(``scheduleConsumerGroupJoinTimeout`` / ``scheduleConsumerGroupSyncTimeout``).
Timers are keyed in the coordinator's ``Timer``: arming a key again replaces its
deadline, so a heartbeat simply re-arms its member's session.

==========================================  ====================================================
timer key, armed by                         fires
==========================================  ====================================================
``consumer-session-<group>-<member>``       no heartbeat for the session timeout (a classic
``fencing``                                 member's own): the member is fenced
``consumer-rebalance-<group>-<member>``     the member did not revoke within its rebalance
``fencing``                                 timeout: fenced if still revoking at that epoch
``consumer-classic-join-<group>-<member>``  a classic member told to rejoin did not, within its
``fencing``                                 rebalance timeout: fenced
``consumer-classic-sync-<group>-<member>``  a classic member that joined sent no SyncGroup
``fencing``                                 within its rebalance timeout: fenced
``consumer-client-assign-<group>``          the member chosen to run the client-side assignor
``client_assignors``                        did not install in time: another one is chosen
``consumer-expire-<group>``                 the group stayed EMPTY for
``txn``                                     ``offsets.retention.minutes``: deleted (Dead)
``consumer-regex-<group>``                  (semantics ``kafka``) the asynchronous resolution of
``regex_refresh``                           the group's regexes lands: records, maybe a bump
==========================================  ====================================================
"""

from __future__ import annotations

from regroup.coordinator.state import GroupCoordinatorState

__all__ = [
    "cancel_classic_timers",
    "cancel_member_timers",
    "classic_join_key",
    "classic_sync_key",
    "client_assign_key",
    "expire_key",
    "rebalance_key",
    "session_key",
]


def session_key(group_id: str, member_id: str) -> str:
    return f"consumer-session-{group_id}-{member_id}"


def rebalance_key(group_id: str, member_id: str) -> str:
    return f"consumer-rebalance-{group_id}-{member_id}"


def classic_join_key(group_id: str, member_id: str) -> str:
    return f"consumer-classic-join-{group_id}-{member_id}"


def classic_sync_key(group_id: str, member_id: str) -> str:
    return f"consumer-classic-sync-{group_id}-{member_id}"


def client_assign_key(group_id: str) -> str:
    return f"consumer-client-assign-{group_id}"


def expire_key(group_id: str) -> str:
    return f"consumer-expire-{group_id}"


def cancel_classic_timers(state: GroupCoordinatorState, group_id: str, member_id: str) -> None:
    state.timer.cancel(classic_join_key(group_id, member_id))
    state.timer.cancel(classic_sync_key(group_id, member_id))


def cancel_member_timers(state: GroupCoordinatorState, group_id: str, member_id: str) -> None:
    """Every timer of one member (Kafka ``cancelTimers``)."""
    state.timer.cancel(session_key(group_id, member_id))
    state.timer.cancel(rebalance_key(group_id, member_id))
    cancel_classic_timers(state, group_id, member_id)
