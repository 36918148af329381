"""``regroup replay``: drive the group coordinator from a JSON script, print JSON lines.

A script is one JSON object::

    {
      "config": {"group.consumer.heartbeat.interval.ms": 5000},
      "topics": {"foo": 3, "bar": {"partitions": 2, "id": "<Kafka Uuid>"}},
      "initial_records": [{"type": 3, "key": {"group_id": "g"}, "value": {"epoch": 4}}],
      "steps": [
        {"request": "ConsumerGroupHeartbeat",
         "data": {"group_id": "g", "member_id": "A", "member_epoch": 0,
                  "rebalance_timeout_ms": 300000, "subscribed_topic_names": ["foo"],
                  "topic_partitions": []}},
        {"advance_ms": 5000},
        {"metadata": {"set": {"foo": 6}, "delete": ["bar"]}},
        {"assignor_result": {"group_id": "g", "members": {"A": {"foo": [0, 1, 2]}}}}
      ]
    }

* ``config``: broker configs by Kafka's names (``GroupCoordinatorConfig``); optional.
* ``topics``: name -> partition count, or ``{"partitions": n, "id": "..."}``; a
  topic without an id gets ``Uuid.for_name(name)``.
* ``initial_records``: optional records (the ``regroup.records`` JSON form) replayed
  before the first step, as a coordinator loads its log.
* ``steps``, each one of:

  - ``{"request": NAME, "data": {...}}``: any request the coordinator serves,
    ``NAME`` being the request class without ``Request`` (``ConsumerGroupHeartbeat``,
    ``ConsumerGroupDescribe``, ``ConsumerGroupPrepareAssignment``,
    ``ConsumerGroupInstallAssignment``, ``IncrementalAlterGroupConfigs``,
    ``DescribeGroupConfigs``, and the classic and offset requests), with Kafka's
    field names in snake_case. A ``topic_id`` may be given as a topic *name*; it is
    replaced by the topic's id.
  - ``{"advance_ms": N}``: move the clock N ms on and fire the timers now due.
  - ``{"metadata": {"set": {name: count | {...}}, "delete": [name]}}``: create or
    grow topics, delete topics.
  - ``{"assignor_result": {"group_id": G, "members": {member: {topic: [p, ...]}}}}``:
    the next target computation of group G returns this instead of running the
    server-side assignor.

Output: one JSON line per step: ``step`` (index), ``now_ms``, ``kind``,
``response`` (``null`` when the step has none), ``records`` (the records the step
wrote, in the records' JSON form) and ``groups`` (ConsumerGroupDescribe of every
consumer group, by id). A bad script is a one-line error and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from regroup.assignors.consumer.api import GroupAssignment, MemberAssignment
from regroup.cli.errors import UsageError
from regroup.cli.options import parse_configs
from regroup.coordinator.config import GroupCoordinatorConfig, InvalidConfigError
from regroup.coordinator.consumer.describe import describe_group
from regroup.coordinator.consumer.rebalance import ScriptedAssignor
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.service import GroupCoordinator
from regroup.model.codec import CodecError, from_jsonable, to_jsonable
from regroup.model.metadata import MetadataImage, TopicImage
from regroup.model.uuid import Uuid
from regroup.records import CoordinatorRecord

__all__ = ["add_parser", "replay_script", "run"]

_TOKEN = "replay"


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="drive the group coordinator from a JSON script",
        description="Run a scripted sequence of requests, clock advances and metadata changes "
        "against the group coordinator; print one JSON line per step.",
    )
    parser.add_argument("script", help="path of the JSON script, or - for stdin")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a broker config by Kafka's name, over the script's 'config' (repeatable), "
        "e.g. regroup.consumer.semantics=kip-848",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    overrides = parse_configs(args.config)
    script = _load(args.script)
    for line in replay_script(script, overrides):
        sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    return 0


def _load(path: str) -> Any:
    try:
        if path == "-":
            return json.load(sys.stdin)
        with open(path, encoding="utf-8") as stream:
            return _parse(stream)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def _parse(stream: TextIO) -> Any:
    try:
        return json.load(stream)
    except json.JSONDecodeError as exc:
        raise UsageError(f"not JSON: {exc.msg} (line {exc.lineno})") from None


def _topic(name: str, spec: Any, where: str) -> TopicImage:
    if isinstance(spec, int) and not isinstance(spec, bool):
        return TopicImage(Uuid.for_name(name), name, spec)
    if isinstance(spec, dict):
        unknown = set(spec) - {"partitions", "id"}
        if unknown:
            raise UsageError(f"{where}.{name}: unknown field {sorted(unknown)[0]!r}")
        count = spec.get("partitions")
        if not isinstance(count, int) or isinstance(count, bool):
            raise UsageError(f"{where}.{name}: 'partitions' must be an integer")
        raw_id = spec.get("id")
        try:
            topic_id = Uuid.for_name(name) if raw_id is None else Uuid.from_string(raw_id)
        except ValueError as exc:
            raise UsageError(f"{where}.{name}: {exc}") from None
        return TopicImage(topic_id, name, count)
    raise UsageError(f"{where}.{name}: expected a partition count or an object")


#: The most partitions a topic of a script may have: refused up front with the limit
#: stated, rather than found out of memory inside the first assignment.
MAX_TOPIC_PARTITIONS = 1_000_000


def _topics(spec: Any, where: str) -> list[TopicImage]:
    if not isinstance(spec, dict):
        raise UsageError(f"{where}: expected an object of topics")
    try:
        topics = [_topic(name, value, where) for name, value in spec.items()]
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None
    for topic in topics:
        if topic.partitions > MAX_TOPIC_PARTITIONS:
            raise UsageError(
                f"{where}.{topic.name}: {topic.partitions:,} partitions; regroup replay takes "
                f"at most {MAX_TOPIC_PARTITIONS:,} per topic"
            )
    return topics


def _ids_for_names(data: Any, image: MetadataImage) -> Any:
    """Replace ``topic_id`` values that are topic names by the topics' ids."""
    if isinstance(data, list):
        return [_ids_for_names(item, image) for item in data]
    if isinstance(data, dict):
        result = {}
        for key, value in data.items():
            if key == "topic_id" and isinstance(value, str) and image.topic(value) is not None:
                topic = image.topic(value)
                assert topic is not None
                result[key] = str(topic.topic_id)
            else:
                result[key] = _ids_for_names(value, image)
        return result
    return data


