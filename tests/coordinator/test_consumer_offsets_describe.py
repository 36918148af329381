"""Offsets fencing (validate_offset_commit/fetch), ConsumerGroupDescribe, group configs, replay."""

from __future__ import annotations

from typing import Any

import pytest

from regroup.consumer.group.group import ConsumerGroup
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.consumer import (
    CONFIG_OP_DELETE,
    AlterableGroupConfig,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribeGroupConfigsRequest,
    DescribeGroupConfigsResponse,
    IncrementalAlterGroupConfigsRequest,
)
from tests.coordinator.consumer_group_harness import Harness

# -- offsets ----------------------------------------------------------------------------------


def test_offset_commit_fencing_as_kafka_4() -> None:
    h = Harness()
    h.join("a")
    group = h.group()
    group.validate_offset_commit("a", None, 1, True)
    with pytest.raises(KafkaProtocolError) as stale:
        group.validate_offset_commit("a", None, 0, True)
    assert stale.value.code is ErrorCode.STALE_MEMBER_EPOCH
    with pytest.raises(KafkaProtocolError) as unknown:
        group.validate_offset_commit("ghost", None, 1, True)
    assert unknown.value.code is ErrorCode.UNKNOWN_MEMBER_ID
    with pytest.raises(KafkaProtocolError) as old_version:
        group.validate_offset_commit("a", None, 1, False)
    assert old_version.value.code is ErrorCode.UNSUPPORTED_VERSION
    # from outside the group (admin, assign()): only while the group is empty.
    with pytest.raises(KafkaProtocolError):
        group.validate_offset_commit("", None, -1, True)
    h.hb("a", -1)
    h.group().validate_offset_commit("", None, -1, True)


def test_offset_fetch_fencing() -> None:
    h = Harness()
    h.join("a")
    group = h.group()
    group.validate_offset_fetch(None, -1)
    group.validate_offset_fetch("a", 1)
    with pytest.raises(KafkaProtocolError) as stale:
        group.validate_offset_fetch("a", 3)
    assert stale.value.code is ErrorCode.STALE_MEMBER_EPOCH
    with pytest.raises(KafkaProtocolError) as unknown:
        group.validate_offset_fetch("ghost", 1)
    assert unknown.value.code is ErrorCode.UNKNOWN_MEMBER_ID


def test_group_protocol_fields() -> None:
    h = Harness()
    h.join("a")
    group = h.group()
    assert (group.group_type, group.group_id, group.is_empty()) == ("consumer", "g", False)
    assert group.state_name() == "Stable"


# -- describe ----------------------------------------------------------------------------------


def test_describe() -> None:
    h = Harness()
    h.join("a", client_id="client-a", rack_id="r1")
    h.hb("a", 1, [0, 1, 2])
    h.join("b", instance_id="i-b")
    response = h.call(ConsumerGroupDescribeRequest(("g", "", "nope")))
    assert isinstance(response, ConsumerGroupDescribeResponse)
    described, empty, missing = response.groups
    assert (described.error_code, described.group_state, described.group_epoch) == (
        ErrorCode.NONE,
        "Reconciling",
        2,
    )
    assert (described.assignment_epoch, described.assignor_name) == (2, "uniform")
    a, b = described.members
    assert (a.member_id, a.client_id, a.rack_id, a.member_epoch) == ("a", "client-a", "r1", 1)
    assert a.subscribed_topic_names == ("foo",)
    assert [tp.topic_name for tp in a.assignment.topic_partitions] == ["foo"]
    assert len(a.assignment.topic_partitions[0].partitions) == 3
    assert sum(len(tp.partitions) for tp in a.target_assignment.topic_partitions) == 2
    # b waits for foo-2 at the target epoch (Kafka 4.0; the KIP would keep it at 0).
    assert (b.instance_id, b.member_epoch, b.member_type) == ("i-b", 2, 1)
    assert empty.error_code is ErrorCode.INVALID_GROUP_ID
    assert missing.error_code is ErrorCode.GROUP_ID_NOT_FOUND
    assert missing.error_message == "Group nope is not a consumer group."


# -- configs -----------------------------------------------------------------------------------


