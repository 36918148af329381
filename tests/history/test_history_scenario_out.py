"""An incident becomes a scenario file, and ``regroup compare`` runs it."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from regroup.cli.main import main
from regroup.history.rebalances import GroupHistory, MemberJoin, MemberLeave, Rebalance
from regroup.history.scenario_out import LEAD_MS, incident_scenario, write_incident
from regroup.sim.scenario import ScenarioError, load_scenario

T0 = 1_796_220_000_000


def _leave(ms: int, member: str, reason: str, instance: str | None = None) -> MemberLeave:
    return MemberLeave("g", member, instance, f"t{ms}", T0 + ms, reason, None, "line")


def _join(ms: int, member: str, instance: str | None = None) -> MemberJoin:
    return MemberJoin("g", member, instance, f"t{ms}", T0 + ms, "line")


def _stable(ms: int, members: int) -> Rebalance:
    return Rebalance(
        "g",
        "classic",
        2,
        None,
        "a",
        T0 + ms - 100,
        "b",
        T0 + ms,
        "b",
        T0 + ms,
        "stabilized",
        "r",
        "member_left",
        None,
        members,
        members,
        1,
        3,
        (),
    )


def _incident_history() -> GroupHistory:
    history = GroupHistory("g", protocol="classic", assignors=["cooperative-sticky"])
    history.members_left = [
        _leave(10_000, "m-0", "close"),  # restarted: back 8 s later
        _leave(100_000, "m-1", "session_timeout"),  # crashed 45 s before, never back
        _leave(200_000, "m-2", "poll_timeout"),  # stalled, back 3 s later
    ]
    history.members_joined = [
        _join(18_000, "m-0b"),
        _join(203_000, "m-2b"),
        _join(300_000, "m-new"),  # a new process
    ]
    history.rebalances = [_stable(10_500, 2)]
    return history


def test_the_log_becomes_actions_at_their_observed_times() -> None:
    incident = incident_scenario(_incident_history(), partitions=12, data={"restore_ms": 500})
    scenario = incident.scenario
    assert scenario.members == 3  # 2 after the first leave, plus that leave
    assert scenario.protocol == "cooperative" and not scenario.static
    assert dict(scenario.topics) == {"events": 12} and scenario.data.restore_ms == 500
    steps = [
        (a.action, a.at_ms, a.members, a.downtime_ms, a.crash, a.duration_ms)
        for a in scenario.actions
    ]
    # time 0 is LEAD_MS before the earliest action: the stall, max.poll.interval.ms (300 s)
    # before the member left at 200 s
    origin = 200_000 - 300_000 - LEAD_MS
    assert steps == [
        ("slow", -100_000 - origin, (2,), 0, False, 303_000),  # until it rejoined at 203 s
        ("restart", 10_000 - origin, (0,), 8_000, False, 0),
        ("crash", 100_000 - 45_000 - origin, (1,), 0, False, 0),  # no join within 2 min
        ("start", 300_000 - origin, (0,), 0, False, 0),
    ]


def test_the_file_says_what_was_observed_and_assumed_and_reads_back(tmp_path: Path) -> None:
    incident = incident_scenario(_incident_history())
    path = write_incident(incident, tmp_path / "incident.toml")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# regroup history --scenario-out")
    assert "# Observed in the log:" in text and "# Assumed (not in the log):" in text
    assert "partitions: 8 on one topic 'events' (--partitions)" in text
    assert "session.timeout.ms 45000 ms" in text
    assert load_scenario(str(path)) == incident.scenario
    tomllib.loads(text)
    as_json = write_incident(incident, tmp_path / "incident.json")
    assert load_scenario(str(as_json)) == incident.scenario


def test_static_members_are_replayed_as_static_restarts() -> None:
    history = GroupHistory("g", protocol="consumer", static_members={"app-0"})
    history.members_left = [_leave(5_000, "a", "replaced", "app-0")]
    history.members_joined = [_join(5_000, "b", "app-0")]
    incident = incident_scenario(history)
    assert incident.scenario.static and incident.scenario.protocol == "consumer"
    (restart,) = incident.scenario.actions
    assert restart.action == "restart" and restart.downtime_ms == 10_000
    assert any("static restarts" in line for line in incident.assumed)


def test_a_group_with_nothing_to_replay_is_an_error() -> None:
    with pytest.raises(ScenarioError, match="no member joining or leaving"):
        incident_scenario(GroupHistory("g", protocol="classic"))


def test_compare_runs_the_incident(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_incident(incident_scenario(_incident_history(), partitions=6), tmp_path / "i.toml")
    assert main(["compare", "--scenario", str(path), "--seeds", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["protocols"]) == {"eager", "cooperative", "consumer"}
    assert (
        result["scenario"]["name"] == "incident-g" if isinstance(result["scenario"], dict) else True
    )
    for metrics in result["protocols"].values():
        assert metrics["rebalances"] >= 3
