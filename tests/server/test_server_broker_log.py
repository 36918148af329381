"""The server's broker log: real clients' groups, logged as Kafka 4.x's coordinator logs them.

Each of the three Python clients (and librdkafka under both protocols) forms a group on
a ``Broker(log_file=...)``, grows it, shrinks it and leaves it; the log file then holds
Kafka's lines for exactly the rebalances the server's own event log holds. And
``regroup serve --log-file`` sends the lines to the file, not to stderr.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from broker_log_clients import CLIENTS, PARTITIONS, TOPIC, Member, run_group

from regroup.brokerlog import coordinator_partition
from regroup.events import (
    Event,
    GenerationBumped,
    GroupEpochBumped,
    MemberJoined,
    MemberLeft,
    RebalanceStarted,
)
from regroup.history.formats import parse
from regroup.testing import Broker

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("heavy")]

ENVELOPE = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (\w+) (.*) \((\S+)\)")
GMM = "org.apache.kafka.coordinator.group.GroupMetadataManager"


def served(tmp_path: Path, client: str, protocol: str) -> tuple[str, list[str], list[Event]]:
    """Run one client's group on a broker; its group id, its log lines, its events."""
    group = f"g-{client}-{protocol}"
    log = tmp_path / "server.log"
    with Broker(topics={TOPIC: PARTITIONS}, log_file=log) as broker:
        server = broker.server
        run_group(broker, client, protocol, group)
    events = [e for e in server.events.recent if e.group_id == group]
    return group, log.read_text(encoding="utf-8").splitlines(), events


def messages(group: str, lines: list[str]) -> list[str]:
    """The messages of the group's lines, each checked to be Kafka's envelope and wording."""
    partition = coordinator_partition(group)
    prefix = f"[GroupCoordinator id=0 topic=__consumer_offsets partition={partition}] "
    out = []
    for line in lines:
        found = ENVELOPE.fullmatch(line)
        assert found is not None, line
        _, level, message, logger = found.groups()
        assert (level, logger) == ("INFO", GMM)
        assert parse(message) is not None, line
        if f" {group} " in message or f"[GroupId {group}]" in message:
            assert message.startswith(prefix), line
            out.append(message.removeprefix(prefix))
    return out


@pytest.mark.parametrize(("client", "protocol"), CLIENTS)
def test_a_real_groups_rebalances_are_in_the_broker_log(
    tmp_path: Path, client: str, protocol: str
) -> None:
    group, lines, events = served(tmp_path, client, protocol)
    said = messages(group, lines)
    joins = sum(isinstance(e, MemberJoined) for e in events)
    leaves = [e for e in events if isinstance(e, MemberLeft) and e.reason == "leave"]
    assert joins >= 2
    assert len(leaves) == 2
    if protocol == "classic":
        generations = [
            (e.generation, len(e.member_ids)) for e in events if isinstance(e, GenerationBumped)
        ]
        stabilized = [
            (int(m.group(1)), int(m.group(2)))
            for s in said
            if (
                m := re.fullmatch(
                    rf"Stabilized group {group} generation (\d+) with (\d+) members\.", s
                )
            )
        ]
        empty = [
            int(m.group(1))
            for s in said
            if (m := re.fullmatch(rf"Group {group} with generation (\d+) is now empty\.", s))
        ]
        assert stabilized == [g for g in generations if g[1]]
        assert empty == [g for g, n in generations if not n] != []
        assert max(n for _, n in stabilized) == 2
        preparing = [s for s in said if s.startswith(f"Preparing to rebalance group {group} ")]
        assert len(preparing) == sum(isinstance(e, RebalanceStarted) for e in events)
        assert sum("joins group" in s for s in said) == joins
        left = [s for s in said if "has left group through explicit `LeaveGroup` request" in s]
        assert len(left) == 2
    else:
        epochs = [e.epoch for e in events if isinstance(e, GroupEpochBumped)]
        bumped = [
            int(m.group(1))
            for s in said
            if (m := re.fullmatch(rf"\[GroupId {group}\] Bumped group epoch to (\d+)\.", s))
        ]
        assert bumped == epochs
        assert len(epochs) >= 4
        assert (
            sum("joins the consumer group using the consumer protocol" in s for s in said) == joins
        )
        assert sum(s.endswith(" left the consumer group.") for s in said) == 2


def test_serve_log_file_gets_the_lines_and_stderr_does_not(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "regroup.cli.main", "serve", "--port", "0",
            "--log-file", str(log), "--config", "group.initial.rebalance.delay.ms=0",
            "--config", "group.min.session.timeout.ms=500",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    try:
        line = proc.stderr.readline()
        assert "regroup serving on 127.0.0.1:" in line, line
        bootstrap = line.rsplit(" ", 1)[1].strip()
        member = Member("kafka-python", "classic", bootstrap, "served", "only")
        deadline, start = 60.0, time.monotonic()
        try:
            while "Stabilized group served" not in _read(log):
                assert time.monotonic() - start < deadline, _read(log)
                time.sleep(0.05)
        finally:
            member.close()
        while "Group served with generation" not in _read(log):
            assert time.monotonic() - start < deadline, _read(log)
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    said = messages("served", _read(log).splitlines())
    assert "Group served with generation 2 is now empty." in said
    assert "Stabilized group served generation 1 with 1 members." in said
    assert any(s.startswith("Assignment received from leader ") for s in said)
    assert any("has left group through explicit `LeaveGroup` request" in s for s in said)
    rest = proc.stderr.read()
    assert "GroupCoordinator id=" not in rest


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""
