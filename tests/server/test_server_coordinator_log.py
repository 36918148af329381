"""The server's broker-log sink: Python loggers under ``regroup.kafka``, Kafka's layout."""

from __future__ import annotations

import datetime
import io
import logging
from pathlib import Path

from regroup.brokerlog import timestamp
from regroup.events import GroupEpochBumped
from regroup.server.clients.wire_client import WireClient
from regroup.server.coordinator_log import (
    KAFKA_LOGGER,
    CoordinatorLogSink,
    KafkaLayout,
    detach,
    log_to_file,
    log_to_stream,
)
from regroup.testing import Broker

GMM = "org.apache.kafka.coordinator.group.GroupMetadataManager"


def bump(ts_ms: int, epoch: int, group: str = "orders") -> GroupEpochBumped:
    return GroupEpochBumped(ts_ms=ts_ms, group_id=group, epoch=epoch, reason="member_joined")


def test_lines_go_to_the_kafka_logger_in_kafkas_layout_at_the_events_time() -> None:
    out = io.StringIO()
    handler = log_to_stream(out)
    try:
        CoordinatorLogSink(broker_id=2).publish([bump(1_764_684_191_123, 7)])
    finally:
        detach(handler)
    local = datetime.datetime.fromtimestamp(1_764_684_191.123).astimezone().tzinfo
    assert local is not None
    assert out.getvalue() == (
        f"[{timestamp(1_764_684_191_123, local)}] INFO [GroupCoordinator id=2 "
        "topic=__consumer_offsets partition=31] [GroupId orders] Bumped group epoch to 7. "
        f"({GMM})\n"
    )
    assert logging.getLogger(KAFKA_LOGGER).propagate  # nothing attached any more


def test_a_file_for_one_server_gets_only_that_servers_lines(tmp_path: Path) -> None:
    me, someone = object(), object()
    mine, other = CoordinatorLogSink(owner=me), CoordinatorLogSink(owner=someone)
    handler = log_to_file(tmp_path / "logs" / "server.log", only=me)
    try:
        mine.publish([bump(1000, 1, "a")])
        other.publish([bump(1000, 1, "b")])
        mine.publish([bump(2000, 2, "a")])
    finally:
        detach(handler)
    lines = (tmp_path / "logs" / "server.log").read_text(encoding="utf-8").splitlines()
    assert [line.split("] [GroupId ")[1].split("]")[0] for line in lines] == ["a", "a"]
    assert "Bumped group epoch to 2." in lines[1]


def test_the_layout_lays_out_any_record() -> None:
    record = logging.LogRecord("regroup.server", logging.WARNING, __file__, 1, "x %d", (5,), None)
    record.created = 0.25
    line = KafkaLayout(tz=datetime.UTC).format(record)
    assert line == "[1970-01-01 00:00:00,250] WARN x 5 (regroup.server)"


def _join_classic_group(port: int, group: str) -> None:
    """One classic member joins ``group`` (KIP-394: twice) and syncs, over the wire."""
    protocols = [
        {"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"}
    ]
    join = {
        "group_id": group,
        "session_timeout": 30_000,
        "rebalance_timeout": 10_000,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": protocols,
    }
    with WireClient("127.0.0.1", port) as client:
        first = client.request(11, 5, {**join, "member_id": ""})
        joined = client.request(11, 5, {**join, "member_id": first.member_id})
        client.request(
            14,
            3,
            {
                "group_id": group,
                "generation_id": joined.generation_id,
                "member_id": joined.member_id,
                "group_instance_id": None,
                "assignments": [{"member_id": joined.member_id, "assignment": b""}],
            },
        )


def test_a_restart_logs_the_groups_it_loaded(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with Broker(data_dir=tmp_path / "data", log_file=log) as broker:
        _join_classic_group(broker.port, "kept")
        broker.wait_for_stable("kept", members=1)
    first = log.read_text(encoding="utf-8")
    assert "Stabilized group kept generation 1 with 1 members." in first
    assert "Loaded classic group" not in first
    with Broker(data_dir=tmp_path / "data", log_file=log):
        pass
    again = log.read_text(encoding="utf-8").removeprefix(first).splitlines()
    assert len(again) == 1
    assert again[0].endswith(f"Loaded classic group kept with 1 members. ({GMM})")
