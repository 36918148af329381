"""regroup's pytest plugin: the fixtures, the mark, the entry point."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from regroup.testing import Broker

ROOT = Path(__file__).resolve().parents[2]


def test_the_plugin_is_declared_as_a_pytest11_entry_point() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    entry = project["project"]["entry-points"]["pytest11"]["regroup"]
    assert entry == "regroup.testing.pytest_plugin"
    assert "examples/testing" in project["tool"]["pytest"]["ini_options"]["testpaths"]


def test_regroup_broker_is_running_for_the_test(regroup_broker: Broker) -> None:
    assert regroup_broker.running
    assert regroup_broker.bootstrap == f"127.0.0.1:{regroup_broker.port}"
    assert regroup_broker.configs()["group.initial.rebalance.delay.ms"] == 0


@pytest.mark.regroup_broker(
    topics={"orders": 3}, configs={"group.consumer.heartbeat.interval.ms": 200}
)
def test_the_mark_gives_topics_and_configs(regroup_broker: Broker) -> None:
    assert regroup_broker.produce("orders", ["a", "b", "c"]) == {0: 0, 1: 0, 2: 0}
    assert regroup_broker.configs()["group.consumer.heartbeat.interval.ms"] == 200


def test_the_session_broker_is_shared_and_its_faults_are_reset(
    regroup_broker_session: Broker, request: pytest.FixtureRequest
) -> None:
    again = request.getfixturevalue("_regroup_session_broker")
    assert again is regroup_broker_session
    regroup_broker_session.set_rtt(100, "Metadata")
    regroup_broker_session.push_request_errors("Heartbeat", "REBALANCE_IN_PROGRESS")
    regroup_broker_session.pause_timers()
    # The fixture's teardown resets all of it; the next test checks.


def test_the_session_broker_starts_each_test_without_faults(
    regroup_broker_session: Broker,
) -> None:
    pending = regroup_broker_session.pending_faults()
    assert pending["pushed"] == {} and pending["rtt_ms"] == {}
    assert pending["timers_paused"] is False and pending["tracking"] is False
