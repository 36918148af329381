"""Who leads what among N brokers that share one store (``regroup.server.cluster.topology``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from regroup.brokerlog import coordinator_partition
from regroup.server.cluster.topology import NO_LEADER, Topology

OFFSETS = "__consumer_offsets"


def _all(t: Topology, topics: dict[str, int]) -> list[tuple[str, int]]:
    keys = [(name, p) for name, n in topics.items() for p in range(n)]
    return [*t.offsets_keys(), *keys]


def test_a_groups_coordinator_is_the_leader_of_its_offsets_partition() -> None:
    t = Topology(3)
    # "my-group" hashes to __consumer_offsets-12 (Kafka's partitionFor), led by 12 % 3.
    assert t.offsets_partition("my-group") == coordinator_partition("my-group") == 12
    assert t.coordinator("my-group") == 0
    assert t.offsets_partition("test_consumer") == 7
    assert t.coordinator("test_consumer") == 1
    assert Topology(3, offsets_partitions=1).coordinator("anything") == 0


def test_leaders_spread_over_the_brokers_and_every_broker_is_a_replica() -> None:
    t = Topology(3)
    leaders = [t.leader_id("orders", p) for p in range(6)]
    assert sorted(leaders) == [0, 0, 1, 1, 2, 2]
    for p in range(6):
        replicas = t.replicas("orders", p)
        assert sorted(replicas) == [0, 1, 2]
        assert replicas[0] == leaders[p]


def test_a_stopped_broker_hands_its_leaderships_to_the_next_live_replica() -> None:
    t = Topology(3)
    topics = {"orders": 6}
    led_by_1 = [p for p in range(50) if t.leader_id(OFFSETS, p) == 1]
    moved = t.stop(1, _all(t, topics))
    assert moved == led_by_1
    for p in led_by_1:
        leader, epoch = t.leader(OFFSETS, p)
        assert leader == 2 and epoch == 1  # replicas [1, 2, 0]: 2 is next
    assert all(t.leader_id("orders", p) != 1 for p in range(6))
    assert t.isr() == [0, 2]
    # Starting it again moves nothing back (Kafka waits for its preferred-leader election).
    assert t.start(1, _all(t, topics)) == []
    assert all(t.leader_id(OFFSETS, p) == 2 for p in led_by_1)
    assert t.elect_preferred(_all(t, topics)) == led_by_1
    assert all(t.leader(OFFSETS, p) == (1, 2) for p in led_by_1)


def test_a_partition_without_live_replica_is_offline_until_a_broker_starts() -> None:
    t = Topology(2)
    everything = _all(t, {})
    t.stop(0, everything)
    with pytest.raises(ValueError, match="already stopped"):
        t.stop(0, everything)
    t.stop(1, everything)
    assert t.coordinator("g") == NO_LEADER
    assert sorted(t.start(1, everything)) == list(range(50))
    assert t.coordinator("g") == 1


def test_move_and_its_mistakes() -> None:
    t = Topology(3)
    t.move("orders", 1, 2)
    assert t.leader("orders", 1)[0] == 2
    assert t.move("orders", 1, 2) is False
    with pytest.raises(ValueError, match="no broker 3"):
        t.move("orders", 1, 3)
    t.stop(0, _all(t, {"orders": 2}))
    with pytest.raises(ValueError, match="stopped"):
        t.move("orders", 1, 0)
    with pytest.raises(ValueError, match="one per broker"):
        Topology(3, racks=["a"])
    with pytest.raises(ValueError, match="at least 1"):
        Topology(0)


@given(st.lists(st.integers(min_value=0, max_value=3), max_size=12), st.integers(1, 4))
def test_leaders_are_live_and_epochs_only_grow(stops: list[int], brokers: int) -> None:
    """Whatever stops and starts: a leader is live (or none is) and epochs never go back."""
    t = Topology(brokers, offsets_partitions=7)
    keys = _all(t, {"t": 5})
    epochs = {k: t.leader(*k)[1] for k in keys}
    for node in stops:
        node %= brokers
        if node in t.live:
            t.stop(node, keys)
        else:
            t.start(node, keys)
        for k in keys:
            leader, epoch = t.leader(*k)
            assert leader in t.live or (leader == NO_LEADER and not t.live)
            assert epoch >= epochs[k]
            epochs[k] = epoch


def test_a_topic_created_while_its_preferred_leader_is_stopped_gets_a_live_one() -> None:
    t = Topology(3)
    t.stop(0, t.offsets_keys())
    preferred_0 = next(p for p in range(3) if t.replicas("late", p)[0] == 0)
    leader = t.leader_id("late", preferred_0)
    assert leader in (1, 2)
    t.start(0, t.offsets_keys())
    assert t.leader_id("late", preferred_0) == leader  # stays until an election
