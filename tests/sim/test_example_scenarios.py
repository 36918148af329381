"""The scenario files in ``examples/scenarios`` load and run as their comments say.

They are the user's starting point for writing scenarios (the format is
documented in ``regroup.sim.scenario``), so each runs under every protocol it
lists, without an invariant violation, and the claim the stateful example makes
in its header is checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from regroup.events import PartitionsRestored
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


def test_static_members_still_restore_after_their_restart_as_the_example_says() -> None:
    """The example's comment and the model agree: a static member
    keeps its partitions through the restart, and its new process restores them (an
    instance whose state does not survive the restart): 8 s down + 20 s restore each."""
    scenario = load_scenario(str(EXAMPLES / "stateful-rolling-bounce.toml"))
    static = run_simulation(Settings(scenario, protocol="cooperative", static=True))
    restores_after_the_bounce = [
        e for e in static.events if isinstance(e, PartitionsRestored) and e.ts_ms > 60_000
    ]
    assert {e.restore_ms for e in restores_after_the_bounce} == {20_000}
    assert sum(len(e.partitions) for e in restores_after_the_bounce) == 24
    assert static.metrics.max_partition_pause_ms >= 8_000 + 20_000
    assert static.metrics.partitions_moved == 0 and static.metrics.rebalances == 0
