"""OffsetForLeaderEpoch (API 23, v2-4) on a cluster of brokers sharing one store.

Leader epochs grow at every leadership change (``topology``), and Kafka's clients
validate their fetch position when they see a new one (KIP-320): kafka-python 3.0
and librdkafka send OffsetForLeaderEpoch to the new leader and wait for its answer
before fetching on, so a cluster must serve it. One broker keeps every epoch at 0
and does not advertise it; several brokers advertise it (``ADVERTISED_RANGE``) and
answer it here, in front of the server (``routing``).

Rules, per partition (Kafka's ``ReplicaManager.lastOffsetForLeaderEpoch`` and
``Partition.lastOffsetForLeaderEpoch``):

1. A partition that does not exist: UNKNOWN_TOPIC_OR_PARTITION; one this node does not
   lead: NOT_LEADER_OR_FOLLOWER.
2. ``current_leader_epoch`` (-1: not checked) newer than the leader's epoch:
   UNKNOWN_LEADER_EPOCH; older: FENCED_LEADER_EPOCH (the client refreshes metadata).
3. Otherwise the answer is the requested epoch and the log end offset: the replicas
   share one log, so no epoch ever ended with records another replica lacks, and no
   client position can have diverged (Kafka answers the offset at which the next
   epoch began; with nothing ever truncated, a position below the log end is valid
   either way). A requested epoch above the leader's is answered (-1, -1), as Kafka
   answers an epoch it does not know.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kio.index import load_request_schema
from kio.serial import entity_reader

from regroup.model.errors import ErrorCode
from regroup.server.cluster.topology import Topology
from regroup.server.wire import codec, frame_check
from regroup.server.wire.api_keys import ApiKey
from regroup.server.wire.kio_build import build

__all__ = ["ADVERTISED_RANGE", "answer"]

#: The versions a cluster advertises: Kafka 4 removed v0-1 (KIP-896).
ADVERTISED_RANGE = (2, 4)


def _decode(body: bytes) -> tuple[int, int, Any]:
    version = int.from_bytes(body[2:4], "big", signed=True)
    cid = int.from_bytes(body[4:8], "big", signed=True)
    request_cls = load_request_schema(ApiKey.OFFSET_FOR_LEADER_EPOCH, version)
    frame_check.check_request(request_cls, body)
    _, offset = entity_reader(request_cls.__header_schema__)(body, 0)
    payload, _ = entity_reader(request_cls)(body, offset)
    return version, cid, payload


def answer(
    body: bytes,
    node: int,
    topology: Topology,
    log_end: Callable[[str, int], int | None],
) -> bytes:
    """The framed response to one OffsetForLeaderEpoch of a connection to ``node``
    (``codec.MalformedRequestError`` when it does not decode)."""
    version = int.from_bytes(body[2:4], "big", signed=True)
    cid = int.from_bytes(body[4:8], "big", signed=True)
    low, high = ADVERTISED_RANGE
    if not low <= version <= high:
        raise codec.UnsupportedApiError(
            f"unsupported API key 23 version {version}", 23, version, cid
        )
    try:
        version, cid, request = _decode(body)
    except Exception as exc:
        raise codec.MalformedRequestError(
            f"cannot decode API key 23 v{version}: {type(exc).__name__}: {exc}", 23, version, cid
        ) from None
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            code, epoch_out, end = ErrorCode.NONE, -1, -1
            end_offset = log_end(topic.topic, p.partition)
            leader, epoch = topology.leader(topic.topic, p.partition)
            current = int(p.current_leader_epoch)
            if end_offset is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif leader != node:
                code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            elif current > epoch:
                code = ErrorCode.UNKNOWN_LEADER_EPOCH
            elif 0 <= current < epoch:
                code = ErrorCode.FENCED_LEADER_EPOCH
            elif int(p.leader_epoch) <= epoch:
                epoch_out, end = int(p.leader_epoch), end_offset
            partitions.append(
                {
                    "error_code": code,
                    "partition": p.partition,
                    "leader_epoch": epoch_out,
                    "end_offset": end,
                }
            )
        topics.append({"topic": topic.topic, "partitions": partitions})
    response = build(
        codec.response_class(ApiKey.OFFSET_FOR_LEADER_EPOCH, version),
        {"throttle_time": 0, "topics": topics},
    )
    return codec.encode_response(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, cid, response)
