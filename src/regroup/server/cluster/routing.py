"""Kafka's answer to a request sent to a broker that does not lead what it names.

In a cluster of several brokers (``topology``) each connection belongs to one node.
``ClusterRouter`` stands in front of the server's ``serve_now`` (behind the fault
injection, when there is one, so injected errors come first as on a single broker)
and checks, before anything is served:

1. A group request (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
   OffsetFetch, DescribeGroups, ConsumerGroupHeartbeat, ConsumerGroupDescribe) on a
   node that does not coordinate its group gets NOT_COORDINATOR
   (``CoordinatorRuntime`` answers ``NotCoordinatorException`` for a partition it
   does not lead), or COORDINATOR_NOT_AVAILABLE while the group's
   ``__consumer_offsets`` partition has no leader at all. The request is not served.
   A request naming several groups (DescribeGroups, OffsetFetch v8+,
   ConsumerGroupDescribe) is served when this node coordinates all of them and
   refused for all of them otherwise (Kafka answers each group on its own; the
   clients send one request per coordinator, so a mixed request only follows a
   coordinator move and is retried).
2. A Produce, Fetch or ListOffsets naming a partition this node does not lead gets
   NOT_LEADER_OR_FOLLOWER on every partition it names (Kafka's ``ReplicaManager``
   answers that per partition and serves the others; a client refreshes its
   metadata and sends the rest again to the right leaders). A Produce with
   ``acks=0`` closes the connection instead, as Kafka's ``KafkaApis`` does for a
   produce error it cannot answer. Partitions of topics that do not exist are left
   to the server (UNKNOWN_TOPIC_OR_PARTITION).
3. OffsetForLeaderEpoch, which only a cluster advertises, is answered here
   (``leader_epochs``).
4. ListGroups lists the groups this node coordinates (Kafka's broker lists the groups of
   the ``__consumer_offsets`` partitions it leads; an admin client asks every broker).
5. Everything else is served by any node (Metadata, FindCoordinator, ApiVersions,
   CreateTopics, ListGroups, the control channel).

A request that does not decode goes on to the server, which closes the connection
as it does on one broker.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from typing import Any

from kio.serial import entity_reader

from regroup.model.errors import ErrorCode
from regroup.model.uuid import Uuid
from regroup.server.cluster import leader_epochs
from regroup.server.cluster.topology import NO_LEADER, Topology
from regroup.server.net.connection import CloseConnection, ConnectionState, Interceptor, Served
from regroup.server.wire import codec
from regroup.server.wire.api_keys import ApiKey
from regroup.server.wire.codec import DecodedRequest, RequestError
from regroup.server.wire.error_responses import encode_error_response
from regroup.server.wire.kio_build import build, to_uuid

__all__ = ["ClusterRouter", "groups_named", "partitions_named"]

_KEY = struct.Struct(">h")

_SINGLE_GROUP = frozenset(
    {
        ApiKey.OFFSET_COMMIT,
        ApiKey.JOIN_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
    }
)
_GROUP_KEYS = _SINGLE_GROUP | {
    ApiKey.OFFSET_FETCH,
    ApiKey.DESCRIBE_GROUPS,
    ApiKey.CONSUMER_GROUP_DESCRIBE,
}
_PARTITION_KEYS = frozenset({ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS})


def groups_named(req: DecodedRequest) -> list[str]:
    """The group ids a group request names (rule 1)."""
    body, key = req.body, req.api_key
    if key in _SINGLE_GROUP:
        return [body.group_id]
    if key == ApiKey.OFFSET_FETCH:
        if req.api_version < 8:
            return [body.group_id]
        return [g.group_id for g in body.groups]
    if key == ApiKey.DESCRIBE_GROUPS:
        return list(body.groups)
    return list(body.group_ids)


def partitions_named(
    req: DecodedRequest, name_of: Callable[[Uuid], str | None]
) -> list[tuple[str, int]]:
    """The (topic, partition) pairs a Produce, Fetch or ListOffsets names; topics named by
    id (Fetch v13+) through ``name_of`` (an unknown id is left out)."""
    body, key = req.body, req.api_key
    out: list[tuple[str, int]] = []
    if key == ApiKey.PRODUCE:
        for t in body.topic_data:
            out.extend((t.name, p.index) for p in t.partition_data)
    elif key == ApiKey.LIST_OFFSETS:
        for t in body.topics:
            out.extend((t.name, p.partition_index) for p in t.partitions)
    else:
        for t in body.topics:
            name = name_of(to_uuid(t.topic_id)) if req.api_version >= 13 else t.topic
            if name is not None:
                out.extend((name, p.partition) for p in t.partitions)
    return out


def _filter_list_groups(frame: bytes, version: int, keep: Callable[[str], bool]) -> bytes:
    """A framed ListGroups response of ``version`` with only the groups ``keep`` accepts."""
    cls = codec.response_class(ApiKey.LIST_GROUPS, version)
    payload = frame[4:]  # the size first
    header, offset = entity_reader(cls.__header_schema__)(payload, 0)
    body, _ = entity_reader(cls)(payload, offset)
    kept = dataclasses.replace(body, groups=tuple(g for g in body.groups if keep(g.group_id)))
    return codec.encode_response(ApiKey.LIST_GROUPS, version, header.correlation_id, kept)


def _refused_partitions(req: DecodedRequest) -> Any:
    """Rule 2's response: NOT_LEADER_OR_FOLLOWER on every partition ``req`` names."""
    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    body, key, version = req.body, req.api_key, req.api_version
    cls = codec.response_class(key, version)
    if key == ApiKey.PRODUCE:
        topics = [
            {
                "name": t.name,
                "partition_responses": [
                    {
                        "index": p.index,
                        "error_code": code,
                        "base_offset": -1,
                        "log_append_time": -1,
                        "log_start_offset": -1,
                        "record_errors": (),
                        "error_message": None,
                    }
                    for p in t.partition_data
                ],
            }
            for t in body.topic_data
        ]
        return build(cls, {"responses": topics, "throttle_time": 0, "node_endpoints": ()})
    if key == ApiKey.LIST_OFFSETS:
        topics = [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": code,
                        "timestamp": -1,
                        "offset": -1,
                        "leader_epoch": -1,
                    }
                    for p in t.partitions
                ],
            }
            for t in body.topics
        ]
        return build(cls, {"throttle_time": 0, "topics": topics})
    by_id = version >= 13
    responses = [
        {
            **({"topic_id": t.topic_id} if by_id else {"topic": t.topic}),
            "partitions": [
                {
                    "partition_index": p.partition,
                    "error_code": code,
                    "high_watermark": -1,
                    "last_stable_offset": -1,
                    "log_start_offset": -1,
                    "aborted_transactions": None,
                    "preferred_read_replica": -1,
                    "records": b"",
                }
                for p in t.partitions
            ],
        }
        for t in body.topics
    ]
    return build(
        cls,
        {
            "throttle_time": 0,
            "error_code": ErrorCode.NONE,
            "session_id": 0,
            "responses": responses,
            "node_endpoints": (),
        },
    )


