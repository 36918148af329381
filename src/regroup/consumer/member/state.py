"""The KIP-848 member's client-side states, written as data.

Theory of operation
-------------------

A consumer using ``group.protocol=consumer`` is driven by its heartbeats: the
coordinator answers each one with the member epoch and, when the member must
change, the partitions it may own now (KIP-848, "Consumer", "Rebalance
Process"). The member reconciles towards that assignment, acknowledges it in
its next heartbeat, and leaves by heartbeating with epoch -1 (or -2 for a
static member). Apache Kafka's ``AsyncKafkaConsumer`` names the stages of that
life ``MemberState`` (clients ``consumer/internals/MemberState.java``); this
module keeps Kafka's names and its table of allowed predecessors, and nothing
else: *what* a member does in a state lives in ``member.py``; *whether* it may
move from one state to another lives here.

Rules
-----

Rule 1: a state change is legal only if the old state is listed among the
        new state's allowed predecessors (``ALLOWED_PREDECESSORS``, Kafka's
        ``MemberState.previousValidStates``).
Rule 2: an illegal change raises ``IllegalMemberStateTransition`` and changes
        nothing (Kafka throws ``IllegalStateException``).
Rule 3: staying in a state is not a transition, except RECONCILING ->
        RECONCILING, which Kafka lists explicitly (a newer target arrived while
        reconciling).
Rule 4: FATAL is terminal: nothing follows it.
Rule 5: heartbeats are sent in every state but UNSUBSCRIBED, FENCED, STALE and
        FATAL; JOINING, ACKNOWLEDGING and LEAVING send one without waiting for
        the heartbeat interval (Kafka: ``shouldSkipHeartbeat`` and
        ``shouldHeartbeatNow``).

States
------

UNSUBSCRIBED
    action: nothing; no heartbeats. The start state, and the state after a leave.
    transition: -> JOINING on subscribe; -> PREPARE_LEAVING (Kafka allows a
    leave to start here); -> FATAL.
JOINING
    action: heartbeat with epoch 0 and every field, at once.
    transition: -> STABLE when the response's assignment equals the current
    one; -> RECONCILING when it differs; -> FENCED; -> PREPARE_LEAVING; -> FATAL.
RECONCILING
    action: revoke (commit, onPartitionsRevoked), then assign (onAssignment,
    onPartitionsAssigned), towards the target.
    transition: -> ACKNOWLEDGING when done; -> STABLE when the target turns out
    to equal the current assignment; -> RECONCILING (newer target); -> FENCED;
    -> PREPARE_LEAVING; -> FATAL.
ACKNOWLEDGING
    action: send the heartbeat carrying the new owned partitions, at once.
    transition: -> STABLE once sent; -> RECONCILING when a newer target arrived
    meanwhile; -> FENCED; -> PREPARE_LEAVING; -> FATAL.
STABLE
    action: heartbeat every ``heartbeat_interval_ms``.
    transition: -> RECONCILING on a new target; -> FENCED; -> PREPARE_LEAVING;
    -> FATAL.
FENCED
    action: onPartitionsLost(all), epoch := 0, drop the assignment.
    transition: -> JOINING (same member id); -> UNSUBSCRIBED when no longer
    subscribed.
PREPARE_LEAVING
    action: onPartitionsRevoked if the epoch is > 0, else onPartitionsLost.
    transition: -> LEAVING; -> FENCED; -> FATAL.
LEAVING
    action: heartbeat with epoch -1 (or -2 for a static member), at once.
    transition: -> UNSUBSCRIBED once sent; -> STALE when the leave was caused by
    an expired poll timer; -> FENCED; -> FATAL.
STALE
    action: onPartitionsLost; no heartbeats until the application polls again.
    transition: -> JOINING on the next application poll.
FATAL
    action: onPartitionsLost; the error is raised from the application's poll.
    transition: none.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

__all__ = [
    "ALLOWED_PREDECESSORS",
    "IllegalMemberStateTransition",
    "MemberState",
    "check_transition",
    "is_transition_allowed",
]


class MemberState(enum.Enum):
    """Kafka's ``MemberState`` (clients, ``consumer/internals``)."""

    UNSUBSCRIBED = "UNSUBSCRIBED"
    JOINING = "JOINING"
    RECONCILING = "RECONCILING"
    ACKNOWLEDGING = "ACKNOWLEDGING"
    STABLE = "STABLE"
    FENCED = "FENCED"
    PREPARE_LEAVING = "PREPARE_LEAVING"
    LEAVING = "LEAVING"
    STALE = "STALE"
    FATAL = "FATAL"

    @property
    def sends_heartbeats(self) -> bool:
        """Rule 5: Kafka's ``shouldSkipHeartbeat`` is the negation of this."""
        return self not in _SILENT

    @property
    def heartbeats_now(self) -> bool:
        """Rule 5: Kafka's ``shouldHeartbeatNow``: send without waiting for the interval."""
        return self in _URGENT

    @property
    def can_handle_new_assignment(self) -> bool:
        """Kafka's ``MemberState.canHandleNewAssignment``: not while leaving or out of the group."""
        return self in _ACTIVE

    @property
    def is_active(self) -> bool:
        """A member in the group that is not leaving (the states a fencing can hit first)."""
        return self in _ACTIVE

    @property
    def in_group(self) -> bool:
        """Kafka's ``!isNotInGroup()``: the member holds (or is joining with) a member epoch."""
        return self not in _NOT_IN_GROUP


