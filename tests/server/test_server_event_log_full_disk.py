"""The event log on a full disk: the request is served, the file keeps whole lines."""

from __future__ import annotations

import errno
import json
import logging
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from regroup.events import RecordsProduced
from regroup.model.topic_partition import TopicPartition
from regroup.server import events as events_module
from regroup.server.events import EventSink
from regroup.server.log.partitions import encode_batch


class _FullDisk:
    """A file that takes the first bytes of a write, then raises ENOSPC."""

    def __init__(self, real: BinaryIO) -> None:
        self._real = real

    def write(self, data: bytes) -> int:
        self._real.write(bytes(data[:7]))
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name: str) -> object:
        return getattr(self._real, name)


def _event(n: int) -> RecordsProduced:
    return RecordsProduced(
        ts_ms=n, group_id="", partition=TopicPartition("t", 0), count=1, end_offset=n
    )


def test_a_failed_event_write_is_cut_counted_and_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "events.jsonl"
    sink = EventSink(path)
    sink.publish([_event(0)])
    real = sink._file
    assert real is not None
    sink._file = _FullDisk(real)  # type: ignore[assignment]
    with caplog.at_level(logging.WARNING, "regroup.server"):
        sink.publish([_event(1), _event(2)])
        sink.publish([_event(3)])
        sink._file = real  # room again
        sink.publish([_event(4)])
    sink.close()
    lines = path.read_text().splitlines()
    assert [json.loads(line)["end_offset"] for line in lines] == [0, 4]
    assert sink.unwritten == 3
    assert [r.levelname for r in caplog.records] == ["ERROR", "WARNING"]
    assert "3 events in all were left out" in caplog.records[1].getMessage()


def test_a_produce_is_answered_when_the_event_log_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kio.index import load_response_schema
    from kio.serial import entity_reader

    from regroup.server.app import RegroupServer, ServerOptions
    from regroup.server.clients.wire_client import RequestEncoder
    from regroup.server.net.connection import ConnectionState

    produce = {
        "transactional_id": None,
        "acks": -1,
        "timeout": 1000,
        "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": encode_batch([b"v"], 1)}]}
        ],
    }
    body = RequestEncoder("test").encode(0, 9, produce)[1][4:]

    def failing(path: Path) -> BinaryIO:
        return _FullDisk(path.open("ab", buffering=0))  # type: ignore[return-value]

    monkeypatch.setattr(events_module, "_open_for_append", failing)
    server = RegroupServer(ServerOptions(port=0, seed=1, data_dir=tmp_path))
    try:
        server.create_topic("t", 1)
        frame = server.serve_now(ConnectionState(1, "t"), body)  # not CloseConnection
        assert isinstance(frame, bytes)
        cls: Any = load_response_schema(0, 9)
        _, offset = entity_reader(cls.__header_schema__)(frame[4:], 0)
        response, _ = entity_reader(cls)(frame[4:], offset)
        (partition,) = response.responses[0].partition_responses
        assert (partition.error_code.value, partition.base_offset) == (0, 0)
        assert server.events.unwritten >= 1
        assert (tmp_path / "events.jsonl").read_bytes() == b""  # no partial line
    finally:
        server.store.close()
        server.events.close()
