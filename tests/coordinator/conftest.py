"""Fixtures for the classic coordinator tests: ``regroup.testing``'s context, with this
suite's defaults.

``ClassicContext`` is a ``CoordinatorTestContext`` (the real ``GroupCoordinator``
on a manual clock, every record, event and reply kept) plus the shorthand these
tests share: a JoinGroup with the suite's defaults (group ``g``, ``range`` with
subscription ``b"r"``, 10 s session, 60 s rebalance timeout), requests named by
their tokens, and a Stable group of N members in one call.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable
from typing import Any

import pytest

from regroup.classic.group.group import ClassicGroup
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.model.errors import ErrorCode
from regroup.model.requests.classic import (
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    SyncGroupResponse,
)
from regroup.records.classic import GroupMetadataValue
from regroup.testing import CoordinatorTestContext

GROUP = "g"


class ClassicContext(CoordinatorTestContext):
    """A coordinator test context with the classic suite's shorthand."""

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
        """A JoinGroup with the suite's defaults; returns its token."""
        return self.join_group(
            group_id,
            member_id,
            protocols=protocols,
            protocol_type=protocol_type,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            group_instance_id=instance_id,
            reason=reason,
            client_id=client_id,
            require_known_member_id=require_known_member_id,
            supports_skip_assignment=supports_skip_assignment,
        ).token

    def join_new(self, **kwargs: Any) -> tuple[str, Hashable]:
        """A dynamic member's first join: MEMBER_ID_REQUIRED, then the join that parks."""
        first = self.join_reply(self.join(**kwargs))
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
        """A SyncGroup; returns its token."""
        return self.sync_group(
            group_id,
            member_id,
            generation,
            assignments=assignments,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
        ).token

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

    def settle(self, *tokens: Hashable) -> None:
        """Fire timers until every token is answered (the initial delay may extend itself)."""
        self.run_until_answered(*tokens)

    def group(self, group_id: str = GROUP) -> Any:
        return super().group(group_id)

    def replayed(self) -> ClassicContext:
        """A fresh coordinator rebuilt from this one's records (through their JSON form)."""
        fresh = self.replay_into_new()
        assert isinstance(fresh, ClassicContext)
        return fresh

    def group_metadata(self, index: int = -1) -> GroupMetadataValue:
        """The value of the ``index``-th record written, which must be a GroupMetadata value."""
        value = self.records[index].value
        assert isinstance(value, GroupMetadataValue), value
        return value

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
        assert isinstance(self.group(), ClassicGroup)
        return [leader] + [m for m in responses if m != leader]


@pytest.fixture
def classic_coordinator() -> Callable[..., ClassicContext]:
    """A factory: ``classic_coordinator(config=None, seed=0)``."""

    def make(config: GroupCoordinatorConfig | None = None, seed: int = 0) -> ClassicContext:
        return ClassicContext(config, rng=random.Random(seed))

    return make


@pytest.fixture
def classic_cc() -> ClassicContext:
    """A classic coordinator with Kafka's default broker configuration."""
    return ClassicContext()
