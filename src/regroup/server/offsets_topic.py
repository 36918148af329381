"""``__consumer_offsets``: the coordinator's records as Kafka's readable internal topic.

Kafka's group coordinator writes every record (``regroup.records``) to partition
``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`` of
``__consumer_offsets`` (``GroupCoordinatorService.partitionFor``), key and value in
the binary format of its ``group-coordinator`` schemas (``regroup.records.kafka_format``).
A client reads the topic like any other (Fetch, ListOffsets) and a tool that decodes
it (``kafka-console-consumer`` with Kafka's ``GroupMetadataMessageFormatter`` /
``OffsetsMessageFormatter``) sees what it sees on Kafka. Rules:

1. The topic is created as Kafka creates it: on first use (the first record the
   coordinator writes; a Metadata request naming it with auto-creation; or at a
   start whose store holds records), with ``offsets.topic.num.partitions``
   partitions. An existing topic keeps its partition count.
2. Each step's records go, after the coordinator store committed them, to their
   partitions in the order the coordinator wrote them: one batch per partition and
   step (a batch over ``message.max.bytes`` is split per record; a single record
   over it is left out, logged; so is a record Kafka's format cannot hold, such as a
   group id or member id longer than an int16 string length, which regroup accepts
   and Kafka's schemas cannot write). The store is the record of truth, the topic its
   log: on a ``--data-dir`` server the topic's partition logs are files, so its
   offsets are stable across restarts; a data directory that has a store but no
   topic yet gets the topic filled from the store, in the store's order. The
   store's commit is the step's one fsync: the topic's appends are written but not
   fsynced on their own (a second fsync per commit would double its latency), so a
   machine crash, not a process crash, may cut the topic's last records, which the
   store still holds.
3. Metadata lists it with ``is_internal`` true: when all topics are asked for, as
   Kafka's ``KafkaApis.handleTopicMetadataRequest`` does (clients drop internal
   topics from pattern subscriptions by ``exclude.internal.topics``), and by name.
   The group coordinator's metadata image leaves it out, so a KIP-848 regular
   expression never matches it.
4. Clients cannot write to it: a Produce to it is INVALID_TOPIC_EXCEPTION per
   partition (Kafka's ``ReplicaManager.appendToLocalLog``, "Cannot append to
   internal topic").

Records regroup has that Kafka's topic has no type for (``ConsumerGroupConfig``,
a regroup extension) stay in the store only.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterable, Sequence

from crc32c import crc32c

from regroup.brokerlog.partition import (
    DEFAULT_OFFSETS_PARTITIONS,
    OFFSETS_TOPIC,
    coordinator_partition,
)
from regroup.model.errors import KafkaProtocolError
from regroup.records import CoordinatorRecord
from regroup.records.kafka_format import KafkaFormatError, encode_record, in_kafka_format
from regroup.server.log.partitions import Log, PartitionLog, TopicLog
from regroup.server.log.record_batch import write_varint

__all__ = [
    "DEFAULT_OFFSETS_PARTITIONS",
    "OFFSETS_TOPIC",
    "OffsetsTopic",
    "coordinator_batch",
    "group_of",
    "is_internal",
]

logger = logging.getLogger(__name__)

#: A v2 batch's fields from ``attributes`` on (``DefaultRecordBatch``), and its start.
_AFTER_CRC = struct.Struct(">hiqqqhii")
_BEFORE_CRC = struct.Struct(">qiibI")
_NO_PRODUCER = -1


def coordinator_batch(records: Sequence[tuple[bytes, bytes | None]], timestamp_ms: int) -> bytes:
    """One uncompressed v2 batch of key/value records, as Kafka's coordinator writes a
    step's records (``MemoryRecords.withRecords``: no producer, CREATE_TIME ``timestamp``)."""
    body = bytearray()
    for delta, (key, value) in enumerate(records):
        record = b"".join(
            (
                b"\x00",  # attributes
                write_varint(0),  # timestamp delta
                write_varint(delta),
                write_varint(len(key)),
                key,
                write_varint(-1) if value is None else write_varint(len(value)),
                b"" if value is None else value,
                write_varint(0),  # headers
            )
        )
        body += write_varint(len(record))
        body += record
    count = len(records)
    after_crc = (
        _AFTER_CRC.pack(0, count - 1, timestamp_ms, timestamp_ms, _NO_PRODUCER, -1, -1, count)
        + body
    )
    # Batch length: the bytes after the length field (leader epoch, magic, CRC: 9).
    return _BEFORE_CRC.pack(0, len(after_crc) + 9, -1, 2, crc32c(after_crc)) + after_crc


