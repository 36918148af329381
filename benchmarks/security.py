"""Security benchmarks: what an ACL check and a SASL login cost the server.

What it measures ("Security"):

* ``authorize``: one ``Authorizer.authorize`` call (the check every group request,
  every heartbeat included, makes once an authorizer is configured), with 10, 100
  and 1,000 GROUP ACLs of other principals and groups beside the one that
  matches, in microseconds;
* a classic Heartbeat v4 through ``RegroupServer.serve_now`` in this process
  (no sockets), without security and with an authorizer, in microseconds: what
  the check adds to the hottest request;
* a steady KIP-848 ConsumerGroupHeartbeat v1 through ``serve_now``, subscribed by
  name and by regex, without security and with an authorizer (which also hands the
  coordinator the principal's request context, to resolve a regex under), in
  microseconds;
* one SASL login, server side only (``Authenticator``: the handshake and the
  exchange, no decoding), for PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 with 4,096
  iterations; the client's side (its PBKDF2 of the password) is not counted.

CPU time of this process (``time.process_time``); figures only, nothing asserted::

    python benchmarks/security.py            # 20,000 checks, 2,000 heartbeats, 200 logins
    python benchmarks/security.py --quick
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from regroup.server.security.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from regroup.server.security.authenticator import Authenticator
from regroup.server.security.authorizer import Authorizer
from regroup.server.security.client_login import scram_client_final
from regroup.server.security.credentials import parse_credentials
from regroup.server.security.scram import ScramMechanism


def _acls(count: int) -> list[AclBinding]:
    acls = [
        AclBinding(
            ResourceType.GROUP, f"group-{i}", PatternType.LITERAL, f"User:u{i}", "*",
            AclOperation.READ, AclPermissionType.ALLOW,
        )
        for i in range(count - 1)
    ]  # fmt: skip
    acls.append(
        AclBinding(
            ResourceType.GROUP, "shop", PatternType.LITERAL, "User:alice", "*",
            AclOperation.READ, AclPermissionType.ALLOW,
        )
    )  # fmt: skip
    return acls


def bench_authorize(count: int, calls: int) -> float:
    authorizer = Authorizer(acls=_acls(count))
    start = time.process_time()
    for _ in range(calls):
        authorizer.authorize(
            "User:alice", "10.0.0.1", AclOperation.READ, ResourceType.GROUP, "shop"
        )
    return (time.process_time() - start) / calls * 1e6


def bench_heartbeat(with_authorizer: bool, beats: int) -> float:
    """µs per classic Heartbeat v4 served by ``serve_now`` (a Stable one-member group)."""
    import asyncio

    from regroup.server.app import RegroupServer, ServerOptions
    from regroup.server.clients.wire_client import RequestEncoder
    from regroup.server.net.connection import ConnectionState
    from regroup.server.security.config import SecurityConfig

    security = (
        SecurityConfig(
            authorizer_class_name="org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        )
        if with_authorizer
        else None
    )
    server = RegroupServer(ServerOptions(port=0, security=security))
    conn = ConnectionState(1, "10.0.0.1")
    if server.security is not None:
        from regroup.server.security.config import Listener, SecurityProtocol

        listener = Listener(SecurityProtocol.PLAINTEXT, "127.0.0.1", 0)
        conn.session = server.security.new_session(listener, "10.0.0.1", None)
        conn.session.principal = "User:alice"
        assert server.security.authorizer is not None
        server.security.authorizer.add(_acls(100))
    encoder = RequestEncoder("bench")

    async def run() -> float:
        server._loop = asyncio.get_running_loop()
        join = {
            "group_id": "shop", "session_timeout": 30000, "rebalance_timeout": 30000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}], "reason": None,
        }  # fmt: skip
        member = _answer(server, conn, encoder, 11, 5, join).member_id
        joined = await _answer_async(server, conn, encoder, 11, 5, {**join, "member_id": member})
        sync = {
            "group_id": "shop", "generation_id": joined.generation_id, "member_id": member,
            "group_instance_id": None, "assignments": [{"member_id": member, "assignment": b""}],
        }  # fmt: skip
        await _answer_async(server, conn, encoder, 14, 3, sync)
        beat = {
            "group_id": "shop", "generation_id": joined.generation_id, "member_id": member,
            "group_instance_id": None,
        }  # fmt: skip
        frames = [encoder.encode(12, 4, beat)[1][4:] for _ in range(beats)]
        start = time.process_time()
        for body in frames:
            answer = server.serve_now(conn, body)
            assert isinstance(answer, bytes) and answer[-3:-1] == b"\0\0", answer
        return (time.process_time() - start) / beats * 1e6

    try:
        return asyncio.run(run())
    finally:
        server.store.close()
        server.events.close()
        server.log.close()


def bench_consumer_heartbeat(with_authorizer: bool, beats: int, regex: bool) -> float:
    """µs per steady ConsumerGroupHeartbeat v1 served by ``serve_now`` (one member that
    owns its assignment), subscribed to ``orders`` by name or by the regex ``ord.*``."""
    import asyncio

    from regroup.server.app import RegroupServer, ServerOptions
    from regroup.server.clients.wire_client import RequestEncoder
    from regroup.server.net.connection import ConnectionState
    from regroup.server.security.config import SecurityConfig

    security = (
        SecurityConfig(
            authorizer_class_name="org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        )
        if with_authorizer
        else None
    )
    server = RegroupServer(ServerOptions(port=0, security=security))
    conn = ConnectionState(1, "10.0.0.1")
    if server.security is not None:
        from regroup.server.security.config import Listener, SecurityProtocol

        listener = Listener(SecurityProtocol.PLAINTEXT, "127.0.0.1", 0)
        conn.session = server.security.new_session(listener, "10.0.0.1", None)
        conn.session.principal = "User:alice"
        assert server.security.authorizer is not None
        describe = AclBinding(
            ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*",
            AclOperation.DESCRIBE, AclPermissionType.ALLOW,
        )  # fmt: skip
        server.security.authorizer.add([*_acls(100), describe])
    encoder = RequestEncoder("bench")
    member = "bench-member-000000001"

    async def run() -> float:
        server._loop = asyncio.get_running_loop()
        server.create_topic("orders", 2)
        join = {
            "group_id": "shop", "member_id": member, "member_epoch": 0, "instance_id": None,
            "rack_id": None, "rebalance_timeout": 30000, "server_assignor": None,
            "subscribed_topic_names": None if regex else ["orders"],
            "subscribed_topic_regex": "ord.*" if regex else None, "topic_partitions": [],
        }  # fmt: skip
        answer = _answer(server, conn, encoder, 68, 1, join)
        owned: list[dict[str, Any]] = []
        for _ in range(100):  # until assigned (a regex resolves on the next timer first)
            if answer.assignment is not None and answer.assignment.topic_partitions:
                owned = [
                    {"topic_id": tp.topic_id, "partitions": list(tp.partitions)}
                    for tp in answer.assignment.topic_partitions
                ]
                break
            await asyncio.sleep(0.01)
            steady = {
                "group_id": "shop", "member_id": member, "member_epoch": answer.member_epoch,
                "topic_partitions": None,
            }  # fmt: skip
            answer = _answer(server, conn, encoder, 68, 1, steady)
        owns = {
            "group_id": "shop", "member_id": member, "member_epoch": answer.member_epoch,
            "topic_partitions": owned,
        }  # fmt: skip
        answer = _answer(server, conn, encoder, 68, 1, owns)
        assert owned, "the member was never assigned"
        beat = {
            "group_id": "shop", "member_id": member, "member_epoch": answer.member_epoch,
            "topic_partitions": None,
        }  # fmt: skip
        frames = [encoder.encode(68, 1, beat)[1][4:] for _ in range(beats)]
        start = time.process_time()
        for body in frames:
            served = server.serve_now(conn, body)
            assert isinstance(served, bytes)
        return (time.process_time() - start) / beats * 1e6

    try:
        return asyncio.run(run())
    finally:
        server.store.close()
        server.events.close()
        server.log.close()


def _answer(server: Any, conn: Any, encoder: Any, key: int, version: int, values: Any) -> Any:
    from regroup.server.clients.wire_client import WireClient

    cid, frame = encoder.encode(key, version, values)
    served = server.serve_now(conn, frame[4:])
    assert isinstance(served, bytes)
    return WireClient.decode(None, key, version, cid, served[4:])  # type: ignore[arg-type]


async def _answer_async(
    server: Any, conn: Any, encoder: Any, key: int, version: int, values: Any
) -> Any:
    from regroup.server.clients.wire_client import WireClient

    cid, frame = encoder.encode(key, version, values)
    served = server.serve_now(conn, frame[4:])
    if not isinstance(served, bytes):
        served = await served
    assert isinstance(served, bytes)
    return WireClient.decode(None, key, version, cid, served[4:])  # type: ignore[arg-type]


class _Body:
    def __init__(self, mechanism: str = "", auth_bytes: bytes = b"") -> None:
        self.mechanism = mechanism
        self.auth_bytes = auth_bytes


def bench_login(mechanism: str, logins: int) -> float:
    """ms of server CPU per login (the client's proofs are computed beforehand)."""
    credentials = parse_credentials(f"alice {mechanism} password=pw")
    scram = ScramMechanism.for_name(mechanism)
    total = 0.0
    for _ in range(logins):
        auth = Authenticator((mechanism,), credentials)
        start = time.process_time()
        auth.on_request(17, 1, _Body(mechanism))
        if scram is None:
            auth.on_request(36, 2, _Body(auth_bytes=b"\0alice\0pw"))
        else:
            first = auth.on_request(36, 2, _Body(auth_bytes=b"n,,n=alice,r=nonce")).response
            total += time.process_time() - start
            final, _ = scram_client_final(scram, "pw", "n=alice,r=nonce", bytes(first.auth_bytes))
            start = time.process_time()
            auth.on_request(36, 2, _Body(auth_bytes=final))
        total += time.process_time() - start
        assert auth.complete
    return total / logins * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    calls, beats, logins = (2_000, 300, 20) if args.quick else (20_000, 2_000, 200)
    figures: dict[str, float] = {}
    for count in (10, 100, 1000):
        figures[f"authorize_us_{count}_acls"] = bench_authorize(count, calls)
    figures["heartbeat_us_no_security"] = bench_heartbeat(False, beats)
    figures["heartbeat_us_authorizer_100_acls"] = bench_heartbeat(True, beats)
    for regex in (False, True):
        kind = "regex" if regex else "names"
        figures[f"consumer_heartbeat_us_{kind}_no_security"] = bench_consumer_heartbeat(
            False, beats, regex
        )
        figures[f"consumer_heartbeat_us_{kind}_authorizer"] = bench_consumer_heartbeat(
            True, beats, regex
        )
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        figures[f"login_ms_{mechanism}"] = bench_login(mechanism, logins)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    for name, value in figures.items():
        print(f"{name:40} {value:10.2f}")


if __name__ == "__main__":
    main()
