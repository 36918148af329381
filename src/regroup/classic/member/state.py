"""The classic member's states and the transitions between them, as data.

Rule 1: every state a classic member can be in, and every way it can move
between them, is written in the table below; ``member.py`` asks this module
to move and never assigns a state itself.

Rule 2: this module knows nothing of requests, partitions or listeners. It is
told *what happened* (a ``Trigger``) and answers with the new state, or
refuses.

Rule 3: an illegal step raises ``IllegalMemberTransition`` and changes nothing.

Theory of operation
-------------------

Kafka's ``AbstractCoordinator.MemberState`` has four states: UNJOINED,
PREPARING_REBALANCE (a JoinGroup is in flight), COMPLETING_REBALANCE (the
JoinGroup answered, a SyncGroup is in flight) and STABLE (the SyncGroup
answered; the member heartbeats and owns its assignment). A rebalance is one
trip UNJOINED/STABLE -> PREPARING_REBALANCE -> COMPLETING_REBALANCE -> STABLE;
any failure on the way (Kafka: ``recordRebalanceFailure``) drops the member
back to UNJOINED, from where the next ``poll`` joins again. Two terminal
states are ours: FATAL (Kafka throws a non-retriable exception such as
``FencedInstanceIdException`` from every later ``poll``) and CLOSED
(``close()``).

Transitions are *event-triggered* only (h11's word): each is caused by one
``Trigger``. A trigger that leaves the state unchanged (a reset while already
UNJOINED) is a legal self-loop listed in the table.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

__all__ = [
    "HEARTBEATING",
    "REBALANCING",
    "TRANSITIONS",
    "IllegalMemberTransition",
    "MemberState",
    "MemberStateMachine",
    "Trigger",
]


class MemberState(enum.Enum):
    """Kafka's ``MemberState`` plus our two terminal states; values print as Kafka's names."""

    #: Not in any generation. action: none. transition: JOIN_SENT when a rejoin is needed.
    UNJOINED = "UNJOINED"
    #: A JoinGroup is in flight. action: wait for it. transition: JOIN_SUCCEEDED, or
    #: REBALANCE_FAILED / GENERATION_RESET back to UNJOINED.
    PREPARING_REBALANCE = "PREPARING_REBALANCE"
    #: The JoinGroup answered (the leader ran its assignor); a SyncGroup is in flight.
    #: action: heartbeat, wait for the assignment. transition: SYNC_SUCCEEDED, or back to UNJOINED.
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"
    #: The assignment is installed. action: heartbeat, commit, process.
    #: transition: JOIN_SENT when a rejoin is needed, GENERATION_RESET on fencing, LEFT.
    STABLE = "STABLE"
    #: A non-retriable error (FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL ...).
    #: action: raise it from every poll. transition: CLOSED.
    FATAL = "FATAL"
    #: ``close()`` ran. action: none. transition: none.
    CLOSED = "CLOSED"

    def __str__(self) -> str:
        return self.value


class Trigger(enum.Enum):
    """What happened to the member (the events of the state machine)."""

    JOIN_SENT = "join_sent"
    JOIN_SUCCEEDED = "join_succeeded"
    SYNC_SUCCEEDED = "sync_succeeded"
    #: A JoinGroup or SyncGroup failed (Kafka: ``recordRebalanceFailure``); the member keeps its
    #: generation and partitions and joins again.
    REBALANCE_FAILED = "rebalance_failed"
    #: UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION (KIP-429 step 1.d): the generation is reset.
    GENERATION_RESET = "generation_reset"
    #: The member left the group (LeaveGroup, max.poll.interval.ms expiry, unsubscribe).
    LEFT = "left"
    FATAL_ERROR = "fatal_error"
    CLOSE = "close"


_U = MemberState.UNJOINED
_P = MemberState.PREPARING_REBALANCE
_C = MemberState.COMPLETING_REBALANCE
_S = MemberState.STABLE
_F = MemberState.FATAL
_X = MemberState.CLOSED

#: TRANSITIONS[state][trigger] -> new state. Anything absent is illegal.
TRANSITIONS: Mapping[MemberState, Mapping[Trigger, MemberState]] = {
    _U: {
        Trigger.JOIN_SENT: _P,
        Trigger.REBALANCE_FAILED: _U,
        Trigger.GENERATION_RESET: _U,
        Trigger.LEFT: _U,
        Trigger.FATAL_ERROR: _F,
        Trigger.CLOSE: _X,
    },
    _P: {
        Trigger.JOIN_SUCCEEDED: _C,
        Trigger.REBALANCE_FAILED: _U,
        Trigger.GENERATION_RESET: _U,
        Trigger.LEFT: _U,
        Trigger.FATAL_ERROR: _F,
        Trigger.CLOSE: _X,
    },
    _C: {
        Trigger.SYNC_SUCCEEDED: _S,
        Trigger.REBALANCE_FAILED: _U,
        Trigger.GENERATION_RESET: _U,
        Trigger.LEFT: _U,
        Trigger.FATAL_ERROR: _F,
        Trigger.CLOSE: _X,
    },
    _S: {
        Trigger.JOIN_SENT: _P,
        Trigger.GENERATION_RESET: _U,
        Trigger.LEFT: _U,
        Trigger.FATAL_ERROR: _F,
        Trigger.CLOSE: _X,
    },
    _F: {Trigger.FATAL_ERROR: _F, Trigger.CLOSE: _X},
    _X: {},
}

#: States in which a rebalance is in progress (Kafka: ``rebalanceInProgress()``).
REBALANCING: Final[frozenset[MemberState]] = frozenset({_P, _C})
#: States in which the member heartbeats (Kafka enables the heartbeat thread on
#: entering COMPLETING_REBALANCE and disables it on UNJOINED / PREPARING_REBALANCE).
HEARTBEATING: Final[frozenset[MemberState]] = frozenset({_C, _S})


class IllegalMemberTransition(RuntimeError):
    """A trigger the current state does not accept; the state is unchanged."""

    def __init__(self, state: MemberState, trigger: Trigger) -> None:
        super().__init__(f"can't handle {trigger.value} when the member is {state}")
        self.state = state
        self.trigger = trigger


class MemberStateMachine:
    """The current state and the only way to change it (``process``)."""

    __slots__ = ("state",)

    def __init__(self, state: MemberState = MemberState.UNJOINED) -> None:
        self.state = state

    def can(self, trigger: Trigger) -> bool:
        return trigger in TRANSITIONS[self.state]

    def process(self, trigger: Trigger) -> tuple[MemberState, MemberState]:
        """Apply ``trigger``; returns ``(old, new)``. Raises and changes nothing if illegal."""
        old = self.state
        new = TRANSITIONS[old].get(trigger)
        if new is None:
            raise IllegalMemberTransition(old, trigger)
        self.state = new
        return old, new
