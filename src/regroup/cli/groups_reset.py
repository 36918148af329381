"""``regroup groups reset-offsets``: Kafka's ``kafka-consumer-groups.sh --reset-offsets``.

As ``ConsumerGroupCommand.ConsumerGroupService.resetOffsets`` (Kafka 4.x) does it:

1. Groups: ``--group`` (repeatable) or ``--all-groups`` (every listed group).
2. Only an inactive group is reset: a group whose state is ``Empty``, or that does not
   exist (Kafka's ``Dead``). Any other is refused with Kafka's message ("Assignments can
   only be reset if the group 'g' is inactive, but the current state is Stable.") and
   contributes no rows; the other groups go on.
3. Scope (``getPartitionsToReset``): ``--all-topics`` is every partition the group has
   committed; ``--topic t`` every partition of ``t`` (from Metadata),
   ``--topic t:0,2`` those partitions; repeatable.
4. Scenario (``prepareOffsetsToReset``), exactly one: ``--to-earliest`` and
   ``--to-latest`` (ListOffsets earliest / latest), ``--to-current`` (the committed
   offset, the log end where none), ``--to-offset N`` and ``--shift-by N`` (committed
   plus ``N``; a partition with no committed offset is an error), both clamped into
   [log start, log end] with Kafka's warning (``checkOffsetsRange``), and
   ``--to-datetime YYYY-MM-DDTHH:mm:SS.sss[zone]`` (ListOffsets by timestamp; no zone is
   UTC, ``Utils.getDateTime``; a partition with no record at or after it falls back to
   its log end with Kafka's "Warn: Partition P from topic T is empty." line).
5. ``--execute`` commits the offsets as ``Admin.alterConsumerGroupOffsets`` does
   (OffsetCommit with generation -1 and no member id, which the coordinator accepts
   from outside the group); ``--dry-run``, or neither (then with Kafka's "WARN: No
   action will be performed..." on stderr), only prints.
6. The table is ``printOffsetsToReset``'s: GROUP, TOPIC, PARTITION, NEW-OFFSET in columns
   of 30, 30, 10 and 15, after a blank line. Kafka's order is a hash map's; regroup's is
   by group, topic and partition.

Kafka prints its "Error:" lines on stdout; regroup prints errors and warnings on
stderr, so stdout is the table alone.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from regroup.cli.errors import UsageError

if TYPE_CHECKING:
    from regroup.server.clients.wire_client import WireClient

__all__ = ["ResetPlan", "add_options", "parse_datetime", "plan_from_args", "reset_offsets"]

#: ListOffsets' special timestamps (Kafka ``ListOffsetsRequest``).
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1

#: ``Utils.getDateTime``'s pattern: milliseconds required, an optional zone (``Z``,
#: ``+hh``, ``+hhmm``, ``+hh:mm``).
_DATETIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}(?P<zone>Z|[+-]\d{2}(:?\d{2})?)?$"
)

#: The states a group may be reset in (``resetOffsets``: "Empty" and "Dead").
INACTIVE = ("Empty", "Dead")


@dataclass(frozen=True, slots=True)
class ResetPlan:
    """What to reset to: ``scenario`` is one of ``to-earliest``, ``to-latest``,
    ``to-current``, ``to-offset``, ``shift-by``, ``to-datetime``; ``value`` its number
    (an offset, a shift, or epoch milliseconds)."""

    scenario: str
    value: int = 0
    topics: tuple[str, ...] = ()
    all_topics: bool = False
    execute: bool = False


def add_options(parser: argparse.ArgumentParser) -> None:
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--topic",
        dest="topics",
        action="append",
        default=[],
        metavar="TOPIC[:P,...]",
        help="a topic, or some of its partitions, to reset (repeatable)",
    )
    scope.add_argument(
        "--all-topics", action="store_true", help="every partition the group committed"
    )
    scenario = parser.add_mutually_exclusive_group()
    scenario.add_argument("--to-earliest", action="store_true", help="to the log start")
    scenario.add_argument("--to-latest", action="store_true", help="to the log end")
    scenario.add_argument(
        "--to-current", action="store_true", help="to the committed offset (log end if none)"
    )
    scenario.add_argument("--to-offset", type=int, metavar="N", help="to offset N")
    scenario.add_argument(
        "--shift-by", type=int, metavar="N", help="the committed offset plus N (may be negative)"
    )
    scenario.add_argument(
        "--to-datetime",
        metavar="DATETIME",
        help="the first offset at or after YYYY-MM-DDTHH:mm:SS.sss (UTC unless a zone follows)",
    )
    run = parser.add_mutually_exclusive_group()
    run.add_argument("--dry-run", action="store_true", help="only print the new offsets")
    run.add_argument("--execute", action="store_true", help="commit the new offsets")


def parse_datetime(text: str) -> int:
    """Epoch milliseconds of ``text`` as Kafka's ``Utils.getDateTime`` reads it."""
    match = _DATETIME.match(text)
    if match is None:
        raise UsageError(
            f"--to-datetime must be YYYY-MM-DDTHH:mm:SS.sss with an optional zone "
            f"(Z, +hh:mm), got {text!r}"
        )
    zone = match.group("zone")
    if zone is None:
        text += "Z"
    elif re.fullmatch(r"[+-]\d{2}", zone):
        text += ":00"
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise UsageError(f"--to-datetime {text!r}: {exc}") from None
    return int(moment.astimezone(UTC).timestamp() * 1000)


