"""``regroup compare``: eager, cooperative and KIP-848 on one scenario, and a verdict.

    regroup compare --scenario rolling-bounce --members 12 --partitions 48 --seeds 3 \\
        --data restore_ms=5000 [--static] [--config K=V ...] [--json] [--html PATH]

Runs the scenario under each protocol with seeds 0..N-1 (``regroup.sim.comparison``)
and prints one table (each metric's median across the seeds, its range when the
seeds differ, and the headline's ratio to the best), the assumptions, and a
one-line verdict naming the winner and the mechanism, or "tie" when the seeds'
ranges overlap. ``--json`` prints one object: ``{"scenario", "assumptions",
"protocols": {"eager", "cooperative", "consumer"}, "verdict"}``, each protocol's
metrics as ``simulate --json`` prints them (seed 0) plus ``summary`` (median,
min, max per metric) and ``ratio_to_best`` (docs/formats/compare-json.md).
``--html`` writes one page with the three seed-0 timelines side by side. A
progress bar counts the runs on stderr when it is a terminal.

``--from eager|cooperative`` (implied by a scenario that migrates itself, such as
``upgrade-to-consumer``) compares migrating the classic group online to KIP-848
with staying on it instead (``regroup.sim.migration``): one table with a section
per phase (the migration, afterwards), the verdict, and in ``--json`` the keys
``from`` and ``migration`` (docs/formats/compare-json.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from regroup.cli.errors import UsageError
from regroup.cli.options import parse_configs, parse_data
from regroup.cli.outputs import check_writable
from regroup.sim.scenario import BUILTINS, Scenario, ScenarioError, load_scenario, with_data

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="run eager, cooperative and KIP-848 on one scenario; a table and a verdict",
        description="Run a scenario (a built-in name or a .toml/.json file) under eager, "
        "cooperative and KIP-848 (consumer) with the same seeds; print a table of medians "
        f"and ranges and a one-line verdict. Built-ins: {', '.join(BUILTINS)}.",
    )
    parser.add_argument("--scenario", required=True, metavar="NAME|PATH")
    parser.add_argument("--members", type=int, default=None, metavar="N", help="group size")
    parser.add_argument(
        "--partitions", type=int, default=None, metavar="P", help="partitions of each topic"
    )
    parser.add_argument(
        "--seeds", type=int, default=3, metavar="N", help="seeds 0..N-1 per protocol (default 3)"
    )
    parser.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="KEY=N",
        help="a [data] setting, e.g. restore_ms=5000 (repeatable)",
    )
    parser.add_argument(
        "--static", action="store_true", default=None, help="static membership (KIP-345)"
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka config for every run (repeatable); session.timeout.ms and "
        "heartbeat.interval.ms go to the coordinator's group.consumer.* under KIP-848",
    )
    parser.add_argument(
        "--no-sensitivity",
        dest="sensitivity",
        action="store_false",
        help="do not run the comparison again with the settings that may change the answer "
        "(heartbeat intervals, restore times, static membership)",
    )
    parser.add_argument(
        "--from",
        dest="from_protocol",
        default=None,
        metavar="eager|cooperative",
        help="compare migrating this classic group online to KIP-848 (a rolling restart with "
        "group.protocol=consumer, then the scenario) with staying on it; implied by a "
        "scenario that migrates itself (upgrade-to-consumer)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument(
        "--html", default=None, metavar="PATH", help="write the comparison as one HTML page"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from regroup.sim.comparison import compare
    from regroup.sim.migration import migrates_itself

    for name, low in (("members", 0), ("partitions", 1), ("seeds", 1)):
        value = getattr(args, name)
        if value is not None and value < low:
            raise UsageError(f"--{name} must be >= {low}, got {value}")
    if args.html is not None:
        if not args.html.endswith(".html"):
            raise UsageError(f"--html must end in .html, got {args.html!r}")
        check_writable("--html", args.html)
    try:
        scenario = with_data(load_scenario(args.scenario), parse_data(args.data))
        if args.from_protocol is not None or migrates_itself(scenario):
            return _run_migration(args, scenario)
        comparison = compare(
            scenario,
            members=args.members,
            partitions=args.partitions,
            seeds=args.seeds,
            static=args.static,
            configs=parse_configs(args.config),
            keep_timelines=args.html is not None,
            sensitivity=args.sensitivity,
            progress=_progress() if sys.stderr.isatty() else None,
        )
    except (ScenarioError, ValueError) as error:
        raise UsageError(str(error)) from None
    finally:
        _close_progress()
    rows = table_rows(comparison)
    if args.html is not None:
        from regroup.sim.comparison import comparison_html

        try:
            with open(args.html, "w", encoding="utf-8") as out:
                out.write(comparison_html(comparison, rows))
        except OSError as error:
            raise UsageError(f"cannot write {args.html}: {error.strerror}") from None
    if args.json:
        print(json.dumps(comparison.to_json(), sort_keys=False))
    else:
        _print(comparison, rows)
    return 0


def _run_migration(args: argparse.Namespace, scenario: Scenario) -> int:
    """``--from``: migrating to KIP-848 against staying classic (``regroup.sim.migration``)."""
    from regroup.sim.migration import compare_migration

    source = args.from_protocol or scenario.protocol
    try:
        comparison = compare_migration(
            scenario,
            source,
            members=args.members,
            partitions=args.partitions,
            seeds=args.seeds,
            static=args.static,
            configs=parse_configs(args.config),
            keep_timelines=args.html is not None,
            sensitivity=args.sensitivity,
            progress=_progress() if sys.stderr.isatty() else None,
        )
    finally:
        _close_progress()
    rows = migration_rows(comparison)
    if args.html is not None:
        from regroup.sim.comparison import comparison_html

        labels = comparison.labels()
        title = (
            f"{comparison.scenario}: migrating from {source} to KIP-848 (consumer) "
            f"vs staying {source}"
        )
        page = comparison_html(
            comparison.after, rows, title=title, verdict=comparison.verdict, labels=labels
        )
        try:
            with open(args.html, "w", encoding="utf-8") as out:
                out.write(page)
        except OSError as error:
            raise UsageError(f"cannot write {args.html}: {error.strerror}") from None
    if args.json:
        print(json.dumps(comparison.to_json(), sort_keys=False))
        return 0
    from rich.console import Console

    from regroup.sim.assumptions import assumption_lines

    console = Console()
    if console.width > 100:
        console = Console(width=100)
    seeds = "seed 0" if comparison.seeds == 1 else f"seeds 0-{comparison.seeds - 1}"
    console.print(
        f"{comparison.scenario}, {comparison.after.size}: migrating from {source} to KIP-848 "
        f"against staying {source}, medians over {seeds}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    _print_table(console, rows)
    for line in assumption_lines(comparison.after.assumptions, width=min(console.width, 80)):
        console.print(line, markup=False, highlight=False)
    console.print(f"verdict: {comparison.verdict}", markup=False, highlight=False, soft_wrap=True)
    return 0


def migration_rows(comparison: Any) -> list[list[str]]:
    """The migration table as text cells: a header, then each phase's rows under a title
    row (the migration, then afterwards), as ``table_rows`` gives them."""
    labels = comparison.labels()
    plan = comparison.plan
    rows = [["metric", *(labels[p] for p in comparison.after.protocols)]]
    blank = [""] * len(comparison.after.protocols)
    phases = [("the migration", comparison.during)]
    if plan.has_after:
        phases.append(("after it" if plan.own else "afterwards", comparison.after))
    for title, phase in phases:
        first = phase.protocols[comparison.from_protocol].runs[0]
        start, end = first["window_start_ms"] / 1000, first["window_end_ms"] / 1000
        rows.append([f"{title}, {start:g}-{end:g} s", *blank])
        rows.extend(table_rows(phase, labels)[1:])
    return rows


_BAR: list[Any] = []


def _progress() -> Any:
    """A progress bar on stderr counting the runs (closed by ``_close_progress``)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    progress = Progress(
        TextColumn("simulating {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    progress.start()
    task = progress.add_task("eager", total=None)
    _BAR.append(progress)

    def report(label: str, done: int, total: int) -> None:
        progress.update(task, completed=done, total=total, description=label)

    return report


def _close_progress() -> None:
    while _BAR:
        _BAR.pop().stop()


def table_rows(comparison: Any, labels: Mapping[str, str] | None = None) -> list[list[str]]:
    """The table as text cells: a header, then per metric its medians (and ranges, ratios)."""
    from regroup.sim.comparison import DECIMAL_METRICS, HEADLINE, LABELS, METRICS
    from regroup.sim.comparison import cell as _cell

    protocols = list(comparison.protocols)
    names = LABELS if labels is None else labels
    rows = [["metric", *(names[p] for p in protocols)]]
    for key, label in METRICS:
        decimals = key in DECIMAL_METRICS
        summaries = [comparison.protocols[p].summary(key) for p in protocols]
        rows.append([label, *(_cell(s.median, decimals=decimals) for s in summaries)])
        if comparison.seeds > 1 and any(s.low != s.high for s in summaries):
            rows.append(
                [
                    f"  range, {comparison.seeds} seeds",
                    *(
                        "-"
                        if s.low is None
                        else f"{_cell(s.low, decimals=decimals)}-{_cell(s.high, decimals=decimals)}"
                        for s in summaries
                    ),
                ]
            )
        if key in (HEADLINE, "max_partition_pause_ms"):
            ratios = comparison.ratios(key)
            rows.append(
                [
                    "  x best",
                    *("-" if ratios[p] is None else f"{ratios[p]:.2f}" for p in protocols),
                ]
            )
    return rows


def _print(comparison: Any, rows: Sequence[Sequence[str]]) -> None:
    from rich.console import Console

    from regroup.sim.assumptions import assumption_lines

    console = Console()
    if console.width > 100:
        console = Console(width=100)
    seeds = "seed 0" if comparison.seeds == 1 else f"seeds 0-{comparison.seeds - 1}"
    console.print(
        f"{comparison.scenario}, {comparison.size}: medians over {seeds} per protocol",
        markup=False,
        highlight=False,
    )
    _print_table(console, rows)
    for line in assumption_lines(comparison.assumptions, width=min(console.width, 80)):
        console.print(line, markup=False, highlight=False)
    # One line by contract (the terminal may fold it; rich does not break it).
    console.print(f"verdict: {comparison.verdict}", markup=False, highlight=False, soft_wrap=True)


def _print_table(console: Any, rows: Sequence[Sequence[str]]) -> None:
    from rich.table import Table

    table = Table()
    for index, header in enumerate(rows[0]):
        table.add_column(header, justify="left" if index == 0 else "right")
    for row in rows[1:]:
        table.add_row(*row)
    console.print(table)
