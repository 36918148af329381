"""Pipeline benchmarks: sweep throughput on local[1] vs local[2], analytics on 10M events.

Two tables:

1. **Simulations per minute.** The demo's grid (``regroup demo``: 3 scenarios x
   3 protocols x group sizes 4, 8, 16 x 3 seeds = 81 runs, 32 partitions,
   records flowing) simulated as Spark tasks and written as Parquet
   (``run_sweep``), once on ``local[1]`` and once on ``local[2]``, each in a
   fresh process (its own JVM). Each process first runs a small warm-up sweep
   (JVM start, JIT, Python worker start and imports are not what we measure),
   then the timed one. The scaling is local[2]'s runs per minute over
   local[1]'s. The CPU seconds are those of the timed part: the driver, its
   JVM and the JVM's Python workers (read from ``/proc``).
2. **Analytics on 10 million events.** The events are *simulated*, not
   synthetic: rolling bounces of 16 members over 128 partitions with records
   flowing, under each protocol and enough seeds for ``--events`` events
   (the real event schema, written by the real sweep). They are generated
   once into ``--data DIR`` (default ``/tmp/regroup-bench-events``) and
   reused. Then, in a fresh process on ``local[2]``: ``analyze`` and
   ``write_analysis`` (the five tables, as ``regroup analyze`` writes them
   before the report), with the wall time, CPU time and Spark jobs run.

On a shared machine the wall times include the time other processes held the
CPUs: local[2] cannot scale to 2x when the second core is busy elsewhere.

Usage::

    python benchmarks/pipeline.py                     # both tables (about 15 min)
    python benchmarks/pipeline.py --skip-analytics    # the scaling table only
    python benchmarks/pipeline.py --events 1000000    # a smaller analytics table
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

BIG_SCENARIO = "rolling-bounce"
BIG_MEMBERS = 16
BIG_PARTITIONS = 128
BIG_DATA = {"records_per_second": 50, "processing_us_per_record": 1000, "restore_ms": 5000}
#: Events of one BIG run, roughly (to choose the seed count; the table reports the real count).
BIG_EVENTS_PER_RUN = 50_000


def _proc_cpu_s(root: int) -> float:
    """CPU seconds of process ``root`` and its descendants (Linux ``/proc``; reaped children too).

    The JVM that runs Spark and the Python workers it forks are not children
    this process waits for, so ``getrusage`` cannot see them: ``/proc`` can.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(entry)] = int(fields[1])
        cpu[int(entry)] = sum(int(f) for f in fields[11:15]) / ticks
    total = 0.0
    for pid in cpu:
        ancestor = pid
        while ancestor not in (root, 0, 1) and ancestor in parent:
            ancestor = parent[ancestor]
        if ancestor == root:
            total += cpu[pid]
    return total


