"""``regroup simulate``: its command line contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regroup.cli.main import main
from regroup.events import event_from_json_line

REQUIRED = {
    "idle_partition_seconds",
    "max_partition_pause_ms",
    "rebalances",
    "partitions_moved",
    "partitions_revoked",
    "duplicates",
    "time_to_stable_ms",
    "violations",
}


def test_json_is_one_object_with_the_required_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["simulate", "--scenario", "scale-out", "--protocol", "cooperative",
         "--assignor", "cooperative-sticky", "--members", "3", "--partitions", "6",
         "--seed", "4", "--json"]
    )  # fmt: skip
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data.keys() >= REQUIRED
    assert data["violations"] == []
    assert data["rebalances"] >= 1


def test_events_and_timelines_are_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = tmp_path / "run.jsonl"
    html = tmp_path / "run.html"
    png = tmp_path / "run.png"
    args = ["simulate", "--scenario", "crash", "--protocol", "eager", "--members", "3",
            "--session-timeout-ms", "10000",
            "--config", "group.initial.rebalance.delay.ms=0"]  # fmt: skip
    assert main([*args, "--events", str(events), "--timeline", str(html)]) == 0
    assert main([*args, "--timeline", str(png)]) == 0
    out = capsys.readouterr().out
    assert "idle partition-seconds" in out
    lines = events.read_text().splitlines()
    kinds = {event_from_json_line(line).kind for line in lines}
    assert {"simulation_started", "consumer_stopped", "member_left", "simulation_ended"} <= kinds
    assert "<svg" in html.read_text() and "http" not in html.read_text().replace(
        "http://www.w3.org/2000/svg", ""
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    paths = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for path in paths:
        assert main(["simulate", "--scenario", "rolling-bounce", "--protocol", "consumer",
                     "--seed", "9", "--json", "--events", str(path)]) == 0  # fmt: skip
    assert paths[0].read_bytes() == paths[1].read_bytes()


def test_the_consumer_semantics_switch_reaches_the_coordinator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new member waiting for partitions: at the target epoch under Kafka's semantics,
    at epoch 0 under the KIP's (the scale-out's joining member)."""
    epochs = {}
    for semantics in ("kafka", "kip-848"):
        events = tmp_path / f"{semantics}.jsonl"
        config = f"regroup.consumer.semantics={semantics}"
        argv = ["simulate", "--scenario", "scale-out", "--protocol", "consumer",
                "--config", config, "--events", str(events)]  # fmt: skip
        assert main(argv) == 0
        capsys.readouterr()
        waiting = [
            e
            for e in map(json.loads, events.read_text().splitlines())
            if e["kind"] == "member_assignment_changed"
            and e["member_state"] == "UNRELEASED_PARTITIONS"
            and not e["assigned"]
        ]
        epochs[semantics] = {e["epoch"] for e in waiting}
    assert 0 not in epochs["kafka"] and epochs["kafka"]
    assert epochs["kip-848"] == {0}


def test_a_scenario_file_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(
        'name = "mine"\nduration_ms = 20000\n[group]\nmembers = 2\n[topics]\nx = 3\n'
        '[[actions]]\nat_ms = 8000\naction = "start"\n'
    )
    assert main(["simulate", "--scenario", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["partitions_moved"] >= 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--scenario", "nope"], "unknown scenario"),
        (["--scenario", "steady", "--protocol", "eager", "--assignor", "cooperative-sticky"],
         "COOPERATIVE"),
        (["--scenario", "steady", "--assignor", "nosuch"], "nosuch"),
        (["--scenario", "steady", "--members", "-1"], "--members"),
        (["--scenario", "steady", "--partitions", "0"], "--partitions"),
        (["--scenario", "steady", "--config", "novalue"], "NAME=VALUE"),
        (["--scenario", "steady", "--config", "bogus.config=1"], "bogus.config"),
        (["--scenario", "steady", "--timeline", "x.svg"], ".png or .html"),
        (["--scenario", "steady", "--config", "session.timeout.ms=abc"],
         "session.timeout.ms must be an integer, got 'abc'"),
        (["--scenario", "steady", "--protocol", "consumer",
          "--config", "group.consumer.heartbeat.interval.ms=x"], "must be an integer"),
        (["--scenario", "steady", "--events", "/no/such/dir/run.jsonl"], "no such directory"),
        (["--scenario", "steady", "--timeline", "/no/such/dir/t.png"], "no such directory"),
        (["--scenario", "steady", "--events", "."], "is a directory"),
        (["--scenario", "downgrade", "--protocol", "consumer"], "not consumer"),
        (["--scenario", "steady", "--protocol", "consumer", "--config", "session.timeout.ms=1"],
         "group.protocol=consumer"),
        (["--scenario", "steady", "--protocol", "consumer",
          "--config", "regroup.consumer.semantics=nope"], "must be kafka or kip-848"),
    ],
)  # fmt: skip
def test_bad_options_are_one_line_errors_with_exit_code_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_event_logs_do_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    """Same (scenario, seed) in two processes with different PYTHONHASHSEED: same bytes."""
    import os
    import subprocess
    import sys

    outputs = []
    for hash_seed in ("1", "2"):
        path = tmp_path / f"{hash_seed}.jsonl"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run(
            [sys.executable, "-m", "regroup.cli.main", "simulate", "--scenario", "scale-out",
             "--protocol", "consumer", "--members", "4", "--partitions", "10", "--seed", "5",
             "--json", "--events", str(path)],
            check=True, env=env, capture_output=True,
        )  # fmt: skip
        outputs.append(path.read_bytes())
    assert outputs[0] == outputs[1]


def test_data_is_taken_as_sweep_takes_it_and_the_assumptions_are_stated(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The verdict depends on the restore time; say it."""
    argv = ["simulate", "--scenario", "rolling-bounce", "--protocol", "eager",
            "--members", "4", "--partitions", "8"]  # fmt: skip
    assert main([*argv, "--json"]) == 0
    stateless = json.loads(capsys.readouterr().out)
    assert main([*argv, "--json", "--data", "restore_ms=5000",
                 "--config", "group.initial.rebalance.delay.ms=0"]) == 0  # fmt: skip
    stateful = json.loads(capsys.readouterr().out)
    assert stateless["assumptions"]["restore_ms"] == 0
    assert stateful["assumptions"]["restore_ms"] == 5000
    assert stateful["assumptions"]["configs"] == {"group.initial.rebalance.delay.ms": 0}
    assert stateful["assumptions"]["static_membership"] is False
    assert stateful["idle_partition_seconds"] > 5 * stateless["idle_partition_seconds"]
    # The metrics keys come first and unchanged (the contract is extended, not changed).
    assert list(stateful)[-1] == "assumptions" and stateful.keys() >= REQUIRED
    assert main([*argv, "--data", "restore_ms=5000", "--static"]) == 0
    out = capsys.readouterr().out
    assert "assumptions" in out and "5000 ms per newly assigned partition" in out
    assert "static (KIP-345" in out
    assert max(len(line) for line in out.splitlines()) <= 80


@pytest.mark.parametrize(
    ("item", "message"),
    [("restore=5", "unknown [data] key 'restore'"), ("restore_ms=x", "KEY=INTEGER"),
     ("restore_ms=-1", "restore_ms must be >= 0")],
)  # fmt: skip
def test_a_bad_data_option_is_one_line(
    item: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--scenario", "steady", "--data", item]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
