"""The response a request gets when it fails as a whole with one error code.

Kafka builds these with ``AbstractRequest.getErrorResponse(throttleTimeMs, e)``:
each request class knows where its error goes. The fault injection of
``regroup.server.control.faults`` answers an injected error the same way, without
serving the request: the top-level ``error_code`` for the APIs that have one
(JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat,
FindCoordinator v0-3, ListGroups, OffsetFetch v2-7, Fetch v7+, InitProducerId,
ApiVersions), and for the APIs whose errors are per entry, the error on every
entry the request named, as Kafka's ``getErrorResponse`` does:

* OffsetCommit: every partition of every topic (``OffsetCommitRequest.getErrorResponse``);
* FindCoordinator v4+: every coordinator key (KIP-699 batching);
* OffsetFetch v8+: every group;
* DescribeGroups and ConsumerGroupDescribe: every group.

Every other field gets Kafka's "nothing" value (0, empty, -1 for a generation,
a node id and a port). ``UnsupportedErrorResponse`` names the APIs without such
an answer (Metadata, Produce, ListOffsets, CreateTopics: their errors are per
topic or partition and not what a group client reacts to).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any

from regroup.server.wire import codec
from regroup.server.wire.api_keys import ApiKey
from regroup.server.wire.codec import DecodedRequest
from regroup.server.wire.kio_build import build
from regroup.server.wire.versions import API_NAMES

__all__ = ["UnsupportedErrorResponse", "check_supported", "encode_error_response"]

#: Fields whose "nothing" is -1 in Kafka's error responses.
_MINUS_ONE = frozenset({"generation_id", "node_id", "port", "controller_id"})

#: API keys whose error is per entry: their entries are echoed (module docstring).
_PER_ENTRY = frozenset(
    {
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_FETCH,
        ApiKey.FIND_COORDINATOR,
        ApiKey.DESCRIBE_GROUPS,
        ApiKey.CONSUMER_GROUP_DESCRIBE,
    }
)


class UnsupportedErrorResponse(ValueError):
    """An API for which no whole-request error response is defined here."""


def _entity_of(cls: type[Any], name: str) -> type[Any]:
    hint = typing.get_type_hints(cls)[name]
    args = [a for a in typing.get_args(hint) if a is not type(None) and a is not Ellipsis]
    inner = args[0] if args else hint
    if typing.get_origin(inner) is tuple:
        inner = typing.get_args(inner)[0]
    return typing.cast(type[Any], inner)


def _nothing(cls: type[Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """Every required field of ``cls`` at its "nothing" value, ``values`` on top."""
    out: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.name in values:
            out[field.name] = values[field.name]
            continue
        if field.default is not dataclasses.MISSING or field.default_factory is not (
            dataclasses.MISSING
        ):
            continue
        kind = field.metadata.get("kafka_type")
        if kind is None:
            entity = _entity_of(cls, field.name)
            hint = typing.get_type_hints(cls)[field.name]
            is_array = typing.get_origin(hint) is tuple or any(
                typing.get_origin(a) is tuple for a in typing.get_args(hint)
            )
            out[field.name] = () if is_array else _nothing(entity, {})
        elif kind in ("timedelta_i32", "timedelta_i64"):
            out[field.name] = 0
        elif kind == "string":
            out[field.name] = ""
        elif kind == "bytes":
            out[field.name] = b""
        elif kind == "bool":
            out[field.name] = False
        elif kind == "uuid":
            out[field.name] = None
        elif kind == "error_code":
            out[field.name] = 0
        else:
            out[field.name] = -1 if field.name in _MINUS_ONE else 0
    return out


def _has_top_level_error(cls: type[Any]) -> bool:
    return any(f.name == "error_code" for f in dataclasses.fields(cls))


def check_supported(api_key: int, api_version: int) -> None:
    """Raise ``UnsupportedErrorResponse`` unless an error response exists for this API."""
    if api_key == ApiKey.HEARTBEAT or api_key in _PER_ENTRY:
        return
    if not _has_top_level_error(codec.response_class(api_key, api_version)):
        name = API_NAMES.get(api_key, f"API key {api_key}")
        raise UnsupportedErrorResponse(
            f"{name} v{api_version} has no request-wide error code "
            "(its errors are per topic or partition): no error can be injected into it"
        )


def _per_entry(req: DecodedRequest, cls: type[Any], code: int) -> dict[str, Any]:
    body = req.body
    key, version = req.api_key, req.api_version
    if key == ApiKey.OFFSET_COMMIT:
        topic_cls = _entity_of(cls, "topics")
        partition_cls = _entity_of(topic_cls, "partitions")
        topics = [
            _nothing(
                topic_cls,
                {
                    "name": t.name,
                    "partitions": [
                        _nothing(
                            partition_cls,
                            {"partition_index": p.partition_index, "error_code": code},
                        )
                        for p in t.partitions
                    ],
                },
            )
            for t in body.topics
        ]
        return _nothing(cls, {"topics": topics})
    if key == ApiKey.FIND_COORDINATOR:
        if version < 4:
            return _nothing(cls, {"error_code": code})
        entry = _entity_of(cls, "coordinators")
        keys = body.coordinator_keys
        return _nothing(
            cls, {"coordinators": [_nothing(entry, {"key": k, "error_code": code}) for k in keys]}
        )
    if key == ApiKey.OFFSET_FETCH:
        if version < 8:
            return _nothing(cls, {"error_code": code})
        entry = _entity_of(cls, "groups")
        groups = [
            _nothing(entry, {"group_id": g.group_id, "error_code": code}) for g in body.groups
        ]
        return _nothing(cls, {"groups": groups})
    entry = _entity_of(cls, "groups")
    names = body.groups if key == ApiKey.DESCRIBE_GROUPS else body.group_ids
    return _nothing(
        cls, {"groups": [_nothing(entry, {"group_id": g, "error_code": code}) for g in names]}
    )


def encode_error_response(req: DecodedRequest, code: int) -> bytes:
    """The framed response of ``req`` failed as a whole with ``code`` (module docstring)."""
    if req.api_key == ApiKey.HEARTBEAT:
        return codec.encode_heartbeat_response(req.api_version, req.correlation_id, code)
    cls = codec.response_class(req.api_key, req.api_version)
    if req.api_key in _PER_ENTRY:
        values = _per_entry(req, cls, code)
    else:
        check_supported(req.api_key, req.api_version)
        values = _nothing(cls, {"error_code": code})
    return codec.encode_response(
        req.api_key, req.api_version, req.correlation_id, build(cls, values)
    )
