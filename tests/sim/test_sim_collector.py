"""The collector tuning of a run is scoped to the run (regroup.sim.collector)."""

from __future__ import annotations

import gc

import pytest

from regroup.sim.collector import RUN_THRESHOLDS, tuned_collector
from regroup.sim.scenario import builtin_scenario
from regroup.sim.simulation import Settings, Simulation


def test_thresholds_apply_inside_and_are_restored_after() -> None:
    before = gc.get_threshold()
    with tuned_collector():
        assert gc.get_threshold() == RUN_THRESHOLDS
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before


def test_thresholds_are_restored_when_the_run_fails() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), tuned_collector():
        raise RuntimeError("boom")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_simulation_leaves_the_collector_as_it_found_it() -> None:
    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []
    Simulation(Settings(builtin_scenario("steady"), protocol="eager")).run(
        lambda now, end: seen.append(gc.get_threshold())
    )
    assert RUN_THRESHOLDS in seen
    assert gc.get_threshold() == before
