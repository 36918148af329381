"""The fault layer on the wire: where each injected error lands, what is not served,
pushed sequences, sticky errors with a deadline, RTT, fenced heartbeats, tracking.

These drive the server with regroup's own wire client, so each API's error
response is decoded by kio exactly as a client would read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from regroup.server.clients.wire_client import WireClient
from regroup.server.control.faults import FaultError, api_key_of, error_code_of, read_client_id
from regroup.testing import Broker
from regroup.testing.broker import ControlError

JOIN_V9 = {
    "group_id": "g",
    "session_timeout": 6000,
    "rebalance_timeout": 6000,
    "member_id": "",
    "protocol_type": "consumer",
    "protocols": [{"name": "range", "metadata": b""}],
}


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(topics={"orders": 2}) as running:
        yield running


@pytest.fixture
def client(broker: Broker) -> Iterator[WireClient]:
    with WireClient("127.0.0.1", broker.port, client_id="wire") as connected:
        yield connected


def _code(value: Any) -> int:
    return int(getattr(value, "value", value))


def test_names_and_numbers() -> None:
    assert api_key_of("heartbeat") == 12 == api_key_of(12)
    assert error_code_of("rebalance_in_progress") == 27 == error_code_of(27)
    with pytest.raises(FaultError, match="unknown API"):
        api_key_of("Nope")
    with pytest.raises(FaultError, match="does not serve"):
        api_key_of(77)
    with pytest.raises(FaultError, match="unknown error"):
        error_code_of("NOPE")
    assert read_client_id(b"\x00\x0c\x00\x04\x00\x00\x00\x01\x00\x03abc") == "abc"
    assert read_client_id(b"\x00\x0c\x00\x04\x00\x00\x00\x01\xff\xff") is None


def test_top_level_errors_are_answered_without_serving(broker: Broker, client: WireClient) -> None:
    broker.push_request_errors("JoinGroup", "COORDINATOR_LOAD_IN_PROGRESS")
    refused = client.request(11, 9, JOIN_V9)
    assert _code(refused.error_code) == 14 and refused.generation_id == -1
    assert broker.describe_group("g") is None  # not served: no group was created
    joined = client.request(11, 9, JOIN_V9)  # the next one is served
    assert _code(joined.error_code) == 79  # MEMBER_ID_REQUIRED (KIP-394), as usual
    broker.push_request_errors("Heartbeat", "REBALANCE_IN_PROGRESS", "NONE", "ILLEGAL_GENERATION")
    beat = {"group_id": "g", "generation_id": 0, "member_id": "x"}
    codes = [_code(client.request(12, 4, beat).error_code) for _ in range(4)]
    assert codes == [27, 25, 22, 25]  # pushed, served (UNKNOWN_MEMBER_ID), pushed, served


def test_per_entry_errors_land_on_every_entry(broker: Broker, client: WireClient) -> None:
    broker.push_request_errors("OffsetCommit", "NOT_COORDINATOR")
    commit = client.request(
        8,
        8,
        {
            "group_id": "g",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""},
                        {"partition_index": 1, "committed_offset": 1, "committed_metadata": ""},
                    ],
                }
            ],
        },
    )
    assert [
        (t.name, [(p.partition_index, _code(p.error_code)) for p in t.partitions])
        for t in commit.topics
    ] == [("orders", [(0, 16), (1, 16)])]
    assert broker.committed("g") == {}
    broker.push_request_errors("FindCoordinator", "COORDINATOR_NOT_AVAILABLE")
    found = client.request(10, 4, {"key_type": 0, "coordinator_keys": ["a", "b"]})
    assert [(c.key, _code(c.error_code), c.node_id) for c in found.coordinators] == [
        ("a", 15, -1),
        ("b", 15, -1),
    ]
    broker.push_request_errors("OffsetFetch", "COORDINATOR_LOAD_IN_PROGRESS")
    fetched = client.request(9, 8, {"groups": [{"group_id": "g", "topics": None}]})
    assert [(g.group_id, _code(g.error_code)) for g in fetched.groups] == [("g", 14)]
    broker.push_request_errors("DescribeGroups", "NOT_COORDINATOR")
    described = client.request(
        15, 5, {"groups": ["g", "h"], "include_authorized_operations": False}
    )
    assert [(g.group_id, _code(g.error_code)) for g in described.groups] == [("g", 16), ("h", 16)]
    broker.push_request_errors("ConsumerGroupDescribe", "NOT_COORDINATOR")
    described = client.request(69, 1, {"group_ids": ["g"], "include_authorized_operations": False})
    assert [(g.group_id, _code(g.error_code)) for g in described.groups] == [("g", 16)]


def test_a_sticky_error_with_a_duration_ends_by_itself(broker: Broker, client: WireClient) -> None:
    broker.set_request_error("ListGroups", "COORDINATOR_NOT_AVAILABLE", duration_ms=0)
    listed = client.request(16, 5, {"states_filter": (), "types_filter": ()})
    assert _code(listed.error_code) == 0  # a zero duration is already over
    broker.set_request_error("ListGroups", "COORDINATOR_NOT_AVAILABLE")
    for _ in range(3):
        listed = client.request(16, 5, {"states_filter": (), "types_filter": ()})
        assert _code(listed.error_code) == 15
    broker.clear_request_errors("ListGroups")
    assert _code(client.request(16, 5, {"states_filter": (), "types_filter": ()}).error_code) == 0


def test_errors_only_for_apis_that_have_a_request_wide_one(broker: Broker) -> None:
    with pytest.raises(ControlError, match="Metadata"):
        broker.push_request_errors("Metadata", "UNKNOWN_SERVER_ERROR")
    with pytest.raises(ControlError, match="Produce"):
        broker.set_request_error("Produce", "NOT_LEADER_OR_FOLLOWER")
    with pytest.raises(ControlError, match=">= 0"):
        broker.set_rtt(-1)
    assert broker.pending_faults()["pushed"] == {}


def test_rtt_delays_the_answer_and_fencing_answers_once(broker: Broker, client: WireClient) -> None:
    broker.set_rtt(20, "ListGroups")
    assert _code(client.request(16, 5, {"states_filter": (), "types_filter": ()}).error_code) == 0
    assert broker.pending_faults()["delayed"] == 1
    # A KIP-848 member joins, is fenced, and its next heartbeat gets FENCED_MEMBER_EPOCH once.
    heartbeat = {
        "group_id": "k",
        "member_id": "m-1",
        "member_epoch": 0,
        "rebalance_timeout": 5000,
        "subscribed_topic_names": ["orders"],
        "topic_partitions": [],
    }
    joined = client.request(68, 1, heartbeat)
    assert _code(joined.error_code) == 0 and joined.member_epoch > 0
    broker.fence_member("k", "m-1")
    assert broker.members("k") == {}  # removed by the coordinator, records written
    again = {**heartbeat, "member_epoch": joined.member_epoch, "topic_partitions": None}
    assert _code(client.request(68, 1, again).error_code) == 110  # FENCED_MEMBER_EPOCH
    rejoined = client.request(68, 1, heartbeat)  # epoch 0: a fresh join, served
    assert _code(rejoined.error_code) == 0 and list(broker.members("k")) == ["m-1"]


def test_tracking_records_decoded_requests(broker: Broker, client: WireClient) -> None:
    broker.start_request_tracking()
    client.request(12, 4, {"group_id": "g", "generation_id": 3, "member_id": "m"})
    (tracked,) = broker.requests("Heartbeat")
    assert (tracked.api, tracked.api_version, tracked.client_id) == ("Heartbeat", 4, "wire")
    assert (tracked.group_id, tracked.member_id) == ("g", "m")
    assert tracked.fields["generation_id"] == 3
    assert tracked.to_json()["fields"]["group_id"] == "g"
    broker.clear_requests()
    assert broker.requests() == []


def test_group_faults_write_records_a_restart_rebuilds(tmp_path: Path) -> None:
    heartbeat = {
        "group_id": "k",
        "member_epoch": 0,
        "rebalance_timeout": 5000,
        "subscribed_topic_names": ["orders"],
        "topic_partitions": [],
    }
    with (
        Broker(topics={"orders": 4}, data_dir=tmp_path) as broker,
        WireClient("127.0.0.1", broker.port) as client,
    ):
        for member in ("m-1", "m-2", "m-3"):
            assert _code(client.request(68, 1, {**heartbeat, "member_id": member}).error_code) == 0
        broker.set_target_assignment("k", {"m-1": {"orders": [0, 1, 2]}, "m-2": {"orders": [3]}})
        broker.fence_member("k", "m-3")
        broker.force_rebalance("k")
        before = broker.describe_group("k")
        assert before is not None and sorted(before["members"]) == ["m-1", "m-2"]
    with Broker(data_dir=tmp_path) as restarted:
        assert restarted.describe_group("k") == before
