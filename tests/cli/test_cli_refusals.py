"""Every user mistake is one line on stderr and exit code 2.

``simulate``, ``assign``, ``replay`` and ``groups``: each request below used
to run and report numbers for something else, or to end in a traceback.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from regroup.cli.main import main


def _one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def _scenario(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n' + text)
    return str(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[group]\nmemebers = 8\n", "unknown key 'memebers' in [group]"),
        ("[network]\nlatency = 50\n", "unknown key 'latency' in [network]"),
        ("[data]\nrestore = 5000\n", "unknown key 'restore' in [data]"),
        (
            '[[actions]]\nat_ms = 1000\naction = "crash"\nmembers = 99\n',
            "aims at member 99, but the group has members 0..2 then",
        ),
        (
            '[[actions]]\nat_ms = 1000\naction = "add_partitions"\ntopic = "nope"\n',
            "unknown topic 'nope'; the run has events",
        ),
    ],
)
def test_simulate_refuses_a_scenario_file_mistake(
    tmp_path: Path, text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _one_line_exit_2(["simulate", "--scenario", _scenario(tmp_path, text)], capsys)
    assert message in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scenario", "crash", "--members", "0"], "aims at member 0, but the group has none"),
        (["--scenario", "rolling-bounce", "--duration-ms", "20000"],
         "--duration-ms 20000 ends before the scenario's last action"),
        (["--scenario", "steady", "--protocol", "eager", "--config", "group.protocol=consumer"],
         "contradicts the protocol of the run"),
        (["--scenario", "steady", "--protocol", "consumer", "--config",
          "group.protocol=classic"], "contradicts the protocol of the run"),
        (["--scenario", "steady", "--protocol", "eager", "--session-timeout-ms", "2000000"],
         "INVALID_SESSION_TIMEOUT"),
        (["--scenario", "steady", "--protocol", "cooperative", "--session-timeout-ms", "10000",
          "--config", "group.min.session.timeout.ms=20000"], "INVALID_SESSION_TIMEOUT"),
        (["--scenario", "steady", "--members", "100000000"], "the simulator runs at most 10,000"),
        (["--scenario", "steady", "--partitions", "100000000"],
         "the simulator runs at most 1,000,000"),
        (["--scenario", "steady", "--protocol", "eager", "--config",
          "partition.assignment.strategy=foo"], "unknown assignor 'foo'"),
        (["--scenario", "steady", "--protocol", "consumer", "--config",
          "group.remote.assignor=foo"], "unknown server assignor 'foo'"),
        (["--scenario", "rolling-bounce", "--protocol", "consumer", "--config",
          "request.timeout.ms=abc"], "request.timeout.ms must be an integer"),
        (["--scenario", "steady", "--protocol", "eager", "--config",
          "auto.commit.interval.ms=-5"], "auto.commit.interval.ms must be >= 0"),
    ],
)  # fmt: skip
def test_simulate_refuses_a_contradictory_command_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in _one_line_exit_2(["simulate", *argv], capsys)


def test_simulate_refuses_an_output_path_it_cannot_write_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("keep me")
    err = _one_line_exit_2(
        ["simulate", "--scenario", "steady", "--events", str(a_file / "run.jsonl")], capsys
    )
    assert "is a file, not a directory" in err
    err = _one_line_exit_2(["simulate", "--scenario", "steady", "--events", "/proc/x"], capsys)
    assert "cannot write" in err
    assert a_file.read_text() == "keep me"


def test_the_output_probe_leaves_no_file_behind(tmp_path: Path) -> None:
    from regroup.cli.outputs import check_writable

    check_writable("--events", str(tmp_path / "new.jsonl"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("timeout", ["-1", "0", "nan"])
def test_groups_refuses_a_timeout_that_is_not_positive(
    timeout: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _one_line_exit_2(["groups", "list", "--timeout", timeout], capsys)
    assert "--timeout must be a positive number of seconds" in err


def test_groups_refuses_a_port_out_of_range(capsys: pytest.CaptureFixture[str]) -> None:
    err = _one_line_exit_2(["groups", "--bootstrap-server", "127.0.0.1:99999", "list"], capsys)
    assert "port 1-65535" in err


@pytest.mark.parametrize(
    "document",
    [
        {"assignor": "range", "topics": {"x": 10**11},
         "members": [{"member_id": "a", "topics": ["x"]}]},
        {"group_protocol": "consumer", "assignor": "uniform",
         "topics": {"x": {"partitions": 10**11}},
         "members": [{"member_id": "a", "subscribed_topics": ["x"]}]},
    ],
)  # fmt: skip
def test_assign_refuses_absurd_sizes_up_front(
    document: dict[str, object], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(document)))
    assert "takes at most 10,000,000" in _one_line_exit_2(["assign", "-"], capsys)


def test_replay_refuses_absurd_sizes_up_front(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = {"topics": {"foo": 10**11}, "steps": []}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(script)))
    assert "at most 1,000,000 per topic" in _one_line_exit_2(["replay", "-"], capsys)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["assign", "x.json", "--indent", "-3"], "argument --indent: must be >= 0, got -3"),
        (["simulate", "--scenario", "steady", "--seed", "-1"], "argument --seed: must be >= 0"),
        (["simulate", "--scenario", "steady", "--partitions", "0"],
         "argument --partitions: must be >= 1, got 0"),
        (["simulate", "--scenario", "steady", "--max-poll-interval-ms", "0"],
         "argument --max-poll-interval-ms: must be >= 1"),
        (["compare", "--scenario", "steady", "--members", "-1"],
         "argument --members: must be >= 0"),
        (["soak", "--seeds", "0"], "argument --seeds: must be >= 1, got 0"),
        (["soak", "--seeds", "1", "--max-members", "0"], "argument --max-members: must be >= 1"),
        (["soak", "--seeds", "1", "--minimise-runs", "-1"],
         "argument --minimise-runs: must be >= 0"),
        (["sweep", "--scenario", "steady", "--seeds", "0", "--out", "x"],
         "argument --seeds: must be >= 1"),
        (["sweep", "--scenario", "steady", "--members", "3,-2", "--out", "x"],
         "argument --members: must be >= 1, got -2"),
        (["demo", "--seeds", "0", "--out", "x"], "argument --seeds: must be >= 1"),
        (["serve", "--partitions", "0"], "argument --partitions: must be >= 1"),
        (["ctl", "rtt", "-5"], "argument ms: must be >= 0, got -5"),
        (["ctl", "create-topic", "t", "0"], "argument partitions: must be >= 1"),
        (["simulate", "--scenario", "steady", "--protocol", "nope"], "invalid choice: 'nope'"),
    ],
)  # fmt: skip
def test_an_impossible_option_value_is_refused_while_parsing_in_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in _one_line_exit_2(argv, capsys)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[group]\nmembers = [1, 2]\n", "group.members must be an integer, got [1, 2]"),
        ("[topics]\norders = [1]\n", "topics.orders must be an integer, got [1]"),
        ("[data]\nrestore_ms = \"5s\"\n", "data.restore_ms must be an integer, got '5s'"),
        ("[network]\nloss = \"x\"\n", "network.loss must be a number, got 'x'"),
        ("description = [1]\n", "description must be a string"),
        ('[consumer]\n"group.instance.id" = [1]\n', "group.instance.id must be a string, got [1]"),
        ('[consumer]\n"client.rack" = {a = 1}\n', "client.rack must be a string"),
        ('[[actions]]\nat_ms = [1]\naction = "crash"\n', "actions[0].at_ms must be an integer"),
        ('[[actions]]\nat_ms = 1\naction = "crash"\nmembers = [[0]]\n',
         "actions[0].members must be 'all', an index or a list of indexes"),
    ],
)  # fmt: skip
def test_a_type_error_in_a_scenario_file_is_one_line_naming_the_key(
    tmp_path: Path, text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _one_line_exit_2(["simulate", "--scenario", _scenario(tmp_path, text)], capsys)
    assert message in err
