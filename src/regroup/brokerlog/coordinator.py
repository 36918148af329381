"""The group coordinator's events as the lines Kafka 4.x's coordinator logs.

``CoordinatorLog.lines(event)`` turns one event of the coordinator
(``regroup.events``) into the lines Kafka's Java group coordinator
(``GroupMetadataManager``, Apache Kafka 4.0, the version regroup models) writes at
the same step, in Kafka's order. The wording is not here: every line is rendered
from the one table of Kafka's log formats, ``regroup.history.formats`` (family
``java-group-coordinator``, version ``KAFKA_VERSION``), which ``regroup history``
parses with; ``layout`` adds log4j's envelope. It reads nothing but the events:
what a line needs beyond one event (a classic group's state when a member joins,
its leader and static members when the leader's assignment arrives) it keeps from
the events before, per group. Sans-IO: the drivers (``regroup.server``,
``regroup.sim``) write the lines.

When Kafka logs what (the statements of ``GroupMetadataManager``):

classic groups
  * ``member_pending`` (KIP-394, JoinGroup v4+): "Dynamic member with unknown member id
    joins group G in S state. Created a new member id M and requesting the member to
    rejoin with this id.";
  * ``member_joined``: a dynamic member that was pending "Pending dynamic member with
    id M joins group G in S state. Adding to the group now.", one that was not
    (JoinGroup v0-v3) "Dynamic member with unknown member id joins group G in state
    S. Created a new member id M and added the member to the group."; a static one
    "Static member with groupInstanceId=I and unknown member id joins group G in S
    state. Created a new member id M ...", or, after the ``member_left``
    (``replaced``) of the same instance id, "... Replacing previously mapped member O
    with this groupInstanceId.";
  * ``rebalance_started``: "Preparing to rebalance group G in state
    PreparingRebalance with old generation N (reason: R)." (logged after the
    transition, so the state is always PreparingRebalance; R is Kafka's text, which
    the coordinator writes into the event);
  * ``member_left``: ``session_timeout`` / ``join_timeout``: "Member M in group G has
    failed, removing it from the group."; ``leave``: the LeaveGroup line with the
    client's reason ("not provided" without one); ``rebalance_timeout`` (dynamic
    members that did not rejoin): collected into the one "Group G removed dynamic
    members who haven't joined: [...]" line of the ``generation_bumped`` that
    follows;
  * ``generation_bumped``: "Stabilized group G generation N with K members." or,
    with no members, "Group G with generation N is now empty.";
  * ``rebalance_completed``: "Assignment received from leader L for group G for
    generation N. The group has K members, S of which are static."

consumer groups (KIP-848)
  * ``member_joined``: "[GroupId G] Member M joins the consumer group using the P
    protocol." (static: "Static member M with instance id I joins ..."; after the
    ``member_left`` (``replaced``) of the same instance: "Static member with instance
    id I re-joins ... to replace the existing member O.");
  * ``group_epoch_bumped``: "[GroupId G] Bumped group epoch to E.";
  * ``target_assignment_computed``: "... Computed a new target assignment for epoch
    E with 'A' assignor in 0ms." (the core reads no clock: the assignor's time is 0);
  * ``member_assignment_changed`` at epoch -2 (a static member leaving for now):
    "... temporarily left the consumer group."; other assignment steps are Kafka's
    DEBUG line (``maybeReconcile`` logs them only when debug is enabled), not in a
    ``server.log`` at Kafka's default level, and not written;
  * ``member_left``: ``leave`` "... left the consumer group." (static: "Static member
    M with instance id I left ..."); a classic member's LeaveGroup: the LeaveGroup
    line; a timer: "... fenced from the group because R." with Kafka's reasons
    ("the member session expired." for a session timeout, "it failed to transition
    from epoch E within Tms" for a rebalance timeout ...).

groups loaded (``CoordinatorLog.loaded``: a driver that rebuilt its coordinator from
its records, as a broker loads a ``__consumer_offsets`` partition): "Loaded classic
group G with K members." / "Loaded consumer group G with K members." (Kafka
``GroupMetadataManager.onLoaded``), which also tells the lines that follow what the
group was.

Not written, for want of an event: pending members leaving or expiring, groups
unloaded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from regroup.brokerlog.partition import DEFAULT_OFFSETS_PARTITIONS, coordinator_partition
from regroup.events import (
    Event,
    GenerationBumped,
    GroupEpochBumped,
    GroupStateChanged,
    MemberAssignmentChanged,
    MemberJoined,
    MemberLeft,
    MemberPending,
    RebalanceCompleted,
    RebalanceStarted,
    TargetAssignmentComputed,
)
from regroup.history.formats import FAMILY_LOGGERS, FORMATS, Family, Kind, render

__all__ = ["KAFKA_VERSION", "CoordinatorLog", "LoadedGroup", "LogLine"]

#: The Kafka release whose wording the lines take (``regroup.history.formats`` rows).
KAFKA_VERSION = "4.0"

_FAMILY = Family.JAVA
_LOGGER = FAMILY_LOGGERS[_FAMILY]

#: Pending member ids kept per group before the oldest are forgotten (a client that never
#: rejoins leaves its id behind; Kafka expires it after a session timeout).
_PENDING_KEPT = 10_000

#: KIP-848's member epoch of a static member that left for now.
_STATIC_LEAVE_EPOCH = -2

#: Kafka's fencing reasons (``GroupMetadataManager``'s timers) by regroup's ``member_left`` reason.
_FENCE_REASONS = {
    "session_timeout": "the member session expired.",
    "join_timeout": "the classic member failed to join within the rebalance timeout.",
    "sync_timeout": "the member failed to sync within timeout.",
}


def _level(kind: Kind) -> str:
    """The level (``%p``) of ``kind``'s rows for ``KAFKA_VERSION`` in the table."""
    for row in FORMATS:
        if row.family == _FAMILY and row.kind == kind and row.holds(KAFKA_VERSION):
            return row.level
    raise KeyError(f"no {_FAMILY} format of {kind} for Kafka {KAFKA_VERSION}")


