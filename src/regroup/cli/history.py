"""``regroup history``: a Kafka cluster's own logs -> each group's rebalances, explained.

    regroup history PATH... [--group G] [--from T] [--to T] [--json] [--out DIR]
        [--master URL] [--scenario-out FILE [--partitions N] [--data KEY=N ...]]

Reads Kafka broker logs (``server.log`` and its rotations, ``.gz`` files, directories,
globs, URIs Spark reads) and optionally Java consumer logs, with Spark (embedded
``local[*]`` unless ``--master``), recognises the group coordinator's lines in the wording
of each Kafka version (``regroup.history.formats``), merges the brokers' files by time and
rebuilds each group's rebalances, members leaving and findings (docs/history.md).

Prints a table of the groups ranked by time spent rebalancing and the findings, or with
``--json`` one object (docs/formats/history-json.md). ``--out DIR`` writes Parquet tables
(``rebalances``, ``members_left``, ``findings``, and ``events``: regroup's event log of
the cluster, which ``regroup analyze DIR/events`` reads), ``history.json`` and
``report.html``. ``--scenario-out FILE`` writes the group's incident (``--group``, the
window of ``--from``/``--to``) as a scenario for ``regroup compare --scenario FILE``.

A path that is not there, or logs with no recognisable line at all, are one line on
stderr and exit 2; a file with no recognisable line, or a damaged ``.gz`` (read up to the
damage), is named on stderr and the rest goes on. A progress bar counts the files (or
parts of files) parsed when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from regroup.cli.analyze import add_master_argument, spark_failures, spark_phase
from regroup.cli.errors import UsageError
from regroup.cli.options import parse_data
from regroup.cli.outputs import run_phases, run_with_progress

__all__ = ["add_parser", "parse_moment", "run"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "history",
        help="Kafka's own logs -> each group's rebalances, findings, and an incident scenario",
        description="Read Kafka broker logs (files, .gz, directories, globs, URIs) with Spark, "
        "recognise the group coordinator's lines of Kafka 1.1 to 4.x, and rebuild each "
        "group's rebalances (timing, reasons, members), members leaving, and findings "
        "(rolling deploys without static membership, poll timeouts, clustered session "
        "timeouts, rebalance storms, big eager groups).",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="log files, dirs, globs, URIs")
    parser.add_argument("--group", default=None, metavar="G", help="only this group")
    parser.add_argument(
        "--from",
        dest="from_",
        default=None,
        metavar="T",
        help="only lines at or after T (2026-12-02T14:00[:SS[.mmm]], as the log's time)",
    )
    parser.add_argument("--to", default=None, metavar="T", help="only lines at or before T")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--out", default=None, metavar="DIR", help="Parquet tables and report")
    add_master_argument(parser)
    parser.add_argument(
        "--scenario-out",
        default=None,
        metavar="FILE",
        help="write the group's incident as a scenario (.toml or .json) for regroup compare",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=None,
        metavar="N",
        help="with --scenario-out: the group's partitions (the log does not say)",
    )
    parser.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="KEY=N",
        help="with --scenario-out: a [data] setting, e.g. restore_ms=5000 (repeatable)",
    )
    parser.set_defaults(run=run)


def parse_moment(text: str, *, end: bool) -> tuple[int, str]:
    """``--from`` / ``--to``: a date, or a date and time to the minute, second or ms;
    ``end``: a ``--to`` given coarsely covers its whole day, minute or second."""
    from regroup.history.lines import timestamp_ms

    cleaned = text.strip().replace(" ", "T", 1)
    padded, span = cleaned, 0
    if len(cleaned) == 10:
        padded, span = cleaned + "T00:00:00", 86_400_000
    elif len(cleaned) == 16:
        padded, span = cleaned + ":00", 60_000
    elif len(cleaned) == 19:
        span = 1000
    parsed = timestamp_ms(padded)
    if parsed is None or len(cleaned) not in (10, 16, 19, 21, 22, 23):
        raise UsageError(f"cannot read the time {text!r}: use 2026-12-02T14:03[:11[.123]]")
    ts = parsed[0] + (span - 1 if end and span else 0)
    return ts, cleaned


def _progress(total: int, done: Any, work: Any) -> None:
    """Run ``work()`` with a progress bar of the splits done (``outputs.run_with_progress``)."""
    run_with_progress(total, done, work, label="parsing logs", unit="splits")


def _check_scenario_out(args: argparse.Namespace) -> dict[str, int]:
    if args.scenario_out is None:
        if args.partitions is not None or args.data:
            raise UsageError("--partitions and --data go with --scenario-out")
        return {}
    path = Path(args.scenario_out)
    if path.suffix not in (".toml", ".json"):
        raise UsageError(f"--scenario-out {path}: the file must end in .toml or .json")
    if path.is_dir() or not path.parent.resolve().is_dir():
        raise UsageError(f"--scenario-out {path}: not a file in an existing directory")
    if args.partitions is not None and args.partitions < 1:
        raise UsageError("--partitions must be at least 1")
    data = parse_data(args.data)
    from regroup.sim.scenario import DATA_KEYS

    unknown = sorted(set(data) - set(DATA_KEYS))
    if unknown:
        raise UsageError(f"unknown [data] key {unknown[0]!r}; known: {', '.join(DATA_KEYS)}")
    return data


def run(args: argparse.Namespace) -> int:
    from regroup.history.reader import InputError, Window, expand
    from regroup.pipeline.spark import MasterError, check_master

    data = _check_scenario_out(args)
    start = parse_moment(args.from_, end=False) if args.from_ else None
    stop = parse_moment(args.to, end=True) if args.to else None
    if start and stop and start[0] > stop[0]:
        raise UsageError(f"--from {args.from_} is after --to {args.to}")
    window = Window(args.group, start[0] if start else None, stop[0] if stop else None)
    try:
        splits, uris = expand(args.paths)
        check_master(args.master)
    except (InputError, MasterError) as error:
        raise UsageError(str(error)) from None
    output = None
    if args.out is not None:
        from regroup.cli.analyze import prepare

        output = prepare(args.out, args.master)
    logs = " ".join(args.paths)
    with spark_failures():
        from regroup.history.spark import run_history
        from regroup.pipeline.spark import build_session

        def launch() -> Any:
            spark = build_session(args.master, app_name="regroup history")
            if output is not None:
                output.check_remote(spark)
            return spark

        (spark,) = run_phases("starting", [("starting Spark", launch)])
        result = run_history(
            spark,
            splits,
            uris,
            window,
            logs=logs,
            events_dir=output.join("events") if output is not None else None,
            progress=_progress,
        )
        summary = _summarise(result, window, (start, stop))
        if output is not None:
            write = spark_phase(
                "writing the tables and report",
                lambda: _write_out(spark, output, summary, result, args.paths),
            )
            run_phases("writing", [("writing the tables and report", write)])
    if args.scenario_out is not None:
        _scenario_out(args, result, data, (start, stop))
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        _print_table(summary)
    return 0


def _summarise(result: Any, window: Any, moments: tuple[Any, Any]) -> dict[str, Any]:
    from regroup.history.summary import formats_tried, history_json, merge_stats, silent_files

    files = merge_stats(result.stats)
    for stats in files.values():
        if stats.error:
            print(f"regroup history: warning: {stats.error}", file=sys.stderr)
    silent = silent_files(files)
    recognised = sum(s.lines_recognized for s in files.values())
    if recognised == 0:
        names = ", ".join(silent[:5]) + (f" and {len(silent) - 5} more" if len(silent) > 5 else "")
        raise UsageError(
            f"no Kafka group-coordinator or consumer line recognised in {names or 'the input'} "
            f"(formats tried: {formats_tried()})"
        )
    for path in silent:
        print(
            f"regroup history: warning: {path}: no Kafka group-coordinator or consumer line "
            f"recognised (formats tried: {formats_tried()})",
            file=sys.stderr,
        )
    if window.group_id is not None and not result.groups:
        raise UsageError(f"no line of group {window.group_id!r} in the logs (in the window asked)")
    texts = (moments[0][1] if moments[0] else None, moments[1][1] if moments[1] else None)
    return history_json(files, result.groups, window, texts)


def _scenario_out(
    args: argparse.Namespace, result: Any, data: dict[str, int], moments: tuple[Any, Any]
) -> None:
    from regroup.history.scenario_out import incident_scenario, write_incident
    from regroup.sim.scenario import ScenarioError

    histories = [history for history, _ in result.groups]
    if args.group is None and len(histories) != 1:
        ranked = sorted(histories, key=lambda h: -h.rebalancing_ms)
        names = ", ".join(h.group_id for h in ranked[:8])
        raise UsageError(
            f"--scenario-out needs --group: the logs hold {len(histories)} groups ({names})"
        )
    history = histories[0]
    try:
        incident = incident_scenario(
            history,
            partitions=args.partitions,
            data=data,
            window=(moments[0][1] if moments[0] else None, moments[1][1] if moments[1] else None),
        )
        path = write_incident(incident, Path(args.scenario_out))
    except ScenarioError as error:
        raise UsageError(str(error)) from None
    print(
        f"wrote {path}: {incident.scenario.members} members, {len(incident.scenario.actions)} "
        f"actions; next: regroup compare --scenario {path}",
        file=sys.stderr,
    )


def _write_out(spark: Any, output: Any, summary: dict[str, Any], result: Any, paths: Any) -> None:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from regroup.history.report import render_history_report

    text = StringType()
    rebalance_fields = [
        ("group_id", text),
        ("protocol", text),
        ("generation", LongType()),
        ("epoch", LongType()),
        ("started_at", text),
        ("stabilized_at", text),
        ("ended_at", text),
        ("duration_ms", LongType()),
        ("outcome", text),
        ("reason", text),
        ("reason_class", text),
        ("client_reason", text),
        ("members", LongType()),
        ("members_before", LongType()),
        ("broker_id", LongType()),
        ("coordinator_partition", LongType()),
    ]
    rows = []
    for group in summary["groups"]:
        for rebalance in group["rebalances"]:
            row = {"group_id": group["group_id"], "protocol": group["protocol"], **rebalance}
            rows.append(tuple(row.get(name) for name, _ in rebalance_fields))
    _table(spark, output, "rebalances", rebalance_fields, rows, StructType, StructField)
    left_fields = [
        ("group_id", text),
        ("member_id", text),
        ("instance_id", text),
        ("at", text),
        ("reason", text),
        ("reason_text", text),
    ]
    rows = [
        (group["group_id"], *(leave[name] for name, _ in left_fields[1:]))
        for group in summary["groups"]
        for leave in group["members_left"]
    ]
    _table(spark, output, "members_left", left_fields, rows, StructType, StructField)
    finding_fields = [
        ("kind", text),
        ("group_id", text),
        ("at", text),
        ("summary", text),
        ("evidence", text),
        ("what_would_change", text),
        ("next_command", text),
    ]
    rows = [
        tuple("\n".join(f[name]) if name == "evidence" else f[name] for name, _ in finding_fields)
        for f in summary["findings"]
    ]
    _table(spark, output, "findings", finding_fields, rows, StructType, StructField)
    output.write_text(spark, "history.json", json.dumps(summary, indent=2) + "\n")
    output.write_text(spark, "report.html", render_history_report(summary, list(paths)))
    print(f"wrote {output.join('report.html')}", file=sys.stderr)


def _table(
    spark: Any, output: Any, name: str, fields: Any, rows: Any, struct: Any, field: Any
) -> None:
    schema = struct([field(column, kind, True) for column, kind in fields])
    spark.createDataFrame(rows, schema).coalesce(1).write.mode("overwrite").parquet(
        output.join(name)
    )


def _print_table(summary: dict[str, Any]) -> None:
    from regroup.history.report import duration_text

    formats = ", ".join(f"{f['family']} {f['kafka_versions']}" for f in summary["formats"])
    print(
        f"{summary['lines_read']} lines read, {summary['lines_recognized']} recognised ({formats})"
    )
    rows = [("group", "protocol", "rebalances", "time rebalancing", "left", "findings")]
    counts: dict[str, int] = {}
    for finding in summary["findings"]:
        counts[finding["group_id"]] = counts.get(finding["group_id"], 0) + 1
    for group in summary["groups"]:
        rows.append(
            (
                group["group_id"],
                group["rebalance_protocol"] or group["protocol"] or "?",
                str(len(group["rebalances"])),
                duration_text(group["time_rebalancing_ms"]),
                str(len(group["members_left"])),
                str(counts.get(group["group_id"], 0)),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    for finding in summary["findings"]:
        print(f"\n{finding['kind']} ({finding['group_id']}): {finding['summary']}")
        print(f"  would change it: {finding['what_would_change']}")
        print(f"  next: {finding['next_command']}")
