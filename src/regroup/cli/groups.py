"""``regroup groups list|describe``: the groups of a running server, over the wire.

Like Kafka's ``kafka-consumer-groups.sh --list / --describe``, for both group
types: ListGroups (v5, with the group type of KIP-848), then DescribeGroups
(v5) for classic groups and ConsumerGroupDescribe (v1) for consumer groups,
plus OffsetFetch and ListOffsets for committed offsets and lag.

Classic groups: DescribeGroups carries no generation, so the generation shown
is the one each member reported in its Subscription (v2+, the cooperative
clients send it); the assignment is decoded from the member's Assignment bytes
(ConsumerProtocol). Consumer groups: group epoch, assignment epoch, and each
member's epoch, current and target assignment.
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
    from regroup.server.client import WireClient
    from regroup.server.security.client_login import ClientSecurity

__all__ = ["add_parser", "run"]


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
    lister = actions.add_parser("list", help="list the groups", parents=[after])
    lister.add_argument("--json", action="store_true", help="print JSON")
    describer = actions.add_parser("describe", help="describe groups", parents=[after])
    describer.add_argument("group", nargs="*", help="group ids (default: all)")
    describer.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=run)


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


def _connect(args: argparse.Namespace) -> WireClient:
    from regroup.server.client import WireClient

    host, sep, port = str(args.bootstrap_server).rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(
            f"--bootstrap-server must be HOST:PORT with a port 1-65535, "
            f"got {args.bootstrap_server!r}"
        )
    timeout = args.timeout
    if not timeout > 0 or timeout == float("inf"):  # also refuses NaN
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout}")
    security = _client_security(args.command_config)
    try:
        client = WireClient(
            host or "127.0.0.1",
            int(port),
            timeout=args.timeout,
            ssl_context=security.ssl_context(),
        )
    except OSError as exc:
        raise UsageError(f"cannot connect to {args.bootstrap_server}: {exc}") from None
    if security.sasl:
        from regroup.server.client import WireClientError
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


def _offsets(client: WireClient, group_id: str) -> list[dict[str, Any]]:
    fetched = client.request(
        9, 8, {"groups": [{"group_id": group_id, "topics": None}], "require_stable": False}
    )
    rows: list[dict[str, Any]] = []
    for group in fetched.groups:
        for topic in group.topics:
            for p in topic.partitions:
                rows.append(
                    {
                        "topic": topic.name,
                        "partition": p.partition_index,
                        "committed": p.committed_offset,
                    }
                )
    if rows:
        topics: dict[str, list[int]] = {}
        for row in rows:
            topics.setdefault(row["topic"], []).append(row["partition"])
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
        end = {(t.name, p.partition_index): p.offset for t in ends.topics for p in t.partitions}
        for row in rows:
            row["log_end"] = end.get((row["topic"], row["partition"]), -1)
            row["lag"] = (
                max(0, row["log_end"] - row["committed"]) if row["committed"] >= 0 else None
            )
    return sorted(rows, key=lambda r: (r["topic"], r["partition"]))


def _partitions_text(pairs: list[tuple[str, int]]) -> str:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in pairs:
        by_topic.setdefault(topic, []).append(partition)
    return ",".join(f"{t}:{sorted(ps)}".replace(" ", "") for t, ps in sorted(by_topic.items()))


def _describe_consumer(client: WireClient, group_id: str) -> dict[str, Any]:
    response = client.request(
        69, 1, {"group_ids": (group_id,), "include_authorized_operations": False}
    )
    (g,) = response.groups
    members = []
    for m in g.members:
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
                "assignment": _partitions_text(
                    [
                        (tp.topic_name, p)
                        for tp in m.assignment.topic_partitions
                        for p in tp.partitions
                    ]
                ),
                "target_assignment": _partitions_text(
                    [
                        (tp.topic_name, p)
                        for tp in m.target_assignment.topic_partitions
                        for p in tp.partitions
                    ]
                ),
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
        if g.protocol_type == "consumer":
            try:
                sub = decode_subscription(m.member_metadata) if m.member_metadata else None
                if sub is not None and sub.generation_id >= 0:
                    generation = sub.generation_id
                if m.member_assignment:
                    decoded = decode_assignment(m.member_assignment)
                    assignment = _partitions_text(
                        [(tp.topic, tp.partition) for tp in decoded.partitions]
                    )
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


def describe_groups(client: WireClient, wanted: list[str]) -> list[dict[str, Any]]:
    listed = {g["group_id"]: g for g in list_groups(client)}
    out = []
    for group_id in wanted or sorted(listed):
        kind = listed.get(group_id, {}).get("type", "classic")
        described = (
            _describe_consumer(client, group_id)
            if kind == "consumer"
            else _describe_classic(client, group_id)
        )
        described["offsets"] = _offsets(client, group_id)
        out.append(described)
    return out


def _print_table(rows: list[list[str]]) -> None:
    if not rows:
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def _print_describe(group: dict[str, Any]) -> None:
    if group["type"] == "consumer":
        print(
            f"GROUP {group['group_id']}  TYPE consumer  STATE {group['state']}  "
            f"GROUP-EPOCH {group['group_epoch']}  ASSIGNMENT-EPOCH {group['assignment_epoch']}  "
            f"ASSIGNOR {group['assignor'] or '-'}"
        )
        rows = [["MEMBER-ID", "PROTOCOL", "EPOCH", "CLIENT-ID", "HOST", "ASSIGNMENT", "TARGET"]]
        rows += [
            [
                m["member_id"],
                m["protocol"],
                str(m["member_epoch"]),
                m["client_id"],
                m["client_host"],
                m["assignment"] or "-",
                m["target_assignment"] or "-",
            ]
            for m in group["members"]
        ]
    else:
        print(
            f"GROUP {group['group_id']}  TYPE classic  STATE {group['state']}  "
            f"PROTOCOL {group['protocol_type'] or '-'}  ASSIGNOR {group['assignor'] or '-'}"
        )
        rows = [["MEMBER-ID", "GENERATION", "CLIENT-ID", "HOST", "ASSIGNMENT"]]
        rows += [
            [
                m["member_id"],
                "-" if m["generation"] is None else str(m["generation"]),
                m["client_id"],
                m["client_host"],
                m["assignment"] or "-",
            ]
            for m in group["members"]
        ]
    if group["members"]:
        _print_table(rows)
    if group["offsets"]:
        table = [["TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG"]]
        table += [
            [
                o["topic"],
                str(o["partition"]),
                str(o["committed"]),
                str(o["log_end"]),
                "-" if o["lag"] is None else str(o["lag"]),
            ]
            for o in group["offsets"]
        ]
        _print_table(table)


def run(args: argparse.Namespace) -> int:
    from regroup.server.client import WireClientError

    try:
        with _connect(args) as client:
            if args.action == "list":
                groups = list_groups(client)
                if args.json:
                    print(json.dumps(groups))
                else:
                    _print_table(
                        [["GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"]]
                        + [
                            [g["group_id"], g["type"], g["state"], g["protocol_type"] or "-"]
                            for g in groups
                        ]
                    )
                return 0
            described = describe_groups(client, list(args.group))
    except (WireClientError, OSError) as exc:
        raise UsageError(f"server {args.bootstrap_server}: {exc}") from None
    if args.json:
        print(json.dumps(described))
    else:
        for index, group in enumerate(described):
            if index:
                print()
            _print_describe(group)
    sys.stdout.flush()
    missing = [g["group_id"] for g in described if g["error_code"] != 0]
    return 1 if missing else 0
