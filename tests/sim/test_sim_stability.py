"""regroup.sim.stability: ``group_stabilized`` is evaluated once after every step of the loop.

The golden logs pin where it lands in every built-in scenario. This pins the one case
they do not reach, where the placement after *every* step (rather than after the steps
that used to call the check by hand) decides the time: a step with no request, delivery
or timer in it (a rolling bounce's crash) makes the group stable.
"""

from __future__ import annotations

import pytest

from regroup.events import GroupStabilized, ScenarioStep
from regroup.sim.network import NetworkConfig
from regroup.sim.scenario import Action, DataConfig, Scenario
from regroup.sim.simulation import Settings, run_simulation


@pytest.mark.parametrize("protocol", ["eager", "cooperative", "consumer"])
def test_group_stabilized_follows_the_step_that_made_the_group_stable(protocol: str) -> None:
    # A fourth member starts at 60 000 ms; a rolling bounce crashes it at 60 010 ms, before
    # its first request reaches the coordinator (400 ms of latency). The three members left
    # are exactly the coordinator's group, so the group is stable again after that step:
    # group_stabilized carries its time and comes right after its events.
    scenario = Scenario(
        "crash-before-join",
        members=3,
        duration_ms=90_000,
        network=NetworkConfig(latency_ms=400),
        data=DataConfig(records_per_second=0),
        actions=(
            Action("start", at_ms=60_000),
            Action("rolling_bounce", at_ms=60_010, members=(3,), crash=True, gap_ms=0),
        ),
    )
    result = run_simulation(Settings(scenario, protocol=protocol))
    events = result.events
    crash = next(
        i for i, e in enumerate(events) if isinstance(e, ScenarioStep) and e.action == "crash"
    )
    after = [e for e in events[crash:] if isinstance(e, GroupStabilized)]
    assert after and after[0].ts_ms == events[crash].ts_ms == 60_010
    assert after[0].members == 3
