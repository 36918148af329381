"""Wire fuzzing of a secured server: mutated frames after a real SASL login under ACLs,
and mutated SASL exchanges before one.

The server has one SASL_PLAINTEXT listener (``fuzz_security``: a users file with
PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 credentials, and Kafka's
``StandardAuthorizer`` with ACLs). The principal that fuzzes, ``User:fuzzer``, may
use the group and the topic the seeds name (``s``: READ on both, which implies
DESCRIBE) but may not write, create, delete or alter anything, and a DENY takes
DESCRIBE of the topic ``secret`` from her; another user's group and topic exist.
So a mutated frame is answered as ``fuzzer`` would be: some are refused by the
authorizer, some are allowed, as the report shows (``denied``/``allowed``).

Every frame goes through ``RegroupServer.serve_now`` on a connection with a
session from ``Security.new_session``, the path a SASL_PLAINTEXT connection of
the acceptor takes. Frames alternate between two streams:

1. After a login: a session logs in with SaslHandshake v1 and SaslAuthenticate v2
   (``log_in``: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 in turn), then gets mutated frames of
   every API and version (``fuzz.seeds``) until one closes it; the next frame logs
   in again on a new session.
2. Before a login, each frame on a new session: a mutated frame of any API; a
   mutated SaslHandshake (v0/v1, an enabled mechanism's name); a valid handshake,
   then a mutated first SaslAuthenticate (PLAIN's message, SCRAM's client-first);
   a valid SCRAM client-first, then a mutated client-final; or a v0 handshake,
   then a mutated bare token (KIP-43's unframed form).

Login frames are timed like the fuzzed ones but not counted as frames; a login
that fails is a death. SCRAM nonces are random (``secrets``), so the servers'
answers differ from run to run; the frames sent do not.
"""

from __future__ import annotations

import base64
import functools
import random
import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.clients.wire_client import RequestEncoder, decode_response
from regroup.server.control.fuzz import (
    FrameTimer,
    FuzzReport,
    count,
    mutate,
    quietly,
    seeds,
)
from regroup.server.net.connection import ConnectionState
from regroup.server.security.acl import AclOperation, ResourceType
from regroup.server.security.authenticator import SUPPORTED_MECHANISMS
from regroup.server.security.client_login import (
    LoginError,
    check_answer,
    salted_password,
    scram_client_final,
)
from regroup.server.security.config import SecurityConfig
from regroup.server.security.scram import ScramMechanism
from regroup.server.security.service import Session
from regroup.server.wire.api_keys import ApiKey

__all__ = ["FUZZ_PRINCIPAL", "InProcessClient", "fuzz_sasl", "fuzz_security"]

FUZZ_USER = "fuzzer"
FUZZ_PASSWORD = "fuzzer-secret"
FUZZ_PRINCIPAL = f"User:{FUZZ_USER}"

_USERS = {FUZZ_USER: FUZZ_PASSWORD, "alice": "alice-secret"}

#: ``fuzzer`` may READ (so DESCRIBE) the group and topic ``s`` the seeds name, and
#: DESCRIBE the cluster; nothing else. ``alice`` owns ``shop`` and ``orders``.
ACLS = """
ALLOW User:fuzzer READ GROUP LITERAL s
ALLOW User:fuzzer READ TOPIC LITERAL s
ALLOW User:fuzzer DESCRIBE CLUSTER LITERAL kafka-cluster
ALLOW User:fuzzer READ TOPIC PREFIXED se
DENY User:fuzzer DESCRIBE TOPIC LITERAL secret
ALLOW User:alice ALL GROUP LITERAL shop
ALLOW User:alice ALL TOPIC LITERAL orders
"""


def fuzz_security(directory: Path) -> SecurityConfig:
    """A SASL_PLAINTEXT listener on a free loopback port, PLAIN and SCRAM users, ACLs
    (the files are written into ``directory``)."""
    users = directory / "users.txt"
    users.write_text(
        "".join(
            f"{user} {mechanism} password={password}\n"
            for user, password in _USERS.items()
            for mechanism in SUPPORTED_MECHANISMS
        )
    )
    acls = directory / "acls.txt"
    acls.write_text(ACLS)
    return SecurityConfig.from_properties(
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "regroup.sasl.credentials.file": str(users),
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "regroup.acls.file": str(acls),
        }
    )