@dataclass(frozen=True, slots=True)
class LogLine:
    """One log statement: when, ``%p``, ``%c``, the kind (``Kind``) and ``%m``."""

    ts_ms: int
    level: str
    logger: str
    kind: str
    message: str


@dataclass(frozen=True, slots=True)
class LoadedGroup:
    """A group as a driver's coordinator holds it after loading its records."""

    group_id: str
    #: ``classic`` or ``consumer``.
    group_type: str
    #: Kafka's name of its state (``Stable``, ``Empty`` ...).
    state: str
    #: member id -> its ``group.instance.id`` (``None``: a dynamic member).
    members: Mapping[str, str | None]
    #: A classic group's leader (``""``: none).
    leader_id: str = ""


@dataclass(slots=True)
class _Group:
    """What the lines of one group need from its earlier events."""

    group_type: str = ""
    state: str = "Empty"
    leader_id: str = ""
    members: tuple[str, ...] = ()
    #: member id -> group.instance.id (static members only).
    instance_ids: dict[str, str] = field(default_factory=dict)
    #: instance id -> the member id a static replacement just removed.
    replaced: dict[str, str] = field(default_factory=dict)
    #: Dynamic members removed by the end of the join phase, for its one line.
    unjoined: list[str] = field(default_factory=list)
    #: Member ids handed out to new dynamic members that have not joined with them yet.
    pending: dict[str, None] = field(default_factory=dict)


