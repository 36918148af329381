"""One group's records (in time order) -> its rebalances, joins, leaves and coordinator moves.

Classic groups (both coordinators). A rebalance is keyed by the generation it produced:

- ``started_at`` is the ``Preparing to rebalance group G ... with old generation N-1`` line;
- ``stabilized_at`` is the ``Stabilized group G generation N`` line, ``members`` the count
  that line gives (Kafka 2.8+; before, the ``Assignment received ... The group has M
  members`` line of generation N, when the log has it);
- ``Group G with generation N is now empty`` ends the rebalance with no member: ``outcome``
  ``empty``, ``members`` 0, ``stabilized_at`` null and ``ended_at`` that line;
- a ``Preparing`` line whose generation never stabilizes in the log (the log ends, or the
  next ``Preparing`` comes first) is a rebalance with ``outcome`` ``unfinished``, keyed by
  ``N`` = old generation + 1, ``stabilized_at`` and ``duration_ms`` null;
- a ``Stabilized`` line without its ``Preparing`` line (the log starts mid-rebalance) has
  ``started_at`` and ``duration_ms`` null.

Consumer groups (KIP-848). A rebalance is keyed by the group epoch it produced:

- ``started_at`` is the member event that caused the ``Bumped group epoch to E`` line (a
  member joining, leaving, fenced, replaced, logged at most ``CAUSE_WINDOW_MS`` before the
  bump), or the bump line itself when no such event is there;
- ``stabilized_at`` is the ``new assignment state`` line at which the last member the log
  knows reached epoch ``E`` in state ``STABLE``; null when the log does not show it (Kafka
  writes those lines from 3.7; a member the log never names cannot be waited for);
- ``members`` is the number of members the log knows when ``E`` was bumped (joins, leaves,
  fencings and static replacements before the bump; a join after it bumps again), plus any
  member it names only in a ``new assignment state`` line while ``E`` is open. Kafka writes
  those lines at DEBUG, so an INFO log gives the count from joins and leaves alone.

Members leaving: a classic ``has failed`` (session timeout) or ``has left`` (LeaveGroup,
with the client's reason from Kafka 3.2), a consumer group's ``left``/``fenced``, and the
old member of a static replacement. Coordinator moves: a group loaded by a broker other
than the one that last loaded or logged it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from regroup.history.formats import Kind
from regroup.history.lines import Record, instance_id
from regroup.history.reasons import (
    ADDED_MEMBER,
    classify_leave,
    classify_rebalance,
    client_reason,
)

__all__ = [
    "CAUSE_WINDOW_MS",
    "CoordinatorMove",
    "GroupHistory",
    "MemberJoin",
    "MemberLeave",
    "PollTimeout",
    "Rebalance",
    "reconstruct",
    "sort_key",
]

#: How long before a group-epoch bump a member event may be and still be its cause. The
#: coordinator writes both while handling one heartbeat, so they share a millisecond in
#: practice; a second allows for a slow append.
CAUSE_WINDOW_MS = 1000

_EAGER_ASSIGNORS = frozenset({"range", "roundrobin", "sticky"})
_COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky"})


@dataclass(frozen=True, slots=True)
class Rebalance:
    """One rebalance of one group, as the log shows it (see the module docstring)."""

    group_id: str
    protocol: str
    generation: int | None
    epoch: int | None
    started_at: str | None
    started_ms: int | None
    stabilized_at: str | None
    stabilized_ms: int | None
    ended_at: str | None
    ended_ms: int | None
    outcome: str  # stabilized | empty | unfinished
    reason: str | None
    reason_class: str
    client_reason: str | None
    members: int | None
    members_before: int | None
    broker_id: int | None
    coordinator_partition: int | None
    lines: tuple[str, ...]

    @property
    def duration_ms(self) -> int | None:
        if self.started_ms is None or self.ended_ms is None:
            return None
        return self.ended_ms - self.started_ms


@dataclass(frozen=True, slots=True)
class MemberLeave:
    group_id: str
    member_id: str
    instance_id: str | None
    at: str
    ts_ms: int
    reason: str  # a class of regroup.history.reasons.LEAVE_CLASSES, or "leave"
    reason_text: str | None
    line: str


@dataclass(frozen=True, slots=True)
class MemberJoin:
    group_id: str
    member_id: str
    instance_id: str | None
    at: str
    ts_ms: int
    line: str


@dataclass(frozen=True, slots=True)
class CoordinatorMove:
    group_id: str
    at: str
    ts_ms: int
    from_broker: int | None
    to_broker: int | None
    line: str


@dataclass(frozen=True, slots=True)
class PollTimeout:
    """A Java client's ``consumer poll timeout has expired`` (its own log)."""

    group_id: str
    client_id: str
    at: str
    ts_ms: int
    line: str


