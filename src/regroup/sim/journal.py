"""Where a run's events go: the metrics, the log, the invariant checker, and a few watchers.

Every part of a run publishes through one callable, ``Journal.emit`` (handed
to them in the run's context). Each event goes, in this order, to the
metrics accumulator, to the log (if the run keeps its events), and to the
invariant checker, whose violations are events too (metrics and log, right
after the event that caused them); then to the hook registered for its kind,
if any: that is how the stability watch learns that the group may have
changed without anyone calling it (``StabilityWatch.event_hooks``).

The order is part of the event-log contract: a violation follows its cause,
and a hook runs once the event is recorded. ``taps`` (``Simulation(taps=...)``)
see every event right after the log does, violations included: a writer that
streams the run out as it goes (``broker_log``: Kafka's broker log) needs no
kept log.

Records are published in aggregate (``records_produced``, ``records_processed``):
the metrics and the invariant checker are given a tick's production as one total
and a consumer's batch as its chunks, with no event object per partition, so a
run that keeps no log spends nothing per record event. A run that keeps its log
(or has taps) still gets every partition's ``records_produced`` /
``records_processed`` event, in the same order and place as if each had been
emitted: the observers emit nothing in between except a chunk's violations,
which still follow that chunk's event.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from regroup.events import Event, RecordsProcessed
from regroup.model import TopicPartition
from regroup.sim.invariants import InvariantChecker
from regroup.sim.metrics import MetricsAccumulator

__all__ = ["Journal"]


class Journal:
    """The run's event sink (see the module docstring)."""

    __slots__ = ("_hooks", "_taps", "checker", "events", "keep_events", "logging", "metrics")

    def __init__(
        self,
        metrics: MetricsAccumulator,
        checker: InvariantChecker,
        *,
        keep_events: bool,
        hooks: Mapping[type, Callable[[], None]],
        taps: Sequence[Callable[[Event], None]] = (),
    ) -> None:
        self.metrics = metrics
        self.checker = checker
        self.keep_events = keep_events
        #: The log (empty unless ``keep_events``).
        self.events: list[Event] = []
        #: Event class -> what to call after such an event (exact class, no subclasses).
        self._hooks: dict[type, Callable[[], None]] = dict(hooks)
        self._taps = tuple(taps)
        #: Whether anyone reads the events themselves (the log or a tap).
        self.logging = keep_events or bool(self._taps)

    def emit(self, event: Event) -> None:
        """Publish one event: metrics, log, invariant checks (and their violations), hook."""
        self.metrics.observe(event)
        if self.keep_events:
            self.events.append(event)
        for tap in self._taps:
            tap(event)
        violations = self.checker.observe(event)
        if violations:
            for violation in violations:
                self.record(violation)
        hook = self._hooks.get(type(event))
        if hook is not None:
            hook()

    def record(self, event: Event) -> None:
        """Metrics, log and taps only: an invariant violation, which is not checked again."""
        self.metrics.observe(event)
        if self.keep_events:
            self.events.append(event)
        for tap in self._taps:
            tap(event)

    def log(self, event: Event) -> None:
        """The log and taps only: an event whose effect the observers get in aggregate."""
        if self.keep_events:
            self.events.append(event)
        for tap in self._taps:
            tap(event)

    def records_produced(self, ts_ms: int, count: int) -> None:
        """A produce tick's ``count`` records over all partitions (their log events, if the
        run logs, went to ``log`` just before)."""
        self.metrics.observe_produced(ts_ms, count)

    def records_processed(
        self,
        ts_ms: int,
        group_id: str,
        member_id: str,
        chunks: Sequence[tuple[TopicPartition, int, int]],
    ) -> None:
        """A batch's chunks ``(partition, first_offset, last_offset)``, in partition order:
        as one ``records_processed`` event per chunk would be (metrics, log, checks)."""
        self.metrics.observe_processed(ts_ms, chunks)
        if not self.logging:
            # No log to place them in: the batch's violations follow it (metrics only).
            found = self.checker.check_processed_batch(ts_ms, group_id, member_id, chunks)
            for each in found:
                self.record(each)
            return
        check = self.checker.check_processed
        for tp, first, last in chunks:
            self.log(
                RecordsProcessed(
                    ts_ms=ts_ms,
                    group_id=group_id,
                    member_id=member_id,
                    partition=tp,
                    first_offset=first,
                    last_offset=last,
                )
            )
            chunk_violation = check(ts_ms, group_id, member_id, tp, first, last)
            if chunk_violation is not None:
                self.record(chunk_violation)
