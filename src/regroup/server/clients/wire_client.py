"""A minimal blocking Kafka wire client: one socket, one request at a time.

For ``regroup groups`` (ListGroups, DescribeGroups, ConsumerGroupDescribe, like
kafka-consumer-groups.sh), the tests and the benchmark. It negotiates nothing:
the caller names the version (``versions.ADVERTISED`` says what the server
speaks). Request header v1 or v2 by the message class, as Kafka's clients do.
"""

from __future__ import annotations

import io
import socket
import ssl
import struct
from collections.abc import Iterable
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from regroup.server.wire import assignor_rpc
from regroup.server.wire.kio_build import build
from regroup.server.wire.versions import INSTALL_ASSIGNMENT_KEY, PREPARE_ASSIGNMENT_KEY

__all__ = [
    "RequestEncoder",
    "WireClient",
    "WireClientError",
    "decode_response",
    "fetch_values",
    "join_group_values",
    "sync_group_values",
]

_PRIVATE = (PREPARE_ASSIGNMENT_KEY, INSTALL_ASSIGNMENT_KEY)


class WireClientError(ConnectionError):
    """The server closed the connection or answered with an unexpected frame."""


def _encode(encoder: RequestEncoder, api_key: int, version: int, values: Any) -> tuple[int, bytes]:
    """(correlation id, framed request); ``values`` is a dict of kio field names or a body."""
    encoder._correlation += 1
    cid = encoder._correlation
    out = io.BytesIO()
    out.write(b"\0\0\0\0")
    if api_key in _PRIVATE:
        from kio.schema.request_header.v1.header import RequestHeader

        header_cls: Any = RequestHeader
        entity_writer(header_cls)(
            out,
            header_cls(
                request_api_key=api_key,
                request_api_version=version,
                correlation_id=cid,
                client_id=encoder.client_id,
            ),
        )
        out.write(assignor_rpc.encode_request(values))
    else:
        request_cls: Any = load_request_schema(api_key, version)
        body = build(request_cls, values) if isinstance(values, dict) else values
        header_cls = request_cls.__header_schema__
        entity_writer(header_cls)(
            out,
            build(
                header_cls,
                {
                    "request_api_key": api_key,
                    "request_api_version": version,
                    "correlation_id": cid,
                    "client_id": encoder.client_id,
                },
            ),
        )
        entity_writer(request_cls)(out, body)
    data = out.getbuffer()
    struct.pack_into(">i", data, 0, len(data) - 4)
    return cid, bytes(data)


def fetch_values(
    topic: str,
    partitions: Iterable[tuple[int, int, int]],
    *,
    max_bytes: int,
    max_wait_ms: int = 0,
    isolation_level: int = 0,
) -> dict[str, Any]:
    """The values of a consumer's sessionless Fetch v4-v12 (replica -1, KIP-227 session 0 and
    epoch -1) of one topic by name; each partition is (partition, fetch offset, partition max
    bytes). For tests and benchmarks that read a partition without a Kafka client."""
    return {
        "cluster_id": None,
        "replica_id": -1,
        "max_wait": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": isolation_level,
        "session_id": 0,
        "session_epoch": -1,
        "forgotten_topics_data": (),
        "rack_id": "",
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": partition_max_bytes,
                    }
                    for partition, offset, partition_max_bytes in partitions
                ],
            }
        ],
    }


def join_group_values(group: str, subscription: bytes) -> dict[str, Any]:
    """The values of a JoinGroup v5-v9 of a dynamic member of ``group`` using ``range`` with
    the consumer ``subscription``; ``member_id`` is added by the caller (``""`` first, then
    the one MEMBER_ID_REQUIRED hands out, KIP-394)."""
    return {
        "group_id": group,
        "session_timeout": 45_000,
        "rebalance_timeout": 60_000,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "reason": None,
        "protocols": [{"name": "range", "metadata": subscription}],
    }


