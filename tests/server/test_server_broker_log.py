"""The server's broker log: real clients' groups, logged as Kafka 4.x's coordinator logs them.

Each of the three Python clients (and librdkafka under both protocols) forms a group on
a ``Broker(log_file=...)``, grows it, shrinks it and leaves it; the log file then holds
Kafka's lines for exactly the rebalances the server's own event log holds, and
``regroup history``'s reconstruction of that log (``regroup.history.rebalances``) gives
back the same rebalances: the loop real clients -> ``regroup serve`` -> its log ->
``regroup history`` closes. And ``regroup serve --log-file`` sends the lines to the
file, not to stderr.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from regroup.brokerlog import coordinator_partition
from regroup.events import (
    Event,
    GenerationBumped,
    GroupEpochBumped,
    MemberJoined,
    MemberLeft,
    MemberPending,
    RebalanceStarted,
)
from regroup.history.formats import parse
from regroup.history.lines import Record, parse_line
from regroup.history.rebalances import reconstruct
from regroup.server.clients.wire_client import WireClient
from regroup.testing import Broker
from tests.server.broker_log_clients import CLIENTS, PARTITIONS, TOPIC, Member, run_group

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("heavy")]

ENVELOPE = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (\w+) (.*) \((\S+)\)")
GMM = "org.apache.kafka.coordinator.group.GroupMetadataManager"


_SERVED: dict[tuple[str, str], tuple[str, list[str], list[Event]]] = {}


def served(tmp_path: Path, client: str, protocol: str) -> tuple[str, list[str], list[Event]]:
    """Run one client's group on a broker (once per module); its id, log lines, events."""
    found = _SERVED.get((client, protocol))
    if found is not None:
        return found
    group = f"g-{client}-{protocol}"
    log = tmp_path / "server.log"
    with Broker(topics={TOPIC: PARTITIONS}, log_file=log) as broker:
        server = broker.server
        run_group(broker, client, protocol, group)
    events = [e for e in server.events.recent if e.group_id == group]
    found = _SERVED[(client, protocol)] = (
        group,
        log.read_text(encoding="utf-8").splitlines(),
        events,
    )
    return found


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
        pending = sum(isinstance(e, MemberPending) for e in events)
        assert pending == joins  # every client here joins with JoinGroup v4+ (KIP-394)
        assert sum(s.startswith("Dynamic member with unknown member id") for s in said) == pending
        assert sum(s.startswith("Pending dynamic member with id") for s in said) == joins
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


def _members_after_each_change(events: list[Event]) -> list[int]:
    """The group's size right after each generation (classic) or group epoch (KIP-848)."""
    members: set[str] = set()
    sizes = []
    for event in events:
        if isinstance(event, MemberJoined):
            members.add(event.member_id)
        elif isinstance(event, MemberLeft):
            members.discard(event.member_id)
        elif isinstance(event, GenerationBumped | GroupEpochBumped):
            sizes.append(len(members))
    return sizes


@pytest.mark.parametrize(("client", "protocol"), CLIENTS)
def test_history_reads_the_served_log_back_into_the_same_rebalances(
    tmp_path: Path, client: str, protocol: str
) -> None:
    group, lines, events = served(tmp_path, client, protocol)
    records = [
        r
        for i, line in enumerate(lines)
        if isinstance(r := parse_line(line, "server.log", i), Record)
    ]
    assert len(records) == len(lines)  # every line of the served log is recognised
    history = reconstruct(group, [r for r in records if r.group_id == group])
    assert history.protocol == protocol
    sizes = _members_after_each_change(events)
    if protocol == "classic":
        served_generations = [e.generation for e in events if isinstance(e, GenerationBumped)]
        assert [r.generation for r in history.rebalances] == served_generations
        # Kafka's Stabilized line gives each generation's member count (an empty one: 0).
        assert [r.members for r in history.rebalances] == sizes
        assert [r.outcome for r in history.rebalances][-1] == "empty"
    else:
        served_epochs = [e.epoch for e in events if isinstance(e, GroupEpochBumped)]
        assert [r.epoch for r in history.rebalances] == served_epochs
    left = [e.member_id for e in events if isinstance(e, MemberLeft)]
    assert [m.member_id for m in history.members_left] == left


def test_history_counts_a_consumer_groups_members_at_each_epoch(tmp_path: Path) -> None:
    group, lines, events = served(tmp_path, "confluent", "consumer")
    records = [
        r
        for i, line in enumerate(lines)
        if isinstance(r := parse_line(line, "server.log", i), Record)
    ]
    history = reconstruct(group, [r for r in records if r.group_id == group])
    assert [r.members for r in history.rebalances] == _members_after_each_change(events)


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
        _create_topic(bootstrap)
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


def _create_topic(bootstrap: str) -> None:
    """The member's topic, made by a Metadata request that names it (auto-creation) before
    the member subscribes: kafka-python joins with the partitions it knows, and one it
    learns only after its first join (an auto-created topic) makes it rejoin, a generation
    more than the test counts (``regroup.testing.driver.subscribe_kafka_python``)."""
    host, port = bootstrap.rsplit(":", 1)
    with WireClient(host, int(port)) as client:
        response = client.request(
            3,
            12,
            {
                "topics": [{"name": TOPIC, "topic_id": None}],
                "allow_auto_topic_creation": True,
                "include_topic_authorized_operations": False,
            },
        )
    assert [int(t.error_code.value) for t in response.topics] == [0]