class ClusterRouter:
    """Rules 1-3 for the connections of every node (``node_of`` says whose a connection is)."""

    def __init__(
        self,
        topology: Topology,
        node_of: Callable[[ConnectionState], int],
        exists: Callable[[str, int], bool],
        name_of: Callable[[Uuid], str | None],
        log_end: Callable[[str, int], int | None],
        inner: Interceptor | None = None,
    ) -> None:
        self.topology = topology
        self.node_of = node_of
        self.exists = exists
        self.name_of = name_of
        self.log_end = log_end
        #: The fault injection in front of this router, if the server has it.
        self.inner = inner
        #: Requests refused by rule 1 and by rule 2.
        self.stats = {"not_coordinator": 0, "not_leader": 0}

    def serve(
        self,
        conn: ConnectionState,
        body: bytes,
        serve_now: Callable[[ConnectionState, bytes], Served],
    ) -> Served:
        def routed(c: ConnectionState, b: bytes) -> Served:
            return self._route(c, b, serve_now)

        if self.inner is not None:
            return self.inner.serve(conn, body, routed)
        return routed(conn, body)

    def _route(
        self,
        conn: ConnectionState,
        body: bytes,
        serve_now: Callable[[ConnectionState, bytes], Served],
    ) -> Served:
        if len(body) < 8:
            return serve_now(conn, body)
        (key,) = _KEY.unpack_from(body, 0)
        if key == ApiKey.OFFSET_FOR_LEADER_EPOCH:
            try:
                return leader_epochs.answer(body, self.node_of(conn), self.topology, self.log_end)
            except RequestError:
                raise CloseConnection from None
        if key == ApiKey.LIST_GROUPS:
            version = int.from_bytes(body[2:4], "big", signed=True)
            return self._own_groups(serve_now(conn, body), version, self.node_of(conn))
        if key not in _GROUP_KEYS and key not in _PARTITION_KEYS:
            return serve_now(conn, body)
        try:
            req = codec.decode_request(body)
        except RequestError:
            return serve_now(conn, body)  # the server closes it, as on one broker
        node = self.node_of(conn)
        if key in _GROUP_KEYS:
            leaders = {self.topology.coordinator(g) for g in groups_named(req)}
            if leaders and leaders != {node}:
                self.stats["not_coordinator"] += 1
                code = (
                    ErrorCode.COORDINATOR_NOT_AVAILABLE
                    if leaders == {NO_LEADER}
                    else ErrorCode.NOT_COORDINATOR
                )
                return encode_error_response(req, int(code))
            return serve_now(conn, body)
        named = [tp for tp in partitions_named(req, self.name_of) if self.exists(*tp)]
        if all(self.topology.leader_id(*tp) == node for tp in named):
            return serve_now(conn, body)
        self.stats["not_leader"] += 1
        if key == ApiKey.PRODUCE and req.body.acks == 0:
            raise CloseConnection
        return codec.encode_response(
            key, req.api_version, req.correlation_id, _refused_partitions(req)
        )

    def _own_groups(self, served: Served, version: int, node: int) -> Served:
        """Rule 4 on the server's ListGroups answer (now, or when it comes)."""

        def keep(group_id: str) -> bool:
            return self.topology.coordinator(group_id) == node

        if isinstance(served, bytes):
            return _filter_list_groups(served, version, keep)
        if served is None:
            return None
        pending = served

        async def later() -> bytes | None:
            frame = await pending
            return None if frame is None else _filter_list_groups(frame, version, keep)

        return later()
