"""``Broker``'s test data and reproducibility: topics as names or counts, records with
keys and headers (placed by Kafka's partitioner, read back by a real client),
classic member ids fixed by a seed, ``ControlError`` from ``regroup.testing``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from regroup.server.clients.wire_client import WireClient
from regroup.server.control.records import murmur2, partition_for_key
from regroup.testing import Broker, ControlError

JOIN_V9 = {
    "group_id": "g",
    "session_timeout": 6000,
    "rebalance_timeout": 6000,
    "member_id": "",
    "group_instance_id": None,
    "protocol_type": "consumer",
    "protocols": [{"name": "range", "metadata": b""}],
}


def test_control_error_is_importable_from_regroup_testing() -> None:
    from regroup.server.control.commands import ControlError as Original

    assert ControlError is Original
    with Broker() as broker, pytest.raises(ControlError, match="no topic"):
        broker.produce("missing", ["x"])


def test_topics_as_names_or_as_partition_counts() -> None:
    with Broker(topics=["orders", "payments"], default_partitions=3) as broker:
        metadata = broker.server.coordinator.metadata

        def counts() -> dict[str, int | None]:
            return {
                n: getattr(metadata.topic(n), "partitions", None) for n in ("orders", "payments")
            }

        assert broker.call(counts) == {"orders": 3, "payments": 3}
    with Broker(topics={"orders": 2}) as broker:
        assert broker.produce("orders", ["a", "b"]) == {0: 0, 1: 0}
    with pytest.raises(ControlError, match="not one name"):
        Broker(topics="orders")


@pytest.mark.regroup_broker(topics=["events"], default_partitions=2)
def test_the_mark_takes_a_list_of_topics(regroup_broker: Broker) -> None:
    assert regroup_broker.produce("events", ["a", "b"]) == {0: 0, 1: 0}


# Kafka's own expectations of Utils.murmur2 (clients' UtilsTest.testMurmur2).
KAFKA_MURMUR2 = {
    "21": -973932308,
    "foobar": -790332482,
    "a-little-bit-long-string": -985981536,
    "a-little-bit-longer-string": -1486304829,
    "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    "abc": 479470107,
}


def test_murmur2_is_kafkas() -> None:
    assert {key: murmur2(key.encode()) for key in KAFKA_MURMUR2} == KAFKA_MURMUR2


@given(st.binary(max_size=64), st.integers(min_value=1, max_value=64))
def test_a_key_goes_where_kafka_python_s_default_partitioner_sends_it(
    key: bytes, partitions: int
) -> None:
    # kafka-python's DefaultPartitioner: murmur2 & 0x7fffffff, modulo the partition count.
    expected = (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions
    assert partition_for_key(key, partitions) == expected


def _read_back(broker: Broker, topic: str, partitions: int, count: int) -> list[Any]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "reader", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got: list[Any] = []
        for _ in range(200):
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                got.append(message)
            if len(got) == count:
                break
        return got
    finally:
        consumer.close()


def test_records_with_keys_and_headers_reach_a_real_client() -> None:
    with Broker(topics={"orders": 4}) as broker:
        written = broker.produce(
            "orders",
            ["v1", b"v2", "v3", "v4"],
            keys=["alpha", None, b"beta", "alpha"],
            headers=[{"trace": "t1"}, [("h", b"1"), ("h", None)], None, {"trace": "t4"}],
        )
        alpha, beta = partition_for_key(b"alpha", 4), partition_for_key(b"beta", 4)
        assert alpha in written and beta in written
        seen = _read_back(broker, "orders", 4, 4)
        by_value = {m.value(): (m.partition(), m.key(), m.headers()) for m in seen}
        assert by_value[b"v1"] == (alpha, b"alpha", [("trace", b"t1")])
        assert by_value[b"v4"] == (alpha, b"alpha", [("trace", b"t4")])
        assert by_value[b"v3"] == (beta, b"beta", None)
        # Unkeyed: round-robin from partition 0; headers in order, repeats and nulls kept.
        assert by_value[b"v2"] == (0, None, [("h", b"1"), ("h", None)])
        # Same key, same partition, in order.
        assert [m.value() for m in seen if m.key() == b"alpha"] == [b"v1", b"v4"]


def test_keys_and_headers_must_match_the_records() -> None:
    with Broker(topics={"orders": 2}) as broker:
        with pytest.raises(ControlError, match="keys needs one entry per record"):
            broker.produce("orders", ["a", "b"], keys=["k"])
        with pytest.raises(ControlError, match="header is a"):
            broker.produce("orders", ["a"], headers=[["not-a-pair"]])
        with pytest.raises(ControlError, match="record key is a str, bytes or None"):
            broker.produce("orders", ["a"], keys=[5])  # type: ignore[list-item]


def _member_ids(seed: int | None, clients: list[str]) -> list[str]:
    with Broker(seed=seed) as broker, WireClient("127.0.0.1", broker.port) as client:
        out = []
        for client_id in clients:
            client.client_id = client_id
            joined = client.request(11, 9, JOIN_V9)
            assert int(getattr(joined.error_code, "value", joined.error_code)) == 79
            out.append(str(joined.member_id))
        return out


def test_a_seed_fixes_classic_member_ids() -> None:
    clients = ["app-1", "app-2"]
    first = _member_ids(7, clients)
    assert first == _member_ids(7, clients)
    assert first != _member_ids(8, clients)
    assert all(
        member.startswith(f"{client}-") for member, client in zip(first, clients, strict=True)
    )
