"""The fault-schedule soak: schedules, determinism, the new faults, the minimiser, the CLI.

CI runs a bounded sample here (a few hundred small seeds over the three
protocols, each with a tight group size); ``regroup soak`` runs the big ones.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.cli.main import main
from regroup.events import InvariantViolated, MemberLeft, RebalanceStarted, ScenarioStep
from regroup.model import TopicPartition
from regroup.sim.network import Network, NetworkConfig
from regroup.sim.scenario import PROTOCOLS, Action, Scenario, ScenarioError, parse_scenario
from regroup.sim.settings import Settings
from regroup.sim.simulation import Simulation
from regroup.sim.soak.check import SeedOutcome, Violation, classify_reports, run_scenario
from regroup.sim.soak.files import scenario_to_data, write_scenario
from regroup.sim.soak.minimise import minimise
from regroup.sim.soak.schedule import (
    CONSUMER_ZERO_TIMEOUT_CONFIG,
    FAULT_WINDOW_MS,
    FIRST_FAULT_MS,
    SETTLE_MS,
    ZERO_TIMEOUT_CONFIG,
    Limits,
    draw_scenario,
)

SMALL = Limits(max_members=4, max_partitions=8, max_actions=5)


def _same(a: SeedOutcome, b: SeedOutcome) -> bool:
    return (a.violations, a.faults, a.virtual_ms, a.steps, a.duplicated) == (
        b.violations,
        b.faults,
        b.virtual_ms,
        b.steps,
        b.duplicated,
    )


# -- schedules -----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    protocol=st.sampled_from(PROTOCOLS),
    seed=st.integers(0, 2**40),
    max_members=st.integers(1, 50),
    max_partitions=st.integers(1, 500),
    max_actions=st.integers(0, 10),
)
def test_a_drawn_schedule_stays_within_its_limits_and_parses_back(
    protocol: str, seed: int, max_members: int, max_partitions: int, max_actions: int
) -> None:
    limits = Limits(max_members, max_partitions, max_actions)
    scenario = draw_scenario(protocol, seed, limits)
    assert scenario == draw_scenario(protocol, seed, limits)  # the seed alone decides
    assert 1 <= scenario.members <= max_members
    started = sum(a.count for a in scenario.actions if a.action == "start")
    assert scenario.members + started <= max_members
    added = sum(a.count for a in scenario.actions if a.action == "add_partitions")
    assert sum(scenario.topics.values()) >= 1 and sum(scenario.topics.values()) + added <= (
        max_partitions
    )
    assert all(a.count >= 1 for a in scenario.actions if a.action == "add_partitions")
    assert len(scenario.actions) <= max_actions
    assert all(FIRST_FAULT_MS <= (a.at_ms or 0) < FAULT_WINDOW_MS for a in scenario.actions)
    assert scenario.protocols == (protocol,)
    ends = [FIRST_FAULT_MS] + [
        start + a.span_ms(scenario.members + started) for start, a in scenario.timed_actions()
    ]
    assert scenario.network.until_ms == max(ends)
    assert scenario.duration_ms == max(ends) + SETTLE_MS
    # A schedule is an ordinary scenario file.
    assert parse_scenario(json.loads(json.dumps(scenario_to_data(scenario)))) == scenario


def test_sizes_are_skewed_toward_small_groups() -> None:
    sizes = [draw_scenario("eager", seed).members for seed in range(400)]
    assert sum(1 for s in sizes if s <= 10) > 0.6 * len(sizes)
    assert max(sizes) > 25  # and some are large


# -- the sample CI runs --------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_sample_of_small_seeds_has_no_violation(protocol: str) -> None:
    # 100 seeds per protocol, groups up to 6 x 16: about 3 s of CPU each.
    limits = Limits(max_members=6, max_partitions=16, max_actions=6)
    for seed in range(100):
        outcome = run_scenario(draw_scenario(protocol, seed, limits), protocol, seed)
        assert outcome.violations == [], (protocol, seed, outcome.violations)


def test_the_same_seed_gives_the_same_schedule_and_result() -> None:
    for protocol in PROTOCOLS:
        scenario = draw_scenario(protocol, 7, SMALL)
        first = run_scenario(scenario, protocol, 7)
        again = run_scenario(draw_scenario(protocol, 7, SMALL), protocol, 7)
        assert _same(first, again)


# -- the new faults ------------------------------------------------------------------------


def _failover(protocol: str, **extra: Any) -> Scenario:
    actions = (
        Action("start", at_ms=20000, count=1),
        Action("coordinator_restart", at_ms=20002, downtime_ms=3000),
    )
    return Scenario(
        "failover",
        members=3,
        topics={"events": 6},
        duration_ms=90000,
        consumer={"enable.auto.commit": True},
        actions=actions,
        **extra,
    )


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_coordinator_failover_mid_rebalance_replays_and_the_group_settles(
    protocol: str,
) -> None:
    sim = Simulation(Settings(_failover(protocol), protocol=protocol, seed=1))
    first = sim.coordinator
    before: dict[TopicPartition, int] = {}

    def snapshot() -> None:
        for tp, offset in first.offsets.group_offsets("sim-group").items():
            before[tp] = offset.offset

    sim.world.at(20002, snapshot)  # the failover's millisecond, before it
    result = sim.run()
    assert sim.coordinator is not first and sim.coordinator_restarts == 1
    steps = [e for e in result.events if isinstance(e, ScenarioStep)]
    loaded = [s for s in steps if s.action == "coordinator_loaded"]
    assert [s.ts_ms for s in loaded] == [23002]
    assert int(loaded[0].detail.split()[0]) > 0  # records were replayed
    # Nothing reached a coordinator while none was loaded.
    quiet = [
        e
        for e in result.events
        if 20002 < e.ts_ms < 23002 and e.kind in ("member_joined", "offsets_committed")
    ]
    assert quiet == []
    # Every offset committed before the failover is in the new coordinator, none older.
    after = sim.coordinator.offsets.group_offsets("sim-group")
    assert before and set(before) <= set(after)
    assert all(after[tp].offset >= offset for tp, offset in before.items())
    assert len([c for c in sim.consumers if c.alive]) == 4
    outcome = run_scenario(_failover(protocol), protocol, 1)
    assert outcome.violations == [] and outcome.coordinator_restarts == 1


def test_a_second_failover_while_loading_supersedes_the_first() -> None:
    scenario = Scenario(
        "double-failover",
        members=2,
        duration_ms=80000,
        actions=(
            Action("coordinator_restart", at_ms=20000, downtime_ms=5000),
            Action("coordinator_restart", at_ms=22000, downtime_ms=1000),
        ),
    )
    for protocol in PROTOCOLS:
        outcome = run_scenario(scenario, protocol, 3)
        assert outcome.violations == [] and outcome.coordinator_restarts == 2


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_duplicated_messages_are_handled_and_the_group_settles(protocol: str) -> None:
    scenario = Scenario(
        "duplicates",
        members=4,
        static=protocol != "consumer",
        topics={"events": 8},
        duration_ms=120000,
        network=NetworkConfig(latency_ms=2, duplicate=0.3, until_ms=40000),
        actions=(
            Action("restart", at_ms=15000, members=(1,), downtime_ms=1000),
            Action("start", at_ms=25000),
        ),
    )
    outcome = run_scenario(scenario, protocol, 5)
    assert outcome.duplicated > 20
    assert outcome.violations == []


def test_a_network_without_duplication_draws_nothing() -> None:
    class Refuses(random.Random):
        def random(self) -> float:
            raise AssertionError("drew a random number")

    network = Network(NetworkConfig(latency_ms=3), Refuses())
    assert network.transit("a", "b", 10) == 13
    assert network.copy(10) is False
    flaky = Network(NetworkConfig(duplicate=0.5, loss=0.5, jitter_ms=9, until_ms=100), Refuses())
    assert flaky.transit("a", "b", 100) == 101  # healed: no draw after until_ms
    assert flaky.copy(100) is False


def test_the_new_scenario_keys_are_validated() -> None:
    base = {"name": "x"}
    with pytest.raises(ScenarioError, match="duplicate"):
        parse_scenario({**base, "network": {"duplicate": 1.5}})
    with pytest.raises(ScenarioError, match="until_ms"):
        parse_scenario({**base, "network": {"until_ms": -1}})
    restart = parse_scenario(
        {**base, "actions": [{"action": "coordinator_restart", "at_ms": 5, "downtime_ms": 7}]}
    )
    assert restart.actions[0].span_ms(3) == 7


# -- the minimiser -------------------------------------------------------------------------


def _restarted_during_failover(sim: Simulation) -> list[Violation]:
    """Test-only invariant: fails when a member was restarted and the coordinator failed over."""
    restarted = any(c.incarnation > 1 for c in sim.consumers)
    if restarted and sim.coordinator_restarts:
        return [Violation("test_only", sim.world.now_ms, "restart and failover")]
    return []


def test_the_minimiser_keeps_only_what_the_failure_needs() -> None:
    noisy = Scenario(
        "noisy",
        members=4,
        topics={"events": 6, "orders": 3},
        network=NetworkConfig(latency_ms=1, jitter_ms=5, duplicate=0.05, until_ms=40000),
        duration_ms=130000,
        actions=(
            Action("slow", at_ms=6000, members=(1,), duration_ms=2000),
            Action("restart", at_ms=8000, members=(0,), downtime_ms=1000),
            Action("cut", at_ms=9000, members=(2,), duration_ms=2000),
            Action("add_partitions", at_ms=12000, count=2, topic="events"),
            Action("coordinator_restart", at_ms=15000, downtime_ms=500),
            Action("enforce_rebalance", at_ms=20000, members=(3,)),
        ),
    )

    def check(scenario: Scenario) -> set[str]:
        outcome = run_scenario(
            scenario, "cooperative", 2, extra_checks=(_restarted_during_failover,)
        )
        return set(outcome.invariants) | {v.invariant for v in outcome.violations}

    assert "test_only" in check(noisy)
    result = minimise(noisy, "test_only", check, max_runs=80)
    kinds = sorted(a.action for a in result.scenario.actions)
    assert kinds == ["coordinator_restart", "restart"]
    assert result.scenario.members == 1
    assert all(n == 1 for n in result.scenario.topics.values())
    assert result.scenario.network.duplicate == 0 and result.scenario.network.jitter_ms == 0
    assert "test_only" in check(result.scenario)  # still fails
    assert result.runs <= 80


def test_a_minimised_scenario_is_written_as_a_scenario_file(tmp_path: Path) -> None:
    scenario = draw_scenario("consumer", 11, SMALL)
    path = write_scenario(scenario, tmp_path / "kept" / "consumer-seed11-x.json")
    assert parse_scenario(json.loads(path.read_text())) == scenario


# -- the command ---------------------------------------------------------------------------


def test_soak_command_reports_figures(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "soak",
            "--protocol",
            "all",
            "--seeds",
            "2",
            "--max-members",
            "3",
            "--max-partitions",
            "4",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["seeds"] == 6 and out["violations"] == 0
    assert set(out["protocols"]) == set(PROTOCOLS)
    assert out["seeds_per_s"] > 0 and out["virtual_s"] > 0
    assert sum(out["faults"].values()) > 0


@pytest.mark.parametrize(
    "argv",
    [
        ["soak", "--seeds", "0"],
        ["soak", "--seeds", "1", "--max-members", "0"],
        ["soak", "--seeds", "1", "--max-partitions", "0"],
        ["soak", "--seeds", "1", "--first-seed", "-1"],
        ["soak", "--seeds", "1", "--master", "local[1]"],
    ],
)
def test_soak_command_refuses_bad_arguments_in_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("regroup soak: error:")


def test_soak_command_exits_1_and_keeps_the_minimised_failure(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import regroup.sim.soak.check as check

    real = check.run_scenario

    def with_test_invariant(scenario: Scenario, protocol: str, seed: int) -> SeedOutcome:
        return real(scenario, protocol, seed, extra_checks=(_restarted_during_failover,))

    monkeypatch.setattr(check, "run_scenario", with_test_invariant)
    # Seeds of this size whose schedule has a restart and a failover fail the test invariant.
    seeds = [
        s
        for s in range(40)
        if {"coordinator_restart", "restart"}
        <= {a.action for a in draw_scenario("eager", s, Limits(3, 4)).actions}
    ]
    assert seeds
    argv = ["soak", "--protocol", "eager", "--seeds", "1", "--first-seed", str(seeds[0])]
    argv += ["--max-members", "3", "--max-partitions", "4", "--minimise-runs", "30"]
    code = main([*argv, "--keep", str(tmp_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert out["violations"] >= 1 and out["failures"][0]["seed"] == seeds[0]
    kept = out["minimised"][0]
    assert kept["invariant"] == "test_only"
    path = Path(kept["path"])
    assert path.name == f"eager-seed{seeds[0]}-test_only.json"
    minimised = parse_scenario(json.loads(path.read_text()))
    # 1-minimal: the failover and one action that restarts a member, nothing else.
    kinds = sorted(a.action for a in minimised.actions)
    assert len(kinds) == 2 and kinds[0] == "coordinator_restart"
    assert kinds[1] in ("restart", "rolling_bounce")


# -- Kafka's own gaps: counted, not reported (check.py Rules 2 and 3) ------------------------


def _unowned(ts: int) -> InvariantViolated:
    return InvariantViolated(
        ts_ms=ts, group_id="g", invariant="all_partitions_owned",
        detail="t-3 has no owner although the group is stable",
    )  # fmt: skip


def _left(ts: int, reason: str) -> MemberLeft:
    return MemberLeft(ts_ms=ts, group_id="g", member_id="m", group_protocol="classic",
                      reason=reason, instance_id="i")  # fmt: skip


def test_a_static_rejoin_gap_lasts_from_the_replacement_to_the_next_rebalance() -> None:
    replaced = _left(1, "replaced")
    rebalance = RebalanceStarted(ts_ms=3, group_id="g", generation=2, reason="x")
    events = [_unowned(0), replaced, _unowned(2), rebalance, _unowned(4)]
    out = classify_reports(events, classic=True)
    assert out.static_rejoin_gaps == 1
    assert [v.ts_ms for v in out.violations] == [0, 4]
    assert not out.static_gap_open
    assert classify_reports(events[:3], classic=True).static_gap_open
    # Only a replacement opens it, and only in a classic group (KIP-848 has no such gap).
    other = [_left(1, "session_timeout"), _unowned(2)]
    assert [v.ts_ms for v in classify_reports(other, classic=True).violations] == [2]
    assert len(classify_reports(events, classic=False).violations) == 3


def test_a_removed_member_taking_partitions_is_a_zombie_overlap() -> None:
    """KIP-848 seed 5170: a member whose session expired finishes the reconciliation it had
    begun and takes partitions a live member holds: a zombie, like one that keeps its own."""
    taken = InvariantViolated(
        ts_ms=5, group_id="g", invariant="exclusive_ownership", member_id="z",
        detail="t-1 assigned to z while live still owns it",
    )  # fmt: skip
    left = MemberLeft(ts_ms=1, group_id="g", member_id="z", group_protocol="consumer",
                      reason="session_timeout")  # fmt: skip
    out = classify_reports([left, taken], classic=False)
    assert out.violations == [] and out.zombie_overlaps == 1
    assert len(classify_reports([taken], classic=False).violations) == 1


@pytest.mark.parametrize(
    "name",
    ["cooperative-seed1154-all_partitions_owned.json", "eager-seed6224-all_partitions_owned.json"],
)
def test_the_soaks_static_rejoin_gaps_are_counted_not_reported(name: str) -> None:
    """Seeds 1154 and 6224: partitions a static member's stored assignment does not cover
    stay unowned after it rejoins a Stable group (Kafka's, see check.py Rule 3)."""
    path = Path(__file__).parent / "soak_regressions" / name
    scenario = parse_scenario(json.loads(path.read_text()))
    seed = int(name.split("seed")[1].split("-")[0])
    outcome = run_scenario(scenario, scenario.protocols[0], seed)
    assert outcome.violations == []
    assert outcome.static_rejoin_gaps > 0


def test_a_seed_past_its_step_budget_stops_and_is_reported() -> None:
    scenario = draw_scenario("eager", 3, SMALL)
    whole = run_scenario(scenario, "eager", 3)
    assert whole.violations == [] and whole.steps > 100
    cut = run_scenario(scenario, "eager", 3, max_steps=100)
    assert cut.invariants == ["step_budget"]
    assert cut.steps == 100 and cut.virtual_ms < whole.virtual_ms
    assert "more than 100 steps" in cut.violations[0].detail


# -- the zero-timeouts knob (Rule 4 of the schedule) ---------------------------------------


@pytest.mark.parametrize("protocol", ["eager", "cooperative", "consumer"])
def test_the_zero_timeouts_knob_adds_bad_restarts_and_their_roll_back_and_nothing_else(
    protocol: str,
) -> None:
    key = CONSUMER_ZERO_TIMEOUT_CONFIG if protocol == "consumer" else ZERO_TIMEOUT_CONFIG
    knob = Limits(max_members=6, max_partitions=16, max_actions=6, zero_timeouts=True)
    plain = Limits(max_members=6, max_partitions=16, max_actions=6)
    for seed in range(20):
        with_knob, without = (
            draw_scenario(protocol, seed, knob),
            draw_scenario(protocol, seed, plain),
        )
        added = [a for a in with_knob.actions if key in a.config]
        assert [a for a in with_knob.actions if a not in added] == list(without.actions)
        bad = [a for a in added if a.config[key] <= 0]
        back = [a for a in added if a.config[key] > 0]
        assert bad and len(bad) == len(back)
        for first, second in zip(bad, back, strict=True):  # every bad client is rolled back
            assert second.members == first.members and (second.at_ms or 0) > (first.at_ms or 0)
            assert 5000 <= (second.at_ms or 0) - (first.at_ms or 0) <= 20000
            assert 1 <= len(first.members) <= 3
        assert with_knob.network.latency_ms >= 1
        assert with_knob.members == without.members and with_knob.topics == without.topics


def test_the_zero_timeouts_knob_draws_kip848_values_zero_and_minus_one() -> None:
    knob = Limits(max_members=6, max_partitions=16, max_actions=6, zero_timeouts=True)
    sent = {
        a.config[CONSUMER_ZERO_TIMEOUT_CONFIG]
        for seed in range(30)
        for a in draw_scenario("consumer", seed, knob).actions
        if CONSUMER_ZERO_TIMEOUT_CONFIG in a.config
    }
    assert sent == {0, -1, 30000}


#: ``test_the_zero_timeouts_knob_draws_the_classic_seeds_as_before``'s digest, computed
#: with the knob as it was for the classic protocols alone.
CLASSIC_KNOB_DIGEST = "07e69fec2d8807e5ddc234cea1a0462438217109cbda75abf75c3cff2c50d01e"


def test_the_zero_timeouts_knob_draws_the_classic_seeds_as_before() -> None:
    """The classic draws with the knob are pinned: a 10,000-seed run made before KIP-848
    had the knob holds for them (a digest of the actions and network of 200 scenarios)."""
    digest = hashlib.sha256()
    for protocol in ("eager", "cooperative"):
        for seed in range(50):
            for limits in (
                Limits(max_members=6, max_partitions=16, max_actions=6, zero_timeouts=True),
                Limits(zero_timeouts=True),
            ):
                scenario = draw_scenario(protocol, seed, limits)
                digest.update(repr((scenario.actions, scenario.network, scenario.members)).encode())
    assert digest.hexdigest() == CLASSIC_KNOB_DIGEST


@pytest.mark.parametrize("protocol", ["eager", "cooperative", "consumer"])
def test_a_sample_of_small_seeds_with_zero_timeouts_has_no_violation(protocol: str) -> None:
    limits = Limits(max_members=6, max_partitions=16, max_actions=6, zero_timeouts=True)
    for seed in range(40):
        outcome = run_scenario(draw_scenario(protocol, seed, limits), protocol, seed)
        assert outcome.violations == [], (protocol, seed, outcome.violations)
