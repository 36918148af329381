"""``regroup soak``: random fault schedules, every invariant checked, failures minimised.

For each seed a fault schedule and a group are drawn (``regroup.sim.soak.schedule``),
run on the simulator and checked (``regroup.sim.soak.check``). The summary (seeds,
violations, faults drawn per kind, virtual and wall time, seeds/s) goes to
stdout, as text or ``--json``; progress to stderr. A failing seed is minimised
(``regroup.sim.soak.minimise``) and printed as a scenario file, also written to
``--keep DIR``. Exit codes: 0 no violation, 1 a violation, 2 bad arguments.
``--spark`` spreads the seeds over Spark (``regroup.pipeline.soak``). See docs/soak.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from regroup.cli.analyze import add_master_argument
from regroup.cli.errors import UsageError
from regroup.cli.options import at_least

__all__ = ["add_parser", "run"]

_PROTOCOLS = ("eager", "cooperative", "consumer")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "soak",
        help="run random fault schedules and check every invariant",
        description="Draw a random fault schedule and group per seed (crashes, restarts, "
        "loss, delay, duplication, network partitions, coordinator failover, slow members, "
        "added partitions), run it on the simulator and check every invariant; a failing "
        "seed is minimised to a scenario file.",
    )
    parser.add_argument(
        "--protocol", default="all", choices=(*_PROTOCOLS, "all"), help="default: all"
    )
    parser.add_argument(
        "--seeds", type=at_least(1), required=True, metavar="N", help="seeds per protocol"
    )
    parser.add_argument("--first-seed", type=at_least(0), default=0, metavar="S", help="default: 0")
    parser.add_argument(
        "--max-members", type=at_least(1), default=50, metavar="N", help="default: 50"
    )
    parser.add_argument(
        "--max-partitions", type=at_least(1), default=500, metavar="P", help="default: 500"
    )
    parser.add_argument(
        "--minimise-runs",
        type=at_least(0),
        default=100,
        metavar="N",
        help="simulations the minimiser may spend per failure (0: do not minimise; default 100)",
    )
    parser.add_argument(
        "--zero-timeouts",
        action="store_true",
        help="also restart classic members as clients that send a rebalance timeout of 0 or -1",
    )
    parser.add_argument("--json", action="store_true", help="the summary as one JSON object")
    parser.add_argument(
        "--keep", default=None, metavar="DIR", help="write minimised failing scenarios here"
    )
    parser.add_argument("--spark", action="store_true", help="run the seeds on Spark")
    add_master_argument(parser)
    parser.set_defaults(run=run)


def _check_args(args: argparse.Namespace) -> None:
    if args.seeds < 1:
        raise UsageError(f"--seeds must be >= 1, got {args.seeds}")
    if args.first_seed < 0:
        raise UsageError(f"--first-seed must be >= 0, got {args.first_seed}")
    if args.max_members < 1:
        raise UsageError(f"--max-members must be >= 1, got {args.max_members}")
    if args.max_partitions < 1:
        raise UsageError(f"--max-partitions must be >= 1, got {args.max_partitions}")
    if args.minimise_runs < 0:
        raise UsageError(f"--minimise-runs must be >= 0, got {args.minimise_runs}")
    if args.master is not None and not args.spark:
        raise UsageError("--master needs --spark")
    if args.keep is not None and Path(args.keep).exists() and not Path(args.keep).is_dir():
        raise UsageError(f"--keep {args.keep}: not a directory")


def run(args: argparse.Namespace) -> int:
    _check_args(args)
    from regroup.sim.soak.check import run_scenario
    from regroup.sim.soak.schedule import Limits, draw_scenario
    from regroup.sim.soak.summary import Summary

    protocols = _PROTOCOLS if args.protocol == "all" else (args.protocol,)
    limits = Limits(
        max_members=args.max_members,
        max_partitions=args.max_partitions,
        zero_timeouts=args.zero_timeouts,
    )
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    started = time.perf_counter()
    if args.spark:
        from regroup.pipeline.soak import soak_on_spark
        from regroup.pipeline.spark import build_session

        spark = build_session(args.master, app_name="regroup soak")
        print(
            f"{len(protocols) * len(seeds)} seeds on {spark.sparkContext.master}",
            file=sys.stderr,
        )
        summary = soak_on_spark(spark, protocols, seeds, limits)
    else:
        summary = Summary()
        total = len(protocols) * len(seeds)
        done = 0
        last = started
        for protocol in protocols:
            for seed in seeds:
                summary.add(run_scenario(draw_scenario(protocol, seed, limits), protocol, seed))
                done += 1
                now = time.perf_counter()
                if now - last >= 5 or done == total:
                    last = now
                    print(
                        f"soak: {done}/{total} seeds, {summary.violations} violations, "
                        f"{done / (now - started):.2f} seeds/s",
                        file=sys.stderr,
                    )
    elapsed = time.perf_counter() - started
    kept = _minimise_failures(summary, limits, args)
    report = summary.as_dict(elapsed)
    report["minimised"] = kept
    report["command"] = _command(args)
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        _print_text(report)
    return 1 if summary.violations else 0


def _command(args: argparse.Namespace) -> str:
    return (
        f"regroup soak --protocol {args.protocol} --seeds {args.seeds} "
        f"--first-seed {args.first_seed} --max-members {args.max_members} "
        f"--max-partitions {args.max_partitions}"
        + (" --zero-timeouts" if args.zero_timeouts else "")
        + (" --spark" if args.spark else "")
    )


def _minimise_failures(summary: Any, limits: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Minimise the first failing seed of each (protocol, invariant); print and keep each."""
    from regroup.sim.soak.check import run_scenario
    from regroup.sim.soak.files import scenario_to_data, write_scenario
    from regroup.sim.soak.minimise import minimise
    from regroup.sim.soak.schedule import draw_scenario

    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for failure in summary.failures:
        invariant = failure.violations[0].invariant
        if (failure.protocol, invariant) in seen:
            continue
        seen.add((failure.protocol, invariant))
        protocol, seed = failure.protocol, failure.seed
        scenario = draw_scenario(protocol, seed, limits)
        runs = 0
        if args.minimise_runs:
            print(f"soak: minimising {protocol} seed {seed} ({invariant})", file=sys.stderr)
            result = minimise(
                scenario,
                invariant,
                lambda s: set(run_scenario(s, protocol, seed).invariants),  # noqa: B023
                max_runs=args.minimise_runs,
            )
            scenario, runs = result.scenario, result.runs
        entry: dict[str, Any] = {
            "protocol": protocol,
            "seed": seed,
            "invariant": invariant,
            "minimiser_runs": runs,
            "scenario": scenario_to_data(scenario),
        }
        if args.keep is not None:
            path = Path(args.keep) / f"{protocol}-seed{seed}-{invariant}.json"
            entry["path"] = str(write_scenario(scenario, path))
        out.append(entry)
    return out


