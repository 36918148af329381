"""``GroupDriver``: a real Kafka client's poll loop run for a test, and what its application saw.

``Broker.wait_for_assignment`` watches the coordinator: it returns once the
coordinator has given a member its partitions, which can be before the client
has the SyncGroup (or heartbeat) answer and before the application's
``on_assign`` ran; it blocks the test's thread, so a client that only works
while it is polled (kafka-python and aiokafka join inside ``poll``/``getmany``,
librdkafka calls the application's callbacks from ``poll``) does nothing
meanwhile and the wait times out. ``GroupDriver`` turns this around: it runs
the client's own loop in a background thread (aiokafka: its own event loop in
that thread) and records what the *application* sees: each rebalance callback
(assigned, revoked, lost: the partitions and when) and each record consumed.
The test waits on that record (``wait_for``) while the client keeps polling.

One driver is one consumer of one of the three Python clients, created in the
driver's thread (none of them may be used from two threads):

* ``"confluent-kafka"`` (librdkafka): ``Consumer`` with ``on_assign``,
  ``on_revoke`` and ``on_lost``; ``config`` by librdkafka's names
  (``{"group.protocol": "consumer"}`` for KIP-848). librdkafka calls
  ``on_assign`` with the partitions added (incremental protocols) or the whole
  assignment (eager), and a KIP-848 member may be told "assigned: nothing".
* ``"kafka-python"``: ``KafkaConsumer`` with a ``ConsumerRebalanceListener``;
  ``config`` by kafka-python's keyword names. Its first ``poll`` joins. Before
  that the driver asks for the topics' metadata (``subscribe_kafka_python``): a
  kafka-python 3.0 member that joins before its metadata arrives is assigned
  nothing first (``on_partitions_assigned([])``) and rejoins when the metadata
  comes, so its *first* assignment is empty; ``metadata_first=False`` keeps
  that behaviour. Either way, wait for the partitions (``app.assigned ==``),
  never for "``on_assign`` was called".
* ``"aiokafka"``: ``AIOKafkaConsumer`` in an event loop of the driver's thread,
  polled with ``getmany``; its listener has no "lost" (aiokafka reports a lost
  assignment as revoked).

What the test reads is an ``AppView``: a consistent copy taken under the
driver's lock, so a predicate never sees a half-recorded callback. ``assigned``
is what the callbacks leave the application owning (assigned adds, revoked and
lost remove), by topic. Everything the client or a hook raised is in
``errors``; a hook's exception is re-raised into the client as the
application's would be.

Work that must run on the consumer's own thread (a commit, a seek, a pause) is
``driver.call(fn)``: ``fn(consumer)`` runs between two polls and its result
(awaited, for aiokafka) comes back to the test.

Time is ``time.monotonic()`` seconds since the driver started (``at``).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

__all__ = [
    "CLIENTS",
    "AppView",
    "Callback",
    "ConsumedRecord",
    "DriverError",
    "DriverTimeout",
    "GroupDriver",
]

T = TypeVar("T")

#: The clients a driver runs, by the name of their PyPI package.
CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka")
Client = Literal["confluent-kafka", "kafka-python", "aiokafka"]
CallbackKind = Literal["assigned", "revoked", "lost"]

#: A hook the application gives: ``hook(consumer, partitions)`` with the client's own
#: consumer and partition objects; a coroutine function for aiokafka is awaited.
Hook = Callable[[Any, Any], Any]


class DriverError(RuntimeError):
    """The client's loop failed (its consumer could not be created, poll raised)."""


class DriverTimeout(AssertionError):
    """A wait ran out; the message says what was last seen."""


