"""The scenario files in ``examples/scenarios`` load and run as their comments say.

They are the user's starting point for writing scenarios (the format is
documented in ``regroup.sim.scenario``), so each runs under every protocol it
lists, without an invariant violation, and the claim the stateful example makes
in its header is checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from regroup.sim.scenario import load_scenario
from regroup.sim.simulation import Settings, run_simulation

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
FILES = sorted(p for p in EXAMPLES.iterdir() if p.suffix in (".toml", ".json"))


def test_there_are_examples_in_both_formats() -> None:
    assert {p.suffix for p in FILES} == {".toml", ".json"}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_each_example_runs_under_each_of_its_protocols(path: Path) -> None:
    scenario = load_scenario(str(path))
    assert scenario.name == path.stem
    for protocol in scenario.protocols:
        result = run_simulation(Settings(scenario, protocol=protocol), keep_events=False)
        assert result.metrics.violations == [], (path.name, protocol)
        assert result.metrics.rebalances > 0, (path.name, protocol)
        assert not any(result.consumer_errors.values()), (path.name, protocol)


def test_static_members_bounced_within_the_session_timeout_move_nothing() -> None:
    scenario = load_scenario(str(EXAMPLES / "stateful-rolling-bounce.toml"))
    dynamic = run_simulation(Settings(scenario, protocol="cooperative"), keep_events=False)
    static = run_simulation(
        Settings(scenario, protocol="cooperative", static=True), keep_events=False
    )
    assert static.metrics.partitions_moved == 0
    assert dynamic.metrics.partitions_moved > 0
    assert static.metrics.idle_partition_seconds < dynamic.metrics.idle_partition_seconds