class CoordinatorLog:
    """Events in, Kafka's coordinator log lines out (see the module docstring).

    ``broker_id`` and ``offsets_partitions`` (``offsets.topic.num.partitions``) make
    the prefix of each line: the partition of ``__consumer_offsets`` that coordinates
    the group.
    """

    def __init__(
        self, *, broker_id: int = 0, offsets_partitions: int = DEFAULT_OFFSETS_PARTITIONS
    ) -> None:
        if offsets_partitions < 1:
            raise ValueError(
                f"offsets.topic.num.partitions must be at least 1, got {offsets_partitions}"
            )
        self.broker_id = broker_id
        self.offsets_partitions = offsets_partitions
        #: With several brokers, the broker coordinating a group now (its lines name it);
        #: ``None``: always ``broker_id``.
        self.broker_of: Callable[[str], int] | None = None
        self._groups: dict[str, _Group] = {}
        self._partitions: dict[str, int] = {}
        self._levels: dict[Kind, str] = {}

    def partition(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition that coordinates ``group_id``."""
        found = self._partitions.get(group_id)
        if found is None:
            found = coordinator_partition(group_id, self.offsets_partitions)
            self._partitions[group_id] = found
        return found

    def loaded(self, ts_ms: int, group: LoadedGroup) -> list[LogLine]:
        """The line of a group loaded from records (Kafka ``onLoaded``); what follows
        about the group starts from what was loaded."""
        tracked = self._groups[group.group_id] = _Group(
            group_type=group.group_type,
            state=group.state,
            leader_id=group.leader_id,
            members=tuple(group.members),
            instance_ids={m: i for m, i in group.members.items() if i is not None},
        )
        kind = Kind.GROUP_LOADED if tracked.group_type == "classic" else Kind.CONSUMER_GROUP_LOADED
        out: list[LogLine] = []
        self._emit_at(out, ts_ms, group.group_id, kind, members=len(group.members))
        return out

    def lines_of(self, events: Iterable[Event]) -> Iterator[LogLine]:
        for event in events:
            yield from self.lines(event)

    def lines(self, event: Event) -> list[LogLine]:
        """The lines of one event, in order (none for most kinds)."""
        handler = _HANDLERS.get(type(event))
        if handler is None:
            return []
        out: list[LogLine] = []
        group = self._groups.get(event.group_id)
        if group is None:
            group = self._groups[event.group_id] = _Group()
        handler(self, group, event, out)
        return out

    def _emit(self, out: list[LogLine], event: Event, kind: Kind, **fields: object) -> None:
        self._emit_at(out, event.ts_ms, event.group_id, kind, **fields)

    def _emit_at(
        self, out: list[LogLine], ts_ms: int, group_id: str, kind: Kind, **fields: object
    ) -> None:
        message = render(
            kind,
            _FAMILY,
            version=KAFKA_VERSION,
            broker_id=self.broker_id if self.broker_of is None else self.broker_of(group_id),
            offsets_partition=self.partition(group_id),
            group_id=group_id,
            **fields,
        )
        level = self._levels.get(kind)
        if level is None:
            level = self._levels[kind] = _level(kind)
        out.append(LogLine(ts_ms, level, _LOGGER, str(kind), message))


# -- the events ----------------------------------------------------------------------------


def _state_changed(log: CoordinatorLog, group: _Group, event: Event, out: list[LogLine]) -> None:
    assert isinstance(event, GroupStateChanged)
    group.state = event.new_state
    group.group_type = event.group_protocol
    if event.new_state == "Dead":
        group.instance_ids.clear()


def _member_joined(log: CoordinatorLog, group: _Group, event: Event, out: list[LogLine]) -> None:
    assert isinstance(event, MemberJoined)
    # A KIP-848 member is in a consumer group; a classic member in either type.
    if event.group_protocol == "consumer" or not group.group_type:
        group.group_type = event.group_protocol
    member, instance = event.member_id, event.instance_id
    old = None if instance is None else group.replaced.pop(instance, None)
    if instance is not None:
        group.instance_ids[member] = instance
    if group.group_type == "classic":
        if instance is None and member in group.pending:
            del group.pending[member]
            log._emit(out, event, Kind.PENDING_MEMBER_JOINED, member_id=member, state=group.state)
        elif instance is None:
            log._emit(out, event, Kind.DYNAMIC_MEMBER_JOINED, member_id=member, state=group.state)
        elif old is not None:
            log._emit(
                out,
                event,
                Kind.STATIC_MEMBER_REPLACED,
                instance_id=instance,
                state=group.state,
                old_member_id=old,
            )
        else:
            log._emit(
                out,
                event,
                Kind.STATIC_MEMBER_JOINED,
                instance_id=instance,
                state=group.state,
                member_id=member,
            )
        return
    protocol = event.group_protocol
    if instance is None:
        log._emit(out, event, Kind.CONSUMER_MEMBER_JOINED, member_id=member, protocol=protocol)
    elif old is not None:
        log._emit(
            out,
            event,
            Kind.CONSUMER_STATIC_MEMBER_REPLACED,
            instance_id=instance,
            protocol=protocol,
            member_id=member,
            old_member_id=old,
        )
    else:
        log._emit(
            out,
            event,
            Kind.CONSUMER_STATIC_MEMBER_JOINED,
            member_id=member,
            instance_id=instance,
            protocol=protocol,
        )


def _member_pending(log: CoordinatorLog, group: _Group, event: Event, out: list[LogLine]) -> None:
    assert isinstance(event, MemberPending)
    group.group_type = group.group_type or "classic"
    # A pending id whose client never came back is never seen again: forget the oldest.
    if len(group.pending) >= _PENDING_KEPT:
        del group.pending[next(iter(group.pending))]
    group.pending[event.member_id] = None
    log._emit(out, event, Kind.DYNAMIC_MEMBER_PENDING, member_id=event.member_id, state=group.state)


def _member_left(log: CoordinatorLog, group: _Group, event: Event, out: list[LogLine]) -> None:
    assert isinstance(event, MemberLeft)
    member, instance, reason = event.member_id, event.instance_id, event.reason
    group.instance_ids.pop(member, None)
    if event.group_protocol == "consumer":
        group.group_type = "consumer"
    if reason == "replaced" and instance is not None:
        # Kafka logs the replacement with the joining member: keep the old id for it.
        group.replaced[instance] = member
        return
    if reason == "leave" and event.group_protocol == "classic":
        # A classic member's LeaveGroup, in a classic or a consumer group: one wording.
        client_reason = event.reason_text or "not provided"
        if instance is None:
            log._emit(out, event, Kind.MEMBER_LEFT, member_id=member, reason=client_reason)
        else:
            log._emit(
                out,
                event,
                Kind.MEMBER_LEFT,
                member_id=member,
                instance_id=instance,
                reason=client_reason,
            )
        return
    if group.group_type != "consumer":
        if reason in ("session_timeout", "join_timeout"):
            log._emit(out, event, Kind.MEMBER_FAILED, member_id=member)
        elif reason == "rebalance_timeout" and instance is None:
            group.unjoined.append(member)
        return
    if reason == "leave":
        if instance is None:
            log._emit(out, event, Kind.CONSUMER_MEMBER_LEFT, member_id=member)
        else:
            log._emit(
                out, event, Kind.CONSUMER_STATIC_MEMBER_LEFT, member_id=member, instance_id=instance
            )
        return
    if reason == "rebalance_timeout":
        fence_reason = (
            f"it failed to transition from epoch {event.member_epoch} within "
            f"{event.rebalance_timeout_ms}ms"
        )
    elif reason in _FENCE_REASONS:
        fence_reason = _FENCE_REASONS[reason]
    else:
        return
    log._emit(out, event, Kind.CONSUMER_MEMBER_FENCED, member_id=member, reason=fence_reason)


def _rebalance_started(
    log: CoordinatorLog, group: _Group, event: Event, out: list[LogLine]
) -> None:
    assert isinstance(event, RebalanceStarted)
    group.group_type = "classic"
    log._emit(
        out,
        event,
        Kind.REBALANCE_PREPARING,
        state="PreparingRebalance",
        generation=event.generation,
        reason=event.reason,
    )


def _generation_bumped(
    log: CoordinatorLog, group: _Group, event: Event, out: list[LogLine]
) -> None:
    assert isinstance(event, GenerationBumped)
    group.group_type = "classic"
    if group.unjoined:
        # Java's Set.toString: "[a, b]".
        members_list = "[" + ", ".join(group.unjoined) + "]"
        log._emit(out, event, Kind.UNJOINED_MEMBERS_REMOVED, members_list=members_list)
        group.unjoined.clear()
    group.leader_id = event.leader_id
    group.members = event.member_ids
    if event.member_ids:
        log._emit(
            out,
            event,
            Kind.GROUP_STABILIZED,
            generation=event.generation,
            members=len(event.member_ids),
        )
    else:
        log._emit(out, event, Kind.GROUP_EMPTY, generation=event.generation)


def _rebalance_completed(
    log: CoordinatorLog, group: _Group, event: Event, out: list[LogLine]
) -> None:
    assert isinstance(event, RebalanceCompleted)
    # The leader's assignment names every member of the generation (empty ones too).
    members = tuple(event.assignment) or group.members
    log._emit(
        out,
        event,
        Kind.ASSIGNMENT_RECEIVED,
        leader=group.leader_id,
        generation=event.generation,
        members=len(members),
        static_members=sum(1 for m in members if m in group.instance_ids),
    )


def _epoch_bumped(log: CoordinatorLog, group: _Group, event: Event, out: list[LogLine]) -> None:
    assert isinstance(event, GroupEpochBumped)
    group.group_type = "consumer"
    log._emit(out, event, Kind.GROUP_EPOCH_BUMPED, epoch=event.epoch)


def _target_assignment(
    log: CoordinatorLog, group: _Group, event: Event, out: list[LogLine]
) -> None:
    assert isinstance(event, TargetAssignmentComputed)
    group.group_type = "consumer"
    log._emit(
        out,
        event,
        Kind.TARGET_ASSIGNMENT_COMPUTED,
        epoch=event.epoch,
        assignor=event.assignor,
        assignor_ms=0,
    )


def _assignment_changed(
    log: CoordinatorLog, group: _Group, event: Event, out: list[LogLine]
) -> None:
    assert isinstance(event, MemberAssignmentChanged)
    group.group_type = "consumer"
    if event.epoch == _STATIC_LEAVE_EPOCH:
        log._emit(
            out,
            event,
            Kind.CONSUMER_STATIC_MEMBER_LEFT_TEMPORARILY,
            member_id=event.member_id,
            instance_id=group.instance_ids.get(event.member_id, "null"),
        )


_Handler = Callable[[CoordinatorLog, _Group, Event, list[LogLine]], None]

_HANDLERS: dict[type, _Handler] = {
    GroupStateChanged: _state_changed,
    MemberPending: _member_pending,
    MemberJoined: _member_joined,
    MemberLeft: _member_left,
    RebalanceStarted: _rebalance_started,
    GenerationBumped: _generation_bumped,
    RebalanceCompleted: _rebalance_completed,
    GroupEpochBumped: _epoch_bumped,
    TargetAssignmentComputed: _target_assignment,
    MemberAssignmentChanged: _assignment_changed,
}
