"""Each wire version of the group APIs <-> the version-neutral dataclasses.

Nothing below the server knows wire versions (docs/architecture.md,
"Contracts between the parts"). Where a
version changes what the coordinator must *do*, the request carries a flag set
here from the decoded version:

* JoinGroup v4+ ``require_known_member_id`` (KIP-394: a new member first gets
  MEMBER_ID_REQUIRED); v9+ ``supports_skip_assignment`` (KIP-814);
* JoinGroup v0 has no rebalance timeout: Kafka uses the session timeout
  (``JoinGroupRequest`` v0 handling in ``GroupCoordinator``);
* ConsumerGroupHeartbeat v1 ``client_generates_member_id`` (KIP-1082);
* OffsetCommit v9+ ``supports_member_epoch`` (KIP-848: a consumer-group member
  may commit only with v9+, older versions get UNSUPPORTED_VERSION).

Where a response field is missing in an old version, Kafka's rule for that
version is applied: JoinGroup < v7 has a non-nullable protocol name (``""``
for null, ``JoinGroupResponse``); LeaveGroup < v3 reports the single member's
error at the top level (``LeaveGroupResponse``); OffsetFetch < v8 serves one
group and v8+ a list (KIP-709), so one wire request may become several
coordinator requests, answered in order.

A decode function returns the list of neutral requests; the matching encode
function takes them and their responses in the same order and returns the kio
object.

ConsumerGroupHeartbeat is served by ``heartbeat_codec`` (by hand, the hot path,
and regroup's private tag); its entry here is the kio-based reference that the
tests hold the hand-written codec to, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from regroup.model.errors import ErrorCode
from regroup.model.requests import admin, classic, consumer, offsets
from regroup.server.wire.api_keys import ApiKey
from regroup.server.wire.codec import DecodedRequest, response_class
from regroup.server.wire.kio_build import build, ms, to_uuid

__all__ = ["GROUP_APIS", "GroupApi"]

Decode = Callable[[DecodedRequest, str], list[object]]
Encode = Callable[[int, Sequence[Any], Sequence[Any]], Any]
GroupApi = tuple[Decode, Encode]


def _str(value: str | None) -> str:
    return "" if value is None else value


# -- JoinGroup (11) -------------------------------------------------------------------------


def _decode_join(req: DecodedRequest, host: str) -> list[object]:
    b, v = req.body, req.api_version
    session = ms(b.session_timeout)
    return [
        classic.JoinGroupRequest(
            group_id=b.group_id,
            session_timeout_ms=session,
            rebalance_timeout_ms=ms(b.rebalance_timeout) if v >= 1 else session,
            member_id=b.member_id,
            protocol_type=b.protocol_type,
            protocols=tuple(
                classic.JoinGroupRequestProtocol(p.name, bytes(p.metadata)) for p in b.protocols
            ),
            group_instance_id=getattr(b, "group_instance_id", None),
            reason=getattr(b, "reason", None),
            client_id=_str(req.client_id),
            client_host=host,
            require_known_member_id=v >= 4,
            supports_skip_assignment=v >= 9,
        )
    ]


def _encode_join(version: int, requests: Sequence[Any], responses: Sequence[Any]) -> Any:
    (r,) = responses
    name = r.protocol_name if version >= 7 else _str(r.protocol_name)
    return build(
        response_class(11, version),
        {
            "throttle_time": r.throttle_time_ms,
            "error_code": r.error_code,
            "generation_id": r.generation_id,
            "protocol_type": r.protocol_type,
            "protocol_name": name,
            "leader": r.leader,
            "skip_assignment": r.skip_assignment,
            "member_id": r.member_id,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "metadata": m.metadata,
                }
                for m in r.members
            ],
        },
    )


# -- SyncGroup (14) -------------------------------------------------------------------------


def _decode_sync(req: DecodedRequest, host: str) -> list[object]:
    b = req.body
    return [
        classic.SyncGroupRequest(
            group_id=b.group_id,
            generation_id=b.generation_id,
            member_id=b.member_id,
            group_instance_id=getattr(b, "group_instance_id", None),
            protocol_type=getattr(b, "protocol_type", None),
            protocol_name=getattr(b, "protocol_name", None),
            assignments=tuple(
                classic.SyncGroupRequestAssignment(a.member_id, bytes(a.assignment))
                for a in b.assignments
            ),
        )
    ]


def _encode_sync(version: int, requests: Sequence[Any], responses: Sequence[Any]) -> Any:
    (r,) = responses
    return build(
        response_class(14, version),
        {
            "throttle_time": r.throttle_time_ms,
            "error_code": r.error_code,
            "protocol_type": r.protocol_type,
            "protocol_name": r.protocol_name,
            "assignment": r.assignment,
        },
    )


# -- Heartbeat (12) -------------------------------------------------------------------------


def _decode_heartbeat(req: DecodedRequest, host: str) -> list[object]:
    b = req.body
    return [
        classic.HeartbeatRequest(
            b.group_id, b.generation_id, b.member_id, getattr(b, "group_instance_id", None)
        )
    ]


def _encode_heartbeat(version: int, requests: Sequence[Any], responses: Sequence[Any]) -> Any:
    (r,) = responses
    return build(
        response_class(12, version),
        {"throttle_time": r.throttle_time_ms, "error_code": r.error_code},
    )


# -- LeaveGroup (13) ------------------------------------------------------------------------


def _decode_leave(req: DecodedRequest, host: str) -> list[object]:
    b, v = req.body, req.api_version
    if v < 3:
        members: tuple[classic.MemberIdentity, ...] = (classic.MemberIdentity(b.member_id),)
    else:
        members = tuple(
            classic.MemberIdentity(m.member_id, m.group_instance_id, getattr(m, "reason", None))
            for m in b.members
        )
    return [classic.LeaveGroupRequest(b.group_id, members)]


def _encode_leave(version: int, requests: Sequence[Any], responses: Sequence[Any]) -> Any:
    (r,) = responses
    error = r.error_code
    if version < 3 and error == ErrorCode.NONE and r.members:
        error = r.members[0].error_code
    return build(
        response_class(13, version),
        {
            "throttle_time": r.throttle_time_ms,
            "error_code": error,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "error_code": m.error_code,
                }
                for m in r.members
            ],
        },
    )


# -- OffsetCommit (8) -----------------------------------------------------------------------


def _decode_commit(req: DecodedRequest, host: str) -> list[object]:
    b, v = req.body, req.api_version
    return [
        offsets.OffsetCommitRequest(
            group_id=b.group_id,
            generation_id_or_member_epoch=b.generation_id_or_member_epoch,
            member_id=b.member_id,
            topics=tuple(
                offsets.OffsetCommitRequestTopic(
                    t.name,
                    tuple(
                        offsets.OffsetCommitRequestPartition(
                            p.partition_index,
                            p.committed_offset,
                            getattr(p, "committed_leader_epoch", -1),
                            p.committed_metadata,
                        )
                        for p in t.partitions
                    ),
                )
                for t in b.topics
            ),
            group_instance_id=getattr(b, "group_instance_id", None),
            supports_member_epoch=v >= 9,
        )
    ]


def _encode_commit(version: int, requests: Sequence[Any], responses: Sequence[Any]) -> Any:
    (r,) = responses
    return build(
        response_class(8, version),
        {
            "throttle_time": r.throttle_time_ms,
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {"partition_index": p.partition_index, "error_code": p.error_code}
                        for p in t.partitions
                    ],
                }
                for t in r.topics
            ],
        },
    )


# -- OffsetFetch (9) ------------------------------------------------------------------------


def _fetch_topics(topics: Any) -> tuple[offsets.OffsetFetchRequestTopic, ...] | None:
    if topics is None:
        return None
    return tuple(
        offsets.OffsetFetchRequestTopic(t.name, tuple(t.partition_indexes)) for t in topics
    )


def _decode_offset_fetch(req: DecodedRequest, host: str) -> list[object]:
    b, v = req.body, req.api_version
    stable = bool(getattr(b, "require_stable", False))
    if v < 8:
        return [offsets.OffsetFetchRequest(b.group_id, _fetch_topics(b.topics), None, -1, stable)]
    return [
        offsets.OffsetFetchRequest(
            g.group_id,
            _fetch_topics(g.topics),
            getattr(g, "member_id", None),
            getattr(g, "member_epoch", -1),
            stable,
        )
        for g in b.groups
    ]


def _fetched_topics(r: offsets.OffsetFetchResponse) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "partitions": [
                {
                    "partition_index": p.partition_index,
                    "committed_offset": p.committed_offset,
                    "committed_leader_epoch": p.committed_leader_epoch,
                    "metadata": p.metadata,
                    "error_code": p.error_code,
                }
                for p in t.partitions
            ],
        }
        for t in r.topics
    ]


def _encode_offset_fetch(version: int, requests: Sequence[Any], responses: Sequence[Any]) -> Any:
    cls = response_class(9, version)
    if version < 8:
        (r,) = responses
        return build(
            cls, {"throttle_time": 0, "topics": _fetched_topics(r), "error_code": r.error_code}
        )
    return build(
        cls,
        {
            "throttle_time": 0,
            "groups": [
                {"group_id": gid, "topics": _fetched_topics(r), "error_code": r.error_code}
                for gid, r in zip((q.group_id for q in requests), responses, strict=True)
            ],
        },
    )


# -- ConsumerGroupHeartbeat (68) ------------------------------------------------------------


def _decode_cg_heartbeat(req: DecodedRequest, host: str) -> list[object]:
    b = req.body
    tps = b.topic_partitions
    return [
        consumer.ConsumerGroupHeartbeatRequest(
            group_id=b.group_id,
            member_id=b.member_id,
            member_epoch=b.member_epoch,
            instance_id=b.instance_id,
            rack_id=b.rack_id,
            rebalance_timeout_ms=ms(b.rebalance_timeout),
            subscribed_topic_names=(
                None if b.subscribed_topic_names is None else tuple(b.subscribed_topic_names)
            ),
            subscribed_topic_regex=getattr(b, "subscribed_topic_regex", None),  # v1+
            server_assignor=b.server_assignor,
            topic_partitions=(
                None
                if tps is None
                else tuple(
                    consumer.TopicPartitions(to_uuid(tp.topic_id), tuple(tp.partitions))
                    for tp in tps
                )
            ),
            client_id=_str(req.client_id),
            client_host=host,
            client_generates_member_id=req.api_version >= 1,
        )
    ]


def _encode_cg_heartbeat(version: int, requests: Sequence[Any], responses: Sequence[Any]) -> Any:
    (r,) = responses
    assignment = None
    if r.assignment is not None:
        assignment = {
            "topic_partitions": [
                {"topic_id": tp.topic_id, "partitions": tp.partitions}
                for tp in r.assignment.topic_partitions
            ]
        }
    return build(
        response_class(68, version),
        {
            "throttle_time": r.throttle_time_ms,
            "error_code": r.error_code,
            "error_message": r.error_message,
            "member_id": r.member_id,
            "member_epoch": r.member_epoch,
            "heartbeat_interval": r.heartbeat_interval_ms,
            "assignment": assignment,
        },
    )


# -- ConsumerGroupDescribe (69) -------------------------------------------------------------


def _decode_cg_describe(req: DecodedRequest, host: str) -> list[object]:
    b = req.body
    return [
        consumer.ConsumerGroupDescribeRequest(
            tuple(b.group_ids), bool(b.include_authorized_operations)
        )
    ]


def _described_assignment(a: consumer.DescribedAssignment) -> dict[str, Any]:
    return {
        "topic_partitions": [
            {"topic_id": tp.topic_id, "topic_name": tp.topic_name, "partitions": tp.partitions}
            for tp in a.topic_partitions
        ]
    }


def _encode_cg_describe(version: int, requests: Sequence[Any], responses: Sequence[Any]) -> Any:
    (r,) = responses
    return build(
        response_class(69, version),
        {
            "throttle_time": r.throttle_time_ms,
            "groups": [
                {
                    "error_code": g.error_code,
                    "error_message": g.error_message,
                    "group_id": g.group_id,
                    "group_state": g.group_state,
                    "group_epoch": g.group_epoch,
                    "assignment_epoch": g.assignment_epoch,
                    "assignor_name": g.assignor_name,
                    "members": [
                        {
                            "member_id": m.member_id,
                            "instance_id": m.instance_id,
                            "rack_id": m.rack_id,
                            "member_epoch": m.member_epoch,
                            "client_id": m.client_id,
                            "client_host": m.client_host,
                            "subscribed_topic_names": m.subscribed_topic_names,
                            "subscribed_topic_regex": m.subscribed_topic_regex,
                            "assignment": _described_assignment(m.assignment),
                            "target_assignment": _described_assignment(m.target_assignment),
                            "member_type": m.member_type,
                        }
                        for m in g.members
                    ],
                    "authorized_operations": g.authorized_operations,
                }
                for g in r.groups
            ],
        },
    )


# -- ListGroups (16) and DescribeGroups (15) ------------------------------------------------


def _decode_list_groups(req: DecodedRequest, host: str) -> list[object]:
    b = req.body
    return [
        admin.ListGroupsRequest(
            tuple(getattr(b, "states_filter", ())), tuple(getattr(b, "types_filter", ()))
        )
    ]


def _encode_list_groups(version: int, requests: Sequence[Any], responses: Sequence[Any]) -> Any:
    (r,) = responses
    return build(
        response_class(16, version),
        {
            "throttle_time": r.throttle_time_ms,
            "error_code": r.error_code,
            "groups": [
                {
                    "group_id": g.group_id,
                    "protocol_type": g.protocol_type,
                    "group_state": g.group_state,
                    "group_type": g.group_type,
                }
                for g in r.groups
            ],
        },
    )


def _decode_describe_groups(req: DecodedRequest, host: str) -> list[object]:
    b = req.body
    return [
        admin.DescribeGroupsRequest(
            tuple(b.groups), bool(getattr(b, "include_authorized_operations", False))
        )
    ]


def _encode_describe_groups(version: int, requests: Sequence[Any], responses: Sequence[Any]) -> Any:
    (r,) = responses
    return build(
        response_class(15, version),
        {
            "throttle_time": r.throttle_time_ms,
            "groups": [
                {
                    "error_code": g.error_code,
                    "error_message": None,
                    "group_id": g.group_id,
                    "group_state": g.group_state,
                    "protocol_type": g.protocol_type,
                    "protocol_data": g.protocol_data,
                    "members": [
                        {
                            "member_id": m.member_id,
                            "group_instance_id": m.group_instance_id,
                            "client_id": m.client_id,
                            "client_host": m.client_host,
                            "member_metadata": m.member_metadata,
                            "member_assignment": m.member_assignment,
                        }
                        for m in g.members
                    ],
                    "authorized_operations": g.authorized_operations,
                }
                for g in r.groups
            ],
        },
    )


# -- DeleteGroups (42) ------------------------------------------------------------------------


def _decode_delete_groups(req: DecodedRequest, host: str) -> list[object]:
    return [admin.DeleteGroupsRequest(tuple(req.body.groups_names))]


def _encode_delete_groups(version: int, requests: Sequence[Any], responses: Sequence[Any]) -> Any:
    (r,) = responses
    return build(
        response_class(42, version),
        {
            "throttle_time": r.throttle_time_ms,
            "results": [{"group_id": g.group_id, "error_code": g.error_code} for g in r.results],
        },
    )


#: api key -> (decode, encode) for every API the coordinator serves.
GROUP_APIS: dict[int, GroupApi] = {
    ApiKey.OFFSET_COMMIT: (_decode_commit, _encode_commit),
    ApiKey.OFFSET_FETCH: (_decode_offset_fetch, _encode_offset_fetch),
    ApiKey.JOIN_GROUP: (_decode_join, _encode_join),
    ApiKey.HEARTBEAT: (_decode_heartbeat, _encode_heartbeat),
    ApiKey.LEAVE_GROUP: (_decode_leave, _encode_leave),
    ApiKey.SYNC_GROUP: (_decode_sync, _encode_sync),
    ApiKey.DESCRIBE_GROUPS: (_decode_describe_groups, _encode_describe_groups),
    ApiKey.LIST_GROUPS: (_decode_list_groups, _encode_list_groups),
    ApiKey.DELETE_GROUPS: (_decode_delete_groups, _encode_delete_groups),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (_decode_cg_heartbeat, _encode_cg_heartbeat),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (_decode_cg_describe, _encode_cg_describe),
}
