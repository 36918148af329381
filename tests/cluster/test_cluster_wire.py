"""What each broker of ``Broker(brokers=3)`` answers on the wire (Kafka's answers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from regroup.model.errors import ErrorCode
from regroup.server.clients.wire_client import WireClient, fetch_values
from regroup.server.cluster.topology import Topology
from regroup.testing import Broker
from regroup.testing.broker import ControlError
from tests.cluster.cluster_clients import group_led_by

TOPIC = "orders"


def _client(broker: Broker, node: int) -> WireClient:
    port = broker.brokers()["brokers"][node]["port"]
    return WireClient("127.0.0.1", port, client_id="wire")


def _code(value: Any) -> int:
    return int(getattr(value, "value", value))


@pytest.fixture
def cluster() -> Any:
    with Broker(brokers=3, topics={TOPIC: 3}, racks=["r0", "r1", "r2"]) as broker:
        yield broker


def test_metadata_lists_every_broker_and_spreads_the_leaders(cluster: Broker) -> None:
    with _client(cluster, 2) as client:
        md = client.request(
            3,
            12,
            {
                "topics": [{"name": TOPIC, "topic_id": None}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
    assert [(b.node_id, b.rack) for b in md.brokers] == [(0, "r0"), (1, "r1"), (2, "r2")]
    ports = {b.node_id: b.port for b in md.brokers}
    assert len(set(ports.values())) == 3
    (topic,) = md.topics
    assert sorted(p.leader_id for p in topic.partitions) == [0, 1, 2]
    assert all(sorted(p.replica_nodes) == [0, 1, 2] for p in topic.partitions)


def test_group_requests_on_another_broker_get_not_coordinator(cluster: Broker) -> None:
    group = group_led_by(1, "g")
    with _client(cluster, 0) as other, _client(cluster, 1) as coordinator:
        found = other.request(10, 4, {"key_type": 0, "coordinator_keys": [group]})
        (entry,) = found.coordinators
        assert (entry.node_id, _code(entry.error_code)) == (1, 0)
        assert entry.port == cluster.brokers()["brokers"][1]["port"]
        beat = {"group_id": group, "generation_id": 1, "member_id": "m", "group_instance_id": None}
        refused = other.request(12, 4, beat)
        assert _code(refused.error_code) == ErrorCode.NOT_COORDINATOR
        served = coordinator.request(12, 4, beat)
        assert _code(served.error_code) == ErrorCode.UNKNOWN_MEMBER_ID  # reached the group


def test_fetch_from_a_broker_that_does_not_lead_gets_not_leader(cluster: Broker) -> None:
    cluster.produce(TOPIC, ["x"], partition=0)
    leader = Topology(3).leader_id(TOPIC, 0)  # the same rule, every broker up
    other = (leader + 1) % 3
    values = fetch_values(TOPIC, [(0, 0, 1 << 20)], max_bytes=1 << 20)
    with _client(cluster, other) as client:
        refused = client.request(1, 12, values)
    (part,) = refused.responses[0].partitions
    assert _code(part.error_code) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    with _client(cluster, leader) as client:
        served = client.request(1, 12, values)
    (part,) = served.responses[0].partitions
    assert (_code(part.error_code), part.high_watermark) == (0, 1)
    moved = cluster.move_leader(TOPIC, 0, other)
    assert moved["leader"] == other and moved["leader_epoch"] == 1
    with _client(cluster, other) as client:
        (part,) = client.request(1, 12, values).responses[0].partitions
    assert _code(part.error_code) == 0


def test_stopping_a_broker_refuses_its_port_and_moves_its_groups(cluster: Broker) -> None:
    group = group_led_by(2, "g")
    port = cluster.brokers()["brokers"][2]["port"]
    cluster.stop_broker(2)
    with pytest.raises(OSError):
        WireClient("127.0.0.1", port, timeout=2)
    assert cluster.coordinator_of(group) == 0  # replicas [2, 0, 1]: 0 is next
    described = cluster.brokers()
    assert [b["running"] for b in described["brokers"]] == [True, True, False]
    assert described["brokers"][2]["offsets_partitions"] == []
    with _client(cluster, 0) as client:
        md = client.request(
            3,
            12,
            {
                "topics": None,
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        assert [b.node_id for b in md.brokers] == [0, 1]
    with pytest.raises(ControlError, match="already stopped"):
        cluster.stop_broker(2)
    cluster.start_broker(2)
    with WireClient("127.0.0.1", port, timeout=2):
        pass
    assert cluster.coordinator_of(group) == 0  # no move back until an election
    cluster.move_coordinator(group, 2)
    assert cluster.coordinator_of(group) == 2
    with pytest.raises(ControlError, match="no broker 7"):
        cluster.move_coordinator(group, 7)


def test_one_broker_has_no_cluster_commands() -> None:
    with Broker() as broker, pytest.raises(ControlError, match="--brokers"):
        broker.stop_broker(0)


_PROTOCOLS = [
    {"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x01\x00\x06orders\xff\xff\xff\xff"}
]


def _join(group: str, member_id: str) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout": 30_000,
        "rebalance_timeout": 10_000,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": _PROTOCOLS,
        "member_id": member_id,
        "reason": None,
    }


def test_a_moved_coordinator_answers_waiting_joins_and_keeps_the_generation(
    cluster: Broker,
) -> None:
    """Kafka's unload and load: a JoinGroup parked on the old coordinator is answered
    NOT_COORDINATOR; the group comes back Stable at its generation (no rebalance)."""
    group = group_led_by(0, "g")
    with _client(cluster, 0) as a, _client(cluster, 0) as b:
        first = a.request(11, 5, _join(group, ""))
        joined = a.request(11, 5, _join(group, first.member_id))
        a.request(
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
        assert cluster.describe_group(group)["generation"] == 1  # type: ignore[index]
        second = b.request(11, 5, _join(group, ""))
        cid, frame = b.encode(11, 5, _join(group, second.member_id))
        b.send_raw(frame)  # parked: the group waits for the first member to rejoin
        moved = cluster.move_coordinator(group, 1)
        assert group in moved["groups_moved"]
        answer = b.decode(11, 5, cid, b.read_frame())
        assert _code(answer.error_code) == ErrorCode.NOT_COORDINATOR
    described = cluster.describe_group(group)
    assert described is not None
    assert (described["state"], described["generation"]) == ("Stable", 1)
    assert list(described["members"]) == [joined.member_id]
    assert cluster.coordinator_of(group) == 1


def test_each_broker_lists_the_groups_it_coordinates(cluster: Broker) -> None:
    groups = [group_led_by(node, f"list{node}") for node in range(3)]
    for group in groups:
        with _client(cluster, cluster.coordinator_of(group)) as client:
            first = client.request(11, 5, _join(group, ""))
            client.request(11, 5, _join(group, first.member_id))
    for version in (2, 4):  # one non-flexible, one flexible response
        listed = []
        for node in range(3):
            with _client(cluster, node) as client:
                response = client.request(16, version, {"states_filter": [], "types_filter": []})
            listed.append(sorted(g.group_id for g in response.groups))
        assert listed == [[g] for g in groups]


def test_the_broker_log_names_the_coordinator_that_loaded_the_group(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    group = "my-group"  # __consumer_offsets-12: broker 0 of three
    with Broker(brokers=3, topics={TOPIC: 1}, log_file=log) as broker:
        with _client(broker, 0) as client:
            first = client.request(11, 5, _join(group, ""))
            client.request(11, 5, _join(group, first.member_id))
        broker.stop_broker(0)
        assert broker.coordinator_of(group) == 1
    lines = log.read_text(encoding="utf-8").splitlines()
    joined = next(line for line in lines if "joins group my-group" in line)
    assert "[GroupCoordinator id=0 topic=__consumer_offsets partition=12]" in joined
    loaded = next(line for line in lines if "Loaded classic group my-group" in line)
    assert "[GroupCoordinator id=1 topic=__consumer_offsets partition=12]" in loaded


def test_paired_errors_name_the_broker_they_fail_on(cluster: Broker) -> None:
    group = group_led_by(1, "paired")
    cluster.push_request_errors("FindCoordinator", "COORDINATOR_NOT_AVAILABLE", broker=2)
    with pytest.raises(ControlError, match="no broker 3"):
        cluster.push_request_errors("FindCoordinator", "NOT_COORDINATOR", broker=3)
    request = {"key_type": 0, "coordinator_keys": [group]}
    with _client(cluster, 1) as one, _client(cluster, 2) as two:
        (served,) = one.request(10, 4, request).coordinators
        (failed,) = two.request(10, 4, request).coordinators
        (again,) = two.request(10, 4, request).coordinators
    assert _code(served.error_code) == 0
    assert _code(failed.error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert (_code(again.error_code), again.node_id) == (0, 1)
