"""A coordinator harness for the online-migration tests: classic and KIP-848 members.

Built on ``consumer_group_harness.Harness`` (one coordinator, a clock, every
record), with classic JoinGroup / SyncGroup / Heartbeat / LeaveGroup helpers that
encode the embedded ConsumerProtocol as a Java client does.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from consumer_group_harness import Harness

from regroup.assignors.classic.api import Assignment as ClassicAssignment
from regroup.assignors.classic.api import Subscription
from regroup.classic import protocol as consumer_protocol
from regroup.classic.group import ClassicGroup
from regroup.model import TopicPartition
from regroup.model.errors import ErrorCode
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

__all__ = ["MigrationHarness", "tps"]


def tps(*partitions: int, topic: str = "foo") -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in partitions]


class MigrationHarness(Harness):
    """``Harness`` plus the classic protocol's requests, each with its own token."""

    def __init__(self, topics: dict[str, int] | None = None, **config: Any) -> None:
        config.setdefault("group_initial_rebalance_delay_ms", 0)
        super().__init__(topics or {"foo": 3}, **config)
        self._tokens = 0
        self.replies: dict[Hashable, object] = {}

    def submit(self, request: object) -> str:
        """Send ``request``; its reply (now or later) lands in ``replies`` by token."""
        self._tokens += 1
        token = f"r{self._tokens}"
        result = self.coordinator.handle(token, request, self.now)
        self._absorb(result)
        return token

    def send(self, request: object) -> Any:
        """``Harness.send``, keeping the replies to parked requests that this one answers."""
        result = self.coordinator.handle("t", request, self.now)
        self._absorb(result)
        self.last_records = list(result.records)
        self.replies.pop("t", None)
        return result.response_for("t")

    def _absorb(self, result: Any) -> None:
        self.records.extend(result.records)
        self.events.extend(result.events)
        for reply in result.replies:
            self.replies[reply.token] = reply.response

    def advance(self, ms: int) -> None:
        self.now += ms
        self._absorb(self.coordinator.on_timer(self.now))

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
        reply = self.replies.pop(self.submit(self.join_request(member_id, owned, **kw)))
        assert isinstance(reply, JoinGroupResponse)
        return reply

    def csync(
        self, member_id: str, generation: int, name: str | None = "cooperative-sticky"
    ) -> SyncGroupResponse:
        reply = self.replies.pop(
            self.submit(
                SyncGroupRequest(
                    "g", generation, member_id, protocol_type="consumer", protocol_name=name
                )
            )
        )
        assert isinstance(reply, SyncGroupResponse)
        return reply

    def cheartbeat(self, member_id: str, generation: int) -> ErrorCode:
        reply = self.replies.pop(self.submit(HeartbeatRequest("g", generation, member_id)))
        assert isinstance(reply, HeartbeatResponse)
        return reply.error_code

    def cleave(self, *member_ids: str) -> LeaveGroupResponse:
        reply = self.replies.pop(
            self.submit(LeaveGroupRequest("g", tuple(MemberIdentity(m) for m in member_ids)))
        )
        assert isinstance(reply, LeaveGroupResponse)
        return reply

    @staticmethod
    def decoded(response: SyncGroupResponse) -> list[TopicPartition]:
        return MigrationHarness.decoded_bytes(response.assignment)

    @staticmethod
    def decoded_bytes(assignment: bytes) -> list[TopicPartition]:
        if not assignment:
            return []
        return sorted(consumer_protocol.decode_assignment(assignment).partitions)

    # -- a stable classic group -------------------------------------------------------------

    def classic_group(
        self, assignment: list[list[int]], *, name: str = "cooperative-sticky", version: int = 3
    ) -> list[str]:
        """A Stable classic group, one member per entry of ``assignment`` (generation 1)."""
        tokens = [self.submit(self.join_request(name=name, version=version)) for _ in assignment]
        for _ in range(5):
            if all(t in self.replies for t in tokens):
                break
            self.advance(1)
        joins = [self.replies.pop(t) for t in tokens]
        assert all(isinstance(j, JoinGroupResponse) and j.error_code == 0 for j in joins)
        ids = [j.member_id for j in joins]  # type: ignore[union-attr]
        leader = joins[0].leader  # type: ignore[union-attr]
        generation = joins[0].generation_id  # type: ignore[union-attr]
        encoded = tuple(
            SyncGroupRequestAssignment(
                m, consumer_protocol.encode_assignment(ClassicAssignment(tps(*ps)), version)
            )
            for m, ps in zip(ids, assignment, strict=True)
        )
        sync_tokens = [
            self.submit(
                SyncGroupRequest("g", generation, m, assignments=encoded if m == leader else ())
            )
            for m in sorted(ids, key=lambda m: m != leader)
        ]
        assert all(t in self.replies for t in sync_tokens)
        group = self.coordinator.groups["g"]
        assert isinstance(group, ClassicGroup) and group.state_name() == "Stable"
        return ids
