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
a request goes to the handler of its type and of the type of the group its id
names: a classic request on a consumer group to that group's classic members
(``consumer.classic_members``, online migration). ``replay(record)`` applies
one record (used to rebuild state on start and to check that records describe
the live state exactly).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from regroup.coordinator import list_groups
from regroup.coordinator.classic import describe, join, membership, rebalance, records, sync
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.coordinator.consumer import (
    classic_members,
    client_assignors,
    fencing,
    group_configs,
    heartbeat,
)
from regroup.coordinator.consumer import describe as consumer_describe
from regroup.coordinator.consumer import rebalance as consumer_rebalance
from regroup.coordinator.consumer import records as consumer_records
from regroup.coordinator.group import Group, GroupType
from regroup.coordinator.offsets import OffsetManager
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import ConsumerProtocolState, GroupCoordinatorState
from regroup.coordinator.timer import Timer
from regroup.model.metadata import MetadataImage
from regroup.model.requests.admin import DescribeGroupsRequest, ListGroupsRequest
from regroup.model.requests.classic import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from regroup.model.requests.consumer import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentRequest,
    DescribeGroupConfigsRequest,
    IncrementalAlterGroupConfigsRequest,
)
from regroup.records import CoordinatorRecord
from regroup.records.classic import GroupMetadataKey

__all__ = ["GroupCoordinator", "UnsupportedRequestError"]

Handler = Callable[[Hashable, Any, int], CoordinatorResult]


class UnsupportedRequestError(TypeError):
    """A request type no handler serves (a driver bug, not a client mistake)."""


