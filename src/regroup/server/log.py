"""A small partitioned log: what Produce appends, Fetch reads and ListOffsets searches.

Theory of operation: a partition is a list of v2 record batches (Kafka's
``RecordBatch`` format, magic 2), kept as the producer sent them except for the
base offset, which the log assigns (Kafka's ``LogValidator`` does the same;
the CRC covers the bytes from ``attributes`` on, so rewriting the base offset
and the partition leader epoch keeps it valid). Records are neither
decompressed nor re-encoded, so every codec a client uses passes through.

Rule 1: an appended batch is checked: magic 2, a length that fits, a CRC-32C
that matches (else CORRUPT_MESSAGE, Kafka's ``InvalidRecordException``).
Rule 2: offsets are dense and start at 0; the high watermark is the next
offset (one replica, so every append is committed at once), and so is the
last stable offset (no transactions).
Rule 3: Fetch returns whole batches from the one containing the fetch offset
on, at least one batch even above ``max_bytes`` (KIP-74), as Kafka does; a
client skips the records before its offset.

``encode_batch`` writes a batch with ``kio.records`` (tests, benchmarks).

In memory by default; with a directory, each partition is an append-only file
of batches (``<topic id>-<partition>.log``) and ``topics.json`` lists the
topics, so a restart finds every record; a torn batch at the end of a file
(a crash mid-write) is dropped on load.
"""

from __future__ import annotations

import bisect
import datetime
import io
import json
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crc32c import crc32c
from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_batch

from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.metadata import MetadataImage, TopicImage
from regroup.model.uuid import Uuid

__all__ = ["Log", "PartitionLog", "TopicLog", "encode_batch"]

_HEADER = struct.Struct(">qiibIhiqqqhii")
_HEADER_SIZE = _HEADER.size  # 61
_CRC_START = 21
_MAX_PARTITIONS = 10_000


@dataclass(slots=True)
class _Batch:
    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


def _parse_batches(records: bytes) -> list[tuple[int, int, bytes]]:
    """Split ``records`` into (last offset delta, max timestamp, batch bytes); rule 1."""
    out: list[tuple[int, int, bytes]] = []
    pos = 0
    while pos < len(records):
        if len(records) - pos < _HEADER_SIZE:
            raise KafkaProtocolError(ErrorCode.CORRUPT_MESSAGE, "truncated record batch")
        (_, length, _, magic, crc, _, last_delta, _, max_ts, _, _, _, _) = _HEADER.unpack_from(
            records, pos
        )
        end = pos + 12 + length
        if magic != 2:
            raise KafkaProtocolError(
                ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, f"record batch magic {magic}"
            )
        if length < _HEADER_SIZE - 12 or end > len(records) or last_delta < 0:
            raise KafkaProtocolError(ErrorCode.CORRUPT_MESSAGE, "bad record batch length")
        if crc32c(records[pos + _CRC_START : end]) != crc:
            raise KafkaProtocolError(ErrorCode.CORRUPT_MESSAGE, "record batch CRC mismatch")
        out.append((last_delta, max_ts, records[pos:end]))
        pos = end
    return out


def encode_batch(
    values: Sequence[bytes | None], timestamp_ms: int, keys: Sequence[bytes | None] = ()
) -> bytes:
    """One uncompressed v2 batch of ``values`` (kio.records), as a producer would send it."""
    stamp = datetime.datetime.fromtimestamp(timestamp_ms / 1000, tz=datetime.UTC)
    record_cls: Any = Record
    batch_cls: Any = NewRecordBatch
    records = tuple(
        record_cls(
            attributes=0,
            timestamp=stamp,
            offset=index,
            key=keys[index] if index < len(keys) else None,
            value=value,
            headers=(),
        )
        for index, value in enumerate(values)
    )
    out = io.BytesIO()
    write_batch(
        out,
        batch_cls(
            producer_id=-1, producer_epoch=-1, base_sequence=-1, records=records, attributes=0
        ),
    )
    return out.getvalue()


