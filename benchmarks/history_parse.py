"""``regroup history`` against ``zgrep -c GroupCoordinator`` on the same gzipped broker logs.

Generates a cluster's broker logs (``regroup.history.synth``: 3 brokers, consumer groups
going through rolling deploys, crashes and poll timeouts, the coordinator's lines among
``--noise`` lines of other broker chatter each), as hourly rotations
(``broker-N/server.log.<hour>``), gzipped as Kafka operators keep them, until the
uncompressed size reaches ``--gigabytes``. Then, in one run, times:

- ``zgrep -c GroupCoordinator FILE...``: decompress and count the coordinator lines, the
  floor any log tool pays;
- ``regroup history FILE... --json``: decompress, recognise every coordinator line of every
  Kafka version's wording, rebuild every group's rebalances and findings, on Spark
  (``local[*]`` unless ``--master``), including the JVM's start;

- the parse alone on one core, in this process, without Spark (``regroup.history.reader``
  over the same files: decompress, find and recognise the coordinator lines): the figure to
  hold against grep's one core;

and prints the wall times, the throughput and the ratios. A figure to read beside the
machine's cores and load (printed), never an assertion.

Usage::

    python benchmarks/history_parse.py                    # 1 GB of logs (a few minutes)
    python benchmarks/history_parse.py --gigabytes 0.1    # a quick look
    python benchmarks/history_parse.py --dir /data/logs --keep   # reuse generated logs
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from regroup.history.lines import Record
from regroup.history.reader import expand, read_split
from regroup.history.synth import write_cluster_logs

HOUR_MS = 3_600_000
START_MS = 1_795_000_000_000


def generate(directory: Path, gigabytes: float, noise: int, groups: int) -> tuple[int, int]:
    """Hourly rotations per broker, gzipped, until ``gigabytes`` uncompressed; (bytes, files)."""
    target = int(gigabytes * 1_000_000_000)
    written = 0
    files = 0
    hour = 0
    while written < target:
        chunk = Path(tempfile.mkdtemp(dir=directory))
        write_cluster_logs(
            chunk,
            brokers=3,
            groups=groups,
            members=8,
            deploys=1,
            crashes=1,
            poll_timeouts=1,
            version=("2.8", "3.6", "4.1")[hour % 3],
            noise=noise,
            seed=hour,
            start_ms=START_MS + hour * HOUR_MS,
        )
        for log in sorted(chunk.glob("broker-*/server.log")):
            broker = directory / log.parent.name
            broker.mkdir(exist_ok=True)
            data = log.read_bytes()
            written += len(data)
            stamp = time.strftime("%Y-%m-%d-%H", time.gmtime((START_MS + hour * HOUR_MS) / 1000))
            with gzip.open(broker / f"server.log.{stamp}.gz", "wb", compresslevel=6) as out:
                out.write(data)
            files += 1
        shutil.rmtree(chunk)
        hour += 1
        print(f"\rgenerated {written / 1e9:.2f} GB in {files} files", end="", file=sys.stderr)
    print(file=sys.stderr)
    return written, files


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):  # zgrep -c exits 1 when a file has no match
        raise SystemExit(f"{command[0]} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return elapsed, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gigabytes", type=float, default=1.0, help="uncompressed size")
    parser.add_argument("--noise", type=int, default=30, help="other lines per coordinator line")
    parser.add_argument("--groups", type=int, default=60, help="consumer groups per hour")
    parser.add_argument("--dir", type=Path, default=None, help="where the logs go (or are)")
    parser.add_argument("--keep", action="store_true", help="keep the generated logs")
    parser.add_argument("--master", default=None, help="Spark master for regroup history")
    args = parser.parse_args()
    directory = args.dir or Path(tempfile.mkdtemp(prefix="regroup-history-bench-"))
    directory.mkdir(parents=True, exist_ok=True)
    files = sorted(str(p) for p in directory.glob("broker-*/server.log.*.gz"))
    if files:
        size = 0
        for name in files:
            with gzip.open(name, "rb") as stream:
                while block := stream.read(1 << 24):
                    size += len(block)
        print(f"reusing {len(files)} files in {directory}", file=sys.stderr)
    else:
        size, _ = generate(directory, args.gigabytes, args.noise, args.groups)
        files = sorted(str(p) for p in directory.glob("broker-*/server.log.*.gz"))
    compressed = sum(os.path.getsize(f) for f in files)
    try:
        grep_s, grep_out = timed(["zgrep", "-c", "GroupCoordinator", *files])
        counted = sum(int(line.rsplit(":", 1)[-1]) for line in grep_out.splitlines() if line)
        command = [sys.executable, "-m", "regroup.cli.main", "history", *files, "--json"]
        if args.master:
            command += ["--master", args.master]
        env = dict(os.environ)
        history_s, history_out = timed(command, env)
        result = json.loads(history_out)
        started = time.perf_counter()
        splits, _ = expand(files)
        parsed = sum(
            1 for split in splits for item in read_split(split) if isinstance(item, Record)
        )
        parse_s = time.perf_counter() - started
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(directory, ignore_errors=True)
    rebalances = sum(len(g["rebalances"]) for g in result["groups"])
    print(f"logs: {size / 1e9:.2f} GB uncompressed, {compressed / 1e6:.0f} MB gzipped, ", end="")
    print(f"{len(files)} files")
    print(f"zgrep -c GroupCoordinator: {grep_s:.1f} s ({size / 1e6 / grep_s:.0f} MB/s), ", end="")
    print(f"{counted} lines")
    print(
        f"regroup history --json:    {history_s:.1f} s ({size / 1e6 / history_s:.0f} MB/s), "
        f"{result['lines_recognized']} lines recognised of {result['lines_read']}, "
        f"{len(result['groups'])} groups, {rebalances} rebalances, "
        f"{len(result['findings'])} findings"
    )
    print(f"parse alone, one core:     {parse_s:.1f} s ({size / 1e6 / parse_s:.0f} MB/s), ", end="")
    print(f"{parsed} lines recognised")
    print(f"ratio history / zgrep: {history_s / grep_s:.2f} (end to end, JVM start included)")
    print(f"ratio parse alone / zgrep: {parse_s / grep_s:.2f} (one core each)")
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
