"""Run metrics, computed from the event log only (the ``regroup.events`` schema).

The Spark pipeline implements the same definitions; these are they, exactly.
All times are the events' ``ts_ms``; events are read in log order.

Window. The *measurement window* opens at the first ``scenario_step`` event;
in a log without one, at the first ``group_stabilized`` event (the initial
formation of the group is not measured). It closes at ``simulation_ended``
(or the last event). Quantities marked (window) count only what happens
inside it; an event at the opening time is inside.

Ownership and serving. Member ``m`` *owns* partition ``p`` from
``partitions_assigned(m, p)`` to the first later ``partitions_revoked(m, p)``,
``partitions_lost(m, p)`` or ``consumer_stopped(member_id=m)``. It *serves*
``p`` from ``partitions_restored(m, p)`` (if it still owns ``p``) to the end
of that ownership. A partition is *idle* while no member serves it. The
partitions are those of ``simulation_started.topics``, plus those a
``scenario_step.topics`` adds (existing from that step's ``ts_ms``).

Definitions:

``idle_ms_by_partition``  (window) per partition, the total idle time.
``idle_partition_seconds``  (window) the sum of those, in seconds.
``max_partition_pause_ms``  (window) the longest single idle interval of any
    partition, clipped to the window.
``paused_partitions``  (window) how many partitions were idle at some time.
``duplicates``  (whole run) records processed more than once: for every
    ``records_processed`` ``[first, last]``, the offsets in it already covered
    by earlier ``records_processed`` events of that partition.
``peak_lag``  (window) the largest total lag after any event, where the lag of
    a partition is its latest ``records_produced.end_offset`` minus one plus
    the highest ``last_offset`` processed (0 if none).
``rebalances``  (window) ``generation_bumped`` events (classic) plus
    ``target_assignment_computed`` events (KIP-848).
``generations`` / ``group_epochs``  (window) ``generation_bumped`` /
    ``group_epoch_bumped`` events.
``partitions_assigned`` / ``partitions_revoked`` / ``partitions_lost``
    (window) the partitions listed by those member events, summed.
``partitions_moved``  (window) ``partitions_assigned(m, p)`` where ``p`` was
    owned before by another *consumer*: the previous member assigned ``p``
    has another identity, the identity being the member's
    ``group.instance.id`` (from ``member_joined.instance_id``) if it has one,
    else its member id. A static member that comes back keeps its identity.
``pause_p50_ms`` / ``pause_p99_ms`` / ``pause_max_ms``  (window) over the
    *pauses*: every idle interval of every partition, clipped to the window,
    of positive length; the nearest-rank percentiles of their lengths (the
    shortest length at least that share of the pauses does not exceed) and
    the longest (``max_partition_pause_ms``); 0 when nothing paused.
``unstable_ms``  (window) the time the coordinator's group was not
    ``Stable``: from a ``group_state_changed`` to a state other than
    ``Stable`` (classic: Empty, PreparingRebalance, CompletingRebalance;
    KIP-848: Empty, Assigning, Reconciling, the state the coordinator derives
    from its members' reconciliation) to the next one back to ``Stable``
    (with several groups in one log: while any of them is not).
``time_to_stable_ms``  the time the disruption took to heal: from the first
    ``scenario_step`` to the first ``group_stabilized`` at or after the end of
    the last unstable interval that reaches past that step (0 when the group
    never left ``Stable`` after the first step, as in a static bounce without
    a rebalance); ``None`` when there is no step or no ``group_state_changed``
    at all, or the group is not ``Stable`` at the end, or never stabilized after.
``catch_up_s``  how long the consumers took to work off the backlog of the
    last disruption: from the later of the last ``scenario_step`` and the last
    return to ``Stable`` after the first step, to the last moment after it at
    which the total lag came back from above the *steady lag* to no more than
    it, in seconds (3 decimals); 0 when the lag never rose above the steady
    lag after that moment; ``None`` when there is no step, or the lag is still
    above the steady lag at the end. The steady lag is the largest total lag
    after any event in the ``STEADY_LAG_MS`` (10 s) before the first
    ``scenario_step`` and after the first ``group_stabilized`` (the group
    running undisturbed, its first backlog worked off; 0 when there is none).
``records_produced`` / ``records_processed``  (whole run) sums of counts.
``violations``  every ``invariant_violated`` event, as dicts.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from regroup.events import (
    ConsumerStopped,
    Event,
    GenerationBumped,
    GroupEpochBumped,
    GroupStabilized,
    GroupStateChanged,
    InvariantViolated,
    MemberJoined,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRestored,
    PartitionsRevoked,
    RecordsProcessed,
    RecordsProduced,
    ScenarioStep,
    SimulationEnded,
    SimulationStarted,
    TargetAssignmentComputed,
)
from regroup.model import TopicPartition, topic_partition
from regroup.sim.dispatch import memoised_handler
from regroup.sim.invariants import IntervalSet
from regroup.sim.partition_table import (
    NOBODY,
    PartitionTable,
    held_by,
    with_member,
    without_member,
)

__all__ = ["STEADY_LAG_MS", "MetricsAccumulator", "RunMetrics", "compute_metrics"]

#: How far before the first scenario step the steady lag is measured (``catch_up_s``).
STEADY_LAG_MS = 10_000


@dataclass(slots=True)
class RunMetrics:
    idle_partition_seconds: float = 0.0
    max_partition_pause_ms: int = 0
    paused_partitions: int = 0
    duplicates: int = 0
    peak_lag: int = 0
    rebalances: int = 0
    generations: int = 0
    group_epochs: int = 0
    partitions_assigned: int = 0
    partitions_revoked: int = 0
    partitions_lost: int = 0
    partitions_moved: int = 0
    time_to_stable_ms: int | None = None
    pause_p50_ms: int = 0
    pause_p99_ms: int = 0
    pause_max_ms: int = 0
    unstable_ms: int = 0
    catch_up_s: float | None = None
    records_produced: int = 0
    records_processed: int = 0
    window_start_ms: int = 0
    window_end_ms: int = 0
    idle_ms_by_partition: dict[str, int] = field(default_factory=dict)
    violations: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "idle_partition_seconds": self.idle_partition_seconds,
            "max_partition_pause_ms": self.max_partition_pause_ms,
            "paused_partitions": self.paused_partitions,
            "rebalances": self.rebalances,
            "generations": self.generations,
            "group_epochs": self.group_epochs,
            "partitions_assigned": self.partitions_assigned,
            "partitions_revoked": self.partitions_revoked,
            "partitions_lost": self.partitions_lost,
            "partitions_moved": self.partitions_moved,
            "duplicates": self.duplicates,
            "peak_lag": self.peak_lag,
            "time_to_stable_ms": self.time_to_stable_ms,
            "pause_p50_ms": self.pause_p50_ms,
            "pause_p99_ms": self.pause_p99_ms,
            "pause_max_ms": self.pause_max_ms,
            "unstable_ms": self.unstable_ms,
            "catch_up_s": self.catch_up_s,
            "records_produced": self.records_produced,
            "records_processed": self.records_processed,
            "window_start_ms": self.window_start_ms,
            "window_end_ms": self.window_end_ms,
            "idle_ms_by_partition": dict(self.idle_ms_by_partition),
            "violations": list(self.violations),
        }


@dataclass(slots=True)
class _Counts:
    """The (window) counters, from one candidate opening of the window on."""

    peak_lag: int = 0
    rebalances: int = 0
    generations: int = 0
    group_epochs: int = 0
    partitions_assigned: int = 0
    partitions_revoked: int = 0
    partitions_lost: int = 0
    partitions_moved: int = 0


class MetricsAccumulator:
    """Feed events in log order (``observe``); ``result()`` gives the metrics.

    ``observe`` is on the simulator's hot path (every event of a run): it
    dispatches on the event's class through a table built once, and the kinds
    no metric reads cost one dictionary look-up.

    ``ordered=True`` is the caller's promise that no event is later than the
    log's end (its last ``simulation_ended``), as the simulator guarantees:
    then an idle interval that closes once the window's opening
    (``scenario_step``) is known is clipped and added up at once instead of
    being kept until ``result()`` (a rolling bounce of a large group closes
    millions of them). ``result()`` checks the promise and raises
    ``ValueError`` if it was broken, rather than give different numbers.
    Intervals that close before the opening is known are kept either way, so
    the figures are those of the definitions above, exactly.

    ``table`` (optional) is a ``PartitionTable`` shared with other observers of
    the same events, as the simulator shares one with its invariant checker.
    """

    def __init__(self, *, ordered: bool = False, table: PartitionTable | None = None) -> None:
        self.metrics = RunMetrics()
        self._ordered = ordered
        #: The latest end of a folded interval (checked against the log's end).
        self._folded_until: int | None = None
        #: Counters from the first ``scenario_step`` and from the first ``group_stabilized``.
        self._from_step: _Counts | None = None
        self._from_stable: _Counts | None = None
        self._open: list[_Counts] = []
        self._stable_at: int | None = None
        self._last_ts = 0
        self._ended: int | None = None
        # Per-partition state, by partition number (``regroup.sim.partition_table``).
        table = self._table = table if table is not None else PartitionTable()
        #: Whether idle time is accounted for the partition: one of the topics', or one
        #: served once; and those partitions in the order they became so.
        self._tracked = table.column(False)
        self._tracked_order: list[int] = []
        #: The members serving the partition, its idle start (``None``: served, or not
        #: tracked), and the idle intervals folded into sums (``ordered``).
        self._serving = table.column(NOBODY)
        self._idle_since: list[int | None] = table.column(None)
        self._folded_ms = table.column(0)
        self._folded_longest = table.column(0)
        #: The lengths of the folded pauses (length -> how many).
        self._folded_pauses: Counter[int] = Counter()
        #: Closed idle intervals ``(start, end)`` not folded, clipped to the window at the end.
        self._idle: dict[int, list[tuple[int, int]]] = {}
        #: The identity (instance id, else member id) of the last member assigned it.
        self._last_owner: list[str | None] = table.column(None)
        self._processed: list[IntervalSet | None] = table.column(None)
        self._ends = table.column(0)
        #: The members owning the partition.
        self._owners = table.column(NOBODY)
        self._identity: dict[str, str] = {}
        self._lag = 0
        self._first_step: int | None = None
        self._last_step: int | None = None
        self._stable_after_last: int | None = None
        #: Every ``group_stabilized`` time (few: one per disruption healed).
        self._stabilized_at: list[int] = []
        #: Each group's coordinator state; the unstable intervals, the open one's start.
        self._group_states: dict[str, str] = {}
        self._unstable: list[tuple[int, int]] = []
        self._unstable_since: int | None = None
        #: The steady lag (before the first step) and the catch-up after the last rebalance:
        #: the lag after each event since the first stabilization, until the first step.
        self._lag_before_step: deque[tuple[int, int]] = deque()
        self._steady_lag = 0
        self._catch_from: int | None = None
        self._caught_at: int | None = None
        self._behind = False
        self._handlers: dict[type, Callable[[Any, int], None] | None] = {
            RecordsProduced: self._on_produced,
            RecordsProcessed: self._on_processed,
            PartitionsAssigned: self._on_assigned,
            PartitionsRestored: self._on_restored,
            PartitionsRevoked: self._on_revoked,
            PartitionsLost: self._on_lost,
            ConsumerStopped: self._on_stopped,
            MemberJoined: self._on_joined,
            GenerationBumped: self._on_generation,
            TargetAssignmentComputed: self._on_target,
            GroupEpochBumped: self._on_group_epoch,
            GroupStabilized: self._on_stabilized,
            GroupStateChanged: self._on_state,
            ScenarioStep: self._on_step,
            SimulationStarted: self._on_started,
            SimulationEnded: self._on_ended,
            InvariantViolated: self._on_violation,
        }

    # -- feeding ----------------------------------------------------------------------------

    def observe(self, event: Event) -> None:
        ts = event.ts_ms
        if ts > self._last_ts:
            self._last_ts = ts
        kind = type(event)
        try:
            handler = self._handlers[kind]
        except KeyError:
            handler = memoised_handler(self._handlers, kind)
        if handler is not None:
            handler(event, ts)

    def _on_produced(self, event: RecordsProduced, ts: int) -> None:
        self.metrics.records_produced += event.count
        number = self._table.index(event.partition)
        previous = self._ends[number]
        self._ends[number] = event.end_offset
        self._lag += event.end_offset - previous
        lag = self._lag
        for b in self._open:
            if lag > b.peak_lag:
                b.peak_lag = lag
        self._lag_changed(ts)

    def _on_processed(self, event: RecordsProcessed, ts: int) -> None:
        self._processed_chunk(
            self._table.index(event.partition), event.first_offset, event.last_offset
        )
        self._lag_changed(ts)

    def _processed_chunk(self, number: int, first: int, last: int) -> None:
        m = self.metrics
        m.records_processed += last - first + 1
        intervals = self._processed[number]
        if intervals is None:
            intervals = self._processed[number] = IntervalSet()
        before = intervals.high
        if first == before and last >= first:  # the usual case: no duplicate; lag falls
            intervals.add(first, last + 1)
            self._lag -= last + 1 - before
            return
        m.duplicates += intervals.add(first, last + 1)
        self._lag -= intervals.high - before

    # -- records in aggregate (the simulator's data plane) -------------------------------

    def observe_produced(self, ts: int, count: int) -> None:
        """A produce tick's records over all partitions, as its ``records_produced`` events.

        The lag only rises through a tick's events, all at ``ts``: its largest value,
        the one every lag metric can see, is the one after the last, which is the
        previous lag plus ``count``; the per-partition end offsets are not needed.
        """
        if ts > self._last_ts:
            self._last_ts = ts
        self.metrics.records_produced += count
        self._lag += count
        lag = self._lag
        for b in self._open:
            if lag > b.peak_lag:
                b.peak_lag = lag
        self._lag_changed(ts)

    def observe_processed(self, ts: int, chunks: Sequence[tuple[TopicPartition, int, int]]) -> None:
        """A batch's chunks ``(partition, first, last)``, as their ``records_processed`` events.

        The lag only falls through a batch's events, all at ``ts``: the lag metrics see
        the value after the first (the largest: the steady lag) and after the last (where
        the catch-up ends, if it does); those in between change none of them.
        """
        if not chunks:
            return
        if ts > self._last_ts:
            self._last_ts = ts
        index = self._table.index
        chunk = self._processed_chunk
        tp, first, last = chunks[0]
        chunk(index(tp), first, last)
        self._lag_changed(ts)
        if len(chunks) > 1:
            for tp, first, last in chunks[1:]:
                chunk(index(tp), first, last)
            self._lag_changed(ts)

    def _lag_changed(self, ts: int) -> None:
        if self._first_step is None:
            if self._stable_at is not None:
                lags = self._lag_before_step
                lags.append((ts, self._lag))
                while lags[0][0] < ts - STEADY_LAG_MS:  # log order: older ones never count
                    lags.popleft()
        elif self._lag > self._steady_lag:
            self._behind = True
        elif self._behind:
            self._behind = False
            self._caught_at = ts

    def _on_assigned(self, event: PartitionsAssigned, ts: int) -> None:
        member = event.member_id
        identity = self._identity.get(member, member)
        owners = self._owners
        last_owner = self._last_owner
        buckets = self._open
        moved = 0
        for number in self._table.indices(event.partitions):
            owners[number] = with_member(owners[number], member)
            prior = last_owner[number]
            if prior is not None and prior != identity:
                moved += 1
            last_owner[number] = identity
        for b in buckets:
            b.partitions_moved += moved
            b.partitions_assigned += len(event.partitions)

    def _on_restored(self, event: PartitionsRestored, ts: int) -> None:
        member = event.member_id
        owners = self._owners
        tracked = self._tracked
        all_serving = self._serving
        idle_since = self._idle_since
        for number in self._table.indices(event.partitions):
            if member not in owners[number]:
                continue
            if not tracked[number]:
                self._track(number, None)
            serving = all_serving[number]
            if not serving:
                since = idle_since[number]
                if since is not None:
                    idle_since[number] = None
                    if ts > since:
                        self._close_idle(number, since, ts)
            all_serving[number] = with_member(serving, member)

    def _close_idle(self, number: int, since: int, ts: int) -> None:
        start = self._first_step
        if not self._ordered or start is None:
            self._idle.setdefault(number, []).append((since, ts))
            return
        # The window is [start, end) with end >= ts (``ordered``): the clipped length now.
        length = ts - (since if since > start else start)
        if length > 0:
            self._folded_ms[number] += length
            self._folded_pauses[length] += 1
            if length > self._folded_longest[number]:
                self._folded_longest[number] = length
        if self._folded_until is None or ts > self._folded_until:
            self._folded_until = ts

    def _on_revoked(self, event: PartitionsRevoked, ts: int) -> None:
        self._release(event.member_id, self._table.indices(event.partitions), ts)
        for b in self._open:
            b.partitions_revoked += len(event.partitions)

    def _on_lost(self, event: PartitionsLost, ts: int) -> None:
        self._release(event.member_id, self._table.indices(event.partitions), ts)
        for b in self._open:
            b.partitions_lost += len(event.partitions)

    def _on_stopped(self, event: ConsumerStopped, ts: int) -> None:
        if event.member_id:
            self._release(event.member_id, held_by(self._owners, event.member_id), ts)

    def _on_joined(self, event: MemberJoined, ts: int) -> None:
        if event.instance_id:
            self._identity[event.member_id] = event.instance_id

    def _on_generation(self, event: GenerationBumped, ts: int) -> None:
        for b in self._open:
            b.generations += 1
            b.rebalances += 1

    def _on_target(self, event: TargetAssignmentComputed, ts: int) -> None:
        for b in self._open:
            b.rebalances += 1

    def _on_group_epoch(self, event: GroupEpochBumped, ts: int) -> None:
        for b in self._open:
            b.group_epochs += 1

    def _on_state(self, event: GroupStateChanged, ts: int) -> None:
        states = self._group_states
        was_unstable = any(state != "Stable" for state in states.values())
        states[event.group_id] = event.new_state
        unstable = any(state != "Stable" for state in states.values())
        if unstable and not was_unstable:
            self._unstable_since = ts
        elif was_unstable and not unstable:
            since = self._unstable_since
            self._unstable.append((ts if since is None else since, ts))
            self._unstable_since = None
            if self._first_step is not None:  # a rebalance ended in the window
                self._start_catch_up(ts)

    def _start_catch_up(self, ts: int) -> None:
        self._catch_from = ts
        self._caught_at = None
        self._behind = self._lag > self._steady_lag

    def _on_stabilized(self, event: GroupStabilized, ts: int) -> None:
        self._stabilized_at.append(ts)
        if self._from_stable is None:
            self._from_stable = _Counts(peak_lag=self._lag)
            self._open.append(self._from_stable)
        if self._stable_at is None:
            self._stable_at = ts
        if (
            self._last_step is not None
            and self._stable_after_last is None
            and ts >= self._last_step
        ):
            self._stable_after_last = ts

    def _on_step(self, event: ScenarioStep, ts: int) -> None:
        if self._from_step is None:
            self._from_step = _Counts(peak_lag=self._lag)
            self._open.append(self._from_step)
        if self._first_step is None:
            self._first_step = ts
            since = ts - STEADY_LAG_MS
            self._steady_lag = max(
                (lag for at, lag in self._lag_before_step if at >= since), default=0
            )
            self._lag_before_step.clear()
        self._start_catch_up(ts)
        self._last_step = ts
        self._stable_after_last = None
        self._add_topics(event.topics, ts)

    def _on_started(self, event: SimulationStarted, ts: int) -> None:
        self._add_topics(event.topics, ts)

    def _on_ended(self, event: SimulationEnded, ts: int) -> None:
        self._ended = ts

    def _on_violation(self, event: InvariantViolated, ts: int) -> None:
        self.metrics.violations.append(event.to_dict())

    def result(self) -> RunMetrics:
        """The metrics of everything observed so far (the window closes at the end)."""
        m = self.metrics
        end = self._ended if self._ended is not None else self._last_ts
        if self._folded_until is not None and end < self._folded_until:
            raise ValueError(
                f"an idle interval ended at {self._folded_until} ms, after the log's end at "
                f"{end} ms: this log is not ordered (use ordered=False)"
            )
        if self._first_step is not None:
            start, counts = self._first_step, self._from_step
        elif self._stable_at is not None:
            start, counts = self._stable_at, self._from_stable
        else:
            start, counts = end, _Counts()
        counts = counts or _Counts()
        m.window_start_ms, m.window_end_ms = start, end
        for name in _Counts.__dataclass_fields__:
            setattr(m, name, getattr(counts, name))
        total = 0
        longest = 0
        paused = 0
        pauses = Counter(self._folded_pauses)
        by_partition: dict[str, int] = {}
        partitions = self._table.partitions
        for number in self._tracked_order:
            spans = list(self._idle.get(number, ()))
            since = self._idle_since[number]
            if since is not None:
                spans.append((since, end))
            idle = self._folded_ms[number]
            longest = max(longest, self._folded_longest[number])
            for since, until in spans:
                length = min(until, end) - max(since, start)
                if length > 0:
                    idle += length
                    pauses[length] += 1
                    longest = max(longest, length)
            if idle > 0:
                paused += 1
            total += idle
            tp = partitions[number]
            by_partition[f"{tp.topic}-{tp.partition}"] = idle
        m.idle_partition_seconds = round(total / 1000.0, 3)
        m.max_partition_pause_ms = longest
        m.paused_partitions = paused
        m.idle_ms_by_partition = by_partition
        m.pause_p50_ms = _nearest_rank(pauses, 0.50)
        m.pause_p99_ms = _nearest_rank(pauses, 0.99)
        m.pause_max_ms = longest
        unstable = list(self._unstable)
        if self._unstable_since is not None:
            unstable.append((self._unstable_since, end))
        m.unstable_ms = sum(max(0, min(b, end) - max(a, start)) for a, b in unstable)
        m.time_to_stable_ms = self._time_to_stable(unstable)
        if self._catch_from is None or self._behind:
            m.catch_up_s = None
        elif self._caught_at is None:
            m.catch_up_s = 0.0
        else:
            m.catch_up_s = round((self._caught_at - self._catch_from) / 1000.0, 3)
        return m

    def _time_to_stable(self, unstable: list[tuple[int, int]]) -> int | None:
        first = self._first_step
        if first is None or not self._group_states:  # no step, or no coordinator state seen
            return None
        reaching = [(a, b) for a, b in unstable if b > first or a >= first]
        if not reaching:
            return 0
        if self._unstable_since is not None:
            return None
        healed = max(b for _, b in reaching)
        after = [ts for ts in self._stabilized_at if ts >= healed]
        return min(after) - first if after else None

    # -- helpers ----------------------------------------------------------------------------

    def _add_topics(self, topics: Any, ts: int) -> None:
        table = self._table
        tracked = self._tracked
        for topic in sorted(topics):
            for partition in range(int(topics[topic])):
                number = table.index(topic_partition(topic, partition))
                if not tracked[number]:
                    self._track(number, ts)

    def _track(self, number: int, idle_since: int | None) -> None:
        """Start accounting the idle time of partition ``number`` (idle from ``idle_since``)."""
        self._tracked[number] = True
        self._tracked_order.append(number)
        self._idle_since[number] = idle_since

    def _release(self, member: str, numbers: Iterable[int], ts: int) -> None:
        owners = self._owners
        tracked = self._tracked
        all_serving = self._serving
        for number in numbers:
            if member in owners[number]:
                owners[number] = without_member(owners[number], member)
            if not tracked[number]:
                continue
            serving = all_serving[number]
            if member not in serving:
                continue
            serving = all_serving[number] = without_member(serving, member)
            if not serving:
                self._idle_since[number] = ts


def _nearest_rank(lengths: Counter[int], share: float) -> int:
    """The shortest length that at least ``share`` of ``lengths`` do not exceed (0: none)."""
    total = sum(lengths.values())
    if total == 0:
        return 0
    rank = math.ceil(share * total)
    seen = 0
    for length in sorted(lengths):
        seen += lengths[length]
        if seen >= rank:
            return length
    return max(lengths)


def compute_metrics(events: Iterable[Event]) -> RunMetrics:
    """The metrics of a whole event log."""
    accumulator = MetricsAccumulator()
    for event in events:
        accumulator.observe(event)
    return accumulator.result()
