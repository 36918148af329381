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
        "_inflight",
        "_timeouts",
        "_token",
        "coordinator",
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
        arrival = self.network.transit(consumer.client_id, COORDINATOR, now)
        if arrival is None:
            if not self._timeouts:
                del self._inflight[token]
            return
        world.at(arrival, self._deliver, token)

    def _deliver(self, token: int) -> None:
        entry = self._inflight.get(token)
        if entry is None:
            return
        consumer, _, request = entry
        if not self.network.delivers(consumer.client_id, COORDINATOR):
            return
        self.apply(self.coordinator.handle(token, request, self.world.now_ms))

    def apply(self, result: CoordinatorResult) -> None:
        """Emit a coordinator result's events, send its replies, re-arm its timer."""
        now = self.world.now_ms
        emit = self._emit
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
        """The cluster's metadata changed: tell the coordinator, apply what it answers."""
        self.apply(self.coordinator.update_metadata(metadata, now))

    # -- the coordinator's timers --------------------------------------------------------------

    def arm_coordinator(self) -> None:
        deadline = self.coordinator.next_deadline()
        if deadline is None:
            return
        if self._coordinator_wake is None or deadline < self._coordinator_wake:
            self._coordinator_wake = deadline
            self.world.at(deadline, self._fire_coordinator, deadline)

    def _fire_coordinator(self, deadline: int) -> None:
        if self._coordinator_wake != deadline:
            return
        self._coordinator_wake = None
        self.apply(self.coordinator.on_timer(self.world.now_ms))
