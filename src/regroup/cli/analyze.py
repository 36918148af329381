"""``regroup analyze``: event logs -> the simulator's metrics, computed on Spark, as Parquet.

Reads any event-log directory (``regroup sweep``'s ``events/``, one scenario's
or one run's subdirectory of it, or JSON-lines logs from ``regroup simulate
--events`` or the wire server) and writes ``OUT/metrics`` (one row per run:
``regroup.sim.metrics``'s definitions), ``OUT/ownership`` (per-partition
ownership intervals), ``OUT/idle`` (idle time per partition), ``OUT/violations``
and ``OUT/labels`` (scenario, protocol, assignor, seed per run), all Parquet;
then prints a summary table and writes ``OUT/report.html``
(``regroup.pipeline.report``). Spark runs embedded (``local[*]``) unless
``--master`` names a cluster (or ``spark-submit`` launched us).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from regroup.cli.errors import UsageError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["add_master_argument", "add_parser", "analyze_and_report", "run"]


def add_master_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--master",
        default=None,
        metavar="URL",
        help="Spark master (default: local[*]; e.g. spark://host:7077, yarn)",
    )


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "analyze",
        help="compute run metrics from event logs on Spark",
        description="Compute the simulator's metrics, ownership intervals and idle time "
        "per partition from event logs (Parquet or JSON lines), on Spark.",
    )
    parser.add_argument("logs", metavar="PATH", help="an event-log file or directory")
    parser.add_argument("--out", required=True, metavar="DIR", help="where the tables go")
    add_master_argument(parser)
    parser.set_defaults(run=run)


def analyze_and_report(spark: SparkSession, events: DataFrame, out: Path) -> dict[str, str]:
    """Analyze ``events``, write the tables under ``out``, print the summary; name -> path."""
    from regroup.pipeline.analytics import analyze, summary, write_analysis
    from regroup.pipeline.report import write_report

    analysis = analyze(events)
    paths = write_analysis(analysis, out)
    metrics = spark.read.parquet(paths["metrics"])
    labels = spark.read.parquet(paths["labels"])
    _print_summary(summary(metrics, labels).collect(), out)
    report = write_report(paths, spark, out / "report.html")
    paths["report"] = str(report)
    print(f"report: {report}")
    return paths


def _print_summary(rows: list[Any], out: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"runs by scenario, protocol and assignor (tables in {out})")
    columns = (
        ("scenario", "scenario"),
        ("protocol", "protocol"),
        ("assignor", "assignor"),
        ("runs", "runs"),
        ("idle p-s", "idle_partition_s_mean"),
        ("max pause ms", "longest_pause_ms"),
        ("rebal.", "rebalances_mean"),
        ("moved", "moved_mean"),
        ("dups", "duplicates_mean"),
        ("stable ms", "time_to_stable_max_ms"),
        ("viol.", "violations"),
    )
    table.caption = (
        "means across runs; max pause, time to stable (max) and violations (sum) over them"
    )
    for index, (title, _) in enumerate(columns):
        if index < 3:
            table.add_column(title, overflow="fold")
        else:
            table.add_column(title, justify="right", min_width=5)
    for row in rows:
        table.add_row(*("-" if row[key] is None else str(row[key]) for _, key in columns))
    console = Console()
    if not console.is_terminal:
        # A pipe or a file does not wrap: print the table at a readable width.
        console = Console(width=150)
    console.print(table)


def run(args: argparse.Namespace) -> int:
    from regroup.pipeline.logs import LogError, read_events
    from regroup.pipeline.spark import build_session

    if not Path(args.logs).exists():
        raise UsageError(f"no such file or directory: {args.logs}")
    spark = build_session(args.master, app_name="regroup analyze")
    try:
        events = read_events(spark, args.logs)
    except LogError as error:
        raise UsageError(str(error)) from None
    analyze_and_report(spark, events, Path(args.out))
    return 0
