"""``__consumer_offsets``: the coordinator's records, readable in Kafka's format.

Unit tests of ``regroup.server.offsets_topic`` on an in-memory log, then the server
with real clients: confluent-kafka reads the topic and ``regroup.records.kafka_format``
decodes what it read (a commit's offset, the group's metadata); Metadata flags the
topic internal; a Produce to it is refused; its offsets survive a restart.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kio.records.readers import read_batch

from regroup.brokerlog.partition import coordinator_partition
from regroup.model.requests.consumer import TopicPartitions
from regroup.model.uuid import Uuid
from regroup.records import CoordinatorRecord
from regroup.records.classic import GroupMetadataKey, GroupMetadataValue
from regroup.records.consumer import (
    ConsumerGroupConfigKey,
    ConsumerGroupConfigValue,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    GroupConfigEntry,
)
from regroup.records.kafka_format import decode_record
from regroup.records.offsets import OffsetCommitKey, OffsetCommitValue
from regroup.server.background import BackgroundServer
from regroup.server.clients.wire_client import WireClient
from regroup.server.limits import ServerLimits
from regroup.server.log.partitions import Log, encode_batch
from regroup.server.log.record_batch import check_client_batch
from regroup.server.offsets_topic import OFFSETS_TOPIC, OffsetsTopic, coordinator_batch
from tests.server.conftest import fast_options

confluent_kafka = pytest.importorskip("confluent_kafka")


def _read(log: Log, partition: int) -> list[tuple[int, CoordinatorRecord]]:
    """Every record of one partition, with its offset, decoded from Kafka's format."""
    part = log.partition(OFFSETS_TOPIC, partition)
    assert part is not None
    data = part.read(0, 1 << 30)
    out: list[tuple[int, CoordinatorRecord]] = []
    pos = 0
    while pos < len(data):
        batch, size = read_batch(data, pos)
        for record in batch.records:
            value = None if record.value is None else bytes(record.value)
            assert record.key is not None
            out.append((record.offset, decode_record(bytes(record.key), value)))
        pos += size
    return out


def _commit(group: str, offset: int) -> CoordinatorRecord:
    return CoordinatorRecord(OffsetCommitKey(group, "orders", 0), OffsetCommitValue(offset))


def test_records_go_to_their_groups_partition_in_write_order() -> None:
    log = Log()
    appended: list[tuple[int, int]] = []
    topic = OffsetsTopic(log, 50, on_appended=lambda p, n: appended.append((p, n)))
    assert log.topic(OFFSETS_TOPIC) is None  # created on first use, as Kafka does
    step1 = [
        CoordinatorRecord(ConsumerGroupMetadataKey("g1"), ConsumerGroupMetadataValue(1)),
        CoordinatorRecord(
            ConsumerGroupTargetAssignmentMemberKey("g1", "m"),
            ConsumerGroupTargetAssignmentMemberValue((TopicPartitions(Uuid(1, 2), (0,)),)),
        ),
        _commit("other", 5),
        CoordinatorRecord(
            ConsumerGroupConfigKey("g1"), ConsumerGroupConfigValue((GroupConfigEntry("a", "b"),))
        ),
    ]
    topic.append(step1, 1_000)
    topic.append([_commit("g1", 7), CoordinatorRecord(OffsetCommitKey("g1", "orders", 0), None)], 2)
    created = log.topic(OFFSETS_TOPIC)
    assert created is not None and len(created.partitions) == 50
    p1 = coordinator_partition("g1", 50)
    assert p1 != coordinator_partition("other", 50)
    # The regroup-only config record is not in Kafka's topic; the rest in order, offsets dense.
    assert _read(log, p1) == [
        (0, step1[0]),
        (1, step1[1]),
        (2, _commit("g1", 7)),
        (3, CoordinatorRecord(OffsetCommitKey("g1", "orders", 0), None)),
    ]
    assert _read(log, coordinator_partition("other", 50)) == [(0, step1[2])]
    assert {p for p, _ in appended} == {p1, coordinator_partition("other", 50)}
    assert log.metadata_image().topic(OFFSETS_TOPIC) is None  # the coordinator never sees it


