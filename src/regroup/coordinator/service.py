"""The group coordinator: every group of both types, offsets, timers (sans-IO).

Kafka: ``GroupCoordinatorShard`` + ``GroupMetadataManager`` +
``OffsetMetadataManager``, without the runtime around them. One instance owns:

* the groups, classic and consumer, by group id (one id, one group: a group
  id is either type, as in Kafka);
* the committed offsets;
* the timers (session, rebalance, join, sync, initial-delay ...), keyed;
* the topic metadata image the KIP-848 groups derive subscriptions from.

Driving it (the simulator and the server do exactly this)::

    result = coordinator.handle(token, request, now_ms)    # any group RPC
    ... persist result.records, then send result.replies, publish result.events
    coordinator.replay(record); coordinator.on_loaded(now_ms)   # rebuilding after a restart
    deadline = coordinator.next_deadline()                 # re-arm one timer
    result = coordinator.on_timer(now_ms)                  # when it fires

Requests are the version-neutral dataclasses of ``regroup.model.requests``;
each manager registers the request types it serves, and a request of the
classic protocol whose group id names a consumer group goes to that group's
classic members (``consumer_classic_members``, online migration) instead. ``replay(record)`` applies
one record (used to rebuild state on start and to check that records describe
the live state exactly).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from regroup.consumer.group import ConsumerGroup
from regroup.coordinator import consumer_classic_members
from regroup.coordinator.classic_manager import ClassicGroupManager
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.coordinator.consumer_manager import ConsumerGroupManager
from regroup.coordinator.group import Group
from regroup.coordinator.offsets import OffsetManager
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.timer import Timer
from regroup.model.metadata import MetadataImage
from regroup.model.requests.classic import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from regroup.records import CoordinatorRecord

__all__ = ["GroupCoordinator", "UnsupportedRequestError"]

Handler = Callable[[Hashable, Any, int], CoordinatorResult]


class UnsupportedRequestError(TypeError):
    """A request type no manager serves (a driver bug, not a client mistake)."""


class GroupCoordinator:
    """All groups of one coordinator, driven by requests, timers and metadata updates."""

    def __init__(
        self,
        config: GroupCoordinatorConfig | None = None,
        *,
        metadata: MetadataImage | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config or GroupCoordinatorConfig()
        self.metadata = metadata or MetadataImage()
        #: Injected randomness (member ids); seeded for determinism by default.
        self.rng = rng or random.Random(0)
        self.timer: Timer[CoordinatorResult] = Timer()
        #: Every group by id, classic or consumer.
        self.groups: dict[str, Group] = {}
        self.classic = ClassicGroupManager(self)
        self.consumer = ConsumerGroupManager(self)
        self.offsets = OffsetManager(self)
        self._handlers: dict[type, Handler] = {}
        for manager_handlers in (
            self.classic.handlers(),
            self.consumer.handlers(),
            self.offsets.handlers(),
        ):
            overlap = self._handlers.keys() & manager_handlers.keys()
            if overlap:
                raise RuntimeError(f"request types served twice: {overlap}")
            self._handlers.update(manager_handlers)
        consumer = self.consumer
        #: The classic protocol's requests when their group id names a consumer group.
        self._to_consumer_group: dict[type, Handler] = {
            JoinGroupRequest: lambda t, r, now: consumer_classic_members.handle_join_group(
                consumer, t, r, now
            ),
            SyncGroupRequest: lambda t, r, now: consumer_classic_members.handle_sync(
                consumer, t, r, now
            ),
            HeartbeatRequest: lambda t, r, now: consumer_classic_members.handle_heartbeat(
                consumer, t, r, now
            ),
            LeaveGroupRequest: lambda t, r, now: consumer_classic_members.handle_leave(
                consumer, t, r, now
            ),
        }

    # -- driving ---------------------------------------------------------------------

    def handle(self, token: Hashable, request: object, now_ms: int) -> CoordinatorResult:
        """Serve one request; the reply to ``token`` may come now or in a later result."""
        handler = self._handlers.get(type(request))
        if handler is None:
            raise UnsupportedRequestError(f"no handler for {type(request).__name__}")
        to_consumer_group = self._to_consumer_group.get(type(request))
        if to_consumer_group is not None and isinstance(
            self.groups.get(getattr(request, "group_id", "")), ConsumerGroup
        ):
            handler = to_consumer_group
        return handler(token, request, now_ms)

    def next_deadline(self) -> int | None:
        """The earliest timer deadline (ms), or ``None`` when no timer is armed."""
        return self.timer.next_deadline()

    def on_timer(self, now_ms: int) -> CoordinatorResult:
        """Fire every timer due at ``now_ms``."""
        return CoordinatorResult.merge(self.timer.expire(now_ms))

    def update_metadata(self, image: MetadataImage, now_ms: int) -> CoordinatorResult:
        """A new topic metadata image (topics created, deleted, partitions added)."""
        previous, self.metadata = self.metadata, image
        return self.consumer.on_metadata_update(previous, image, now_ms)

    def on_loaded(self, now_ms: int) -> CoordinatorResult:
        """After replaying a log: arm the timers of every rebuilt group (Kafka ``onLoaded``).

        Timers are not records, so a coordinator rebuilt from its records has
        none until this runs: every member gets a fresh session timeout, a
        KIP-848 member still revoking its rebalance timeout, an empty KIP-848
        group its expiration.
        """
        result = self.classic.on_loaded(now_ms)
        self.consumer.on_loaded(now_ms)
        return result

    def replay(self, record: CoordinatorRecord) -> None:
        """Apply one record to the state (loading, and checking records against state)."""
        for manager in (self.classic, self.consumer, self.offsets):
            if manager.replay(record):
                return
        raise ValueError(f"no manager replays record type {record.key.record_name}")

    # -- shared lookups ---------------------------------------------------------------

    def group(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def supported_request_types(self) -> Mapping[type, Handler]:
        return dict(self._handlers)