class GroupCoordinator:
    """All groups of one coordinator, driven by requests, timers and metadata updates."""

    def __init__(
        self,
        config: GroupCoordinatorConfig | None = None,
        *,
        metadata: MetadataImage | None = None,
        rng: random.Random | None = None,
    ) -> None:
        #: Everything the coordinator holds; every handler receives it.
        self.state = GroupCoordinatorState(
            config or GroupCoordinatorConfig(),
            metadata or MetadataImage(),
            # Injected randomness (member ids); seeded for determinism by default.
            rng or random.Random(0),
        )
        self.offsets = OffsetManager(self.state)
        state = self.state
        every = (None, GroupType.CLASSIC, GroupType.CONSUMER)
        #: (request type, type of the group its id names; ``None``: no group) -> handler.
        self._routes: dict[tuple[type, GroupType | None], Handler] = {}

        def classic(request_type: type, handler: Handler, to_consumer_group: Handler) -> None:
            self._route(request_type, handler, None, GroupType.CLASSIC)
            self._route(request_type, to_consumer_group, GroupType.CONSUMER)

        classic(
            JoinGroupRequest,
            lambda t, r, now: join.handle_join_group(state, t, r, now),
            lambda t, r, now: classic_members.handle_join_group(state, t, r, now),
        )
        classic(
            SyncGroupRequest,
            lambda t, r, now: sync.handle_sync_group(state, t, r, now),
            lambda t, r, now: classic_members.handle_sync(state, t, r, now),
        )
        classic(
            HeartbeatRequest,
            lambda t, r, now: membership.handle_heartbeat(state, t, r, now),
            lambda t, r, now: classic_members.handle_heartbeat(state, t, r, now),
        )
        classic(
            LeaveGroupRequest,
            lambda t, r, now: membership.handle_leave_group(state, t, r, now),
            lambda t, r, now: classic_members.handle_leave(state, t, r, now),
        )
        self._route(
            ConsumerGroupHeartbeatRequest,
            lambda t, r, now: heartbeat.handle(state, t, r, now),
            *every,
        )
        self._route(
            ConsumerGroupPrepareAssignmentRequest,
            lambda t, r, now: client_assignors.handle_prepare(state, t, r, now),
            *every,
        )
        self._route(
            ConsumerGroupInstallAssignmentRequest,
            lambda t, r, now: client_assignors.handle_install(state, t, r, now),
            *every,
        )
        self._route(
            ConsumerGroupDescribeRequest,
            lambda t, r, now: consumer_describe.handle_describe(state, t, r, now),
            *every,
        )
        self._route(
            IncrementalAlterGroupConfigsRequest,
            lambda t, r, now: group_configs.handle_alter_configs(state, t, r, now),
            *every,
        )
        self._route(
            DescribeGroupConfigsRequest,
            lambda t, r, now: group_configs.handle_describe_configs(state, t, r, now),
            *every,
        )
        self._route(
            DescribeGroupsRequest,
            lambda t, r, now: describe.handle_describe_groups(state, t, r, now),
            *every,
        )
        self._route(
            ListGroupsRequest,
            lambda t, r, now: list_groups.handle_list_groups(state, t, r, now),
            *every,
        )
        for request_type, handler in self.offsets.handlers().items():
            self._route(request_type, handler, *every)

    def _route(self, request_type: type, handler: Handler, *group_types: GroupType | None) -> None:
        for group_type in group_types:
            key = (request_type, group_type)
            if key in self._routes:
                raise RuntimeError(f"request type served twice: {key}")
            self._routes[key] = handler

    # -- the state, for drivers and tests ----------------------------------------------

    @property
    def config(self) -> GroupCoordinatorConfig:
        return self.state.config

    @config.setter
    def config(self, config: GroupCoordinatorConfig) -> None:
        self.state.config = config

    @property
    def metadata(self) -> MetadataImage:
        return self.state.metadata

    @property
    def rng(self) -> random.Random:
        return self.state.rng

    @property
    def timer(self) -> Timer[CoordinatorResult]:
        return self.state.timer

    @property
    def groups(self) -> dict[str, Group]:
        return self.state.groups

    @property
    def consumer(self) -> ConsumerProtocolState:
        """What KIP-848 groups keep beside their groups (assignors, configs, in-flight work)."""
        return self.state.consumer

    # -- driving ---------------------------------------------------------------------

    def handle(self, token: Hashable, request: object, now_ms: int) -> CoordinatorResult:
        """Serve one request; the reply to ``token`` may come now or in a later result."""
        group_id = getattr(request, "group_id", None)
        group_type = self.state.group_type(group_id) if isinstance(group_id, str) else None
        handler = self._routes.get((type(request), group_type))
        if handler is None:
            raise UnsupportedRequestError(f"no handler for {type(request).__name__}")
        return handler(token, request, now_ms)

    def next_deadline(self) -> int | None:
        """The earliest timer deadline (ms), or ``None`` when no timer is armed."""
        return self.state.timer.next_deadline()

    def on_timer(self, now_ms: int) -> CoordinatorResult:
        """Fire every timer due at ``now_ms``."""
        return CoordinatorResult.merge(self.state.timer.expire(now_ms))

    def update_metadata(self, image: MetadataImage, now_ms: int) -> CoordinatorResult:
        """A new topic metadata image (topics created, deleted, partitions added)."""
        self.state.metadata = image
        return consumer_rebalance.on_metadata_update(self.state, now_ms)

    def on_loaded(self, now_ms: int) -> CoordinatorResult:
        """After replaying a log: arm the timers of every rebuilt group (Kafka ``onLoaded``).

        Timers are not records, so a coordinator rebuilt from its records has
        none until this runs: every member gets a fresh session timeout, a
        KIP-848 member still revoking its rebalance timeout, an empty KIP-848
        group its expiration.
        """
        result = rebalance.on_loaded(self.state, now_ms)
        fencing.on_loaded(self.state, now_ms)
        return result

    def replay(self, record: CoordinatorRecord) -> None:
        """Apply one record to the state (loading, and checking records against state)."""
        if isinstance(record.key, GroupMetadataKey):
            records.replay(self.state, record)
            return
        if isinstance(record.key, consumer_records.RECORD_KEYS):
            consumer_records.replay(self.state, record)
            return
        if self.offsets.replay(record):
            return
        raise ValueError(f"no handler replays record type {record.key.record_name}")

    # -- shared lookups ---------------------------------------------------------------

    def group(self, group_id: str) -> Group | None:
        return self.state.groups.get(group_id)

    def supported_request_types(self) -> Mapping[type, Handler]:
        return {request_type: handler for (request_type, _), handler in self._routes.items()}
