"""Replica racks read from a Metadata response: a broker's rack may be null.

Kafka's ``Node.rack()`` is null for a broker started without ``broker.rack``;
its rack-aware assignors skip such replicas. ``fetch_metadata`` (how regroup's
wire member reads a cluster) does the same through ``replica_racks``.
"""

from __future__ import annotations

from typing import Any, cast

from regroup.model import Uuid
from regroup.model.errors import ErrorCode
from regroup.model.metadata import replica_racks
from regroup.server.clients.wire_client import WireClient
from regroup.server.clients.wire_member import fetch_metadata
from regroup.server.wire.codec import response_class
from regroup.server.wire.kio_build import build


def _partition(index: int, replicas: tuple[int, ...]) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.NONE,
        "partition_index": index,
        "leader_id": replicas[0],
        "leader_epoch": 0,
        "replica_nodes": replicas,
        "isr_nodes": replicas,
        "offline_replicas": (),
    }


def _response(racks: dict[int, str | None], partitions: list[tuple[int, ...]]) -> Any:
    return build(
        response_class(3, 12),
        {
            "throttle_time": 0,
            "brokers": [
                {"node_id": node, "host": "localhost", "port": 9092 + node, "rack": rack}
                for node, rack in racks.items()
            ],
            "cluster_id": "c",
            "controller_id": 1,
            "topics": [
                {
                    "error_code": ErrorCode.NONE,
                    "name": "t",
                    "topic_id": Uuid.for_name("t"),
                    "is_internal": False,
                    # Out of order on purpose: racks are indexed by partition number.
                    "partitions": [
                        _partition(i, r) for i, r in reversed(list(enumerate(partitions)))
                    ],
                    "topic_authorized_operations": -(2**31),
                }
            ],
            "cluster_authorized_operations": -(2**31),
        },
    )


class _Client:
    def __init__(self, response: Any) -> None:
        self.response = response

    def request(self, api_key: int, version: int, values: Any) -> Any:
        assert (api_key, version) == (3, 12)
        return self.response


def _client(response: Any) -> WireClient:
    """A wire client that answers Metadata v12 with ``response`` (the one call it gets)."""
    return cast("WireClient", _Client(response))


def test_null_broker_racks_add_no_rack() -> None:
    response = _response({1: "a", 2: None, 3: "b"}, [(1, 2), (2,), (3, 1), (2, 4)])
    topic = fetch_metadata(_client(response)).topic("t")
    assert topic is not None
    # Broker 4 is not in the response: like a null rack, it adds nothing.
    assert topic.partition_racks == (
        frozenset({"a"}),
        frozenset(),
        frozenset({"a", "b"}),
        frozenset(),
    )


def test_no_broker_with_a_rack_means_no_racks_known() -> None:
    response = _response({1: None, 2: None}, [(1, 2), (2, 1)])
    topic = fetch_metadata(_client(response)).topic("t")
    assert topic is not None and topic.partitions == 2
    assert topic.partition_racks == ()


def test_replica_racks_skips_nulls() -> None:
    assert replica_racks([["a", None, "a"], [None], [], ["", "b"]]) == (
        frozenset({"a"}),
        frozenset(),
        frozenset(),
        frozenset({"", "b"}),
    )