@dataclass(frozen=True, slots=True)
class Callback:
    """One rebalance callback as the application got it."""

    kind: CallbackKind
    #: (topic, partition), sorted.
    partitions: tuple[tuple[str, int], ...]
    #: When it ran: seconds since the driver started.
    at: float


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    """One record the application was handed."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    at: float


@dataclass(frozen=True, slots=True)
class AppView:
    """What the application has seen so far (a copy: it does not change under the test)."""

    #: What the callbacks leave it owning, by topic (topics owning nothing are left out).
    assigned: Mapping[str, frozenset[int]]
    callbacks: tuple[Callback, ...]
    records: tuple[ConsumedRecord, ...]
    #: What the client reported (librdkafka's error_cb, a failed poll) or a hook raised.
    errors: tuple[BaseException | str, ...]
    #: Polls completed (``poll``/``getmany`` calls that returned).
    polls: int
    #: The loop is running: the consumer exists and has not been closed.
    running: bool

    def calls(self, kind: CallbackKind | None = None) -> list[Callback]:
        """The callbacks (of one kind), in order."""
        return [c for c in self.callbacks if kind is None or c.kind == kind]

    def values(self, topic: str | None = None) -> list[bytes | None]:
        """The values consumed (of one topic), in the order they came."""
        return [r.value for r in self.records if topic is None or r.topic == topic]

    def owned(self, topic: str) -> set[int]:
        return set(self.assigned.get(topic, ()))

    def describe(self) -> str:
        """One line for a failed wait."""
        kinds = ", ".join(f"{c.kind} {list(c.partitions)}" for c in self.callbacks[-6:])
        return (
            f"assigned={ {t: sorted(p) for t, p in self.assigned.items()} }, "
            f"last callbacks: [{kinds}], {len(self.records)} records, {self.polls} polls, "
            f"errors: {[str(e) for e in self.errors[-3:]]}, running={self.running}"
        )


def _partitions(native: Iterable[Any]) -> tuple[tuple[str, int], ...]:
    """The three clients' partition objects all have ``topic`` and ``partition``."""
    return tuple(sorted((str(tp.topic), int(tp.partition)) for tp in native))


def _headers(native: Any) -> tuple[tuple[str, bytes | None], ...]:
    if not native:
        return ()
    return tuple((str(name), None if value is None else bytes(value)) for name, value in native)


@dataclass
class _State:
    """The driver's record, written by its thread under ``lock``."""

    start: float
    assigned: dict[str, set[int]] = field(default_factory=dict)
    callbacks: list[Callback] = field(default_factory=list)
    records: list[ConsumedRecord] = field(default_factory=list)
    errors: list[BaseException | str] = field(default_factory=list)
    polls: int = 0
    running: bool = False
    failed: BaseException | None = None
    finished: bool = False


