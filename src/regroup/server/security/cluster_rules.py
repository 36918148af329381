"""What the non-group APIs need, on kio's requests and responses (Kafka's ``KafkaApis``).

* Produce: WRITE on each TOPIC; Fetch: READ; ListOffsets: DESCRIBE (else
  TOPIC_AUTHORIZATION_FAILED on that topic's partitions);
* Metadata: DESCRIBE on each TOPIC (left out when all topics were asked for, else
  TOPIC_AUTHORIZATION_FAILED); auto-creating a missing topic also needs CREATE on the
  CLUSTER or the TOPIC (else UNKNOWN_TOPIC_OR_PARTITION);
* CreateTopics: CREATE on the CLUSTER or the TOPIC (else TOPIC_AUTHORIZATION_FAILED);
* FindCoordinator: DESCRIBE on the GROUP (else GROUP_AUTHORIZATION_FAILED for that key);
* InitProducerId without a transactional id: IDEMPOTENT_WRITE on the CLUSTER or WRITE
  on some TOPIC (else CLUSTER_AUTHORIZATION_FAILED).

The unauthorized parts are taken out of the request before the server serves
it, so nothing is created, appended or read for them, and their error entries
are added to the answer afterwards (after the authorized ones, as Kafka's
``KafkaApis`` merges its "unauthorized" map into the response). A Fetch left
with no topic answers at once (``max_wait`` 0), as Kafka answers a fetch
whose every partition failed.
"""

from __future__ import annotations

import dataclasses
import datetime
import typing
from collections.abc import Callable, Coroutine, Mapping
from types import MappingProxyType
from typing import Any

from regroup.model.errors import ErrorCode
from regroup.model.uuid import Uuid
from regroup.server.apis.cluster import Cluster
from regroup.server.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from regroup.server.security.group_rules import Check
from regroup.server.wire.api_keys import ApiKey
from regroup.server.wire.codec import DecodedRequest
from regroup.server.wire.kio_build import build, kio_error, to_uuid

__all__ = ["GUARDED_KEYS", "guard"]

TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
Inner = Callable[[DecodedRequest], Any]

PRODUCE, FETCH, LIST_OFFSETS, METADATA, FIND_COORDINATOR, CREATE_TOPICS, INIT_PRODUCER_ID = (
    ApiKey.PRODUCE,
    ApiKey.FETCH,
    ApiKey.LIST_OFFSETS,
    ApiKey.METADATA,
    ApiKey.FIND_COORDINATOR,
    ApiKey.CREATE_TOPICS,
    ApiKey.INIT_PRODUCER_ID,
)
GUARDED_KEYS = frozenset(
    {PRODUCE, FETCH, LIST_OFFSETS, METADATA, FIND_COORDINATOR, CREATE_TOPICS, INIT_PRODUCER_ID}
)


def _entity_class(cls: type[Any], field: str) -> type[Any]:
    """The element class of the array field ``field`` of kio class ``cls``."""
    hint = typing.get_type_hints(cls)[field]
    return typing.get_args(hint)[0]  # type: ignore[no-any-return]


def _extend(response: Any, field: str, extra: list[dict[str, Any]]) -> Any:
    if not extra or response is None:
        return response
    entity = _entity_class(type(response), field)
    added = tuple(build(entity, values) for values in extra)
    return dataclasses.replace(response, **{field: tuple(getattr(response, field)) + added})


def _then(result: Any, finish: Callable[[Any], Any]) -> Any:
    if isinstance(result, Coroutine):
        return _finish_later(result, finish)
    return finish(result)


async def _finish_later(pending: Coroutine[Any, Any, Any], finish: Callable[[Any], Any]) -> Any:
    return finish(await pending)


def _with_body(req: DecodedRequest, **changes: Any) -> DecodedRequest:
    return dataclasses.replace(req, body=dataclasses.replace(req.body, **changes))


def guard(
    check: Check,
    req: DecodedRequest,
    inner: Inner,
    *,
    topic_name: Callable[[Uuid], str | None],
    topic_exists: Callable[[str], bool],
    any_topic_write: Callable[[], bool],
) -> Any:
    """Serve ``req`` through ``inner`` with what the principal may not do taken out."""
    key = req.api_key
    if key == PRODUCE:
        return _produce(check, req, inner)
    if key == FETCH:
        return _fetch(check, req, inner, topic_name)
    if key == LIST_OFFSETS:
        return _list_offsets(check, req, inner)
    if key == METADATA:
        return _metadata(check, req, inner, topic_exists, topic_name)
    if key == CREATE_TOPICS:
        return _create_topics(check, req, inner)
    if key == FIND_COORDINATOR:
        return _find_coordinator(check, req, inner)
    if key == INIT_PRODUCER_ID:
        return _init_producer_id(check, req, inner, any_topic_write)
    return inner(req)


