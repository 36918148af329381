"""``regroup groups list|describe``: the groups of a running server, over the wire.

Like Kafka's ``kafka-consumer-groups.sh --list / --describe``
(``org.apache.kafka.tools.consumer.group.ConsumerGroupCommand``), for both group
types: ListGroups (v5, with the group type of KIP-848), then DescribeGroups
(v5) for classic groups and ConsumerGroupDescribe (v1) for consumer groups,
OffsetFetch (v8) and ListOffsets (v7) for committed offsets and lag, and
FindCoordinator (v4) for the coordinator column.

``describe`` has Kafka's three views and columns: one row per partition by
default (``--offsets``: GROUP, TOPIC, PARTITION, CURRENT-OFFSET, LOG-END-OFFSET,
LAG, CONSUMER-ID, HOST, CLIENT-ID; the assigned partitions of each member, then
the committed partitions nobody owns), one row per member (``--members``;
``--verbose`` adds the current and target epochs and assignments of KIP-848)
and one row per group (``--state``; ``--verbose`` adds the group epoch and the
target assignment epoch). Kafka's messages for an empty, a rebalancing and a
missing group (``shouldPrintMemberState``) go to stderr (Kafka prints them to
stdout, mixed with the rows); a missing group leaves the exit status 0, as
Kafka's tool does (same message, same exit status).

Classic groups: DescribeGroups carries no generation, so the CURRENT-EPOCH of a
classic member is the generation it reported in its Subscription (v2+, the
cooperative clients send it; ``-`` otherwise, where Kafka always prints ``-``);
the assignment is decoded from the member's Assignment bytes (ConsumerProtocol).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from regroup.classic.protocol import decode_assignment, decode_subscription
from regroup.cli.errors import UsageError
from regroup.model.wire import WireFormatError

if TYPE_CHECKING:  # the wire client (and kio) load only when a group command runs
    from regroup.server.clients.wire_client import WireClient
    from regroup.server.security.client_login import ClientSecurity

__all__ = ["add_parser", "bootstrap_servers", "committed_offsets", "connect", "kafka_words", "run"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "groups",
        help="list or describe the groups of a running regroup server",
        description="List or describe the consumer groups (classic and consumer) of a server.",
    )
    _connection_options(parser, defaults=True)
    # The options are also taken after the action (``groups list --bootstrap-server H:P``,
    # as kafka-consumer-groups.sh users type them); there they override the ones before.
    after = argparse.ArgumentParser(add_help=False)
    _connection_options(after, defaults=False)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    lister = actions.add_parser(
        "list",
        help="list the groups",
        parents=[after],
        description=(
            "List the groups: their names, one a line, as kafka-consumer-groups.sh --list; "
            "--state and --type add those columns and filter by them."
        ),
    )
    lister.add_argument(
        "--state",
        nargs="?",
        const="",
        default=None,
        metavar="STATES",
        help="add the STATE column; with comma-separated states, only groups in them",
    )
    lister.add_argument(
        "--type",
        nargs="?",
        const="",
        default=None,
        metavar="TYPES",
        help="add the TYPE column; with comma-separated types (classic, consumer), only those",
    )
    lister.add_argument("--json", action="store_true", help="print JSON")
    deleter = actions.add_parser(
        "delete",
        help="delete empty groups and their committed offsets",
        parents=[after],
        description="Delete groups (DeleteGroups), as kafka-consumer-groups.sh --delete.",
    )
    _group_selection(deleter)
    resetter = actions.add_parser(
        "reset-offsets",
        help="reset the committed offsets of inactive groups",
        parents=[after],
        description=(
            "Reset committed offsets as kafka-consumer-groups.sh --reset-offsets: a scope "
            "(--topic or --all-topics), one scenario, and --dry-run (the default) or --execute."
        ),
    )
    _group_selection(resetter)
    from regroup.cli.groups_reset import add_options

    add_options(resetter)
    describer = actions.add_parser(
        "describe",
        help="describe groups",
        parents=[after],
        description=(
            "Describe groups like kafka-consumer-groups.sh --describe: by default one row per "
            "partition (--offsets); --members for one row per member, --state for one row "
            "per group; --verbose adds the epochs and assignments (and, with --offsets, the "
            "committed leader epoch)."
        ),
    )
    _group_selection(describer, default_all=True)
    view = describer.add_mutually_exclusive_group()
    view.add_argument(
        "--offsets", action="store_true", help="one row per partition (the default view)"
    )
    view.add_argument("--members", action="store_true", help="one row per member")
    view.add_argument("--state", action="store_true", help="one row per group")
    describer.add_argument(
        "--verbose", action="store_true", help="more columns (epochs, assignments)"
    )
    describer.add_argument("--json", action="store_true", help="print JSON (every view's data)")
    parser.set_defaults(run=run)


def _group_selection(parser: argparse.ArgumentParser, *, default_all: bool = False) -> None:
    parser.add_argument(
        "group", nargs="*", help="group ids" + (" (default: all)" if default_all else "")
    )
    parser.add_argument(
        "--group",
        dest="groups",
        action="append",
        default=[],
        metavar="GROUP",
        help="a group id, as kafka-consumer-groups.sh takes it (repeatable)",
    )
    parser.add_argument("--all-groups", action="store_true", help="every group of the server")


#: Kafka's action options, and the action each is here (``kafka_words``).
KAFKA_ACTIONS = {
    "--list": "list",
    "--describe": "describe",
    "--delete": "delete",
    "--reset-offsets": "reset-offsets",
}


def kafka_words(words: list[str]) -> list[str]:
    """``groups`` words as kafka-consumer-groups.sh spells them (``groups --bootstrap-server
    H:P --reset-offsets --group g ...``) as regroup's (``groups reset-offsets ...``): the
    action option becomes the action word. Words already naming an action are kept."""
    if "groups" not in words:
        return words
    at = words.index("groups")
    rest = words[at + 1 :]
    if any(w in KAFKA_ACTIONS.values() for w in rest):
        return words
    flags = [w for w in rest if w in KAFKA_ACTIONS]
    if len(flags) != 1:
        if len(flags) > 1:
            raise UsageError(
                "Command must include exactly one action: --list, --describe, --delete, "
                "--reset-offsets"
            )
        return words
    (flag,) = flags
    rest.remove(flag)
    return [*words[: at + 1], KAFKA_ACTIONS[flag], *rest]


def _connection_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    parser.add_argument(
        "--bootstrap-server",
        default="127.0.0.1:9092" if defaults else argparse.SUPPRESS,
        help="HOST:PORT of the server (default: 127.0.0.1:9092)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0 if defaults else argparse.SUPPRESS,
        help="socket timeout in seconds (default: 10)",
    )
    parser.add_argument(
        "--command-config",
        type=Path,
        default=None if defaults else argparse.SUPPRESS,
        metavar="PATH",
        help="client properties: security.protocol, sasl.mechanism, sasl.username, "
        "sasl.password, ssl.ca.location (as kafka-consumer-groups.sh --command-config)",
    )


def bootstrap_servers(text: str) -> list[tuple[str, int]]:
    """``--bootstrap-server``: one ``HOST:PORT`` or a comma-separated list of them, as
    Kafka's ``bootstrap.servers`` (``ClientUtils.parseAndValidateAddresses``); empty
    entries between commas are skipped, as Kafka trims them."""
    servers = []
    for entry in (e.strip() for e in str(text).split(",")):
        if not entry:
            continue
        host, sep, port = entry.rpartition(":")
        if not sep or not port.isdigit() or not 0 < int(port) < 65536:
            raise UsageError(
                f"--bootstrap-server must be HOST:PORT (or a comma-separated list of them) "
                f"with a port 1-65535, got {text!r}"
            )
        servers.append((host.strip("[]") or "127.0.0.1", int(port)))
    if not servers:
        raise UsageError(f"--bootstrap-server names no HOST:PORT, got {text!r}")
    return servers


def connect(args: argparse.Namespace) -> WireClient:
    """A client of the first server of ``--bootstrap-server`` that accepts a connection
    (Kafka's clients bootstrap from any one of the list), logged in as
    ``--command-config`` says."""
    from regroup.server.clients.wire_client import WireClient

    servers = bootstrap_servers(args.bootstrap_server)
    timeout = args.timeout
    if not timeout > 0 or timeout == float("inf"):  # also refuses NaN
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout}")
    security = _client_security(args.command_config)
    client = None
    failures = []
    for host, port in servers:
        try:
            client = WireClient(host, port, timeout=timeout, ssl_context=security.ssl_context())
            break
        except OSError as exc:
            failures.append(f"{host}:{port}: {exc}")
    if client is None:
        raise UsageError(f"cannot connect to {args.bootstrap_server}: {'; '.join(failures)}")
    if security.sasl:
        from regroup.server.clients.wire_client import WireClientError
        from regroup.server.security.client_login import LoginError, login

        assert security.username is not None and security.password is not None
        try:
            login(client, security.mechanism, security.username, security.password)
        except (LoginError, WireClientError, OSError) as exc:
            client.close()
            raise UsageError(f"server {args.bootstrap_server}: {exc}") from None
    return client


def _client_security(path: Path | None) -> ClientSecurity:
    from regroup.server.security.client_login import ClientSecurity, client_properties
    from regroup.server.security.config import parse_properties

    if path is None:
        return ClientSecurity()
    try:
        return client_properties(parse_properties(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read --command-config {path}: {exc}") from None
    except ValueError as exc:
        raise UsageError(f"--command-config {path}: {exc}") from None


def list_groups(client: WireClient) -> list[dict[str, str]]:
    response = client.request(16, 5, {"states_filter": (), "types_filter": ()})
    return sorted(
        (
            {
                "group_id": g.group_id,
                "type": g.group_type,
                "state": g.group_state,
                "protocol_type": g.protocol_type,
            }
            for g in response.groups
        ),
        key=lambda g: g["group_id"],
    )


def committed_offsets(client: WireClient, group_id: str) -> dict[tuple[str, int], dict[str, int]]:
    """OffsetFetch (v8) of every partition the group committed: offset and leader epoch."""
    fetched = client.request(
        9, 8, {"groups": [{"group_id": group_id, "topics": None}], "require_stable": False}
    )
    return {
        (topic.name, p.partition_index): {
            "offset": p.committed_offset,
            "leader_epoch": p.committed_leader_epoch,
        }
        for group in fetched.groups
        for topic in group.topics
        for p in topic.partitions
    }


def _log_end_offsets(
    client: WireClient, partitions: set[tuple[str, int]]
) -> dict[tuple[str, int], int]:
    """ListOffsets (v7, latest) of ``partitions``; a partition the server does not know
    is left out (its LOG-END-OFFSET and LAG print as ``-``, as in Kafka's tool)."""
    if not partitions:
        return {}
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        topics.setdefault(topic, []).append(partition)
    ends = client.request(
        2,
        7,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": name,
                    "partitions": [
                        {"partition_index": p, "current_leader_epoch": -1, "timestamp": -1}
                        for p in parts
                    ],
                }
                for name, parts in topics.items()
            ],
        },
    )
    return {
        (t.name, p.partition_index): p.offset
        for t in ends.topics
        for p in t.partitions
        if int(p.error_code.value) == 0 and p.offset >= 0
    }


