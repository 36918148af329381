"""``regroup serve`` killed with SIGKILL under load loses no acknowledged write.

A real server process on a data directory; a writer (``WireClient``: Produce
v9 with acks=-1, OffsetCommit v8 as a simple consumer) keeps a ledger of what
the server acknowledged; the process is killed -9 while the writer is
running, three times, and after each restart every acknowledged record (by
offset and value) and every acknowledged commit is read back over the wire.
The request in flight at the kill may or may not have landed: both are
accepted, nothing else. ``benchmarks/server_soak.py restarts`` runs the same
loop at scale, with corruption cases. (``test_store_crash_consistency.py``
kills the store in process at every record; this kills the whole server.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kio.records.readers import read_batch

from regroup.server.clients.wire_client import WireClient, fetch_values
from regroup.server.log.partitions import encode_batch

TOPIC = "durable"
PARTITIONS = 2


def _serve(data_dir: Path) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, "-m", "regroup.cli.main", "serve", "--port", "0"]
    command += ["--data-dir", str(data_dir), "--partitions", str(PARTITIONS)]
    proc = subprocess.Popen(
        [*command, "--log-level", "ERROR"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert "serving on" in line, line
    return proc, int(line.rsplit(":", 1)[1])


def _produce(client: WireClient, partition: int, values: list[bytes]) -> Any:
    records = encode_batch(values, 1_700_000_000_000)
    response = client.request(
        0,
        9,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout": 10_000,
            "topic_data": [
                {"name": TOPIC, "partition_data": [{"index": partition, "records": records}]}
            ],
        },
    )
    return response.responses[0].partition_responses[0]


def _commit(client: WireClient, group: str, partition: int, offset: int) -> int:
    partitions = [
        {
            "partition_index": partition,
            "committed_offset": offset,
            "committed_leader_epoch": -1,
            "committed_metadata": "",
        }
    ]
    response = client.request(
        8,
        8,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [{"name": TOPIC, "partitions": partitions}],
        },
    )
    return int(response.topics[0].partitions[0].error_code)


def _committed(client: WireClient, group: str, partition: int) -> int:
    response = client.request(
        9,
        8,
        {
            "groups": [
                {"group_id": group, "topics": [{"name": TOPIC, "partition_indexes": [partition]}]}
            ],
            "require_stable": False,
        },
    )
    return int(response.groups[0].topics[0].partitions[0].committed_offset)


def _records(client: WireClient, partition: int) -> dict[int, bytes]:
    """offset -> value of every record of the partition (one Fetch: the test's log is small)."""
    response = client.request(
        1,
        12,
        fetch_values(TOPIC, [(partition, 0, 32 << 20)], max_bytes=32 << 20),
    )
    data = response.responses[0].partitions[0].records or b""
    found: dict[int, bytes] = {}
    pos = 0
    while pos < len(data):
        batch, size = read_batch(data, pos)
        found.update({r.offset: bytes(r.value or b"") for r in batch.records})
        pos += size
    return found


@dataclass
class Ledger:
    records: dict[int, dict[int, bytes]] = field(
        default_factory=lambda: {p: {} for p in range(PARTITIONS)}
    )
    commits: dict[tuple[str, int], int] = field(default_factory=dict)
    in_flight_commit: dict[tuple[str, int], int] = field(default_factory=dict)
    acked: int = 0
    sequence: int = 0


def _write(port: int, ledger: Ledger, stop: threading.Event) -> None:
    try:
        with WireClient("127.0.0.1", port, timeout=30) as client:
            while not stop.is_set():
                partition = ledger.sequence % PARTITIONS
                values = [f"v{ledger.sequence}-{i}".encode() for i in range(3)]
                ledger.sequence += 1
                part = _produce(client, partition, values)
                assert int(part.error_code) == 0
                for i, value in enumerate(values):
                    ledger.records[partition][int(part.base_offset) + i] = value
                ledger.acked += 1
                key = (f"g{ledger.sequence % 3}", partition)
                offset = max(ledger.records[partition]) + 1
                ledger.in_flight_commit[key] = offset
                assert _commit(client, key[0], partition, offset) == 0
                ledger.commits[key] = offset
                del ledger.in_flight_commit[key]
    except OSError:
        pass  # the server was killed under the request in flight


def _check(port: int, ledger: Ledger) -> tuple[int, int]:
    """(records lost, commits lost) against the ledger."""
    with WireClient("127.0.0.1", port, timeout=30) as client:
        lost_records = 0
        for partition, acked in ledger.records.items():
            present = _records(client, partition)
            lost_records += sum(1 for at, value in acked.items() if present.get(at) != value)
        lost_commits = 0
        for key, offset in ledger.commits.items():
            allowed = {offset, ledger.in_flight_commit.get(key, offset)}
            lost_commits += _committed(client, *key) not in allowed
    return lost_records, lost_commits


def test_server_kill9_under_load_loses_no_acknowledged_record_or_commit(tmp_path: Path) -> None:
    ledger = Ledger()
    proc, port = _serve(tmp_path)
    try:
        with WireClient("127.0.0.1", port, timeout=30) as client:
            client.request(
                19,
                7,
                {
                    "topics": [
                        {
                            "name": TOPIC,
                            "num_partitions": PARTITIONS,
                            "replication_factor": 1,
                            "assignments": (),
                            "configs": (),
                        }
                    ],
                    "timeout": 10_000,
                    "validate_only": False,
                },
            )
        for kill in range(3):
            stop = threading.Event()
            target = ledger.acked + 15
            writer = threading.Thread(target=_write, args=(port, ledger, stop))
            writer.start()
            deadline = time.monotonic() + 60
            while ledger.acked < target and writer.is_alive() and time.monotonic() < deadline:
                time.sleep(0.001)
            proc.send_signal(signal.SIGKILL)  # while the writer has a request in flight
            proc.wait()
            stop.set()
            writer.join(timeout=60)
            assert ledger.acked >= target, f"the writer stopped early in round {kill}"
            proc, port = _serve(tmp_path)
            assert _check(port, ledger) == (0, 0)
        # The restarted log continues after every acknowledged offset: nothing is overwritten.
        with WireClient("127.0.0.1", port, timeout=30) as client:
            part = _produce(client, 0, [b"after"])
            assert int(part.base_offset) > max(ledger.records[0])
        assert sum(len(r) for r in ledger.records.values()) >= 45 * 3
        assert len(ledger.commits) == 3 * PARTITIONS
    finally:
        proc.kill()
        proc.wait()