def _split(
    req: DecodedRequest,
    inner: Inner,
    *,
    field: str,
    answer_field: str,
    allowed: Callable[[Any], bool],
    denied_entry: Callable[[Any], dict[str, Any]],
    when_none_left: Mapping[str, Any] = MappingProxyType({}),
) -> Any:
    """Serve the allowed items of the request's ``field``; the others' error entries are
    added to the answer's ``answer_field``."""
    items = getattr(req.body, field)
    kept = tuple(item for item in items if allowed(item))
    if len(kept) == len(items):
        return inner(req)
    denied = [denied_entry(item) for item in items if item not in kept]
    changes = {field: kept, **(when_none_left if not kept else {})}
    served = inner(_with_body(req, **changes))
    return _then(served, lambda answer: _extend(answer, answer_field, denied))


def _produce(check: Check, req: DecodedRequest, inner: Inner) -> Any:
    def denied(topic: Any) -> dict[str, Any]:
        partitions = [
            {
                "index": p.index,
                "error_code": TOPIC_DENIED,
                "base_offset": -1,
                "log_append_time": -1,
                "log_start_offset": -1,
                "record_errors": (),
                "error_message": None,
            }
            for p in topic.partition_data
        ]
        return {"name": topic.name, "partition_responses": partitions}

    return _split(
        req,
        inner,
        field="topic_data",
        answer_field="responses",
        allowed=lambda t: check(AclOperation.WRITE, ResourceType.TOPIC, t.name),
        denied_entry=denied,
    )


def _fetch(
    check: Check, req: DecodedRequest, inner: Inner, topic_name: Callable[[Uuid], str | None]
) -> Any:
    by_id = req.api_version >= 13

    def readable(topic: Any) -> bool:
        name = topic_name(to_uuid(topic.topic_id)) if by_id else topic.topic
        # An unknown topic id is answered UNKNOWN_TOPIC_ID by the server, as Kafka does.
        return name is None or check(AclOperation.READ, ResourceType.TOPIC, name)

    def denied(topic: Any) -> dict[str, Any]:
        key = {"topic_id": topic.topic_id} if by_id else {"topic": topic.topic}
        partitions = [
            {
                "partition_index": p.partition,
                "error_code": TOPIC_DENIED,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "aborted_transactions": None,
                "preferred_read_replica": -1,
                "records": b"",
            }
            for p in topic.partitions
        ]
        return {**key, "partitions": partitions}

    return _split(
        req,
        inner,
        field="topics",
        answer_field="responses",
        allowed=readable,
        denied_entry=denied,
        when_none_left={"max_wait": datetime.timedelta(0)},
    )


def _list_offsets(check: Check, req: DecodedRequest, inner: Inner) -> Any:
    def denied(topic: Any) -> dict[str, Any]:
        partitions = [
            {
                "partition_index": p.partition_index,
                "error_code": TOPIC_DENIED,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": -1,
            }
            for p in topic.partitions
        ]
        return {"name": topic.name, "partitions": partitions}

    return _split(
        req,
        inner,
        field="topics",
        answer_field="topics",
        allowed=lambda t: check(AclOperation.DESCRIBE, ResourceType.TOPIC, t.name),
        denied_entry=denied,
    )