def _partitions_text(pairs: list[tuple[str, int]]) -> str:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in pairs:
        by_topic.setdefault(topic, []).append(partition)
    return ",".join(f"{t}:{sorted(ps)}".replace(" ", "") for t, ps in sorted(by_topic.items()))


def _kafka_assignment_text(pairs: list[list[Any]]) -> str:
    """Kafka's ``getAssignmentString``: ``topic:0,1;other:2``, topics sorted; ``-`` if none."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in pairs:
        by_topic.setdefault(topic, []).append(partition)
    text = ";".join(
        f"{t}:" + ",".join(str(p) for p in sorted(ps)) for t, ps in sorted(by_topic.items())
    )
    return text or MISSING


def _describe_consumer(client: WireClient, group_id: str) -> dict[str, Any]:
    response = client.request(
        69, 1, {"group_ids": (group_id,), "include_authorized_operations": False}
    )
    (g,) = response.groups
    members = []
    for m in g.members:
        current = [
            [tp.topic_name, p] for tp in m.assignment.topic_partitions for p in tp.partitions
        ]
        target = [
            [tp.topic_name, p] for tp in m.target_assignment.topic_partitions for p in tp.partitions
        ]
        members.append(
            {
                "member_id": m.member_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "instance_id": m.instance_id,
                # KIP-1099's member type: a classic member inside a consumer group is one
                # still speaking JoinGroup/SyncGroup during an online migration.
                "protocol": {0: "classic", 1: "consumer"}.get(m.member_type, "unknown"),
                "assignment": _partitions_text([(t, p) for t, p in current]),
                "target_assignment": _partitions_text([(t, p) for t, p in target]),
                "partitions": sorted(current),
                "target_partitions": sorted(target),
            }
        )
    return {
        "group_id": g.group_id,
        "type": "consumer",
        "error_code": int(g.error_code.value),
        "state": g.group_state,
        "group_epoch": g.group_epoch,
        "assignment_epoch": g.assignment_epoch,
        "assignor": g.assignor_name,
        "members": members,
    }


def _describe_classic(client: WireClient, group_id: str) -> dict[str, Any]:
    response = client.request(
        15, 5, {"groups": (group_id,), "include_authorized_operations": False}
    )
    (g,) = response.groups
    members = []
    for m in g.members:
        generation: int | None = None
        assignment = ""
        partitions: list[list[Any]] = []
        if g.protocol_type == "consumer":
            try:
                sub = decode_subscription(m.member_metadata) if m.member_metadata else None
                if sub is not None and sub.generation_id >= 0:
                    generation = sub.generation_id
                if m.member_assignment:
                    decoded = decode_assignment(m.member_assignment)
                    partitions = sorted([tp.topic, tp.partition] for tp in decoded.partitions)
                    assignment = _partitions_text([(t, p) for t, p in partitions])
            except WireFormatError:
                assignment = "<undecodable>"
        members.append(
            {
                "member_id": m.member_id,
                "generation": generation,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "instance_id": m.group_instance_id,
                "assignment": assignment,
                "partitions": partitions,
            }
        )
    return {
        "group_id": g.group_id,
        "type": "classic",
        "error_code": int(g.error_code.value),
        "state": g.group_state,
        "protocol_type": g.protocol_type,
        "assignor": g.protocol_data,
        "members": members,
    }


def _exists(group: dict[str, Any]) -> bool:
    """Kafka's tool treats a group described as ``Dead`` (DescribeGroups' answer for an id
    the coordinator does not know) or GROUP_ID_NOT_FOUND as one that does not exist."""
    return group["error_code"] == 0 and group["state"] not in ("Dead", "")


def _partition_rows(
    group: dict[str, Any], committed: dict[Any, Any], ends: dict[Any, int]
) -> list[dict[str, Any]]:
    """One row per partition, as ``ConsumerGroupCommand.collectGroupsOffsets`` builds them:
    the assigned partitions of each member (members with the most partitions first), then
    the partitions the group committed that no member owns (consumer ``-``)."""
    rows: list[dict[str, Any]] = []
    owned: set[tuple[str, int]] = set()
    members = [m for m in group["members"] if m["partitions"]]
    members.sort(key=lambda m: -len(m["partitions"]))
    for member in members:
        for topic, partition in member["partitions"]:
            owned.add((topic, partition))
            rows.append(_partition_row(topic, partition, committed, ends, member))
    for topic, partition in sorted(set(committed) - owned):
        rows.append(_partition_row(topic, partition, committed, ends, None))
    return rows


def _partition_row(
    topic: str,
    partition: int,
    committed: dict[Any, Any],
    ends: dict[Any, int],
    member: dict[str, Any] | None,
) -> dict[str, Any]:
    commit = committed.get((topic, partition))
    offset = commit["offset"] if commit is not None and commit["offset"] >= 0 else None
    leader_epoch = (
        commit["leader_epoch"] if commit is not None and commit["leader_epoch"] >= 0 else None
    )
    log_end = ends.get((topic, partition))
    return {
        "topic": topic,
        "partition": partition,
        "current_offset": offset,
        "leader_epoch": leader_epoch,
        "log_end_offset": log_end,
        # Kafka's getLag: log end minus the committed offset, when both are known.
        "lag": None if offset is None or log_end is None else log_end - offset,
        "consumer_id": None if member is None else member["member_id"],
        "host": None if member is None else member["client_host"],
        "client_id": None if member is None else member["client_id"],
    }


def describe_groups(client: WireClient, wanted: list[str]) -> list[dict[str, Any]]:
    listed = {g["group_id"]: g for g in list_groups(client)}
    coordinator = _coordinator(client)
    out = []
    for group_id in wanted or sorted(listed):
        kind = listed.get(group_id, {}).get("type", "classic")
        described = (
            _describe_consumer(client, group_id)
            if kind == "consumer"
            else _describe_classic(client, group_id)
        )
        described["exists"] = _exists(described)
        described["coordinator"] = coordinator
        committed = committed_offsets(client, group_id) if described["exists"] else {}
        assigned = {(t, p) for m in described["members"] for t, p in m["partitions"]}
        ends = _log_end_offsets(client, assigned | set(committed))
        described["partitions"] = _partition_rows(described, committed, ends)
        # ``offsets`` (the committed partitions with log end and lag) as before, for --json.
        described["offsets"] = [
            {
                "topic": r["topic"],
                "partition": r["partition"],
                "committed": r["current_offset"],
                "log_end": -1 if r["log_end_offset"] is None else r["log_end_offset"],
                "lag": None if r["lag"] is None else max(0, r["lag"]),
            }
            for r in sorted(described["partitions"], key=lambda r: (r["topic"], r["partition"]))
            if r["current_offset"] is not None
        ]
        out.append(described)
    return out


def _coordinator(client: WireClient) -> str:
    """``HOST:PORT  (ID)`` of the coordinator, from FindCoordinator (v4), as Kafka prints it."""
    response = client.request(10, 4, {"key_type": 0, "coordinator_keys": [""]})
    (c,) = response.coordinators
    return f"{c.host}:{c.port}  ({c.node_id})"


# -- printing, in the layout of Kafka's ConsumerGroupCommand -----------------------------------

#: Kafka's ``MISSING_COLUMN_VALUE``.
MISSING = "-"


def _cell(value: object) -> str:
    return MISSING if value is None or value == "" else str(value)


def _print_columns(header: list[str], rows: list[list[str]], minimum: list[int]) -> None:
    """Left-aligned columns, each as wide as its widest cell and at least Kafka's width
    for it (15 for names and offsets, 10 for PARTITION), one space apart; the last column
    is not padded (Kafka's ``%-Ns ... %s`` formats)."""
    widths = [
        max([minimum[i], len(header[i])] + [len(r[i]) for r in rows]) for i in range(len(header))
    ]
    for row in [header, *rows]:
        cells = [c.ljust(w) for c, w in zip(row[:-1], widths[:-1], strict=True)]
        print(" ".join([*cells, row[-1]]).rstrip())


def _warn_state(group: dict[str, Any]) -> bool:
    """Kafka's ``shouldPrintMemberState``: the message for an empty or rebalancing group on
    stderr; ``False`` for a group that does not exist (its error is printed by ``run``)."""
    if not group["exists"]:
        return False
    state = group["state"]
    if state == "Empty":
        print(f"Consumer group '{group['group_id']}' has no active members.", file=sys.stderr)
    elif state in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"):
        print(f"Warning: Consumer group '{group['group_id']}' is rebalancing.", file=sys.stderr)
    return True


def _print_offsets(group: dict[str, Any], verbose: bool) -> None:
    rows = group["partitions"]
    header = ["GROUP", "TOPIC", "PARTITION"]
    header += ["LEADER-EPOCH"] if verbose else []
    header += ["CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    minimum = [15, 15, 10] + ([15] if verbose else []) + [15, 15, 15, 15, 15, 0]
    table = []
    for r in rows:
        cells = [group["group_id"], r["topic"], str(r["partition"])]
        cells += [_cell(r["leader_epoch"])] if verbose else []
        cells += [
            _cell(r["current_offset"]),
            _cell(r["log_end_offset"]),
            _cell(r["lag"]),
            _cell(r["consumer_id"]),
            _cell(r["host"]),
            _cell(r["client_id"]),
        ]
        table.append(cells)
    _print_columns(header, table, minimum)


def _member_epochs(group: dict[str, Any], member: dict[str, Any]) -> tuple[str, str, str]:
    """CURRENT-EPOCH, TARGET-EPOCH and TARGET-ASSIGNMENT of a member.

    Consumer groups: the member epoch and the group's target assignment epoch, as Kafka.
    Classic groups: Kafka prints ``-``; regroup fills CURRENT-EPOCH with the generation the
    member reported in its Subscription (v2+), the target being the current assignment."""
    if group["type"] == "consumer":
        return (
            str(member["member_epoch"]),
            str(group["assignment_epoch"]),
            _kafka_assignment_text(member["target_partitions"]),
        )
    return _cell(member["generation"]), MISSING, MISSING


def _print_members(group: dict[str, Any], verbose: bool) -> None:
    members = group["members"]
    with_instance = any(m["instance_id"] for m in members)
    protocols = {m.get("protocol") for m in members}
    migrating = {"classic", "consumer"} <= protocols
    header = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if with_instance else [])
    header += ["HOST", "CLIENT-ID", "#PARTITIONS"]
    minimum = [15, 15] + ([17] if with_instance else []) + [15, 15, 15]
    if verbose:
        header += ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
        minimum += [15, 20, 15, 20]
        if migrating:
            header.append("UPGRADED")
            minimum.append(0)
    table = []
    for m in members:
        cells = [group["group_id"], m["member_id"]]
        cells += [_cell(m["instance_id"])] if with_instance else []
        cells += [_cell(m["client_host"]), _cell(m["client_id"]), str(len(m["partitions"]))]
        if verbose:
            current_epoch, target_epoch, target = _member_epochs(group, m)
            cells += [current_epoch, _kafka_assignment_text(m["partitions"]), target_epoch, target]
            if migrating:
                cells.append("true" if m["protocol"] == "consumer" else "false")
        table.append(cells)
    minimum[-1] = 0
    _print_columns(header, table, minimum)


def _print_state(group: dict[str, Any], verbose: bool) -> None:
    header = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE"]
    minimum = [15, 25, 20, 20]
    row = [group["group_id"], group["coordinator"], _cell(group["assignor"]), group["state"]]
    if verbose:
        header += ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
        minimum += [15, 25]
        consumer = group["type"] == "consumer"
        row += [
            str(group["group_epoch"]) if consumer else MISSING,
            str(group["assignment_epoch"]) if consumer else MISSING,
        ]
    header.append("#MEMBERS")
    minimum.append(0)
    row.append(str(len(group["members"])))
    _print_columns(header, [row], minimum)


def _print_listing(groups: list[dict[str, str]], with_type: bool, with_state: bool) -> None:
    """Kafka ``printGroupInfo``: GROUP padded to its longest name (at least 15) plus 10,
    then TYPE (``Classic``, ``Consumer``) and STATE in columns of 20."""
    width = max([15, *(len(g["group_id"]) for g in groups)]) + 10
    rows = [["GROUP"] + (["TYPE"] if with_type else []) + (["STATE"] if with_state else [])]
    for g in groups:
        row = [g["group_id"]]
        row += [g["type"].capitalize()] if with_type else []
        row += [g["state"]] if with_state else []
        rows.append(row)
    for row in rows:
        print((row[0].ljust(width) + "".join(f" {c:<20}" for c in row[1:])).rstrip())


def _filter(values: str | None, known: tuple[str, ...], what: str) -> set[str]:
    """Comma-separated ``--state``/``--type`` values, case-insensitive (Kafka's
    ``consumerGroupStatesFromString``/``consumerGroupTypesFromString``)."""
    if not values:
        return set()
    wanted = {v.strip().lower() for v in values.split(",")}
    unknown = sorted(wanted - {k.lower() for k in known})
    if unknown:
        raise UsageError(f"Invalid {what} list '{values}'. Valid {what}s are: {', '.join(known)}")
    return wanted


#: The group states Kafka's ``--list --state`` accepts (``GroupState``, both protocols).
GROUP_STATES = (
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
    "Empty",
    "Assigning",
    "Reconciling",
)


def _list(client: WireClient, args: argparse.Namespace) -> None:
    states = _filter(args.state, GROUP_STATES, "state")
    types = _filter(args.type, ("classic", "consumer"), "type")
    groups = [
        g
        for g in list_groups(client)
        if (not states or g["state"].lower() in states) and (not types or g["type"] in types)
    ]
    if args.json:
        print(json.dumps(groups))
    elif args.state is None and args.type is None:
        for g in groups:  # Kafka's --list: the bare names, one a line
            print(g["group_id"])
    else:
        _print_listing(groups, args.type is not None, args.state is not None)


def _selected(client: WireClient, args: argparse.Namespace) -> list[str]:
    """The groups ``--group``/positional ids or ``--all-groups`` name (Kafka requires one)."""
    named = list(dict.fromkeys([*args.group, *args.groups]))
    if args.all_groups:
        if named:
            raise UsageError("--all-groups takes no group ids")
        return [g["group_id"] for g in list_groups(client)]
    if not named:
        raise UsageError(f"groups {args.action} takes one of these options: --group, --all-groups")
    return named


def delete_groups(client: WireClient, group_ids: list[str]) -> dict[str, str | None]:
    """DeleteGroups (v2): each group's error name, ``None`` for a deleted one."""
    from regroup.model.errors import ErrorCode

    if not group_ids:
        return {}
    response = client.request(42, 2, {"groups_names": group_ids})
    return {
        r.group_id: None if int(r.error_code.value) == 0 else ErrorCode(r.error_code.value).name
        for r in response.results
    }


#: Kafka's exception and message for each DeleteGroups error (``Errors``), as the tool
#: prints the cause of a group that could not be deleted.
_DELETE_ERRORS = {
    "NON_EMPTY_GROUP": "GroupNotEmptyException: The group is not empty.",
    "GROUP_ID_NOT_FOUND": "GroupIdNotFoundException: The group id does not exist.",
    "INVALID_GROUP_ID": "InvalidGroupIdException: The configured groupId is invalid.",
    "GROUP_AUTHORIZATION_FAILED": "GroupAuthorizationException: Group authorization failed.",
}


def _print_deleted(result: dict[str, str | None]) -> bool:
    """Kafka ``deleteGroups``' messages; ``False`` when some group was not deleted. The
    failures go to stderr (Kafka prints them to stdout), the successes to stdout."""
    deleted = [g for g, error in result.items() if error is None]
    failed = {g: error for g, error in result.items() if error is not None}
    quoted = ", ".join(f"'{g}'" for g in deleted)
    if not failed:
        print(f"Deletion of requested consumer groups ({quoted}) was successful.")
        return True
    print("Error: Deletion of some consumer groups failed:", file=sys.stderr)
    for group_id, error in failed.items():
        cause = _DELETE_ERRORS.get(error, error)
        print(
            f"* Group '{group_id}' could not be deleted due to: "
            f"org.apache.kafka.common.errors.{cause}",
            file=sys.stderr,
        )
    if deleted:
        print(f"These consumer groups were deleted successfully: {quoted}")
    return False


def run(args: argparse.Namespace) -> int:
    from regroup.server.clients.wire_client import WireClientError

    try:
        with connect(args) as client:
            if args.action == "list":
                _list(client, args)
                return 0
            if args.action == "delete":
                _print_deleted(delete_groups(client, _selected(client, args)))
                return 0
            if args.action == "reset-offsets":
                from regroup.cli.groups_reset import (
                    plan_from_args,
                    print_offsets_to_reset,
                    reset_offsets,
                )

                plan = plan_from_args(args)
                wanted = _selected(client, args)
                states = {g["group_id"]: g["state"] for g in list_groups(client)}
                result = reset_offsets(client, plan, wanted, states, committed_offsets)
                print_offsets_to_reset(result)
                return 0
            wanted = [] if args.all_groups else list(dict.fromkeys([*args.group, *args.groups]))
            described = describe_groups(client, wanted)
    except (WireClientError, OSError) as exc:
        raise UsageError(f"server {args.bootstrap_server}: {exc}") from None
    if args.json:
        print(json.dumps(described))
    else:
        printed = False
        for group in described:
            if not _warn_state(group):
                continue
            if args.members:
                view = _print_members
            elif args.state:
                view = _print_state
            else:
                view = _print_offsets
                if not group["partitions"]:
                    continue  # Kafka prints nothing for a group with no partition to show
            if printed:
                print()
            view(group, args.verbose)
            printed = True
    sys.stdout.flush()
    missing = [g["group_id"] for g in described if not g["exists"]]
    for group_id in missing:
        # Kafka's text (ConsumerGroupCommand.shouldPrintMemberState), on stderr.
        print(f"Error: Consumer group '{group_id}' does not exist.", file=sys.stderr)
    return 0
