"""regroup.sim.journal: every event to the metrics, the log and the checker, then its hook."""

from __future__ import annotations

from collections.abc import Callable

from regroup.events import Event, ScenarioStep, SimulationEnded, SimulationStarted
from regroup.sim.invariants import InvariantChecker
from regroup.sim.journal import Journal
from regroup.sim.metrics import MetricsAccumulator


def _journal(keep_events: bool, hooks: dict[type, Callable[[], None]]) -> Journal:
    return Journal(MetricsAccumulator(), InvariantChecker(), keep_events=keep_events, hooks=hooks)


def _start() -> SimulationStarted:
    return SimulationStarted(
        ts_ms=0,
        group_id="g",
        scenario="s",
        group_protocol="classic",
        rebalance_protocol="eager",
        assignor="range",
        seed=0,
        topics={"t": 1},
    )


def test_a_hook_runs_after_its_event_is_recorded_and_only_for_its_exact_kind() -> None:
    logged_at_hook: list[list[Event]] = []
    journal: Journal

    def hook() -> None:
        logged_at_hook.append(list(journal.events))

    journal = _journal(True, {ScenarioStep: hook})
    step = ScenarioStep(ts_ms=1, group_id="g", action="slow", client_id="c00")
    journal.emit(_start())
    journal.emit(step)
    journal.emit(SimulationEnded(ts_ms=2, group_id="g"))
    assert len(logged_at_hook) == 1
    assert logged_at_hook[0][-1] is step  # the hook sees its event in the log
    assert [e.kind for e in journal.events] == [
        "simulation_started",
        "scenario_step",
        "simulation_ended",
    ]


def test_without_keep_events_the_log_stays_empty_and_hooks_still_run() -> None:
    calls: list[str] = []
    journal = _journal(False, {ScenarioStep: lambda: calls.append("hook")})
    journal.emit(_start())
    journal.emit(ScenarioStep(ts_ms=1, group_id="g", action="slow"))
    assert journal.events == [] and calls == ["hook"]
