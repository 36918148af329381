"""The online-migration tests' context: classic and KIP-848 members in one coordinator.

``consumer_group_harness.Harness`` (``regroup.testing``'s context with the
consumer-group suite's defaults, and no initial rebalance delay) plus classic
JoinGroup / SyncGroup / Heartbeat / LeaveGroup shorthand that encodes the
embedded ConsumerProtocol as a Java client does.
"""

from __future__ import annotations

import random
from typing import Any

from regroup.assignors.classic.api import Assignment as ClassicAssignment
from regroup.assignors.classic.api import Subscription
from regroup.classic import protocol as consumer_protocol
from regroup.classic.group.group import ClassicGroup
from regroup.model import TopicPartition
from regroup.model.errors import ErrorCode
from regroup.model.requests.classic import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from regroup.testing import ConfigLike, ManualClock, TopicsLike
from tests.coordinator.consumer_group_harness import Harness

__all__ = ["MigrationHarness", "tps"]


def tps(*partitions: int, topic: str = "foo") -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in partitions]


class MigrationHarness(Harness):
    """``Harness`` plus the classic protocol's requests."""

    def __init__(
        self,
        config: ConfigLike = None,
        *,
        topics: TopicsLike = None,
        rng: random.Random | None = None,
        clock: ManualClock | None = None,
        **fields: Any,
    ) -> None:
        if config is None:
            fields.setdefault("group_initial_rebalance_delay_ms", 0)
        super().__init__(config, topics=topics, rng=rng, clock=clock, **fields)

    # -- classic requests ----------------------------------------------------------------

    @staticmethod
    def protocol(
        owned: list[TopicPartition] | None = None,
        name: str = "cooperative-sticky",
        version: int = 3,
        topics: tuple[str, ...] = ("foo",),
    ) -> JoinGroupRequestProtocol:
        subscription = Subscription(list(topics), owned_partitions=list(owned or []))
        return JoinGroupRequestProtocol(
            name, consumer_protocol.encode_subscription(subscription, version)
        )

    def join_request(
        self,
        member_id: str = "",
        owned: list[TopicPartition] | None = None,
        *,
        name: str = "cooperative-sticky",
        version: int = 3,
        session_timeout_ms: int = 45000,
        protocol_type: str = "consumer",
        instance_id: str | None = None,
        require_known_member_id: bool = False,
    ) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id="g",
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=300000,
            member_id=member_id,
            protocol_type=protocol_type,
            protocols=(self.protocol(owned, name, version),),
            group_instance_id=instance_id,
            client_id="client",
            require_known_member_id=require_known_member_id,
        )

    def cjoin(
        self, member_id: str = "", owned: list[TopicPartition] | None = None, **kw: Any
    ) -> JoinGroupResponse:
        return self.submit(self.join_request(member_id, owned, **kw), JoinGroupResponse).response

    def csync(
        self, member_id: str, generation: int, name: str | None = "cooperative-sticky"
    ) -> SyncGroupResponse:
        return self.sync_group(
            "g", member_id, generation, protocol_type="consumer", protocol_name=name
        ).response

    def cheartbeat(self, member_id: str, generation: int) -> ErrorCode:
        return self.heartbeat("g", member_id, generation).error_code

    def cleave(self, *member_ids: str) -> LeaveGroupResponse:
        return self.leave_group("g", *member_ids)

    @staticmethod
    def decoded(response: SyncGroupResponse) -> list[TopicPartition]:
        return MigrationHarness.decoded_bytes(response.assignment)

    @staticmethod
    def decoded_bytes(assignment: bytes) -> list[TopicPartition]:
        if not assignment:
            return []
        return sorted(consumer_protocol.decode_assignment(assignment).partitions)

    # -- a stable classic group -------------------------------------------------------------

    def stable_classic_group(
        self, assignment: list[list[int]], *, name: str = "cooperative-sticky", version: int = 3
    ) -> list[str]:
        """A Stable classic group, one member per entry of ``assignment`` (generation 1)."""
        calls = [
            self.submit(self.join_request(name=name, version=version), JoinGroupResponse)
            for _ in assignment
        ]
        for _ in range(5):
            if all(c.answered for c in calls):
                break
            self.advance(1)
        joins = [c.response for c in calls]
        assert all(j.error_code == 0 for j in joins)
        ids = [j.member_id for j in joins]
        leader = joins[0].leader
        generation = joins[0].generation_id
        encoded = tuple(
            SyncGroupRequestAssignment(
                m, consumer_protocol.encode_assignment(ClassicAssignment(tps(*ps)), version)
            )
            for m, ps in zip(ids, assignment, strict=True)
        )
        syncs = [
            self.submit(
                SyncGroupRequest("g", generation, m, assignments=encoded if m == leader else ())
            )
            for m in sorted(ids, key=lambda m: m != leader)
        ]
        assert all(s.answered for s in syncs)
        group = self.coordinator.groups["g"]
        assert isinstance(group, ClassicGroup) and group.state_name() == "Stable"
        return ids
