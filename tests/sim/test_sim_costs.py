"""The simulator's own costs: the cheap forms of its checks give the figures of the plain ones.

Every shortcut taken for speed (the stability watch's counters, the checker's
count of unowned partitions, the metrics' folded idle intervals, the network's
fixed delay) is compared here with the straightforward computation it replaces.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.events import (
    ConsumerStopped,
    Event,
    GroupStabilized,
    InvariantViolated,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRestored,
    PartitionsRevoked,
    ScenarioStep,
    SimulationEnded,
    SimulationStarted,
)
from regroup.model import TopicPartition
from regroup.sim.invariants import check_events
from regroup.sim.metrics import MetricsAccumulator, compute_metrics
from regroup.sim.network import Network, NetworkConfig
from regroup.sim.scenario import ScenarioError, builtin_scenario
from regroup.sim.settings import plan_run
from regroup.sim.simulation import RunResult, Settings, Simulation
from tests.sim.sim_event_logs import G, observed_logs


def _unowned_by_scan(events: list[Event]) -> list[list[TopicPartition]]:
    """Rule 4 the plain way: at each ``group_stabilized``, scan every partition for an owner."""
    owners: dict[TopicPartition, set[str]] = {}
    topics: dict[str, int] = {}
    found: list[list[TopicPartition]] = []
    for event in events:
        if isinstance(event, PartitionsAssigned):
            for tp in event.partitions:
                owners.setdefault(tp, set()).add(event.member_id)
        elif isinstance(event, PartitionsRevoked | PartitionsLost):
            for tp in event.partitions:
                owners.get(tp, set()).discard(event.member_id)
        elif isinstance(event, ConsumerStopped):
            for held in owners.values():
                held.discard(event.member_id)
        elif isinstance(event, SimulationStarted | ScenarioStep):
            topics.update(event.topics)
        elif isinstance(event, GroupStabilized):
            found.append(
                [
                    TopicPartition(topic, p)
                    for topic in sorted(topics)
                    for p in range(topics[topic])
                    if not owners.get(TopicPartition(topic, p))
                ]
            )
    return found


@settings(max_examples=200, deadline=None)
@given(observed_logs())
def test_the_unowned_count_finds_what_a_scan_of_every_partition_finds(events: list[Event]) -> None:
    violations = [v for v in check_events(events) if v.invariant == "all_partitions_owned"]
    expected = [tp for batch in _unowned_by_scan(events) for tp in batch]
    assert [v.partition for v in violations] == expected


@settings(max_examples=200, deadline=None)
@given(observed_logs())
def test_folded_idle_intervals_give_the_figures_of_the_kept_ones(events: list[Event]) -> None:
    ordered = MetricsAccumulator(ordered=True)
    for event in events:
        ordered.observe(event)
    assert ordered.result().to_json() == compute_metrics(events).to_json()


def test_a_log_that_breaks_the_ordered_promise_is_refused_not_miscounted() -> None:
    tp = TopicPartition("t", 0)
    events: list[Event] = [
        SimulationStarted(
            ts_ms=0, group_id=G, scenario="hand", group_protocol="classic",
            rebalance_protocol="eager", assignor="range", seed=0, topics={"t": 1},
        ),
        ScenarioStep(ts_ms=10, group_id=G, action="stop"),
        PartitionsAssigned(ts_ms=20, group_id=G, member_id="m1", partitions=(tp,),
                           generation_or_epoch=1),
        PartitionsRestored(ts_ms=90, group_id=G, member_id="m1", partitions=(tp,)),
        SimulationEnded(ts_ms=50, group_id=G),  # earlier than the interval closed at 90
    ]  # fmt: skip
    accumulator = MetricsAccumulator(ordered=True)
    for event in events:
        accumulator.observe(event)
    with pytest.raises(ValueError, match="not ordered"):
        accumulator.result()
    assert compute_metrics(events).idle_ms_by_partition == {"t-0": 40}


@settings(max_examples=50, deadline=None)
@given(
    latency=st.integers(0, 20),
    gaps=st.lists(st.integers(0, 30), min_size=1, max_size=30),
    seed=st.integers(0, 100),
)
def test_a_fixed_delay_network_is_fifo_and_draws_nothing(
    latency: int, gaps: list[int], seed: int
) -> None:
    rng = random.Random(seed)
    network = Network(NetworkConfig(latency_ms=latency), rng)
    before = rng.getstate()
    now, arrivals = 0, []
    for gap in gaps:
        now += gap
        arrival = network.transit("a", "b", now)
        assert arrival == now + latency
        arrivals.append(arrival)
    assert arrivals == sorted(arrivals)
    assert rng.getstate() == before
    network.cut("b")
    assert network.transit("a", "b", now) is None


def _run(protocol: str, name: str) -> tuple[Simulation, RunResult]:
    simulation = Simulation(
        Settings(builtin_scenario(name), protocol=protocol, members=20, partitions=60, seed=4)
    )
    return simulation, simulation.run()


@pytest.mark.parametrize("protocol", ["eager", "cooperative", "consumer"])
@pytest.mark.parametrize("name", ["rolling-bounce", "crash"])
def test_the_stability_scans_run_about_once_per_stabilization(protocol: str, name: str) -> None:
    simulation, result = _run(protocol, name)
    stabilized = sum(isinstance(e, GroupStabilized) for e in result.events)
    responses = simulation.transport.requests_sent
    assert stabilized >= 1
    # Not once per response (thousands): a few times per stabilization at most.
    assert simulation.watch.scans <= 2 * stabilized + 2
    assert responses > 50 * simulation.watch.scans


def test_the_plan_refuses_what_the_simulation_refused() -> None:
    scenario = builtin_scenario("rolling-bounce")
    with pytest.raises(ScenarioError, match="members must be >= 0"):
        plan_run(Settings(scenario, members=-1))
    with pytest.raises(ScenarioError, match="COOPERATIVE"):
        plan_run(Settings(scenario, protocol="eager", assignor="cooperative-sticky"))
    with pytest.raises(ScenarioError, match=r"session\.timeout\.ms"):
        plan_run(Settings(scenario, protocol="consumer", configs={"session.timeout.ms": 1}))
    plan = plan_run(Settings(scenario, protocol="eager", static=True))
    assert (plan.assignor, plan.group_protocol, plan.static) == ("range", "classic", True)
    assert plan.consumer_props["partition.assignment.strategy"] == "range"


def test_violations_are_still_events_of_the_log() -> None:
    _, result = _run("eager", "network-partition")
    logged = [e for e in result.events if isinstance(e, InvariantViolated)]
    assert logged and [v.to_dict() for v in logged] == result.metrics.violations