def replay_script(
    script: Any, config_overrides: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Run a parsed script; the output lines as JSON-ready dicts.

    ``config_overrides``: broker configs (``--config``) over the script's own.
    """
    if not isinstance(script, dict):
        raise UsageError("a replay script must be a JSON object")
    unknown = set(script) - {"config", "topics", "initial_records", "steps"}
    if unknown:
        raise UsageError(f"unknown script field {sorted(unknown)[0]!r}")
    properties = script.get("config") or {}
    if not isinstance(properties, dict):
        raise UsageError("config: expected an object of broker configs")
    try:
        config = GroupCoordinatorConfig.from_properties({**properties, **(config_overrides or {})})
    except InvalidConfigError as exc:
        raise UsageError(f"config: {exc}") from None
    try:
        image = MetadataImage.of(_topics(script.get("topics") or {}, "topics"))
    except ValueError as exc:
        raise UsageError(f"topics: {exc}") from None
    coordinator = GroupCoordinator(config, metadata=image)
    _load_records(coordinator, script.get("initial_records") or [], "initial_records")
    steps = script.get("steps")
    if not isinstance(steps, list):
        raise UsageError("'steps' must be a list")
    request_types = {
        cls.__name__.removesuffix("Request"): cls for cls in coordinator.supported_request_types()
    }
    now = 0
    lines = []
    for index, step in enumerate(steps):
        where = f"steps[{index}]"
        if not isinstance(step, dict) or len(step) == 0:
            raise UsageError(f"{where}: expected an object")
        response: object | None = None
        if "request" in step:
            _only(step, {"request", "data"}, where)
            name = step["request"]
            cls = request_types.get(name) if isinstance(name, str) else None
            if cls is None:
                raise UsageError(
                    f"{where}: unknown request {name!r} (known: {', '.join(sorted(request_types))})"
                )
            data = _ids_for_names(step.get("data") or {}, coordinator.metadata)
            try:
                request: object = from_jsonable(cls, data, f"{where}.data")
            except CodecError as exc:
                raise UsageError(str(exc)) from None
            result = coordinator.handle(_TOKEN, request, now)
            response = result.response_for(_TOKEN)
            kind = name
        elif "advance_ms" in step:
            _only(step, {"advance_ms"}, where)
            delta = step["advance_ms"]
            if not isinstance(delta, int) or isinstance(delta, bool) or delta < 0:
                raise UsageError(f"{where}: 'advance_ms' must be a non-negative integer")
            now += delta
            result = coordinator.on_timer(now)
            kind = "advance"
        elif "metadata" in step:
            _only(step, {"metadata"}, where)
            result = _metadata_step(coordinator, step["metadata"], now, where)
            kind = "metadata"
        elif "records" in step:
            _only(step, {"records"}, where)
            _load_records(coordinator, step["records"], f"{where}.records")
            result = CoordinatorResult()
            kind = "records"
        elif "assignor_result" in step:
            _only(step, {"assignor_result"}, where)
            _assignor_step(coordinator, step["assignor_result"], where)
            result = CoordinatorResult()
            kind = "assignor_result"
        else:
            raise UsageError(f"{where}: unknown step kind {sorted(step)[0]!r}")
        lines.append(
            {
                "step": index,
                "now_ms": now,
                "kind": kind,
                "response": None if response is None else to_jsonable(response),
                "records": [record.to_dict() for record in result.records],
                "groups": {
                    group_id: to_jsonable(describe_group(coordinator.state, group_id))
                    for group_id in sorted(coordinator.groups)
                    if coordinator.state.consumer_group(group_id) is not None
                },
                "timers": [
                    {"key": key, "deadline_ms": deadline}
                    for deadline, key in coordinator.state.timer.scheduled()
                ],
                "member_states": _member_states(coordinator),
            }
        )
    return lines


def _load_records(coordinator: GroupCoordinator, raws: Any, where: str) -> None:
    if not isinstance(raws, list):
        raise UsageError(f"{where}: expected a list of records")
    for index, raw in enumerate(raws):
        try:
            coordinator.replay(CoordinatorRecord.from_dict(raw))
        except (CodecError, ValueError, TypeError, AttributeError) as exc:
            raise UsageError(f"{where}[{index}]: {exc}") from None


def _by_name(coordinator: GroupCoordinator, assignment: Mapping[Uuid, frozenset[int]]) -> Any:
    """``{topic name (or id if unknown): [partitions]}``, sorted."""
    named: dict[str, list[int]] = {}
    for topic_id, partitions in assignment.items():
        topic = coordinator.metadata.topic_by_id(topic_id)
        named[topic.name if topic is not None else str(topic_id)] = sorted(partitions)
    return dict(sorted(named.items()))


def _member_states(coordinator: GroupCoordinator) -> dict[str, dict[str, Any]]:
    states: dict[str, dict[str, Any]] = {}
    for group_id in sorted(coordinator.groups):
        group = coordinator.state.consumer_group(group_id)
        if group is None:
            continue
        states[group_id] = {
            member.member_id: {
                "state": member.state.name,
                "member_epoch": member.member_epoch,
                "previous_member_epoch": member.previous_member_epoch,
                "assigned": _by_name(coordinator, member.assigned_partitions),
                "pending_revocation": _by_name(coordinator, member.partitions_pending_revocation),
            }
            for member in sorted(group.members.values(), key=lambda m: m.member_id)
        }
    return states


def _only(step: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = set(step) - allowed
    if extra:
        raise UsageError(f"{where}: unexpected field {sorted(extra)[0]!r}")


def _metadata_step(
    coordinator: GroupCoordinator, spec: Any, now: int, where: str
) -> CoordinatorResult:
    if not isinstance(spec, dict) or set(spec) - {"set", "delete"}:
        raise UsageError(f"{where}.metadata: expected {{'set': {{...}}, 'delete': [...]}}")
    image = coordinator.metadata
    for name in spec.get("delete") or []:
        if not isinstance(name, str) or image.topic(name) is None:
            raise UsageError(f"{where}.metadata.delete: no topic {name!r}")
        image = image.without_topic(name)
    for topic in _topics(spec.get("set") or {}, f"{where}.metadata.set"):
        existing = image.topic(topic.name)
        if existing is not None and topic.topic_id == Uuid.for_name(topic.name):
            topic = TopicImage(existing.topic_id, topic.name, topic.partitions)
        try:
            image = image.with_topic(topic)
        except ValueError as exc:
            raise UsageError(f"{where}.metadata.set: {exc}") from None
    return coordinator.update_metadata(image, now)


def _assignor_step(coordinator: GroupCoordinator, spec: Any, where: str) -> None:
    shape = "expected 'group_id' and 'members' or 'error' (and optionally 'repeat')"
    if not isinstance(spec, dict) or "group_id" not in spec:
        raise UsageError(f"{where}.assignor_result: {shape}")
    keys = set(spec) - {"group_id", "repeat"}
    if keys not in ({"members"}, {"error"}):
        raise UsageError(f"{where}.assignor_result: {shape}")
    group_id, repeat = spec["group_id"], spec.get("repeat", False)
    if not isinstance(group_id, str) or not isinstance(repeat, bool):
        raise UsageError(f"{where}.assignor_result: bad 'group_id' or 'repeat'")
    if "error" in spec:
        if not isinstance(spec["error"], str):
            raise UsageError(f"{where}.assignor_result: 'error' must be a string")
        scripted = ScriptedAssignor(None, error=spec["error"], repeat=repeat)
    else:
        scripted = ScriptedAssignor(
            GroupAssignment(_scripted_assignment(coordinator, spec["members"], where)),
            repeat=repeat,
        )
    queue = coordinator.consumer.scripted.setdefault(group_id, [])
    # A repeating result lasts until the next one replaces it.
    queue[:] = [a for a in queue if not (isinstance(a, ScriptedAssignor) and a.repeat)]
    queue.append(scripted)


def _scripted_assignment(
    coordinator: GroupCoordinator, members: Any, where: str
) -> dict[str, MemberAssignment]:
    if not isinstance(members, dict):
        raise UsageError(f"{where}.assignor_result: bad 'group_id' or 'members'")
    assignment: dict[str, MemberAssignment] = {}
    for member_id, topics in members.items():
        if not isinstance(topics, dict):
            raise UsageError(f"{where}.assignor_result.members.{member_id}: expected an object")
        partitions: dict[Uuid, frozenset[int]] = {}
        for name, numbers in topics.items():
            topic = coordinator.metadata.topic(name)
            if topic is None:
                raise UsageError(f"{where}.assignor_result: no topic {name!r}")
            if not isinstance(numbers, list) or not all(
                isinstance(n, int) and not isinstance(n, bool) for n in numbers
            ):
                raise UsageError(
                    f"{where}.assignor_result: partitions of {name!r} must be integers"
                )
            partitions[topic.topic_id] = frozenset(numbers)
        assignment[member_id] = MemberAssignment(partitions)
    return assignment
