"""``regroup simulate``: run a scenario on a virtual clock and report what it cost.

    regroup simulate --scenario rolling-bounce --protocol cooperative \\
        --assignor cooperative-sticky --members 6 --partitions 24 --seed 7 \\
        --session-timeout-ms 10000 --config max.poll.interval.ms=60000 \\
        --json --events run.jsonl --timeline run.html

Kafka configs: ``--config key=value`` (repeatable) with Kafka's names. Names
of the coordinator (``GroupCoordinatorConfig``: ``group.*``, e.g.
``group.initial.rebalance.delay.ms``, ``group.consumer.session.timeout.ms``)
go to the coordinator; every other name is a consumer config
(``session.timeout.ms``, ``heartbeat.interval.ms``, ``max.poll.interval.ms``,
``enable.auto.commit``, ``auto.commit.interval.ms``,
``partition.assignment.strategy``, ``request.timeout.ms`` ...). The shortcuts
``--session-timeout-ms`` and ``--heartbeat-interval-ms`` set the consumer
config under the classic protocol and the coordinator's
``group.consumer.*`` config under ``--protocol consumer`` (KIP-848 moved them
to the broker); ``--max-poll-interval-ms`` is a consumer config for both.

Output: a summary table (rich) or, with ``--json``, the metrics as one JSON
object (``regroup.sim.metrics`` defines every field). ``--events`` writes the
event log (JSON lines), ``--timeline`` draws ownership over time (``.html`` or
``.png``), ``--broker-log`` writes the group coordinator's lines as Kafka 4.x's
``server.log`` has them, timed by the virtual clock from ``--broker-log-start``
(``regroup.sim.broker_log``). A progress bar is drawn on stderr when it is a
terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import sys
from typing import Any, TextIO

from regroup.cli.errors import UsageError
from regroup.cli.options import at_least, parse_configs, parse_data
from regroup.cli.outputs import check_writable
from regroup.sim.assumptions import assumption_lines, assumptions
from regroup.sim.scenario import BUILTINS, PROTOCOLS, ScenarioError, load_scenario, with_data
from regroup.sim.simulation import RunResult, Settings, Simulation

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="run a consumer-group scenario on a virtual clock",
        description="Run a scenario (a built-in name or a .toml/.json file) with the real "
        f"protocol code on a virtual clock. Built-ins: {', '.join(BUILTINS)}.",
    )
    parser.add_argument(
        "--scenario",
        required=True,
        metavar="NAME|PATH",
        help="a built-in scenario (see above) or a scenario file (.toml or .json)",
    )
    parser.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default=None,
        help="eager or cooperative (classic protocol, KIP-429) or consumer (KIP-848); "
        "default: the scenario's own",
    )
    parser.add_argument(
        "--assignor",
        default=None,
        metavar="NAME",
        help="the assignor (default: the scenario's, else range for eager, cooperative-sticky "
        "for cooperative, and the first of group.consumer.assignors, uniform, for consumer)",
    )
    parser.add_argument(
        "--members",
        type=at_least(0),
        default=None,
        metavar="N",
        help="group size (default: the scenario's)",
    )
    parser.add_argument(
        "--partitions",
        type=at_least(1),
        default=None,
        metavar="P",
        help="partitions of the topic (default: the scenario's)",
    )
    parser.add_argument(
        "--seed",
        type=at_least(0),
        default=0,
        metavar="S",
        help="same seed, same event log (default: 0)",
    )
    parser.add_argument(
        "--duration-ms",
        type=at_least(1),
        default=None,
        metavar="MS",
        help="virtual run time (default: the last action's end plus the scenario's settle time)",
    )
    parser.add_argument(
        "--static", action="store_true", default=None, help="static membership (KIP-345)"
    )
    parser.add_argument(
        "--session-timeout-ms",
        type=at_least(1),
        default=None,
        metavar="MS",
        help="session.timeout.ms (classic) or group.consumer.session.timeout.ms (consumer)",
    )
    parser.add_argument(
        "--heartbeat-interval-ms",
        type=at_least(1),
        default=None,
        metavar="MS",
        help="heartbeat.interval.ms (classic) or group.consumer.heartbeat.interval.ms (consumer)",
    )
    parser.add_argument(
        "--max-poll-interval-ms",
        type=at_least(1),
        default=None,
        metavar="MS",
        help="max.poll.interval.ms of every consumer",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka consumer or coordinator config (repeatable)",
    )
    parser.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="KEY=N",
        help="a [data] setting of the scenario, as sweep takes it, e.g. restore_ms=5000, "
        "processing_us_per_record=1000, records_per_second=50, max_poll_records=500 "
        "(repeatable)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the metrics and the run's assumptions as one JSON object on stdout",
    )
    parser.add_argument(
        "--events", default=None, metavar="PATH", help="write the event log (JSON lines)"
    )
    parser.add_argument(
        "--timeline",
        default=None,
        metavar="PATH",
        help="draw partition ownership over time per member (.png or .html)",
    )
    parser.add_argument(
        "--broker-log",
        default=None,
        metavar="PATH",
        help="write the group coordinator's log as Kafka 4.x's server.log lines, "
        "timed by the virtual clock",
    )
    parser.add_argument(
        "--broker-log-start",
        default=None,
        metavar="TIME",
        help="the --broker-log time of virtual time 0, ISO-8601 (e.g. 2026-12-02T14:00:00; "
        "UTC unless it names a zone); default 1970-01-01T00:00:00",
    )
    parser.set_defaults(run=run)


def _configs(args: argparse.Namespace, protocol: str) -> dict[str, str]:
    configs = parse_configs(args.config)
    kip848 = protocol == "consumer"
    shortcuts = (
        (args.session_timeout_ms, "session.timeout.ms", "group.consumer.session.timeout.ms"),
        (
            args.heartbeat_interval_ms,
            "heartbeat.interval.ms",
            "group.consumer.heartbeat.interval.ms",
        ),
    )
    for value, classic_name, broker_name in shortcuts:
        if value is not None:
            if value < 1:
                raise UsageError(f"--{classic_name.replace('.', '-')} must be >= 1")
            configs[broker_name if kip848 else classic_name] = str(value)
    if args.max_poll_interval_ms is not None:
        configs["max.poll.interval.ms"] = str(args.max_poll_interval_ms)
    return configs


def run(args: argparse.Namespace) -> int:
    for name in ("members", "partitions", "duration_ms"):
        value = getattr(args, name)
        if value is not None and value < (0 if name == "members" else 1):
            raise UsageError(f"--{name.replace('_', '-')} must be positive, got {value}")
    for path, suffixes in ((args.timeline, (".png", ".html")),):
        if path is not None and not path.endswith(suffixes):
            raise UsageError(f"--timeline must end in .png or .html, got {path!r}")
    outputs = (
        ("--events", args.events),
        ("--timeline", args.timeline),
        ("--broker-log", args.broker_log),
    )
    for option, path in outputs:
        if path is not None:
            check_writable(option, path)
    start_ms = _start_ms(args.broker_log_start)
    try:
        scenario = with_data(load_scenario(args.scenario), parse_data(args.data))
        protocol = args.protocol or scenario.protocol
        settings = Settings(
            scenario=scenario,
            protocol=args.protocol,
            assignor=args.assignor,
            members=args.members,
            partitions=args.partitions,
            seed=args.seed,
            static=args.static,
            duration_ms=args.duration_ms,
            configs=_configs(args, protocol),
        )
    except (ScenarioError, ValueError) as error:
        raise UsageError(str(error)) from None
    with contextlib.ExitStack() as stack:
        broker_log = None
        if args.broker_log is not None:
            broker_log = _open(args.broker_log, stack)
        try:
            simulation = _simulation(settings, args, broker_log, start_ms)
        except (ScenarioError, ValueError) as error:
            raise UsageError(str(error)) from None
        try:
            result = _run_with_progress(simulation)
        except OSError as error:  # the broker log's disk filled up, say
            if broker_log is None:
                raise
            raise UsageError(f"cannot write {args.broker_log}: {error.strerror}") from None
    if args.events is not None:
        try:
            with open(args.events, "w", encoding="utf-8") as out:
                for event in result.events:
                    out.write(event.to_json_line())
                    out.write("\n")
        except OSError as error:
            raise UsageError(f"cannot write {args.events}: {error.strerror}") from None
    if args.timeline is not None:
        from regroup.sim.timeline import write_timeline

        try:
            write_timeline(result.events, args.timeline)
        except OSError as error:
            raise UsageError(f"cannot write {args.timeline}: {error.strerror}") from None
    if args.json:
        document = result.metrics.to_json()
        document["assumptions"] = assumptions(simulation.plan)
        print(json.dumps(document, sort_keys=False))
    else:
        _print_summary(simulation, result)
    return 0


def _start_ms(text: str | None) -> int:
    """``--broker-log-start`` as ms since the epoch (0 without it)."""
    if text is None:
        return 0
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"--broker-log-start must be an ISO-8601 time such as 2026-12-02T14:00:00, got {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def _open(path: str, stack: contextlib.ExitStack) -> TextIO:
    try:
        return stack.enter_context(open(path, "w", encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror}") from None


def _simulation(
    settings: Settings, args: argparse.Namespace, broker_log: TextIO | None, start_ms: int
) -> Simulation:
    """The run; with ``--broker-log``, its journal streams Kafka's lines to ``broker_log``."""
    keep_events = args.events is not None or args.timeline is not None
    if broker_log is None:
        return Simulation(settings, keep_events=keep_events)
    from regroup.sim.broker_log import BrokerLogWriter

    writer = BrokerLogWriter(broker_log, start_ms=start_ms)
    return Simulation(settings, keep_events=keep_events, taps=[writer])


