"""ListGroups, DescribeGroups and DeleteGroups: the admin view of groups of both types.

Kafka's message schemas (``ListGroupsRequest.json`` v5 with ``StatesFilter``
(KIP-518) and ``TypesFilter`` (KIP-848); ``DescribeGroupsRequest.json``;
``DeleteGroupsRequest.json``) in snake_case. Filters are matched
case-insensitively, as Kafka does; an empty filter matches everything.
"""

from __future__ import annotations

from dataclasses import dataclass

from regroup.model.errors import ErrorCode

__all__ = [
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "DeletedGroup",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribedGroup",
    "DescribedGroupMember",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListedGroup",
]


@dataclass(frozen=True, slots=True)
class ListGroupsRequest:
    #: Kafka state names (``Stable``, ``Empty``, ``Assigning`` ...); empty: all.
    states_filter: tuple[str, ...] = ()
    #: ``classic`` / ``consumer``; empty: all.
    types_filter: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str


@dataclass(frozen=True, slots=True)
class ListGroupsResponse:
    error_code: ErrorCode
    groups: tuple[ListedGroup, ...] = ()
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class DescribeGroupsRequest:
    groups: tuple[str, ...]
    include_authorized_operations: bool = False


@dataclass(frozen=True, slots=True)
class DescribedGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes = b""
    member_assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    error_code: ErrorCode
    group_id: str
    group_state: str
    protocol_type: str = ""
    #: The selected protocol (assignor) name, in Stable only.
    protocol_data: str = ""
    members: tuple[DescribedGroupMember, ...] = ()
    authorized_operations: int = -2147483648


@dataclass(frozen=True, slots=True)
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class DeleteGroupsRequest:
    groups_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DeletedGroup:
    group_id: str
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class DeleteGroupsResponse:
    results: tuple[DeletedGroup, ...]
    throttle_time_ms: int = 0
