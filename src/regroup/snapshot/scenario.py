"""A snapshot turned into a scenario file, and the header that says where each value came from.

``snapshot_scenario(snapshot, what_if)`` keeps the group's shape and traffic and takes
what happens to it from a built-in scenario (``what_if``, default ``rolling-bounce``: a
deploy), so that ``regroup compare --scenario FILE`` answers "what would a deploy of
*this* group cost under eager, cooperative and KIP-848?". The rules:

- ``[group] members``: the members the coordinator describes; ``protocol``: ``consumer``
  for a KIP-848 group, ``cooperative`` for a classic group on ``cooperative-sticky``, else
  ``eager``; ``static``: when every member has a ``group.instance.id`` (KIP-345; a group
  with some static members is written static when most are, and the header says so).
  The observed assignor is in the header, not under ``[group]``: ``compare`` runs all
  three protocols, and an assignor of one protocol cannot run the others (Kafka's
  ``range`` has no cooperative form; ``uniform`` is KIP-848's).
- ``[topics]``: the topics the members own or are to own (else the ones the group
  committed), with their partition counts from Metadata.
- ``[data] records_per_second``: the group's produce rate, the end offsets' growth over
  the time between the two samples, spread evenly over its partitions (the scenario has
  one rate for every partition), rounded to an integer (at least 1 if anything was
  produced); the per-partition rates are in the header.
- ``[broker]``: the coordinator broker's group configs that regroup's coordinator has
  (``group.consumer.heartbeat.interval.ms``, ``group.initial.rebalance.delay.ms`` ...)
  when DescribeConfigs tells them, and a KIP-848 group's own dynamic
  ``consumer.session.timeout.ms`` / ``consumer.heartbeat.interval.ms``, which for this one
  group override the broker's ``group.consumer.*``.
- Everything else (processing cost, restore time, the network, the consumers' own
  configs such as ``session.timeout.ms``, which no admin API shows) is regroup's default,
  marked *assumed*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from regroup.coordinator.config import GroupCoordinatorConfig, InvalidConfigError
from regroup.sim.scenario import DataConfig, Scenario, builtin_scenario
from regroup.snapshot.model import Snapshot, SnapshotError

__all__ = ["records_per_second", "snapshot_scenario"]

#: A KIP-848 group config (DescribeConfigs GROUP) -> the broker config it overrides.
_GROUP_CONFIGS = {
    "consumer.session.timeout.ms": "group.consumer.session.timeout.ms",
    "consumer.heartbeat.interval.ms": "group.consumer.heartbeat.interval.ms",
}

#: How many members and partitions the header lists one per line.
_LISTED = 64


def records_per_second(snapshot: Snapshot) -> tuple[int, float]:
    """(the scenario's records per second per partition, the observed mean)."""
    rates = snapshot.rates()
    total = sum(rates.values())
    count = sum(snapshot.partitions.values())
    mean = total / count if count else 0.0
    if mean <= 0:
        return 0, mean
    return max(1, round(mean)), mean


def _assignors(value: str) -> str:
    """``group.consumer.assignors`` by regroup's short names: Kafka lists class names
    (``org.apache.kafka.coordinator.group.assignor.UniformAssignor``) or short ones."""
    names = []
    for raw in value.split(","):
        name = raw.strip().rsplit(".", 1)[-1]
        if name.endswith("Assignor"):
            name = name[: -len("Assignor")].lower()
        if name:
            names.append(name)
    return ",".join(names)


def _broker_configs(snapshot: Snapshot) -> tuple[dict[str, Any], list[str]]:
    """The ``[broker]`` table and its header lines."""
    known = {name for name in GroupCoordinatorConfig.kafka_names() if name.startswith("group.")}
    chosen: dict[str, tuple[str, str]] = {}
    for name, entry in sorted((snapshot.broker_configs or {}).items()):
        if name in known and entry.value != "":
            value = _assignors(entry.value) if name == "group.consumer.assignors" else entry.value
            chosen[name] = (value, f"broker {entry.source}")
    for name, entry in sorted((snapshot.group_configs or {}).items()):
        if name in _GROUP_CONFIGS and entry.source == "DYNAMIC_GROUP_CONFIG" and entry.value:
            chosen[_GROUP_CONFIGS[name]] = (entry.value, f"group config {name}")
    table = {name: _typed(value) for name, (value, _) in chosen.items()}
    lines: list[str] = []
    try:
        GroupCoordinatorConfig.from_properties(table)
    except InvalidConfigError as error:
        lines.append(f"not written: the broker's group configs ({error}); Kafka's defaults used")
        table, chosen = {}, {}
    for name, (value, source) in chosen.items():
        lines.append(f"observed: [broker] {name} = {value} ({source})")
    if not chosen:
        why = "; ".join(snapshot.configs_note) or "the broker reported none regroup models"
        lines.append(f"assumed: [broker] Kafka's defaults ({why})")
    return table, lines


def _typed(value: str) -> Any:
    try:
        return int(value)
    except ValueError:
        return value


def _rate_lines(snapshot: Snapshot, rate: int, mean: float) -> list[str]:
    rates = snapshot.rates()
    count = sum(snapshot.partitions.values())
    lines = [
        f"observed: [data] records_per_second = {rate}: {sum(rates.values()):.1f} records/s "
        f"produced over {count} partitions ({mean:.2f} per partition), from the end offsets "
        f"sampled {snapshot.elapsed_s:.1f} s apart"
    ]
    if rates:
        listed = sorted(rates.items())[:_LISTED]
        lines.append(
            "  per partition: "
            + ", ".join(f"{t}-{p} {r:.1f}" for (t, p), r in listed)
            + (f" ... and {len(rates) - _LISTED} more" if len(rates) > _LISTED else "")
        )
    lag = snapshot.lag()
    if lag:
        lines.append(
            f"observed: lag {sum(lag.values())} records over {len(lag)} committed partitions "
            "(end offsets minus committed offsets; not simulated: a run starts with no backlog)"
        )
    else:
        lines.append("observed: no committed offsets, no lag to report")
    return lines


def _member_lines(snapshot: Snapshot) -> list[str]:
    lines = []
    for member in snapshot.group.members[:_LISTED]:
        owned = ",".join(f"{t}-{p}" for t, p in member.assignment) or "none"
        parts = [
            f"  {member.member_id}",
            f"instance {member.instance_id}" if member.instance_id else "dynamic",
            f"client {member.client_id or '-'}",
            f"host {member.host or '-'}",
            f"owns {owned}",
        ]
        if member.epoch is not None:
            kind = "epoch" if snapshot.group.type == "consumer" else "generation"
            parts.append(f"{kind} {member.epoch}")
        if member.target_assignment is not None and member.target_assignment != member.assignment:
            target = ",".join(f"{t}-{p}" for t, p in member.target_assignment) or "none"
            parts.append(f"target {target}")
        lines.append(", ".join(parts))
    more = len(snapshot.group.members) - _LISTED
    if more > 0:
        lines.append(f"  ... and {more} more members")
    return lines


def snapshot_scenario(
    snapshot: Snapshot, what_if: str = "rolling-bounce"
) -> tuple[Scenario, list[str]]:
    """(the scenario, its header lines); ``SnapshotError`` for a group with nothing to run."""
    group = snapshot.group
    if not group.members:
        raise SnapshotError(f"Consumer group '{group.group_id}' has no active members.")
    if not snapshot.partitions:
        raise SnapshotError(
            f"consumer group '{group.group_id}' owns no partition and committed none: "
            "no topic to simulate"
        )
    base = builtin_scenario(what_if)
    first_topic = sorted(snapshot.partitions)[0]
    actions = tuple(
        replace(a, topic=first_topic) if a.topic and a.topic not in snapshot.partitions else a
        for a in base.actions
    )
    static_count = sum(1 for m in group.members if m.instance_id)
    static = static_count * 2 > len(group.members)
    rate, mean = records_per_second(snapshot)
    broker, config_lines = _broker_configs(snapshot)
    described = (
        f"{group.type} group '{group.group_id}' on {snapshot.bootstrap} at {snapshot.taken_at}: "
        f"{len(group.members)} members, {sum(snapshot.partitions.values())} partitions, "
        f"{rate} records/s per partition; then {base.description}"
    )
    scenario = replace(
        base,
        name=f"snapshot-{group.group_id}-{what_if}",
        description=described,
        members=len(group.members),
        protocol=group.protocol,
        assignor=None,
        static=static,
        topics=dict(snapshot.partitions),
        data=DataConfig(records_per_second=rate),
        broker={**base.broker, **broker},
        actions=actions,
    )
    if static_count == 0:
        static_line = "no member has a group.instance.id"
    elif static_count == len(group.members):
        static_line = "every member has a group.instance.id (KIP-345)"
    else:
        static_line = (
            f"{static_count} of {len(group.members)} members have a group.instance.id: "
            f"written {'static' if static else 'dynamic'}, the scenario has one kind"
        )
    header = [
        f"regroup snapshot of {group.type} group '{group.group_id}' on {snapshot.bootstrap}, "
        f"{snapshot.taken_at}",
        f"read through {snapshot.library} ({group.described_by}, Metadata, OffsetFetch, "
        "ListOffsets, DescribeConfigs)",
        "",
        f"observed: state {group.state}, assignor {group.assignor or '(not reported)'}, "
        f"coordinator {group.coordinator or '(not reported)'}",
        *(f"observed: {note}" for note in group.notes),
        f"observed: [group] members = {len(group.members)}",
        *_member_lines(snapshot),
        _protocol_line(group.type, group.assignor, group.protocol),
        f"observed: [group] static = {str(static).lower()} ({static_line})",
        (
            f"not written: [group] assignor = {group.assignor!r}: compare runs each protocol "
            "with its own default assignor; add it under [group] for simulate"
            if group.assignor
            else "not written: [group] assignor: the broker did not report it"
        ),
        *(
            f"observed: [topics] {topic} = {count} (Metadata)"
            for topic, count in sorted(snapshot.partitions.items())
        ),
        *_rate_lines(snapshot, rate, mean),
        *config_lines,
        "assumed: [data] produce_interval_ms, processing_us_per_record, max_poll_records, "
        "restore_ms, idle_poll_ms: regroup's defaults (no admin API shows them)",
        "assumed: [network]: regroup's defaults (1 ms one way, no loss)",
        "assumed: [consumer] the consumers' own configs (session.timeout.ms, "
        "max.poll.interval.ms ...): Kafka's defaults, no admin API shows them"
        + (f"; from '{what_if}': {_configs(base.consumer)}" if base.consumer else ""),
        f"assumed: [[actions]] and timing from the built-in scenario '{what_if}': "
        f"{base.description}",
    ]
    if group.group_epoch is not None:
        header.insert(
            4,
            f"observed: group epoch {group.group_epoch}, target assignment epoch "
            f"{group.assignment_epoch} (ConsumerGroupDescribe through regroup's wire client: "
            "librdkafka does not surface the epochs)",
        )
    return scenario, header


def _protocol_line(kind: str, assignor: str, protocol: str) -> str:
    if kind == "consumer":
        return f"observed: [group] protocol = {protocol!r} (a KIP-848 consumer group)"
    if not assignor:
        return (
            f"assumed: [group] protocol = {protocol!r} (a classic group whose assignor the "
            "broker did not report: eager, as on Kafka's default range)"
        )
    return (
        f"observed: [group] protocol = {protocol!r} (a classic group on {assignor}: "
        "cooperative on cooperative-sticky, else eager)"
    )


def _configs(configs: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in configs.items())
