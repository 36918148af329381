"""``regroup assign``: run one assignor on one group, JSON in, JSON out.

The input and output formats are a contract (README, "regroup assign"):

Classic (``"group_protocol": "classic"``, the default)::

    {"group_protocol": "classic", "assignor": "cooperative-sticky",
     "topics": {"t1": 3, "t2": 2},
     "partition_racks": {"t1": [["a","b"], ["b",null], [null,null]]},
     "members": [{"member_id": "c1", "group_instance_id": null, "rack": "a",
                  "topics": ["t1", "t2"], "owned_partitions": ["t1-0", "t2-1"],
                  "generation": 3, "user_data": null}]}

  -> ``{"assignment": {"c1": ["t1-0", ...]}, "user_data": {"c1": null}}``

KIP-848 (``"group_protocol": "consumer"``)::

    {"group_protocol": "consumer", "assignor": "uniform",
     "topics": {"foo": {"id": "<Kafka Uuid>", "partitions": 3, "racks": [["a"],["b"],["c"]]}},
     "members": [{"member_id": "A", "instance_id": null, "rack": null,
                  "subscribed_topics": ["foo"], "assignment": {"foo": [0, 1]}}]}

  -> ``{"assignment": {"A": {"foo": [0]}}}``

Optional fields may be absent or null. Every input member appears in the
output. ``--batch`` reads JSON Lines and answers each line on its own line; a
bad line is answered ``{"error": "..."}`` and the rest go on.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import sys
from collections.abc import Mapping
from typing import IO, Any

from regroup.assignors import PartitionAssignorError, UnknownAssignorError
from regroup.assignors.classic import (
    ClusterMetadata,
    GroupSubscription,
    Subscription,
    create_classic_assignor,
)
from regroup.assignors.consumer import (
    GroupSpec,
    MemberSubscriptionSpec,
    SubscribedTopicDescriber,
    TopicMetadata,
    create_server_assignor,
)
from regroup.cli.errors import UsageError
from regroup.cli.options import at_least
from regroup.model import TopicPartition, Uuid
from regroup.model.metadata import replica_racks

__all__ = ["AssignInputError", "add_parser", "assign_document", "run"]


class AssignInputError(ValueError):
    """A document that is not a valid ``regroup assign`` input (one-line message)."""


#: The most partitions (all topics together) one document may ask for: refused up front
#: with the limit stated, rather than failing to allocate the assignor's arrays.
MAX_PARTITIONS = 10_000_000


def _check_total(counts: Mapping[str, int]) -> None:
    total = sum(counts.values())
    if total > MAX_PARTITIONS:
        raise AssignInputError(
            f"{total:,} partitions in topics: regroup assign takes at most {MAX_PARTITIONS:,}"
        )


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "assign",
        help="run an assignor on a group described in JSON",
        description="Run one of Kafka's assignors (classic or KIP-848) on a group given as JSON.",
    )
    parser.add_argument("input", help="path of the JSON document, or - for stdin")
    parser.add_argument(
        "--batch",
        action="store_true",
        help="read JSON Lines: one document per line, one result each",
    )
    parser.add_argument(
        "--indent", type=at_least(0), default=None, help="pretty-print with this indent"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    stream = _open_input(args.input)
    try:
        if args.batch:
            for line in stream:
                if not line.strip():
                    continue
                print(json.dumps(_answer_line(line)), flush=False)
            sys.stdout.flush()
            return 0
        try:
            document = json.load(stream)
        except json.JSONDecodeError as exc:
            raise UsageError(f"input is not JSON: {exc.msg} at line {exc.lineno}") from None
        try:
            result = assign_document(document)
        except AssignInputError as exc:
            raise UsageError(str(exc)) from None
        print(json.dumps(result, indent=args.indent))
        return 0
    finally:
        if stream is not sys.stdin:
            stream.close()


def _open_input(path: str) -> IO[str]:
    if path == "-":
        return sys.stdin
    try:
        return open(path, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def _answer_line(line: str) -> dict[str, Any]:
    try:
        return assign_document(json.loads(line))
    except json.JSONDecodeError as exc:
        return {"error": f"input is not JSON: {exc.msg}"}
    except AssignInputError as exc:
        return {"error": str(exc)}


def assign_document(document: Any) -> dict[str, Any]:
    """The output document for one input document; ``AssignInputError`` for bad input."""
    obj = _object(document, "input")
    protocol = obj.get("group_protocol") or "classic"
    if protocol == "classic":
        return _assign_classic(obj)
    if protocol == "consumer":
        return _assign_consumer(obj)
    raise AssignInputError(f"group_protocol must be 'classic' or 'consumer', got {protocol!r}")


# -- classic ------------------------------------------------------------------------

_CLASSIC_KEYS = {"group_protocol", "assignor", "topics", "partition_racks", "members"}
_CLASSIC_MEMBER_KEYS = {
    "member_id",
    "group_instance_id",
    "rack",
    "topics",
    "owned_partitions",
    "generation",
    "user_data",
}


def _assign_classic(obj: Mapping[str, Any]) -> dict[str, Any]:
    _known_keys(obj, _CLASSIC_KEYS, "input")
    name = _string(_required(obj, "assignor", "input"), "assignor")
    try:
        assignor = create_classic_assignor(name)
    except UnknownAssignorError as exc:
        raise AssignInputError(str(exc)) from None
    counts = {
        topic: _count(value, f"topics.{topic}")
        for topic, value in _object(_required(obj, "topics", "input"), "topics").items()
    }
    _check_total(counts)
    racks: dict[str, list[frozenset[str]]] = {}
    for topic, per_partition in _object(
        obj.get("partition_racks") or {}, "partition_racks"
    ).items():
        if topic not in counts:
            raise AssignInputError(f"partition_racks names topic {topic!r}, which is not in topics")
        racks[topic] = _rack_lists(per_partition, counts[topic], f"partition_racks.{topic}")
    subscriptions: dict[str, Subscription] = {}
    for index, raw in enumerate(_list(_required(obj, "members", "input"), "members")):
        where = f"members[{index}]"
        member = _object(raw, where)
        _known_keys(member, _CLASSIC_MEMBER_KEYS, where)
        member_id = _string(_required(member, "member_id", where), f"{where}.member_id")
        if member_id in subscriptions:
            raise AssignInputError(f"member {member_id!r} appears twice")
        owned = [
            _partition(p, f"{where}.owned_partitions")
            for p in _list(member.get("owned_partitions") or [], f"{where}.owned_partitions")
        ]
        generation = member.get("generation")
        subscriptions[member_id] = Subscription(
            topics=tuple(
                _string(t, f"{where}.topics")
                for t in _list(_required(member, "topics", where), f"{where}.topics")
            ),
            user_data=_base64(member.get("user_data"), f"{where}.user_data"),
            owned_partitions=tuple(owned),
            generation_id=-1 if generation is None else _int(generation, f"{where}.generation"),
            rack_id=_optional_string(member.get("rack"), f"{where}.rack"),
            group_instance_id=_optional_string(
                member.get("group_instance_id"), f"{where}.group_instance_id"
            ),
        )
    try:
        result = assignor.assign(ClusterMetadata(counts, racks), GroupSubscription(subscriptions))
    except PartitionAssignorError as exc:
        raise AssignInputError(f"the {name} assignor failed: {exc}") from None
    assignment: dict[str, list[str]] = {}
    user_data: dict[str, str | None] = {}
    for member_id in subscriptions:
        member_assignment = result.assignments.get(member_id)
        partitions = sorted(member_assignment.partitions) if member_assignment else []
        assignment[member_id] = [str(tp) for tp in partitions]
        data = member_assignment.user_data if member_assignment else None
        user_data[member_id] = None if data is None else base64.b64encode(data).decode("ascii")
    return {"assignment": assignment, "user_data": user_data}


# -- KIP-848 ------------------------------------------------------------------------

_CONSUMER_KEYS = {"group_protocol", "assignor", "topics", "members"}
_CONSUMER_TOPIC_KEYS = {"id", "partitions", "racks"}
_CONSUMER_MEMBER_KEYS = {"member_id", "instance_id", "rack", "subscribed_topics", "assignment"}


def _assign_consumer(obj: Mapping[str, Any]) -> dict[str, Any]:
    _known_keys(obj, _CONSUMER_KEYS, "input")
    name = _string(_required(obj, "assignor", "input"), "assignor")
    try:
        assignor = create_server_assignor(name)
    except UnknownAssignorError as exc:
        raise AssignInputError(str(exc)) from None
    topics: dict[str, TopicMetadata] = {}
    names_by_id: dict[Uuid, str] = {}
    total = 0
    for topic, raw in _object(_required(obj, "topics", "input"), "topics").items():
        where = f"topics.{topic}"
        spec = _object(raw, where)
        _known_keys(spec, _CONSUMER_TOPIC_KEYS, where)
        raw_id = spec.get("id")
        try:
            topic_id = Uuid.for_name(topic) if raw_id is None else Uuid.from_string(raw_id)
        except ValueError as exc:
            raise AssignInputError(f"{where}.id: {exc}") from None
        if topic_id in names_by_id:
            raise AssignInputError(f"{where}.id is also the id of topic {names_by_id[topic_id]!r}")
        count = _count(_required(spec, "partitions", where), f"{where}.partitions")
        total += count
        _check_total({"": total})
        racks = _rack_lists(spec.get("racks") or [], count, f"{where}.racks")
        topics[topic] = TopicMetadata(topic_id, topic, count, tuple(racks))
        names_by_id[topic_id] = topic
    members: dict[str, MemberSubscriptionSpec] = {}
    #: Subscribed names with no metadata, by the id they get and where they were named.
    unknown: dict[Uuid, tuple[str, str]] = {}
    for index, raw in enumerate(_list(_required(obj, "members", "input"), "members")):
        where = f"members[{index}]"
        member = _object(raw, where)
        _known_keys(member, _CONSUMER_MEMBER_KEYS, where)
        member_id = _string(_required(member, "member_id", where), f"{where}.member_id")
        if member_id in members:
            raise AssignInputError(f"member {member_id!r} appears twice")
        subscribed = [
            _string(t, f"{where}.subscribed_topics")
            for t in _list(
                _required(member, "subscribed_topics", where), f"{where}.subscribed_topics"
            )
        ]
        current: dict[Uuid, frozenset[int]] = {}
        for topic, partitions in _object(
            member.get("assignment") or {}, f"{where}.assignment"
        ).items():
            if topic not in topics:
                raise AssignInputError(f"{where}.assignment names unknown topic {topic!r}")
            numbers = [
                _int(p, f"{where}.assignment.{topic}")
                for p in _list(partitions, f"{where}.assignment.{topic}")
            ]
            current[topics[topic].topic_id] = frozenset(numbers)
        subscribed_ids: set[Uuid] = set()
        for topic_name in subscribed:
            if topic_name in topics:
                subscribed_ids.add(topics[topic_name].topic_id)
                continue
            # A topic the metadata does not have: the assignor is told of it, and Kafka's
            # assignors refuse it (PartitionAssignorException).
            topic_id = _unknown_topic_id(topic_name, names_by_id)
            unknown.setdefault(topic_id, (topic_name, f"{where}.subscribed_topics"))
            subscribed_ids.add(topic_id)
        members[member_id] = MemberSubscriptionSpec(
            subscribed_topic_ids=frozenset(subscribed_ids),
            rack_id=_optional_string(member.get("rack"), f"{where}.rack"),
            instance_id=_optional_string(member.get("instance_id"), f"{where}.instance_id"),
            assigned_partitions=current,
        )
    try:
        result = assignor.assign(
            GroupSpec.of(members), SubscribedTopicDescriber(list(topics.values()))
        )
    except PartitionAssignorError as exc:
        detail = "".join(
            f" ({where} names {topic!r}, which is not in topics)"
            for topic, where in unknown.values()
        )
        raise AssignInputError(f"the {name} assignor failed: {exc}{detail}") from None
    out: dict[str, dict[str, list[int]]] = {}
    for member_id in members:
        target = result.members.get(member_id)
        per_topic = {} if target is None else target.partitions
        out[member_id] = {
            names_by_id[topic_id]: sorted(parts)
            for topic_id, parts in sorted(per_topic.items(), key=lambda kv: names_by_id[kv[0]])
            if parts
        }
    return {"assignment": out}


def _unknown_topic_id(name: str, known: Mapping[Uuid, str]) -> Uuid:
    """An id for a subscribed name that is not in ``topics``, distinct from every known id."""
    topic_id = Uuid.for_name(name)
    salt = 0
    while topic_id in known:
        salt += 1
        topic_id = Uuid.for_name(f"{name}\x00{salt}")
    return topic_id


# -- field checks (one-line errors naming the field) ----------------------------------


def _required(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if obj.get(key) is None:
        raise AssignInputError(f"{where}: missing field {key!r}")
    return obj[key]


def _known_keys(obj: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(obj) - known)
    if unknown:
        raise AssignInputError(f"{where}: unknown field {unknown[0]!r}")


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise AssignInputError(f"{where} must be an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise AssignInputError(f"{where} must be a list")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise AssignInputError(f"{where} must be a string, got {json.dumps(value)}")
    return value


def _optional_string(value: Any, where: str) -> str | None:
    return None if value is None else _string(value, where)


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise AssignInputError(f"{where} must be an integer, got {json.dumps(value)}")
    return value


def _count(value: Any, where: str) -> int:
    count = _int(value, where)
    if count < 0:
        raise AssignInputError(f"{where} must not be negative, got {count}")
    return count


def _partition(value: Any, where: str) -> TopicPartition:
    if not isinstance(value, str):
        raise AssignInputError(
            f"{where}: a partition is written 'topic-N', got {json.dumps(value)}"
        )
    try:
        return TopicPartition.parse(value)
    except ValueError as exc:
        raise AssignInputError(f"{where}: {exc}") from None


def _base64(value: Any, where: str) -> bytes | None:
    if value is None:
        return None
    try:
        return base64.b64decode(_string(value, where), validate=True)
    except (binascii.Error, ValueError):
        raise AssignInputError(f"{where} is not valid base64") from None


def _rack_lists(value: Any, partitions: int, where: str) -> list[frozenset[str]]:
    """Per partition, its replicas' racks; ``null`` is a replica on a broker without a rack."""
    per_partition = _list(value, where)
    if len(per_partition) > partitions:
        raise AssignInputError(
            f"{where} lists racks for {len(per_partition)} partitions, the topic has {partitions}"
        )
    return list(
        replica_racks(
            [_optional_string(r, f"{where}[{i}]") for r in _list(racks, f"{where}[{i}]")]
            for i, racks in enumerate(per_partition)
        )
    )
