"""The classic group membership RPCs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Field names follow Kafka's message schemas (``JoinGroupRequest.json`` ...)
in snake_case. Times are milliseconds (``int``).
"""

from __future__ import annotations

from dataclasses import dataclass

from regroup.model.errors import ErrorCode

__all__ = [
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupRequest",
    "JoinGroupRequestProtocol",
    "JoinGroupResponse",
    "JoinGroupResponseMember",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "LeaveGroupResponseMember",
    "MemberIdentity",
    "SyncGroupRequest",
    "SyncGroupRequestAssignment",
    "SyncGroupResponse",
]


@dataclass(frozen=True, slots=True)
class JoinGroupRequestProtocol:
    """One protocol the member supports: the assignor name and its Subscription bytes.

    ``version`` is the assignor version that KIP-429 ("Looking into the Future:
    Assignor Version") proposes to add to JoinGroup as ``ProtocolVersion``; no
    Kafka release sends it, so ``None`` (not advertised) is what real clients
    map to. The coordinator prefers a leader with the highest version.
    """

    name: str
    metadata: bytes
    version: int | None = None


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    protocol_type: str
    protocols: tuple[JoinGroupRequestProtocol, ...]
    group_instance_id: str | None = None
    reason: str | None = None
    client_id: str = ""
    client_host: str = ""
    #: KIP-394 (JoinGroup v4+): a new dynamic member first gets MEMBER_ID_REQUIRED.
    require_known_member_id: bool = True
    #: JoinGroup v9+: a returning static leader may be told to skip the assignment.
    supports_skip_assignment: bool = True


@dataclass(frozen=True, slots=True)
class JoinGroupResponseMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    error_code: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    #: Only the leader gets the members (and their metadata for the chosen protocol).
    members: tuple[JoinGroupResponseMember, ...] = ()
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class SyncGroupRequestAssignment:
    member_id: str
    assignment: bytes


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    #: Only the leader sends assignments.
    assignments: tuple[SyncGroupRequestAssignment, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error_code: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error_code: ErrorCode
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class MemberIdentity:
    """One member leaving (LeaveGroup v3+ batches them; older versions carry one)."""

    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    group_id: str
    members: tuple[MemberIdentity, ...]


@dataclass(frozen=True, slots=True)
class LeaveGroupResponseMember:
    member_id: str
    group_instance_id: str | None
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    error_code: ErrorCode
    members: tuple[LeaveGroupResponseMember, ...] = ()
    throttle_time_ms: int = 0
