"""``Broker``: a real regroup server for tests of real Kafka clients, with fault injection.

The rest of ``regroup.testing`` is sans-IO; this module is its one door to I/O
(the import contracts in pyproject.toml let ``regroup.testing.broker``, and only
it, import ``regroup.server``). ``import regroup.testing`` does not load it:
``regroup.testing.Broker`` imports it on first use.

Why a thread and not a subprocess. The broker runs ``regroup serve``'s server
(``RegroupServer``) on its own asyncio event loop in a background thread of the
test process:

* it starts in milliseconds: no interpreter to start, no imports to redo, no
  port to read back from a child's output (``benchmarks/broker_start.py``);
* every fault, config change and inspection is a direct call run on the
  server's loop (``Control``), with the coordinator's own objects, not a
  serialised message, and an error in it is raised in the test;
* nothing outlives the test: ``stop`` closes every connection and the
  listening socket, stops the loop and joins its thread, and no child process
  can be orphaned by a killed test run.

What it costs: the server shares the GIL with the test and its clients, so a
client that spins in Python slows the broker down (librdkafka's threads do not
hold the GIL). For a server in its own process, run ``regroup serve --control``
and drive it with ``regroup ctl`` (or the same JSON commands on the control
channel, ``regroup.server.control.commands``).

Group configs are Kafka's broker configs by name. ``TEST_CONFIGS`` makes
rebalances fast (no initial rebalance delay, sub-second heartbeats, a
few-second session timeout); pass ``configs=`` to override any, and
``set_configs`` to change them while the broker runs.

The broker's group coordinator logs as Kafka 4.x's does (the Python logger
``regroup.kafka``, ``regroup.server.coordinator_log``); ``log_file=`` appends this
broker's lines to a file in Kafka's ``server.log`` layout.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from regroup.coordinator.config import GroupCoordinatorConfig, InvalidConfigError
from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.background import BackgroundServer
from regroup.server.control.commands import USER_ERRORS, Control, ControlError
from regroup.server.control.faults import TrackedRequest
from regroup.server.coordinator_log import detach, log_to_file

__all__ = ["TEST_CONFIGS", "Broker", "ControlError"]

T = TypeVar("T")

#: Group configs that keep a real client's rebalance within a second or two.
TEST_CONFIGS: Mapping[str, object] = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 500,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 100,
    "group.consumer.session.timeout.ms": 6000,
    "group.consumer.min.session.timeout.ms": 1000,
}

#: Slack on a wait's own timeout before the test gets an error (s).
_CALL_TIMEOUT_S = 30.0


def _topic_counts(
    topics: Mapping[str, int] | Iterable[str] | None, default_partitions: int
) -> dict[str, int]:
    """``{"orders": 3}`` as given; ``["orders", "payments"]`` with ``default_partitions`` each."""
    if topics is None:
        return {}
    if isinstance(topics, str | bytes):
        raise ControlError(f"topics is a list of names or a mapping, not one name: {topics!r}")
    if isinstance(topics, Mapping):
        return dict(topics)
    return dict.fromkeys(topics, default_partitions)


class Broker:
    """A one-node Kafka cluster with regroup's coordinator, on a free port, for one test.

    >>> with Broker(topics={"orders": 3}) as broker:       # doctest: +SKIP
    ...     consumer = Consumer({"bootstrap.servers": broker.bootstrap, ...})
    """

    def __init__(
        self,
        *,
        topics: Mapping[str, int] | Iterable[str] | None = None,
        configs: Mapping[str, object] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        default_partitions: int = 1,
        auto_create_topics: bool = True,
        data_dir: Path | None = None,
        log_file: Path | None = None,
        brokers: int = 1,
        racks: Sequence[str] = (),
        seed: int | None = None,
    ) -> None:
        """``topics``: partition counts by name, or names alone (``default_partitions``
        each). ``seed``: the coordinator's randomness, so classic member ids (the
        coordinator's to choose) are the same every run for the same sequence of joins;
        ``None`` draws one. KIP-848 member ids are the client's (``regroup.server``
        takes what the client sends), so a seed cannot fix them."""
        if seed is not None and data_dir is not None:
            raise ControlError(
                "seed with data_dir would draw the member ids already in the store again "
                "after a restart: use one or the other"
            )
        try:
            config = GroupCoordinatorConfig.from_properties({**TEST_CONFIGS, **(configs or {})})
        except InvalidConfigError as exc:
            raise ControlError(str(exc)) from None
        self._options = ServerOptions(
            host=host,
            port=port,
            data_dir=data_dir,
            config=config,
            auto_create_topics=auto_create_topics,
            default_partitions=default_partitions,
            control=True,
            brokers=brokers,
            racks=tuple(racks),
            seed=seed,
        )
        self._topics = _topic_counts(topics, default_partitions)
        self._background: BackgroundServer | None = None
        self._log_file = log_file
        self._log_handler: logging.Handler | None = None

    # -- life cycle ------------------------------------------------------------------------

    def __enter__(self) -> Broker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Broker:
        """Listen (a free port unless one was given) and create the initial topics."""
        if self._background is not None:
            raise RuntimeError("the broker is already running")
        if self._log_file is not None:
            # Before the start: a restart's "Loaded ... group" lines come during it.
            self._log_handler = log_to_file(self._log_file, logging.INFO, only=self._options)
        background = BackgroundServer(self._options)
        try:
            background.start()
        except BaseException:
            background.stop()
            self._detach_log()
            raise
        self._background = background
        try:
            for name, partitions in self._topics.items():
                self.create_topic(name, partitions)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Close every connection and the listening socket; stop the loop and its thread."""
        background, self._background = self._background, None
        if background is not None:
            background.stop()
        self._detach_log()

    def _detach_log(self) -> None:
        handler, self._log_handler = self._log_handler, None
        if handler is not None:
            detach(handler)

    @property
    def running(self) -> bool:
        return self._background is not None

    @property
    def port(self) -> int:
        return self._running().port

    @property
    def bootstrap(self) -> str:
        """``host:port`` (with several brokers, every broker's, comma-separated): the
        clients' ``bootstrap.servers``."""
        brokers = self.server.brokers
        if brokers is None:
            return self._running().bootstrap
        return ",".join(f"{n.host}:{n.port}" for n in brokers.nodes)

    @property
    def server(self) -> RegroupServer:
        """The server itself; touch it only through ``call`` (its loop owns it)."""
        server = self._running().server
        assert server is not None
        return server

    def _running(self) -> BackgroundServer:
        if self._background is None:
            raise RuntimeError("the broker is not running (use `with Broker() as broker:`)")
        return self._background

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` on the server's loop; its result, or its exception (a
        user's mistake, such as an unknown group or error name, as ``ControlError``)."""
        try:
            result: T = self._running().call(fn, *args, **kwargs)
        except USER_ERRORS as exc:
            if isinstance(exc, ControlError):
                raise
            raise ControlError(str(exc)) from None
        return result

    def _await(self, coro: Coroutine[Any, Any, T], timeout_s: float) -> T:
        return self._running().wait(coro, timeout_s + _CALL_TIMEOUT_S)

    @property
    def _control(self) -> Control:
        control = self.server.control
        assert control is not None
        return control

    # -- test data and configs ---------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1) -> None:
        self.call(self._control.create_topic, name, partitions)

    def produce(
        self,
        topic: str,
        records: Sequence[str | bytes],
        *,
        partition: int | None = None,
        keys: Sequence[str | bytes | None] | None = None,
        headers: Sequence[Mapping[str, str | bytes | None] | Sequence[Any] | None] | None = None,
    ) -> dict[int, int]:
        """Append record values, record ``i`` with ``keys[i]`` and ``headers[i]`` when given
        (headers: ``{"name": "value"}`` or ``[("name", b"value"), ...]``). To ``partition``;
        else a keyed record goes where Kafka's default partitioner (murmur2) puts it, the
        others round-robin. The base offset per partition."""
        return self.call(
            self._control.produce,
            topic,
            list(records),
            partition,
            None if keys is None else list(keys),
            None if headers is None else list(headers),
        )

    def configs(self) -> dict[str, Any]:
        return self.call(self._control.configs)

    def set_configs(self, configs: Mapping[str, object] | None = None, **by_field: object) -> None:
        """Change group configs now, by Kafka's names (``set_configs({"group.consumer.
        heartbeat.interval.ms": 200})``) or as keywords with ``_`` for ``.``."""
        named = dict(configs or {})
        named.update({k.replace("_", "."): v for k, v in by_field.items()})
        self.call(self._control.set_configs, named)

    # -- request faults (librdkafka's mock: rd_kafka_mock_push_request_errors, ...) --------------

    def push_request_errors(
        self,
        api: str | int,
        *errors: str | int,
        rtt_ms: Sequence[int] | int | None = None,
        broker: int | None = None,
    ) -> None:
        """The next ``len(errors)`` requests of ``api`` get these errors, in order (0: served).

        ``rtt_ms``: each answer (an error, or the served response for a 0) leaves this
        much later: one delay per error, or one for all (librdkafka's
        ``rd_kafka_mock_broker_push_request_error_rtts``). ``broker``: only requests that
        broker receives (``None``: the next on any broker). With either, the entries are
        taken before the plain pushed errors, a broker's own before any broker's.
        """
        rtts = list(rtt_ms) if isinstance(rtt_ms, Sequence) else rtt_ms
        self.call(self._control.push_request_errors, api, list(errors), rtts, broker)

    def set_request_error(
        self, api: str | int, error: str | int | None, *, duration_ms: int | None = None
    ) -> None:
        """Every request of ``api`` gets ``error`` until cleared (``None``) or ``duration_ms``."""
        self.call(self._control.set_request_error, api, error, duration_ms)

    def clear_request_errors(self, api: str | int | None = None) -> None:
        self.call(self._control.clear_request_errors, api)

    def set_rtt(self, ms: int, api: str | int | None = None) -> None:
        """Delay the responses of ``api`` (every API when ``None``) by ``ms``; 0 removes it."""
        self.call(self._control.set_rtt, ms, api)

    def coordinator_unavailable(
        self, duration_ms: int | None = None, error: str | int = "NOT_COORDINATOR"
    ) -> None:
        """Group requests answer ``error`` and FindCoordinator COORDINATOR_NOT_AVAILABLE,
        for ``duration_ms`` (until ``coordinator_available`` when ``None``)."""
        self.call(self._control.coordinator_unavailable, duration_ms, error)

    def coordinator_available(self) -> None:
        self.call(self._control.coordinator_available)

    def drop_connections(self, client_id: str | None = None) -> int:
        """Close the client connections (of ``client_id`` only); how many were closed."""
        return self.call(self._control.drop_connections, client_id)

    def reset_faults(self) -> None:
        """Every request fault off, tracking off, the coordinator's timers running."""
        self.call(self._control.reset_faults)

    def pending_faults(self) -> dict[str, Any]:
        """What is set now: pushed and sticky errors, RTTs, fenced members, paused timers."""
        return self.call(self._control.pending_faults)

    def start_request_tracking(self) -> None:
        self.call(self._control.start_request_tracking)

    def stop_request_tracking(self) -> None:
        self.call(self._control.stop_request_tracking)

    def requests(self, api: str | int | None = None) -> list[TrackedRequest]:
        """The requests received since tracking started (of ``api`` only)."""
        return self.call(self._control.faults.requests, api)

    def clear_requests(self) -> None:
        self.call(self._control.clear_requests)

    # -- group faults (through the coordinator: records written as for the real event) -----------

    def expire_session(self, group_id: str, member_id: str) -> None:
        self.call(self._control.expire_session, group_id, member_id)

    def fence_member(self, group_id: str, member_id: str) -> None:
        """KIP-848: remove the member (epoch bumped) and answer its next heartbeat
        FENCED_MEMBER_EPOCH."""
        self.call(self._control.fence_member, group_id, member_id)

    def force_rebalance(self, group_id: str) -> None:
        self.call(self._control.force_rebalance, group_id)

    def set_target_assignment(
        self, group_id: str, assignment: Mapping[str, Mapping[str, Sequence[int]]]
    ) -> None:
        """KIP-848: ``{member_id: {topic: [partitions]}}`` becomes the next target."""
        self.call(self._control.set_target_assignment, group_id, assignment)

    def pause_timers(self) -> None:
        self.call(self._control.pause_timers)

    def resume_timers(self) -> None:
        self.call(self._control.resume_timers)

    # -- several brokers (``Broker(brokers=N)``; ``regroup.server.cluster``) ----------------------

    def brokers(self) -> dict[str, Any]:
        """Every broker (id, host, port, rack, running) and the ``__consumer_offsets``
        partitions each leads."""
        return self.call(self._control.brokers)

    def stop_broker(self, broker: int) -> dict[str, Any]:
        """Stop one broker as Kafka's controlled shutdown does: its connections close, its
        leaderships move to live brokers, and the groups it coordinated are loaded by their
        new coordinators. What moved."""
        return self._await(self.call(self._control.broker_stop, broker), 10.0)

    def start_broker(self, broker: int) -> dict[str, Any]:
        """Start a stopped broker again, on the same port."""
        return self._await(self.call(self._control.broker_start, broker), 10.0)

    def broker_outage(self, broker: int, seconds: float) -> dict[str, Any]:
        """Stop ``broker`` now and start it again ``seconds`` later; returns once it is
        stopped, with what moved."""
        return self._await(self.call(self._control.broker_outage, broker, seconds), 10.0)

    def coordinator_of(self, group_id: str) -> int:
        """The broker coordinating ``group_id`` now (-1 while none can)."""
        return self.call(self._control.coordinator_of, group_id)

    def move_coordinator(self, group_id: str, broker: int) -> dict[str, Any]:
        """Move the group's ``__consumer_offsets`` partition (every group on it) to ``broker``."""
        return self.call(self._control.move_coordinator, group_id, broker)

    def move_leader(self, topic: str, partition: int, broker: int) -> dict[str, Any]:
        """Make ``broker`` the leader of ``topic``-``partition`` (its leader epoch grows)."""
        return self.call(self._control.move_leader, topic, partition, broker)

    # -- inspection and waits ---------------------------------------------------------------------

    def describe_group(self, group_id: str) -> dict[str, Any] | None:
        return self.call(self._control.describe_group, group_id)

    def committed(self, group_id: str) -> dict[str, dict[int, int]]:
        return self.call(self._control.committed, group_id)

    def members(self, group_id: str) -> dict[str, dict[str, Any]]:
        """The group's members by member id (empty when there is no such group)."""
        described = self.describe_group(group_id)
        return {} if described is None else dict(described["members"])

    def wait_for_stable(
        self, group_id: str, *, members: int | None = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        """Block until the group is Stable (KIP-848: every member at the group epoch)."""
        coro = self._control.wait_for_stable(group_id, members, int(timeout * 1000))
        return self._await(coro, timeout)

    def wait_for_assignment(
        self,
        group_id: str,
        partitions: Mapping[str, Sequence[int]] | None = None,
        *,
        member_id: str | None = None,
        client_id: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        """Block until a member (by id or client id) owns ``partitions`` (any, if ``None``)."""
        coro = self._control.wait_for_assignment(
            group_id, member_id, client_id, partitions, int(timeout * 1000)
        )
        return self._await(coro, timeout)