def test_coordinator_batch_is_a_valid_v2_batch_of_its_records() -> None:
    records = [(b"k1", b"v1"), (b"k2", None), (b"k" * 200, b"v" * 300)]
    batch = coordinator_batch(records, 1_700_000_000_123)
    checked = check_client_batch(batch, 0, 1 << 20)  # length, CRC, counts, record layout
    assert checked.consumed == len(batch) and checked.header.last_offset_delta == 2
    decoded, size = read_batch(batch, 0)
    assert size == len(batch)
    assert [(r.key, r.value) for r in decoded.records] == records
    assert decoded.producer_id == -1
    assert checked.header.max_timestamp == 1_700_000_000_123
    assert checked.header.magic == 2 and checked.header.attributes == 0


def test_a_store_without_the_topic_fills_it_once_in_store_order() -> None:
    log = Log()
    topic = OffsetsTopic(log, 3)
    stored = [_commit("g", 1), _commit("g", 2)]
    topic.fill_from_store(stored, 0)
    topic.fill_from_store(stored, 0)  # the topic exists now: nothing twice
    assert [r for _, r in _read(log, coordinator_partition("g", 3))] == stored


def test_a_record_over_message_max_bytes_is_left_out_alone() -> None:
    log = Log(max_message_bytes=400)
    topic = OffsetsTopic(log, 1)
    big = CoordinatorRecord(
        GroupMetadataKey("g"), GroupMetadataValue("consumer", 1, "x" * 600, None, 0)
    )
    topic.append([_commit("g", 1), big, _commit("g", 2)], 0)
    assert [r for _, r in _read(log, 0)] == [_commit("g", 1), _commit("g", 2)]
    assert topic.dropped == 1


def test_a_record_kafkas_format_cannot_hold_is_left_out_alone() -> None:
    """A group id over an int16 string's 32,767 bytes: regroup's store takes it, Kafka's
    schemas cannot write it; the topic leaves it out and serving goes on."""
    log = Log()
    topic = OffsetsTopic(log, 1)
    long_id = "g" * 40_000
    topic.append([_commit("g", 1), _commit(long_id, 7), _commit("g", 2)], 0)
    assert [r for _, r in _read(log, 0)] == [_commit("g", 1), _commit("g", 2)]
    assert topic.dropped == 1


def test_existing_topic_keeps_its_partition_count() -> None:
    log = Log()
    log.create_topic(OFFSETS_TOPIC, 4)
    topic = OffsetsTopic(log, 50)
    topic.append([_commit("g", 1)], 0)
    assert [r for _, r in _read(log, coordinator_partition("g", 4))] == [_commit("g", 1)]


# -- the server, with real clients ---------------------------------------------------------


def _metadata(client: WireClient, topics: list[str] | None, create: bool = False) -> Any:
    return client.request(
        3,
        12,
        {
            "topics": None if topics is None else [{"name": t, "topic_id": None} for t in topics],
            "allow_auto_topic_creation": create,
            "include_topic_authorized_operations": False,
        },
    )


def _commit_with_a_group(bootstrap: str, group: str, protocol: str = "classic") -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap})
    for i in range(5):
        producer.produce("orders", value=b"v%d" % i, partition=0)
    assert producer.flush(10) == 0
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **({"session.timeout.ms": 6000} if protocol == "classic" else {}),
            "group.protocol": protocol,
        }
    )
    consumer.subscribe(["orders"])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 5 and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            seen += 1
    assert seen == 5
    consumer.commit(asynchronous=False)
    consumer.close()