def plan_from_args(args: argparse.Namespace) -> ResetPlan:
    """The plan the options ask for; Kafka's usage errors (``checkArgs``) otherwise."""
    if not args.topics and not args.all_topics:
        raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    for topic in args.topics:
        _topic_arg(topic)  # refuse a malformed one before any request
    if args.to_earliest:
        scenario, value = "to-earliest", 0
    elif args.to_latest:
        scenario, value = "to-latest", 0
    elif args.to_current:
        scenario, value = "to-current", 0
    elif args.to_offset is not None:
        scenario, value = "to-offset", args.to_offset
    elif args.shift_by is not None:
        scenario, value = "shift-by", args.shift_by
    elif args.to_datetime is not None:
        scenario, value = "to-datetime", parse_datetime(args.to_datetime)
    else:
        raise UsageError(
            "--reset-offsets requires one of the scenarios: --to-earliest, --to-latest, "
            "--to-current, --to-offset, --shift-by, --to-datetime"
        )
    if not args.dry_run and not args.execute:
        # Kafka's warning (ConsumerGroupCommandOptions.checkArgs), on stderr as Kafka does.
        print(
            "WARN: No action will be performed as the --execute option is missing. "
            "Add --dry-run to keep this behaviour explicitly, or --execute to reset.",
            file=sys.stderr,
        )
    return ResetPlan(scenario, value, tuple(args.topics), bool(args.all_topics), bool(args.execute))


def _topic_arg(text: str) -> tuple[str, list[int] | None]:
    """``t`` or ``t:0,1`` (Kafka ``parseTopicsWithPartitions``)."""
    if ":" not in text:
        if not text:
            raise UsageError("--topic needs a topic name")
        return text, None
    parts = text.split(":")
    if len(parts) != 2 or not parts[0]:
        raise UsageError(f"Invalid topic arg '{text}', expected topic name and partitions")
    topic, listed = parts
    partitions = []
    for p in listed.split(","):
        if not p.strip().isdigit():
            raise UsageError(f"Invalid partition '{p}' specified in topic arg '{text}'")
        partitions.append(int(p))
    return topic, partitions


# -- the requests -------------------------------------------------------------------------


def _partition_counts(client: WireClient, topics: list[str]) -> dict[str, int]:
    """Metadata (v9) of ``topics``: their partition counts; an unknown topic is an error,
    as ``describeTopics`` fails with UnknownTopicOrPartitionException in Kafka's tool."""
    response = client.request(
        3,
        9,
        {
            "topics": [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        },
    )
    counts = {}
    for t in response.topics:
        if int(t.error_code.value) != 0:
            raise UsageError(f"topic '{t.name}': {t.error_code.name}")
        counts[t.name] = len(t.partitions)
    return counts


def _list_offsets(
    client: WireClient, partitions: list[tuple[str, int]], timestamp: int
) -> dict[tuple[str, int], int]:
    """ListOffsets (v7) at ``timestamp`` for each partition: its offset, ``-1`` for none."""
    if not partitions:
        return {}
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    response = client.request(
        2,
        7,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": name,
                    "partitions": [
                        {"partition_index": p, "current_leader_epoch": -1, "timestamp": timestamp}
                        for p in parts
                    ],
                }
                for name, parts in by_topic.items()
            ],
        },
    )
    found: dict[tuple[str, int], int] = {}
    for t in response.topics:
        for p in t.partitions:
            if int(p.error_code.value) != 0:
                raise UsageError(
                    f"Error getting offsets of topic partition: {t.name}-{p.partition_index} "
                    f"({p.error_code.name})"
                )
            found[(t.name, p.partition_index)] = p.offset
    return found


def _commit(client: WireClient, group_id: str, offsets: dict[tuple[str, int], int]) -> None:
    """OffsetCommit (v8) from outside the group, as ``alterConsumerGroupOffsets`` sends it."""
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append((partition, offset))
    response = client.request(
        8,
        8,
        {
            "group_id": group_id,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": p,
                            "committed_offset": o,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                        for p, o in parts
                    ],
                }
                for topic, parts in by_topic.items()
            ],
        },
    )
    failed = sorted(
        f"{t.name}-{p.partition_index}: {p.error_code.name}"
        for t in response.topics
        for p in t.partitions
        if int(p.error_code.value) != 0
    )
    if failed:
        raise UsageError(f"resetting group '{group_id}' failed: {', '.join(failed)}")


# -- the plan -----------------------------------------------------------------------------