def consumer_join_values(
    group: str, member_id: str, topics: tuple[str, ...], assignor: str = "uniform"
) -> dict[str, Any]:
    """The values of a ConsumerGroupHeartbeat v1 that joins ``group`` (epoch 0, KIP-848):
    ``member_id`` (the client's own, KIP-1082) subscribed to ``topics``, owning nothing."""
    return {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": 0,
        "rebalance_timeout": 30_000,
        "subscribed_topic_names": topics,
        "server_assignor": assignor,
        "topic_partitions": (),
    }


def sync_group_values(group: str, generation_id: int, member_id: str) -> dict[str, Any]:
    """The values of a SyncGroup v5 of a one-member ``range`` group's leader, which gives
    itself an empty assignment (a load generator that only needs a stable member)."""
    return {
        "group_id": group,
        "generation_id": generation_id,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [{"member_id": member_id, "assignment": b""}],
    }


def decode_response(api_key: int, version: int, cid: int, frame: bytes) -> Any:
    """The decoded body of a response ``frame`` (without its size prefix) to request
    ``cid``; ``WireClientError`` when it answers another correlation id."""
    if api_key in _PRIVATE:
        (got,) = struct.unpack_from(">i", frame, 0)
        body: Any = assignor_rpc.decode_response(api_key, frame[4:])
    else:
        response_cls: Any = load_response_schema(api_key, version)
        header, offset = entity_reader(response_cls.__header_schema__)(frame, 0)
        got = header.correlation_id
        body, _ = entity_reader(response_cls)(frame, offset)
    if got != cid:
        raise WireClientError(f"correlation id {got}, expected {cid}")
    return body


class RequestEncoder:
    """Frames requests with increasing correlation ids (no socket: benchmarks, tests)."""

    def __init__(self, client_id: str = "regroup-cli") -> None:
        self.client_id = client_id
        self._correlation = 0

    def encode(self, api_key: int, version: int, values: Any) -> tuple[int, bytes]:
        """(correlation id, framed request); ``values`` is a dict of kio field names or a body."""
        return _encode(self, api_key, version, values)

    def encode_flexible_body(self, api_key: int, version: int, body: bytes) -> tuple[int, bytes]:
        """(correlation id, framed request) around a body already encoded, request header v2.

        Header v2 (Kafka's protocol guide): api key, version, correlation id,
        client id as a NULLABLE_STRING (int16 length), an empty tagged-field
        section. For bodies kio cannot write (``heartbeat_codec``'s private tag).
        """
        self._correlation += 1
        cid = self._correlation
        name = self.client_id.encode("utf-8")
        header = struct.pack(f">hhih{len(name)}sB", api_key, version, cid, len(name), name, 0)
        return cid, struct.pack(">i", len(header) + len(body)) + header + body


class WireClient(RequestEncoder):
    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "regroup-cli",
        timeout: float = 10.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__(client_id)
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ssl_context is not None:  # a TLS listener (regroup.server.security)
            try:
                sock = ssl_context.wrap_socket(sock, server_hostname=host)
            except (OSError, ssl.SSLError):
                sock.close()
                raise
        self._sock = sock

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def send_raw(self, data: bytes) -> None:
        self._sock.sendall(data)

    def read_frame(self) -> bytes:
        head = self._recv(4)
        (size,) = struct.unpack(">i", head)
        return self._recv(size)

    def _recv(self, n: int) -> bytes:
        parts: list[bytes] = []
        while n:
            chunk = self._sock.recv(n)
            if not chunk:
                raise WireClientError("connection closed by the server")
            parts.append(chunk)
            n -= len(chunk)
        return b"".join(parts)

    def decode(self, api_key: int, version: int, cid: int, frame: bytes) -> Any:
        return decode_response(api_key, version, cid, frame)

    def request(self, api_key: int, version: int, values: Any) -> Any:
        """Send one request and wait for its response (decoded kio object)."""
        cid, data = self.encode(api_key, version, values)
        self._sock.sendall(data)
        return self.decode(api_key, version, cid, self.read_frame())
