"""``regroup demo``: the headline comparison, on local Spark, in a few minutes on 2 cores.

Eager vs cooperative vs KIP-848 (each protocol's default assignor) under
scale-out, a rolling bounce and a crash, three seeds each: a ``regroup sweep``
with this grid fixed. ``--out DIR`` (default ``regroup-demo``) receives
``report.html`` and the Parquet tables beside it; the path is printed.
"""

from __future__ import annotations

import argparse
from typing import Any

from regroup.cli.analyze import add_master_argument

__all__ = ["DEMO_PROTOCOLS", "DEMO_SCENARIOS", "add_parser", "run"]

DEMO_SCENARIOS = ("scale-out", "rolling-bounce", "crash")
DEMO_PROTOCOLS = ("eager", "cooperative", "consumer")
DEMO_SEEDS = 3


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="eager vs cooperative vs KIP-848 under scale-out, bounce and crash (Spark)",
        description="Run the headline comparison on Spark and write DIR/report.html.",
    )
    parser.add_argument("--out", default="regroup-demo", metavar="DIR")
    parser.add_argument("--seeds", type=int, default=DEMO_SEEDS, metavar="N")
    add_master_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from regroup.cli import sweep

    sweep_args = argparse.Namespace(
        grid=None,
        scenario=list(DEMO_SCENARIOS),
        protocol=list(DEMO_PROTOCOLS),
        assignor=None,
        members=None,
        partitions=None,
        seeds=args.seeds,
        config=[],
        out=args.out,
        master=args.master,
    )
    return sweep.run(sweep_args)
