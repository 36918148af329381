"""How fast a test gets a broker: ``regroup.testing.Broker`` start to the first Metadata answer.

The acceptance: "A Broker starts in well under a second (measure:
start-to-first-Metadata time)". Each run: ``Broker(topics={"orders": 3}).start()``,
a fresh client connection, one Metadata v12 request answered, then ``stop()``
(timed apart). The first run pays for imports and kio's class caches and is
reported on its own; the others give the median, the 90th percentile and the
extremes. For comparison, ``--subprocess K`` also times ``regroup serve`` in a
child process (interpreter start, imports, the "serving on" line, a Metadata):
what a broker per test would cost out of process.

    python benchmarks/broker_start.py              # 50 runs
    python benchmarks/broker_start.py -n 200 --subprocess 5 --json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from regroup.server.clients.wire_client import WireClient
from regroup.testing import Broker

METADATA_V12 = {
    "topics": None,
    "allow_auto_topic_creation": False,
    "include_topic_authorized_operations": False,
}


def _first_metadata(port: int, topics: int) -> None:
    with WireClient("127.0.0.1", port) as client:
        answered = client.request(3, 12, METADATA_V12).topics
    assert len(answered) == topics, "the broker's Metadata misses its topics"


def one_broker() -> tuple[float, float]:
    """(start to first Metadata, stop) in milliseconds."""
    started = time.perf_counter()
    broker = Broker(topics={"orders": 3}).start()
    _first_metadata(broker.port, 1)
    ready = time.perf_counter()
    broker.stop()
    stopped = time.perf_counter()
    return (ready - started) * 1000, (stopped - ready) * 1000


def one_subprocess() -> float:
    src = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": str(src)}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "regroup.cli.main",
            "serve",
            "--port",
            "0",
            "--log-level",
            "WARNING",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        _first_metadata(int(line.strip().rsplit(":", 1)[1]), 0)
        return (time.perf_counter() - started) * 1000
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median_ms": round(statistics.median(ordered), 2),
        "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 2),
        "min_ms": round(ordered[0], 2),
        "max_ms": round(ordered[-1], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=50, help="broker runs after the first")
    parser.add_argument("--subprocess", type=int, default=0, help="`regroup serve` runs")
    parser.add_argument("--json", action="store_true", help="one JSON document")
    args = parser.parse_args()

    first, _ = one_broker()
    runs = [one_broker() for _ in range(args.n)]
    result: dict[str, object] = {
        "runs": args.n,
        "first_start_ms": round(first, 2),
        "start_to_first_metadata": _summary([start for start, _ in runs]),
        "stop": _summary([stop for _, stop in runs]),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }
    if args.subprocess:
        result["regroup_serve_subprocess"] = _summary(
            [one_subprocess() for _ in range(args.subprocess)]
        )
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"Broker start to first Metadata, {args.n} runs (first run {first:.1f} ms):")
    for name in ("start_to_first_metadata", "stop", "regroup_serve_subprocess"):
        if name in result:
            figures = result[name]
            assert isinstance(figures, dict)
            print(f"  {name:28} " + "  ".join(f"{k} {v}" for k, v in figures.items()))
    print(f"  (1-minute load average {result['load_average_1m']} on {result['cpus']} CPUs)")


if __name__ == "__main__":
    main()
