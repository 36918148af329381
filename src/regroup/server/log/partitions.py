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
torn batch at the end (a crash mid-write) is cut the same way. Cut bytes are
never deleted: they are copied, as found, to a side file ``<file>.cut-<n>``
(fsynced, before the partition file is rewritten), which the warning names.
Rule 6 (load, offsets): the CRC does not cover the base offset, so a checked
batch's base offset is trusted only when something confirms it: it is where
the batches kept so far end (offsets are dense from 0), or the end of a gap an
earlier cut left (recorded in ``<topic id>-<partition>.gaps``), or the next
batch starts where it ends. Otherwise its base offset was damaged: a batch whose
record count equals its offset range is re-based (to the log end; after cut
bytes, to where the next batch says it starts), with one warning line; one
whose count does not fit is cut like a bad batch (rule 5). Kafka's
``LogSegment.recover`` checks each batch and truncates the segment at the first
that fails; regroup keeps every batch it can place, as above.
Rule 7 (the topic list): ``topics.json`` is the only place that keeps topic
names, so a start refuses, with one ``StoreError`` line naming the file and what
to do, a list that does not parse and partition files of a topic it does not
list (a deleted or older ``topics.json``): rebuilding the list from the files
would need names they do not hold, and starting without them would hide their
records and let a topic created under the same name (same id) take them over.
The list is written atomically and fsynced.
"""

from __future__ import annotations

import bisect
import datetime
import errno
import io
import json
import logging
import os
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from kio.records.schema import NewRecordBatch, Record, RecordHeader
from kio.records.writers import write_batch

from regroup.brokerlog.partition import OFFSETS_TOPIC
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.metadata import MetadataImage, TopicImage
from regroup.model.uuid import Uuid
from regroup.server.log.record_batch import (
    HEADER_SIZE,
    MAX_MESSAGE_BYTES,
    BatchHeader,
    ClientBatch,
    check_batch,
    check_client_batch,
)
from regroup.server.log.store import StoreError

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


def _next_valid(data: bytes, pos: int) -> int:
    """The position of the first batch after ``pos`` that passes ``check_batch``."""
    for start in range(pos + 1, len(data) - HEADER_SIZE + 1):
        if data[start + 16] != 2:  # magic: most positions fail here, cheaply
            continue
        try:
            check_batch(data, start)
        except KafkaProtocolError:
            continue
        return start
    return len(data)


@dataclass(frozen=True, slots=True)
class _Found:
    """A batch of a partition file that passes ``check_batch`` (its base offset unchecked)."""

    start: int
    header: BatchHeader


@dataclass(frozen=True, slots=True)
class _Cut:
    """Bytes of a partition file the load does not keep, and why."""

    start: int
    end: int
    reason: str

    def joined(self, after: _Cut) -> _Cut:
        return _Cut(self.start, after.end, self.reason)


def _scan(data: bytes) -> list[_Found | _Cut]:
    """The file as batches that check (length, CRC-32C) and the bytes between them."""
    out: list[_Found | _Cut] = []
    pos = 0
    while pos < len(data):
        try:
            header = check_batch(data, pos)
        except KafkaProtocolError as exc:
            resume = _next_valid(data, pos)
            out.append(_Cut(pos, resume, exc.message or str(exc)))
            pos = resume
            continue
        out.append(_Found(pos, header))
        pos += header.size
    return out


def _place(
    header: BatchHeader,
    expected: int,
    gap_end: int | None,
    following: int | None,
    cut: _Cut | None,
) -> int | None:
    """Rule 6: the offset a checked batch starts at, or ``None`` when it cannot be placed.

    ``expected``: where the batches kept so far end; ``gap_end``: the last offset of a
    recorded gap starting at ``expected``; ``following``: the stored base offset of the
    batch right after this one in the file; ``cut``: bytes cut right before this batch.
    """
    base = header.base_offset
    span = header.last_offset_delta + 1
    if span <= 0:
        return None
    if base == expected:
        return base
    if gap_end is not None and base == gap_end + 1:
        return base  # offsets lost to an earlier cut, recorded then
    if base > expected and following == base + span:
        return base  # the next batch confirms it: a gap from an earlier cut
    if header.record_count != span:
        return None  # the header does not say how many offsets it holds
    if cut is not None:
        # Offsets may have been lost with the cut bytes: the next batch says how many,
        # else a base past the log end is taken as written.
        if following is not None and following - span >= expected:
            return following - span
        if base > expected:
            return base
    return expected


def _unplaceable(header: BatchHeader, expected: int) -> str:
    last = header.base_offset + header.last_offset_delta
    return (
        f"batch offsets {header.base_offset}..{last} ({header.record_count} records) do not "
        f"follow offset {expected - 1} and cannot be re-based"
    )


def _side_file(path: Path) -> Path:
    """``<file>.cut-<n>`` with the first ``n`` not taken: each start cuts into a new one."""
    n = 1
    while (side := path.with_name(f"{path.name}.cut-{n}")).exists():
        n += 1
    return side


def _read_gaps(path: Path) -> list[tuple[int, int]]:
    """The offset ranges earlier cuts lost (rule 6); none when missing or unreadable."""
    if not path.exists():
        return []
    try:
        gaps = [(int(first), int(last)) for first, last in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError) as exc:
        logger.warning("gap file %s is unreadable (%s): ignored", path, exc)
        return []
    return gaps


def _write_durably(path: Path, data: bytes) -> None:
    """``data`` as the whole of ``path``, atomically and fsynced (file and directory); on an
    ``OSError`` (a full disk) ``path`` is as it was and no temporary file is left."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def encode_batch(
    values: Sequence[bytes | None],
    timestamp_ms: int,
    keys: Sequence[bytes | None] = (),
    headers: Sequence[Sequence[tuple[str, bytes | None]]] = (),
) -> bytes:
    """One uncompressed v2 batch of ``values`` (kio.records), as a producer would send it;
    record ``i`` has ``keys[i]`` and ``headers[i]`` when given (else no key, no headers)."""
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
            headers=tuple(
                RecordHeader(key=name.encode("utf-8"), value=header)
                for name, header in (headers[index] if index < len(headers) else ())
            ),
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
    """One partition's batches (rules 1-6)."""

    __slots__ = (
        "_batches",
        "_last_offsets",
        "_path",
        "_size",
        "fsync",
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
        #: Whether an append is fsynced before it is acknowledged (rule 4); ``False`` for a
        #: log whose records another store holds durably (``server.offsets_topic``).
        self.fsync = True
        if path is not None:
            self._load(path)

    def _load(self, path: Path) -> None:
        """Rules 5 and 6."""
        if not path.exists():
            return
        data = path.read_bytes()
        gaps_path = path.with_suffix(".gaps")
        gaps = _read_gaps(gaps_path)
        known_gaps = dict(gaps)
        found = _scan(data)
        kept: list[bytes] = []
        aside: list[bytes] = []
        side = _side_file(path)
        changed = False
        pending_cut: _Cut | None = None
        for index, item in enumerate(found):
            if isinstance(item, _Cut):
                aside.append(data[item.start : item.end])
                pending_cut = item if pending_cut is None else pending_cut.joined(item)
                changed = True
                continue
            header = item.header
            expected = self.next_offset
            after = found[index + 1] if index + 1 < len(found) else None
            following = after.header.base_offset if isinstance(after, _Found) else None
            base = _place(header, expected, known_gaps.get(expected), following, pending_cut)
            batch = data[item.start : item.start + header.size]
            if base is None:
                aside.append(batch)
                cut = _Cut(item.start, item.start + header.size, _unplaceable(header, expected))
                pending_cut = cut if pending_cut is None else pending_cut.joined(cut)
                changed = True
                continue
            if pending_cut is not None:
                self._warn_cut(path, pending_cut, expected, base, len(kept), side)
                pending_cut = None
            if base != header.base_offset:
                logger.warning(
                    "partition file %s: re-based the batch at bytes %d..%d from offset %d to "
                    "offset %d (the CRC does not cover a base offset; the log continues at "
                    "offset %d, and the batch's %d records are intact)",
                    path,
                    item.start,
                    item.start + header.size - 1,
                    header.base_offset,
                    base,
                    expected,
                    header.record_count,
                )
                batch = struct.pack(">q", base) + batch[8:]
                changed = True
            if base > expected and known_gaps.get(expected) != base - 1:
                gaps.append((expected, base - 1))
                known_gaps[expected] = base - 1
                changed = True
            last = base + header.last_offset_delta
            self._add(_Batch(base, last, header.max_timestamp, batch))
            kept.append(batch)
        if pending_cut is not None:
            self._warn_cut(path, pending_cut, self.next_offset, None, len(kept), side)
        if changed:
            # The side copy first, then the gaps, then the file: a crash between two steps
            # leaves at worst a duplicate copy, never a byte that exists nowhere.
            if aside:
                _write_durably(side, b"".join(aside))
            if gaps:
                _write_durably(gaps_path, json.dumps(sorted(gaps)).encode())
            _write_durably(path, b"".join(kept))
        self._size = sum(len(b) for b in kept)

    @staticmethod
    def _warn_cut(
        path: Path, cut: _Cut, at: int, following: int | None, kept: int, side: Path
    ) -> None:
        if following is None:
            lost = f"from {at} (the end of the file)"
        elif following > at:
            lost = f"{at}..{following - 1}"
        else:
            lost = "none"
        logger.warning(
            "partition file %s: cut bytes %d..%d (%d bytes) at offset %d: %s; "
            "offsets lost: %s; %d valid batches before kept%s; the cut bytes are in %s",
            path,
            cut.start,
            cut.end - 1,
            cut.end - cut.start,
            at,
            cut.reason,
            lost,
            kept,
            "" if following is None else ", the valid batches after kept",
            side,
        )

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
            # The broker's base offset in front of the rest: one copy of the batch, not
            # two (a slice, then the concatenation).
            data = b"".join((struct.pack(">q", base), memoryview(client_batch.data)[8:]))
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
                if self.fsync:
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


_PARTITION_FILE = re.compile(r"^(.{22})-(\d+)\.log$")


def _read_catalog(catalog: Path) -> list[tuple[str, Uuid, int]]:
    """``topics.json``'s topics (rule 7); ``StoreError`` names the file when unreadable."""
    if not catalog.exists():
        return []
    try:
        entries = json.loads(catalog.read_text(encoding="utf-8"))
        topics = [
            (str(e["name"]), Uuid.from_string(e["id"]), int(e["partitions"])) for e in entries
        ]
        for name, _, partitions in topics:
            if not _valid_topic_name(name) or not 0 < partitions <= _MAX_PARTITIONS:
                raise ValueError(f"topic {name!r} with {partitions} partitions")
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"cannot read the topic list {catalog}: {exc}") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise StoreError(
            f"{catalog} is not a readable topic list ({type(exc).__name__}: {exc}): restore "
            "it from a backup (the partition files beside it are untouched)"
        ) from None
    return topics


