"""``regroup ctl``: drive the faults of a ``regroup serve --control`` from outside.

Every command is one request on the server's control channel
(``regroup.server.control.commands``: private API key 32002, a JSON command, a JSON
answer), so tests in any language can inject the faults a ``regroup.testing.Broker``
injects in Python. The result is printed as JSON; a command the server refuses
(an unknown group, API or error name) is one line on stderr and exit code 2.

    regroup ctl push-errors Heartbeat REBALANCE_IN_PROGRESS NONE
    regroup ctl fence my-group MEMBER_ID
    regroup ctl wait-stable my-group --members 2
    regroup ctl --command-config admin.properties describe my-group  # log in first
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from regroup.cli.errors import UsageError

__all__ = ["add_parser", "run"]

#: CLI action -> (control command, arguments from the parsed options).
_Builder = Callable[[argparse.Namespace], dict[str, Any]]


def _json_arg(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None


def _config_pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


def _actions() -> dict[str, tuple[str, str, Callable[[argparse.ArgumentParser], None], _Builder]]:
    """action -> (help, control command, add its arguments, build the command's args)."""

    def none(parser: argparse.ArgumentParser) -> None:
        pass

    def group_member(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("group_id")
        parser.add_argument("member_id")

    def group(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("group_id")

    def push(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("api", help="API name (Heartbeat, JoinGroup, ...) or key")
        parser.add_argument("errors", nargs="+", help="Kafka error names or codes; NONE serves one")
        parser.add_argument(
            "--rtt-ms",
            type=int,
            nargs="+",
            default=None,
            metavar="MS",
            help="each answer this much later: one delay per error, or one for all",
        )
        parser.add_argument(
            "--broker", type=int, default=None, help="only requests this broker receives"
        )

    def sticky(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("api")
        parser.add_argument("error", help="a Kafka error name or code")
        parser.add_argument("--duration-ms", type=int, default=None, help="for this long only")

    def optional_api(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--api", default=None, help="only this API (default: every API)")

    def rtt(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("ms", type=int, help="delay in milliseconds (0 removes it)")
        optional_api(parser)

    def unavailable(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--duration-ms", type=int, default=None, help="default: until undone")
        parser.add_argument("--error", default="NOT_COORDINATOR", help="default NOT_COORDINATOR")

    def drop(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--client-id", default=None, help="only this client's connections")

    def target(parser: argparse.ArgumentParser) -> None:
        group(parser)
        parser.add_argument(
            "assignment", type=_json_arg, help='JSON {"MEMBER_ID": {"TOPIC": [0, 1]}, ...}'
        )

    def set_config(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("configs", nargs="+", type=_config_pair, metavar="NAME=VALUE")

    def create_topic(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name")
        parser.add_argument("partitions", type=int, nargs="?", default=1)

    def produce(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("topic")
        parser.add_argument("values", nargs="+", help="record values (UTF-8)")
        parser.add_argument(
            "--partition",
            type=int,
            default=None,
            help="default: by key (Kafka's partitioner), round-robin without one",
        )
        parser.add_argument(
            "--keys", nargs="+", default=None, metavar="KEY", help="one key per value (UTF-8)"
        )
        parser.add_argument(
            "--header",
            action="append",
            type=_config_pair,
            default=None,
            metavar="NAME=VALUE",
            help="a header on every record (repeat for more)",
        )

    def wait_stable(parser: argparse.ArgumentParser) -> None:
        group(parser)
        parser.add_argument("--members", type=int, default=None)
        parser.add_argument("--timeout-ms", type=int, default=30_000)

    def wait_assignment(parser: argparse.ArgumentParser) -> None:
        group(parser)
        parser.add_argument("--member-id", default=None)
        parser.add_argument("--client-id", default=None)
        parser.add_argument("--partitions", type=_json_arg, default=None, help='JSON {"T": [0]}')
        parser.add_argument("--timeout-ms", type=int, default=30_000)

    def broker(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("broker", type=int, help="broker id (0..N-1)")

    def outage(parser: argparse.ArgumentParser) -> None:
        broker(parser)
        parser.add_argument("seconds", type=float, help="how long it stays stopped")

    def move_group(parser: argparse.ArgumentParser) -> None:
        group(parser)
        broker(parser)

    def move_partition(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("topic")
        parser.add_argument("partition", type=int)
        broker(parser)

    def raw(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name", help="a control command by its wire name")
        parser.add_argument("args", type=_json_arg, nargs="?", default={}, help="JSON object")

    def gm(a: argparse.Namespace) -> dict[str, Any]:
        return {"group_id": a.group_id, "member_id": a.member_id}

    def g(a: argparse.Namespace) -> dict[str, Any]:
        return {"group_id": a.group_id}

    def nothing(a: argparse.Namespace) -> dict[str, Any]:
        return {}

    return {
        "push-errors": (
            "answer the next requests of an API with these errors, one each",
            "push_request_errors",
            push,
            _push_args,
        ),
        "set-error": (
            "answer every request of an API with an error (until cleared or for a while)",
            "set_request_error",
            sticky,
            lambda a: {"api": a.api, "error": a.error, "duration_ms": a.duration_ms},
        ),
        "clear-errors": (
            "forget pushed and sticky errors",
            "clear_request_errors",
            optional_api,
            lambda a: {"api": a.api},
        ),
        "rtt": ("delay responses", "set_rtt", rtt, lambda a: {"ms": a.ms, "api": a.api}),
        "coordinator-unavailable": (
            "group requests fail with NOT_COORDINATOR (or --error), FindCoordinator too",
            "coordinator_unavailable",
            unavailable,
            lambda a: {"duration_ms": a.duration_ms, "error": a.error},
        ),
        "coordinator-available": (
            "end coordinator-unavailable",
            "coordinator_available",
            none,
            nothing,
        ),
        "drop-connections": (
            "close client connections",
            "drop_connections",
            drop,
            lambda a: {"client_id": a.client_id},
        ),
        "expire-session": ("a member's session times out now", "expire_session", group_member, gm),
        "fence": (
            "fence a KIP-848 member (FENCED_MEMBER_EPOCH on its next heartbeat)",
            "fence_member",
            group_member,
            gm,
        ),
        "rebalance": ("force a rebalance of a group", "force_rebalance", group, g),
        "target": (
            "set a KIP-848 group's next target assignment",
            "set_target_assignment",
            target,
            lambda a: {"group_id": a.group_id, "assignment": a.assignment},
        ),
        "pause-timers": ("hold the coordinator's timers", "pause_timers", none, nothing),
        "resume-timers": ("release the coordinator's timers", "resume_timers", none, nothing),
        "track": ("start recording requests", "start_request_tracking", none, nothing),
        "untrack": ("stop recording requests", "stop_request_tracking", none, nothing),
        "requests": (
            "the requests recorded since track",
            "requests",
            optional_api,
            lambda a: {"api": a.api},
        ),
        "faults": ("what is set now", "pending_faults", none, nothing),
        "reset": ("every fault off, timers running", "reset_faults", none, nothing),
        "configs": ("the group configs", "configs", none, nothing),
        "set-config": (
            "change group configs now",
            "set_configs",
            set_config,
            lambda a: {"configs": dict(a.configs)},
        ),
        "create-topic": (
            "create a topic",
            "create_topic",
            create_topic,
            lambda a: {"name": a.name, "partitions": a.partitions},
        ),
        "produce": (
            "append records",
            "produce",
            produce,
            _produce_args,
        ),
        "describe": ("a group's state and members", "describe_group", group, g),
        "committed": ("a group's committed offsets", "committed", group, g),
        "wait-stable": (
            "block until a group is Stable",
            "wait_for_stable",
            wait_stable,
            lambda a: {"group_id": a.group_id, "members": a.members, "timeout_ms": a.timeout_ms},
        ),
        "wait-assignment": (
            "block until a member owns partitions",
            "wait_for_assignment",
            wait_assignment,
            lambda a: {
                "group_id": a.group_id,
                "member_id": a.member_id,
                "client_id": a.client_id,
                "partitions": a.partitions,
                "timeout_ms": a.timeout_ms,
            },
        ),
        "brokers": (
            "every broker of a `serve --brokers N`: address, rack, running, partitions led",
            "brokers",
            none,
            nothing,
        ),
        "broker-stop": (
            "stop a broker: its connections close, its leaderships move to live brokers",
            "broker_stop",
            broker,
            lambda a: {"broker": a.broker},
        ),
        "broker-start": (
            "start a stopped broker again on its port",
            "broker_start",
            broker,
            lambda a: {"broker": a.broker},
        ),
        "broker-outage": (
            "stop a broker now and start it again SECONDS later",
            "broker_outage",
            outage,
            lambda a: {"broker": a.broker, "seconds": a.seconds},
        ),
        "coordinator-of": ("the broker coordinating a group", "coordinator_of", group, g),
        "move-coordinator": (
            "move a group's __consumer_offsets partition (every group on it) to a broker",
            "move_coordinator",
            move_group,
            lambda a: {"group_id": a.group_id, "broker": a.broker},
        ),
        "move-leader": (
            "make a broker the leader of a partition",
            "move_leader",
            move_partition,
            lambda a: {"topic": a.topic, "partition": a.partition, "broker": a.broker},
        ),
        "raw": ("any control command by name", "", raw, lambda a: {}),
    }


def _push_args(a: argparse.Namespace) -> dict[str, Any]:
    args: dict[str, Any] = {"api": a.api, "errors": a.errors}
    if a.rtt_ms is not None:
        if len(a.rtt_ms) not in (1, len(a.errors)):
            raise UsageError(
                f"push-errors: {len(a.errors)} errors but {len(a.rtt_ms)} --rtt-ms values: "
                "give one per error, or one for all"
            )
        args["rtt_ms"] = a.rtt_ms[0] if len(a.rtt_ms) == 1 else a.rtt_ms
    if a.broker is not None:
        args["broker"] = a.broker
    return args


def _produce_args(a: argparse.Namespace) -> dict[str, Any]:
    args: dict[str, Any] = {"topic": a.topic, "records": a.values, "partition": a.partition}
    if a.keys is not None:
        if len(a.keys) != len(a.values):
            raise UsageError(f"produce: {len(a.values)} values but {len(a.keys)} --keys")
        args["keys"] = a.keys
    if a.header:
        args["headers"] = [[list(pair) for pair in a.header]] * len(a.values)
    return args


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ctl",
        help="inject faults into a running `regroup serve --control`",
        description="Drive the control channel of a server started with `regroup serve "
        "--control`: request errors, delays, dropped connections, group faults, waits.",
    )
    parser.add_argument(
        "--bootstrap-server", default="127.0.0.1:9092", help="HOST:PORT (default 127.0.0.1:9092)"
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="socket timeout in seconds")
    parser.add_argument(
        "--command-config",
        type=Path,
        default=None,
        metavar="PATH",
        help="client properties to log in to a secured listener (as `regroup groups "
        "--command-config`); with an authorizer the principal needs ALTER on the CLUSTER",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, (text, _, arguments, _) in _actions().items():
        arguments(actions.add_parser(name, help=text, description=text))
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from regroup.server.clients.wire_client import WireClient, WireClientError
    from regroup.server.control.commands import decode_answer, encode_command

    _, command, _, build = _actions()[args.action]
    if args.action == "raw":
        if not isinstance(args.args, dict):
            raise UsageError("raw: ARGS must be a JSON object")
        command, values = args.name, args.args
    else:
        values = build(args)
    host, sep, port = str(args.bootstrap_server).rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"--bootstrap-server must be HOST:PORT, got {args.bootstrap_server!r}")
    try:
        if args.command_config is None:
            client = WireClient(host or "127.0.0.1", int(port), timeout=args.timeout)
        else:
            from regroup.cli.groups import connect

            client = connect(args)  # logs in; a refusal is a UsageError
        with client:
            client.send_raw(encode_command(1, "regroup-ctl", command, values))
            _, answer = decode_answer(client.read_frame())
    except WireClientError:
        raise UsageError(
            f"{args.bootstrap_server} closed the connection: is it a `regroup serve --control`"
            " (a SASL listener needs --command-config to log in first)?"
        ) from None
    except OSError as exc:
        raise UsageError(f"cannot reach {args.bootstrap_server}: {exc}") from None
    if not answer.get("ok"):
        raise UsageError(str(answer.get("error")))
    json.dump(answer.get("result"), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0
