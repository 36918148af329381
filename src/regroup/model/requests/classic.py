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

    def __init__(
        self,
        name: str,
        metadata: bytes,
        version: int | None = None,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "metadata", metadata)
        object.__setattr__(self, "version", version)


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

    def __init__(
        self,
        group_id: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        member_id: str,
        protocol_type: str,
        protocols: tuple[JoinGroupRequestProtocol, ...],
        group_instance_id: str | None = None,
        reason: str | None = None,
        client_id: str = "",
        client_host: str = "",
        require_known_member_id: bool = True,
        supports_skip_assignment: bool = True,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "group_id", group_id)
        object.__setattr__(self, "session_timeout_ms", session_timeout_ms)
        object.__setattr__(self, "rebalance_timeout_ms", rebalance_timeout_ms)
        object.__setattr__(self, "member_id", member_id)
        object.__setattr__(self, "protocol_type", protocol_type)
        object.__setattr__(self, "protocols", protocols)
        object.__setattr__(self, "group_instance_id", group_instance_id)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "client_id", client_id)
        object.__setattr__(self, "client_host", client_host)
        object.__setattr__(self, "require_known_member_id", require_known_member_id)
        object.__setattr__(self, "supports_skip_assignment", supports_skip_assignment)


@dataclass(frozen=True, slots=True)
class JoinGroupResponseMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes

    def __init__(
        self,
        member_id: str,
        group_instance_id: str | None,
        metadata: bytes,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "member_id", member_id)
        object.__setattr__(self, "group_instance_id", group_instance_id)
        object.__setattr__(self, "metadata", metadata)


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

    def __init__(
        self,
        error_code: ErrorCode,
        generation_id: int = -1,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        leader: str = "",
        skip_assignment: bool = False,
        member_id: str = "",
        members: tuple[JoinGroupResponseMember, ...] = (),
        throttle_time_ms: int = 0,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "error_code", error_code)
        object.__setattr__(self, "generation_id", generation_id)
        object.__setattr__(self, "protocol_type", protocol_type)
        object.__setattr__(self, "protocol_name", protocol_name)
        object.__setattr__(self, "leader", leader)
        object.__setattr__(self, "skip_assignment", skip_assignment)
        object.__setattr__(self, "member_id", member_id)
        object.__setattr__(self, "members", members)
        object.__setattr__(self, "throttle_time_ms", throttle_time_ms)


@dataclass(frozen=True, slots=True)
class SyncGroupRequestAssignment:
    member_id: str
    assignment: bytes

    def __init__(
        self,
        member_id: str,
        assignment: bytes,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "member_id", member_id)
        object.__setattr__(self, "assignment", assignment)


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

    def __init__(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        assignments: tuple[SyncGroupRequestAssignment, ...] = (),
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "group_id", group_id)
        object.__setattr__(self, "generation_id", generation_id)
        object.__setattr__(self, "member_id", member_id)
        object.__setattr__(self, "group_instance_id", group_instance_id)
        object.__setattr__(self, "protocol_type", protocol_type)
        object.__setattr__(self, "protocol_name", protocol_name)
        object.__setattr__(self, "assignments", assignments)


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error_code: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""
    throttle_time_ms: int = 0

    def __init__(
        self,
        error_code: ErrorCode,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        assignment: bytes = b"",
        throttle_time_ms: int = 0,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "error_code", error_code)
        object.__setattr__(self, "protocol_type", protocol_type)
        object.__setattr__(self, "protocol_name", protocol_name)
        object.__setattr__(self, "assignment", assignment)
        object.__setattr__(self, "throttle_time_ms", throttle_time_ms)


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None

    def __init__(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None = None,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "group_id", group_id)
        object.__setattr__(self, "generation_id", generation_id)
        object.__setattr__(self, "member_id", member_id)
        object.__setattr__(self, "group_instance_id", group_instance_id)


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error_code: ErrorCode
    throttle_time_ms: int = 0

    def __init__(
        self,
        error_code: ErrorCode,
        throttle_time_ms: int = 0,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "error_code", error_code)
        object.__setattr__(self, "throttle_time_ms", throttle_time_ms)


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
