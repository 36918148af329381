"""Instructions the simulator executes, at two revisions, counted by valgrind (callgrind).

Wall time on a shared 2-core machine moves by a third between runs of the same binary (seen
here: one compiled cooperative bounce took 87 s and then 129 s), which hides a 10% change.
The number of instructions executed does not move: callgrind counts them, whatever else the
machine is doing. This script exports ``--base`` and ``--rev`` (``git archive``), compiles each
with ``tools/native_build.py``, and runs the rolling bounce of ``benchmarks/simulator.py``
(default 100 members over 1,000 partitions, no records) under each protocol with callgrind
counting only inside the compiled run loop (``World.run_until``), so imports and set-up are
left out. It prints the counts and their ratio; the event-loop steps must be equal (the same
run), or the ratio is meaningless and the table says so.

It needs valgrind and what ``make native`` needs (a C compiler, the Python headers); it counts
the compiled build only, because callgrind can start counting at a C function and the pure
build's run loop is not one. Expect about 2 minutes per compile and 1-2 minutes per run.

Usage::

    python benchmarks/instructions.py --base b3583c8            # base vs HEAD
    python benchmarks/instructions.py --base HEAD~3 --rev HEAD --members 200 --partitions 2000
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parent.parent
SIMULATOR = Path(__file__).with_name("simulator.py")
PROTOCOLS = ("eager", "cooperative", "consumer")
#: The compiled ``World.run_until`` (mypyc's name for it): counting starts and stops there.
RUN_LOOP = "CPyDef_world___World___run_until"


def export(rev: str, target: Path) -> Path:
    """The ``src`` tree of ``rev``, written under ``target``."""
    target.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "src"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target / "src"


def compile_tree(src: Path) -> None:
    subprocess.run(
        [sys.executable, str(REPO / "tools" / "native_build.py"), "--src", str(src)],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def count(src: Path, protocol: str, members: int, partitions: int) -> tuple[int, int]:
    """(instructions inside the run loop, event-loop steps) of one bounce."""
    with tempfile.TemporaryDirectory(prefix="regroup-callgrind-") as tmp:
        run = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--toggle-collect={RUN_LOOP}",
                f"--callgrind-out-file={Path(tmp) / 'out'}",
                sys.executable,
                str(SIMULATOR),
                "--one-bounce",
                protocol,
                "--members",
                str(members),
                "--partitions",
                str(partitions),
                "--budget",
                "100000",
            ],
            env={**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0"},
            capture_output=True,
            text=True,
            check=True,
        )
    collected = re.search(r"Collected : (\d+)", run.stderr)
    if collected is None:
        raise SystemExit(f"callgrind printed no count:\n{run.stderr[-2000:]}")
    steps = int(json.loads(run.stdout.strip().splitlines()[-1])["steps"])
    return int(collected.group(1)), steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision to compare against")
    parser.add_argument("--rev", default="HEAD", help="the revision measured (default HEAD)")
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--protocol", choices=PROTOCOLS, action="append")
    args = parser.parse_args()
    console = Console()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: apt-get install valgrind")
    protocols = args.protocol or list(PROTOCOLS)
    with tempfile.TemporaryDirectory(prefix="regroup-revs-") as tmp:
        trees = {}
        for name, rev in (("base", args.base), ("rev", args.rev)):
            console.print(f"exporting and compiling {rev} ...")
            trees[name] = export(rev, Path(tmp) / name)
            compile_tree(trees[name])
        table = Table(
            title=(
                f"Instructions in the run loop, compiled build: rolling bounce, "
                f"{args.members} members, {args.partitions} partitions"
            )
        )
        for column in ("protocol", args.base, args.rev, f"{args.rev} / {args.base}", "steps"):
            table.add_column(column, justify="right")
        for protocol in protocols:
            base, base_steps = count(trees["base"], protocol, args.members, args.partitions)
            new, new_steps = count(trees["rev"], protocol, args.members, args.partitions)
            same = base_steps == new_steps
            table.add_row(
                protocol,
                f"{base:,}",
                f"{new:,}",
                f"{new / base:.3f}" if same else "- (different runs)",
                f"{new_steps:,}" if same else f"{base_steps:,} vs {new_steps:,}",
            )
        console.print(table)


if __name__ == "__main__":
    main()