def _partitions_to_reset(
    client: WireClient, plan: ResetPlan, committed: dict[tuple[str, int], int]
) -> list[tuple[str, int]]:
    if plan.all_topics:
        return sorted(committed)
    chosen: list[tuple[str, int]] = []
    whole = []
    for text in plan.topics:
        topic, partitions = _topic_arg(text)
        if partitions is None:
            whole.append(topic)
        else:
            chosen.extend((topic, p) for p in partitions)
    if whole:
        for topic, count in _partition_counts(client, whole).items():
            chosen.extend((topic, p) for p in range(count))
    return sorted(set(chosen))


def _clamped(
    client: WireClient, requested: dict[tuple[str, int], int]
) -> dict[tuple[str, int], int]:
    """Kafka ``checkOffsetsRange``: above the log end is the log end, below the log start
    the log start, each with Kafka's warning."""
    starts = _list_offsets(client, sorted(requested), EARLIEST_TIMESTAMP)
    ends = _list_offsets(client, sorted(requested), LATEST_TIMESTAMP)
    out = {}
    for (topic, partition), offset in requested.items():
        end, start = ends[(topic, partition)], starts[(topic, partition)]
        if offset > end:
            print(
                f"WARN: New offset ({offset}) is higher than latest offset for topic "
                f"partition {topic}-{partition}. Value will be set to {end}",
                file=sys.stderr,
            )
            offset = end
        elif offset < start:
            print(
                f"WARN: New offset ({offset}) is lower than earliest offset for topic "
                f"partition {topic}-{partition}. Value will be set to {start}",
                file=sys.stderr,
            )
            offset = start
        out[(topic, partition)] = offset
    return out


def _new_offsets(
    client: WireClient,
    plan: ResetPlan,
    partitions: list[tuple[str, int]],
    committed: dict[tuple[str, int], int],
) -> dict[tuple[str, int], int]:
    scenario = plan.scenario
    if scenario == "to-earliest":
        return _list_offsets(client, partitions, EARLIEST_TIMESTAMP)
    if scenario == "to-latest":
        return _list_offsets(client, partitions, LATEST_TIMESTAMP)
    if scenario == "to-offset":
        return _clamped(client, dict.fromkeys(partitions, plan.value))
    if scenario == "shift-by":
        missing = [tp for tp in partitions if tp not in committed]
        if missing:
            topic, partition = missing[0]
            raise UsageError(
                f"Cannot shift offset for partition {topic}-{partition} since there is no "
                "current committed offset"
            )
        return _clamped(client, {tp: committed[tp] + plan.value for tp in partitions})
    if scenario == "to-current":
        ends = _list_offsets(client, [tp for tp in partitions if tp not in committed], -1)
        return {tp: committed[tp] if tp in committed else ends[tp] for tp in partitions}
    assert scenario == "to-datetime", scenario
    found = _list_offsets(client, partitions, plan.value)
    empty = [tp for tp in partitions if found[tp] < 0]
    for topic, partition in empty:
        print(
            f"Warn: Partition {partition} from topic {topic} is empty. "
            "Falling back to latest known offset.",
            file=sys.stderr,
        )
    found.update(_list_offsets(client, empty, LATEST_TIMESTAMP))
    return found


def reset_offsets(
    client: WireClient,
    plan: ResetPlan,
    groups: list[str],
    states: dict[str, str],
    committed_offsets: Callable[[WireClient, str], dict[tuple[str, int], dict[str, int]]],
) -> dict[str, dict[tuple[str, int], int]]:
    """Each group's new offsets (committed when ``plan.execute``); ``states`` is each
    listed group's state (a group not in it does not exist: Kafka's ``Dead``);
    ``committed_offsets`` reads a group's committed offsets (OffsetFetch)."""
    result: dict[str, dict[tuple[str, int], int]] = {}
    for group_id in groups:
        state = states.get(group_id, "Dead")
        if state not in INACTIVE:
            print(
                f"Error: Assignments can only be reset if the group '{group_id}' is inactive, "
                f"but the current state is {state}.",
                file=sys.stderr,
            )
            result[group_id] = {}
            continue
        committed = {
            tp: c["offset"]
            for tp, c in committed_offsets(client, group_id).items()
            if c["offset"] >= 0
        }
        partitions = _partitions_to_reset(client, plan, committed)
        offsets = _new_offsets(client, plan, partitions, committed)
        if plan.execute and offsets:
            _commit(client, group_id, offsets)
        result[group_id] = offsets
    return result


def print_offsets_to_reset(result: dict[str, dict[tuple[str, int], int]]) -> None:
    """Kafka ``printOffsetsToReset``: ``%n%-30s %-30s %-10s %-15s`` per line (header first
    when any group was asked for), then a newline; trailing blanks are not printed."""

    def line(cells: list[Any]) -> str:
        text = f"{cells[0]!s:<30} {cells[1]!s:<30} {cells[2]!s:<10} {cells[3]!s:<15}"
        return "\n" + text.rstrip()

    out = []
    if result:
        out.append(line(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]))
    for group_id in sorted(result):
        for (topic, partition), offset in sorted(result[group_id].items()):
            out.append(line([group_id, topic, partition, offset]))
    print("".join(out))
