"""The driving API both members offer: what a driver calls, whichever protocol it runs.

A member is sans-IO (docs/architecture.md, "The sans-IO contract"): it never reads a
clock or touches a socket. A driver (the simulator's consumer, ``regroup.sim.consumer``;
the test harness's in-process group, ``regroup.testing.group``; the wire server's own
member) owns time and the network and drives the member through these calls only:

1. ``on_application_poll(now_ms)`` when the application calls ``KafkaConsumer.poll``;
2. ``poll(now_ms)``: the requests due now, to send to the coordinator; it raises what
   the application would see from ``poll`` (a listener's exception, a
   ``MemberFatalError``);
3. ``on_response(request, response, now_ms)`` for each answer, or
   ``on_request_failed(request, now_ms)`` when none will come;
4. ``next_deadline()``: when ``poll`` next has work (``None``: only a response can
   wake it);
5. ``take_events()``: the events the member produced since the last call;
6. ``is_idle(now_ms)``: ``poll(now_ms)`` would do nothing (no request, no error, no
   event, no change but the member's clock) and no event waits, so a driver with
   nothing else to give the member may skip that ``poll`` (the simulator's application
   loop does, on every poll that finds the member steady).

``subscribe``, ``unsubscribe``, ``commit``, ``enforce_rebalance``, ``close`` and
``update_metadata`` are the application's and the cluster's calls. ``ClassicMember``
(Kafka's ``ConsumerCoordinator``) and ``ConsumerMember`` (Kafka's
``ConsumerMembershipManager``) both satisfy ``Member``; their own extras (a classic
member's generation, a KIP-848 member's epoch) are reached by narrowing to the class.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from regroup.events.schema import Event
from regroup.model import TopicPartition
from regroup.model.metadata import MetadataImage
from regroup.model.requests.classic import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from regroup.model.requests.consumer import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentRequest,
)
from regroup.model.requests.offsets import OffsetCommitRequest

__all__ = ["Member", "MemberRequest"]

#: Every request a member sends: the classic member's group RPCs, the KIP-848 member's
#: heartbeat and client-side assignor RPCs, and both members' OffsetCommit.
MemberRequest = (
    JoinGroupRequest
    | SyncGroupRequest
    | HeartbeatRequest
    | LeaveGroupRequest
    | ConsumerGroupHeartbeatRequest
    | ConsumerGroupPrepareAssignmentRequest
    | ConsumerGroupInstallAssignmentRequest
    | OffsetCommitRequest
)


@runtime_checkable
class Member(Protocol):
    """A client-side group member as its driver sees it (see the module docstring)."""

    #: The id the coordinator knows the member by (``""`` before a classic member joins).
    member_id: str

    @property
    def state(self) -> enum.Enum:
        """The member's state (Kafka's client ``MemberState`` of its protocol)."""
        ...

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions the member owns now."""
        ...

    @property
    def subscription(self) -> Collection[str] | None:
        """The topics subscribed to by name (``None`` or empty: none)."""
        ...

    def subscribe(self, topics: Iterable[str]) -> None: ...

    def unsubscribe(self, now_ms: int) -> None: ...

    def update_metadata(self, image: MetadataImage) -> None: ...

    def on_application_poll(self, now_ms: int) -> None: ...

    def poll(self, now_ms: int) -> Sequence[MemberRequest]: ...

    def next_deadline(self) -> int | None: ...

    def is_idle(self, now_ms: int) -> bool:
        """``poll(now_ms)`` would do nothing and no event waits (see the module docstring)."""
        ...

    def on_response(self, request: object, response: object, now_ms: int) -> None: ...

    def on_request_failed(self, request: object, now_ms: int) -> None: ...

    def take_events(self) -> list[Event]: ...

    def commit(self, offsets: Mapping[TopicPartition, int], now_ms: int) -> object:
        """Commit ``offsets`` (the classic member returns its request; the KIP-848 member
        queues one for its next ``poll``)."""
        ...

    def enforce_rebalance(self, reason: str | None = None) -> object: ...

    def close(self, now_ms: int) -> object:
        """Leave the group (the classic member returns its last requests; the KIP-848
        member sends them from ``poll``)."""
        ...