def alter(h: Harness, *configs: AlterableGroupConfig, validate_only: bool = False) -> Any:
    return h.call(IncrementalAlterGroupConfigsRequest("g", configs, validate_only))


def test_group_configs_within_broker_bounds() -> None:
    h = Harness(
        group_consumer_max_heartbeat_interval_ms=15000, group_consumer_max_session_timeout_ms=60000
    )
    h.join("a")
    assert h.join("a").heartbeat_interval_ms == 5000
    ok = alter(h, AlterableGroupConfig("consumer.heartbeat.interval.ms", value="8000"))
    assert ok.error_code is ErrorCode.NONE
    assert h.hb("a", 1).heartbeat_interval_ms == 8000
    for name, value in (
        ("consumer.heartbeat.interval.ms", "16000"),
        ("consumer.session.timeout.ms", "1000"),
        ("consumer.session.timeout.ms", "abc"),
        ("no.such.config", "1"),
    ):
        response = alter(h, AlterableGroupConfig(name, value=value))
        assert response.error_code is ErrorCode.INVALID_CONFIG, name
    # the interval must stay below the session timeout
    alter(h, AlterableGroupConfig("consumer.heartbeat.interval.ms", value="15000"))
    bad = alter(
        h,
        AlterableGroupConfig("consumer.session.timeout.ms", value="45000"),
        AlterableGroupConfig("consumer.heartbeat.interval.ms", value="15000"),
    )
    assert bad.error_code is ErrorCode.NONE  # 15000 < 45000
    described = h.call(DescribeGroupConfigsRequest("g"), DescribeGroupConfigsResponse)
    assert {(c.name, c.value, c.is_default) for c in described.configs} == {
        ("consumer.heartbeat.interval.ms", "15000", False),
        ("consumer.session.timeout.ms", "45000", False),
        ("regroup.consumer.semantics", "kafka", True),
    }
    assert (
        alter(
            h, AlterableGroupConfig("consumer.heartbeat.interval.ms", CONFIG_OP_DELETE)
        ).error_code
        is ErrorCode.NONE
    )
    assert h.hb("a", 1).heartbeat_interval_ms == 5000
    # validate_only writes nothing
    alter(
        h, AlterableGroupConfig("consumer.heartbeat.interval.ms", value="6000"), validate_only=True
    )
    assert h.last_records == []
    fresh = h.replay_into_new(through_json=False)
    assert fresh.coordinator.consumer.group_configs == h.coordinator.consumer.group_configs


def test_group_configs_deleted_with_the_group() -> None:
    h = Harness()
    h.join("a")
    alter(h, AlterableGroupConfig("consumer.heartbeat.interval.ms", value="6000"))
    h.hb("a", -1)
    h.advance(7 * 24 * 3600 * 1000)
    assert "g" not in h.coordinator.consumer.group_configs
    assert "g" not in h.coordinator.groups


# -- records -------------------------------------------------------------------------------------


def test_records_round_trip_through_json() -> None:
    h = Harness(topics={"foo": 3, "bar-1": 2})
    h.join("a", instance_id="i", subscribed_topic_regex="bar-.*")
    h.advance(0)  # the regex's resolution lands (Kafka resolves it asynchronously)
    h.join("b")
    h.hb("a", -2, instance_id="i")
    fresh = h.replay_into_new(through_json=True)
    assert fresh.groups["g"] == h.group()
    kinds = {r.key.record_type for r in h.records}
    assert {3, 4, 5, 6, 7, 8, 16} <= kinds


def test_timers_are_armed_after_loading() -> None:
    h = Harness()
    h.join("a", rebalance_timeout_ms=10000)
    h.hb("a", 1, [0, 1, 2])
    h.join("b")
    h.hb("a", 1, [0, 1, 2])  # a is revoking
    fresh = h.replay_into_new(through_json=False)
    fresh.on_loaded()
    result = fresh.advance(10000)  # a did not revoke within its rebalance timeout
    group = fresh.groups["g"]
    assert isinstance(group, ConsumerGroup)
    assert "a" not in group.members
    assert any(r.key.record_name == "ConsumerGroupMemberMetadata" for r in result.records)
    fresh.advance(35000)  # b's session, at 45 000
    assert group.members == {}
