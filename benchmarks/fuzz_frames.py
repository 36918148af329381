"""Wire fuzzing at scale, in process: mutated frames of every API and version.

Serves ``--frames`` mutated requests (default 1,000,000) through
``RegroupServer.serve_now`` (``regroup.server.control.fuzz``: decoders, mapping,
coordinator, cluster APIs) and prints frames/s, how many were answered, refused
(answered, then closed) or closed, the slowest frame, the hangs (an answer
slower than 1 s) and the deaths, which must be 0.

``--sasl`` (``regroup.server.control.fuzz_sasl``): the server has a SASL_PLAINTEXT
listener (PLAIN and SCRAM users) and ACLs; half the frames are sent after a real
login as a principal that has some rights but not all, half before any login
(mutated SASL exchanges among them). It also prints the logins, the frames the
authorizer refused something in and those it only allowed.

CI runs bounded samples (``tests/server/test_server_fuzz.py``). The last line is
one JSON object with the figures.

Run: ``PYTHONPATH=src python benchmarks/fuzz_frames.py [--sasl] [--frames N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import sys
import time

from regroup.server.control.fuzz import FuzzReport, fuzz
from regroup.server.control.fuzz_sasl import fuzz_sasl

#: A slice that takes longer than this is stuck: the traceback is printed and the run ends.
STUCK_S = 1800


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sasl", action="store_true", help="SASL_PLAINTEXT and ACLs")
    parser.add_argument("--every", type=int, default=100_000, help="print progress this often")
    parser.add_argument(
        "--restart-every", type=int, default=20_000, help="a fresh server this often"
    )
    args = parser.parse_args()
    run = fuzz_sasl if args.sasl else fuzz
    start = time.perf_counter()
    report = FuzzReport()
    for done in range(0, args.frames, args.every):
        faulthandler.dump_traceback_later(STUCK_S, exit=True)
        # Each slice is its own deterministic run (seed + slice index).
        part = run(
            min(args.every, args.frames - done), args.seed * 1_000_003 + done, args.restart_every
        )
        faulthandler.cancel_dump_traceback_later()
        report.add(part)
        took = time.perf_counter() - start
        print(
            f"  {report.frames:,} frames, {report.deaths} deaths, {report.hangs} hangs, "
            f"{report.frames / took:,.0f}/s",
            flush=True,
        )
    took = time.perf_counter() - start
    print(
        f"frames {report.frames:,}  answered {report.answered:,}  refused {report.refused:,}  "
        f"closed {report.closed:,}  deaths {report.deaths}  hangs {report.hangs} (> 1 s)  "
        f"max latency {report.max_latency_s * 1000:.1f} ms "
        f"({report.max_latency_cpu_s * 1000:.1f} ms of CPU)  "
        f"{report.frames / took:,.0f} frames/s ({took:.0f} s)"
    )
    if args.sasl:
        print(
            f"after a login {report.authenticated:,} frames ({report.logins:,} logins): "
            f"{report.denied:,} with an authorization refused, {report.allowed:,} only allowed, "
            f"{report.foreign_decisions} decisions for another principal; "
            f"before a login {report.frames - report.authenticated:,} frames, "
            f"{report.pre_login_decisions} authorization decisions"
        )
    for frame, error in report.examples:
        print(f"  {error}\n    frame {frame}")
    summary = {
        "mode": "sasl" if args.sasl else "plaintext",
        "command": " ".join(["python", "benchmarks/fuzz_frames.py", *sys.argv[1:]]),
        "frames": report.frames,
        "answered": report.answered,
        "refused": report.refused,
        "closed": report.closed,
        "deaths": report.deaths,
        "hangs": report.hangs,
        "max_latency_ms": round(report.max_latency_s * 1000, 1),
        "max_latency_cpu_ms": round(report.max_latency_cpu_s * 1000, 1),
        "frames_per_s": round(report.frames / took),
        "seconds": round(took),
        "authenticated": report.authenticated,
        "logins": report.logins,
        "denied": report.denied,
        "allowed": report.allowed,
        "foreign_decisions": report.foreign_decisions,
        "pre_login_decisions": report.pre_login_decisions,
    }
    print(json.dumps(summary))
    return 1 if report.deaths or report.hangs else 0


if __name__ == "__main__":
    sys.exit(main())