def _metadata(
    check: Check,
    req: DecodedRequest,
    inner: Inner,
    topic_exists: Callable[[str], bool],
    topic_name: Callable[[Uuid], str | None],
) -> Any:
    """Kafka's ``KafkaApis.handleTopicMetadataRequest``. A topic asked for by id (v12+,
    null name) is checked under the name its id resolves to: denied, it is answered
    TOPIC_AUTHORIZATION_FAILED with a null name and the id it was asked by (Kafka: "topic
    IDs are not considered sensitive information"), so neither its name nor its
    partitions leave; an id of no topic is the server's UNKNOWN_TOPIC_ID. A topic asked
    for by name and denied is answered with its name and the zero id."""
    body = req.body

    def describable(name: str | None) -> bool:
        return name is None or check(AclOperation.DESCRIBE, ResourceType.TOPIC, name)

    if body.topics is None or (req.api_version == 0 and not body.topics):
        return _then(inner(req), lambda r: _keep_topics(r, describable))
    may_create = check(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
    allowed, extra = [], []
    for wanted in body.topics:
        name = wanted.name
        topic_id = to_uuid(getattr(wanted, "topic_id", None))
        if name is None and topic_id != Uuid.ZERO:
            resolved = topic_name(topic_id)
            if resolved is not None and not describable(resolved):
                extra.append(Cluster._missing(None, topic_id, TOPIC_DENIED))
            else:
                allowed.append(wanted)
        elif not describable(name):
            extra.append(Cluster._missing(name, Uuid.ZERO, TOPIC_DENIED))
        elif (
            name is not None
            and not may_create
            and not topic_exists(name)
            and not check(AclOperation.CREATE, ResourceType.TOPIC, name)
        ):
            extra.append(Cluster._missing(name, Uuid.ZERO, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        else:
            allowed.append(wanted)
    if not extra:
        return inner(req)
    kept_names = {w.name for w in allowed if w.name is not None}
    kept_ids = {to_uuid(getattr(w, "topic_id", None)) for w in allowed if w.name is None}
    served = inner(_with_body(req, topics=tuple(allowed)))

    def keep(topic: Any) -> bool:
        if topic.name is None:
            return to_uuid(getattr(topic, "topic_id", None)) in kept_ids
        return topic.name in kept_names or (to_uuid(getattr(topic, "topic_id", None)) in kept_ids)

    def finish(response: Any) -> Any:
        # v0 reads an empty list as "every topic": keep only what was asked and allowed.
        topics = tuple(t for t in response.topics if keep(t))
        if len(topics) != len(response.topics):
            response = dataclasses.replace(response, topics=topics)
        return _extend(response, "topics", extra)

    return _then(served, finish)


def _keep_topics(response: Any, keep: Callable[[str | None], bool]) -> Any:
    topics = tuple(t for t in response.topics if keep(t.name))
    if len(topics) == len(response.topics):
        return response
    return dataclasses.replace(response, topics=topics)


def _create_topics(check: Check, req: DecodedRequest, inner: Inner) -> Any:
    if check(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME):
        return inner(req)

    def denied(topic: Any) -> dict[str, Any]:
        return {
            "name": topic.name,
            "topic_id": None,
            "error_code": TOPIC_DENIED,
            "error_message": "Authorization failed.",
            "topic_config_error_code": ErrorCode.NONE,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": (),
        }

    return _split(
        req,
        inner,
        field="topics",
        answer_field="topics",
        allowed=lambda t: check(AclOperation.CREATE, ResourceType.TOPIC, t.name),
        denied_entry=denied,
    )


def _find_coordinator(check: Check, req: DecodedRequest, inner: Inner) -> Any:
    body = req.body
    # v0 has no key type: it finds a group's coordinator (Kafka's FindCoordinatorRequest).
    if getattr(body, "key_type", 0) != 0:  # transactions are not served; the server answers
        return inner(req)

    def describable(group_id: str) -> bool:
        return check(AclOperation.DESCRIBE, ResourceType.GROUP, group_id)

    denied_code = kio_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    failed = {
        "error_code": denied_code,
        "error_message": None,
        "node_id": -1,
        "host": "",
        "port": -1,
    }
    response = inner(req)
    if req.api_version < 4:
        if describable(body.key):
            return response
        if req.api_version == 0:  # v0 answers without an error message
            del failed["error_message"]
        return dataclasses.replace(response, **failed)
    coordinators = tuple(
        c if describable(c.key) else dataclasses.replace(c, **failed) for c in response.coordinators
    )
    return dataclasses.replace(response, coordinators=coordinators)


def _init_producer_id(
    check: Check, req: DecodedRequest, inner: Inner, any_topic_write: Callable[[], bool]
) -> Any:
    if req.body.transactional_id is not None:
        return inner(req)  # transactions are not served (the server answers)
    if (
        check(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME)
        or any_topic_write()
    ):
        return inner(req)
    from regroup.server.wire.codec import response_class

    return build(
        response_class(INIT_PRODUCER_ID, req.api_version),
        {
            "throttle_time": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "producer_id": -1,
            "producer_epoch": -1,
        },
    )