def _refuse_unlisted(directory: Path, listed: dict[Uuid, TopicLog]) -> None:
    """Rule 7: partition files of a topic ``topics.json`` does not list stop the start."""
    unlisted: dict[str, list[int]] = {}
    for path in directory.glob("*.log"):
        match = _PARTITION_FILE.match(path.name)
        if match is None:
            continue
        try:
            topic_id = Uuid.from_string(match.group(1))
        except ValueError:
            continue
        topic = listed.get(topic_id)
        partition = int(match.group(2))
        if topic is None or partition >= len(topic.partitions):
            unlisted.setdefault(str(topic_id), []).append(partition)
    if not unlisted:
        return
    found = ", ".join(
        f"{i} ({len(p)} partition files, the highest {max(p)})" for i, p in sorted(unlisted.items())
    )
    raise StoreError(
        f"{directory} holds partition files that {directory / 'topics.json'} does not list "
        f"(topic ids {found}); topic names are kept only in topics.json, so starting would "
        "hide these topics and their records: restore topics.json from a backup, or add "
        '{"name": NAME, "id": ID, "partitions": N} for each, or move their files aside'
    )


class Log:
    """Every topic's partitions; in memory, or on disk under ``directory`` (rule 7)."""

    def __init__(
        self, directory: Path | None = None, max_message_bytes: int = MAX_MESSAGE_BYTES
    ) -> None:
        self.directory = directory
        self.max_message_bytes = max_message_bytes
        self.topics: dict[str, TopicLog] = {}
        self._by_id: dict[Uuid, TopicLog] = {}
        #: Topics created since ``topics.json`` was last written (``save_catalog``).
        self._unsaved: list[str] = []
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            for name, topic_id, partitions in _read_catalog(directory / "topics.json"):
                self._open(name, topic_id, partitions)
            _refuse_unlisted(directory, self._by_id)

    def _open(self, name: str, topic_id: Uuid, partitions: int) -> TopicLog:
        topic = TopicLog(name, topic_id)
        for index in range(partitions):
            path = None if self.directory is None else self.directory / f"{topic_id}-{index}.log"
            topic.partitions.append(PartitionLog(path, self.max_message_bytes))
        self.topics[name] = topic
        self._by_id[topic_id] = topic
        return topic

    def save_catalog(self) -> None:
        """Write ``topics.json`` (once per request that creates topics, not once per topic).

        A write that fails (a full disk) forgets the topics created since the last
        save, so no topic lives that a restart would not find (rule 7), and raises
        KAFKA_STORAGE_ERROR.
        """
        created, self._unsaved = self._unsaved, []
        if self.directory is None:
            return
        entries = [
            {"name": t.name, "id": str(t.topic_id), "partitions": len(t.partitions)}
            for t in self.topics.values()
        ]
        catalog = self.directory / "topics.json"
        try:
            _write_durably(catalog, json.dumps(entries).encode())
        except OSError as exc:
            for name in created:
                topic = self.topics.pop(name, None)
                if topic is not None:
                    self._by_id.pop(topic.topic_id, None)
            raise KafkaProtocolError(
                ErrorCode.KAFKA_STORAGE_ERROR,
                f"cannot write {catalog}: {exc.strerror or exc}; topics not created: "
                f"{', '.join(created)}",
            ) from None

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
        self._unsaved.append(name)
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
        """The topics the group coordinator sees: all but ``__consumer_offsets``, so a
        KIP-848 regular expression never resolves to the coordinator's own topic."""
        return MetadataImage.of(
            TopicImage(t.topic_id, t.name, len(t.partitions))
            for t in self.topics.values()
            if t.name != OFFSETS_TOPIC
        )

    def close(self) -> None:
        for topic in self.topics.values():
            for partition in topic.partitions:
                partition.close()
