"""A small partitioned log: what Produce appends, Fetch reads and ListOffsets searches.

Theory of operation: a partition is a list of v2 record batches (Kafka's
``RecordBatch`` format, magic 2), kept as the producer sent them except for the
base offset, which the log assigns (Kafka's ``LogValidator`` does the same;
the CRC covers the bytes from ``attributes`` on, so rewriting the base offset
and the partition leader epoch keeps it valid). A compressed batch is
decompressed to check its records and kept as sent, unless its inner offsets
are wrong: then it is rebuilt (``record_batch``, rule 4).

Rule 1: an appended batch is checked as Kafka's ``LogValidator`` checks a
client's batch (``record_batch.check_client_batch``: size, CRC-32C, record
count against the offset range, the records themselves): CORRUPT_MESSAGE,
INVALID_RECORD or MESSAGE_TOO_LARGE, and nothing of that request's partition
is appended. The broker assigns the offsets: each batch's base offset is
rewritten to the log end.
Rule 2: offsets are dense and start at 0; the high watermark is the next
offset (one replica, so every append is committed at once), and so is the
last stable offset (no transactions).
Rule 3: Fetch returns whole batches from the one containing the fetch offset
on, up to ``max_bytes``; the first batch even above it when asked (``min_one``:
KIP-74, for the first partition of a response with data), as Kafka does; a
client skips the records before its offset.

``encode_batch`` writes a batch with ``kio.records`` (tests, benchmarks).

In memory by default; with a directory, each partition is an append-only file
of batches (``<topic id>-<partition>.log``) and ``topics.json`` lists the
topics, so a restart finds every record.

Rule 4 (disk): an append is written and fsynced *before* the in-memory log
moves; a write that fails (a full disk: ``OSError``) is cut off the file again
and answered KAFKA_STORAGE_ERROR (Kafka's ``KafkaStorageException``), so the
log is as it was and nothing unacknowledged is ever served. A file is opened
only for the append that writes it (no descriptor per partition).
Rule 5 (load): every batch is checked by length and CRC-32C
(``record_batch.check_batch``). A batch that fails is not the end of the
partition: the bytes up to the next valid batch are cut, every valid batch is
kept, and one warning line says which bytes and offsets were cut and why. A
torn batch at the end (a crash mid-write) is cut the same way.
"""

from __future__ import annotations

import bisect
import datetime
import errno
import io
import json
import logging
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_batch

from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.metadata import MetadataImage, TopicImage
from regroup.model.uuid import Uuid
from regroup.server.log.record_batch import (
    HEADER_SIZE,
    MAX_MESSAGE_BYTES,
    ClientBatch,
    check_batch,
    check_client_batch,
)

__all__ = ["Log", "PartitionLog", "TopicLog", "check_client_batches", "encode_batch"]

logger = logging.getLogger("regroup.server")

_MAX_PARTITIONS = 10_000


@dataclass(slots=True)
class _Batch:
    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


def _open_for_append(path: Path) -> BinaryIO:
    """The partition file, opened for one append (tests inject a failing one)."""
    return path.open("ab")


def _next_valid(data: bytes, pos: int, min_base: int) -> int:
    """The position of the first valid batch after ``pos`` with base offset >= ``min_base``."""
    for start in range(pos + 1, len(data) - HEADER_SIZE + 1):
        if data[start + 16] != 2:  # magic: most positions fail here, cheaply
            continue
        try:
            header = check_batch(data, start)
        except KafkaProtocolError:
            continue
        if header.base_offset >= min_base and header.last_offset_delta >= 0:
            return start
    return len(data)


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


def check_client_batches(
    records: bytes, max_message_bytes: int = MAX_MESSAGE_BYTES, allow_zstd: bool = True
) -> list[ClientBatch]:
    """Rule 1 for every batch of one partition's records (a pure function of its arguments)."""
    checked: list[ClientBatch] = []
    pos = 0
    while pos < len(records):
        batch = check_client_batch(records, pos, max_message_bytes, allow_zstd=allow_zstd)
        checked.append(batch)
        pos += batch.consumed
    if not checked:
        raise KafkaProtocolError(ErrorCode.CORRUPT_MESSAGE, "no record batch")
    return checked


