"""``regroup demo``: the headline comparison, on local Spark, in a few minutes on 2 cores.

Eager vs cooperative vs KIP-848 (each protocol's default assignor: range,
cooperative-sticky, uniform) under scale-out, a rolling bounce and a crash, at
group sizes 4, 8 and 16, three seeds each (81 runs): a ``regroup sweep`` with
this grid fixed. ``--out DIR`` (default ``regroup-demo``) receives
``report.html``, the Parquet tables beside it and ``grid.json``, the grid
itself (``regroup sweep --grid DIR/grid.json --out ...`` runs it again).
``--sizes``, ``--seeds`` and ``--quick`` (sizes 2, one seed, 4 partitions:
9 runs, for a smoke test) make it smaller.

The consumers' settings (``DEMO_DATA``, ``DEMO_PARTITIONS``), and where they
come from. A moved partition must cost what it costs a real application,
else the comparison measures nothing but the protocol's messages:

* ``max_poll_records = 500``: Kafka's default ``max.poll.records``
  (``ConsumerConfig.DEFAULT_MAX_POLL_RECORDS``);
* ``processing_us_per_record = 1000`` (1 ms a record): an *assumption*, a
  record that costs a state-store read and write or a small remote call; a
  full poll batch then takes up to 0.5 s, so a member busy with a batch joins
  a rebalance late, as a real one does;
* ``records_per_second = 50`` per partition, 32 partitions (1,600 records/s
  for the topic): an *assumption*, chosen so that the smallest group (4
  members, 8 partitions each: 400 records/s, 40 % busy) keeps up and the
  largest (16, then 17 after the scale-out) still has work for every member;
* ``restore_ms = 5000``: an *assumption*, a modest state store restored from
  its changelog before a newly assigned partition is processed, as Kafka
  Streams restores a task's stores before it runs the task (real restores
  range from seconds to hours; KIP-441's warm-up replicas exist for that).
  The simulator charges it on every assignment, also when eager hands a
  member back the partition it just revoked (Kafka Streams would resume a
  suspended task without a full restore), so eager's cost here is an upper
  bound for a stateful application and about right for one that rebuilds a
  cache;
* everything else is Kafka's default: ``session.timeout.ms`` 45 s (KIP-735),
  ``heartbeat.interval.ms`` 3 s (classic), ``group.consumer.heartbeat.interval.ms``
  5 s and ``group.consumer.session.timeout.ms`` 45 s (KIP-848, broker side).

No number is tuned to make a protocol win: the report shows what the
simulator measures, and says why where the newer protocols lose (``INTRO``).
"""

from __future__ import annotations

import argparse
import html
import json
from dataclasses import replace
from typing import Any

from regroup.cli.analyze import add_master_argument
from regroup.cli.errors import UsageError
from regroup.cli.options import at_least

__all__ = [
    "DEMO_DATA",
    "DEMO_PARTITIONS",
    "DEMO_PROTOCOLS",
    "DEMO_SCENARIOS",
    "DEMO_SEEDS",
    "DEMO_SIZES",
    "add_parser",
    "demo_grid",
    "run",
]

DEMO_SCENARIOS = ("scale-out", "rolling-bounce", "crash")
DEMO_PROTOCOLS = ("eager", "cooperative", "consumer")
DEMO_SIZES = (4, 8, 16)
DEMO_SEEDS = 3
DEMO_PARTITIONS = 32
#: The ``[data]`` settings of every demo run (sources in the module docstring).
DEMO_DATA = {
    "records_per_second": 50,
    "processing_us_per_record": 1000,
    "max_poll_records": 500,
    "restore_ms": 5000,
}
#: The restore study: every demo scenario at the middle group size, each protocol, with
#: these restore times per assigned partition (0 to a large Kafka Streams store).
RESTORE_STUDY_MS = (0, 100, 1000, 5000, 20000)
#: Seeds per point of the restore study (it is a curve over restore times, not a table).
RESTORE_STUDY_SEEDS = 1
#: The scenario run again with static membership (KIP-345): the production rolling bounce.
STATIC_STUDY_SCENARIO = "rolling-bounce"
#: ``--quick``'s restore study: the two ends only, for the rolling bounce.
QUICK_RESTORE_STUDY_MS = (0, 20000)

