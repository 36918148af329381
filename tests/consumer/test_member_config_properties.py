"""One parser of a KIP-848 member's Kafka configs, and both drivers agree on it.

``ConsumerMemberConfig.from_properties`` is the only place the names are read; the
simulator (``regroup.sim.configs.consumer_member_config``) and the test harness
(``InProcessGroup.add_member`` with a mapping) both go through it. These cases once
differed between the two (an empty ``client.rack``, ``request.timeout.ms``, the error
for a classic-only config): each now gives one answer, Kafka's, on both paths.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest

from regroup.consumer.member.config import ConsumerMemberConfig
from regroup.members.errors import InvalidMemberConfigError
from regroup.sim.configs import consumer_member_config
from regroup.testing import InProcessGroup


def via_harness(props: Mapping[str, Any]) -> ConsumerMemberConfig:
    group = InProcessGroup(topics={"t": 2}, group_protocol="consumer", group_id="g")
    return group.add_member("c", dict(props)).config  # type: ignore[return-value]


def via_simulator(props: Mapping[str, Any]) -> ConsumerMemberConfig:
    return consumer_member_config("g", "c", props)


ACCEPTED: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, {}),
    # Kafka's default client.rack is "", which is no rack (no RackId is sent).
    ({"client.rack": ""}, {"client_rack": None}),
    ({"client.rack": None}, {"client_rack": None}),
    ({"client.rack": "r1"}, {"client_rack": "r1"}),
    ({"max.poll.interval.ms": "1000"}, {"max_poll_interval_ms": 1000}),
    ({"enable.auto.commit": "FALSE"}, {"enable_auto_commit": False}),
    ({"enable.auto.commit": False}, {"enable_auto_commit": False}),
    ({"group.instance.id": "i-1"}, {"group_instance_id": "i-1"}),
    ({"group.remote.assignor": "range"}, {"group_remote_assignor": "range"}),
    # regroup's own: any RebalanceTimeoutMs the wire carries (the soak's bad clients).
    (
        {"regroup.heartbeat.rebalance.timeout.ms": "0"},
        {"regroup_heartbeat_rebalance_timeout_ms": 0},
    ),
    (
        {"regroup.heartbeat.rebalance.timeout.ms": -1},
        {"regroup_heartbeat_rebalance_timeout_ms": -1},
    ),
    # Valid consumer configs the member does not read: its driver does.
    ({"request.timeout.ms": 40000}, {}),
    ({"group.protocol": "CONSUMER"}, {}),
]


@pytest.mark.parametrize(("props", "fields"), ACCEPTED)
def test_both_drivers_build_the_same_config(props: dict[str, Any], fields: dict[str, Any]) -> None:
    expected = ConsumerMemberConfig(group_id="g", client_id="c", **fields)
    assert via_simulator(props) == expected
    assert via_harness(props) == expected


REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"session.timeout.ms": 10000}, "not a consumer config with group.protocol=consumer"),
    ({"partition.assignment.strategy": "range"}, "not a consumer config"),
    ({"no.such.config": 1}, "unknown consumer config 'no.such.config'"),
    ({"max.poll.interval.ms": "soon"}, "must be an integer"),
    ({"request.timeout.ms": "soon"}, "must be an integer"),
    ({"enable.auto.commit": "yes"}, "must be true or false"),
    ({"max.poll.interval.ms": 0}, "max.poll.interval.ms must be >= 1"),
]


@pytest.mark.parametrize(("props", "message"), REFUSED)
def test_both_drivers_refuse_the_same_configs(props: dict[str, Any], message: str) -> None:
    for build in (via_simulator, via_harness):
        with pytest.raises(InvalidMemberConfigError, match=re.escape(message)):
            build(props)


def test_the_simulation_owns_the_group_and_client_ids() -> None:
    with pytest.raises(ValueError, match=re.escape("group.id is set by the simulation")):
        via_simulator({"group.id": "other"})
    assert ConsumerMemberConfig.from_properties({"group.id": "g", "client.id": "x"}) == (
        ConsumerMemberConfig(group_id="g", client_id="x")
    )


def test_a_classic_group_protocol_is_refused() -> None:
    with pytest.raises(
        InvalidMemberConfigError, match=re.escape("group.protocol must be consumer")
    ):
        ConsumerMemberConfig.from_properties({"group.id": "g", "group.protocol": "classic"})
