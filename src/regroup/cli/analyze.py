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

``--out`` is a local directory or any URI Spark writes (``regroup.pipeline.output``),
checked before any work; a bad ``--master`` fails before Spark starts, and a
Spark or py4j failure is one line naming its cause (``spark_failures``), exit 2.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from regroup.cli.errors import UsageError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from regroup.pipeline.output import Output

__all__ = [
    "add_master_argument",
    "add_parser",
    "analyze_and_report",
    "prepare",
    "run",
    "spark_failures",
    "spark_phase",
]


def prepare(out: str | Path, master: str | None) -> Output:
    """The checks made before any work: ``--master`` parses and answers, ``--out`` is a
    writable directory (or a URI, checked once Spark is up). ``UsageError`` otherwise."""
    from regroup.pipeline.output import Output, OutputError
    from regroup.pipeline.spark import MasterError, check_master

    try:
        output = Output(out)
        output.check_local()
        check_master(master)
    except (OutputError, MasterError) as error:
        raise UsageError(str(error)) from None
    return output


@contextmanager
def spark_failures() -> Iterator[None]:
    """A Spark, py4j or output failure inside the block becomes one ``UsageError`` line;
    on Ctrl-C the JVM is stopped (``spark.stop_spark``) before ``KeyboardInterrupt`` goes
    on to ``main``'s one line."""
    from regroup.pipeline.logs import LogError
    from regroup.pipeline.output import OutputError
    from regroup.pipeline.spark import failure_cause, stop_spark

    try:
        yield
    except KeyboardInterrupt:
        stop_spark()  # no JVM left behind, no py4j traceback from the work it was running
        raise
    except (LogError, OutputError) as error:
        raise UsageError(str(error)) from None
    except Exception as error:
        if not _is_spark_error(error):
            raise
        raise UsageError(f"Spark failed: {failure_cause(error)}") from None


def _is_spark_error(error: BaseException) -> bool:
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]

    try:
        from pyspark.errors import PySparkException
    except ImportError:  # pragma: no cover - pyspark < 3.4
        return isinstance(error, Py4JError)
    return isinstance(error, Py4JError | PySparkException)


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


def spark_phase(name: str, work: Callable[[], Any]) -> Callable[[], Any]:
    """``work`` with its Spark jobs in the job group ``name`` (the phase the progress bar
    names, and what Spark's status tracker and UI show of it)."""

    def run() -> Any:
        from pyspark import SparkContext

        context = SparkContext._active_spark_context
        if context is not None:
            context.setJobGroup(name, f"regroup: {name}")
        return work()

    return run


def analyze_and_report(
    events: DataFrame | Callable[[], DataFrame],
    out: str | Path | Output,
    *,
    intro: str = "",
    spark: SparkSession | Callable[[], SparkSession] | None = None,
    before: Sequence[tuple[str, Callable[[], Any]]] = (),
) -> dict[str, str]:
    """Analyze ``events``, write the tables under ``out``, print the summary; name -> path.

    Each step is a phase of one progress bar (``outputs.run_phases``): ``before`` (such
    as starting Spark), reading the logs (``events`` may be a callable that reads them),
    each table written, the summary and the report. The analysis is cached
    (``analytics.analyze``): the five Parquet writes, the summary and the report's
    collects compute each table once. ``out`` may be a URI; then ``spark`` writes the
    report through Hadoop's FileSystem.
    """
    from regroup.cli.outputs import run_phases
    from regroup.pipeline.analytics import TABLES, analyze, summary, unpersist, write_table
    from regroup.pipeline.output import Output
    from regroup.pipeline.report import build_report

    output = out if isinstance(out, Output) else Output(out)
    made: dict[str, Any] = {}
    paths: dict[str, str] = {}

    def read() -> None:
        frame = events() if callable(events) else events
        made["events"] = frame
        made["analysis"] = analyze(frame)

    def write(name: str) -> None:
        paths[name] = write_table(made["analysis"], output.root, name)

    def summarize() -> None:
        rows = summary(made["analysis"].metrics, made["analysis"].labels).collect()
        made["rows"] = [r.asDict() for r in rows]

    def report() -> None:
        page = build_report(made["analysis"], summary=made["rows"], intro=intro)
        session = spark() if callable(spark) else spark
        paths["report"] = output.write_text(
            session or made["events"].sparkSession, "report.html", page
        )

    phases = [*before, ("reading the event logs", read)]
    phases += [(f"writing {name}", functools.partial(write, name)) for name in TABLES]
    phases += [("summarizing", summarize), ("writing the report", report)]
    interrupted = False
    try:
        run_phases("analyzing", [(name, spark_phase(name, work)) for name, work in phases])
    except KeyboardInterrupt:
        interrupted = True  # the JVM is stopped (spark_failures): nothing to unpersist
        raise
    finally:
        if "analysis" in made and not interrupted:
            unpersist(made["analysis"])
    _print_summary_of(made["rows"], output.root)
    print(f"report: {paths['report']}")
    return paths


def _print_summary_of(rows: list[dict[str, Any]], out: str) -> None:
    from regroup.pipeline.report import restore_of

    # The restore study (the demo's NAME@restore-Nms runs) is the report's own section.
    print_summary([r for r in rows if restore_of(str(r["scenario"])) is None], out)


