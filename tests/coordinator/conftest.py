"""Fixtures for the coordinator tests: an in-process classic coordinator on a fake clock.

``classic_coordinator()`` builds a small stand-in for ``GroupCoordinator``
with the classic and offset managers only (the same attributes the managers
use: config, metadata, rng, timer, groups), so these tests do not depend on
the KIP-848 manager. It logs every record, event and reply, answers by token,
and can rebuild itself from its records (``replayed()``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable
from typing import Any

import pytest

from regroup.coordinator.classic_manager import ClassicGroupManager
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.coordinator.offsets import OffsetManager
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.timer import Timer
from regroup.events import Event
from regroup.model.errors import ErrorCode
from regroup.model.metadata import MetadataImage
from regroup.model.requests.classic import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from regroup.records import CoordinatorRecord

GROUP = "g"


class ClassicTestCoordinator:
    """Classic + offset managers over a fake clock, with logs of everything they produce."""

    def __init__(self, config: GroupCoordinatorConfig | None = None, seed: int = 0) -> None:
        self.config = config or GroupCoordinatorConfig()
        self.metadata = MetadataImage()
        self.rng = random.Random(seed)
        self.timer: Timer[CoordinatorResult] = Timer()
        self.groups: dict[str, Any] = {}
        self.classic = ClassicGroupManager(self)
        self.offsets = OffsetManager(self)
        self._handlers = {**self.classic.handlers(), **self.offsets.handlers()}
        self.now = 0
        self.records: list[CoordinatorRecord] = []
        self.events: list[Event] = []
        self.replies: dict[Hashable, Any] = {}
        self._tokens = 0

    # -- driving -----------------------------------------------------------------------

    def absorb(self, result: CoordinatorResult) -> CoordinatorResult:
        self.records.extend(result.records)
        self.events.extend(result.events)
        for reply in result.replies:
            assert reply.token not in self.replies, f"token {reply.token!r} answered twice"
            self.replies[reply.token] = reply.response
        return result

    def token(self) -> str:
        self._tokens += 1
        return f"t{self._tokens}"

    def handle(self, request: object, token: Hashable | None = None) -> Hashable:
        """Send ``request`` now; returns its token (look the answer up with ``reply``)."""
        token = self.token() if token is None else token
        handler = self._handlers[type(request)]
        self.absorb(handler(token, request, self.now))
        return token

    def call(self, request: object) -> Any:
        """Send ``request`` and return its reply, which must come at once."""
        token = self.handle(request)
        assert token in self.replies, f"{type(request).__name__} was parked"
        return self.replies[token]

    def reply(self, token: Hashable) -> Any:
        return self.replies.get(token)

    def advance(self, ms: int) -> CoordinatorResult:
        """Move the clock by ``ms`` and fire every due timer."""
        self.now += ms
        return self.absorb(CoordinatorResult.merge(self.timer.expire(self.now)))

    def advance_to_next_timer(self) -> CoordinatorResult:
        deadline = self.timer.next_deadline()
        assert deadline is not None
        return self.advance(max(deadline - self.now, 0))

    def settle(self, *tokens: Hashable) -> None:
        """Fire timers until every token is answered (the initial delay may extend itself)."""
        for _ in range(100):
            if all(t in self.replies for t in tokens):
                return
            self.advance_to_next_timer()
        raise AssertionError(
            f"tokens never answered: {[t for t in tokens if t not in self.replies]}"
        )

    # -- request helpers ---------------------------------------------------------------

    def join(
        self,
        member_id: str = "",
        *,
        instance_id: str | None = None,
        protocols: tuple[tuple[str, bytes], ...] | tuple[JoinGroupRequestProtocol, ...] = (
            ("range", b"r"),
        ),
        session_timeout_ms: int = 10000,
        rebalance_timeout_ms: int = 60000,
        client_id: str = "client",
        protocol_type: str = "consumer",
        require_known_member_id: bool = True,
        supports_skip_assignment: bool = True,
        group_id: str = GROUP,
        reason: str | None = None,
    ) -> Hashable:
        protos = tuple(
            p if isinstance(p, JoinGroupRequestProtocol) else JoinGroupRequestProtocol(p[0], p[1])
            for p in protocols
        )
        return self.handle(
            JoinGroupRequest(
                group_id=group_id,
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                member_id=member_id,
                protocol_type=protocol_type,
                protocols=protos,
                group_instance_id=instance_id,
                reason=reason,
                client_id=client_id,
                require_known_member_id=require_known_member_id,
                supports_skip_assignment=supports_skip_assignment,
            )
        )

    def join_new(self, **kwargs: Any) -> tuple[str, Hashable]:
        """A dynamic member's first join: MEMBER_ID_REQUIRED, then the join that parks."""
        first = self.reply(self.join(**kwargs))
        assert isinstance(first, JoinGroupResponse)
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED, first
        return first.member_id, self.join(first.member_id, **kwargs)

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        group_id: str = GROUP,
    ) -> Hashable:
        return self.handle(
            SyncGroupRequest(
                group_id=group_id,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance_id,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                assignments=tuple(
                    SyncGroupRequestAssignment(m, a) for m, a in (assignments or {}).items()
                ),
            )
        )

    def heartbeat(
        self,
        member_id: str,
        generation: int,
        *,
        instance_id: str | None = None,
        group_id: str = GROUP,
    ) -> HeartbeatResponse:
        response = self.call(HeartbeatRequest(group_id, generation, member_id, instance_id))
        assert isinstance(response, HeartbeatResponse)
        return response

    def leave(self, *members: MemberIdentity, group_id: str = GROUP) -> LeaveGroupResponse:
        response = self.call(LeaveGroupRequest(group_id, tuple(members)))
        assert isinstance(response, LeaveGroupResponse)
        return response

    def join_reply(self, token: Hashable) -> JoinGroupResponse:
        response = self.reply(token)
        assert isinstance(response, JoinGroupResponse), (
            f"no JoinGroup reply for {token!r}: {response!r}"
        )
        return response

    def sync_reply(self, token: Hashable) -> SyncGroupResponse:
        response = self.reply(token)
        assert isinstance(response, SyncGroupResponse), (
            f"no SyncGroup reply for {token!r}: {response!r}"
        )
        return response

    # -- state -------------------------------------------------------------------------

    def group(self, group_id: str = GROUP) -> Any:
        return self.groups[group_id]

    def events_of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.kind == kind]

    def replayed(self) -> ClassicTestCoordinator:
        """A fresh coordinator rebuilt from this one's records (through their JSON form)."""
        fresh = ClassicTestCoordinator(self.config)
        for record in self.records:
            copy = CoordinatorRecord.from_json(record.to_json())
            assert fresh.classic.replay(copy) or fresh.offsets.replay(copy)
        return fresh

    def stable_group(self, n: int, **join_kwargs: Any) -> list[str]:
        """Form a Stable group of ``n`` dynamic members; returns their ids (the leader first)."""
        tokens = [self.join_new(**join_kwargs) for _ in range(n)]
        self.settle(*(t for _, t in tokens))  # the initial rebalance delay
        responses = {mid: self.join_reply(t) for mid, t in tokens}
        leader = next(r.leader for r in responses.values())
        generation = responses[leader].generation_id
        assignment = {mid: f"assign-{mid}".encode() for mid in responses}
        self.sync(leader, generation, assignment)
        for mid in responses:
            if mid != leader:
                self.sync(mid, generation)
        return [leader] + [m for m in responses if m != leader]


@pytest.fixture
def classic_coordinator() -> Callable[..., ClassicTestCoordinator]:
    """A factory: ``classic_coordinator(config=None, seed=0)``."""

    def make(config: GroupCoordinatorConfig | None = None, seed: int = 0) -> ClassicTestCoordinator:
        return ClassicTestCoordinator(config, seed)

    return make


@pytest.fixture
def classic_cc() -> ClassicTestCoordinator:
    """A classic coordinator with Kafka's default broker configuration."""
    return ClassicTestCoordinator()
