"""``regroup simulate --broker-log``: Kafka's server.log of a simulated run, on virtual time."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from regroup.brokerlog import coordinator_partition
from regroup.cli.main import main
from regroup.events import GenerationBumped, GroupEpochBumped, event_from_json_line
from regroup.history.formats import Kind, parse
from regroup.sim.broker_log import BrokerLogWriter
from regroup.sim.scenario import load_scenario
from regroup.sim.simulation import Settings, Simulation

ENVELOPE = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (\w+) (.*) \((\S+)\)")
STABILIZED = re.compile(r"Stabilized group sim-group generation (\d+) with (\d+) members\.")


def _run(tmp_path: Path, *args: str) -> tuple[list[str], list[object]]:
    log, events = tmp_path / "server.log", tmp_path / "events.jsonl"
    code = main(["simulate", *args, "--json", "--events", str(events), "--broker-log", str(log)])
    assert code == 0
    return (
        log.read_text(encoding="utf-8").splitlines(),
        [event_from_json_line(line) for line in events.read_text(encoding="utf-8").splitlines()],
    )


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_one_stabilized_line_per_generation_of_the_run(
    tmp_path: Path, protocol: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lines, events = _run(
        tmp_path, "--scenario", "rolling-bounce", "--protocol", protocol, "--members", "4",
        "--broker-log-start", "2026-12-02T14:00:00",
    )  # fmt: skip
    capsys.readouterr()
    generations = [
        (e.generation, len(e.member_ids))
        for e in events
        if isinstance(e, GenerationBumped) and e.member_ids
    ]
    stabilized = [
        (int(m.group(1)), int(m.group(2)))
        for line in lines
        if (m := STABILIZED.search(line)) is not None
    ]
    assert len(generations) >= 8  # four members, each restarted: a leave and a join each
    assert stabilized == generations
    partition = coordinator_partition("sim-group")
    for line in lines:
        found = ENVELOPE.fullmatch(line)
        assert found is not None, line
        stamp, level, message, logger = found.groups()
        assert stamp.startswith("2026-12-02 14:0")
        assert level == "INFO"
        assert logger == "org.apache.kafka.coordinator.group.GroupMetadataManager"
        assert message.startswith(
            f"[GroupCoordinator id=0 topic=__consumer_offsets partition={partition}] "
        )
        assert parse(message) is not None, line


def test_the_virtual_clock_is_the_timestamp(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines, events = _run(tmp_path, "--scenario", "crash", "--protocol", "consumer")
    capsys.readouterr()
    bumps = [e for e in events if isinstance(e, GroupEpochBumped)]
    bumped = [line for line in lines if "Bumped group epoch to" in line]
    assert len(bumped) == len(bumps) >= 2
    for event, line in zip(bumps, bumped, strict=True):
        seconds, ms = divmod(event.ts_ms, 1000)
        minutes, seconds = divmod(seconds, 60)
        assert line.startswith(f"[1970-01-01 00:{minutes:02d}:{seconds:02d},{ms:03d}] INFO ")
        assert line.endswith(f"Bumped group epoch to {event.epoch}. ({_GMM})")


_GMM = "org.apache.kafka.coordinator.group.GroupMetadataManager"


def test_the_writer_streams_without_a_kept_event_log() -> None:
    out = io.StringIO()
    writer = BrokerLogWriter(out, start_ms=1000)
    settings = Settings(scenario=load_scenario("scale-out"), protocol="eager", seed=1)
    result = Simulation(settings, keep_events=False, taps=[writer]).run()
    assert result.events == []
    lines = out.getvalue().splitlines()
    assert writer.lines == len(lines) > 0
    kinds = {parse(ENVELOPE.fullmatch(line).group(3)).format.kind for line in lines}  # type: ignore[union-attr]
    assert {Kind.REBALANCE_PREPARING, Kind.GROUP_STABILIZED, Kind.ASSIGNMENT_RECEIVED} <= kinds
    assert lines[0].startswith("[1970-01-01 00:00:01,")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--broker-log-start", "yesterday"], "--broker-log-start must be an ISO-8601 time"),
        (["--broker-log", "/nonexistent-dir/server.log"], "--broker-log"),
    ],
)
def test_bad_broker_log_options_are_one_line_and_exit_2(
    tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if "--broker-log" not in args:
        args = [*args, "--broker-log", str(tmp_path / "server.log")]
    assert main(["simulate", "--scenario", "crash", *args]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