#: ``--quick``: the smallest demo that still has every scenario and protocol.
QUICK_SIZES = (2,)
QUICK_SEEDS = 1
QUICK_PARTITIONS = 4

INTRO = """
<p>Eager (classic protocol, range), cooperative (classic protocol with KIP-429's incremental
rebalancing, cooperative-sticky) and KIP-848 (the consumer protocol, the coordinator's uniform
assignor) under three events a Kafka application lives through: one more instance starts
(<b>scale-out</b>, at 30 s), every instance is restarted in turn 10 s apart with 2 s down
(<b>rolling-bounce</b>), one instance dies without leaving the group (<b>crash</b>, at 30 s).
Group sizes {sizes}, {seeds} seed(s) each; every run is the real protocol code on a virtual
clock, simulated inside a Spark task, and every number below is computed in Spark from the
runs' event logs.</p>
<p><b>Settings.</b> One topic of {partitions} partitions, {rps} records/s each;
{us} &micro;s of processing per record; poll batches of up to {mpr} records (Kafka's default
<code>max.poll.records</code>); {restore} ms to restore a partition's state before it is
processed again (an assumption: a modest Kafka Streams store); every other setting is Kafka's
default (session timeout 45 s; heartbeats every 3 s classic, 5 s KIP-848). Processing cost,
rate and restore time are assumptions, not measurements: rerun with other values with
<code>regroup sweep --grid grid.json --data restore_ms=...</code>.</p>
<p><b>Two studies beside the grid.</b> The rolling bounce again with static membership
(KIP-345: each member keeps its <code>group.instance.id</code> across the restart, as most
production rolling bounces do), at every size and seed (<code>rolling-bounce@static</code>);
and {study_scenarios} at {study_size} members with the restore time set to {study_restores},
one seed each, to show where the ranking flips (the restore section).</p>
<p><b>What to expect, and why.</b> Eager revokes <i>every</i> partition from every member at
each rebalance and gives none back until the whole group has joined and synced, so every
partition pays the restore time, whatever the group size. Cooperative only revokes the
partitions that move, but needs a second rebalance to hand them out: the revoking member
rejoins at once, the others only learn of the new round from their next heartbeat (up to
<code>heartbeat.interval.ms</code> = 3 s, as in Kafka), so a moved partition waits two
join/sync rounds. KIP-848 has no join round: the coordinator tells the old owner to revoke
in a heartbeat response and the new owner learns it may take the partition on its own next
heartbeat (every 5 s), so a moved partition can wait about a heartbeat interval longer than
under cooperative. So eager's <i>longest</i>
pause and its time to stable can be the shortest of the three (one round, then the restore)
while its idle total is by far the largest (every partition pauses), and KIP-848 can trail
cooperative by the difference of their heartbeat intervals. A crash is found only after the
session timeout (45 s) under every protocol; what differs is whether the other members stop
too (eager: all of them, once the coordinator notices). Where the numbers below disagree with
this, the simulator measured it so: the tables say by how much.</p>
"""


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(item) for item in text.split(",") if item.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 4,8,16, got {text!r}") from None
    if not sizes:
        raise argparse.ArgumentTypeError("expected at least one group size")
    return sizes


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="eager vs cooperative vs KIP-848 under scale-out, bounce and crash (Spark)",
        description="Run the headline comparison on Spark and write DIR/report.html, "
        "the Parquet tables beside it and DIR/grid.json (the grid, for regroup sweep).",
    )
    parser.add_argument("--out", default="regroup-demo", metavar="DIR")
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=None,
        metavar="N,M",
        help=f"group sizes (default {','.join(map(str, DEMO_SIZES))})",
    )
    parser.add_argument(
        "--seeds",
        type=at_least(1),
        default=None,
        metavar="N",
        help=f"seeds per point (default {DEMO_SEEDS})",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke test: 2 members, 1 seed, 4 partitions (9 runs)",
    )
    add_master_argument(parser)
    parser.set_defaults(run=run)


