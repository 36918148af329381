"""``regroup serve`` options and ``regroup groups`` against a running server."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import regroup
from regroup.cli.errors import UsageError
from regroup.cli.main import build_parser, main
from regroup.cli.serve import options_from_args
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.server.app import ServerOptions
from regroup.server.background import BackgroundServer
from regroup.server.clients.wire_client import WireClient, consumer_join_values
from regroup.server.log.partitions import Log


def test_serve_cli_parses_options_and_kafka_configs(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        [
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(tmp_path),
            "--config",
            "group.initial.rebalance.delay.ms=0",
            "--partitions",
            "4",
        ]
    )
    options = options_from_args(args)
    assert options.port == 0 and options.data_dir == tmp_path
    assert options.default_partitions == 4
    assert options.config.group_initial_rebalance_delay_ms == 0
    assert options.config.consumer_semantics.value == "kafka"  # Kafka 4.0's behaviour by default


def test_serve_cli_takes_the_consumer_semantics() -> None:
    args = build_parser().parse_args(["serve", "--config", "regroup.consumer.semantics=kip-848"])
    assert options_from_args(args).config.consumer_semantics.value == "kip-848"


def test_serve_cli_takes_the_servers_limits_by_kafka_name() -> None:
    args = build_parser().parse_args(
        [
            "serve",
            "--config",
            "max.connections=100",
            "--config",
            "connections.max.idle.ms=5000",
            "--config",
            "offsets.retention.minutes=60",
        ]
    )
    options = options_from_args(args)
    assert options.limits.max_connections == 100
    assert options.limits.connections_max_idle_ms == 5000
    assert options.limits.fetch_max_bytes == 57_671_680  # Kafka's default, untouched
    assert options.config.offsets_retention_minutes == 60


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--config", "no-equals-sign"],
        ["serve", "--config", "not.a.broker.config=1"],
        ["serve", "--config", "max.connections=0"],
        ["serve", "--config", "fetch.max.bytes=lots"],
        ["serve", "--config", "regroup.consumer.semantics=kafka-3.9"],
        ["serve", "--port", "70000"],
        ["serve", "--partitions", "0"],
    ],
)
def test_serve_cli_rejects_bad_options(argv: list[str]) -> None:
    with pytest.raises(UsageError):
        options_from_args(build_parser().parse_args(argv))


def test_serve_cli_bad_option_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--config", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "NAME=VALUE" in err


@pytest.fixture
def running() -> Iterator[BackgroundServer]:
    config = dataclasses.replace(GroupCoordinatorConfig(), group_initial_rebalance_delay_ms=0)
    with BackgroundServer(ServerOptions(port=0, config=config)) as server:
        yield server


def _join_classic_group(server: BackgroundServer) -> None:
    """One classic member joins group ``c`` and syncs an empty assignment, over the wire."""
    protocols = [
        {"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"}
    ]
    join = {
        "group_id": "c",
        "session_timeout": 30_000,
        "rebalance_timeout": 10_000,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": protocols,
    }
    with WireClient("127.0.0.1", server.port) as client:
        first = client.request(11, 5, {**join, "member_id": ""})
        joined = client.request(11, 5, {**join, "member_id": first.member_id})
        client.request(
            14,
            3,
            {
                "group_id": "c",
                "generation_id": joined.generation_id,
                "member_id": joined.member_id,
                "group_instance_id": None,
                "assignments": [{"member_id": joined.member_id, "assignment": b""}],
            },
        )


def test_groups_cli_lists_and_describes_both_types(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert running.server is not None
    running.call(running.server.create_topic, "t", 2)
    _join_classic_group(running)
    with WireClient("127.0.0.1", running.port) as client:
        beat = client.request(68, 1, consumer_join_values("k", "AAAAAAAAAAAAAAAAAAAAAA", ("t",)))
        assert beat.error_code.value == 0
    bootstrap = ["groups", "--bootstrap-server", running.bootstrap]
    assert main([*bootstrap, "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {(g["group_id"], g["type"]) for g in listed} == {("c", "classic"), ("k", "consumer")}
    assert main([*bootstrap, "describe", "--json"]) == 0
    described = {g["group_id"]: g for g in json.loads(capsys.readouterr().out)}
    assert described["k"]["group_epoch"] >= 1 and len(described["k"]["members"]) == 1
    assert described["k"]["members"][0]["target_assignment"] == "t:[0,1]"
    assert described["c"]["state"] == "Stable" and len(described["c"]["members"]) == 1
    assert main([*bootstrap, "describe", "--state"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line]
    assert [r[0] for r in rows] == ["GROUP", "c", "GROUP", "k"]
    assert rows[1][3:] == ["range", "Stable", "1"] and rows[3][3:] == ["uniform", "Stable", "1"]


@pytest.mark.parametrize(
    "argv",
    [
        ["groups", "--bootstrap-server", "{b}", "list", "--json"],
        ["groups", "list", "--bootstrap-server", "{b}", "--json"],
        ["groups", "--bootstrap-server", "127.0.0.1:1", "list", "--bootstrap-server", "{b}",
         "--json"],
    ],
)  # fmt: skip
def test_groups_cli_takes_the_server_before_or_after_the_action(
    argv: list[str], running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """README: ``regroup groups list --bootstrap-server HOST:PORT``; the option also works
    before the action, and after it wins."""
    assert main([a.replace("{b}", running.bootstrap) for a in argv]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_groups_cli_unreachable_server_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with BackgroundServer(ServerOptions(port=0)) as server:
        port = server.port
    assert main(["groups", "--bootstrap-server", f"127.0.0.1:{port}", "list"]) == 2
    assert "cannot connect" in capsys.readouterr().err


def test_serve_cli_runs_keeps_state_and_stops_on_sigterm(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    def start() -> tuple[subprocess.Popen[str], int]:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "regroup.cli.main",
                "serve",
                "--port",
                "0",
                "--data-dir",
                str(tmp_path),
                "--log-level",
                "WARNING",
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "regroup serving on 127.0.0.1:" in line, line
        return proc, int(line.rsplit(":", 1)[1])

    proc, port = start()
    try:
        with WireClient("127.0.0.1", port) as client:
            created = client.request(
                19,
                5,
                {
                    "topics": [
                        {
                            "name": "kept",
                            "num_partitions": 2,
                            "replication_factor": -1,
                            "assignments": (),
                            "configs": (),
                        }
                    ],
                    "timeout": 1000,
                    "validate_only": False,
                },
            )
            assert created.topics[0].error_code.value == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    proc, port = start()
    try:
        with WireClient("127.0.0.1", port) as client:
            meta = client.request(3, 5, {"topics": None, "allow_auto_topic_creation": False})
            assert [(t.name, len(t.partitions)) for t in meta.topics] == [("kept", 2)]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def test_serve_out_of_descriptors_is_one_line_and_connections_wait(tmp_path: Path) -> None:
    """Under ``ulimit -n 64`` a flood of connections is one rate-limited
    warning (not a traceback per accept), the open connections are served meanwhile, and the
    connections that waited are served once descriptors free up."""
    import resource
    import signal
    import socket

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    proc = subprocess.Popen(
        [sys.executable, "-m", "regroup.cli.main", "serve", "--port", "0",
         "--data-dir", str(tmp_path), "--log-level", "WARNING"],
        stderr=subprocess.PIPE, text=True, preexec_fn=low_limit,
    )  # fmt: skip
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert "regroup serving on 127.0.0.1:" in line, line
    port = int(line.rsplit(":", 1)[1])
    hello = {"client_software_name": "t", "client_software_version": "1"}
    flood: list[socket.socket] = []
    try:
        with WireClient("127.0.0.1", port) as kept:
            assert kept.request(18, 3, hello).error_code.value == 0
            flood = [socket.create_connection(("127.0.0.1", port)) for _ in range(90)]
            time.sleep(1.0)  # the server has run out of descriptors and keeps retrying
            assert kept.request(18, 3, hello).error_code.value == 0
            for sock in flood:
                sock.close()
            flood = []
            with WireClient("127.0.0.1", port, timeout=10) as late:
                assert late.request(18, 3, hello).error_code.value == 0
    finally:
        for sock in flood:
            sock.close()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    warnings = [x for x in err.splitlines() if "out of file descriptors" in x]
    assert len(warnings) == 1, err[-2000:]
    assert "ulimit -n is 64" in warnings[0]
    assert len([x for x in err.splitlines() if "file descriptors free again" in x]) == 1
    assert "Traceback" not in err


# -- a data dir the server refuses -----------------------------------------------------------


def _serve(data_dir: Path) -> subprocess.CompletedProcess[str]:
    """``regroup serve --data-dir`` in a subprocess (a start that is not refused times out)."""
    src = Path(regroup.__file__).resolve().parents[1]
    argv = ["serve", "--port", "0", "--data-dir", str(data_dir)]
    return subprocess.run(
        [sys.executable, "-m", "regroup.cli.main", *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(src)},
    )


def _assert_one_line_exit_2(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("regroup serve: error: ")


def test_serve_cli_corrupt_store_is_one_line_exit_2_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "coordinator.db").write_bytes(b"this is not an SQLite database\n" * 100)
    result = _serve(tmp_path)
    _assert_one_line_exit_2(result)
    assert "coordinator.db is not a readable coordinator store" in result.stderr


def test_serve_cli_deleted_store_beside_logs_says_how_to_proceed(tmp_path: Path) -> None:
    log = Log(tmp_path / "log")
    log.create_topic("t", 1)
    log.close()
    result = _serve(tmp_path)
    _assert_one_line_exit_2(result)
    assert "no coordinator.db" in result.stderr
    assert "--allow-empty-coordinator" in result.stderr
    args = build_parser().parse_args(
        ["serve", "--data-dir", str(tmp_path), "--allow-empty-coordinator"]
    )
    assert options_from_args(args).allow_empty_coordinator


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("a-file", "is a file, not a directory"),
        ("a-file/sub", "no such directory"),
        ("no-such-parent/data", "no such directory"),
        ("/proc", "cannot write in '/proc'"),
        ("/proc/regroup-data", "cannot create '/proc/regroup-data'"),
    ],
)
def test_serve_cli_refuses_an_unusable_data_dir_at_once(
    tmp_path: Path, where: str, message: str
) -> None:
    """A file, a path under a file or a missing folder (a typo must not create a tree),
    a directory nothing can be written in: one line, exit 2, before the server starts."""
    (tmp_path / "a-file").write_text("keep me")
    result = _serve(tmp_path / where)
    _assert_one_line_exit_2(result)
    assert "--data-dir" in result.stderr and message in result.stderr
    assert (tmp_path / "a-file").read_text() == "keep me"
    assert not (tmp_path / "no-such-parent").exists()


def test_serve_cli_reads_security_configs_from_a_properties_file(tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text(
        "# Kafka's names\n"
        "listeners=SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0\n"
        "regroup.sasl.credentials.file=users.txt\n"
        "sasl.enabled.mechanisms=SCRAM-SHA-512\n"
        "group.initial.rebalance.delay.ms=0\n"
    )
    args = build_parser().parse_args(
        ["serve", "--config-file", str(properties), "--config", "super.users=User:admin"]
    )
    options = options_from_args(args)
    assert options.config.group_initial_rebalance_delay_ms == 0
    security = options.security
    assert security is not None
    assert [lst.name for lst in security.listeners] == ["SASL_PLAINTEXT", "PLAINTEXT"]
    assert security.sasl_enabled_mechanisms == ("SCRAM-SHA-512",)
    assert security.super_users == {"User:admin"}
    assert options_from_args(build_parser().parse_args(["serve"])).security is None


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--config", "listeners=SASL_PLAINTEXT://127.0.0.1:0"], "regroup.sasl.credentials.file"),
        (["--config", "sasl.enabled.mechanisms=GSSAPI"], "GSSAPI is not supported"),
        (["--config-file", "/nonexistent/server.properties"], "cannot read --config-file"),
        (["--config", "regroup.sasl.credentials.file=/nonexistent/users.txt"], "cannot read"),
        (
            [
                "--config",
                "ssl.keystore.location=/nonexistent.pem",
                "--config",
                "listeners=SSL://127.0.0.1:0",
            ],
            "ssl.keystore.location",
        ),
    ],
)
def test_serve_cli_bad_security_config_is_one_line_exit_2(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--port", "0", *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_serve_cli_bad_acl_file_names_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    acls = tmp_path / "acls.txt"
    acls.write_text("ALLOW User:alice READ GROUP LITERAL shop\nALLOW alice READ GROUP LITERAL x\n")
    argv = [
        "serve",
        "--port",
        "0",
        "--config",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "--config",
        f"regroup.acls.file={acls}",
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{acls}:2: Could not parse principal" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--log-file", "/proc/regroup-nope/server.log"], "cannot write --log-file"),
        (["--log-level", "LOUD"], "--log-level must be"),
    ],
)
def test_serve_cli_bad_log_options_are_one_line_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--port", "0", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_serve_cli_runs_on_uvloop_and_answers_a_heartbeat() -> None:
    """``--event-loop uvloop``: the same server on uvloop's loop, whose transports are not
    ``asyncio.Transport`` subclasses (the connection takes them all the same)."""
    import signal

    pytest.importorskip("uvloop")
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "regroup.cli.main", "serve", "--port", "0"),
            *("--event-loop", "uvloop", "--log-level", "WARNING"),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    try:
        line = proc.stderr.readline()
        assert "regroup serving on 127.0.0.1:" in line, line
        with WireClient("127.0.0.1", int(line.rsplit(":", 1)[1])) as client:
            answer = client.request(
                12,
                4,
                {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None},
            )
            assert answer.error_code.value != 0  # an unknown group, answered
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def test_serve_cli_uvloop_missing_is_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop raises ImportError
    assert main(["serve", "--port", "0", "--event-loop", "uvloop"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'regroup[uvloop]'" in err
    assert len(err.strip().splitlines()) == 1