S = MemberState

#: Rule 5: the states that send no heartbeat (Kafka's ``shouldSkipHeartbeat``).
_SILENT = frozenset({S.UNSUBSCRIBED, S.FENCED, S.STALE, S.FATAL})
#: Rule 5: the states that heartbeat without waiting (Kafka's ``shouldHeartbeatNow``).
_URGENT = frozenset({S.JOINING, S.ACKNOWLEDGING, S.LEAVING})
#: In the group and not leaving (Kafka's ``canHandleNewAssignment``).
_ACTIVE = frozenset({S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE})
#: Kafka's ``isNotInGroup``.
_NOT_IN_GROUP = frozenset({S.UNSUBSCRIBED, S.FENCED, S.STALE, S.FATAL})

#: Rule 1. For each state, the states a member may come from (Kafka 4.0's
#: ``MemberState.previousValidStates``). FATAL appears in no list (Rule 4).
ALLOWED_PREDECESSORS: Mapping[MemberState, frozenset[MemberState]] = {
    S.UNSUBSCRIBED: frozenset({S.PREPARE_LEAVING, S.LEAVING, S.FENCED}),
    S.JOINING: frozenset({S.FENCED, S.UNSUBSCRIBED, S.STALE}),
    S.RECONCILING: frozenset({S.STABLE, S.JOINING, S.ACKNOWLEDGING, S.RECONCILING}),
    S.ACKNOWLEDGING: frozenset({S.RECONCILING}),
    S.STABLE: frozenset({S.JOINING, S.ACKNOWLEDGING, S.RECONCILING}),
    S.FENCED: frozenset(
        {S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.PREPARE_LEAVING, S.LEAVING}
    ),
    S.PREPARE_LEAVING: frozenset(
        {S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.UNSUBSCRIBED}
    ),
    S.LEAVING: frozenset({S.PREPARE_LEAVING}),
    S.STALE: frozenset({S.LEAVING}),
    S.FATAL: frozenset(
        {
            S.JOINING,
            S.STABLE,
            S.RECONCILING,
            S.ACKNOWLEDGING,
            S.PREPARE_LEAVING,
            S.LEAVING,
            S.UNSUBSCRIBED,
        }
    ),
}


class IllegalMemberStateTransition(RuntimeError):
    """Rule 2: a state change the table forbids (Kafka's ``IllegalStateException``)."""

    def __init__(self, old: MemberState, new: MemberState) -> None:
        super().__init__(
            f"illegal member state transition {old.value} -> {new.value}; "
            f"{new.value} may follow only "
            f"{', '.join(sorted(s.value for s in ALLOWED_PREDECESSORS[new])) or 'nothing'}"
        )
        self.old = old
        self.new = new


def is_transition_allowed(old: MemberState, new: MemberState) -> bool:
    """Rules 1, 3 and 4 as a predicate."""
    return old in ALLOWED_PREDECESSORS[new]


def check_transition(old: MemberState, new: MemberState) -> None:
    """Raise ``IllegalMemberStateTransition`` unless ``old -> new`` is allowed (Rule 2)."""
    if not is_transition_allowed(old, new):
        raise IllegalMemberStateTransition(old, new)