class GroupDriver:
    """One real consumer of a group, polled in a background thread for the test.

    >>> with GroupDriver("kafka-python", broker.bootstrap, "my-group", ["orders"]) as app:
    ...     app.wait_for(lambda seen: seen.assigned == {"orders": {0, 1}})  # doctest: +SKIP
    """

    def __init__(
        self,
        client: Client,
        bootstrap: str,
        group_id: str,
        topics: Sequence[str],
        *,
        config: Mapping[str, Any] | None = None,
        client_id: str = "regroup-driver",
        on_assigned: Hook | None = None,
        on_revoked: Hook | None = None,
        on_lost: Hook | None = None,
        on_record: Callable[[Any, ConsumedRecord], Any] | None = None,
        poll_timeout_ms: int = 50,
        metadata_first: bool = True,
    ) -> None:
        """``config``: the client's own settings by its own names, over the driver's
        defaults (``auto.offset.reset``/``auto_offset_reset`` earliest, the client id and
        group). ``on_*``: the application's callbacks, run inside the client's own
        (so a commit in ``on_revoked`` happens where the client expects it); the driver
        records a callback once its hook returned. ``on_record(consumer, record)``: the
        application's processing of each record, on the poll thread."""
        if client not in CLIENTS:
            raise ValueError(f"unknown client {client!r} (one of: {', '.join(CLIENTS)})")
        if isinstance(topics, str):
            raise ValueError(f"topics is a list of names, not one name: {topics!r}")
        self.client: Client = client
        self.bootstrap = bootstrap
        self.group_id = group_id
        self.topics = list(topics)
        self.client_id = client_id
        self._config = dict(config or {})
        self._hooks: dict[CallbackKind, Hook | None] = {
            "assigned": on_assigned,
            "revoked": on_revoked,
            "lost": on_lost,
        }
        self._on_record = on_record
        self._poll_s = poll_timeout_ms / 1000.0
        self._metadata_first = metadata_first
        self._changed = threading.Condition()
        self._state = _State(start=time.monotonic())
        self._stop = threading.Event()
        self._calls: deque[tuple[Callable[[Any], Any], Future[Any]]] = deque()
        self._thread: threading.Thread | None = None

    # -- life cycle ----------------------------------------------------------------------

    def __enter__(self) -> GroupDriver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> GroupDriver:
        """Create the consumer and start polling, in the driver's thread."""
        if self._thread is not None:
            raise RuntimeError("the driver is already started")
        self._state = _State(start=time.monotonic())
        self._thread = threading.Thread(
            target=self._main, name=f"regroup-driver-{self.client}-{self.client_id}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Close the consumer (it leaves the group as its ``close`` does) and end the thread."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        thread.join(timeout)
        self._stop.clear()
        if thread.is_alive():
            raise DriverError(f"the {self.client} consumer did not close within {timeout} s")

    close = stop

    # -- what the test reads and waits for -------------------------------------------------

    def view(self) -> AppView:
        """What the application has seen until now."""
        with self._changed:
            return self._view()

    def _view(self) -> AppView:
        state = self._state
        return AppView(
            assigned={t: frozenset(p) for t, p in sorted(state.assigned.items()) if p},
            callbacks=tuple(state.callbacks),
            records=tuple(state.records),
            errors=tuple(state.errors),
            polls=state.polls,
            running=state.running,
        )

    def wait_for(self, condition: Callable[[AppView], object], timeout: float = 30.0) -> AppView:
        """Block the test (never the client) until ``condition(view)`` is true; that view.

        Re-checked at every change the driver records. ``DriverTimeout`` after
        ``timeout`` seconds with what was last seen; ``DriverError`` at once if the
        client's loop has failed.
        """
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                view = self._view()
                if condition(view):
                    return view
                if self._state.failed is not None:
                    raise DriverError(
                        f"the {self.client} loop failed: {self._state.failed!r}"
                    ) from self._state.failed
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DriverTimeout(
                        f"timed out after {timeout} s waiting on {self.client} "
                        f"({self.client_id}); last seen: {view.describe()}"
                    )
                self._changed.wait(min(left, 0.5))

    def wait_for_assignment(
        self, partitions: Mapping[str, Iterable[int]], timeout: float = 30.0
    ) -> AppView:
        """Until the application owns exactly ``partitions`` (``{}``: nothing)."""
        want = {t: frozenset(ps) for t, ps in partitions.items() if ps}
        return self.wait_for(lambda view: dict(view.assigned) == want, timeout)

    def wait_for_records(self, count: int, timeout: float = 30.0) -> AppView:
        """Until the application has been handed at least ``count`` records."""
        return self.wait_for(lambda view: len(view.records) >= count, timeout)

    def call(self, fn: Callable[[Any], T], timeout: float = 30.0) -> T:
        """``fn(consumer)`` on the consumer's thread, between two polls; its result (for
        aiokafka an awaitable result is awaited there) or its exception."""
        future: Future[T] = Future()
        with self._changed:
            if self._thread is None or self._state.finished:
                raise DriverError(f"the {self.client} consumer is not running")
            self._calls.append((fn, future))
        return future.result(timeout)

    # -- the thread ----------------------------------------------------------------------

    def _now(self) -> float:
        return time.monotonic() - self._state.start

    def _changed_by(self, change: Callable[[_State], None]) -> None:
        with self._changed:
            change(self._state)
            self._changed.notify_all()

    def _record_error(self, error: BaseException | str) -> None:
        self._changed_by(lambda s: s.errors.append(error))

    def _main(self) -> None:
        try:
            if self.client == "confluent-kafka":
                self._run_confluent()
            elif self.client == "kafka-python":
                self._run_kafka_python()
            else:
                asyncio.run(self._run_aiokafka())
        except BaseException as exc:
            self._changed_by(functools.partial(_failed, exc=exc))
        finally:

            def finished(state: _State) -> None:
                state.running = False
                state.finished = True

            self._changed_by(finished)
            self._fail_pending_calls()

    def _fail_pending_calls(self) -> None:
        # After ``finished`` was set under the lock: ``call`` appends no more.
        with self._changed:
            pending = list(self._calls)
            self._calls.clear()
        for _, future in pending:
            future.set_exception(DriverError("the driver stopped before running this call"))

    def _running(self) -> None:
        def running(state: _State) -> None:
            state.running = True

        self._changed_by(running)

    def _polled(self) -> None:
        def polled(state: _State) -> None:
            state.polls += 1

        self._changed_by(polled)

    def _callback(self, kind: CallbackKind, consumer: Any, native: Any) -> Any:
        """Run the application's hook, then record the callback (a hook's error too)."""
        hook = self._hooks[kind]
        try:
            result = None if hook is None else hook(consumer, native)
        except BaseException as exc:
            self._record_error(exc)
            raise
        if inspect.isawaitable(result):
            return self._after(result, kind, native)
        self._record_callback(kind, native)
        return None

    async def _after(self, pending: Any, kind: CallbackKind, native: Any) -> None:
        try:
            await pending
        except BaseException as exc:
            self._record_error(exc)
            raise
        self._record_callback(kind, native)

    def _record_callback(self, kind: CallbackKind, native: Any) -> None:
        partitions = _partitions(native)
        at = self._now()

        def record(state: _State) -> None:
            state.callbacks.append(Callback(kind, partitions, at))
            for topic, partition in partitions:
                if kind == "assigned":
                    state.assigned.setdefault(topic, set()).add(partition)
                else:
                    state.assigned.get(topic, set()).discard(partition)

        self._changed_by(record)

    def _consumed(self, consumer: Any, records: list[ConsumedRecord]) -> None:
        for record in records:
            if self._on_record is not None:
                self._on_record(consumer, record)

            def consumed(state: _State, record: ConsumedRecord = record) -> None:
                state.records.append(record)

            self._changed_by(consumed)

    def _run_calls(self, consumer: Any, *, awaiting: bool = False) -> list[tuple[Any, Future[Any]]]:
        """Run the pending ``call``s; with ``awaiting`` (aiokafka), those whose result is
        awaitable are returned to be awaited on the loop."""
        waiting: list[tuple[Any, Future[Any]]] = []
        if not self._calls:
            return waiting
        with self._changed:
            pending = list(self._calls)
            self._calls.clear()
        for fn, future in pending:
            try:
                result = fn(consumer)
            except BaseException as exc:
                future.set_exception(exc)
                continue
            if awaiting and inspect.isawaitable(result):
                waiting.append((result, future))
            else:
                future.set_result(result)
        return waiting

    # confluent-kafka ------------------------------------------------------------------

    def _run_confluent(self) -> None:
        from confluent_kafka import Consumer, KafkaError

        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group_id,
            "client.id": self.client_id,
            "auto.offset.reset": "earliest",
            "error_cb": self._record_error,
            **self._config,
        }
        consumer = Consumer(conf)
        try:
            consumer.subscribe(
                self.topics,
                on_assign=lambda c, ps: self._callback("assigned", c, ps),
                on_revoke=lambda c, ps: self._callback("revoked", c, ps),
                on_lost=lambda c, ps: self._callback("lost", c, ps),
            )
            self._running()
            while not self._stop.is_set():
                message = consumer.poll(self._poll_s)
                self._polled()
                self._run_calls(consumer)
                if message is None:
                    continue
                error = message.error()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        self._record_error(str(error))
                    continue
                record = ConsumedRecord(
                    topic=str(message.topic()),
                    partition=int(message.partition() or 0),
                    offset=int(message.offset() or 0),
                    key=message.key(),
                    value=message.value(),
                    headers=_headers(message.headers()),
                    at=self._now(),
                )
                self._consumed(consumer, [record])
        finally:
            consumer.close()

    # kafka-python ---------------------------------------------------------------------

    def _run_kafka_python(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        driver = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]  # untyped package
            def on_partitions_revoked(self, revoked: Any) -> None:
                driver._callback("revoked", consumer, revoked)

            def on_partitions_assigned(self, assigned: Any) -> None:
                driver._callback("assigned", consumer, assigned)

            def on_partitions_lost(self, lost: Any) -> None:
                driver._callback("lost", consumer, lost)

        options: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap,
            "group_id": self.group_id,
            "client_id": self.client_id,
            "auto_offset_reset": "earliest",
            **self._config,
        }
        consumer = KafkaConsumer(**options)
        try:
            if self._metadata_first:
                subscribe_kafka_python(consumer, self.topics, Listener())
            else:
                consumer.subscribe(self.topics, listener=Listener())
            self._running()
            while not self._stop.is_set():
                batches = consumer.poll(timeout_ms=int(self._poll_s * 1000))
                self._polled()
                self._run_calls(consumer)
                for records in batches.values():
                    self._consumed(consumer, [self._kafka_python_record(r) for r in records])
        finally:
            consumer.close()

    def _kafka_python_record(self, record: Any) -> ConsumedRecord:
        return ConsumedRecord(
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            key=record.key,
            value=record.value,
            headers=_headers(record.headers),
            at=self._now(),
        )

    # aiokafka --------------------------------------------------------------------------

    async def _run_aiokafka(self) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.abc import ConsumerRebalanceListener

        driver = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            async def on_partitions_revoked(self, revoked: Any) -> None:
                await _maybe_await(driver._callback("revoked", consumer, revoked))

            async def on_partitions_assigned(self, assigned: Any) -> None:
                await _maybe_await(driver._callback("assigned", consumer, assigned))

        options: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap,
            "group_id": self.group_id,
            "client_id": self.client_id,
            "auto_offset_reset": "earliest",
            **self._config,
        }
        consumer = AIOKafkaConsumer(**options)
        await consumer.start()
        try:
            consumer.subscribe(self.topics, listener=Listener())
            self._running()
            while not self._stop.is_set():
                batches = await consumer.getmany(timeout_ms=int(self._poll_s * 1000))
                self._polled()
                for pending, future in self._run_calls(consumer, awaiting=True):
                    try:
                        future.set_result(await pending)
                    except Exception as exc:
                        future.set_exception(exc)
                for records in batches.values():
                    self._consumed(consumer, [self._kafka_python_record(r) for r in records])
        finally:
            await consumer.stop()


