"""Errors paired with delays (``push_request_errors(..., rtt_ms=, broker=)``), as
librdkafka's ``rd_kafka_mock_broker_push_request_error_rtts``: on the wire, with a
real client, and through ``regroup ctl``."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from regroup.cli.main import main
from regroup.server.clients.wire_client import WireClient
from regroup.testing import Broker, ControlError

TOPIC = "orders"


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(topics={TOPIC: 2}) as running:
        yield running


def _find_coordinator(client: WireClient) -> int:
    found = client.request(10, 3, {"key": "g", "key_type": 0})
    return int(getattr(found.error_code, "value", found.error_code))


def test_a_broker_s_own_entries_come_first_then_any_broker_s_then_plain_ones(
    broker: Broker,
) -> None:
    broker.push_request_errors("FindCoordinator", "COORDINATOR_NOT_AVAILABLE")  # plain
    broker.push_request_errors("FindCoordinator", "NOT_COORDINATOR", "NONE", rtt_ms=0)  # any
    broker.push_request_errors("FindCoordinator", "COORDINATOR_LOAD_IN_PROGRESS", broker=0)
    pending = broker.pending_faults()
    assert pending["pushed_rtts"] == {
        "FindCoordinator": [
            {"error": "COORDINATOR_LOAD_IN_PROGRESS", "rtt_ms": 0, "broker": 0},
            {"error": "NOT_COORDINATOR", "rtt_ms": 0, "broker": None},
            {"error": "NONE", "rtt_ms": 0, "broker": None},
        ]
    }
    with WireClient("127.0.0.1", broker.port) as client:
        codes = [_find_coordinator(client) for _ in range(5)]
    # 14 COORDINATOR_LOAD_IN_PROGRESS, 16 NOT_COORDINATOR, 0 served, 15 the plain push,
    # then nothing left: served.
    assert codes == [14, 16, 0, 15, 0]
    assert broker.pending_faults()["pushed_rtts"] == {}


def test_each_answer_leaves_its_own_delay_later(broker: Broker) -> None:
    # The first answer is held 3 s, the second (an error) is not delayed at all.
    broker.push_request_errors(
        "FindCoordinator", "NONE", "NOT_COORDINATOR", rtt_ms=[3000, 0], broker=0
    )
    with WireClient("127.0.0.1", broker.port, timeout=0.5) as slow, pytest.raises(socket.timeout):
        _find_coordinator(slow)
    with WireClient("127.0.0.1", broker.port, timeout=5) as client:
        assert _find_coordinator(client) == 16
        assert _find_coordinator(client) == 0
    assert broker.pending_faults()["delayed"] == 1


def test_a_held_metadata_answer_times_a_real_client_out_once(broker: Broker) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert TOPIC in admin.list_topics(timeout=10).topics
    broker.push_request_errors("Metadata", "NONE", rtt_ms=3000)
    with pytest.raises(KafkaException) as timed_out:
        admin.list_topics(timeout=0.5)
    assert timed_out.value.args[0].code() == KafkaError._TIMED_OUT
    # One entry, one request: the next Metadata is answered at once.
    assert TOPIC in admin.list_topics(timeout=10).topics


def test_bad_pairs_are_refused(broker: Broker) -> None:
    with pytest.raises(ControlError, match="2 errors but 1 rtt_ms"):
        broker.push_request_errors("Heartbeat", "NONE", "NONE", rtt_ms=[5])
    with pytest.raises(ControlError, match="no broker 3"):
        broker.push_request_errors("Heartbeat", "NONE", broker=3)
    with pytest.raises(ControlError, match=">= 0"):
        broker.push_request_errors("Heartbeat", "NONE", rtt_ms=-1)
    with pytest.raises(ControlError, match="no request-wide error code"):
        broker.push_request_errors("Metadata", "UNKNOWN_SERVER_ERROR", rtt_ms=5)
    assert broker.pending_faults()["pushed_rtts"] == {}
    broker.push_request_errors("Heartbeat", "NONE", rtt_ms=5)
    broker.clear_request_errors("Heartbeat")
    assert broker.pending_faults()["pushed_rtts"] == {}


def _ctl(broker: Broker, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main(["ctl", "--bootstrap-server", broker.bootstrap, *argv])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else captured.err)


def test_ctl_pushes_errors_with_delays(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    assert _ctl(
        broker, capsys, "push-errors", "Heartbeat", "NONE", "REBALANCE_IN_PROGRESS",
        "--rtt-ms", "250", "0", "--broker", "0",
    ) == (0, 2)  # fmt: skip
    assert _ctl(broker, capsys, "push-errors", "JoinGroup", "NONE", "--rtt-ms", "100") == (0, 1)
    _, faults = _ctl(broker, capsys, "faults")
    assert faults["pushed_rtts"] == {
        "Heartbeat": [
            {"error": "NONE", "rtt_ms": 250, "broker": 0},
            {"error": "REBALANCE_IN_PROGRESS", "rtt_ms": 0, "broker": 0},
        ],
        "JoinGroup": [{"error": "NONE", "rtt_ms": 100, "broker": None}],
    }
    code, err = _ctl(
        broker, capsys, "push-errors", "Heartbeat", "NONE", "NONE", "--rtt-ms", "1", "2", "3"
    )
    assert code == 2 and "2 errors but 3 --rtt-ms" in err and err.count("\n") == 1
    code, err = _ctl(broker, capsys, "push-errors", "Heartbeat", "NONE", "--broker", "9")
    assert code == 2 and "no broker 9" in err


def test_ctl_produces_keys_and_headers(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    from regroup.server.control.records import partition_for_key

    code, written = _ctl(
        broker, capsys, "produce", TOPIC, "a", "b", "--keys", "k1", "k2", "--header", "trace=x"
    )
    assert code == 0
    assert set(written) == {str(partition_for_key(k, 2)) for k in (b"k1", b"k2")}
    code, err = _ctl(broker, capsys, "produce", TOPIC, "a", "b", "--keys", "k1")
    assert code == 2 and "2 values but 1 --keys" in err