@dataclass(slots=True)
class GroupHistory:
    """Everything the log shows about one group."""

    group_id: str
    protocol: str | None = None
    assignors: list[str] = field(default_factory=list)
    #: The first line that showed each assignor name.
    assignor_lines: dict[str, str] = field(default_factory=dict)
    rebalances: list[Rebalance] = field(default_factory=list)
    members_left: list[MemberLeave] = field(default_factory=list)
    members_joined: list[MemberJoin] = field(default_factory=list)
    coordinator_moves: list[CoordinatorMove] = field(default_factory=list)
    poll_timeouts: list[PollTimeout] = field(default_factory=list)
    records: int = 0
    static_members: set[str] = field(default_factory=set)

    @property
    def rebalancing_ms(self) -> int:
        """Time spent rebalancing: the sum of the rebalances' known durations."""
        return sum(r.duration_ms or 0 for r in self.rebalances)

    @property
    def rebalance_protocol(self) -> str | None:
        """``eager`` / ``cooperative`` from the assignor the classic group used, if known."""
        if self.protocol == "consumer":
            return "consumer"
        for name in reversed(self.assignors):
            if name in _COOPERATIVE_ASSIGNORS:
                return "cooperative"
            if name in _EAGER_ASSIGNORS:
                return "eager"
        return None


def sort_key(record: Record) -> tuple[int, str, int]:
    """Time order across a cluster's files; one file's own order breaks ties."""
    return (record.ts_ms, record.source, record.line_no)


_PROTOCOLS_LIST = re.compile(r"List\(([^)]*)\)|\[([^\]]*)\]")
_GENERATION_PROTOCOL = re.compile(r"protocol='([^']*)'")
_MEMBER_EPOCH = re.compile(r"memberEpoch=(-?\d+)")
_MEMBER_STATE = re.compile(r"state=(\w+)")

_CONSUMER_KINDS = frozenset(
    {
        Kind.CONSUMER_MEMBER_JOINED,
        Kind.CONSUMER_STATIC_MEMBER_JOINED,
        Kind.CONSUMER_STATIC_MEMBER_REPLACED,
        Kind.CONSUMER_MEMBER_LEFT,
        Kind.CONSUMER_STATIC_MEMBER_LEFT,
        Kind.CONSUMER_STATIC_MEMBER_LEFT_TEMPORARILY,
        Kind.CONSUMER_MEMBER_FENCED,
        Kind.GROUP_EPOCH_BUMPED,
        Kind.TARGET_ASSIGNMENT_COMPUTED,
        Kind.MEMBER_ASSIGNMENT_UPDATED,
        Kind.CONSUMER_GROUP_LOADED,
        Kind.CONSUMER_GROUP_UNLOADED,
    }
)
_CLASSIC_KINDS = frozenset(
    {
        Kind.REBALANCE_PREPARING,
        Kind.GROUP_STABILIZED,
        Kind.ASSIGNMENT_RECEIVED,
        Kind.MEMBER_FAILED,
        Kind.MEMBER_LEFT,
        Kind.GROUP_EMPTY,
        Kind.STATIC_MEMBER_REPLACED,
        Kind.STATIC_MEMBER_JOINED,
        Kind.DYNAMIC_MEMBER_PENDING,
        Kind.DYNAMIC_MEMBER_JOINED,
        Kind.GROUP_LOADED,
    }
)


@dataclass(slots=True)
class _Pending:
    record: Record
    old_generation: int | None


@dataclass(slots=True)
class _OpenEpoch:
    epoch: int
    start: Record
    bump: Record
    reason_class: str
    reason: str | None
    members: frozenset[str]
    """The members the log knew when the epoch was bumped: the ones it counts."""
    joined_after: set[str] = field(default_factory=set)
    """Members that joined after the bump: they belong to the next epoch, not this one."""