def subscribe_kafka_python(consumer: Any, topics: Sequence[str], listener: Any = None) -> None:
    """Subscribe a kafka-python ``KafkaConsumer`` so that its first join knows the partitions.

    kafka-python 3.0's coordinator compares, on the member that led the last assignment,
    the partitions it assigned with its metadata snapshot, and rejoins when they differ.
    The snapshot is of the *subscribed* topics and is taken at each metadata update, so a
    consumer that joins before an update after ``subscribe`` has shown its topics assigns
    from an empty snapshot and rejoins when the update comes. That rejoin is not flagged as
    one (``rejoin_needed`` stays false): when its JoinGroup and SyncGroup finish between
    two polls, the new assignment makes the snapshots equal, ``join_group_async`` stops
    looping before it awaits the finished join, and the member stays ``REBALANCING`` with
    its heartbeats disabled. It keeps fetching, every ``commit()`` raises
    ``RebalanceInProgressError``, and its session expires.

    The same code drops any join that finishes between two polls (a ``poll`` whose timeout
    ended first leaves the join running; the next one sees it done and sends a new
    JoinGroup instead of taking its result): one more rebalance, or the wedge above when
    nothing flags a rejoin. A poll timeout longer than a join round trip avoids that.

    So: subscribe, then one metadata update (``topics()`` always asks a broker), and only
    then poll. The topics must exist by then: ``topics()`` asks for every topic, which
    creates none, so a topic that only auto-creation would make still gives kafka-python's
    empty first assignment.
    """
    consumer.subscribe(list(topics), listener=listener)
    consumer.topics()


def _failed(state: _State, exc: BaseException) -> None:
    state.failed = exc
    state.errors.append(exc)


async def _maybe_await(value: Any) -> None:
    if inspect.isawaitable(value):
        await value
