"""Real clients against a SASL/ACL ``regroup serve``: kafka-python, aiokafka, confluent-kafka.

Each client authenticates with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512,
produces to and consumes from a topic its ACLs allow, in a group its ACLs
allow, and commits; it is refused with Kafka's error when the group ACL is
missing, and a wrong password fails the login. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from regroup.server.background import BackgroundServer
from tests.server.security_support import MECHANISMS, PASSWORDS, secure_options

TOPIC = "orders"

pytestmark = pytest.mark.xdist_group("heavy")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    options = secure_options(tmp_path_factory.mktemp("sasl"), "SASL_PLAINTEXT://127.0.0.1:0")
    with BackgroundServer(options) as running:
        assert running.server is not None
        running.call(running.server.create_topic, TOPIC, 2)
        running.call(running.server.create_topic, "secret", 1)
        yield running


# -- kafka-python -----------------------------------------------------------------------


def _kafka_python(bootstrap: str, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap_servers": bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": password,
        "request_timeout_ms": 10000,
    }


def kafka_python_round_trip(bootstrap: str, mechanism: str, group: str, value: bytes) -> int:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    conf = _kafka_python(bootstrap, mechanism, "alice", PASSWORDS["alice"])
    producer = KafkaProducer(**conf)
    producer.send(TOPIC, value, partition=0).get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=8000,
        **conf,
    )
    try:
        consumer.subscribe([TOPIC])
        for record in consumer:
            if record.value == value:
                consumer.commit()
                committed = consumer.committed(TopicPartition(TOPIC, record.partition))
                return int(committed)
        raise AssertionError("the produced record never came")
    finally:
        consumer.close()


# -- aiokafka ---------------------------------------------------------------------------


def aiokafka_round_trip(bootstrap: str, mechanism: str, group: str, value: bytes) -> int:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    conf = {
        "bootstrap_servers": bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": PASSWORDS["alice"],
    }

    async def run() -> int:
        producer = AIOKafkaProducer(**conf)
        await producer.start()
        try:
            await producer.send_and_wait(TOPIC, value, partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            TOPIC, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False, **conf
        )
        await consumer.start()
        try:
            async with asyncio.timeout(10):
                async for record in consumer:
                    if record.value == value:
                        await consumer.commit()
                        tp = TopicPartition(TOPIC, record.partition)
                        return int(await consumer.committed(tp))
        finally:
            await consumer.stop()
        raise AssertionError("the produced record never came")

    return asyncio.run(run())


# -- confluent-kafka (librdkafka) ----------------------------------------------------------


def _confluent(bootstrap: str, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def confluent_round_trip(bootstrap: str, mechanism: str, group: str, value: bytes) -> int:
    from confluent_kafka import Consumer, Producer, TopicPartition

    conf = _confluent(bootstrap, mechanism, "alice", PASSWORDS["alice"])
    producer = Producer(conf)
    producer.produce(TOPIC, value, partition=0)
    assert producer.flush(10) == 0
    consumer = Consumer(
        {**conf, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    try:
        consumer.subscribe([TOPIC])
        for _ in range(40):
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                raise RuntimeError(error.name())
            if message.value() == value:
                consumer.commit(message=message, asynchronous=False)
                partition = message.partition()
                assert partition is not None
                (tp,) = consumer.committed([TopicPartition(TOPIC, partition)], 10)
                return int(tp.offset)
        raise AssertionError("the produced record never came")
    finally:
        consumer.close()


ROUND_TRIPS = {
    "kafka-python": kafka_python_round_trip,
    "aiokafka": aiokafka_round_trip,
    "confluent": confluent_round_trip,
}


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("client", sorted(ROUND_TRIPS))
def test_a_client_authenticates_and_works_where_its_acls_allow(
    server: BackgroundServer, client: str, mechanism: str
) -> None:
    value = uuid.uuid4().bytes
    committed = ROUND_TRIPS[client](server.bootstrap, mechanism, "shop", value)
    assert committed >= 1


def _group_refusal(client: str, bootstrap: str, mechanism: str) -> str:
    """The error a client reports when its group has no ACL."""
    try:
        ROUND_TRIPS[client](bootstrap, mechanism, "not-alices-group", uuid.uuid4().bytes)
    except Exception as exc:  # each client has its own exception type: compare by name
        return f"{type(exc).__name__}: {exc}"
    return "no error"


@pytest.mark.parametrize("client", sorted(ROUND_TRIPS))
def test_a_group_without_an_acl_is_refused_with_group_authorization_failed(
    server: BackgroundServer, client: str
) -> None:
    refusal = _group_refusal(client, server.bootstrap, "SCRAM-SHA-256")
    assert "GROUP_AUTHORIZATION_FAILED" in refusal.upper().replace(" ", "_") or (
        "GroupAuthorizationFailed" in refusal
    ), refusal


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_wrong_password_fails_authentication(
    server: BackgroundServer, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    conf = _kafka_python(server.bootstrap, mechanism, "alice", "wrong")
    with pytest.raises(KafkaError):
        KafkaProducer(**conf, bootstrap_timeout_ms=4000)
    # kafka-python retries the bootstrap; each attempt logs the broker's answer.
    expected = (
        "Authentication failed: Invalid username or password"
        if mechanism == "PLAIN"
        else "Authentication failed during authentication due to invalid credentials with "
        f"SASL mechanism {mechanism}"
    )
    assert any(
        "SaslAuthenticationFailedError" in r.getMessage() and expected in r.getMessage()
        for r in caplog.records
    ), [r.getMessage() for r in caplog.records]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_confluent_wrong_password_reports_kafkas_message(
    server: BackgroundServer, mechanism: str
) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list[str] = []
    conf = _confluent(server.bootstrap, mechanism, "alice", "wrong")
    # confluent-kafka's stubs type config values as str | int | float; error_cb is a callable.
    admin = AdminClient({**conf, "error_cb": lambda err: errors.append(err.str())})  # type: ignore[dict-item]
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    admin.poll(0.5)  # serve the error callbacks
    expected = "Invalid username or password" if mechanism == "PLAIN" else "invalid credentials"
    assert any("SASL authentication error" in e and expected in e for e in errors), errors


def test_aiokafka_wrong_password_fails_authentication(
    server: BackgroundServer, caplog: pytest.LogCaptureFixture
) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    async def run() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=server.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="alice",
            sasl_plain_password="wrong",
        )
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(KafkaError):
        asyncio.run(run())
    expected = (
        "[Error 58] SaslAuthenticationFailed: Authentication failed during authentication "
        "due to invalid credentials with SASL mechanism SCRAM-SHA-512"
    )
    assert any(expected in r.getMessage() for r in caplog.records)


def test_a_stranger_cannot_commit_for_another_principals_group(server: BackgroundServer) -> None:
    """mallory (authenticated, with ACLs of her own) commits for alice's group "shop".

    Already FindCoordinator is refused (DESCRIBE on the group), as Kafka refuses it;
    librdkafka then waits for a coordinator forever (_WAIT_COORD), so kafka-python shows
    the error.
    """
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaPythonTopicPartition
    from kafka.errors import GroupAuthorizationFailedError
    from kafka.structs import OffsetAndMetadata

    kp = KafkaConsumer(
        group_id="shop",
        enable_auto_commit=False,
        **_kafka_python(server.bootstrap, "SCRAM-SHA-512", "mallory", PASSWORDS["mallory"]),
    )
    try:
        kp.assign([KafkaPythonTopicPartition(TOPIC, 0)])
        with pytest.raises(GroupAuthorizationFailedError):
            kp.commit({KafkaPythonTopicPartition(TOPIC, 0): OffsetAndMetadata(1, "", -1)})
    finally:
        kp.close()