class PartitionLog:
    """One partition's batches (rules 2 and 3)."""

    __slots__ = ("_batches", "_file", "_last_offsets", "next_offset", "start_offset")

    def __init__(self, path: Path | None = None) -> None:
        self._batches: list[_Batch] = []
        self._last_offsets: list[int] = []
        self.start_offset = 0
        self.next_offset = 0
        self._file = None
        if path is not None:
            self._load(path)
            self._file = path.open("ab")

    def _load(self, path: Path) -> None:
        if not path.exists():
            return
        data = path.read_bytes()
        pos = 0
        while len(data) - pos >= 12:
            (length,) = struct.unpack_from(">i", data, pos + 8)
            end = pos + 12 + length
            if length < 0 or end > len(data):
                break
            try:
                ((last_delta, max_ts, batch),) = _parse_batches(data[pos:end])
            except KafkaProtocolError:
                break
            base = struct.unpack_from(">q", batch, 0)[0]
            self._add(_Batch(base, base + last_delta, max_ts, batch))
            pos = end
        if pos != len(data):
            with path.open("r+b") as handle:
                handle.truncate(pos)

    def _add(self, batch: _Batch) -> None:
        self._batches.append(batch)
        self._last_offsets.append(batch.last_offset)
        self.next_offset = batch.last_offset + 1

    @property
    def high_watermark(self) -> int:
        return self.next_offset

    def append(self, records: bytes) -> int:
        """Append the batches in ``records``; the base offset of the first (rule 2)."""
        parsed = _parse_batches(records)
        first = self.next_offset
        for last_delta, max_ts, raw in parsed:
            base = self.next_offset
            data = struct.pack(">q", base) + raw[8:]
            self._add(_Batch(base, base + last_delta, max_ts, data))
            if self._file is not None:
                self._file.write(data)
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
        return first

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset`` (rule 3)."""
        index = bisect.bisect_left(self._last_offsets, offset)
        parts: list[bytes] = []
        size = 0
        for batch in self._batches[index:]:
            if parts and size + len(batch.data) > max_bytes:
                break
            parts.append(batch.data)
            size += len(batch.data)
        return b"".join(parts)

    def offset_for_timestamp(self, timestamp: int) -> int | None:
        """The base offset of the first batch with a timestamp >= ``timestamp`` (batch grain)."""
        for batch in self._batches:
            if batch.max_timestamp >= timestamp:
                return max(batch.base_offset, self.start_offset)
        return None

    def max_timestamp(self) -> tuple[int, int]:
        """(timestamp, offset) of the batch with the largest timestamp; (-1, -1) when empty."""
        best = (-1, -1)
        for batch in self._batches:
            if batch.max_timestamp > best[0]:
                best = (batch.max_timestamp, batch.last_offset)
        return best

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclass(slots=True)
class TopicLog:
    name: str
    topic_id: Uuid
    partitions: list[PartitionLog] = field(default_factory=list)


def _valid_topic_name(name: str) -> bool:
    """Kafka's ``Topic.validate``: 1-249 characters of ``[a-zA-Z0-9._-]``, not ``.``/``..``."""
    return (
        0 < len(name) <= 249
        and name not in (".", "..")
        and all(c.isascii() and (c.isalnum() or c in "._-") for c in name)
    )


class Log:
    """Every topic's partitions; in memory, or on disk under ``directory``."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self.topics: dict[str, TopicLog] = {}
        self._by_id: dict[Uuid, TopicLog] = {}
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            catalog = directory / "topics.json"
            if catalog.exists():
                for entry in json.loads(catalog.read_text()):
                    self._open(entry["name"], Uuid.from_string(entry["id"]), entry["partitions"])

    def _open(self, name: str, topic_id: Uuid, partitions: int) -> TopicLog:
        topic = TopicLog(name, topic_id)
        for index in range(partitions):
            path = None if self.directory is None else self.directory / f"{topic_id}-{index}.log"
            topic.partitions.append(PartitionLog(path))
        self.topics[name] = topic
        self._by_id[topic_id] = topic
        return topic

    def _save_catalog(self) -> None:
        if self.directory is None:
            return
        entries = [
            {"name": t.name, "id": str(t.topic_id), "partitions": len(t.partitions)}
            for t in self.topics.values()
        ]
        tmp = self.directory / "topics.json.tmp"
        tmp.write_text(json.dumps(entries))
        os.replace(tmp, self.directory / "topics.json")

    def create_topic(self, name: str, partitions: int, topic_id: Uuid | None = None) -> TopicLog:
        """Kafka's CreateTopics checks: a valid name, >= 1 partition, not existing yet."""
        if not _valid_topic_name(name):
            raise KafkaProtocolError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"bad topic name {name!r}")
        if name in self.topics:
            raise KafkaProtocolError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} exists")
        if not 0 < partitions <= _MAX_PARTITIONS:
            raise KafkaProtocolError(ErrorCode.INVALID_PARTITIONS, f"{partitions} partitions")
        topic = self._open(name, topic_id or Uuid.for_name(name), partitions)
        self._save_catalog()
        return topic

    def topic(self, name: str) -> TopicLog | None:
        return self.topics.get(name)

    def topic_by_id(self, topic_id: Uuid) -> TopicLog | None:
        return self._by_id.get(topic_id)

    def partition(self, name: str, index: int) -> PartitionLog | None:
        topic = self.topics.get(name)
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        return topic.partitions[index]

    def metadata_image(self) -> MetadataImage:
        return MetadataImage.of(
            TopicImage(t.topic_id, t.name, len(t.partitions)) for t in self.topics.values()
        )

    def close(self) -> None:
        for topic in self.topics.values():
            for partition in topic.partitions:
                partition.close()
