"""Instructions the simulator executes, at two revisions, counted by valgrind (callgrind).

Wall time on a shared 2-core machine moves by a third between runs of the same code, which
hides a 10% change. The number of instructions executed does not move: callgrind counts
them, whatever else the machine is doing. This script exports ``--base`` and ``--rev``
(``git archive``) and runs the rolling bounce of ``benchmarks/simulator.py`` (default 50
members over 500 partitions, no records) under each protocol, once to the end and once
stopping after the set-up (``--setup-only``), and reports the difference: the instructions
of the run alone, imports and set-up left out. It prints the counts and their ratio; the
event-loop steps must be equal (the same run), or the ratio is meaningless and the table
says so.

It needs valgrind. The interpreter runs about 50 times slower under callgrind: expect a few
minutes per protocol and revision at the default size.

Usage::

    python benchmarks/instructions.py --base b3583c8            # base vs HEAD
    python benchmarks/instructions.py --base HEAD~3 --rev HEAD --members 100 --partitions 1000
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


def export(rev: str, target: Path) -> Path:
    """The ``src`` tree of ``rev``, written under ``target``."""
    target.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "src"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target / "src"


def callgrind(src: Path, argv: list[str]) -> tuple[int, str]:
    """``python argv`` under callgrind with ``src`` on its path: (instructions, stdout)."""
    with tempfile.TemporaryDirectory(prefix="regroup-callgrind-") as tmp:
        run = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={Path(tmp) / 'out'}",
                sys.executable,
                *argv,
            ],
            env={**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0"},
            capture_output=True,
            text=True,
            check=True,
        )
    collected = re.search(r"Collected : (\d+)", run.stderr)
    if collected is None:
        raise SystemExit(f"callgrind printed no count:\n{run.stderr[-2000:]}")
    return int(collected.group(1)), run.stdout


def _callgrind(src: Path, protocol: str, members: int, partitions: int, *extra: str) -> str:
    """One bounce under callgrind; returns its JSON line after the ``Collected`` count."""
    collected, stdout = callgrind(
        src,
        [
            str(SIMULATOR),
            "--one-bounce",
            protocol,
            "--members",
            str(members),
            "--partitions",
            str(partitions),
            "--budget",
            "100000",
            *extra,
        ],
    )
    return f"{collected} {stdout.strip().splitlines()[-1]}"


def count(src: Path, protocol: str, members: int, partitions: int) -> tuple[int, int]:
    """(instructions of the run alone, event-loop steps) of one bounce."""
    whole, line = _callgrind(src, protocol, members, partitions).split(" ", 1)
    setup, _ = _callgrind(src, protocol, members, partitions, "--setup-only").split(" ", 1)
    return int(whole) - int(setup), int(json.loads(line)["steps"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision to compare against")
    parser.add_argument("--rev", default="HEAD", help="the revision measured (default HEAD)")
    parser.add_argument("--members", type=int, default=50)
    parser.add_argument("--partitions", type=int, default=500)
    parser.add_argument("--protocol", choices=PROTOCOLS, action="append")
    args = parser.parse_args()
    console = Console()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: apt-get install valgrind")
    protocols = args.protocol or list(PROTOCOLS)
    with tempfile.TemporaryDirectory(prefix="regroup-revs-") as tmp:
        trees = {}
        for name, rev in (("base", args.base), ("rev", args.rev)):
            trees[name] = export(rev, Path(tmp) / name)
        table = Table(
            title=(
                f"Instructions of the run (set-up subtracted): rolling bounce, "
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
