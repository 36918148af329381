"""Silent wrong results become errors.

Each request below used to run and report numbers for something other than
what was asked; now ``plan_run`` refuses it with one line (``ScenarioError``;
``SettingsError`` for the ones a sweep refuses instead of skipping).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from regroup.sim.network import NetworkConfig
from regroup.sim.scenario import (
    DATA_KEYS,
    GROUP_KEYS,
    NETWORK_KEYS,
    Action,
    DataConfig,
    ScenarioError,
    builtin_scenario,
    parse_scenario,
)
from regroup.sim.settings import MAX_MEMBERS, MAX_PARTITIONS, Settings, SettingsError, plan_run


def _scenario(**tables: Any) -> dict[str, Any]:
    return {"name": "s", **tables}


@pytest.mark.parametrize(
    ("table", "key"),
    [("group", "memebers"), ("network", "latency"), ("data", "restore"), ("group", "size")],
)
def test_an_unknown_key_in_a_section_is_refused(table: str, key: str) -> None:
    with pytest.raises(ScenarioError, match=f"unknown key '{key}' in \\[{table}\\]"):
        parse_scenario(_scenario(**{table: {key: 8}}))


def test_the_section_keys_are_the_fields_they_set() -> None:
    assert set(DATA_KEYS) == {f.name for f in fields(DataConfig)}
    assert set(NETWORK_KEYS) == {f.name for f in fields(NetworkConfig)}
    scenario = parse_scenario(
        _scenario(
            group={"members": 8, "protocol": "eager", "assignor": "range", "static": True,
                   "start_spread_ms": 0},
            network={"latency_ms": 50, "jitter_ms": 2, "loss": 0.0},
        )
    )  # fmt: skip
    assert set(GROUP_KEYS) == {"members", "protocol", "assignor", "static", "start_spread_ms"}
    assert (scenario.members, scenario.network.latency_ms) == (8, 50)


@pytest.mark.parametrize(
    ("scenario", "members", "message"),
    [
        ("crash", 0, "aims at member 0, but the group has none then"),
        ("rolling-bounce", 0, "aims at all members, but the group has none"),
        ("scale-in", 0, "aims at member -1"),
    ],
)
def test_an_action_on_a_member_that_does_not_exist_is_refused(
    scenario: str, members: int, message: str
) -> None:
    with pytest.raises(SettingsError, match=message):
        plan_run(Settings(builtin_scenario(scenario), protocol="eager", members=members))


def test_a_member_started_by_an_earlier_action_may_be_aimed_at() -> None:
    data = _scenario(
        group={"members": 1},
        actions=[
            {"at_ms": 1000, "action": "start", "count": 1},
            {"at_ms": 2000, "action": "crash", "members": 1},
        ],
    )
    plan_run(Settings(parse_scenario(data), protocol="eager"))
    data["actions"][1]["at_ms"] = 500  # before member 1 exists
    with pytest.raises(SettingsError, match=r"actions\[1\] \(crash at 500 ms\) aims at member 1"):
        plan_run(Settings(parse_scenario(data), protocol="eager"))


def test_a_run_that_ends_before_the_last_action_is_refused() -> None:
    scenario = builtin_scenario("rolling-bounce")
    with pytest.raises(SettingsError, match="--duration-ms 20000 ends before"):
        plan_run(Settings(scenario, protocol="eager", duration_ms=20000))
    # Within the bounce is refused too (members 1 and 2 would never come back).
    with pytest.raises(SettingsError, match="ends at 52000 ms"):
        plan_run(Settings(scenario, protocol="eager", duration_ms=45000))
    assert plan_run(Settings(scenario, protocol="eager", duration_ms=52000)).duration_ms == 52000


@pytest.mark.parametrize(
    ("protocol", "configured"),
    [("eager", "consumer"), ("cooperative", "CONSUMER"), ("consumer", "classic")],
)
def test_group_protocol_contradicting_the_protocol_is_refused(
    protocol: str, configured: str
) -> None:
    with pytest.raises(SettingsError, match="contradicts the protocol of the run"):
        plan_run(
            Settings(
                builtin_scenario("steady"),
                protocol=protocol,
                configs={"group.protocol": configured},
            )
        )


def test_group_protocol_agreeing_with_the_protocol_runs() -> None:
    steady = builtin_scenario("steady")
    plan = plan_run(Settings(steady, protocol="eager", configs={"group.protocol": "classic"}))
    assert plan.group_protocol == "classic"


def test_a_remote_assignor_config_is_used_or_refused_never_overwritten() -> None:
    steady = builtin_scenario("steady")
    plan = plan_run(
        Settings(steady, protocol="consumer", configs={"group.remote.assignor": "range"})
    )
    assert plan.assignor == "range"
    with pytest.raises(ScenarioError, match="unknown server assignor 'foo'"):
        plan_run(Settings(steady, protocol="consumer", configs={"group.remote.assignor": "foo"}))
    with pytest.raises(SettingsError, match=r"contradicts group\.remote\.assignor=range"):
        plan_run(
            Settings(
                steady,
                protocol="consumer",
                assignor="uniform",
                configs={"group.remote.assignor": "range"},
            )
        )


@pytest.mark.parametrize(
    "configs",
    [
        {"session.timeout.ms": "2000000"},  # above group.max.session.timeout.ms
        {"session.timeout.ms": "10000", "group.min.session.timeout.ms": "20000"},
        {"session.timeout.ms": "90000", "group.max.session.timeout.ms": "60000"},
    ],
)
def test_a_session_timeout_outside_the_brokers_bounds_is_refused(configs: dict[str, str]) -> None:
    with pytest.raises(SettingsError, match="INVALID_SESSION_TIMEOUT"):
        plan_run(Settings(builtin_scenario("steady"), protocol="eager", configs=configs))


def test_a_restart_config_with_a_bad_session_timeout_is_refused() -> None:
    scenario = builtin_scenario("steady")
    bounce = Action("restart", at_ms=1000, members=(0,), config={"session.timeout.ms": "1800001"})
    scenario = parse_scenario(
        {"name": "r", "actions": [{"at_ms": 1000, "action": "restart", "members": 0,
                                   "config": dict(bounce.config)}]}
    )  # fmt: skip
    with pytest.raises(SettingsError, match=r"actions\[0\] config"):
        plan_run(Settings(scenario, protocol="cooperative"))


def test_sizes_beyond_the_limits_are_refused_up_front() -> None:
    steady = builtin_scenario("steady")
    with pytest.raises(SettingsError, match=f"at most {MAX_MEMBERS:,}"):
        plan_run(Settings(steady, protocol="eager", members=100_000_000))
    with pytest.raises(SettingsError, match=f"at most {MAX_PARTITIONS:,}"):
        plan_run(Settings(steady, protocol="eager", partitions=MAX_PARTITIONS + 1))
    grow = parse_scenario(
        {"name": "g", "topics": {"t": MAX_PARTITIONS // 2 + 1},
         "actions": [{"at_ms": 1, "action": "add_partitions", "topic": "t"}]}
    )  # fmt: skip
    with pytest.raises(SettingsError, match="add_partitions at 1 ms"):
        plan_run(Settings(grow, protocol="eager"))


def test_add_partitions_on_an_unknown_topic_is_refused_before_the_run() -> None:
    scenario = parse_scenario(
        {"name": "a", "topics": {"events": 4},
         "actions": [{"at_ms": 1000, "action": "add_partitions", "topic": "evnets"}]}
    )  # fmt: skip
    with pytest.raises(SettingsError, match="unknown topic 'evnets'; the run has events"):
        plan_run(Settings(scenario, protocol="eager"))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"max.poll.interval.ms": "abc"}, r"actions\[0\] config: max.poll.interval.ms must be"),
        ({"group.protocol": "weird"}, "group.protocol must be classic or consumer"),
    ],
)
def test_a_restart_config_that_cannot_build_a_member_is_refused_before_the_run(
    config: dict[str, str], message: str
) -> None:
    """It used to fail at the restart, mid-run, with a traceback (or run KIP-848 for
    any group.protocol but 'classic')."""
    scenario = parse_scenario(
        {"name": "r", "actions": [{"at_ms": 1000, "action": "restart", "members": 0,
                                   "config": config}]}
    )  # fmt: skip
    with pytest.raises(ScenarioError, match=message):
        plan_run(Settings(scenario, protocol="cooperative"))


def test_a_migration_by_restart_config_still_plans() -> None:
    for protocol in ("eager", "cooperative"):
        plan_run(Settings(builtin_scenario("upgrade-to-consumer"), protocol=protocol))


def test_group_protocol_must_name_a_protocol() -> None:
    with pytest.raises(SettingsError, match=r"group\.protocol must be classic or consumer"):
        plan_run(Settings(builtin_scenario("steady"), configs={"group.protocol": "weird"}))
