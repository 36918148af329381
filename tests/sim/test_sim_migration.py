"""Online migration between the classic protocol and KIP-848, end to end in the simulator.

A rolling bounce with ``group.protocol=consumer`` upgrades a classic group
(Kafka 3.8+ ``group.consumer.migration.policy``); one with ``group.protocol=classic``
downgrades a consumer group. Read from the event log, as a user would.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.events import (
    ConsumerStarted,
    Event,
    GenerationBumped,
    GroupEpochBumped,
    GroupStabilized,
    GroupStateChanged,
    MemberJoined,
    MemberLeft,
    PartitionsAssigned,
    PartitionsRevoked,
    RebalanceStarted,
)
from regroup.model import TopicPartition
from regroup.sim.invariants import check_events
from regroup.sim.metrics import compute_metrics
from regroup.sim.scenario import Action, builtin_scenario
from regroup.sim.simulation import RunResult, Settings, run_simulation

E = TypeVar("E", bound=Event)


def upgrade(protocol: str, seed: int = 1, **kw: Any) -> RunResult:
    return run_simulation(
        Settings(builtin_scenario("upgrade-to-consumer"), protocol=protocol, seed=seed, **kw)
    )


def kinds(events: list[Event], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_a_classic_group_rolls_into_kip_848_members(protocol: str) -> None:
    result = upgrade(protocol)
    assert result.metrics.violations == []
    assert not any(result.consumer_errors.values())
    started = kinds(result.events, ConsumerStarted)
    assert [e.group_protocol for e in started] == ["classic"] * 3 + ["consumer"] * 3
    # The classic members left one by one; the KIP-848 ones joined the consumer group.
    left = kinds(result.events, MemberLeft)
    assert [(e.group_protocol, e.reason) for e in left] == [("classic", "leave")] * 3
    joined = [e for e in kinds(result.events, MemberJoined) if e.ts_ms > 30000]
    assert [e.group_protocol for e in joined] == ["consumer"] * 3
    # The group became a consumer group at the first KIP-848 join ...
    first_join = joined[0].ts_ms
    converted = [
        e
        for e in kinds(result.events, GroupStateChanged)
        if e.group_protocol == "consumer" and e.old_state == "Empty"
    ]
    assert [e.ts_ms for e in converted] == [first_join]
    # ... and no classic rebalance barrier ran after that: epochs, not generations.
    assert not [e for e in kinds(result.events, GenerationBumped) if e.ts_ms >= first_join]
    assert [e for e in kinds(result.events, GroupEpochBumped) if e.ts_ms >= first_join]
    # It ends stable with every member a KIP-848 member at the last epoch.
    last = kinds(result.events, GroupStabilized)[-1]
    assert last.ts_ms > started[-1].ts_ms
    assert last.members == 3
    assert check_events(result.events) == []


def test_eager_classic_members_revoke_everything_when_they_rejoin_the_consumer_group() -> None:
    """An eager member gives all its partitions up before each JoinGroup, also inside a
    consumer group; a cooperative one only those the coordinator takes away."""
    eager, cooperative = upgrade("eager"), upgrade("cooperative")
    assert eager.metrics.partitions_revoked > cooperative.metrics.partitions_revoked
    first_join = min(e.ts_ms for e in kinds(eager.events, MemberJoined) if e.ts_ms > 30000)
    held: dict[str, set[TopicPartition]] = {}
    full_revocations = 0
    for event in eager.events:
        if isinstance(event, PartitionsAssigned):
            held[event.member_id] = set(event.partitions)
        elif isinstance(event, PartitionsRevoked) and event.ts_ms > first_join:
            revoked = set(event.partitions)
            member = event.member_id
            if member in held and revoked == held[member] and revoked:
                full_revocations += 1
    assert full_revocations >= 2  # both remaining classic members, at their rejoin


def test_the_upgrade_is_deterministic() -> None:
    a, b = upgrade("cooperative", seed=7), upgrade("cooperative", seed=7)
    assert a.events == b.events and len(a.events) > 100


def test_a_consumer_group_bounced_to_classic_downgrades_when_its_last_kip_848_member_leaves() -> (
    None
):
    scenario = replace(
        builtin_scenario("rolling-bounce"),
        actions=(
            Action(
                "rolling_bounce",
                at_ms=30000,
                members="all",
                gap_ms=10000,
                downtime_ms=1000,
                config={"group.protocol": "classic"},
            ),
        ),
    )
    result = run_simulation(Settings(scenario, protocol="consumer", seed=1))
    assert result.metrics.violations == []
    assert not any(result.consumer_errors.values())
    left = kinds(result.events, MemberLeft)
    last_kip848_leave = [e for e in left if e.group_protocol == "consumer"][-1]
    # The group turned classic at that very moment and rebalanced (Kafka's downgrade) ...
    back = [
        e
        for e in kinds(result.events, GroupStateChanged)
        if e.group_protocol == "classic" and e.ts_ms == last_kip848_leave.ts_ms
    ]
    assert [(e.old_state, e.new_state) for e in back] == [
        ("Empty", "Stable"),
        ("Stable", "PreparingRebalance"),
    ]
    generations = [e for e in kinds(result.events, GenerationBumped) if e.ts_ms > 30000]
    assert generations and len(generations[-1].member_ids) == 3
    assert kinds(result.events, GroupStabilized)[-1].members == 3


@settings(max_examples=6, deadline=None)
@given(
    protocol=st.sampled_from(["eager", "cooperative"]),
    members=st.integers(1, 5),
    partitions=st.integers(1, 9),
    seed=st.integers(0, 1000),
)
def test_property_an_upgrade_never_violates_an_invariant(
    protocol: str, members: int, partitions: int, seed: int
) -> None:
    result = upgrade(protocol, seed=seed, members=members, partitions=partitions)
    assert result.metrics.violations == []
    assert compute_metrics(result.events).to_json() == result.metrics.to_json()


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_static_members_upgrade_without_any_rebalance(protocol: str) -> None:
    """Kafka 3.8+: a KIP-848 static member replaces the classic member of its instance id
    at once, with its assignment: no epoch bump, no partition moved."""
    result = upgrade(protocol, static=True)
    assert result.metrics.violations == []
    assert not any(result.consumer_errors.values())
    assert result.metrics.partitions_moved == 0
    left = kinds(result.events, MemberLeft)
    assert [e.reason for e in left] == ["replaced"] * 3
    assert not [e for e in kinds(result.events, GroupEpochBumped) if e.ts_ms > 30000]


def test_static_members_bounced_back_to_classic_downgrade_without_any_rebalance() -> None:
    """Kafka 4.x ``validateOnlineDowngradeWithReplacedMember``: when a classic static member
    replaces the last KIP-848 one, the group becomes classic at that moment, with every
    member keeping its partitions: no rebalance, nothing moved, the whole round trip."""
    up = builtin_scenario("upgrade-to-consumer")
    back = replace(up.actions[0], at_ms=90000, config={"group.protocol": "classic"})
    scenario = replace(up, actions=(*up.actions, back))
    result = run_simulation(Settings(scenario, protocol="cooperative", seed=1, static=True))
    assert result.metrics.violations == []
    assert not any(result.consumer_errors.values())
    assert result.metrics.partitions_moved == 0
    last_replacement = kinds(result.events, MemberLeft)[-1]
    assert last_replacement.reason == "replaced"
    assert last_replacement.group_protocol == "classic"
    became_classic = [
        e
        for e in kinds(result.events, GroupStateChanged)
        if e.group_protocol == "classic" and e.ts_ms == last_replacement.ts_ms
    ]
    assert [(e.old_state, e.new_state) for e in became_classic] == [("Empty", "Stable")]
    assert not [e for e in kinds(result.events, RebalanceStarted) if e.ts_ms > 30000]
    stabilized = kinds(result.events, GroupStabilized)[-1]
    assert stabilized.group_protocol == "classic" and stabilized.members == 3
