"""``--members N`` resizes the scenario itself, not only the initial group.

A built-in rolling bounce is written for its own member count; run with more
members, every member must still be bounced and the run must last until the
last one is back and the group has settled (regroup.sim.settings.plan_run).
"""

from __future__ import annotations

import pytest

from regroup.events import ScenarioStep, SimulationEnded
from regroup.sim.scenario import builtin_scenario
from regroup.sim.simulation import Settings, Simulation


@pytest.mark.parametrize("members", [2, 9])
def test_a_rolling_bounce_restarts_every_member_of_a_resized_group(members: int) -> None:
    scenario = builtin_scenario("rolling-bounce")
    assert scenario.members != members
    result = Simulation(Settings(scenario, protocol="eager", members=members)).run()
    started_again = {
        e.client_id
        for e in result.events
        if isinstance(e, ScenarioStep) and e.action == "start" and e.ts_ms > 0
    }
    assert len(started_again) == members
    last_start = max(
        e.ts_ms for e in result.events if isinstance(e, ScenarioStep) and e.action == "start"
    )
    (end,) = (e.ts_ms for e in result.events if isinstance(e, SimulationEnded))
    assert end >= last_start + scenario.settle_ms
