"""``regroup.consumer.semantics``: Apache Kafka 4.0's behaviour (default) or KIP-848's design.

Each difference the switch covers, once under each value; and the switch itself as a
broker config and as a group config (IncrementalAlterConfigs / DescribeConfigs).
"""

from __future__ import annotations

from typing import Any

import pytest

from regroup.consumer.group.group_member import MemberState
from regroup.coordinator.config import ConsumerSemantics, GroupCoordinatorConfig, InvalidConfigError
from regroup.model.errors import ErrorCode
from regroup.model.requests.consumer import (
    CONFIG_OP_DELETE,
    AlterableGroupConfig,
    DescribeGroupConfigsRequest,
    DescribeGroupConfigsResponse,
    IncrementalAlterGroupConfigsRequest,
)
from tests.coordinator.consumer_group_harness import Harness, response_parts

KIP = "kip-848"


def _alter(h: Harness, *configs: AlterableGroupConfig) -> Any:
    return h.call(IncrementalAlterGroupConfigsRequest("g", configs, False))


def _described(h: Harness) -> dict[str, tuple[str | None, bool]]:
    configs = h.call(DescribeGroupConfigsRequest("g"), DescribeGroupConfigsResponse).configs
    return {c.name: (c.value, c.is_default) for c in configs}


SEMANTICS = "regroup.consumer.semantics"


# -- the config ------------------------------------------------------------------------------


def test_broker_config_defaults_to_kafka_and_refuses_other_values() -> None:
    assert GroupCoordinatorConfig().consumer_semantics is ConsumerSemantics.KAFKA
    config = GroupCoordinatorConfig.from_properties({"regroup.consumer.semantics": "KIP-848"})
    assert config.consumer_semantics is ConsumerSemantics.KIP_848
    with pytest.raises(InvalidConfigError, match="must be kafka or kip-848"):
        GroupCoordinatorConfig.from_properties({"regroup.consumer.semantics": "kafka-3.9"})


def test_group_config_overrides_the_broker_and_is_described() -> None:
    h = Harness()
    described = {
        c.name: (c.value, c.is_default)
        for c in h.call(DescribeGroupConfigsRequest("g"), DescribeGroupConfigsResponse).configs
    }
    assert described["regroup.consumer.semantics"] == ("kafka", True)
    assert _alter(
        h, AlterableGroupConfig("regroup.consumer.semantics", value="bogus")
    ).error_code is (ErrorCode.INVALID_CONFIG)
    assert _alter(h, AlterableGroupConfig("regroup.consumer.semantics", value=KIP)).error_code is (
        ErrorCode.NONE
    )
    described = {
        c.name: (c.value, c.is_default)
        for c in h.call(DescribeGroupConfigsRequest("g"), DescribeGroupConfigsResponse).configs
    }
    assert described["regroup.consumer.semantics"] == (KIP, False)
    # the group now follows the KIP: a blocked new member stays at epoch 0.
    h.join("a")
    assert h.join("b").member_epoch == 0
    # the override is a record: a rebuilt coordinator has it too.
    assert h.replay_into_new().coordinator.state.consumer.group_configs["g"] == {
        "regroup.consumer.semantics": KIP
    }
    _alter(h, AlterableGroupConfig("regroup.consumer.semantics", CONFIG_OP_DELETE))
    described = {
        c.name: (c.value, c.is_default)
        for c in h.call(DescribeGroupConfigsRequest("g"), DescribeGroupConfigsResponse).configs
    }
    assert described["regroup.consumer.semantics"] == ("kafka", True)


# -- the differences -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("semantics", "epoch", "state"),
    [("kafka", 2, MemberState.UNRELEASED_PARTITIONS), (KIP, 0, MemberState.UNRELEASED_PARTITIONS)],
)
def test_new_member_blocked_on_partitions_others_hold(
    semantics: str, epoch: int, state: MemberState
) -> None:
    """Kafka moves B to the target epoch with foo-2 withheld; the KIP keeps it at epoch 0."""
    h = Harness(regroup_consumer_semantics=semantics)
    h.join("a")
    h.hb("a", 1, [0, 1, 2])
    response = h.join("b")
    assert (response.member_epoch, response_parts(response)) == (epoch, [])
    b = h.group().members["b"]
    assert (b.member_epoch, b.state, b.previous_member_epoch) == (epoch, state, 0 if epoch else -1)


@pytest.mark.parametrize(("semantics", "bumped"), [("kafka", False), (KIP, True)])
def test_server_assignor_change_and_the_group_epoch(semantics: str, bumped: bool) -> None:
    """Kafka 4.0 writes the member record only; the KIP bumps the group epoch."""
    h = Harness(regroup_consumer_semantics=semantics)
    h.join("a")
    h.hb("a", 1, [0, 1, 2])
    h.hb("a", 1, [0, 1, 2], server_assignor="range")
    assert h.group().members["a"].server_assignor == "range"
    assert h.group().group_epoch == (2 if bumped else 1)


@pytest.mark.parametrize(("semantics", "sent"), [("kafka", False), (KIP, True)])
def test_assignment_is_not_resent_when_only_the_epoch_moved(semantics: str, sent: bool) -> None:
    """Kafka sends the assignment when the partitions changed or the request is full."""
    h = Harness(regroup_consumer_semantics=semantics, topics={"foo": 3, "bar": 1})
    h.join("a")
    h.hb("a", 1, [0, 1, 2])
    h.join("b", topics=("bar",))  # bumps to 2; a keeps foo-0..2
    response = h.hb("a", 1, [0, 1, 2])
    assert response.member_epoch == 2
    assert (response.assignment is not None) is sent
    # a full request always carries it.
    full = h.hb("a", 2, [0, 1, 2], rebalance_timeout_ms=1000, subscribed_topic_names=("foo",))
    assert response_parts(full) == [0, 1, 2]


@pytest.mark.parametrize(("semantics", "regex"), [("kafka", "ba.*"), (KIP, "")])
def test_names_after_a_regex(semantics: str, regex: str) -> None:
    """The KIP: a subscription by names replaces the regex; Kafka keeps the null field's value."""
    h = Harness(regroup_consumer_semantics=semantics, topics={"foo": 3, "bar": 1})
    h.join("a", subscribed_topic_regex="ba.*")
    epoch = h.group().members["a"].member_epoch
    h.hb("a", epoch, {"bar": [0]}, subscribed_topic_names=("foo",))
    member = h.group().members["a"]
    assert (member.subscribed_topic_names, member.subscribed_topic_regex) == (
        frozenset({"foo"}),
        regex,
    )
