"""The states of a classic group on the broker, and which state may follow which.

Kafka: ``ClassicGroupState`` (group-coordinator module), the successor of the
Scala ``GroupState``. The table below is written as data, like h11's
``_state.py``: each state lists the states it may be entered *from*.

Rules
-----

Rule 1: a group is born ``Empty`` and dies ``Dead``; ``Dead`` may be entered
from anywhere (also from ``Dead``: removing a dead group twice is harmless),
and nothing leaves it.

Rule 2: every rebalance starts by entering ``PreparingRebalance``, from
``Empty`` (the first member arrives), ``Stable`` (a membership or metadata
change) or ``CompletingRebalance`` (a change while the leader is assigning).
These three are the states in which a group "can rebalance".

Rule 3: the join phase ends by entering ``CompletingRebalance`` (members
left: the leader must assign) or ``Empty`` (nobody rejoined).

Rule 4: only the leader's SyncGroup moves a group to ``Stable``, and only from
``CompletingRebalance``.

Rule 5: an illegal transition raises ``IllegalGroupStateTransition`` and
changes nothing.

Theory of operation
-------------------

The state is a summary of where the group is in its two-phase barrier. In the
join phase (``PreparingRebalance``) the coordinator parks every member's
JoinGroup until all known members have rejoined or the rebalance timeout
passes; it then bumps the generation, picks the protocol and the leader and
answers every parked JoinGroup at once. In the sync phase
(``CompletingRebalance``) it parks the followers' SyncGroups until the leader
sends the assignment, then answers all of them and the group is ``Stable``
until the next change. Requests that arrive in the wrong phase are answered
with an error that sends the member back to the right one
(``REBALANCE_IN_PROGRESS``, ``ILLEGAL_GENERATION``, ``UNKNOWN_MEMBER_ID``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

__all__ = [
    "STATE_DOCS",
    "VALID_PREVIOUS_STATES",
    "ClassicGroupState",
    "IllegalGroupStateTransition",
    "check_transition",
]


class ClassicGroupState(enum.Enum):
    """The five states of a classic group; the value is Kafka's name (``ListGroups``, logs).

    Each member's ``__doc__`` (``STATE_DOCS``) says what the coordinator does in that state
    (``action:``) and where it goes from there (``transition:``).
    """

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


#: Per state: what the coordinator does there (action) and where it may go (transition).
STATE_DOCS: Mapping[ClassicGroupState, str] = MappingProxyType(
    {
        ClassicGroupState.EMPTY: """\
The group has no members (it may still have committed offsets).

action: JoinGroup of a new member is admitted (or answered MEMBER_ID_REQUIRED);
    offset commits from outside any group (generation -1) are accepted;
    heartbeats, syncs and commits of members answer UNKNOWN_MEMBER_ID.
transition: to PreparingRebalance when a member is added (the initial
    rebalance delay starts); to Dead when the group is deleted.
""",
        ClassicGroupState.PREPARING_REBALANCE: """\
The join phase: the coordinator waits for every known member to (re)join.

action: JoinGroups are parked until the phase completes; heartbeats answer
    REBALANCE_IN_PROGRESS (and still count as heartbeats); SyncGroup answers
    REBALANCE_IN_PROGRESS; commits of members that already rejoined answer
    REBALANCE_IN_PROGRESS.
transition: to CompletingRebalance when every member has joined or the
    rebalance timeout expires (and some member joined), with a new
    generation; to Empty when nobody is left; to Dead on deletion.
""",
        ClassicGroupState.COMPLETING_REBALANCE: """\
The sync phase: the coordinator waits for the leader's assignment.

action: followers' SyncGroups are parked; the leader's SyncGroup installs
    the assignment and answers every parked one; heartbeats are accepted;
    offset commits answer REBALANCE_IN_PROGRESS.
transition: to Stable on the leader's SyncGroup; to PreparingRebalance when
    membership changes again (parked syncs answer REBALANCE_IN_PROGRESS) or
    a member does not sync within the rebalance timeout; to Dead on deletion.
""",
        ClassicGroupState.STABLE: """\
Every member has (or can fetch) its assignment for the current generation.

action: heartbeats, SyncGroups (return the stored assignment), commits and
    same-metadata JoinGroups of followers are answered at once; a returning
    static member replaces its old id without a rebalance when the selected
    protocol would not change.
transition: to PreparingRebalance on any membership change, a leader's
    JoinGroup or a member's new metadata; to Dead on deletion.
""",
        ClassicGroupState.DEAD: """\
The group has been removed from the coordinator (deleted, or unloaded).

action: every request answers COORDINATOR_NOT_AVAILABLE (the client looks
    for the coordinator again).
transition: none (Dead is final).
""",
    }
)
for _state, _doc in STATE_DOCS.items():
    _state.__doc__ = _doc

_S = ClassicGroupState

#: For each state, the states it may be entered from
#: (Kafka: ``ClassicGroupState.validPreviousStates``).
VALID_PREVIOUS_STATES: Mapping[ClassicGroupState, frozenset[ClassicGroupState]] = MappingProxyType(
    {
        _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
        _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
        _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
        _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
        _S.DEAD: frozenset(_S),
    }
)


class IllegalGroupStateTransition(RuntimeError):
    """A transition that ``VALID_PREVIOUS_STATES`` forbids (Rule 5); a coordinator bug."""

    def __init__(self, group_id: str, old: ClassicGroupState, new: ClassicGroupState) -> None:
        super().__init__(f"group {group_id!r} may not move from {old} to {new}")
        self.group_id = group_id
        self.old = old
        self.new = new


def check_transition(group_id: str, old: ClassicGroupState, new: ClassicGroupState) -> None:
    """Raise ``IllegalGroupStateTransition`` unless ``old -> new`` is in the table."""
    if old not in VALID_PREVIOUS_STATES[new]:
        raise IllegalGroupStateTransition(group_id, old, new)
