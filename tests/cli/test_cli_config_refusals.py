"""Configs Kafka refuses are refused by every command that takes them: one line, exit 2.

The client's rules (``ClassicMemberConfig``: Kafka's consumer is never built with
``heartbeat.interval.ms`` >= ``session.timeout.ms``) and the broker's
(``GroupCoordinatorConfig``: the bounds a broker checks at start-up, the server
assignors it can load; the classic join's INVALID_SESSION_TIMEOUT) live in the config
parsers, so ``simulate``, ``compare``, ``sweep``, ``replay`` and scenario files refuse
alike. Each of these ran to exit 0 before, with numbers for a group Kafka would not run.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from regroup.cli.main import main
from regroup.sim.comparison import configs_for


def _one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


_HEARTBEAT = "heartbeat.interval.ms=50000 must be lower than session.timeout.ms=45000"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--config", "heartbeat.interval.ms=50000"], _HEARTBEAT),
        (["--heartbeat-interval-ms", "10000", "--session-timeout-ms", "10000"],
         "heartbeat.interval.ms=10000 must be lower than session.timeout.ms=10000"),
        # 1 ms: below the broker's group.min.session.timeout.ms, named with its bound.
        (["--config", "session.timeout.ms=1"], "group.min.session.timeout.ms=6000"),
        (["--session-timeout-ms", "1"], "INVALID_SESSION_TIMEOUT"),
        (["--config", "session.timeout.ms=1900000"], "group.max.session.timeout.ms=1800000"),
        (["--protocol", "consumer", "--config", "group.consumer.session.timeout.ms=1000"],
         "group.consumer.session.timeout.ms=1000 is below "
         "group.consumer.min.session.timeout.ms=45000"),
        (["--protocol", "consumer", "--session-timeout-ms", "70000"],
         "group.consumer.session.timeout.ms=70000 is above "
         "group.consumer.max.session.timeout.ms=60000"),
        (["--protocol", "consumer", "--heartbeat-interval-ms", "1000"],
         "group.consumer.heartbeat.interval.ms=1000 is below "
         "group.consumer.min.heartbeat.interval.ms=5000"),
        (["--protocol", "consumer", "--config", "group.consumer.min.session.timeout.ms=0"],
         "group.consumer.min.session.timeout.ms=0 must be >= 1"),
        (["--protocol", "consumer", "--config", "group.consumer.assignors=uniform,foo"],
         "group.consumer.assignors: unknown server assignor 'foo'"),
        (["--protocol", "eager", "--config", "group.consumer.assignors=foo"],
         "unknown server assignor 'foo'"),
    ],
)  # fmt: skip
def test_simulate_refuses_a_config_kafka_refuses(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in _one_line_exit_2(["simulate", "--scenario", "steady", *argv], capsys)


def test_a_session_timeout_of_1_ms_with_its_bounds_lowered_is_still_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Lowering the broker's bound does not make 1 ms runnable: no heartbeat interval is
    below it, so Kafka's consumer refuses it (and the run never starts, let alone hangs)."""
    argv = ["simulate", "--scenario", "steady", "--config", "group.min.session.timeout.ms=1"]
    argv += ["--config", "session.timeout.ms=1", "--config", "heartbeat.interval.ms=1"]
    assert "must be lower than session.timeout.ms=1" in _one_line_exit_2(argv, capsys)


def _scenario(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n' + text)
    return str(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[consumer]\n"heartbeat.interval.ms" = 45000\n', "must be lower than session.timeout"),
        ('[broker]\n"group.consumer.assignors" = ["nope"]\n', "unknown server assignor 'nope'"),
        (
            '[[actions]]\nat_ms = 1000\naction = "restart"\nmembers = [0]\n'
            '[actions.config]\n"session.timeout.ms" = 8000\n"heartbeat.interval.ms" = 9000\n',
            "actions[0] config: heartbeat.interval.ms=9000 must be lower than",
        ),
    ],
)
def test_a_scenario_file_with_a_config_kafka_refuses_is_refused(
    tmp_path: Path, text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _one_line_exit_2(["simulate", "--scenario", _scenario(tmp_path, text)], capsys)
    assert message in err


def test_compare_refuses_a_heartbeat_not_below_the_session_timeout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["compare", "--scenario", "steady", "--seeds", "1"]
    argv += ["--config", "heartbeat.interval.ms=50000"]
    assert _HEARTBEAT in _one_line_exit_2(argv, capsys)


def test_sweep_refuses_a_heartbeat_not_below_the_session_timeout_before_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config Kafka refuses is a refusal of the whole grid, not a skipped cell."""
    argv = ["sweep", "--scenario", "steady", "--protocol", "eager", "--seeds", "1"]
    argv += ["--config", "heartbeat.interval.ms=50000", "--out", str(tmp_path / "out")]
    assert _HEARTBEAT in _one_line_exit_2(argv, capsys)


def test_replay_refuses_an_unknown_server_assignor(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"topics": {}, "steps": []})))
    err = _one_line_exit_2(["replay", "-", "--config", "group.consumer.assignors=foo"], capsys)
    assert "unknown server assignor 'foo'" in err


def test_compare_moves_the_kip848_bounds_for_a_classic_setting_it_translates() -> None:
    """``compare --config session.timeout.ms=10000`` asks for one setting under every
    protocol: the KIP-848 runs get the coordinator's config and a bound that admits it."""
    configs = {"session.timeout.ms": "10000", "heartbeat.interval.ms": "3000"}
    assert configs_for("eager", configs) == configs
    assert configs_for("consumer", configs) == {
        "group.consumer.session.timeout.ms": "10000",
        "group.consumer.min.session.timeout.ms": "10000",
        "group.consumer.max.session.timeout.ms": "60000",
        "group.consumer.heartbeat.interval.ms": "3000",
        "group.consumer.min.heartbeat.interval.ms": "3000",
        "group.consumer.max.heartbeat.interval.ms": "15000",
    }
