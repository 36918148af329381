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
``time_to_stable_ms``  from the first ``scenario_step`` to the first
    ``group_stabilized`` at or after the last ``scenario_step``; ``None`` when
    there is no step or the group never stabilized after the last one.
``records_produced`` / ``records_processed``  (whole run) sums of counts.
``violations``  every ``invariant_violated`` event, as dicts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from regroup.events import (
    ConsumerStopped,
    Event,
    GenerationBumped,
    GroupEpochBumped,
    GroupStabilized,
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
from regroup.model import TopicPartition
from regroup.sim.invariants import IntervalSet

__all__ = ["MetricsAccumulator", "RunMetrics", "compute_metrics"]


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
            "records_produced": self.records_produced,
            "records_processed": self.records_processed,
            "window_start_ms": self.window_start_ms,
            "window_end_ms": self.window_end_ms,
            "idle_ms_by_partition": dict(self.idle_ms_by_partition),
            "violations": list(self.violations),
        }


@dataclass(slots=True)
class _Partition:
    serving: set[str] = field(default_factory=set)
    idle_since: int | None = None
    #: Closed idle intervals ``(start, end)``, clipped to the window at the end.
    idle: list[tuple[int, int]] = field(default_factory=list)


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
    """Feed events in log order (``observe``); ``result()`` gives the metrics."""

    def __init__(self) -> None:
        self.metrics = RunMetrics()
        #: Counters from the first ``scenario_step`` and from the first ``group_stabilized``.
        self._from_step: _Counts | None = None
        self._from_stable: _Counts | None = None
        self._open: list[_Counts] = []
        self._stable_at: int | None = None
        self._last_ts = 0
        self._ended: int | None = None
        self._partitions: dict[TopicPartition, _Partition] = {}
        self._owned: dict[str, set[TopicPartition]] = {}
        self._serving_by: dict[str, set[TopicPartition]] = {}
        self._identity: dict[str, str] = {}
        self._last_owner: dict[TopicPartition, str] = {}
        self._processed: dict[TopicPartition, IntervalSet] = {}
        self._ends: dict[TopicPartition, int] = {}
        self._lag = 0
        self._first_step: int | None = None
        self._last_step: int | None = None
        self._stable_after_last: int | None = None

    # -- feeding ----------------------------------------------------------------------------

    def observe(self, event: Event) -> None:
        ts = event.ts_ms
        if ts > self._last_ts:
            self._last_ts = ts
        m = self.metrics
        if isinstance(event, ScenarioStep) and self._from_step is None:
            self._from_step = _Counts(peak_lag=self._lag)
            self._open.append(self._from_step)
        elif isinstance(event, GroupStabilized) and self._from_stable is None:
            self._from_stable = _Counts(peak_lag=self._lag)
            self._open.append(self._from_stable)
        buckets = self._open
        if isinstance(event, RecordsProduced):
            m.records_produced += event.count
            previous = self._ends.get(event.partition, 0)
            self._ends[event.partition] = event.end_offset
            self._lag += event.end_offset - previous
            for b in buckets:
                if self._lag > b.peak_lag:
                    b.peak_lag = self._lag
        elif isinstance(event, RecordsProcessed):
            tp = event.partition
            m.records_processed += event.last_offset - event.first_offset + 1
            intervals = self._processed.get(tp)
            if intervals is None:
                intervals = self._processed[tp] = IntervalSet()
            before = intervals.high
            m.duplicates += intervals.add(event.first_offset, event.last_offset + 1)
            self._lag -= intervals.high - before
        elif isinstance(event, PartitionsAssigned):
            member = event.member_id
            owned = self._owned.setdefault(member, set())
            identity = self._identity.get(member, member)
            for tp in event.partitions:
                owned.add(tp)
                prior = self._last_owner.get(tp)
                if prior is not None and prior != identity:
                    for b in buckets:
                        b.partitions_moved += 1
                self._last_owner[tp] = identity
            for b in buckets:
                b.partitions_assigned += len(event.partitions)
        elif isinstance(event, PartitionsRestored):
            owned = self._owned.get(event.member_id, set())
            serving = self._serving_by.setdefault(event.member_id, set())
            for tp in event.partitions:
                if tp in owned:
                    serving.add(tp)
                    self._serve(tp, event.member_id, ts)
        elif isinstance(event, PartitionsRevoked | PartitionsLost):
            self._release(event.member_id, event.partitions, ts)
            for b in buckets:
                if isinstance(event, PartitionsRevoked):
                    b.partitions_revoked += len(event.partitions)
                else:
                    b.partitions_lost += len(event.partitions)
        elif isinstance(event, ConsumerStopped):
            if event.member_id:
                self._release(event.member_id, sorted(self._owned.get(event.member_id, ())), ts)
        elif isinstance(event, MemberJoined):
            if event.instance_id:
                self._identity[event.member_id] = event.instance_id
        elif isinstance(event, GenerationBumped):
            for b in buckets:
                b.generations += 1
                b.rebalances += 1
        elif isinstance(event, TargetAssignmentComputed):
            for b in buckets:
                b.rebalances += 1
        elif isinstance(event, GroupEpochBumped):
            for b in buckets:
                b.group_epochs += 1
        elif isinstance(event, GroupStabilized):
            if self._stable_at is None:
                self._stable_at = ts
            if (
                self._last_step is not None
                and self._stable_after_last is None
                and ts >= self._last_step
            ):
                self._stable_after_last = ts
        elif isinstance(event, ScenarioStep):
            if self._first_step is None:
                self._first_step = ts
            self._last_step = ts
            self._stable_after_last = None
            self._add_topics(event.topics, ts)
        elif isinstance(event, SimulationStarted):
            self._add_topics(event.topics, ts)
        elif isinstance(event, SimulationEnded):
            self._ended = ts
        elif isinstance(event, InvariantViolated):
            m.violations.append(event.to_dict())

    def result(self) -> RunMetrics:
        """The metrics of everything observed so far (the window closes at the end)."""
        m = self.metrics
        end = self._ended if self._ended is not None else self._last_ts
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
        by_partition: dict[str, int] = {}
        for tp, state in self._partitions.items():
            spans = list(state.idle)
            if state.idle_since is not None:
                spans.append((state.idle_since, end))
            idle = 0
            for since, until in spans:
                length = min(until, end) - max(since, start)
                if length > 0:
                    idle += length
                    longest = max(longest, length)
            if idle > 0:
                paused += 1
            total += idle
            by_partition[f"{tp.topic}-{tp.partition}"] = idle
        m.idle_partition_seconds = round(total / 1000.0, 3)
        m.max_partition_pause_ms = longest
        m.paused_partitions = paused
        m.idle_ms_by_partition = by_partition
        if self._first_step is not None and self._stable_after_last is not None:
            m.time_to_stable_ms = self._stable_after_last - self._first_step
        else:
            m.time_to_stable_ms = None
        return m

    # -- helpers ----------------------------------------------------------------------------

    def _add_topics(self, topics: Any, ts: int) -> None:
        for topic in sorted(topics):
            for partition in range(int(topics[topic])):
                tp = TopicPartition(topic, partition)
                if tp not in self._partitions:
                    state = _Partition()
                    state.idle_since = ts
                    self._partitions[tp] = state

    def _serve(self, tp: TopicPartition, member: str, ts: int) -> None:
        state = self._partitions.get(tp)
        if state is None:
            state = self._partitions[tp] = _Partition()
        if not state.serving and state.idle_since is not None:
            self._close_idle(state, ts)
        state.serving.add(member)

    def _release(self, member: str, partitions: Iterable[TopicPartition], ts: int) -> None:
        owned = self._owned.get(member)
        serving = self._serving_by.get(member)
        for tp in partitions:
            if owned is not None:
                owned.discard(tp)
            if serving is not None:
                serving.discard(tp)
            state = self._partitions.get(tp)
            if state is None or member not in state.serving:
                continue
            state.serving.discard(member)
            if not state.serving:
                state.idle_since = ts

    def _close_idle(self, state: _Partition, ts: int) -> None:
        since = state.idle_since
        state.idle_since = None
        if since is not None and ts > since:
            state.idle.append((since, ts))


def compute_metrics(events: Iterable[Event]) -> RunMetrics:
    """The metrics of a whole event log."""
    accumulator = MetricsAccumulator()
    for event in events:
        accumulator.observe(event)
    return accumulator.result()
