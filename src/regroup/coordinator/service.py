"""The group coordinator: one state, one routing table, and the driving calls (sans-IO).

Kafka: ``GroupCoordinatorShard`` (it routes each request and record to the code
of its group's type) over ``GroupMetadataManager`` and ``OffsetMetadataManager``,
without the runtime around them. One instance owns a ``GroupCoordinatorState``
(``state``): the groups of both types by id, committed offsets, keyed timers,
the configuration and the topic metadata image.

Driving it (the simulator and the server do exactly this)::

    result = coordinator.handle(token, request, now_ms)    # any group RPC
    ... persist result.records, then send result.replies, publish result.events
    coordinator.replay(record); coordinator.on_loaded(now_ms)   # rebuilding after a restart
    deadline = coordinator.next_deadline()                 # re-arm one timer
    result = coordinator.on_timer(now_ms)                  # when it fires

Rules:

1. A request goes where ``ROUTES`` says: by its type and, for the requests both
   protocols share (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), by the type of
   the group its id names when it arrives. A classic request on a consumer group
   goes to the consumer group's classic members (online migration); every other
   request has one handler, which looks its groups up itself.
2. A record goes where ``REPLAYS`` says, by its key type (Kafka
   ``GroupCoordinatorShard.replay``).
3. Handlers take the state and return a ``CoordinatorResult``; they never import
   this module. Timer operations do the same, so ``on_timer`` merges their
   results in deadline order.
4. A handler or timer operation that raises changes nothing: its group is
   rebuilt from its records, every request waiting on it is answered
   UNKNOWN_SERVER_ERROR, and the result's ``failures`` says so (``guard``).

Requests are the version-neutral dataclasses of ``regroup.model.requests``.
``replay(record)`` applies one record (used to rebuild state on start and to
check that records describe the live state exactly).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

from regroup.coordinator import delete_groups, expiry, guard, list_groups, offsets
from regroup.coordinator.classic import describe, join, membership, rebalance, sync
from regroup.coordinator.classic import records as classic_records
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
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import (
    CommittedOffsets,
    ConsumerProtocolState,
    GroupCoordinatorState,
)
from regroup.coordinator.timer import Timer
from regroup.model.errors import ErrorCode
from regroup.model.metadata import MetadataImage
from regroup.model.requests.admin import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
)
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
from regroup.model.requests.offsets import OffsetCommitRequest, OffsetFetchRequest
from regroup.records import CoordinatorRecord
from regroup.records.classic import GroupMetadataKey
from regroup.records.offsets import OffsetCommitKey

__all__ = ["REPLAYS", "ROUTES", "GroupCoordinator", "Route", "UnsupportedRequestError"]


class UnsupportedRequestError(TypeError):
    """A request type no handler serves (a driver bug, not a client mistake)."""


class _NamesOneGroup(Protocol):
    @property
    def group_id(self) -> str: ...


R = TypeVar("R")
G = TypeVar("G", bound=_NamesOneGroup)

#: A handler: the state, the request's token, the request, the time.
Handler = Callable[[GroupCoordinatorState, Hashable, R, int], CoordinatorResult]


@dataclass(frozen=True, slots=True)
class Route:
    """Where the requests of one type go (build one with ``to`` or ``by_group_type``)."""

    request_type: type
    serve: Callable[[GroupCoordinatorState, Hashable, object, int], CoordinatorResult]


def to(request_type: type[R], handler: Handler[R]) -> Route:
    """Every request of ``request_type`` to ``handler``."""

    def serve(
        state: GroupCoordinatorState, token: Hashable, request: object, now: int
    ) -> CoordinatorResult:
        assert isinstance(request, request_type)
        return handler(state, token, request, now)

    return Route(request_type, serve)


def by_group_type(request_type: type[G], handlers: Mapping[GroupType | None, Handler[G]]) -> Route:
    """Requests of ``request_type`` to the handler of the type of the group their id names
    (``None``: no group has that id)."""
    if set(handlers) != {None, *GroupType}:
        raise ValueError(f"{request_type.__name__}: a handler for every group type, and none")

    def serve(
        state: GroupCoordinatorState, token: Hashable, request: object, now: int
    ) -> CoordinatorResult:
        assert isinstance(request, request_type)
        return handlers[state.group_type(request.group_id)](state, token, request, now)

    return Route(request_type, serve)


def _table(*routes: Route) -> dict[type, Route]:
    table: dict[type, Route] = {}
    for route in routes:
        if route.request_type in table:
            raise ValueError(f"{route.request_type.__name__} is routed twice")
        table[route.request_type] = route
    return table


CLASSIC, CONSUMER = GroupType.CLASSIC, GroupType.CONSUMER

#: The routing table: request type -> handler, by the type of the group the id names
#: where the two protocols share a request (Rule 1).
ROUTES: Final[Mapping[type, Route]] = _table(
    # The classic protocol. A consumer group serves its classic members itself.
    by_group_type(
        JoinGroupRequest,
        {
            None: join.handle_join_group,
            CLASSIC: join.handle_join_group,
            CONSUMER: classic_members.handle_join_group,
        },
    ),
    by_group_type(
        SyncGroupRequest,
        {
            None: sync.handle_sync_group,
            CLASSIC: sync.handle_sync_group,
            CONSUMER: classic_members.handle_sync,
        },
    ),
    by_group_type(
        HeartbeatRequest,
        {
            None: membership.handle_heartbeat,
            CLASSIC: membership.handle_heartbeat,
            CONSUMER: classic_members.handle_heartbeat,
        },
    ),
    by_group_type(
        LeaveGroupRequest,
        {
            None: membership.handle_leave_group,
            CLASSIC: membership.handle_leave_group,
            CONSUMER: classic_members.handle_leave,
        },
    ),
    to(DescribeGroupsRequest, describe.handle_describe_groups),
    # KIP-848. A joining member takes a classic group over (consumer.upgrade).
    to(ConsumerGroupHeartbeatRequest, heartbeat.handle),
    to(ConsumerGroupPrepareAssignmentRequest, client_assignors.handle_prepare),
    to(ConsumerGroupInstallAssignmentRequest, client_assignors.handle_install),
    to(ConsumerGroupDescribeRequest, consumer_describe.handle_describe),
    to(IncrementalAlterGroupConfigsRequest, group_configs.handle_alter_configs),
    to(DescribeGroupConfigsRequest, group_configs.handle_describe_configs),
    # Every group type.
    to(ListGroupsRequest, list_groups.handle_list_groups),
    to(DeleteGroupsRequest, delete_groups.handle_delete_groups),
    to(OffsetCommitRequest, offsets.handle_offset_commit),
    to(OffsetFetchRequest, offsets.handle_offset_fetch),
)

#: Record key type -> what applies the record (Rule 2).
REPLAYS: Final[Mapping[type, Callable[[GroupCoordinatorState, CoordinatorRecord], None]]] = {
    GroupMetadataKey: classic_records.replay,
    OffsetCommitKey: offsets.replay,
    **dict.fromkeys(consumer_records.RECORD_KEYS, consumer_records.replay),
}


class GroupCoordinator:
    """All groups of one coordinator, driven by requests, timers and metadata updates."""

    def __init__(
        self,
        config: GroupCoordinatorConfig | None = None,
        *,
        metadata: MetadataImage | None = None,
        rng: random.Random | None = None,
        topic_authorization: bool = False,
    ) -> None:
        #: Everything the coordinator holds; every handler receives it.
        self.state = GroupCoordinatorState(
            config or GroupCoordinatorConfig(),
            metadata or MetadataImage(),
            # Injected randomness (member ids); seeded for determinism by default.
            rng or random.Random(0),
        )
        # A driver with an authorizer: regexes resolve under the heartbeat's request
        # context (``ConsumerGroupHeartbeatRequest.may_describe_topic``).
        self.state.consumer.topic_authorization = topic_authorization
        #: What the records written so far say of each group (Rule 4).
        self.recorded = guard.RecordedGroups()

    # -- driving ---------------------------------------------------------------------

    def handle(self, token: Hashable, request: object, now_ms: int) -> CoordinatorResult:
        """Serve one request; the reply to ``token`` may come now or in a later result."""
        route = ROUTES.get(type(request))
        if route is None:
            raise UnsupportedRequestError(f"no handler for {type(request).__name__}")
        try:
            result = route.serve(self.state, token, request, now_ms)
        except Exception as exc:
            return guard.recover(
                self.state,
                self.recorded,
                self.replay,
                guard.group_of(request),
                type(request).__name__,
                exc,
                now_ms,
                token,
                request,
            )
        self.recorded.note(result.records)
        return result

    def restore(
        self,
        failed: CoordinatorResult,
        durable: Iterable[CoordinatorRecord],
        code: ErrorCode,
        now_ms: int,
    ) -> CoordinatorResult:
        """The driver could not write ``failed``'s records (a full disk): every group they
        name is rebuilt from ``durable`` (what the store holds), and every reply of
        ``failed`` and every request waiting on those groups carries ``code`` (``guard``,
        rule 5). Its result's records, if any, are what rebuilding the groups wrote."""
        result = guard.restore(
            self.state, self.recorded, self.replay, failed, durable, code, now_ms
        )
        self.recorded.note(result.records)
        return result

    def known_group_ids(self) -> set[str]:
        """Every group id with a group, committed offsets or records (a failover's scope)."""
        return {
            *self.state.groups,
            *self.state.offsets.by_group,
            *self.recorded.by_group,
            *self.state.consumer.pending_upgrades,
        }

    def reload(self, group_ids: Iterable[str], code: ErrorCode, now_ms: int) -> CoordinatorResult:
        """A coordinator failover of ``group_ids`` (``guard.reload``): unloaded, every
        waiting request answered ``code`` (NOT_COORDINATOR), and loaded from their records
        with their timers armed afresh (classic members keep their generation, KIP-848
        members their epochs)."""
        result = guard.reload(self.state, self.recorded, self.replay, group_ids, code, now_ms)
        self.recorded.note(result.records)
        return result

    def next_deadline(self) -> int | None:
        """The earliest timer deadline (ms), or ``None`` when no timer is armed."""
        return self.state.timer.next_deadline()

    def on_timer(self, now_ms: int) -> CoordinatorResult:
        """Fire every timer due at ``now_ms``."""
        return CoordinatorResult.merge(self.state.timer.expire(now_ms, self._run_timer))

    def fire_timer(self, key: str, now_ms: int) -> CoordinatorResult | None:
        """Run the timer ``key`` now, before its deadline, exactly as ``on_timer`` would run
        it (a test driver's "expire this session now"); ``None`` when it is not armed."""
        return self.state.timer.fire(key, now_ms, self._run_timer)

    def run_operation(
        self, group_id: str, operation: Callable[[int], CoordinatorResult], now_ms: int
    ) -> CoordinatorResult:
        """An operation on one group from outside the request path (the wire server's fault
        injection: fence a member, force a rebalance), kept as a timer's is: all or nothing
        (``guard``), its records noted for the next recovery."""
        return self._run_guarded(group_id, operation, now_ms, "operation")

    def _run_timer(
        self, owner: str | None, operation: Callable[[int], CoordinatorResult], now_ms: int
    ) -> CoordinatorResult:
        return self._run_guarded(owner, operation, now_ms, "timer")

    def _run_guarded(
        self,
        owner: str | None,
        operation: Callable[[int], CoordinatorResult],
        now_ms: int,
        what: str,
    ) -> CoordinatorResult:
        try:
            result = operation(now_ms)
        except Exception as exc:
            return guard.recover(self.state, self.recorded, self.replay, owner, what, exc, now_ms)
        self.recorded.note(result.records)
        return result

    def expire_offsets(self, now_ms: int) -> CoordinatorResult:
        """Expired offsets and empty groups go (``offsets.retention.minutes``; ``expiry``).

        Kafka runs it every ``offsets.retention.check.interval.ms``; so does the server.
        """
        result = expiry.expire_offsets(self.state, now_ms)
        self.recorded.note(result.records)
        return result

    def update_metadata(self, image: MetadataImage, now_ms: int) -> CoordinatorResult:
        """A new topic metadata image (topics created, deleted, partitions added)."""
        self.state.metadata = image
        result = consumer_rebalance.on_metadata_update(self.state, now_ms)
        self.recorded.note(result.records)
        return result

    def on_loaded(self, now_ms: int) -> CoordinatorResult:
        """After replaying a log: arm the timers of every rebuilt group (Kafka ``onLoaded``).

        Timers are not records, so a coordinator rebuilt from its records has
        none until this runs: every member gets a fresh session timeout, a
        KIP-848 member still revoking its rebalance timeout, an empty KIP-848
        group its expiration.
        """
        result = rebalance.on_loaded(self.state, now_ms)
        fencing.on_loaded(self.state, now_ms)
        self.recorded.note(result.records)
        return result

    def replay(self, record: CoordinatorRecord) -> None:
        """Apply one record to the state (loading, and checking records against state)."""
        replay = REPLAYS.get(type(record.key))
        if replay is None:
            raise ValueError(f"no handler replays record type {record.key.record_name}")
        replay(self.state, record)
        self.recorded.note((record,))

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
    def offsets(self) -> CommittedOffsets:
        return self.state.offsets

    @property
    def consumer(self) -> ConsumerProtocolState:
        """What KIP-848 groups keep beside their groups (assignors, configs, in-flight work)."""
        return self.state.consumer

    def group(self, group_id: str) -> Group | None:
        return self.state.groups.get(group_id)

    def supported_request_types(self) -> frozenset[type]:
        return frozenset(ROUTES)
