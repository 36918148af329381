"""What serving ``__consumer_offsets`` adds to a coordinator step that writes records.

Each coordinator step that writes records (a commit, a join, a heartbeat that moves
an epoch) is committed to the store and then appended to ``__consumer_offsets`` in
Kafka's format (``regroup.server.offsets_topic``). This times both for one step of
an OffsetCommit of ``--partitions`` partitions, in memory and with a data directory,
and prints the topic's share of the store's time (a ratio: the store's commit, with
its fsync, is what a step costs already).

    python benchmarks/offsets_topic.py
    python benchmarks/offsets_topic.py --partitions 50 -n 500
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from regroup.records import CoordinatorRecord
from regroup.records.offsets import OffsetCommitKey, OffsetCommitValue
from regroup.server.log.partitions import Log
from regroup.server.log.store import SqliteRecordStore
from regroup.server.offsets_topic import OffsetsTopic


def _per_step_us(step: Callable[[int], None], n: int) -> float:
    step(-1)  # the topic's creation and first file open, apart
    start = time.perf_counter()
    for i in range(n):
        step(i)
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=300, help="steps timed per case")
    parser.add_argument("--partitions", type=int, default=3, help="partitions per commit")
    args = parser.parse_args()
    records = [
        CoordinatorRecord(OffsetCommitKey("bench", "orders", p), OffsetCommitValue(100 + p, 1))
        for p in range(args.partitions)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteRecordStore(Path(tmp) / "coordinator.db")
        store_us = _per_step_us(lambda _: store.append(records), args.n)
        store.close()
        memory = OffsetsTopic(Log(), 50)
        memory_us = _per_step_us(lambda i: memory.append(records, i), args.n)
        disk_log = Log(Path(tmp) / "log")
        disk = OffsetsTopic(disk_log, 50)
        disk_us = _per_step_us(lambda i: disk.append(records, i), args.n)
        disk_log.close()
    print(f"one OffsetCommit step of {args.partitions} partitions, {args.n} steps")
    print(f"  store commit (SQLite, fsync)      {store_us:9.0f} us")
    print(f"  topic append, in memory           {memory_us:9.0f} us")
    print(f"  topic append, data dir            {disk_us:9.0f} us")
    print(f"  topic / store, data dir           {disk_us / store_us:9.3f}")


if __name__ == "__main__":
    main()
