"""Time from a broker's stop to the group consuming again, per client (three brokers).

A ``Broker(brokers=3)`` in this process, a topic of six partitions and a group of two
consuming, committing members of one client (``tests/cluster/cluster_clients.py``: the
apps of the rolling-restart tests). Every broker is stopped and started in turn; after
each stop, records are produced at once, and the figure is the time from the stop to the
group having read all of them (so it includes finding the new coordinator and the new
partition leaders, and one poll). Printed per client and protocol: the median and the
worst over the stops and rounds, the stops that moved the group's coordinator, and the
rebalances (generation or group epoch bumps: Kafka makes none, nor does regroup).

    python benchmarks/cluster_failover.py              # 3 rounds of 3 stops per client
    python benchmarks/cluster_failover.py --rounds 1 --json
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' client apps

from tests.cluster.cluster_clients import CASES, make_app, rolling_restart

from regroup.testing import Broker


def measure(client: str, protocol: str, rounds: int) -> dict[str, object]:
    resumed: list[float] = []
    moves = rebalances = 0
    for round_ in range(rounds):
        group = f"bench-{client}-{protocol}-{round_}"
        with Broker(brokers=3, topics={"orders": 6}) as broker:
            apps = [make_app(client, broker.bootstrap, group, "orders", protocol) for _ in range(2)]
            try:
                before = broker.coordinator_of(group)
                run = rolling_restart(broker, apps, group, "orders", per_broker=20)
            finally:
                for app in apps:
                    app.close()
            resumed.extend(run.resumed_s)
            coordinators = [before, *run.coordinators]
            moves += sum(1 for a, b in itertools.pairwise(coordinators) if a != b)
            rebalances += run.rebalances
    return {
        "client": client,
        "protocol": protocol,
        "stops": len(resumed),
        "median_s": round(statistics.median(resumed), 3),
        "max_s": round(max(resumed), 3),
        "coordinator_moves": moves,
        "rebalances": rebalances,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(client, protocol, args.rounds) for client, protocol in CASES]
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(f"{'client':<16} {'protocol':<9} {'stops':>5} {'median':>8} {'worst':>8} "
          f"{'moves':>5} {'rebalances':>10}")  # fmt: skip
    for row in rows:
        print(
            f"{row['client']:<16} {row['protocol']:<9} {row['stops']:>5} "
            f"{row['median_s']:>7.2f}s {row['max_s']:>7.2f}s {row['coordinator_moves']:>5} "
            f"{row['rebalances']:>10}"
        )
    fastest = min(float(str(r["median_s"])) for r in rows)
    for row in rows:
        print(f"  {row['client']} {row['protocol']}: {float(str(row['median_s'])) / fastest:.1f}x "
              "the fastest median")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
