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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from regroup.events import Event
from regroup.sim.invariants import InvariantChecker
from regroup.sim.metrics import MetricsAccumulator

__all__ = ["Journal"]


class Journal:
    """The run's event sink (see the module docstring)."""

    __slots__ = ("_hooks", "_taps", "checker", "events", "keep_events", "metrics")

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