class _Builder:
    def __init__(self, group_id: str) -> None:
        self.history = GroupHistory(group_id)
        self.pending: _Pending | None = None
        self.members: int | None = None
        self.broker: int | None = None
        self.joined: set[str] = set()
        # consumer groups
        self.epochs: dict[str, tuple[int, str]] = {}
        self.open: _OpenEpoch | None = None
        self.cause: tuple[Record, str, str | None] | None = None

    # -- shared ---------------------------------------------------------------------------

    def _protocol(self, record: Record) -> None:
        kind = record.kind
        if kind in _CONSUMER_KINDS:
            self.history.protocol = "consumer"
        elif kind in _CLASSIC_KINDS:
            self.history.protocol = "classic"

    def _assignors(self, names: Iterable[str], line: str) -> None:
        for name in names:
            name = name.strip()
            if name and name not in self.history.assignors:
                self.history.assignors.append(name)
                self.history.assignor_lines[name] = line

    def _broker(self, record: Record, *, loaded: bool) -> None:
        broker = record.get_int("broker_id")
        if broker is None:
            return
        if loaded and self.broker is not None and broker != self.broker:
            self.history.coordinator_moves.append(
                CoordinatorMove(
                    self.history.group_id, record.at, record.ts_ms, self.broker, broker, record.line
                )
            )
        self.broker = broker

    def _join(self, record: Record, member_id: str | None, instance: str | None) -> None:
        if not member_id or member_id in self.joined:
            return
        self.joined.add(member_id)
        if instance:
            self.history.static_members.add(instance)
        self.history.members_joined.append(
            MemberJoin(
                self.history.group_id, member_id, instance, record.at, record.ts_ms, record.line
            )
        )

    def _leave(
        self,
        record: Record,
        member_id: str | None,
        instance: str | None,
        reason: str,
        text: str | None,
    ) -> None:
        if not member_id:
            return
        self.joined.discard(member_id)
        if instance:
            self.history.static_members.add(instance)
        self.history.members_left.append(
            MemberLeave(
                self.history.group_id,
                member_id,
                instance,
                record.at,
                record.ts_ms,
                reason,
                text,
                record.line,
            )
        )

    # -- classic ----------------------------------------------------------------------------

    def _close_pending(self, end: Record | None, generation: int | None, outcome: str) -> None:
        pending = self.pending
        self.pending = None
        start = pending.record if pending is not None else None
        if start is None and end is None:
            return
        reason = start.get_str("reason") if start is not None else None
        members = None
        if end is not None and outcome == "stabilized":
            members = end.get_int("members")
        elif outcome == "empty":
            members = 0
        if generation is None and pending is not None and pending.old_generation is not None:
            generation = pending.old_generation + 1
        located = end or start
        assert located is not None
        self.history.rebalances.append(
            Rebalance(
                group_id=self.history.group_id,
                protocol="classic",
                generation=generation,
                epoch=None,
                started_at=start.at if start else None,
                started_ms=start.ts_ms if start else None,
                stabilized_at=end.at if end is not None and outcome == "stabilized" else None,
                stabilized_ms=end.ts_ms if end is not None and outcome == "stabilized" else None,
                ended_at=end.at if end is not None else None,
                ended_ms=end.ts_ms if end is not None else None,
                outcome=outcome,
                reason=reason,
                reason_class=classify_rebalance(reason) if start is not None else "unknown",
                client_reason=client_reason(reason),
                members=members,
                members_before=self.members,
                broker_id=located.get_int("broker_id"),
                coordinator_partition=located.get_int("offsets_partition"),
                lines=tuple(r.line for r in (start, end) if r is not None),
            )
        )
        if members is not None:
            self.members = members

    def classic(self, record: Record) -> None:
        kind = record.kind
        generation = record.get_int("generation")
        if kind == Kind.REBALANCE_PREPARING:
            if self.pending is not None:
                self._close_pending(None, None, "unfinished")
            self.pending = _Pending(record, generation)
            reason = record.get_str("reason") or ""
            added = ADDED_MEMBER.match(reason)
            if added:
                self._join(record, added.group(1), instance_id(added.group(2)))
        elif kind == Kind.GROUP_STABILIZED:
            matches = self.pending is not None and (
                self.pending.old_generation is None
                or generation is None
                or self.pending.old_generation + 1 == generation
            )
            if self.pending is not None and not matches:
                self._close_pending(None, None, "unfinished")
            self._close_pending(record, generation, "stabilized")
        elif kind == Kind.GROUP_EMPTY:
            if (
                self.pending is not None
                and self.pending.old_generation is not None
                and (generation is not None and self.pending.old_generation + 1 != generation)
            ):
                self._close_pending(None, None, "unfinished")
            self._close_pending(record, generation, "empty")
        elif kind == Kind.ASSIGNMENT_RECEIVED:
            members = record.get_int("members")
            if members is not None:
                self._fill_members(generation, members)
                self.members = members
        elif kind == Kind.MEMBER_FAILED:
            self._leave(record, record.get_str("member_id"), None, "session_timeout", None)
        elif kind == Kind.MEMBER_LEFT:
            text = record.get_str("reason")
            reason = classify_leave(text) if text and text != "not provided" else "leave"
            if reason == "unknown":
                reason = "leave"
            protocols = record.get_str("protocols")
            if protocols:
                found = _PROTOCOLS_LIST.search(protocols)
                if found:
                    self._assignors(
                        (found.group(1) or found.group(2) or "").split(",")[:1], record.line
                    )
            text = None if text == "not provided" else text
            self._leave(
                record,
                record.get_str("member_id"),
                instance_id(record.get_str("instance_id")),
                reason,
                text,
            )
        elif kind == Kind.STATIC_MEMBER_REPLACED:
            instance = instance_id(record.get_str("instance_id"))
            self._leave(record, record.get_str("old_member_id"), instance, "replaced", None)
            self._join(record, record.get_str("member_id"), instance)
        elif kind in (Kind.PENDING_MEMBER_EXPIRED, Kind.PENDING_MEMBER_LEFT):
            # A member id handed out (KIP-394) whose member never came back: no join.
            member = record.get_str("member_id")
            if member in self.joined:
                self.joined.discard(member)
                self.history.members_joined = [
                    j for j in self.history.members_joined if j.member_id != member
                ]
        elif kind in (
            Kind.STATIC_MEMBER_JOINED,
            Kind.DYNAMIC_MEMBER_JOINED,
            Kind.DYNAMIC_MEMBER_PENDING,
        ):
            self._join(
                record, record.get_str("member_id"), instance_id(record.get_str("instance_id"))
            )
        elif kind == Kind.GROUP_LOADED:
            self._broker(record, loaded=True)
            members = record.get_int("members")
            if members is not None:
                self.members = members
            return
        self._broker(record, loaded=False)

    def _fill_members(self, generation: int | None, members: int) -> None:
        for index in range(len(self.history.rebalances) - 1, -1, -1):
            rebalance = self.history.rebalances[index]
            if rebalance.generation == generation and rebalance.members is None:
                self.history.rebalances[index] = replace(rebalance, members=members)
                return

    # -- consumer groups ----------------------------------------------------------------------

    def _close_epoch(self, end: Record | None) -> None:
        open_ = self.open
        if open_ is None:
            return
        self.open = None
        # The group's members at epoch E are the ones it had when E was bumped (a join or a
        # leave after that bumps again), plus any the log names only in assignment lines
        # while E was open (a log that starts mid-life). A bump with no member the log ever
        # named counts nothing (null); one after the last known member left counts 0.
        present = set(self.epochs) - open_.joined_after
        known_members = open_.members | present
        named_any = bool(self.history.members_joined or self.history.members_left)
        known: int | None = len(known_members) if known_members or named_any else None
        self.history.rebalances.append(
            Rebalance(
                group_id=self.history.group_id,
                protocol="consumer",
                generation=None,
                epoch=open_.epoch,
                started_at=open_.start.at,
                started_ms=open_.start.ts_ms,
                stabilized_at=end.at if end else None,
                stabilized_ms=end.ts_ms if end else None,
                ended_at=end.at if end else None,
                ended_ms=end.ts_ms if end else None,
                outcome="stabilized" if end else "unfinished",
                reason=open_.reason,
                reason_class=open_.reason_class,
                client_reason=None,
                members=known,
                members_before=self.members,
                broker_id=open_.bump.get_int("broker_id"),
                coordinator_partition=open_.bump.get_int("offsets_partition"),
                lines=tuple(dict.fromkeys(r.line for r in (open_.start, open_.bump, end) if r)),
            )
        )
        if known is not None:
            self.members = known

    def consumer(self, record: Record) -> None:
        kind = record.kind
        member = record.get_str("member_id")
        instance = instance_id(record.get_str("instance_id"))
        if kind in (Kind.CONSUMER_MEMBER_JOINED, Kind.CONSUMER_STATIC_MEMBER_JOINED):
            self._join(record, member, instance)
            if member:
                self.epochs.setdefault(member, (0, "UNKNOWN"))
                if self.open is not None:
                    self.open.joined_after.add(member)
            self.cause = (record, "member_joined", record.line)
        elif kind == Kind.CONSUMER_STATIC_MEMBER_REPLACED:
            old = record.get_str("old_member_id")
            if old:
                self._leave(record, old, instance, "replaced", None)
                self.epochs.pop(old, None)
            self._join(record, member, instance)
            if member:
                self.epochs.setdefault(member, (0, "UNKNOWN"))
                if self.open is not None:
                    self.open.joined_after.add(member)
            self.cause = (record, "static_member_replaced", record.line)
        elif kind in (Kind.CONSUMER_MEMBER_LEFT, Kind.CONSUMER_STATIC_MEMBER_LEFT):
            self._leave(record, member, instance, "leave", None)
            if member:
                self.epochs.pop(member, None)
            self.cause = (record, "member_left", record.line)
        elif kind == Kind.CONSUMER_STATIC_MEMBER_LEFT_TEMPORARILY:
            # A static member's temporary leave keeps its assignment: no epoch bump follows.
            self._leave(record, member, instance, "leave", "temporarily (static member)")
        elif kind == Kind.CONSUMER_MEMBER_FENCED:
            text = record.get_str("reason")
            if text is None:
                text = (
                    "its session expired"
                    if "session" in record.line
                    else "it failed to revoke partitions"
                )
            reason = classify_leave(text)
            if reason == "unknown":
                reason = "fenced"
            self._leave(record, member, instance, reason, text)
            if member:
                self.epochs.pop(member, None)
            self.cause = (
                record,
                "session_timeout" if reason == "session_timeout" else "member_left",
                record.line,
            )
        elif kind == Kind.GROUP_EPOCH_BUMPED:
            epoch = record.get_int("epoch")
            if epoch is None:
                return
            if self.open is not None:
                self._close_epoch(None)
            start, reason_class, reason = record, "unknown", None
            if self.cause is not None and record.ts_ms - self.cause[0].ts_ms <= CAUSE_WINDOW_MS:
                start, reason_class, reason = self.cause[0], self.cause[1], self.cause[2]
            self.cause = None
            self.open = _OpenEpoch(
                epoch, start, record, reason_class, reason, frozenset(self.epochs)
            )
        elif kind == Kind.TARGET_ASSIGNMENT_COMPUTED:
            assignor = record.get_str("assignor")
            if assignor:
                self._assignors([assignor], record.line)
        elif kind == Kind.MEMBER_ASSIGNMENT_UPDATED:
            epoch = record.get_int("epoch")
            state = record.get_str("state")
            summary = record.get_str("to_summary")
            if epoch is None and summary:
                found = _MEMBER_EPOCH.search(summary)
                epoch = int(found.group(1)) if found else None
                found_state = _MEMBER_STATE.search(summary)
                state = found_state.group(1) if found_state else None
            if member and epoch is not None:
                self.epochs[member] = (epoch, (state or "UNKNOWN").upper())
            open_ = self.open
            if (
                open_ is not None
                and self.epochs
                and all(e >= open_.epoch and s == "STABLE" for e, s in self.epochs.values())
            ):
                self._close_epoch(record)
        elif kind == Kind.CONSUMER_GROUP_LOADED:
            self._broker(record, loaded=True)
            members = record.get_int("members")
            if members is not None:
                self.members = members
            return
        self._broker(record, loaded=False)

    # -- client -----------------------------------------------------------------------------

    def client(self, record: Record) -> None:
        kind = record.kind
        if kind == Kind.CLIENT_POLL_TIMEOUT:
            self.history.poll_timeouts.append(
                PollTimeout(
                    self.history.group_id,
                    record.get_str("client_id") or "",
                    record.at,
                    record.ts_ms,
                    record.line,
                )
            )
        elif kind in (Kind.CLIENT_JOINED, Kind.CLIENT_SYNCED):
            text = record.get_str("generation_text") or ""
            found = _GENERATION_PROTOCOL.search(text)
            if found:
                self._assignors([found.group(1)], record.line)

    def feed(self, record: Record) -> None:
        self.history.records += 1
        if record.family == "java-consumer-client":
            self.client(record)
            return
        self._protocol(record)
        if record.kind in _CONSUMER_KINDS:
            self.consumer(record)
        else:
            self.classic(record)

    def finish(self) -> GroupHistory:
        if self.pending is not None:
            self._close_pending(None, None, "unfinished")
        if self.open is not None:
            self._close_epoch(None)
        return self.history


def reconstruct(group_id: str, records: Sequence[Record]) -> GroupHistory:
    """The history of ``group_id`` from its records (any order: they are sorted by time,
    and a line seen twice at the same time counts once)."""
    builder = _Builder(group_id)
    seen: set[tuple[int, str]] = set()
    for record in sorted(records, key=sort_key):
        # The same line twice (a file given twice, a rotated copy) is one event.
        key = (record.ts_ms, record.line)
        if key in seen:
            continue
        seen.add(key)
        builder.feed(record)
    return builder.finish()