def _read_offsets_topic(bootstrap: str, partition: int) -> list[tuple[int, CoordinatorRecord]]:
    """What a client reads of one ``__consumer_offsets`` partition, decoded."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(OFFSETS_TOPIC, partition, 0)])
    out: list[tuple[int, CoordinatorRecord]] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error() is not None:
            assert msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF
            break
        out.append((msg.offset(), decode_record(msg.key(), msg.value())))
    consumer.close()
    return out


def test_a_real_client_reads_commits_and_group_metadata(tmp_path: Path) -> None:
    group = "offsets-reader-g"
    partition = coordinator_partition(group, 50)
    with BackgroundServer(fast_options(tmp_path)) as server:
        _commit_with_a_group(server.bootstrap, group)
        records = _read_offsets_topic(server.bootstrap, partition)
        with WireClient("127.0.0.1", server.port, timeout=10) as client:
            everything = _metadata(client, None)
            (listed,) = [t for t in everything.topics if t.name == OFFSETS_TOPIC]
            assert listed.is_internal and len(listed.partitions) == 50
            assert not next(t for t in everything.topics if t.name == "orders").is_internal
            (named,) = _metadata(client, [OFFSETS_TOPIC]).topics
            assert named.is_internal and named.error_code.value == 0
            refused = client.request(
                0,
                9,
                {
                    "transactional_id": None,
                    "acks": -1,
                    "timeout": 5000,
                    "topic_data": [
                        {
                            "name": OFFSETS_TOPIC,
                            "partition_data": [
                                {"index": partition, "records": encode_batch([b"x"], 0, [b"k"])}
                            ],
                        }
                    ],
                },
            )
            (answer,) = refused.responses[0].partition_responses
            assert answer.error_code.value == 17  # INVALID_TOPIC_EXCEPTION
    commits = [r for _, r in records if isinstance(r.key, OffsetCommitKey)]
    assert commits[-1].key == OffsetCommitKey(group, "orders", 0)
    last = commits[-1].value
    assert isinstance(last, OffsetCommitValue) and (last.offset, last.metadata) == (5, "")
    assert last.commit_timestamp > 1_600_000_000_000
    metadata = [r.value for _, r in records if isinstance(r.key, GroupMetadataKey)]
    stable = [v for v in metadata if isinstance(v, GroupMetadataValue) and v.members]
    assert stable and stable[0].protocol_type == "consumer" and stable[0].protocol == "range"
    assert [o for o, _ in records] == list(range(len(records)))
    # A restart of the --data-dir server reads the same records at the same offsets.
    with BackgroundServer(fast_options(tmp_path)) as server:
        assert _read_offsets_topic(server.bootstrap, partition) == records


def test_a_real_client_reads_a_consumer_groups_records() -> None:
    """KIP-848: the ConsumerGroup* records (flexible versions, tagged fields) over the wire."""
    group = "offsets-reader-kip848"
    with BackgroundServer(fast_options()) as server:
        _commit_with_a_group(server.bootstrap, group, protocol="consumer")
        records = _read_offsets_topic(server.bootstrap, coordinator_partition(group, 50))
    kinds = {type(r.key) for _, r in records}
    assert {
        ConsumerGroupMetadataKey,
        ConsumerGroupMemberMetadataKey,
        ConsumerGroupTargetAssignmentMemberKey,
        ConsumerGroupCurrentMemberAssignmentKey,
        OffsetCommitKey,
    } <= kinds
    assigned = [
        r.value
        for _, r in records
        if isinstance(r.value, ConsumerGroupCurrentMemberAssignmentValue)
        and r.value.assigned_partitions
    ]
    assert assigned and assigned[0].member_epoch >= 1
    assert sorted(assigned[0].assigned_partitions[0].partitions) == [0, 1, 2]
    members = [r.value for _, r in records if isinstance(r.value, ConsumerGroupMemberMetadataValue)]
    assert members and members[0].subscribed_topic_names == ("orders",)
    # The member left on close: its records end in tombstones, as Kafka writes them.
    last_member = [r for _, r in records if isinstance(r.key, ConsumerGroupMemberMetadataKey)][-1]
    assert last_member.is_tombstone
    commit = [r.value for _, r in records if r.key == OffsetCommitKey(group, "orders", 0)][-1]
    assert isinstance(commit, OffsetCommitValue) and commit.offset == 5


def test_metadata_naming_the_topic_first_creates_it_with_its_partition_count() -> None:
    """Kafka's auto-creation of an internal topic: ``offsets.topic.num.partitions``
    partitions, not ``num.partitions``; without auto-creation it is unknown until used."""
    options = fast_options(limits=ServerLimits(offsets_topic_num_partitions=7))
    with BackgroundServer(options) as server, WireClient("127.0.0.1", server.port) as client:
        (unknown,) = _metadata(client, [OFFSETS_TOPIC]).topics
        assert unknown.error_code.value == 3  # UNKNOWN_TOPIC_OR_PARTITION
        (created,) = _metadata(client, [OFFSETS_TOPIC], create=True).topics
        assert created.error_code.value == 0 and created.is_internal
        assert len(created.partitions) == 7
