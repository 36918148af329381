"""The world, the network, the data plane and the scenario format."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.events import RecordsProduced
from regroup.model import TopicPartition
from regroup.sim.data_plane import DataPlane, DataPlaneConfig
from regroup.sim.network import Network, NetworkConfig
from regroup.sim.scenario import (
    BUILTINS,
    ScenarioError,
    builtin_scenario,
    load_scenario,
    parse_scenario,
)
from regroup.sim.world import World


def test_world_runs_actions_in_time_then_scheduling_order() -> None:
    world = World()
    seen: list[tuple[int, str]] = []
    world.at(10, lambda name: seen.append((world.now_ms, name)), "b")
    world.at(5, lambda name: seen.append((world.now_ms, name)), "a")
    world.at(10, lambda name: seen.append((world.now_ms, name)), "c")
    world.run_until(100)
    assert seen == [(5, "a"), (10, "b"), (10, "c")]
    assert world.now_ms == 100


def test_world_clamps_the_past_to_now_and_stops_at_the_end() -> None:
    world = World()
    seen: list[int] = []

    def chain() -> None:
        seen.append(world.now_ms)
        world.at(world.now_ms - 50, lambda: seen.append(world.now_ms))
        world.after(1000, lambda: seen.append(-1))

    world.at(20, chain)
    world.run_until(500)
    assert seen == [20, 20]


def test_world_calls_after_step_after_each_action_at_its_time() -> None:
    """Rule 4: the hook runs once after every action, at that action's time and before
    the next one, also after an action a running one scheduled for the same millisecond;
    the simulator's stability check relies on it never running inside an action."""
    world = World()
    seen: list[str] = []

    def parent() -> None:
        seen.append("parent")
        world.at(world.now_ms, seen.append, "child")

    world.at(5, seen.append, "a")
    world.at(5, parent)
    world.at(9, seen.append, "b")
    world.run_until(100, after_step=lambda: seen.append(f"after@{world.now_ms}"))
    assert seen == ["a", "after@5", "parent", "after@5", "child", "after@5", "b", "after@9"]
    assert world.steps == 4


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.lists(st.integers(-5, 10), max_size=3)),
        min_size=1,
        max_size=40,
    )
)
def test_world_order_is_time_then_scheduling_order_for_any_schedule(
    plan: list[tuple[int, list[int]]],
) -> None:
    """Rules 1 and 2 against a reference: a heap of (time, sequence number).

    Each planned action, when it runs, schedules children at offsets from now
    (a negative offset is the past, clamped to now).
    """
    world = World()
    seen: list[tuple[int, str]] = []
    reference: list[tuple[int, int, str]] = []
    sequence = [0]

    def schedule(time_ms: int, name: str, children: list[int]) -> None:
        sequence[0] += 1
        reference.append((max(time_ms, world.now_ms), sequence[0], name))
        world.at(time_ms, run, name, children)

    def run(name: str, children: list[int]) -> None:
        seen.append((world.now_ms, name))
        for i, offset in enumerate(children):
            schedule(world.now_ms + offset, f"{name}.{i}", [])

    for i, (time_ms, children) in enumerate(plan):
        schedule(time_ms, str(i), children)
    world.run_until(1_000)
    assert seen == [(t, name) for t, _, name in sorted(reference)]


def test_world_an_action_that_raises_stops_the_run_and_loses_nothing_else() -> None:
    world = World()
    seen: list[str] = []

    def boom() -> None:
        seen.append("boom")
        raise RuntimeError("stop")

    world.at(5, seen.append, "a")
    world.at(5, boom)
    world.at(5, seen.append, "b")
    world.at(7, seen.append, "c")
    with pytest.raises(RuntimeError):
        world.run_until(100)
    assert world.now_ms == 5 and world.steps == 1
    world.run_until(100)  # nothing runs twice, nothing is skipped
    assert seen == ["a", "boom", "b", "c"]
    assert world.next_time() is None


def test_network_links_are_fifo_whatever_the_jitter() -> None:
    network = Network(NetworkConfig(latency_ms=5, jitter_ms=50), random.Random(1))
    arrivals = [network.transit("a", "b", t) for t in range(100)]
    known = [x for x in arrivals if x is not None]
    assert known == arrivals
    assert known == sorted(known)


def test_network_cut_drops_both_ways_until_healed() -> None:
    network = Network(NetworkConfig(), random.Random(1))
    network.cut("a")
    assert network.transit("a", "c", 0) is None
    assert network.transit("c", "a", 0) is None
    assert not network.delivers("c", "a")
    network.heal("a")
    assert network.transit("a", "c", 0) == 1


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32), loss=st.floats(0.0, 0.9))
def test_network_is_deterministic_for_a_seed(seed: int, loss: float) -> None:
    def run() -> list[int | None]:
        network = Network(NetworkConfig(3, 7, loss), random.Random(seed))
        return [network.transit("x", "y", t) for t in range(50)]

    assert run() == run()


class _Sink:
    """A production sink that logs (as a run that keeps its event log)."""

    logging = True

    def __init__(self) -> None:
        self.logged: list[RecordsProduced] = []
        self.totals: list[tuple[int, int]] = []

    def log(self, event: RecordsProduced) -> None:
        self.logged.append(event)

    def records_produced(self, ts_ms: int, count: int) -> None:
        self.totals.append((ts_ms, count))