def demo_grid(
    sizes: tuple[int, ...] = DEMO_SIZES,
    seeds: int = DEMO_SEEDS,
    partitions: int = DEMO_PARTITIONS,
) -> dict[str, Any]:
    """The demo's grid in the grid-file form (``regroup.pipeline.sweep``)."""
    return {
        "scenarios": list(DEMO_SCENARIOS),
        "protocols": list(DEMO_PROTOCOLS),
        "members": list(sizes),
        "partitions": [partitions],
        "seeds": seeds,
        "data": [dict(DEMO_DATA)],
    }


def study_specs(
    sizes: tuple[int, ...],
    seeds: int,
    partitions: int,
    *,
    restores: tuple[int, ...] = RESTORE_STUDY_MS,
    scenarios: tuple[str, ...] = DEMO_SCENARIOS,
) -> list[Any]:
    """The demo's two studies beside its grid, as run specs of scenarios named apart
    (``regroup.pipeline.report``'s variants), so the tables never mix them with the grid:

    * ``rolling-bounce@static``: the rolling bounce with static membership (KIP-345,
      ``group.instance.id`` per member), every size and seed of the grid: most production
      rolling bounces run so;
    * ``NAME@restore-Nms``: every scenario at the middle group size with each restore
      time of ``restores`` (``RESTORE_STUDY_SEEDS`` seed), for where eager's ranking flips.
    """
    from regroup.pipeline.report import restore_variant, static_variant
    from regroup.pipeline.sweep import expand, parse_grid

    out: list[Any] = []

    def renamed(spec: Any, name: str, **changes: Any) -> Any:
        return replace(spec, run_id=name + spec.run_id[len(spec.scenario) :], name=name, **changes)

    static = dict(demo_grid(sizes, seeds, partitions), scenarios=[STATIC_STUDY_SCENARIO])
    specs, _ = expand(parse_grid(static))
    out += [renamed(s, static_variant(s.scenario), static=True) for s in specs]
    middle = sorted(sizes)[len(sizes) // 2]
    for restore in restores:
        grid = dict(
            demo_grid((middle,), RESTORE_STUDY_SEEDS, partitions),
            scenarios=list(scenarios),
            data=[{**DEMO_DATA, "restore_ms": restore}],
        )
        specs, _ = expand(parse_grid(grid))
        out += [renamed(s, restore_variant(s.scenario, restore)) for s in specs]
    return out


def run(args: argparse.Namespace) -> int:
    from regroup.cli.analyze import prepare
    from regroup.cli.sweep import run_specs
    from regroup.pipeline.sweep import GridError, expand, parse_grid

    quick = bool(getattr(args, "quick", False))
    sizes = args.sizes or (QUICK_SIZES if quick else DEMO_SIZES)
    seeds = args.seeds if args.seeds is not None else (QUICK_SEEDS if quick else DEMO_SEEDS)
    partitions = QUICK_PARTITIONS if quick else DEMO_PARTITIONS
    if seeds < 1:
        raise UsageError("--seeds must be >= 1")
    if min(sizes) < 1:
        raise UsageError("--sizes must be >= 1")
    data = demo_grid(sizes, seeds, partitions)
    output = prepare(args.out, args.master)
    try:
        specs, _ = expand(parse_grid(data))
        if quick:
            studies = study_specs(
                sizes,
                seeds,
                partitions,
                restores=QUICK_RESTORE_STUDY_MS,
                scenarios=(STATIC_STUDY_SCENARIO,),
            )
        else:
            studies = study_specs(sizes, seeds, partitions)
    except GridError as error:
        raise UsageError(str(error)) from None
    intro = INTRO.format(
        sizes=html.escape(", ".join(map(str, sizes))),
        seeds=seeds,
        partitions=partitions,
        rps=DEMO_DATA["records_per_second"],
        us=DEMO_DATA["processing_us_per_record"],
        mpr=DEMO_DATA["max_poll_records"],
        restore=DEMO_DATA["restore_ms"],
        study_scenarios=html.escape(
            STATIC_STUDY_SCENARIO if quick else "every scenario", quote=False
        ),
        study_size=sorted(sizes)[len(sizes) // 2],
        study_restores=", ".join(
            f"{ms} ms" for ms in (QUICK_RESTORE_STUDY_MS if quick else RESTORE_STUDY_MS)
        ),
    )
    return run_specs(
        [*specs, *studies],
        output,
        args.master,
        intro=intro,
        files={"grid.json": json.dumps(data, indent=2) + "\n"},
    )
