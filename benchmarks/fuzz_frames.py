"""Wire fuzzing at scale, in process: mutated frames of every API and version.

Serves ``--frames`` mutated requests (default 1,000,000) through
``RegroupServer.serve_now`` (``regroup.server.control.fuzz``: decoders, mapping,
coordinator, cluster APIs) and prints frames/s, how many were answered or
refused, and the crashes, which must be 0. CI runs a bounded sample
(``tests/server/test_server_fuzz.py``).

Run: ``PYTHONPATH=src python benchmarks/fuzz_frames.py [--frames N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import sys
import time

from regroup.server.control.fuzz import FuzzReport, fuzz


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--every", type=int, default=100_000, help="print progress this often")
    args = parser.parse_args()
    start = time.perf_counter()
    report = FuzzReport()
    for done in range(0, args.frames, args.every):
        # Each slice is its own deterministic run (seed + slice index).
        part = fuzz(min(args.every, args.frames - done), args.seed * 1_000_003 + done)
        report.frames += part.frames
        report.answered += part.answered
        report.refused += part.refused
        report.crashes += part.crashes
        report.examples.extend(part.examples[: 5 - len(report.examples)])
        took = time.perf_counter() - start
        print(
            f"  {report.frames:,} frames, {report.crashes} crashes, {report.frames / took:,.0f}/s",
            flush=True,
        )
    took = time.perf_counter() - start
    print(
        f"frames {report.frames:,}  answered {report.answered:,}  refused {report.refused:,}  "
        f"crashes {report.crashes}  {report.frames / took:,.0f} frames/s ({took:.0f} s)"
    )
    for frame, error in report.examples:
        print(f"  crash: {error}\n    frame {frame}")
    return 1 if report.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