def _print_text(report: dict[str, Any]) -> None:
    for name, totals in report["protocols"].items():
        rate = totals["seeds_per_s"]
        print(
            f"{name}: {totals['seeds']} seeds, {totals['violations']} violations "
            f"({totals['failed_seeds']} failing seeds), {totals['virtual_s']} virtual s, "
            f"{totals['run_cpu_s']} s running, {rate if rate is not None else '-'} seeds/s"
        )
        faults = ", ".join(f"{k} {v}" for k, v in totals["faults"].items())
        print(f"  faults drawn: {faults or 'none'}")
        print(
            f"  zombie overlaps (Kafka's, not violations): {totals['zombie_overlaps']}; "
            f"static rejoin gaps (Kafka's, not violations): {totals['static_rejoin_gaps']}; "
            f"messages duplicated: {totals['messages_duplicated']}; "
            f"coordinator failovers: {totals['coordinator_restarts']}; largest group: "
            f"{totals['largest_group']['members']} members x "
            f"{totals['largest_group']['partitions']} partitions"
        )
    print(
        f"total: {report['seeds']} seeds, {report['violations']} violations, "
        f"{report['wall_s']} s wall, {report['seeds_per_s']} seeds/s"
    )
    for failure in report["failures"][:20]:
        first = failure["violations"][0]
        print(
            f"FAILED {failure['protocol']} seed {failure['seed']}: {first['invariant']} at "
            f"{first['ts_ms']} ms: {first['detail']}"
        )
    for entry in report["minimised"]:
        where = f" (kept in {entry['path']})" if "path" in entry else ""
        print(
            f"minimised {entry['protocol']} seed {entry['seed']} ({entry['invariant']}, "
            f"{entry['minimiser_runs']} runs){where}:"
        )
        print(json.dumps(entry["scenario"], indent=2))
