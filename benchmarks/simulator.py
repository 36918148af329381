"""Simulator benchmarks: how fast regroup.sim runs against real time, and what it measures.

Three tables:

1. A rolling bounce of 1,000 members over 10,000 partitions under each
   protocol (eager ``range``, cooperative ``cooperative-sticky``, KIP-848
   ``uniform``): wall time, virtual seconds per wall second, event-loop
   steps. The data plane is off (no records) so the cost is the protocol's.
   A run that exceeds ``--budget`` wall seconds is stopped and reported with
   the virtual time it reached (nothing is hidden). The CPU seconds of the
   process are shown beside the wall seconds: on a shared machine the wall
   time also counts the time other processes held the CPU. Speed is read as
   a ratio (virtual seconds per wall second, or one revision against another
   with ``--compare-rev``), never against a fixed number of seconds: this
   machine's speed moves by a third between runs. ``--repeat N`` runs each
   protocol N times and shows the median and the range.
2. 10 consumers reading 900 partitions as members are added (one consumer at
   first, nine more joining 1 s apart; and the ``scale-out`` shape, 9 -> 10),
   with records flowing: time to a stable group, idle partition-seconds,
   longest pause, partitions moved.
3. A rolling bounce of 10 members (900 partitions, records flowing).

Usage::

    python benchmarks/simulator.py                 # everything (minutes)
    python benchmarks/simulator.py --quick         # 1/10 of the bounce size
    python benchmarks/simulator.py --members 200 --partitions 2000 --budget 60
    python benchmarks/simulator.py --skip-small    # the large bounce table only
    python benchmarks/simulator.py --skip-small --repeat 3   # median and range of 3 runs each
    python benchmarks/simulator.py --compare-rev HEAD~5   # the large bounce, then vs now
    python benchmarks/simulator.py --compare-rev 6e42ee3 --members 100 --partitions 1000 \
        --records 10 --gap-ms 10000                       # with records flowing
    python benchmarks/simulator.py --scaling --records 10 # CPU against group size

``--compare-rev REV`` runs the large bounce at another revision (``git archive``)
and at this working tree, each protocol at REV then here in turn, each run in its
own process, and prints the ratio of the two wall times and whether the two runs
measured the same (they must, when behaviour did not change: every metric both
revisions have is compared, and those that differ are named): a before/after
figure measured in one run, so the machine's drift between sessions cancels out.
``--records N`` (records per second per partition) and ``--gap-ms`` set the bounce
it runs. ``--scaling`` prints the CPU seconds of one bounce per protocol as members
grow at fixed partitions and as partitions grow at fixed members, each run in its
own process, with the exponent fitted to them (CPU ~ size ** exponent).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from regroup.sim.metrics import RunMetrics
from regroup.sim.scenario import Action, DataConfig, Scenario
from regroup.sim.simulation import RunResult, Settings, Simulation

PROTOCOLS = (("eager", "range"), ("cooperative", "cooperative-sticky"), ("consumer", "uniform"))


class _OverBudget(Exception):
    def __init__(self, reached_ms: int) -> None:
        self.reached_ms = reached_ms


@dataclass
class Timed:
    result: RunResult | None
    wall_s: float
    cpu_s: float
    virtual_ms: int
    steps: int
    finished: bool


def timed_run(settings: Settings, budget_s: float) -> Timed:
    simulation = Simulation(settings, keep_events=False)
    started = time.perf_counter()
    cpu_started = time.process_time()

    def watch(now: int, end: int) -> None:
        if time.perf_counter() - started > budget_s:
            raise _OverBudget(now)

    try:
        result = simulation.run(watch)
    except _OverBudget as over:
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        return Timed(None, wall, cpu, over.reached_ms, simulation.world.steps, False)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    return Timed(result, wall, cpu, result.duration_ms, result.steps, True)


def bounce_scenario(members: int, partitions: int, *, records: int, gap_ms: int) -> Scenario:
    return Scenario(
        "rolling-bounce",
        members=members,
        topics={"events": partitions},
        data=DataConfig(records_per_second=records, idle_poll_ms=1000 if records else 60000),
        settle_ms=30000,
        broker={"group.initial.rebalance.delay.ms": 3000},
        actions=(
            Action("rolling_bounce", at_ms=30000, members="all", gap_ms=gap_ms, downtime_ms=1000),
        ),
    )


def table_bounce(
    console: Console, members: int, partitions: int, budget: float, repeat: int = 1
) -> None:
    """The large bounce, ``repeat`` runs per protocol (each in this process, one after another).

    The wall time of one run on a shared machine moves by a third between runs
    of the same build, so with ``repeat`` > 1 the table shows the median and
    the range: every run is counted, none is dropped.
    """
    table = Table(title=f"Rolling bounce: {members} members, {partitions} partitions, no records")
    for column in (
        "protocol",
        "assignor",
        "wall s" if repeat == 1 else f"wall s (median of {repeat})",
        "wall s range",
        "cpu s",
        "virtual s",
        "virtual s / wall s",
        "steps",
        "rebalances",
        "moved",
        "idle partition-s",
        "finished",
    ):
        table.add_column(column, justify="right")
    scenario = bounce_scenario(members, partitions, records=0, gap_ms=2000)
    for protocol, assignor in PROTOCOLS:
        runs = [
            timed_run(Settings(scenario, protocol=protocol, assignor=assignor), budget)
            for _ in range(repeat)
        ]
        walls = sorted(each.wall_s for each in runs)
        wall = statistics.median(walls)
        # Finished runs measure the same (the simulation is deterministic); show one of them.
        run = next((each for each in runs if each.finished), runs[-1])
        m = run.result.metrics if run.result else None
        finished = sum(1 for each in runs if each.finished)
        table.add_row(
            protocol,
            assignor,
            f"{wall:.1f}",
            f"{walls[0]:.1f}-{walls[-1]:.1f}",
            f"{statistics.median(each.cpu_s for each in runs):.1f}",
            f"{run.virtual_ms / 1000:.0f}",
            f"{run.virtual_ms / 1000 / max(wall, 1e-9):.1f}",
            str(run.steps),
            str(m.rebalances) if m else "-",
            str(m.partitions_moved) if m else "-",
            f"{m.idle_partition_seconds:.0f}" if m else "-",
            "yes" if finished == repeat else f"{finished} of {repeat} (budget {budget:.0f} s)",
        )
    console.print(table)


REPO = Path(__file__).resolve().parent.parent


def one_bounce_json(
    protocol: str,
    members: int,
    partitions: int,
    budget: float,
    *,
    setup_only: bool = False,
    records: int = 0,
    gap_ms: int = 2000,
) -> str:
    """The large bounce under one protocol, as one JSON line (a ``--compare-rev`` child).

    ``setup_only`` builds the simulation and stops before its first step: what
    ``benchmarks/instructions.py`` subtracts to count the run alone.
    """
    assignor = dict(PROTOCOLS)[protocol]
    scenario = bounce_scenario(members, partitions, records=records, gap_ms=gap_ms)
    if setup_only:
        Simulation(Settings(scenario, protocol=protocol, assignor=assignor), keep_events=False)
        return json.dumps({"steps": 0})
    run = timed_run(Settings(scenario, protocol=protocol, assignor=assignor), budget)
    m = run.result.metrics if run.result else None
    return json.dumps(
        {
            "wall_s": run.wall_s,
            "cpu_s": run.cpu_s,
            "virtual_ms": run.virtual_ms,
            "steps": run.steps,
            "finished": run.finished,
            "measured": _measured(m) if m else None,
        }
    )


def _measured(m: RunMetrics) -> dict[str, object]:
    """What two runs of the same behaviour must agree on: every metric but the per-partition
    idle times (their sum and pauses are in it)."""
    figures = m.to_json()
    figures.pop("idle_ms_by_partition", None)
    return figures


def _same(then: dict[str, object] | None, now: dict[str, object] | None) -> str:
    """``yes`` when both runs measured the same on every metric both revisions have, else
    the names of those that differ (a metric's definition may have changed in between)."""
    if then is None or now is None:
        return "-"
    differ = sorted(name for name in then.keys() & now.keys() if then[name] != now[name])
    return "yes" if not differ else "NO: " + ", ".join(differ)


def _source_at(rev: str, target: Path) -> Path:
    """The sources of ``rev`` exported into ``target`` (``git archive``); returns its ``src``."""
    target.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target / "src"


def table_compare_rev(
    console: Console,
    rev: str,
    members: int,
    partitions: int,
    budget: float,
    *,
    records: int = 0,
    gap_ms: int = 2000,
) -> None:
    with tempfile.TemporaryDirectory(prefix="regroup-rev-") as tmp:
        trees = (("then", _source_at(rev, Path(tmp) / "then")), ("now", REPO / "src"))
        table = Table(
            title=f"Rolling bounce: {members} members, {partitions} partitions, "
            + (f"{records} records/s per partition" if records else "no records")
            + f", {gap_ms} ms apart, {rev} vs now"
        )
        for column in (
            "protocol",
            f"{rev} wall s",
            "now wall s",
            f"{rev} cpu s",
            "now cpu s",
            "now / then (wall)",
            "now / then (cpu)",
            "now virtual s / wall s",
            "now virtual s / cpu s",
            "steps",
            "same result",
        ):
            table.add_column(column, justify="right")
        for protocol, _ in PROTOCOLS:
            runs = {}
            for name, src in trees:
                options = ["--members", str(members), "--partitions", str(partitions)]
                options += ["--budget", str(budget), "--records", str(records)]
                options += ["--gap-ms", str(gap_ms)]
                child = subprocess.run(
                    [sys.executable, __file__, "--one-bounce", protocol, *options],
                    env={**os.environ, "PYTHONPATH": str(src)},
                    check=True,
                    capture_output=True,
                    text=True,
                )
                runs[name] = json.loads(child.stdout.splitlines()[-1])
            then, now = runs["then"], runs["now"]
            finished = then["finished"] and now["finished"]
            table.add_row(
                protocol,
                f"{then['wall_s']:.1f}" + ("" if then["finished"] else " (over budget)"),
                f"{now['wall_s']:.1f}" + ("" if now["finished"] else " (over budget)"),
                f"{then['cpu_s']:.1f}",
                f"{now['cpu_s']:.1f}",
                f"{now['wall_s'] / then['wall_s']:.2f}" if finished else "-",
                f"{now['cpu_s'] / then['cpu_s']:.2f}" if finished else "-",
                f"{now['virtual_ms'] / 1000 / now['wall_s']:.1f}",
                f"{now['virtual_ms'] / 1000 / now['cpu_s']:.1f}",
                str(now["steps"]),
                _same(then["measured"], now["measured"]) if finished else "-",
            )
        console.print(table)


#: The sizes of ``--scaling``: members at fixed partitions, partitions at fixed members.
SCALING_MEMBERS = (10, 20, 40, 80)
SCALING_PARTITIONS_FIXED = 800
SCALING_PARTITIONS = (200, 400, 800, 1600)
SCALING_MEMBERS_FIXED = 20


def _exponent(sizes: list[int], costs: list[float]) -> float:
    """The least-squares slope of log(cost) against log(size): cost ~ size ** exponent."""
    xs = [math.log(size) for size in sizes]
    ys = [math.log(max(cost, 1e-9)) for cost in costs]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def _child_cpu(
    protocol: str, shape: tuple[int, int], budget: float, *, records: int, gap_ms: int
) -> float:
    """One bounce in its own process (no warm caches from the previous size): its CPU s."""
    members, partitions = shape
    options = ["--members", str(members), "--partitions", str(partitions), "--budget", str(budget)]
    options += ["--records", str(records), "--gap-ms", str(gap_ms)]
    child = subprocess.run(
        [sys.executable, __file__, "--one-bounce", protocol, *options],
        check=True,
        capture_output=True,
        text=True,
    )
    run = json.loads(child.stdout.splitlines()[-1])
    if not run["finished"]:
        raise SystemExit(f"{protocol} {members}x{partitions}: over the budget of {budget} s")
    return float(run["cpu_s"])


def table_scaling(console: Console, budget: float, *, records: int, gap_ms: int) -> None:
    """CPU seconds per rolling bounce as the group grows, one axis at a time, per protocol.

    Every member is bounced ``gap_ms`` apart, so the virtual length of a run grows with
    the members: the figure is what the whole bounce of a bigger group costs.
    """
    axes = (("members", SCALING_MEMBERS), ("partitions", SCALING_PARTITIONS))
    for axis, sizes in axes:
        fixed = (
            f"{SCALING_PARTITIONS_FIXED} partitions"
            if axis == "members"
            else f"{SCALING_MEMBERS_FIXED} members"
        )
        table = Table(
            title=f"CPU s per rolling bounce against {axis} ({fixed}, {records} records/s "
            f"per partition, {gap_ms} ms apart)"
        )
        table.add_column("protocol")
        for size in sizes:
            table.add_column(f"{size} {axis}", justify="right")
        table.add_column("fitted exponent", justify="right")
        for protocol, _ in PROTOCOLS:
            costs = [
                _child_cpu(
                    protocol,
                    (size, SCALING_PARTITIONS_FIXED)
                    if axis == "members"
                    else (SCALING_MEMBERS_FIXED, size),
                    budget,
                    records=records,
                    gap_ms=gap_ms,
                )
                for size in sizes
            ]
            table.add_row(
                protocol, *(f"{c:.2f}" for c in costs), f"{_exponent(list(sizes), costs):.2f}"
            )
        console.print(table)


def _metrics_row(table: Table, label: str, protocol: str, assignor: str, run: Timed) -> None:
    m = run.result.metrics if run.result else None
    if m is None:
        table.add_row(label, protocol, assignor, "-", "-", "-", "-", "-", f"{run.wall_s:.1f}")
        return
    table.add_row(
        label,
        protocol,
        assignor,
        "-" if m.time_to_stable_ms is None else f"{m.time_to_stable_ms / 1000:.1f}",
        f"{m.idle_partition_seconds:.0f}",
        f"{m.max_partition_pause_ms / 1000:.1f}",
        str(m.partitions_moved),
        str(m.duplicates),
        f"{run.wall_s:.1f}",
    )


def _comparison_table(title: str) -> Table:
    table = Table(title=title)
    for column in (
        "case",
        "protocol",
        "assignor",
        "time to stable s",
        "idle partition-s",
        "longest pause s",
        "moved",
        "duplicates",
        "wall s",
    ):
        table.add_column(column, justify="right")
    return table


def table_scale_out(console: Console, budget: float) -> None:
    table = _comparison_table("10 consumers reading 900 partitions as members are added")
    data = DataConfig(records_per_second=10, processing_us_per_record=100)
    growing = Scenario(
        "grow-1-to-10",
        members=1,
        topics={"events": 900},
        data=data,
        settle_ms=60000,
        actions=tuple(Action("start", at_ms=30000 + i * 1000, count=1) for i in range(9)),
    )
    nine_to_ten = Scenario(
        "scale-out-9-to-10",
        members=9,
        topics={"events": 900},
        data=data,
        actions=(Action("start", at_ms=30000, count=1),),
    )
    for scenario in (growing, nine_to_ten):
        for protocol, assignor in PROTOCOLS:
            run = timed_run(Settings(scenario, protocol=protocol, assignor=assignor), budget)
            _metrics_row(table, scenario.name, protocol, assignor, run)
    console.print(table)
    console.print(
        "A public third-party figure for this case is 103 s (classic) vs 5 s (KIP-848). "
        "regroup measures seconds for both because (1) processing here is 0.1 ms per "
        "record, so a batch ends within 50 ms and the classic members, which rejoin at "
        "their next application poll as Kafka's do, reach the join barrier at once (with "
        "second-long batches the eager join phase waits for the slowest batch); (2) no "
        "client start-up, coordinator discovery or metadata refresh is simulated. "
        "KIP-848's ~5 s is the heartbeat interval: "
        "a new owner learns of released partitions at its next heartbeat."
    )


def table_small_bounce(console: Console, budget: float) -> None:
    table = _comparison_table("Rolling bounce of 10 members (900 partitions, records flowing)")
    scenario = bounce_scenario(10, 900, records=10, gap_ms=10000)
    for static in (False, True):
        for protocol, assignor in PROTOCOLS:
            settings = Settings(scenario, protocol=protocol, assignor=assignor, static=static)
            run = timed_run(settings, budget)
            _metrics_row(table, "static" if static else "dynamic", protocol, assignor, run)
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10000)
    parser.add_argument("--budget", type=float, default=120.0, help="wall seconds per run")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per protocol of the large bounce (median and range shown)",
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument(
        "--skip-small", action="store_true", help="skip the two 10-member comparison tables"
    )
    parser.add_argument(
        "--compare-rev",
        metavar="REV",
        help="only the large bounce, at git revision REV and at this tree, in turn",
    )
    parser.add_argument(
        "--records",
        type=int,
        default=0,
        help="records per second per partition in --compare-rev and --scaling (default 0)",
    )
    parser.add_argument(
        "--gap-ms", type=int, default=2000, help="ms between bounced members (default 2000)"
    )
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="CPU per bounce against members and against partitions, with fitted exponents",
    )
    parser.add_argument("--one-bounce", choices=[p for p, _ in PROTOCOLS], help=argparse.SUPPRESS)
    parser.add_argument("--setup-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.one_bounce:
        print(
            one_bounce_json(
                args.one_bounce,
                args.members,
                args.partitions,
                args.budget,
                setup_only=args.setup_only,
                records=args.records,
                gap_ms=args.gap_ms,
            )
        )
        return
    members, partitions = args.members, args.partitions
    if args.quick:
        members, partitions = members // 10, partitions // 10
    # Wide enough for every column when the output goes to a file or a pipe (rich's default
    # there is 80 columns, which cuts the figures).
    console = Console(width=None if sys.stdout.isatty() else 180)
    if args.compare_rev:
        table_compare_rev(
            console,
            args.compare_rev,
            members,
            partitions,
            args.budget,
            records=args.records,
            gap_ms=args.gap_ms,
        )
        return
    if args.scaling:
        table_scaling(console, args.budget, records=args.records, gap_ms=args.gap_ms)
        return
    if not args.skip_small:
        table_scale_out(console, args.budget)
        table_small_bounce(console, args.budget)
    if not args.skip_large:
        table_bounce(console, members, partitions, args.budget, args.repeat)


if __name__ == "__main__":
    main()