def is_internal(topic: str | None) -> bool:
    """Whether ``topic`` is one of regroup's internal topics (Kafka's ``Topic.isInternal``)."""
    return topic == OFFSETS_TOPIC


def group_of(record: CoordinatorRecord) -> str:
    """The group a record belongs to (``group`` or ``group_id`` of its key)."""
    key = record.key
    group = getattr(key, "group_id", None)
    if group is None:
        group = getattr(key, "group", "")
    return str(group)


class OffsetsTopic:
    """Writes the coordinator's records to ``__consumer_offsets`` in ``log`` (rules 1-2).

    ``on_appended(partition, bytes)``: called per partition appended to, so parked
    Fetches of it complete.
    """

    def __init__(
        self,
        log: Log,
        partitions: int,
        on_appended: Callable[[int, int], None] | None = None,
    ) -> None:
        if partitions < 1:
            raise ValueError(f"offsets.topic.num.partitions must be at least 1, got {partitions}")
        self.log = log
        self.partitions = partitions
        self.on_appended = on_appended
        #: Records left out (over ``message.max.bytes``, or the log refused them).
        self.dropped = 0

    @property
    def topic(self) -> TopicLog | None:
        return self.log.topic(OFFSETS_TOPIC)

    def ensure(self) -> TopicLog | None:
        """The topic, created with ``offsets.topic.num.partitions`` partitions if missing
        (``None`` if the catalog cannot be written: logged, tried again on next use)."""
        topic = self.topic
        if topic is not None:
            return topic
        try:
            return self.log.create_topic(OFFSETS_TOPIC, self.partitions)
        except KafkaProtocolError as exc:
            logger.error("cannot create %s: %s", OFFSETS_TOPIC, exc.message)
            return None

    def fill_from_store(self, records: Iterable[CoordinatorRecord], now_ms: int) -> None:
        """Rule 2's first start with a store and no topic: the store's records, in order."""
        if self.topic is not None:
            return
        stored = [r for r in records if in_kafka_format(r)]
        if stored:
            self.append(stored, now_ms)

    def append(self, records: Iterable[CoordinatorRecord], now_ms: int) -> None:
        """One step's records, after the store committed them (rule 2)."""
        by_partition: dict[int, list[tuple[bytes, bytes | None]]] = {}
        topic: TopicLog | None = None
        for record in records:
            if not in_kafka_format(record):
                continue
            if topic is None:
                topic = self.ensure()
                if topic is None:
                    return
                for partition in topic.partitions:
                    partition.fsync = False
            try:
                key_value = encode_record(record)
            except KafkaFormatError as exc:
                self.dropped += 1
                logger.warning("a coordinator record left out of %s: %s", OFFSETS_TOPIC, exc)
                continue
            index = coordinator_partition(group_of(record), len(topic.partitions))
            by_partition.setdefault(index, []).append(key_value)
        if topic is None:
            return
        for index, encoded in by_partition.items():
            partition = topic.partitions[index]
            size = self._append(partition, encoded, now_ms)
            if size and self.on_appended is not None:
                self.on_appended(index, size)

    def _append(
        self, partition: PartitionLog, encoded: list[tuple[bytes, bytes | None]], now_ms: int
    ) -> int:
        batch = coordinator_batch(encoded, now_ms)
        try:
            partition.append(batch)
            return len(batch)
        except KafkaProtocolError as exc:
            if len(encoded) == 1:
                self.dropped += 1
                logger.error("a coordinator record left out of %s: %s", OFFSETS_TOPIC, exc.message)
                return 0
        return sum(self._append(partition, [one], now_ms) for one in encoded)