def _spark_cpu_s() -> float:
    """This process's CPU plus its Spark JVM's tree (the JVM and its Python workers)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    jvm = _proc_cpu_s(process.pid) if process is not None else 0.0
    return time.process_time() + jvm


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _in_subprocess(*args: str) -> dict[str, Any]:
    """Run this script's ``--worker`` mode in a fresh process; its JSON answer and tree CPU."""
    cpu = _children_cpu()
    done = subprocess.run(
        [sys.executable, __file__, "--worker", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"worker {args} failed:\n{done.stderr[-3000:]}")
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    answer["tree_cpu_s"] = _children_cpu() - cpu
    return answer


# -- workers (each in its own process) ------------------------------------------------------


def _worker_sweep(master: str, out: str) -> dict[str, Any]:
    from regroup.cli.demo import demo_grid
    from regroup.pipeline.spark import build_session
    from regroup.pipeline.sweep import expand, parse_grid, run_sweep

    spark = build_session(master, app_name="bench sweep")
    warm, _ = expand(parse_grid(demo_grid(sizes=(2,), seeds=1, partitions=4)))
    run_sweep(spark, warm, Path(out) / "warm-up")
    specs, _ = expand(parse_grid(demo_grid()))
    cpu = _spark_cpu_s()
    started = time.perf_counter()
    run_sweep(spark, specs, Path(out) / "timed")
    wall = time.perf_counter() - started
    cpu = _spark_cpu_s() - cpu
    spark.stop()
    return {"master": master, "runs": len(specs), "wall_s": wall, "cpu_s": cpu}


def _worker_generate(out: str, seeds: int) -> dict[str, Any]:
    from regroup.pipeline.spark import build_session
    from regroup.pipeline.sweep import Grid, expand, run_sweep

    spark = build_session("local[2]", app_name="bench generate")
    grid = Grid(
        scenarios=(BIG_SCENARIO,),
        protocols=("eager", "cooperative", "consumer"),
        members=(BIG_MEMBERS,),
        partitions=(BIG_PARTITIONS,),
        seeds=tuple(range(seeds)),
        data=(dict(BIG_DATA),),
    )
    specs, _ = expand(grid)
    started = time.perf_counter()
    paths = run_sweep(spark, specs, Path(out))
    wall = time.perf_counter() - started
    events = spark.read.parquet(paths["events"]).count()
    spark.stop()
    return {"runs": len(specs), "events": events, "wall_s": wall}


def _worker_analyze(data: str, out: str) -> dict[str, Any]:
    from regroup.pipeline.analytics import analyze, unpersist, write_analysis
    from regroup.pipeline.logs import read_events
    from regroup.pipeline.spark import build_session

    spark = build_session("local[2]", app_name="bench analyze", driver_memory="4g")
    context = spark.sparkContext
    events = read_events(spark, Path(data) / "events")
    count = events.count()
    context.setJobGroup("analytics", "the analytics")
    cpu = _spark_cpu_s()
    started = time.perf_counter()
    analysis = analyze(events)
    write_analysis(analysis, Path(out))
    wall = time.perf_counter() - started
    cpu = _spark_cpu_s() - cpu
    jobs = len(context.statusTracker().getJobIdsForGroup("analytics"))
    runs = analysis.metrics.count()
    unpersist(analysis)
    spark.stop()
    return {"events": count, "runs": runs, "wall_s": wall, "jobs": jobs, "cpu_s": cpu}


# -- the tables -----------------------------------------------------------------------------


def scaling(out: Path, console: Console) -> None:
    table = Table(title="sweep: the demo's 81 runs simulated as Spark tasks, written as Parquet")
    for column in ("master", "runs", "wall s", "runs/min", "speed-up", "CPU s"):
        table.add_column(column, justify="right")
    base = None
    for master in ("local[1]", "local[2]"):
        answer = _in_subprocess("sweep", master, str(out / master.replace("[", "").strip("]")))
        per_minute = answer["runs"] / answer["wall_s"] * 60
        base = base or per_minute
        table.add_row(
            master,
            str(answer["runs"]),
            f"{answer['wall_s']:.1f}",
            f"{per_minute:.0f}",
            f"{per_minute / base:.2f}x",
            f"{answer['cpu_s']:.1f}",
        )
    console.print(table)


def analytics(events: int, data: Path, out: Path, console: Console) -> None:
    marker = data / "generated.json"
    if marker.exists() and json.loads(marker.read_text())["events"] >= events:
        generated = json.loads(marker.read_text())
        generated["reused"] = True
    else:
        seeds = max(1, -(-events // (3 * BIG_EVENTS_PER_RUN)))
        generated = _in_subprocess("generate", str(data), str(seeds))
        while generated["events"] < events:  # a protocol produced fewer events than guessed
            seeds += max(1, seeds // 10)
            generated = _in_subprocess("generate", str(data), str(seeds))
        marker.write_text(json.dumps(generated))
        generated["reused"] = False
    answer = _in_subprocess("analyze", str(data), str(out / "analysis"))
    table = Table(title="analytics: simulated event logs -> the five metric tables (local[2])")
    for column in ("events", "runs", "wall s", "events/s", "Spark jobs", "CPU s"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{answer['events']:,}",
        str(answer["runs"]),
        f"{answer['wall_s']:.1f}",
        f"{answer['events'] / answer['wall_s']:,.0f}",
        str(answer["jobs"]),
        f"{answer['cpu_s']:.1f}",
    )
    how = "reused from" if generated["reused"] else "generated into"
    table.caption = f"events {how} {data}: {generated['runs']} simulated runs" + (
        "" if generated["reused"] else f", sweep wall {generated['wall_s']:.0f} s"
    )
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--worker":
        kind, *rest = args[1:]
        answers = {
            "sweep": lambda: _worker_sweep(*rest),
            "generate": lambda: _worker_generate(rest[0], int(rest[1])),
            "analyze": lambda: _worker_analyze(*rest),
        }
        answer = answers[kind]()
        print(json.dumps(answer))
        # Also beside the worker's output, for a look after the run.
        target = Path(rest[1] if kind == "analyze" else rest[-1] if kind == "sweep" else rest[0])
        target.mkdir(parents=True, exist_ok=True)
        (target / f"bench-{kind}.json").write_text(json.dumps(answer), encoding="utf-8")
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--data", type=Path, default=Path("/tmp/regroup-bench-events"))
    parser.add_argument("--out", type=Path, default=Path("/tmp/regroup-bench-out"))
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument("--skip-analytics", action="store_true")
    options = parser.parse_args(args)
    console = Console()
    options.data.mkdir(parents=True, exist_ok=True)
    if not options.skip_scaling:
        scaling(options.out, console)
    if not options.skip_analytics:
        analytics(options.events, options.data, options.out, console)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
