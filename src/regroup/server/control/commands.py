"""Every fault and test action on a running server, by name: in process and over the wire.

``Control`` is the one list of what a test can do to a server: create topics
and produce (test data), change group configs at run time, inject faults
(``faults.RequestFaults``: errors, delays, fenced heartbeats, tracking; and
``group_faults``: sessions, fencing, rebalances, target assignments), pause
the coordinator's timers, drop connections, and wait for a group to settle.
``regroup.testing.Broker`` calls its methods on the server's loop; a server
started with ``regroup serve --control`` also serves them on a private API key,
which ``regroup ctl`` speaks, so tests in any language can drive a separately
started server.

The control channel: API key ``CONTROL_KEY`` (32002, next to the client-side
assignor keys 32000/32001 of ``versions``), version 0, never listed in
ApiVersions. Request: header v1 (api key, version, correlation id, client id),
then the rest of the frame is one JSON object ``{"command": NAME, "args":
{...}}`` in UTF-8. Response: header v0 (the correlation id), then one JSON
object: ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "..."}``.
A bad command, argument or value is an ``ok: false`` answer, never a closed
connection. It is off unless asked for: whoever reaches the port can fence
members and drop connections, which is a test server's business only.

On a secured server the channel is behind the listener's security, on the same
port (``RegroupServer.control_refusal``): on a SASL listener a control request
before the login closes the connection unanswered (as every request but
ApiVersions and SaslHandshake does there), and with an authorizer the principal
needs ALTER on the CLUSTER, else the answer is ``ok: false`` with
CLUSTER_AUTHORIZATION_FAILED and nothing runs. Without security (and on a
listener without authentication when there is no authorizer) it is open, as
every other API is there.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import struct
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Protocol

from regroup.coordinator.config import GroupCoordinatorConfig, InvalidConfigError
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.service import GroupCoordinator
from regroup.model.errors import KafkaProtocolError
from regroup.server.cluster.brokers import Brokers
from regroup.server.control import group_faults
from regroup.server.control.faults import FaultError, RequestFaults
from regroup.server.control.group_faults import GroupFaultError
from regroup.server.control.records import (
    ProducedRecord,
    RecordValueError,
    build_records,
    partition_for_key,
)
from regroup.server.net.connection import ConnectionState, Served
from regroup.server.wire.api_keys import ApiKey
from regroup.server.wire.error_responses import UnsupportedErrorResponse

__all__ = [
    "CONTROL_KEY",
    "USER_ERRORS",
    "Control",
    "ControlError",
    "ControlledServer",
    "decode_answer",
    "encode_command",
]

#: The private API key of the control channel (module docstring).
CONTROL_KEY = ApiKey.REGROUP_CONTROL

_HEADER = struct.Struct(">hhi")
#: How often a wait looks at the group again (server milliseconds).
_POLL_S = 0.02


class ControlError(ValueError):
    """A command that cannot run: its message is the ``error`` of the answer."""


#: What a command raises for a user's mistake; ``run`` and ``Broker`` report each as a
#: ``ControlError`` with its message.
USER_ERRORS = (
    ControlError,
    FaultError,
    GroupFaultError,
    UnsupportedErrorResponse,
    InvalidConfigError,
)


class _Closable(Protocol):
    state: ConnectionState

    def close(self) -> None: ...


class _NodeOptions(Protocol):
    @property
    def node_id(self) -> int: ...


class ControlledServer(Protocol):
    """What ``Control`` needs of ``app.RegroupServer`` (which it cannot import: no circles)."""

    coordinator: GroupCoordinator
    timers_paused: bool
    #: Several brokers in one process (``regroup.server.cluster``), or ``None``.
    brokers: Brokers | None

    @property
    def options(self) -> _NodeOptions: ...

    def now_ms(self) -> int: ...
    def control_refusal(self, conn: ConnectionState) -> str | None: ...
    def apply(self, result: CoordinatorResult) -> None: ...
    def set_timers_paused(self, paused: bool) -> None: ...
    def create_topic(self, name: str, partitions: int) -> None: ...
    def append_local(
        self,
        topic: str,
        partition: int,
        values: list[bytes],
        keys: Sequence[bytes | None] = (),
        headers: Sequence[Sequence[tuple[str, bytes | None]]] = (),
    ) -> int: ...
    @property
    def connections(self) -> Iterable[_Closable]: ...


class Control:
    """The commands; each runs on the server's loop (``COMMANDS`` lists the wire names)."""

    def __init__(self, server: ControlledServer) -> None:
        self.server = server
        self.faults = RequestFaults(server.now_ms)
        self.faults.private[CONTROL_KEY] = self.serve_wire
        self.faults.node_ids = frozenset({server.options.node_id})

    # -- test data and configs ------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1) -> None:
        try:
            self.server.create_topic(name, int(partitions))
        except KafkaProtocolError as exc:
            raise ControlError(f"cannot create topic {name!r}: {exc}") from None

    def produce(
        self,
        topic: str,
        records: Sequence[str | bytes],
        partition: int | None = None,
        keys: Sequence[str | bytes | None] | None = None,
        headers: Sequence[Any] | None = None,
    ) -> dict[int, int]:
        """Append ``records`` (values), with ``keys[i]`` and ``headers[i]`` when given: to
        ``partition``, else a keyed record where Kafka's default partitioner puts it and
        the others round-robin over the topic's partitions (``records``). The base
        offset of the batch written to each partition."""
        image = self.server.coordinator.metadata.topic(topic)
        if image is None:
            raise ControlError(f"no topic {topic!r} (create it first)")
        count = image.partitions
        try:
            built = build_records(records, keys, headers)
        except RecordValueError as exc:
            raise ControlError(str(exc)) from None
        by_partition: dict[int, list[ProducedRecord]] = {}
        unkeyed = 0
        for record in built:
            if partition is not None:
                p = int(partition)
            elif record.key is not None:
                p = partition_for_key(record.key, count)
            else:
                p, unkeyed = unkeyed % count, unkeyed + 1
            by_partition.setdefault(p, []).append(record)
        out = {}
        for p, batch in sorted(by_partition.items()):
            values = [r.value or b"" for r in batch]
            try:
                if keys is None and headers is None:
                    out[p] = self.server.append_local(topic, p, values)
                else:
                    out[p] = self.server.append_local(
                        topic, p, values, [r.key for r in batch], [r.headers for r in batch]
                    )
            except KeyError:
                raise ControlError(f"no partition {topic}-{p}") from None
        return out

    def configs(self) -> dict[str, Any]:
        """The broker's group configs by Kafka's names."""
        config = self.server.coordinator.config
        values = {n: getattr(config, f) for n, f in GroupCoordinatorConfig.kafka_names().items()}
        return {n: list(v) if isinstance(v, tuple) else v for n, v in values.items()}

    def set_configs(self, configs: Mapping[str, Any]) -> dict[str, Any]:
        """Change group configs at run time, by Kafka's names; checked together, all or none.

        They apply from the next request or timer: a new heartbeat interval is in
        the next heartbeat response, a new session timeout arms at the next heartbeat.
        """
        try:
            updated = GroupCoordinatorConfig.from_properties({**self.configs(), **configs})
        except InvalidConfigError as exc:
            raise ControlError(str(exc)) from None
        self.server.coordinator.config = updated
        return self.configs()

    # -- request faults -------------------------------------------------------------------

    def push_request_errors(
        self,
        api: str | int,
        errors: Sequence[str | int],
        rtt_ms: Sequence[int] | int | None = None,
        broker: int | None = None,
    ) -> int:
        """The next requests of ``api`` answer ``errors``, one each. With ``rtt_ms`` (one
        delay per error, or one for all) or ``broker`` (only that broker's requests),
        errors paired with delays: ``RequestFaults.push_request_error_rtts``."""
        if rtt_ms is None and broker is None:
            return self.faults.push_request_errors(api, errors)
        if not isinstance(rtt_ms, int | None) and not all(isinstance(d, int) for d in rtt_ms):
            raise ControlError(f"rtt_ms is a list of ints or one int, got {rtt_ms!r}")
        if broker is not None and not isinstance(broker, int):
            raise ControlError(f"broker is a broker id (an int), got {broker!r}")
        delays = 0 if rtt_ms is None else rtt_ms
        return self.faults.push_request_error_rtts(api, errors, delays, broker=broker)

    def set_request_error(
        self, api: str | int, error: str | int | None, duration_ms: int | None = None
    ) -> None:
        self.faults.set_request_error(api, error, duration_ms=duration_ms)

    def clear_request_errors(self, api: str | int | None = None) -> None:
        self.faults.clear_request_errors(api)

    def set_rtt(self, ms: int, api: str | int | None = None) -> None:
        self.faults.set_rtt(api, int(ms))

    def coordinator_unavailable(
        self, duration_ms: int | None = None, error: str | int = "NOT_COORDINATOR"
    ) -> list[str]:
        return self.faults.coordinator_unavailable(duration_ms, error)

    def coordinator_available(self) -> None:
        self.faults.coordinator_available()

    def drop_connections(
        self, client_id: str | None = None, *, keep: ConnectionState | None = None
    ) -> int:
        """Close every client connection (of ``client_id`` only, when given); how many."""
        closed = 0
        for protocol in list(self.server.connections):
            state = protocol.state
            if state is keep or (client_id is not None and state.client_id != client_id):
                continue
            protocol.close()
            closed += 1
        return closed

    def start_request_tracking(self) -> None:
        self.faults.start_tracking()

    def stop_request_tracking(self) -> None:
        self.faults.stop_tracking()

    def requests(self, api: str | int | None = None) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.faults.requests(api)]

    def clear_requests(self) -> None:
        self.faults.clear_requests()

    def reset_faults(self) -> None:
        """Every request fault off, tracking off, the coordinator's timers running."""
        self.faults.reset()
        self.server.set_timers_paused(False)

    def pending_faults(self) -> dict[str, Any]:
        return self.faults.pending() | {"timers_paused": self.server.timers_paused}

    # -- group faults (coordinator steps: records written as for the real event) ----------

    def _apply(self, result: CoordinatorResult) -> None:
        self.server.apply(result)

    def expire_session(self, group_id: str, member_id: str) -> None:
        coordinator = self.server.coordinator
        self._apply(
            group_faults.expire_session(coordinator, group_id, member_id, self.server.now_ms())
        )

    def fence_member(self, group_id: str, member_id: str) -> None:
        coordinator = self.server.coordinator
        self._apply(
            group_faults.fence_member(coordinator, group_id, member_id, self.server.now_ms())
        )
        self.faults.fence(member_id)

    def force_rebalance(self, group_id: str) -> None:
        coordinator = self.server.coordinator
        self._apply(group_faults.force_rebalance(coordinator, group_id, self.server.now_ms()))

    def set_target_assignment(
        self, group_id: str, assignment: Mapping[str, Mapping[str, Sequence[int]]]
    ) -> None:
        coordinator = self.server.coordinator
        now = self.server.now_ms()
        self._apply(group_faults.set_target_assignment(coordinator, group_id, assignment, now))

    def pause_timers(self) -> None:
        self.server.set_timers_paused(True)

    def resume_timers(self) -> None:
        self.server.set_timers_paused(False)

    # -- inspection and waits -------------------------------------------------------------

    def describe_group(self, group_id: str) -> dict[str, Any] | None:
        return group_faults.describe(self.server.coordinator, group_id)

    def committed(self, group_id: str) -> dict[str, dict[int, int]]:
        """The group's committed offsets: ``{topic: {partition: offset}}``."""
        out: dict[str, dict[int, int]] = {}
        for tp, offset in self.server.coordinator.offsets.group_offsets(group_id).items():
            out.setdefault(tp.topic, {})[tp.partition] = offset.offset
        return {t: dict(sorted(ps.items())) for t, ps in sorted(out.items())}

    def list_groups(self) -> list[str]:
        return sorted(self.server.coordinator.groups)

    @staticmethod
    def _settled(described: dict[str, Any] | None, members: int | None) -> bool:
        if described is None or described["state"] != "Stable":
            return False
        if members is not None and len(described["members"]) != members:
            return False
        if described["type"] == "consumer":
            epoch = described["epoch"]
            return described["assignment_epoch"] == epoch and all(
                m["epoch"] == epoch and m["state"] == "STABLE"
                for m in described["members"].values()
            )
        return True

    async def wait_for_stable(
        self, group_id: str, members: int | None = None, timeout_ms: int = 30_000
    ) -> dict[str, Any]:
        """Until the group is Stable (every KIP-848 member reconciled to the group epoch),
        with ``members`` members when given; its description."""
        found: dict[str, Any] = await self._wait(
            lambda d: self._settled(d, members),
            group_id,
            timeout_ms,
            f"group {group_id!r} to be Stable"
            + ("" if members is None else f" with {members} members"),
        )
        return found

    async def wait_for_assignment(
        self,
        group_id: str,
        member_id: str | None = None,
        client_id: str | None = None,
        partitions: Mapping[str, Sequence[int]] | None = None,
        timeout_ms: int = 30_000,
    ) -> dict[str, Any]:
        """Until a member (by member id or client id) owns ``partitions`` exactly, or any
        partition when ``partitions`` is ``None``; that member's description."""
        want = None if partitions is None else {t: sorted(p) for t, p in partitions.items() if p}

        def match(d: dict[str, Any] | None) -> dict[str, Any] | None:
            for mid, m in (d or {}).get("members", {}).items():
                if member_id is not None and mid != member_id:
                    continue
                if client_id is not None and m["client_id"] != client_id:
                    continue
                owned = m["assignment"]
                if (want is None and owned) or (want is not None and owned == want):
                    return {"member_id": mid, **m}
            return None

        found: dict[str, Any] = await self._wait(
            match, group_id, timeout_ms, f"a member of {group_id!r} to own {want or 'partitions'}"
        )
        return found

    async def _wait(
        self,
        check: Callable[[dict[str, Any] | None], Any],
        group_id: str,
        timeout_ms: int,
        what: str,
    ) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000.0
        while True:
            described = self.describe_group(group_id)
            found = check(described)
            if found:
                return described if found is True else found
            if loop.time() >= deadline:
                raise ControlError(
                    f"timed out after {timeout_ms} ms waiting for {what}; "
                    f"last seen: {json.dumps(described)}"
                )
            await asyncio.sleep(_POLL_S)

    # -- several brokers (``regroup.server.cluster.brokers``) ------------------------------

    def _brokers(self) -> Brokers:
        brokers = self.server.brokers
        if brokers is None:
            raise ControlError("this server is one broker: start it with --brokers N (N > 1)")
        return brokers

    def _cluster_call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except ValueError as exc:
            raise ControlError(str(exc)) from None

    async def _cluster_wait(self, pending: Awaitable[Any]) -> Any:
        try:
            return await pending
        except ValueError as exc:
            raise ControlError(str(exc)) from None

    def brokers(self) -> dict[str, Any]:
        """Every broker: address, rack, running, the ``__consumer_offsets`` partitions it leads."""
        return self._brokers().describe()

    def broker_stop(
        self, broker: int, keep: ConnectionState | None = None
    ) -> Coroutine[Any, Any, Any]:
        """Stop a broker: its connections close (but ``keep``, the control connection that
        asked) and its leaderships move to live brokers."""
        return self._cluster_wait(self._brokers().stop_broker(int(broker), keep))

    def broker_start(self, broker: int) -> Coroutine[Any, Any, Any]:
        """Start a stopped broker again on its port."""
        return self._cluster_wait(self._brokers().start_broker(int(broker)))

    def broker_outage(
        self, broker: int, seconds: float, keep: ConnectionState | None = None
    ) -> Coroutine[Any, Any, Any]:
        """Stop a broker for ``seconds``, then start it again."""
        outage = self._brokers().broker_outage(int(broker), float(seconds), keep)
        return self._cluster_wait(outage)

    def coordinator_of(self, group_id: str) -> int:
        """The broker coordinating ``group_id`` (-1 while none can)."""
        return int(self._brokers().coordinator_of(str(group_id)))

    def move_coordinator(self, group_id: str, broker: int) -> dict[str, Any]:
        """Move the group's ``__consumer_offsets`` partition (every group on it) to ``broker``."""
        return dict(
            self._cluster_call(self._brokers().move_coordinator, str(group_id), int(broker))
        )

    def move_leader(self, topic: str, partition: int, broker: int) -> dict[str, Any]:
        """Make ``broker`` the leader of ``topic``-``partition``."""
        moved = self._cluster_call(
            self._brokers().move_leader, str(topic), int(partition), int(broker)
        )
        return dict(moved)

    # -- the wire channel ------------------------------------------------------------------

    def run(
        self, command: str, args: Mapping[str, Any], conn: ConnectionState | None = None
    ) -> Any:
        """Run a command by its wire name; a coroutine for the waits. ``ControlError`` on
        a bad command or argument."""
        method = COMMANDS.get(command)
        if method is None:
            raise ControlError(
                f"unknown command {command!r} (one of: {', '.join(sorted(COMMANDS))})"
            )
        bound = getattr(self, method)
        kwargs = dict(args)
        if command in ("drop_connections", "broker_stop", "broker_outage"):
            kwargs["keep"] = conn
        try:
            inspect.signature(bound).bind(**kwargs)
        except TypeError as exc:
            raise ControlError(f"{command}: {exc}") from None
        try:
            return bound(**kwargs)
        except USER_ERRORS as exc:
            raise ControlError(str(exc)) from None

    def serve_wire(self, conn: ConnectionState, body: bytes) -> Served:
        """One control request (module docstring): its framed answer, or a coroutine."""
        _, _, cid = _HEADER.unpack_from(body, 0)
        refusal = self.server.control_refusal(conn)  # may close: see the module docstring
        if refusal is not None:
            return _answer(cid, {"ok": False, "error": refusal})
        try:
            command, args = _decode_command(body)
            result = self.run(command, args, conn)
        except ControlError as exc:
            return _answer(cid, {"ok": False, "error": str(exc)})
        except (TypeError, ValueError) as exc:  # a value of the wrong type deep inside
            return _answer(cid, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        if inspect.isawaitable(result):
            return self._answer_later(cid, result)
        return _answer(cid, {"ok": True, "result": result})

    @staticmethod
    async def _answer_later(cid: int, pending: Awaitable[Any]) -> bytes:
        try:
            result = await pending
        except ControlError as exc:
            return _answer(cid, {"ok": False, "error": str(exc)})
        return _answer(cid, {"ok": True, "result": result})


#: Wire command name -> ``Control`` method (every public command; the names are the methods').
COMMANDS: Mapping[str, str] = {
    name: name
    for name in (
        "create_topic",
        "produce",
        "configs",
        "set_configs",
        "push_request_errors",
        "set_request_error",
        "clear_request_errors",
        "set_rtt",
        "coordinator_unavailable",
        "coordinator_available",
        "drop_connections",
        "start_request_tracking",
        "stop_request_tracking",
        "requests",
        "clear_requests",
        "pending_faults",
        "reset_faults",
        "expire_session",
        "fence_member",
        "force_rebalance",
        "set_target_assignment",
        "pause_timers",
        "resume_timers",
        "describe_group",
        "list_groups",
        "committed",
        "wait_for_stable",
        "wait_for_assignment",
        "brokers",
        "broker_stop",
        "broker_start",
        "broker_outage",
        "coordinator_of",
        "move_coordinator",
        "move_leader",
    )
}


def _decode_command(body: bytes) -> tuple[str, dict[str, Any]]:
    if len(body) < 10:
        raise ControlError("a control request needs a header v1")
    (size,) = struct.unpack_from(">h", body, 8)
    start = 10 + max(size, 0)
    try:
        message = json.loads(bytes(body[start:]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ControlError(f"the body is not a JSON object: {exc}") from None
    if not isinstance(message, dict) or not isinstance(message.get("command"), str):
        raise ControlError('the body must be {"command": NAME, "args": {...}}')
    args = message.get("args", {})
    if not isinstance(args, dict):
        raise ControlError("args must be a JSON object")
    return message["command"], args


def _answer(cid: int, value: dict[str, Any]) -> bytes:
    payload = struct.pack(">i", cid) + json.dumps(value, default=str).encode("utf-8")
    return struct.pack(">i", len(payload)) + payload


def encode_command(
    correlation_id: int, client_id: str, command: str, args: Mapping[str, Any]
) -> bytes:
    """A framed control request (for ``regroup ctl`` and tests)."""
    name = client_id.encode("utf-8")
    body = json.dumps({"command": command, "args": dict(args)}).encode("utf-8")
    header = _HEADER.pack(CONTROL_KEY, 0, correlation_id) + struct.pack(">h", len(name)) + name
    return struct.pack(">i", len(header) + len(body)) + header + body


def decode_answer(frame: bytes) -> tuple[int, dict[str, Any]]:
    """(correlation id, answer object) of a control response frame (without its size)."""
    (cid,) = struct.unpack_from(">i", frame, 0)
    answer = json.loads(frame[4:].decode("utf-8"))
    if not isinstance(answer, dict):
        raise ValueError("a control answer is a JSON object")
    return int(cid), answer
