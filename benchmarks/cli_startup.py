"""How long the README's first command takes: ``regroup simulate`` end to end, as a user runs it.

Each run is a fresh process (``regroup simulate --scenario rolling-bounce --members 6
--partitions 24 --protocol P``), so the figure includes the interpreter starting, the
imports and the printing, not only the simulation. Python's bytecode cache is allowed (as on
a user's machine; one warm-up run writes it), even when the environment sets
``PYTHONDONTWRITEBYTECODE``. Besides the median wall and CPU seconds of the whole command,
the table splits one process's CPU time into its parts (interpreter, third-party imports,
regroup's imports, the command itself: simulating and printing), measured in a child that
imports the same modules in the same order. A figure to read beside the machine's speed,
never an assertion.

Usage::

    python benchmarks/cli_startup.py            # 5 runs per protocol
    python benchmarks/cli_startup.py --runs 11
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

PROTOCOLS = ("eager", "cooperative", "consumer")
COMMAND = ("--scenario", "rolling-bounce", "--members", "6", "--partitions", "24")

# The child that splits one run's CPU time into its parts; prints one JSON object.
_PARTS = """
import json, sys, time
t0 = time.process_time()
import numpy, rich.console, rich.table
t1 = time.process_time()
import regroup.cli.simulate
t2 = time.process_time()
from regroup.cli.main import main
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(["simulate", *sys.argv[1:]])
    except SystemExit:
        pass
t3 = time.process_time()
print(json.dumps({"third_party": t1 - t0, "regroup_imports": t2 - t1, "command": t3 - t2,
                  "interpreter": t0}))
"""


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_command(protocol: str, runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``runs`` fresh ``regroup simulate`` processes."""
    command = [sys.executable, "-m", "regroup.cli.main", "simulate", *COMMAND]
    command += ["--protocol", protocol]
    env = _environment()
    subprocess.run(command, env=env, check=True, capture_output=True)  # writes the cache
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(runs):
        cpu_before = _children_cpu()
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - cpu_before)
    return statistics.median(walls), statistics.median(cpus)


def cpu_parts(protocol: str) -> dict[str, float]:
    """One process's CPU seconds split into interpreter, imports and simulation."""
    command = [sys.executable, "-c", _PARTS, *COMMAND, "--protocol", protocol]
    out = subprocess.run(command, env=_environment(), check=True, capture_output=True, text=True)
    parts: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per protocol")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    console = Console(width=None if sys.stdout.isatty() else 140)
    table = Table(title=f"regroup simulate {' '.join(COMMAND)} (median of {args.runs})")
    for column in ("protocol", "wall s", "CPU s", "interpreter", "numpy+rich", "regroup imports"):
        table.add_column(column, justify="right")
    table.add_column("running the command", justify="right")
    for protocol in PROTOCOLS:
        wall, cpu = time_command(protocol, args.runs)
        parts = cpu_parts(protocol)
        table.add_row(
            protocol,
            f"{wall:.2f}",
            f"{cpu:.2f}",
            f"{parts['interpreter']:.2f}",
            f"{parts['third_party']:.2f}",
            f"{parts['regroup_imports']:.2f}",
            f"{parts['command']:.2f}",
        )
    console.print(table)
    console.print(f"python {sys.version.split()[0]} at {Path(sys.executable).parent}")


if __name__ == "__main__":
    main()