class InProcessClient(RequestEncoder):
    """``WireClient``'s ``request`` through ``serve_now`` on one connection, timed."""

    def __init__(self, timer: FrameTimer, conn: ConnectionState) -> None:
        super().__init__("fuzz")
        self.timer = timer
        self.conn = conn

    async def exchange(self, api_key: int, version: int, values: Any) -> Any:
        cid, framed = self.encode(api_key, version, values)
        outcome, answer = await self.timer.serve(self.conn, framed[4:])
        if outcome != "answered" or not answer:
            raise LoginError(f"{ApiKey(api_key).name} v{version}: {outcome}")
        return decode_response(api_key, version, cid, answer[4:])

    def body(self, api_key: ApiKey, version: int, value: str | bytes) -> bytes:
        """A SaslHandshake naming ``value`` or a SaslAuthenticate carrying it, unsent
        (without its size prefix)."""
        field = "mechanism" if api_key is ApiKey.SASL_HANDSHAKE else "auth_bytes"
        return self.encode(api_key, version, {field: value})[1][4:]

    async def authenticate(self, token: bytes) -> Any:
        return await self.exchange(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})


@functools.lru_cache(maxsize=16)
def _salted(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """The client's PBKDF2 once per salt: the server's side of every login is unchanged."""
    return salted_password(mechanism, password, salt, iterations)


async def log_in(client: InProcessClient, mechanism: str) -> None:
    """``client_login.login``'s exchange (SaslHandshake v1, SaslAuthenticate v2, the
    server's SCRAM signature checked) frame by frame through ``serve_now``."""
    handshake = await client.exchange(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
    if int(handshake.error_code.value):
        raise LoginError(f"SaslHandshake {mechanism}: error {handshake.error_code.value}")
    scram = ScramMechanism.for_name(mechanism)
    if scram is None:
        check_answer(await client.authenticate(f"\0{FUZZ_USER}\0{FUZZ_PASSWORD}".encode()))
        return
    bare = f"n={FUZZ_USER},r={secrets.token_urlsafe(18)}"
    server_first = check_answer(await client.authenticate(f"n,,{bare}".encode()))
    final, expected = scram_client_final(scram, FUZZ_PASSWORD, bare, server_first, _salted)
    server_final = check_answer(await client.authenticate(final))
    if server_final != b"v=" + base64.b64encode(expected):
        raise LoginError("the server's SCRAM signature is wrong")


class _Decisions:
    """Counts the authorizer's decisions (``Authorizer.authorize`` wrapped in place)."""

    def __init__(self, server: RegroupServer) -> None:
        security = server.security
        assert security is not None and security.authorizer is not None
        authorizer = security.authorizer
        inner: Callable[..., bool] = authorizer.authorize
        self.allowed = self.denied = self.foreign = 0

        def authorize(
            principal: str,
            host: str,
            operation: AclOperation,
            resource_type: ResourceType,
            name: str,
        ) -> bool:
            decision = inner(principal, host, operation, resource_type, name)
            if principal != FUZZ_PRINCIPAL:
                self.foreign += 1
            elif decision:
                self.allowed += 1
            else:
                self.denied += 1
            return decision

        setattr(authorizer, "authorize", authorize)  # noqa: B010 - an instance attribute

    def reset(self) -> tuple[int, int, int]:
        seen = (self.allowed, self.denied, self.foreign)
        self.allowed = self.denied = self.foreign = 0
        return seen


class _SecuredServer:
    def __init__(self, server: RegroupServer, report: FuzzReport) -> None:
        self.server = server
        self.timer = FrameTimer(server, report)
        self.decisions = _Decisions(server)
        self.ids = 0
        #: The logged-in connection of stream 1, while the server has not closed it.
        self.client: InProcessClient | None = None

    def connect(self) -> InProcessClient:
        security = self.server.security
        assert security is not None
        self.ids += 1
        conn = ConnectionState(self.ids, "127.0.0.1")
        conn.session = security.new_session(security.listeners[0], "127.0.0.1", None)
        return InProcessClient(self.timer, conn)


async def _after_login(
    target: _SecuredServer, rng: random.Random, bodies: list[bytes], report: FuzzReport
) -> None:
    client = target.client
    if client is None:
        client = target.connect()
        mechanism = SUPPORTED_MECHANISMS[report.logins % len(SUPPORTED_MECHANISMS)]
        try:
            await log_in(client, mechanism)
        except LoginError as exc:
            report.deaths += 1
            report.note(b"", f"{mechanism} login: {exc}")
            return
        session = client.conn.session
        assert isinstance(session, Session) and session.principal == FUZZ_PRINCIPAL
        report.logins += 1
        target.client = client
    target.decisions.reset()
    outcome, _ = await target.timer.serve(client.conn, mutate(rng.choice(bodies), rng))
    count(report, outcome)
    report.authenticated += 1
    allowed, denied, foreign = target.decisions.reset()
    report.foreign_decisions += foreign
    if denied:
        report.denied += 1
    elif allowed:
        report.allowed += 1
    if outcome != "answered":
        target.client = None  # the server closed it: the next frame logs in again


def _raw(body: bytes, rng: random.Random) -> bytes:
    """``mutate`` over a bare token (it leaves a request header's 8 bytes alone)."""
    return mutate(bytes(8) + body, rng)[8:]


async def _before_login(
    target: _SecuredServer, rng: random.Random, bodies: list[bytes], report: FuzzReport
) -> None:
    client = target.connect()
    mechanism = rng.choice(SUPPORTED_MECHANISMS)
    scram = ScramMechanism.for_name(mechanism)
    kind = rng.randrange(5)
    try:
        if kind == 0:  # any API, first frame of the connection
            body = mutate(rng.choice(bodies), rng)
        elif kind == 1:  # a SaslHandshake naming an enabled mechanism, maybe after ApiVersions
            if rng.random() < 0.5:
                await client.exchange(
                    ApiKey.API_VERSIONS,
                    3,
                    {"client_software_name": "fuzz", "client_software_version": "1"},
                )
            body = mutate(client.body(ApiKey.SASL_HANDSHAKE, rng.randint(0, 1), mechanism), rng)
        elif kind == 2 or (kind == 3 and scram is None):  # the first token, framed
            await client.exchange(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
            first = _first_token(mechanism, rng)
            body = mutate(client.body(ApiKey.SASL_AUTHENTICATE, rng.randint(0, 2), first), rng)
        elif kind == 3:  # SCRAM's client-final, framed
            assert scram is not None
            await client.exchange(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
            bare = f"n={FUZZ_USER},r=fuzz{rng.getrandbits(64):x}"
            server_first = check_answer(await client.authenticate(f"n,,{bare}".encode()))
            final = _scram_final(scram, bare, server_first)
            body = mutate(client.body(ApiKey.SASL_AUTHENTICATE, 2, final), rng)
        else:  # a v0 handshake, then a bare token
            await client.exchange(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": mechanism})
            body = _raw(_first_token(mechanism, rng), rng)
    except LoginError as exc:
        report.deaths += 1
        report.note(b"", f"{mechanism} exchange before the fuzzed frame: {exc}")
        return
    target.decisions.reset()
    outcome, _ = await target.timer.serve(client.conn, body)
    count(report, outcome)
    report.pre_login_decisions += sum(target.decisions.reset())


def _first_token(mechanism: str, rng: random.Random) -> bytes:
    if ScramMechanism.for_name(mechanism) is None:
        return f"\0{FUZZ_USER}\0{FUZZ_PASSWORD}".encode()
    return f"n,,n={FUZZ_USER},r=fuzz{rng.getrandbits(64):x}".encode()


def _scram_final(mechanism: ScramMechanism, bare: str, server_first: bytes) -> bytes:
    return scram_client_final(mechanism, FUZZ_PASSWORD, bare, server_first, _salted)[0]


async def _run(
    frames: int, seed: int, restart_every: int, report: FuzzReport, directory: Path
) -> None:
    rng = random.Random(seed)
    bodies = seeds()
    security = fuzz_security(directory)
    target: _SecuredServer | None = None
    try:
        for index in range(frames):
            if target is None or index % restart_every == 0:
                if target is not None:
                    await target.server.stop()
                server = RegroupServer(
                    ServerOptions(host="127.0.0.1", port=0, seed=seed, security=security)
                )
                await server.start()
                target = _SecuredServer(server, report)
            stream = _after_login if index % 2 == 0 else _before_login
            await stream(target, rng, bodies, report)
    finally:
        if target is not None:
            await target.server.stop()


def fuzz_sasl(frames: int, seed: int = 0, restart_every: int = 20_000) -> FuzzReport:
    """Serve ``frames`` mutated frames to a SASL_PLAINTEXT server with ACLs, half after a
    login (``report.authenticated``), half before one; a fresh server every
    ``restart_every`` frames."""
    report = FuzzReport()
    with tempfile.TemporaryDirectory(prefix="regroup-fuzz-") as directory:
        quietly(_run(frames, seed, restart_every, report, Path(directory)))
    return report