#: The console summary's columns: title, summary key, unit scale (ms -> s where 1000),
#: decimals. Times are in seconds (the caption says so).
_COLUMNS = (
    ("idle p-s", "idle_partition_s_mean", 1, 1),
    ("pause", "longest_pause_ms", 1000, 1),
    ("rebal", "rebalances_mean", 1, 1),
    ("moved", "moved_mean", 1, 0),
    ("dups", "duplicates_mean", 1, 0),
    ("stable", "time_to_stable_max_ms", 1000, 1),
    ("viol", "violations", 1, 0),
)
#: The widest the console summary gets: it fits an 80-column terminal.
SUMMARY_WIDTH = 80


def _cell(value: Any, scale: int, decimals: int = 0) -> str:
    if value is None:
        return "-"
    if scale != 1 or isinstance(value, float):
        return f"{value / scale:.{decimals}f}"
    return str(value)


def print_summary(rows: list[dict[str, Any]], out: str | Path) -> None:
    """The summary as a compact table (at most ``SUMMARY_WIDTH`` columns) on stdout.

    One row per scenario, group size and protocol; the scenario is printed on
    its first row only. When every protocol ran with one assignor, the
    assignors are named once in the caption instead of in a column.
    """
    from rich.console import Console

    groups, caption = summary_tables(rows)
    console = Console(width=SUMMARY_WIDTH) if not Console().is_terminal else Console()
    if console.width > SUMMARY_WIDTH:
        console = Console(width=SUMMARY_WIDTH)
    console.print(f"summary (tables in {out})", markup=False, highlight=False)
    for scenario, table in groups:
        console.print(scenario, markup=False, highlight=False)
        console.print(table)
    for line in caption:
        console.print(line, markup=False, highlight=False)


def summary_tables(rows: list[dict[str, Any]]) -> tuple[list[tuple[str, Any]], list[str]]:
    """The console summary: per scenario (in row order) its name and a rich ``Table`` of
    its rows, the tables' columns equally wide; and the caption lines.

    Within ``SUMMARY_WIDTH`` columns: the scenario is a heading above its rows rather
    than a column (names run to 26 characters), counts are whole numbers, times are
    seconds (said once in the caption), and the violations column is left out when
    there are none (the caption says so).
    """
    import textwrap

    from rich.table import Table

    assignors: dict[str, set[str]] = {}
    for row in rows:
        assignors.setdefault(str(row["protocol"]), set()).add(str(row["assignor"]))
    one_each = all(len(names) == 1 for names in assignors.values())
    violations = any(row.get("violations") for row in rows)
    columns = [c for c in _COLUMNS if violations or c[1] != "violations"]
    headers = ["protocol" if one_each else "protocol / assignor", "size"]
    headers += [title for title, _, _, _ in columns]
    cells: dict[str, list[list[str]]] = {}
    for row in rows:
        protocol = str(row["protocol"])
        if not one_each:
            protocol = f"{protocol} / {row['assignor']}"
        cells.setdefault(str(row["scenario"]), []).append(
            [
                protocol,
                _cell(row["members"], 1),
                *(_cell(row[key], scale, decimals) for _, key, scale, decimals in columns),
            ]
        )
    widths = [len(header) for header in headers]
    for group in cells.values():
        for line in group:
            widths = [max(w, len(cell)) for w, cell in zip(widths, line, strict=True)]
    groups: list[tuple[str, Any]] = []
    for scenario, group in cells.items():
        table = Table(box=None, padding=(0, 1), header_style="bold")
        for index, (header, width) in enumerate(zip(headers, widths, strict=True)):
            table.add_column(
                header,
                justify="left" if index == 0 else "right",
                no_wrap=True,
                min_width=width,
            )
        for line in group:
            table.add_row(*line)
        groups.append((scenario, table))
    runs = sorted({int(row["runs"]) for row in rows})
    seeds = str(runs[0]) if len(runs) == 1 else f"{runs[0]}-{runs[-1]}"
    text = [
        f"Means over {seeds} run(s) per row. idle p-s: idle partition-seconds; pause: the "
        "longest idle gap of a partition and stable: time to stable, both in seconds and "
        "both the worst run's; dups: records processed twice."
        + ("" if violations else " No invariant violations.")
    ]
    if one_each:
        text.append(
            "Assignors: " + ", ".join(f"{p}={next(iter(a))}" for p, a in sorted(assignors.items()))
        )
    caption = [line for part in text for line in textwrap.wrap(part, SUMMARY_WIDTH)]
    return groups, caption


def run(args: argparse.Namespace) -> int:
    from regroup.pipeline.logs import LogError, check_logs, read_events
    from regroup.pipeline.spark import build_session

    logs = str(args.logs)
    try:
        check_logs(logs)  # on the driver, before Spark starts
    except LogError as error:
        raise UsageError(str(error)) from None
    output = prepare(args.out, args.master)
    session: list[SparkSession] = []

    def start() -> None:
        session.append(build_session(args.master, app_name="regroup analyze"))
        output.check_remote(session[0])

    def events() -> DataFrame:
        try:
            return read_events(session[0], logs)
        except LogError as error:
            raise UsageError(str(error)) from None

    with spark_failures():
        analyze_and_report(
            events, output, spark=lambda: session[0], before=[("starting Spark", start)]
        )
    return 0
