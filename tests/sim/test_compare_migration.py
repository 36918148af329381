"""Migrating a classic group to KIP-848 against staying classic (``regroup.sim.migration``).

The phases' numbers are checked against the runs themselves: each phase is
measured again from the kept event log, cut by hand, and the phases add up to
the whole run where the definitions are additive.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any

import pytest

from regroup.events import ConsumerStarted, Event, ScenarioStep, SimulationEnded
from regroup.sim.decision import Spread, rank
from regroup.sim.metrics import compute_metrics
from regroup.sim.migration import (
    MIGRATION_AT_MS,
    SETTLE_MS,
    MigrationComparison,
    MigrationError,
    compare_migration,
    plan_migration,
)
from regroup.sim.scenario import Action, builtin_scenario
from regroup.sim.simulation import RunResult, Settings, Simulation

SIZE: dict[str, Any] = {"members": 3, "partitions": 6}
#: The counters that add up over adjacent windows (each counts events inside its window).
ADDITIVE = ("rebalances", "partitions_assigned", "partitions_revoked", "partitions_moved")


@pytest.fixture(scope="module", params=["cooperative", "eager"])
def bounce(request: pytest.FixtureRequest) -> MigrationComparison:
    scenario = builtin_scenario("rolling-bounce")
    return compare_migration(scenario, request.param, seeds=2, sensitivity=False, **SIZE)


def _run(comparison: MigrationComparison, option: str, seed: int = 0) -> RunResult:
    plan = comparison.plan
    scenario = plan.migrate if option == "consumer" else plan.stay
    return Simulation(Settings(scenario, protocol=plan.from_protocol, seed=seed, **SIZE)).run()


def _before(events: list[Event], cut: int) -> list[Event]:
    """The log up to the cut, ended there."""
    kept = [e for e in events if e.ts_ms < cut and not isinstance(e, SimulationEnded)]
    return [*kept, SimulationEnded(ts_ms=cut, group_id=events[0].group_id)]


def _after(events: list[Event], cut: int) -> list[Event]:
    """The log without the migration's steps: its window opens at the scenario's first."""
    return [e for e in events if not (isinstance(e, ScenarioStep) and e.ts_ms < cut)]


@pytest.mark.parametrize("which", ["stay", "consumer"])
def test_each_phase_is_the_runs_own_log_measured_in_that_window(
    bounce: MigrationComparison, which: str
) -> None:
    option = bounce.from_protocol if which == "stay" else which
    result = _run(bounce, option)
    cut = bounce.plan.cut_ms
    during = compute_metrics(_before(result.events, cut)).to_json()
    after = compute_metrics(_after(result.events, cut)).to_json()
    for key in ("duplicates", "records_produced", "records_processed"):
        after[key] -= during[key]
    assert bounce.during.protocols[option].runs[0] == during
    assert bounce.after.protocols[option].runs[0] == after
    assert bounce.whole[option][0] == result.metrics.to_json()
    assert result.metrics.violations == []
    # The windows: the migration from its first step to the cut; afterwards from the
    # scenario's own first step (its 30 s, counted from the cut) to the end.
    assert (during["window_start_ms"], during["window_end_ms"]) == (MIGRATION_AT_MS, cut)
    assert after["window_start_ms"] == cut + 30000
    assert after["window_end_ms"] == result.duration_ms


@pytest.mark.parametrize("which", ["stay", "consumer"])
def test_the_phases_add_up_to_the_whole_run_and_the_group_settles_before_the_cut(
    bounce: MigrationComparison, which: str
) -> None:
    option = bounce.from_protocol if which == "stay" else which
    for seed in (0, 1):
        during = bounce.during.protocols[option].runs[seed]
        after = bounce.after.protocols[option].runs[seed]
        whole = bounce.whole[option][seed]
        assert during["time_to_stable_ms"] is not None  # healed before the cut
        for key in ADDITIVE:
            assert during[key] + after[key] == whole[key], key
        idle = during["idle_partition_seconds"] + after["idle_partition_seconds"]
        assert idle == pytest.approx(whole["idle_partition_seconds"], abs=0.002)
        assert during["duplicates"] + after["duplicates"] == whole["duplicates"]


def test_after_the_migration_the_group_is_a_consumer_group_and_staying_is_not(
    bounce: MigrationComparison,
) -> None:
    migrated = bounce.after.protocols["consumer"].runs[0]
    stayed = bounce.after.protocols[bounce.from_protocol].runs[0]
    assert migrated["generations"] == 0 and migrated["group_epochs"] > 0
    assert stayed["group_epochs"] == 0 and stayed["generations"] > 0
    # During the migration the group changes type: classic generations, then epochs.
    during = bounce.during.protocols["consumer"].runs[0]
    assert during["generations"] > 0 and during["group_epochs"] > 0


def test_the_decision_is_the_tie_rule_over_the_after_phase(bounce: MigrationComparison) -> None:
    decision = bounce.to_json()["decision"]
    spreads = {}
    for option, runs in bounce.after.protocols.items():
        values = [run["idle_partition_seconds"] for run in runs.runs]
        spreads[option] = Spread(statistics.median(values), min(values), max(values))
    ranking = rank(spreads)
    assert decision["phase"] == "after"
    assert decision["winner"] == ranking.winner and decision["tie"] == ranking.tie
    assert ranking.ratio is not None and decision["ratio"] == round(ranking.ratio, 2)
    assert bounce.verdict.split(" (")[0] in (
        "tie",
        f"staying {bounce.from_protocol} wins",
        "migrating to KIP-848 wins",
    )


def test_break_even_is_the_extra_migration_cost_over_what_each_run_saves(
    bounce: MigrationComparison,
) -> None:
    def median(phase: Any, option: str) -> float:
        return float(phase.protocols[option].summary("idle_partition_seconds").median)

    source = bounce.from_protocol
    extra = median(bounce.during, "consumer") - median(bounce.during, source)
    saved = median(bounce.after, source) - median(bounce.after, "consumer")
    even = bounce.break_even()
    if extra <= 0:
        assert even == 0
    elif saved <= 0:
        assert even is None
    else:
        assert even is not None and (even - 1) * saved < extra <= even * saved


def test_an_eager_group_migrates_and_members_started_afterwards_use_kip_848() -> None:
    scenario = builtin_scenario("scale-out")
    plan = plan_migration(scenario, "eager", members=3)
    result = Simulation(Settings(plan.migrate, protocol="eager", partitions=6)).run()
    assert result.metrics.violations == []
    started = [e for e in result.events if isinstance(e, ConsumerStarted)]
    # Three classic members, their three KIP-848 restarts, then scale-out's new member.
    assert [e.group_protocol for e in started] == ["classic"] * 3 + ["consumer"] * 4
    assert started[-1].ts_ms == plan.cut_ms + 30000
    stay = Simulation(Settings(plan.stay, protocol="eager", partitions=6)).run()
    assert {e.group_protocol for e in stay.events if isinstance(e, ConsumerStarted)} == {"classic"}


def test_a_scenario_that_migrates_itself_is_the_migration_and_its_stay_run_is_classic() -> None:
    scenario = builtin_scenario("upgrade-to-consumer")
    plan = plan_migration(scenario, "cooperative", members=3)
    assert plan.own and plan.migrate == replace(scenario, members=3)
    assert all("group.protocol" not in a.config for a in plan.stay.actions)
    assert plan.cut_ms == MIGRATION_AT_MS + 2 * 10000 + 2000 + SETTLE_MS
    comparison = compare_migration(scenario, "cooperative", seeds=1, sensitivity=False, **SIZE)
    data = comparison.to_json()
    assert data["decision"]["phase"] == "migration"
    assert data["migration"]["scenario_is_migration"] is True
    assert data["migration"]["break_even"] is None
    during = comparison.during.protocols
    # The same restart: the migration's KIP-848 side has epochs, the stay run has none.
    assert during["consumer"].runs[0]["group_epochs"] > 0
    assert during["cooperative"].runs[0]["group_epochs"] == 0


def test_a_migrating_scenario_that_adds_partitions_during_the_migration_is_refused() -> None:
    scenario = builtin_scenario("upgrade-to-consumer")
    grow = Action("add_partitions", at_ms=40000, topic="events")
    with pytest.raises(MigrationError, match="adds partitions during its migration"):
        plan_migration(replace(scenario, actions=(*scenario.actions, grow)), "cooperative")


@pytest.mark.parametrize(
    ("name", "source", "configs", "members", "message"),
    [
        ("upgrade-double-bounce", "cooperative", {}, 3, "cannot run after a migration"),
        ("rolling-bounce", "consumer", {}, 3, "--from must be eager or cooperative"),
        (
            "rolling-bounce",
            "cooperative",
            {"group.consumer.migration.policy": "DOWNGRADE"},
            3,
            "refuses the online upgrade",
        ),
        ("rolling-bounce", "eager", {"group.consumer.max.size": "2"}, 3, "exceed"),
        ("rolling-bounce", "eager", {"group.protocol": "consumer"}, 3, "contradicts --from"),
        ("rolling-bounce", "eager", {}, 0, "a migration needs members"),
    ],
)
def test_combinations_kafka_or_the_frame_cannot_run_are_refused(
    name: str, source: str, configs: dict[str, str], members: int, message: str
) -> None:
    with pytest.raises(MigrationError, match=message):
        plan_migration(builtin_scenario(name), source, members=members, configs=configs)
