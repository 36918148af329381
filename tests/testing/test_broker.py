"""``regroup.testing.Broker``: life cycle, configs, test data, and nothing left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from regroup.server.clients.wire_client import WireClient
from regroup.testing import Broker
from regroup.testing.broker import TEST_CONFIGS, ControlError

METADATA_V9 = {
    "topics": None,
    "allow_auto_topic_creation": False,
    "include_cluster_authorized_operations": False,
    "include_topic_authorized_operations": False,
}


def _open_fds() -> set[str]:
    fd_dir = Path("/proc/self/fd")
    if not fd_dir.is_dir():
        pytest.skip("no /proc/self/fd on this platform")
    return set(os.listdir(fd_dir))


def test_broker_listens_on_a_free_port_and_serves_metadata() -> None:
    with Broker(topics={"orders": 3}) as broker:
        host, port = broker.bootstrap.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) == broker.port > 0
        with WireClient(host, broker.port) as client:
            topics = client.request(3, 9, METADATA_V9).topics
        assert [(t.name, len(t.partitions)) for t in topics] == [("orders", 3)]
    assert not broker.running
    with pytest.raises(RuntimeError, match="not running"):
        broker.create_topic("late")


def test_twenty_start_stop_cycles_leave_no_thread_socket_or_file() -> None:
    # One cycle first: imports and kio's class caches are loaded once per process.
    with Broker(topics={"t": 1}) as broker, WireClient("127.0.0.1", broker.port) as client:
        client.request(3, 9, METADATA_V9)
    threads, fds = threading.active_count(), _open_fds()
    for _ in range(20):
        with Broker(topics={"t": 2}) as broker:
            # A connected client too: its server-side socket must be closed by stop().
            with WireClient("127.0.0.1", broker.port) as client:
                client.request(3, 9, METADATA_V9)
                broker.produce("t", ["x"])
            idle = WireClient("127.0.0.1", broker.port)  # still open when the broker stops
        idle.close()
    assert threading.active_count() == threads
    assert _open_fds() == fds


def test_group_configs_at_start_and_at_run_time() -> None:
    with Broker(configs={"group.consumer.heartbeat.interval.ms": 250}) as broker:
        configs = broker.configs()
        assert configs["group.consumer.heartbeat.interval.ms"] == 250
        assert (
            configs["group.initial.rebalance.delay.ms"]
            == TEST_CONFIGS["group.initial.rebalance.delay.ms"]
        )
        broker.set_configs({"group.consumer.session.timeout.ms": 3000})
        broker.set_configs(group_initial_rebalance_delay_ms=100)
        configs = broker.configs()
        assert configs["group.consumer.session.timeout.ms"] == 3000
        assert configs["group.initial.rebalance.delay.ms"] == 100
        assert broker.server.coordinator.config.group_consumer_session_timeout_ms == 3000
        # Checked together, all or nothing: an interval above the session timeout is refused.
        with pytest.raises(ControlError, match=r"heartbeat\.interval\.ms"):
            broker.set_configs({"group.consumer.heartbeat.interval.ms": 5000})
        with pytest.raises(ControlError, match="unknown broker config"):
            broker.set_configs({"group.no.such.config": 1})
        assert broker.configs()["group.consumer.heartbeat.interval.ms"] == 250


def test_bad_configs_at_start_are_refused_before_anything_starts() -> None:
    threads = threading.active_count()
    with pytest.raises(ControlError, match="unknown broker config"):
        Broker(configs={"group.bogus": 1})
    assert threading.active_count() == threads


def test_produce_round_robin_or_to_one_partition() -> None:
    with Broker(topics={"orders": 2}) as broker:
        assert broker.produce("orders", ["a", b"b", "c"]) == {0: 0, 1: 0}
        assert broker.produce("orders", ["d"], partition=1) == {1: 1}

        def end(partition: int) -> int:
            log = broker.server.log.partition("orders", partition)
            assert log is not None
            return log.next_offset

        def ends() -> list[int]:
            return [end(p) for p in (0, 1)]

        assert broker.call(ends) == [2, 2]
        with pytest.raises(ControlError, match="no topic"):
            broker.produce("missing", ["x"])
        with pytest.raises(ControlError, match="no partition"):
            broker.produce("orders", ["x"], partition=5)


def test_importing_the_sans_io_harness_does_not_load_the_server() -> None:
    code = (
        "import sys, regroup.testing; "
        "assert not any(m.startswith('regroup.server') for m in sys.modules), 'loaded'; "
        "regroup.testing.Broker; "
        "assert 'regroup.server.app' in sys.modules"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
