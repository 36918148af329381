"""The classic member's configs, protocol selection and metric statistics."""

from __future__ import annotations

import math

import pytest

from regroup.assignors.classic import create_classic_assignor
from regroup.assignors.classic.api import RebalanceProtocol
from regroup.classic.member.config import ClassicMemberConfig
from regroup.classic.member.metrics import MemberMetrics, SampledStat
from regroup.classic.member.rebalance_protocol import (
    DuplicateAssignorError,
    NoCommonProtocolError,
    ProtocolSelector,
    static_protocol,
)
from regroup.classic.member.requests import join_request, truncate_reason
from regroup.members.errors import InvalidMemberConfigError


def test_kafka_defaults() -> None:
    config = ClassicMemberConfig()
    assert config.session_timeout_ms == 45000
    assert config.heartbeat_interval_ms == 3000
    assert config.max_poll_interval_ms == 300000
    assert config.rebalance_timeout_ms == 300000
    assert config.request_timeout_ms == 30000
    assert config.retry_backoff_ms == 100
    assert config.enable_auto_commit is True
    assert config.group_instance_id is None
    assert config.rebalance_protocol_selection == "dynamic"
    assert config.assignment_strategy == ("cooperative-sticky", "range")
    assert ClassicMemberConfig(rebalance_protocol_selection="static").assignment_strategy == (
        "range",
        "cooperative-sticky",
    )
    assert config.join_group_request_timeout_ms == 305000


RANGE_CLASS = "org.apache.kafka.clients.consumer.RangeAssignor"


def test_from_properties_reads_kafka_names() -> None:
    config = ClassicMemberConfig.from_properties(
        {
            "group.id": "orders",
            "session.timeout.ms": "10000",
            "partition.assignment.strategy": f"{RANGE_CLASS}, roundrobin",
            "enable.auto.commit": "false",
            "group.instance.id": "i-1",
            "rebalance.protocol.selection": "static",
            "client.rack": "rack-a",
        }
    )
    assert config.group_id == "orders"
    assert config.session_timeout_ms == 10000
    assert config.partition_assignment_strategy == (RANGE_CLASS, "roundrobin")
    assert config.enable_auto_commit is False
    assert config.group_instance_id == "i-1"
    assert config.client_rack == "rack-a"


@pytest.mark.parametrize(
    "properties",
    [
        {"no.such.config": "1"},
        {"session.timeout.ms": "soon"},
        {"enable.auto.commit": "maybe"},
        {"rebalance.protocol.selection": "sometimes"},
        {"group.instance.id": " "},
        {"heartbeat.interval.ms": "0"},
        {"partition.assignment.strategy": ""},
    ],
)
def test_invalid_configs_are_refused_with_one_line(properties: dict[str, str]) -> None:
    with pytest.raises(InvalidMemberConfigError) as raised:
        ClassicMemberConfig.from_properties(properties)
    assert "\n" not in str(raised.value)


def test_static_protocol_is_the_highest_common_one() -> None:
    rng = create_classic_assignor("range")
    coop = create_classic_assignor("cooperative-sticky")
    assert static_protocol([rng, coop]) is RebalanceProtocol.EAGER
    assert static_protocol([coop]) is RebalanceProtocol.COOPERATIVE
    with pytest.raises(NoCommonProtocolError):
        static_protocol([])


def test_dynamic_protocol_follows_the_selected_assignor() -> None:
    coop = create_classic_assignor("cooperative-sticky")
    rng = create_classic_assignor("range")
    selector = ProtocolSelector("dynamic", [coop, rng])
    assert selector.current is RebalanceProtocol.COOPERATIVE
    assert selector.on_assignor_selected("range") is RebalanceProtocol.EAGER
    assert selector.on_assignor_selected("cooperative-sticky") is RebalanceProtocol.COOPERATIVE
    fixed = ProtocolSelector("static", [coop, rng])
    assert fixed.on_assignor_selected("cooperative-sticky") is RebalanceProtocol.EAGER


def test_duplicate_assignor_names_are_refused() -> None:
    with pytest.raises(DuplicateAssignorError):
        ProtocolSelector(
            "static", [create_classic_assignor("range"), create_classic_assignor("range")]
        )


def test_join_request_advertises_assignor_versions_and_truncates_the_reason() -> None:
    config = ClassicMemberConfig(group_id="g", client_rack="r1")
    request = join_request(
        config,
        [create_classic_assignor("cooperative-sticky"), create_classic_assignor("range")],
        member_id="",
        topics=frozenset({"b", "a"}),
        owned=frozenset(),
        generation_id=-1,
        reason="",
    )
    assert [(p.name, p.version) for p in request.protocols] == [
        ("cooperative-sticky", 0),
        ("range", 0),
    ]
    assert request.reason is None
    assert truncate_reason("r" * 1000) == "r" * 255


def test_sampled_stats_follow_kafka_windows() -> None:
    avg = SampledStat("avg", 1000, 2)
    peak = SampledStat("max", 1000, 2)
    count = SampledStat("count", 1000, 2)
    assert math.isnan(avg.measure(0)) and math.isnan(peak.measure(0))
    for t, v in ((0, 10.0), (500, 30.0), (1500, 50.0)):
        avg.record(v, t)
        peak.record(v, t)
        count.record(v, t)
    assert avg.measure(1500) == 30.0
    assert peak.measure(1500) == 50.0
    assert count.measure(1500) == 3.0
    # the first window expires once it is two windows old
    assert avg.measure(2000) == 50.0
    assert math.isnan(avg.measure(3500))
    # one event at t=0 measured at once: the window is padded to one full window
    rate = SampledStat("count", 30000, 2)
    rate.record(1.0, 0)
    assert rate.rate_per_hour(0) == pytest.approx(120.0)


def test_member_metrics_keep_the_first_start_across_failures() -> None:
    metrics = MemberMetrics()
    metrics.rebalance_started(100)
    metrics.rebalance_failed(150)
    metrics.rebalance_started(200)  # a retry keeps the first start
    metrics.rebalance_succeeded(400)
    snap = metrics.snapshot(400)
    assert snap["rebalance-latency-max"] == 300
    assert snap["failed-rebalance-total"] == 1
    assert snap["rebalance-total"] == 1
    assert snap["last-rebalance-seconds-ago"] == 0
    assert math.isnan(snap["partitions-lost-latency-avg"])


def test_a_null_client_rack_is_no_rack() -> None:
    # Kafka's client.rack defaults to "" (no rack); a null value means the same.
    assert ClassicMemberConfig.from_properties({"client.rack": None}).client_rack == ""
    assert ClassicMemberConfig.from_properties({"client.rack": "r1"}).client_rack == "r1"