def test_data_plane_produces_rate_times_time_at_each_tick() -> None:
    sink = _Sink()
    plane = DataPlane(DataPlaneConfig(records_per_second=7, produce_interval_ms=500), "g", sink)
    plane.set_topics({"t": 2}, 0)
    t0, t1, t2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
    assert plane.end_offset(t0) == 0
    for tick in (500, 1000, 1500):
        plane.tick(tick)
    assert (plane.end_offset(t0), plane.end_offset(t1)) == (10, 10)
    assert [e.end_offset for e in sink.logged if e.partition.partition == 0] == [3, 7, 10]
    plane.set_topics({"t": 3}, 1500)
    assert plane.end_offset(t2) == 0
    plane.tick(2000)
    assert plane.end_offset(t2) == 3
    assert plane.next_tick(2000) == 2500
    # The totals are the sums of the per-partition events of each tick.
    by_tick: dict[int, int] = {}
    for event in sink.logged:
        by_tick[event.ts_ms] = by_tick.get(event.ts_ms, 0) + event.count
    assert sink.totals == sorted(by_tick.items()) == [(500, 6), (1000, 8), (1500, 6), (2000, 11)]


@given(
    rate=st.integers(1, 50),
    interval=st.integers(1, 1500),
    births=st.lists(st.integers(0, 5000), min_size=1, max_size=4),
)
@settings(max_examples=50, deadline=None)
def test_data_plane_totals_match_the_partitions_events(
    rate: int, interval: int, births: list[int]
) -> None:
    """Closed form: a tick's total is what the partitions' own events add up to, and each
    partition's end offset is the end offset of its last event."""
    sink = _Sink()
    plane = DataPlane(DataPlaneConfig(rate, interval), "g", sink)
    topics: dict[str, int] = {}
    pending = sorted(births)
    now = 0
    while now <= 8000:
        while pending and pending[0] <= now:
            topics[f"t{len(topics)}"] = 3
            plane.set_topics(topics, pending.pop(0))
        plane.tick(now)
        now = plane.next_tick(now)
    logged = sum(event.count for event in sink.logged)
    assert sum(count for _, count in sink.totals) == logged
    last: dict[TopicPartition, int] = {}
    for event in sink.logged:
        last[event.partition] = event.end_offset
    for tp in plane.born:
        assert plane.end_offset(tp) == last.get(tp, 0)


def test_every_builtin_is_valid_and_named_in_kebab_case() -> None:
    expected = {
        "steady", "scale-out", "scale-in", "crash", "rolling-bounce", "slow-member",
        "network-partition", "add-partitions", "upgrade-double-bounce",
        "upgrade-single-bounce", "downgrade", "upgrade-to-consumer", "misconfigured-eager-member",
        "enforce-rebalance", "broker-rolling-restart",
    }  # fmt: skip
    assert set(BUILTINS) == expected
    for name in BUILTINS:
        scenario = builtin_scenario(name)
        assert scenario.total_duration_ms() > max(
            (t for t, _ in scenario.timed_actions()), default=0
        )


TOML = """
name = "mine"
settle_ms = 1000
[group]
members = 2
protocol = "eager"
[topics]
a = 4
[data]
records_per_second = 0
[consumer]
"session.timeout.ms" = 10000
[[actions]]
at_ms = 100
action = "rolling_bounce"
members = "all"
gap_ms = 50
downtime_ms = 10
[[actions]]
after_ms = 200
action = "crash"
members = [0, -1]
"""


def test_toml_and_json_files_load_the_same_scenario(tmp_path: Path) -> None:
    import tomllib

    toml_path = tmp_path / "s.toml"
    toml_path.write_text(TOML)
    json_path = tmp_path / "s.json"
    json_path.write_text(json.dumps(tomllib.loads(TOML)))
    a, b = load_scenario(str(toml_path)), load_scenario(str(json_path))
    assert a == b
    assert a.members == 2 and a.protocol == "eager" and dict(a.topics) == {"a": 4}
    # bounce of 2 members: 100 + 50 + 10 = 160; crash 200 after that.
    assert [t for t, _ in a.timed_actions()] == [100, 360]
    assert a.total_duration_ms() == 360 + 1000
    assert a.actions[1].members == (0, -1)


@pytest.mark.parametrize(
    "data, message",
    [
        ({}, "needs a name"),
        ({"name": "x", "members": 3}, "unknown scenario key"),
        ({"name": "x", "group": {"protocol": "nope"}}, "group.protocol"),
        ({"name": "x", "actions": [{"action": "explode"}]}, "action must be one of"),
        ({"name": "x", "actions": [{"action": "crash", "at_ms": 1, "after_ms": 2}]}, "not both"),
        ({"name": "x", "topics": {"t": 0}}, ">= 1"),
        ({"name": "x", "network": {"loss": 1.5}}, "loss"),
        ({"name": "x", "data": {"bogus": 1}}, "unknown key"),
    ],
)
def test_bad_scenarios_are_one_line_errors(data: dict[str, object], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(data)


def test_unknown_names_and_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="built-in"):
        load_scenario("no-such-scenario")
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(str(tmp_path / "missing.toml"))
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ScenarioError):
        load_scenario(str(bad))
