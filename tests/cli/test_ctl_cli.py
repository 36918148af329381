"""``regroup ctl`` against a server with the control channel, and the channel itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from regroup.cli.main import main
from regroup.server.app import ServerOptions
from regroup.server.background import BackgroundServer
from regroup.server.clients.wire_client import WireClient
from regroup.server.control.commands import CONTROL_KEY, decode_answer, encode_command
from regroup.testing import Broker

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(topics={"orders": 2}) as running:
        yield running


def _ctl(broker: Broker, capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code = main(["ctl", "--bootstrap-server", broker.bootstrap, *argv])
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out)


def _ctl_fails(broker: Broker, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(["ctl", "--bootstrap-server", broker.bootstrap, *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_ctl_sets_and_reports_every_request_fault(
    broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _ctl(broker, capsys, "push-errors", "Heartbeat", "REBALANCE_IN_PROGRESS", "NONE") == 2
    _ctl(broker, capsys, "set-error", "OffsetCommit", "NOT_COORDINATOR", "--duration-ms", "60000")
    _ctl(broker, capsys, "rtt", "250", "--api", "Metadata")
    _ctl(broker, capsys, "track")
    faults = _ctl(broker, capsys, "faults")
    assert isinstance(faults, dict)
    assert faults["pushed"] == {"Heartbeat": ["REBALANCE_IN_PROGRESS", "NONE"]}
    assert faults["sticky"]["OffsetCommit"]["error"] == "NOT_COORDINATOR"
    assert faults["rtt_ms"] == {"Metadata": 250} and faults["tracking"] is True
    # The ctl requests themselves are not tracked; only the clients'.
    assert _ctl(broker, capsys, "requests") == []
    _ctl(broker, capsys, "coordinator-unavailable", "--duration-ms", "1000")
    assert "FindCoordinator" in _ctl(broker, capsys, "faults")["sticky"]
    _ctl(broker, capsys, "reset")
    faults = _ctl(broker, capsys, "faults")
    assert isinstance(faults, dict)
    assert faults["pushed"] == {} and faults["sticky"] == {} and faults["rtt_ms"] == {}


def test_ctl_test_data_configs_and_group_inspection(
    broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    _ctl(broker, capsys, "create-topic", "events", "3")
    assert _ctl(broker, capsys, "produce", "events", "a", "b", "c", "d") == {
        "0": 0,
        "1": 0,
        "2": 0,
    }
    configs = _ctl(broker, capsys, "set-config", "group.consumer.heartbeat.interval.ms=400")
    assert isinstance(configs, dict) and configs["group.consumer.heartbeat.interval.ms"] == 400
    assert _ctl(broker, capsys, "describe", "nobody") is None
    assert _ctl(broker, capsys, "committed", "nobody") == {}
    _ctl(broker, capsys, "pause-timers")
    assert _ctl(broker, capsys, "faults")["timers_paused"] is True
    _ctl(broker, capsys, "resume-timers")
    assert _ctl(broker, capsys, "raw", "list_groups") == []


def test_ctl_mistakes_are_one_line_and_exit_2(
    broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "unknown error" in _ctl_fails(broker, capsys, "push-errors", "Heartbeat", "NOPE")
    assert "unknown API" in _ctl_fails(broker, capsys, "rtt", "5", "--api", "Nope")
    assert "no group 'g'" in _ctl_fails(broker, capsys, "fence", "g", "m")
    assert "no group 'g'" in _ctl_fails(broker, capsys, "rebalance", "g")
    assert "unknown broker config" in _ctl_fails(broker, capsys, "set-config", "x.y=1")
    assert "unknown command" in _ctl_fails(broker, capsys, "raw", "format_disk")
    assert "unexpected keyword" in _ctl_fails(broker, capsys, "raw", "pending_faults", '{"x": 1}')
    assert "timed out" in _ctl_fails(broker, capsys, "wait-stable", "g", "--timeout-ms", "50")
    assert "Metadata" in _ctl_fails(
        broker, capsys, "push-errors", "Metadata", "UNKNOWN_SERVER_ERROR"
    )


def test_ctl_against_a_server_without_the_channel_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    options = ServerOptions(host="127.0.0.1", port=0)  # control is off by default
    with BackgroundServer(options) as server:
        code = main(["ctl", "--bootstrap-server", server.bootstrap, "faults"])
    err = capsys.readouterr().err
    assert code == 2 and "regroup serve --control" in err


def test_the_channel_answers_bad_bodies_and_keeps_the_connection(broker: Broker) -> None:
    with WireClient("127.0.0.1", broker.port) as client:
        body = b"not json"
        header = CONTROL_KEY.to_bytes(2, "big") + bytes(2) + (7).to_bytes(4, "big") + bytes(2)
        client.send_raw((len(header) + len(body)).to_bytes(4, "big") + header + body)
        cid, answer = decode_answer(client.read_frame())
        assert cid == 7 and answer["ok"] is False and "JSON" in answer["error"]
        client.send_raw(encode_command(8, "t", "pending_faults", {}))
        cid, answer = decode_answer(client.read_frame())
        assert cid == 8 and answer["ok"] is True


def test_regroup_serve_control_and_ctl_end_to_end(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "regroup.cli.main", "serve", "--port", "0", "--control"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "regroup serving on 127.0.0.1:" in line, line
        bootstrap = line.strip().rsplit(" ", 1)[1]

        def ctl(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "regroup.cli.main",
                    "ctl",
                    "--bootstrap-server",
                    bootstrap,
                    *argv,
                ],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )

        assert ctl("create-topic", "orders", "2").returncode == 0
        pushed = ctl("push-errors", "JoinGroup", "COORDINATOR_LOAD_IN_PROGRESS")
        assert pushed.returncode == 0 and json.loads(pushed.stdout) == 1
        refused = ctl("expire-session", "g", "m")
        assert refused.returncode == 2 and "no group" in refused.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_ctl_fence_prints_what_it_did(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    """``ctl fence`` printed ``null``: it now names the member fenced and the group after."""
    heartbeat = {
        "group_id": "k",
        "member_id": "m-1",
        "member_epoch": 0,
        "rebalance_timeout": 5000,
        "subscribed_topic_names": ["orders"],
        "topic_partitions": [],
    }
    host, port = broker.bootstrap.rsplit(":", 1)
    with WireClient(host, int(port)) as client:
        joined = client.request(68, 1, heartbeat)  # ConsumerGroupHeartbeat v1
        assert joined.error_code.value == 0
        fenced = _ctl(broker, capsys, "fence", "k", "m-1")
    assert fenced["group_id"] == "k" and fenced["fenced"] == "m-1"
    assert fenced["members"] == [] and fenced["epoch"] > joined.member_epoch
    assert _ctl(broker, capsys, "rebalance", "k")["rebalance"] == "forced"
