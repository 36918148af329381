"""``regroup snapshot``: a live group of any Kafka cluster, written as a scenario file.

    regroup snapshot --bootstrap-server HOST:PORT --group G [--command-config FILE]
        [--sample-seconds S] [--what-if NAME] [--timeout S] [--out FILE]

Reads the group through confluent-kafka's AdminClient (``regroup.snapshot.admin``: why
that client, and what each request gives), samples the end offsets of its partitions
twice ``--sample-seconds`` apart for the produce rate, and writes a scenario
(``regroup.snapshot.scenario``: which value comes from where) that ``regroup compare
--scenario FILE`` runs as it is: TOML with a header of comments saying which values
were observed and which assumed (``--out X.json`` writes JSON, which has no comments;
without ``--out`` the TOML goes to stdout). ``--what-if`` names the built-in scenario
whose actions happen to the group (default ``rolling-bounce``: a deploy).

``--command-config`` takes the client properties of ``regroup groups`` (Kafka's names:
``security.protocol``, ``sasl.mechanism``, ``sasl.username``/``sasl.password`` or
``sasl.jaas.config``, ``ssl.ca.location``/``ssl.truststore.location``). A missing group,
a refusal, an unreachable cluster (every request bounded by ``--timeout``) is one line
on stderr in Kafka's words and exit code 2. Progress goes to stderr while the second
sample waits.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from regroup.cli.errors import UsageError
from regroup.model.wire import WireFormatError

if TYPE_CHECKING:  # the admin client loads only when the command runs
    from regroup.server.security.client_login import ClientSecurity
    from regroup.snapshot.model import GroupView

__all__ = ["add_parser", "run"]

#: The built-in scenarios written for all three protocols (``compare`` runs the three).
WHAT_IF = (
    "rolling-bounce",
    "steady",
    "scale-out",
    "scale-in",
    "crash",
    "slow-member",
    "network-partition",
    "add-partitions",
    "enforce-rebalance",
)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "snapshot",
        help="a live group of any Kafka cluster, written as a scenario file",
        description="Describe a consumer group (classic or KIP-848) of a running Kafka "
        "cluster, sample its produce rate, and write a scenario file of its shape and "
        "traffic that regroup compare --scenario runs.",
    )
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    parser.add_argument("--group", required=True, metavar="GROUP", help="the group id")
    parser.add_argument(
        "--command-config",
        type=Path,
        default=None,
        metavar="PATH",
        help="client properties: security.protocol, sasl.mechanism, sasl.username, "
        "sasl.password, ssl.ca.location (as kafka-consumer-groups.sh --command-config)",
    )
    parser.add_argument(
        "--sample-seconds",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds between the two samples of the end offsets (default 10)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        metavar="S",
        help="seconds each request to the cluster may take (default 5)",
    )
    parser.add_argument(
        "--what-if",
        default="rolling-bounce",
        choices=WHAT_IF,
        metavar="NAME",
        help="the built-in scenario whose actions happen to the group "
        f"(default rolling-bounce; one of {', '.join(WHAT_IF)})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="FILE",
        help="the scenario file (.toml, or .json without the header); default: TOML on stdout",
    )
    parser.set_defaults(run=run)


def _bootstrap(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--bootstrap-server must be HOST:PORT with a port 1-65535, got {value!r}")
    return host, int(port)


def _seconds(name: str, value: float, *, low: float) -> None:
    if not math.isfinite(value) or value < low:
        raise UsageError(f"{name} must be a number of seconds >= {low:g}, got {value}")


def _security(path: Path | None) -> ClientSecurity:
    from regroup.cli.groups import _client_security

    return _client_security(path)


def _librdkafka_security(security: ClientSecurity) -> dict[str, str]:
    """The same properties by librdkafka's names (Kafka's client config names)."""
    props = {"security.protocol": security.protocol}
    if security.sasl:
        assert security.username is not None and security.password is not None
        props |= {
            "sasl.mechanism": security.mechanism,
            "sasl.username": security.username,
            "sasl.password": security.password,
        }
    if security.protocol in ("SSL", "SASL_SSL") and security.ca_location:
        props["ssl.ca.location"] = security.ca_location
    return props


def _wire_describe(
    group_id: str, security: ClientSecurity, timeout: float
) -> Callable[[str, str, int], GroupView]:
    """The group described on its coordinator through regroup's wire client, as
    ``regroup groups describe`` does it: DescribeGroups v5 for a classic group (each
    member's generation from its Subscription), ConsumerGroupDescribe v1 for a consumer
    group (the epochs). ``regroup.snapshot.admin`` uses it for what librdkafka does not
    surface, and as the fallback for a broker that answers ConsumerGroupDescribe for a
    classic group."""

    def describe(kind: str, host: str, port: int) -> GroupView:
        from regroup.cli.groups import _describe_classic, _describe_consumer
        from regroup.server.clients.wire_client import WireClient, WireClientError
        from regroup.server.security.client_login import LoginError, login
        from regroup.snapshot.model import GroupView, MemberView, SnapshotError

        request = "ConsumerGroupDescribe" if kind == "consumer" else "DescribeGroups"
        try:
            with WireClient(
                host, port, timeout=timeout, ssl_context=security.ssl_context()
            ) as client:
                if security.sasl:
                    assert security.username is not None and security.password is not None
                    login(client, security.mechanism, security.username, security.password)
                if kind == "consumer":
                    group = _describe_consumer(client, group_id)
                else:
                    group = _describe_classic(client, group_id)
        except (LoginError, WireClientError, WireFormatError, OSError, ValueError) as exc:
            raise SnapshotError(f"{request} on {host}:{port}: {exc}") from None
        if group["error_code"]:
            raise SnapshotError(f"{request} on {host}:{port}: error {group['error_code']}")
        notes = []
        if any(not m["client_id"] and not m["partitions"] for m in group["members"]):
            notes.append(
                f"{request} gave members without client id, host or assignment; "
                "the topics come from the committed offsets"
            )
        return GroupView(
            group_id=group_id,
            type=kind,
            state=group["state"],
            assignor=group["assignor"] or "",
            members=tuple(
                MemberView(
                    member_id=m["member_id"],
                    instance_id=m["instance_id"] or None,
                    client_id=m["client_id"] or "",
                    host=m["client_host"] or "",
                    assignment=tuple((t, p) for t, p in m["partitions"]),
                    target_assignment=(
                        tuple((t, p) for t, p in m["target_partitions"])
                        if kind == "consumer"
                        else None
                    ),
                    epoch=m["member_epoch"] if kind == "consumer" else m["generation"],
                )
                for m in group["members"]
            ),
            coordinator=f"{host}:{port}",
            described_by=request,
            notes=tuple(notes),
            group_epoch=group.get("group_epoch"),
            assignment_epoch=group.get("assignment_epoch"),
        )

    return describe


class _Progress:
    """The sampling wait on stderr: a countdown on a terminal, else one line."""

    def __init__(self, partitions_hint: str) -> None:
        self.tty = sys.stderr.isatty()
        self.started = False
        self.hint = partitions_hint

    def __call__(self, waited: float, total: float) -> None:
        if not self.started:
            self.started = True
            print(
                f"sampling the end offsets of {self.hint} twice, {total:g} s apart ...",
                file=sys.stderr,
                end="" if self.tty else "\n",
                flush=True,
            )
        if self.tty:
            print(
                f"\r\033[Ksampling end offsets: {waited:4.1f} / {total:g} s",
                end="",
                file=sys.stderr,
            )
            if waited >= total:
                print(file=sys.stderr)
            sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    from regroup.snapshot.model import SnapshotError

    _bootstrap(args.bootstrap_server)
    _seconds("--sample-seconds", args.sample_seconds, low=0.1)
    _seconds("--timeout", args.timeout, low=0.1)
    if args.out is not None and args.out.suffix not in (".toml", ".json"):
        raise UsageError(f"--out must end in .toml or .json, got {str(args.out)!r}")
    security = _security(args.command_config)
    from regroup.sim.soak.files import scenario_to_toml, write_scenario
    from regroup.snapshot.admin import gather
    from regroup.snapshot.scenario import records_per_second, snapshot_scenario

    try:
        snapshot = gather(
            args.bootstrap_server,
            args.group,
            security=_librdkafka_security(security),
            timeout=args.timeout,
            sample_seconds=args.sample_seconds,
            wire_describe=_wire_describe(args.group, security, args.timeout),
            progress=_Progress(f"the partitions of group '{args.group}'"),
        )
        scenario, header = snapshot_scenario(snapshot, args.what_if)
    except SnapshotError as error:
        raise UsageError(str(error)) from None
    if args.out is None:
        sys.stdout.write(scenario_to_toml(scenario, header))
        sys.stdout.flush()
        where = "stdout"
    else:
        try:
            write_scenario(scenario, args.out, header)
        except OSError as error:
            raise UsageError(f"cannot write {args.out}: {error.strerror}") from None
        where = str(args.out)
    rate, _ = records_per_second(snapshot)
    total = sum(snapshot.rates().values())
    print(
        f"{snapshot.group.type} group '{args.group}' ({snapshot.group.state}): "
        f"{scenario.members} members, {sum(scenario.topics.values())} partitions, "
        f"{total:.1f} records/s ({rate} per partition) -> {where}",
        file=sys.stderr,
    )
    if args.out is not None:
        print(f"next: regroup compare --scenario {args.out}", file=sys.stderr)
    return 0
