"""``regroup sweep``: a grid of scenario runs, simulated on Spark, then analyzed.

The grid is a file (``--grid``; the format is ``regroup.pipeline.sweep``'s
docstring) and/or flags for the common axes; a flag replaces that axis of the
file. Each run is simulated inside a Spark task; the event logs land in
``OUT/events`` (Parquet, partitioned by scenario and run), the specs in
``OUT/runs``, and the metrics tables beside them (``regroup analyze``'s).
A progress bar counts finished runs on stderr when it is a terminal.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from regroup.cli.analyze import (
    add_master_argument,
    analyze_and_report,
    prepare,
    spark_failures,
    spark_phase,
)
from regroup.cli.errors import UsageError
from regroup.cli.options import parse_configs, parse_data
from regroup.cli.outputs import run_phases, run_with_progress

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["add_parser", "run", "run_grid", "run_specs"]


def _list(kind: type) -> Any:
    def parse(text: str) -> list[Any]:
        try:
            return [kind(item.strip()) for item in text.split(",") if item.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list, got {text!r}"
            ) from None

    return parse


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="simulate a grid of scenarios on Spark and analyze the runs",
        description="Simulate every combination of scenario x protocol x assignor x members "
        "x partitions x configs x seeds on Spark; write the event logs and metrics as Parquet.",
    )
    parser.add_argument("--grid", default=None, metavar="FILE", help="a grid (.toml or .json)")
    parser.add_argument("--scenario", type=_list(str), default=None, metavar="A,B")
    parser.add_argument("--protocol", type=_list(str), default=None, metavar="P,Q")
    parser.add_argument("--assignor", type=_list(str), default=None, metavar="A,B")
    parser.add_argument("--members", type=_list(int), default=None, metavar="N,M")
    parser.add_argument("--partitions", type=_list(int), default=None, metavar="P,Q")
    parser.add_argument("--seeds", type=int, default=None, metavar="N", help="seeds 0..N-1")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka config for every run (repeatable)",
    )
    parser.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="KEY=N",
        help="a [data] setting for every run, e.g. restore_ms=5000 (repeatable)",
    )
    parser.add_argument("--out", required=True, metavar="DIR")
    add_master_argument(parser)
    parser.set_defaults(run=run)


def _grid(args: argparse.Namespace) -> Any:
    from regroup.pipeline.sweep import Grid, GridError, load_grid, parse_grid

    try:
        grid = load_grid(args.grid) if args.grid else None
        if grid is None:
            if not args.scenario:
                raise UsageError("give --grid FILE or --scenario NAME[,NAME...]")
            grid = Grid(scenarios=tuple(args.scenario))
        axes: dict[str, Any] = {}
        for name in ("scenario", "protocol", "assignor", "members", "partitions"):
            value = getattr(args, name)
            if value:
                axes[name + ("s" if name != "members" and name != "partitions" else "")] = value
        if args.seeds is not None:
            if args.seeds < 1:
                raise UsageError("--seeds must be >= 1")
            axes["seeds"] = args.seeds
        merged = {
            "scenarios": list(grid.scenarios),
            "seeds": list(grid.seeds),
            "configs": [dict(c) for c in grid.configs],
            "data": [dict(d) for d in grid.data],
        }
        for name in ("protocols", "assignors", "members", "partitions"):
            values = getattr(grid, name)
            if values != (None,):
                merged[name] = list(values)
        merged.update(axes)
        grid = parse_grid(merged)
    except GridError as error:
        raise UsageError(str(error)) from None
    extra = parse_configs(args.config)
    if extra:
        grid = replace(grid, configs=tuple({**c, **extra} for c in grid.configs))
    data = parse_data(getattr(args, "data", None) or ())
    if data:
        grid = replace(grid, data=tuple({**d, **data} for d in grid.data))
    return grid


def run(args: argparse.Namespace) -> int:
    for name in ("members", "partitions"):
        for value in getattr(args, name) or ():
            if value < 1:
                raise UsageError(f"--{name} values must be >= 1, got {value}")
    return run_grid(_grid(args), args.out, args.master)


#: The most shuffle partitions a sweep asks of a cluster (Spark's default).
MAX_CLUSTER_SHUFFLE_PARTITIONS = 200


def run_grid(
    grid: Any,
    out: str | Path,
    master: str | None,
    *,
    intro: str = "",
    files: dict[str, str] | None = None,
) -> int:
    """Expand ``grid``, simulate its runs on Spark, analyze them and write the report.

    ``--out`` and ``--master`` are checked first, the grid next, and only then
    does Spark start; ``files`` (name -> text, e.g. the demo's ``grid.json``) are
    written into the output once it is known to be writable.
    """
    from regroup.pipeline.sweep import GridError, expand

    output = prepare(out, master)
    try:
        specs, skipped = expand(grid)
    except GridError as error:
        raise UsageError(str(error)) from None
    for line in skipped:
        print(f"skipped: {line}", file=sys.stderr)
    if not specs:
        raise UsageError("the grid has no runnable combination")
    return run_specs(specs, output, master, intro=intro, files=files)


def run_specs(
    specs: list[Any],
    output: Any,
    master: str | None,
    *,
    intro: str = "",
    files: dict[str, str] | None = None,
) -> int:
    """Simulate ``specs`` (``RunSpec``) on Spark into ``output`` (a checked ``Output``),
    analyze them and write the report."""
    from regroup.pipeline.spark import build_session
    from regroup.pipeline.sweep import run_sweep

    def start() -> SparkSession:
        # On a cluster, one shuffle partition per run (at most Spark's 200); local: 4.
        spark = build_session(
            master,
            app_name="regroup sweep",
            cluster_shuffle_partitions=min(MAX_CLUSTER_SHUFFLE_PARTITIONS, len(specs)),
        )
        output.check_remote(spark)
        for name, text in (files or {}).items():
            output.write_text(spark, name, text)
        return spark

    with spark_failures():
        (spark,) = run_phases("starting", [("starting Spark", start)])
        done = spark.sparkContext.accumulator(0)
        print(f"{len(specs)} runs on {spark.sparkContext.master}", file=sys.stderr)
        simulate = spark_phase(
            "simulating", lambda: run_sweep(spark, specs, output.root, done=done)
        )
        _with_progress(len(specs), done, simulate)
        from regroup.pipeline.logs import read_events

        analyze_and_report(
            lambda: read_events(spark, output.join("events")), output, intro=intro, spark=spark
        )
    return 0


def _with_progress(total: int, done: Any, work: Any) -> None:
    """Run ``work()`` with a progress bar of the runs done (``outputs.run_with_progress``)."""
    run_with_progress(total, done, work, label="simulating", unit="runs")
