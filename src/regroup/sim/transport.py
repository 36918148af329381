"""Requests and responses between the consumers and the coordinator, over the network.

Theory of operation
-------------------

A request a member sends gets a *token* (an int, in send order) and is kept
in flight with its consumer and the consumer's incarnation:

* ``send``: the network decides when it arrives (``Network.transit``); at
  arrival ``_deliver`` hands it to the real coordinator,
  ``coordinator.handle(token, request, now)``;
* the coordinator's result (``apply``): its events are emitted in order, and
  every reply travels back by token, now or later (a parked JoinGroup or
  SyncGroup is answered by a later result); ``_respond`` gives the response to
  the consumer if the incarnation that sent it is still running;
* a request or response the network drops is never answered: if the network
  can drop anything in this run (loss, or a ``cut`` action), every request
  also has a timer at ``request.timeout.ms`` (``_timeout``) that reports it
  failed, as a Kafka client's request timeout does;
* the coordinator's own timers fire at ``coordinator.next_deadline()``; a
  wake-up is superseded, not cancelled (a stale one finds another deadline
  armed and returns).

Coordinator failover (the ``coordinator_restart`` action): with
``keep_records`` the transport keeps the coordinator's records as Kafka's
log compaction leaves them (one per key, the latest, in the order of that
write; a tombstone removes its key), as ``__consumer_offsets`` holds them.

* ``coordinator_down``: the old coordinator is gone. Every request in
  flight to it is failed at once (Kafka: its connections close, the client
  fails the in-flight requests and marks the coordinator unknown), including
  parked JoinGroup/SyncGroup requests and responses still travelling back; its
  timers die with it; metadata updates wait for the new one.
* every consumer must rediscover the coordinator: a request a consumer sends
  while it does not know the current coordinator waits (Kafka sends no group
  request while ``coordinatorUnknown()``), and the transport plays Kafka's
  lookup: a FindCoordinator round trip over the network, answered
  COORDINATOR_NOT_AVAILABLE while no coordinator is loaded, retried after
  ``retry.backoff.ms`` doubling up to ``retry.backoff.max.ms`` (KIP-580,
  without its random jitter, so no random number is drawn); once found, the
  waiting requests are sent in order;
* ``coordinator_up(new)``: the new coordinator replays the records (each read
  back from its JSON text form, as the server's store does) and arms its
  timers (``on_loaded``, Kafka ``onLoaded``); what that returns is applied.

Duplication (``[network] duplicate``): a request the network copies is
handled twice by the coordinator, as when a client retries a request whose
first attempt arrived but whose answer was lost (a broken connection, a
timeout): the first copy is handled under a token nobody waits for
(``-token``), so its replies are dropped, and the second under the request's
own token, whose reply the consumer gets. The second copy is the retry as the
client would build it (``SimConsumer.retry_of``): a classic request unchanged,
a ConsumerGroupHeartbeat full, because Kafka's client resets the heartbeat's
sent fields when a request fails (``ConsumerHeartbeatRequestManager.onFailure``
calls ``heartbeatState.reset()``), and the coordinator answers a full request
with the whole assignment. Sending the partial request twice instead would let
the first copy take the new assignment and the second get none, a loss no
Kafka client can meet. A copied response is delivered
twice and the second copy dropped, as a Kafka client drops a response whose
correlation id it no longer waits for.

The transport is given the run's context, the network and the coordinator;
the consumers hold only its ``send`` (injected into each), and the director
only its ``update_metadata``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.service import GroupCoordinator
from regroup.events import Event
from regroup.model.metadata import MetadataImage
from regroup.records import CoordinatorRecord, RecordKey
from regroup.sim.consumer import SimConsumer
from regroup.sim.context import RunContext
from regroup.sim.network import Network

__all__ = ["COORDINATOR", "Transport"]

#: The coordinator's endpoint name on the network.
COORDINATOR: Final = "coordinator"


class Transport:
    """The requests in flight and the coordinator's timers (see the module docstring)."""

    __slots__ = (
        "_coordinator_wake",
        "_emit",
        "_epoch",
        "_finding",
        "_inflight",
        "_known",
        "_log",
        "_timeouts",
        "_token",
        "_waiting",
        "coordinator",
        "down",
        "network",
        "world",
    )

    def __init__(
        self,
        ctx: RunContext,
        network: Network,
        coordinator: GroupCoordinator,
        *,
        timeouts: bool,
        keep_records: bool = False,
    ) -> None:
        self.world = ctx.world
        self._emit: Callable[[Event], None] = ctx.emit
        self.network = network
        self.coordinator = coordinator
        #: token -> (consumer, its incarnation when it sent, the request)
        self._inflight: dict[int, tuple[SimConsumer, int, Any]] = {}
        self._token = 0
        self._coordinator_wake: int | None = None
        #: Whether requests need timeouts (the network may drop messages in this run).
        self._timeouts = timeouts
        #: The coordinator's records, compacted (``keep_records``), or ``None``.
        self._log: dict[RecordKey, CoordinatorRecord] | None = {} if keep_records else None
        #: Whether no coordinator is loaded (between ``coordinator_down`` and ``_up``).
        self.down = False
        #: Which coordinator is current (0: the first; one more at each failover).
        self._epoch = 0
        #: client id -> the coordinator it knows (absent: the first).
        self._known: dict[str, int] = {}
        #: client id -> the tokens waiting for it to find the coordinator, in send order.
        self._waiting: dict[str, list[int]] = {}
        #: client ids looking the coordinator up.
        self._finding: set[str] = set()

    @property
    def requests_sent(self) -> int:
        """How many requests the consumers sent (tokens are numbered from 1)."""
        return self._token

    def send(self, consumer: SimConsumer, request: Any) -> None:
        """The consumer sends ``request`` to the coordinator now."""
        world = self.world
        now = world.now_ms
        self._token += 1
        token = self._token
        self._inflight[token] = (consumer, consumer.incarnation, request)
        if self._timeouts:
            world.at(now + consumer.request_timeout_ms, self._timeout, token)
        if self._epoch and self._known.get(consumer.client_id, 0) != self._epoch:
            self._wait(consumer, token)
            return
        self._transmit(consumer, token, request, now)

    def _transmit(self, consumer: SimConsumer, token: int, request: Any, now: int) -> None:
        network = self.network
        arrival = network.transit(consumer.client_id, COORDINATOR, now)
        if arrival is None:
            if not self._timeouts:
                del self._inflight[token]
            return
        if network.copy(now):
            # The first copy is handled under a token nobody waits for (``-token``): its
            # answer is lost, as a client's first attempt is when it retries; the second is
            # the retry as the client builds it (a full ConsumerGroupHeartbeat).
            self.world.at(arrival, self._deliver_copy, consumer, -token, request, self._epoch)
            self.world.at(arrival, self._deliver, token, consumer.retry_of(request))
            return
        self.world.at(arrival, self._deliver, token)

    def _deliver_copy(self, consumer: SimConsumer, token: int, request: Any, epoch: int) -> None:
        """An earlier copy of a request reaches the coordinator it was sent to, if still loaded."""
        if self.down or epoch != self._epoch:
            return
        if not self.network.delivers(consumer.client_id, COORDINATOR):
            return
        self.apply(self.coordinator.handle(token, request, self.world.now_ms))

    def _deliver(self, token: int, retry: Any = None) -> None:
        """A request reaches the coordinator (``retry``: the form a retry of it takes)."""
        entry = self._inflight.get(token)
        if entry is None:
            return
        consumer, _, request = entry
        if not self.network.delivers(consumer.client_id, COORDINATOR):
            return
        sent = request if retry is None else retry
        self.apply(self.coordinator.handle(token, sent, self.world.now_ms))

    def apply(self, result: CoordinatorResult) -> None:
        """Emit a coordinator result's events, send its replies, re-arm its timer."""
        now = self.world.now_ms
        emit = self._emit
        log = self._log
        if log is not None:
            for record in result.records:
                log.pop(record.key, None)
                if not record.is_tombstone:
                    log[record.key] = record
        for event in result.events:
            emit(event)
        if result.replies:
            inflight = self._inflight
            transit = self.network.transit
            at = self.world.at
            for reply in result.replies:
                token = reply.token
                if not isinstance(token, int):
                    continue
                entry = inflight.get(token)
                if entry is None:
                    continue
                arrival = transit(COORDINATOR, entry[0].client_id, now)
                if arrival is None:
                    if not self._timeouts:
                        del inflight[token]
                    continue
                at(arrival, self._respond, token, reply.response)
                if self.network.copy(now):
                    at(arrival, self._respond, token, reply.response)
        self.arm_coordinator()

    def _respond(self, token: int, response: Any) -> None:
        entry = self._inflight.pop(token, None)
        if entry is None:
            return
        consumer, incarnation, request = entry
        if not self.network.delivers(COORDINATOR, consumer.client_id):
            if self._timeouts:
                self._inflight[token] = entry  # lost: the timeout will report it
            return
        if consumer.alive and consumer.incarnation == incarnation:
            consumer.on_response(request, response, self.world.now_ms)

    def _timeout(self, token: int) -> None:
        entry = self._inflight.pop(token, None)
        if entry is None:
            return
        consumer, incarnation, request = entry
        if consumer.alive and consumer.incarnation == incarnation:
            consumer.on_request_failed(request, self.world.now_ms)

    def update_metadata(self, metadata: MetadataImage, now: int) -> None:
        """The cluster's metadata changed: tell the coordinator, apply what it answers.

        While no coordinator is loaded, nothing: the next one is built with the new image.
        """
        if self.down:
            return
        self.apply(self.coordinator.update_metadata(metadata, now))

    # -- coordinator failover (see the module docstring) ---------------------------------------

    @property
    def records(self) -> list[CoordinatorRecord]:
        """The coordinator's records as compaction leaves them (empty without ``keep_records``)."""
        return list(self._log.values()) if self._log is not None else []

    def coordinator_down(self) -> None:
        """The coordinator dies: fail every request in flight to it, stop its timers."""
        now = self.world.now_ms
        self.down = True
        self._epoch += 1
        self._coordinator_wake = None
        waiting = {token for tokens in self._waiting.values() for token in tokens}
        inflight = self._inflight
        for token in sorted(inflight):
            if token in waiting:
                continue
            consumer, incarnation, request = inflight.pop(token)
            self.world.at(now, self._disconnected, consumer, incarnation, request)

    def _disconnected(self, consumer: SimConsumer, incarnation: int, request: Any) -> None:
        if consumer.alive and consumer.incarnation == incarnation:
            consumer.on_request_failed(request, self.world.now_ms)

    def coordinator_up(self, coordinator: GroupCoordinator) -> int:
        """A new coordinator loads the records and arms its timers; how many it replayed."""
        records = self.records
        for record in records:
            coordinator.replay(CoordinatorRecord.from_json(record.to_json()))
        self.coordinator = coordinator
        self.down = False
        self.apply(coordinator.on_loaded(self.world.now_ms))
        return len(records)

    def _wait(self, consumer: SimConsumer, token: int) -> None:
        client_id = consumer.client_id
        self._waiting.setdefault(client_id, []).append(token)
        if client_id not in self._finding:
            self._finding.add(client_id)
            self._find(consumer, 0)

    def _find(self, consumer: SimConsumer, attempt: int) -> None:
        """FindCoordinator, sent now (to any broker; here over the coordinator's link)."""
        arrival = self.network.transit(consumer.client_id, COORDINATOR, self.world.now_ms)
        if arrival is None:
            self._find_later(consumer, attempt)
            return
        self.world.at(arrival, self._find_arrived, consumer, attempt)

    def _find_arrived(self, consumer: SimConsumer, attempt: int) -> None:
        client_id = consumer.client_id
        if not self.network.delivers(client_id, COORDINATOR):
            self._find_later(consumer, attempt)
            return
        found = None if self.down else self._epoch  # COORDINATOR_NOT_AVAILABLE while loading
        back = self.network.transit(COORDINATOR, client_id, self.world.now_ms)
        if back is None:
            self._find_later(consumer, attempt)
            return
        self.world.at(back, self._find_answered, consumer, attempt, found)

    def _find_answered(self, consumer: SimConsumer, attempt: int, found: int | None) -> None:
        client_id = consumer.client_id
        if found is None or not self.network.delivers(COORDINATOR, client_id):
            self._find_later(consumer, attempt)
            return
        if found != self._epoch:  # failed over again meanwhile: look again
            self._find(consumer, 0)
            return
        self._known[client_id] = found
        self._finding.discard(client_id)
        now = self.world.now_ms
        inflight = self._inflight
        for token in self._waiting.pop(client_id, []):
            entry = inflight.get(token)
            if entry is None:
                continue  # timed out meanwhile
            sender, incarnation, request = entry
            if not sender.alive or sender.incarnation != incarnation:
                del inflight[token]  # that process is gone: it never sent it
                continue
            self._transmit(sender, token, request, now)

    def _find_later(self, consumer: SimConsumer, attempt: int) -> None:
        """Kafka's retry backoff: ``retry.backoff.ms`` doubling up to ``retry.backoff.max.ms``."""
        props = consumer.props
        base = int(props.get("retry.backoff.ms", 100))
        cap = int(props.get("retry.backoff.max.ms", 1000))
        delay = min(base * (2**attempt), max(base, cap))
        self.world.at(self.world.now_ms + delay, self._find, consumer, attempt + 1)

    # -- the coordinator's timers --------------------------------------------------------------

    def arm_coordinator(self) -> None:
        if self.down:
            return
        deadline = self.coordinator.next_deadline()
        if deadline is None:
            return
        if self._coordinator_wake is None or deadline < self._coordinator_wake:
            self._coordinator_wake = deadline
            self.world.at(deadline, self._fire_coordinator, deadline)

    def _fire_coordinator(self, deadline: int) -> None:
        if self._coordinator_wake != deadline or self.down:
            return
        self._coordinator_wake = None
        self.apply(self.coordinator.on_timer(self.world.now_ms))