def _run_with_progress(simulation: Simulation) -> RunResult:
    if not sys.stderr.isatty():
        return simulation.run()
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("simulating"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f} virtual s"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task("run", total=1.0)

        def report(now: int, end: int) -> None:
            progress.update(task, completed=now / 1000, total=end / 1000)

        return simulation.run(report)


def _print_summary(simulation: Simulation, result: RunResult) -> None:
    from rich.console import Console
    from rich.table import Table

    m = result.metrics
    title = (
        f"{simulation.scenario.name}: {simulation.protocol}, {simulation.assignor}, "
        f"{simulation.member_count} members, seed {simulation.seed}"
    )
    table = Table()
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows: list[tuple[str, object]] = [
        ("virtual time", f"{result.duration_ms / 1000:.1f} s"),
        ("idle partition-seconds", m.idle_partition_seconds),
        ("longest partition pause", f"{m.max_partition_pause_ms} ms"),
        ("partitions paused", m.paused_partitions),
        ("pause p50 / p99", f"{m.pause_p50_ms} / {m.pause_p99_ms} ms"),
        ("not Stable", f"{m.unstable_ms} ms"),
        ("rebalances", m.rebalances),
        ("generations / group epochs", f"{m.generations} / {m.group_epochs}"),
        ("partitions assigned", m.partitions_assigned),
        ("partitions revoked", m.partitions_revoked),
        ("partitions lost", m.partitions_lost),
        ("partitions moved", m.partitions_moved),
        ("records processed twice", m.duplicates),
        ("peak lag (records)", m.peak_lag),
        ("catch-up", "-" if m.catch_up_s is None else f"{m.catch_up_s:.1f} s"),
        (
            "time to stable",
            "-" if m.time_to_stable_ms is None else f"{m.time_to_stable_ms} ms",
        ),
        ("invariant violations", len(m.violations)),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    console = Console()
    console.print(title, markup=False, highlight=False)
    console.print(table)
    for line in assumption_lines(assumptions(simulation.plan)):
        console.print(line, markup=False, highlight=False)
    for violation in m.violations[:10]:
        console.print(f"[red]violation[/red] {violation['invariant']}: {violation['detail']}")
    if len(m.violations) > 10:
        console.print(f"... and {len(m.violations) - 10} more (see --json)")