class PartitionLog:
    """One partition's batches (rules 1-5)."""

    __slots__ = (
        "_batches",
        "_last_offsets",
        "_path",
        "_size",
        "max_message_bytes",
        "next_offset",
        "start_offset",
    )

    def __init__(
        self, path: Path | None = None, max_message_bytes: int = MAX_MESSAGE_BYTES
    ) -> None:
        self._batches: list[_Batch] = []
        self._last_offsets: list[int] = []
        self.start_offset = 0
        self.next_offset = 0
        self.max_message_bytes = max_message_bytes
        self._path = path
        self._size = 0
        if path is not None:
            self._load(path)

    def _load(self, path: Path) -> None:
        """Rule 5."""
        if not path.exists():
            return
        data = path.read_bytes()
        kept: list[bytes] = []
        pos = 0
        cut = False
        while pos < len(data):
            try:
                header = check_batch(data, pos)
                if header.last_offset_delta < 0 or header.base_offset < self.next_offset:
                    raise KafkaProtocolError(
                        ErrorCode.CORRUPT_MESSAGE,
                        f"batch offsets {header.base_offset}.."
                        f"{header.base_offset + header.last_offset_delta} overlap the log end "
                        f"{self.next_offset}",
                    )
            except KafkaProtocolError as exc:
                resume = _next_valid(data, pos, self.next_offset)
                lost = "none"
                if resume < len(data):
                    following = struct.unpack_from(">q", data, resume)[0]
                    if following > self.next_offset:
                        lost = f"{self.next_offset}..{following - 1}"
                else:
                    lost = f"from {self.next_offset} (the end of the file)"
                logger.warning(
                    "partition file %s: cut bytes %d..%d (%d bytes) at offset %d: %s; "
                    "offsets lost: %s; %d valid batches before kept%s",
                    path,
                    pos,
                    resume - 1,
                    resume - pos,
                    self.next_offset,
                    exc.message,
                    lost,
                    len(kept),
                    ", the valid batches after kept" if resume < len(data) else "",
                )
                cut = True
                pos = resume
                continue
            batch = data[pos : pos + header.size]
            base = header.base_offset
            self._add(_Batch(base, base + header.last_offset_delta, header.max_timestamp, batch))
            kept.append(batch)
            pos += header.size
        if cut:
            # Rewrite the file with the valid batches only, atomically.
            tmp = path.with_suffix(".log.tmp")
            tmp.write_bytes(b"".join(kept))
            os.replace(tmp, path)
        self._size = sum(len(b) for b in kept)

    def _add(self, batch: _Batch) -> None:
        self._batches.append(batch)
        self._last_offsets.append(batch.last_offset)
        self.next_offset = batch.last_offset + 1

    @property
    def high_watermark(self) -> int:
        return self.next_offset

    def append(
        self,
        records: bytes,
        *,
        allow_zstd: bool = True,
        checked: Sequence[ClientBatch] | None = None,
    ) -> int:
        """Append the batches in ``records``; the base offset of the first (rules 1, 2, 4).

        ``allow_zstd``: the Produce request is v7 or later (Kafka refuses zstd below).
        ``checked``: what ``check_client_batches`` made of ``records`` already (in a
        worker thread, for batches that must be decompressed).
        """
        if checked is None:
            checked = check_client_batches(records, self.max_message_bytes, allow_zstd)
        batches: list[_Batch] = []
        base = self.next_offset
        for client_batch in checked:
            header = client_batch.header
            data = struct.pack(">q", base) + client_batch.data[8:]
            last = base + header.last_offset_delta
            batches.append(_Batch(base, last, header.max_timestamp, data))
            base = last + 1
        if self._path is not None:
            self._write(b"".join(b.data for b in batches))
        first = self.next_offset
        for batch in batches:
            self._add(batch)
        return first

    def _write(self, data: bytes) -> None:
        """Rule 4: all of ``data`` durable in the file, or the file as it was and an error."""
        assert self._path is not None
        try:
            with _open_for_append(self._path) as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            try:
                os.truncate(self._path, self._size)
            except OSError as undo:
                logger.error("partition file %s: cannot cut a failed write: %s", self._path, undo)
            reason = errno.errorcode.get(exc.errno or 0, "") or str(exc)
            raise KafkaProtocolError(
                ErrorCode.KAFKA_STORAGE_ERROR,
                f"cannot write {self._path.name}: {reason} ({exc.strerror or exc})",
            ) from None
        self._size += len(data)

    def read(self, offset: int, max_bytes: int, min_one: bool = True) -> bytes:
        """Whole batches from the one holding ``offset``, at most ``max_bytes`` of them but
        the first batch when ``min_one`` (rule 3)."""
        index = bisect.bisect_left(self._last_offsets, offset)
        parts: list[bytes] = []
        size = 0
        for batch in self._batches[index:]:
            if (parts or not min_one) and size + len(batch.data) > max_bytes:
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
        """Nothing stays open between appends (rule 4)."""


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

    def __init__(
        self, directory: Path | None = None, max_message_bytes: int = MAX_MESSAGE_BYTES
    ) -> None:
        self.directory = directory
        self.max_message_bytes = max_message_bytes
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
            topic.partitions.append(PartitionLog(path, self.max_message_bytes))
        self.topics[name] = topic
        self._by_id[topic_id] = topic
        return topic

    def save_catalog(self) -> None:
        """Write ``topics.json`` (once per request that creates topics, not once per topic)."""
        if self.directory is None:
            return
        entries = [
            {"name": t.name, "id": str(t.topic_id), "partitions": len(t.partitions)}
            for t in self.topics.values()
        ]
        tmp = self.directory / "topics.json.tmp"
        tmp.write_text(json.dumps(entries))
        os.replace(tmp, self.directory / "topics.json")

    def create_topic(
        self, name: str, partitions: int, topic_id: Uuid | None = None, *, save: bool = True
    ) -> TopicLog:
        """Kafka's CreateTopics checks: a valid name, >= 1 partition, not existing yet.

        ``save=False``: the caller creates several and calls ``save_catalog`` once
        (rewriting the catalog per topic made 2,000 topics in one request quadratic).
        """
        if not _valid_topic_name(name):
            raise KafkaProtocolError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"bad topic name {name!r}")
        if name in self.topics:
            raise KafkaProtocolError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} exists")
        if not 0 < partitions <= _MAX_PARTITIONS:
            raise KafkaProtocolError(ErrorCode.INVALID_PARTITIONS, f"{partitions} partitions")
        topic = self._open(name, topic_id or Uuid.for_name(name), partitions)
        if save:
            self.save_catalog()
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
