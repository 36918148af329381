"""The protocols' headline behaviours, on the real members and coordinator.

Each test runs a scenario through ``regroup.sim`` and reads the answer from
the event log, as a user would.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.events import (
    Event,
    GenerationBumped,
    MemberLeft,
    PartitionsAssigned,
    PartitionsRevoked,
    ScenarioStep,
)
from regroup.model import TopicPartition
from regroup.sim.invariants import check_events
from regroup.sim.metrics import compute_metrics
from regroup.sim.scenario import BUILTINS, Action, Scenario, builtin_scenario
from regroup.sim.simulation import RunResult, Settings, run_simulation

ALL = {TopicPartition("events", p) for p in range(6)}


def run(name: str, protocol: str, **kw: Any) -> RunResult:
    return run_simulation(Settings(builtin_scenario(name), protocol=protocol, seed=1, **kw))


def revoked_between(events: list[Event], start: int, end: int) -> set[TopicPartition]:
    return {
        tp
        for e in events
        if isinstance(e, PartitionsRevoked) and start <= e.ts_ms <= end
        for tp in e.partitions
    }


def test_eager_pauses_every_partition_at_every_rebalance() -> None:
    result = run("rolling-bounce", "eager")
    events = result.events
    window = result.metrics.window_start_ms
    generations = [e.ts_ms for e in events if isinstance(e, GenerationBumped) and e.ts_ms > window]
    assert len(generations) >= 4
    previous = window
    for ts in generations:
        # Before each new generation every owned partition was revoked (or its
        # owner stopped): the stop-the-world barrier.
        stopped = {
            tp
            for e in events
            if isinstance(e, PartitionsRevoked) and previous <= e.ts_ms <= ts
            for tp in e.partitions
        }
        assert stopped == ALL
        previous = ts
    assert result.metrics.paused_partitions == 6
    assert result.metrics.violations == []


def test_cooperative_pauses_only_the_moved_partitions() -> None:
    result = run("scale-out", "cooperative")
    m = result.metrics
    moved = {f"{tp.topic}-{tp.partition}" for tp in revoked_between(result.events, 0, 10**9)}
    paused = {p for p, idle in m.idle_ms_by_partition.items() if idle > 0}
    assert moved and paused == moved
    assert m.partitions_moved == len(moved) < 6
    assert m.violations == []


def test_kip848_unchanged_members_never_pause_and_there_is_no_barrier() -> None:
    result = run("scale-out", "consumer")
    events = result.events
    window = next(e.ts_ms for e in events if isinstance(e, ScenarioStep))
    revoked_by: dict[str, set[TopicPartition]] = {}
    for e in events:
        if isinstance(e, PartitionsRevoked) and e.ts_ms >= window:
            revoked_by.setdefault(e.member_id, set()).update(e.partitions)
    owners_before: dict[str, set[TopicPartition]] = {}
    for e in events:
        if e.ts_ms >= window:
            break
        if isinstance(e, PartitionsAssigned):
            owners_before.setdefault(e.member_id, set()).update(e.partitions)
        elif isinstance(e, PartitionsRevoked):
            owners_before[e.member_id] -= set(e.partitions)
    unchanged = [m for m in owners_before if m not in revoked_by and owners_before[m]]
    assert unchanged, "some member keeps its whole assignment"
    idle = result.metrics.idle_ms_by_partition
    for member in unchanged:
        for tp in owners_before[member]:
            assert idle[f"{tp.topic}-{tp.partition}"] == 0
    # No group-wide barrier: only the partitions that changed owner paused.
    moved = {f"{tp.topic}-{tp.partition}" for s in revoked_by.values() for tp in s}
    assert {p for p, ms in idle.items() if ms > 0} == moved
    assert result.metrics.violations == []


@pytest.mark.parametrize("protocol", ["eager", "cooperative", "consumer"])
def test_a_static_member_bounced_within_its_session_timeout_causes_no_movement(
    protocol: str,
) -> None:
    result = run("rolling-bounce", protocol, static=True)
    m = result.metrics
    assert m.partitions_moved == 0
    assert m.rebalances == 0
    # Only the bounced member's own partitions wait, for its downtime.
    assert 0 < m.max_partition_pause_ms < 3000
    assert m.violations == []


@pytest.mark.parametrize(
    "protocol, session_ms, configs",
    [
        ("eager", 10000, {"session.timeout.ms": "10000"}),
        ("cooperative", 45000, {}),
        ("consumer", 45000, {}),
    ],
)
def test_a_crash_is_detected_after_the_session_timeout_and_not_before(
    protocol: str, session_ms: int, configs: dict[str, str]
) -> None:
    result = run("crash", protocol, configs=configs)
    events = result.events
    crash = next(e.ts_ms for e in events if isinstance(e, ScenarioStep) and e.action == "crash")
    left = [e for e in events if isinstance(e, MemberLeft) and e.ts_ms >= crash]
    assert left and left[0].reason == "session_timeout"
    # The coordinator last heard from the member at most one heartbeat interval
    # before the crash (3 s classic, 5 s KIP-848), so the session expires in
    # (crash + session - interval, crash + session].
    interval = 5000 if protocol == "consumer" else 3000
    assert crash + session_ms - interval - 10 <= left[0].ts_ms <= crash + session_ms
    assert result.metrics.violations == []


@pytest.mark.parametrize("protocol", ["eager", "cooperative", "consumer"])
def test_same_seed_same_event_log_byte_for_byte(protocol: str) -> None:
    a = run("rolling-bounce", protocol, members=4, partitions=8)
    b = run("rolling-bounce", protocol, members=4, partitions=8)
    lines_a = [e.to_json_line() for e in a.events]
    assert lines_a == [e.to_json_line() for e in b.events]
    other = run_simulation(
        Settings(
            replace(builtin_scenario("rolling-bounce"), network=replace(
                builtin_scenario("rolling-bounce").network, jitter_ms=5)),
            protocol=protocol, seed=2, members=4, partitions=8,
        )
    )  # fmt: skip
    assert [e.to_json_line() for e in other.events] != lines_a


def test_the_online_checker_agrees_with_a_replay_of_the_log() -> None:
    result = run("network-partition", "cooperative")
    online = [v for v in result.metrics.violations]
    offline = [v.to_dict() for v in check_events(result.events)]
    assert online == offline
    assert compute_metrics(result.events).to_json() == result.metrics.to_json()


def test_a_member_cut_off_becomes_a_reported_zombie() -> None:
    result = run("network-partition", "eager")
    assert "exclusive_ownership" in {v["invariant"] for v in result.metrics.violations}
    assert result.metrics.duplicates > 0


@pytest.mark.parametrize("name", sorted(set(BUILTINS) - {"network-partition"}))
@pytest.mark.parametrize("protocol", ["eager", "cooperative", "consumer"])
def test_every_builtin_runs_without_violations(name: str, protocol: str) -> None:
    scenario = builtin_scenario(name)
    if protocol not in scenario.protocols:
        pytest.skip("classic-only scenario")
    result = run(name, protocol)
    assert result.metrics.violations == []
    assert result.metrics.window_end_ms == scenario.total_duration_ms()


@settings(max_examples=15, deadline=None)
@given(
    name=st.sampled_from(["scale-out", "scale-in", "crash", "rolling-bounce", "add-partitions"]),
    protocol=st.sampled_from(["eager", "cooperative", "consumer"]),
    members=st.integers(1, 5),
    partitions=st.integers(1, 9),
    seed=st.integers(0, 1000),
    static=st.booleans(),
)
def test_property_no_violations_and_metrics_come_from_the_log_alone(
    name: str, protocol: str, members: int, partitions: int, seed: int, static: bool
) -> None:
    settings_ = Settings(
        builtin_scenario(name), protocol=protocol, members=members, partitions=partitions,
        seed=seed, static=static, configs={"session.timeout.ms": "10000"}
        if protocol != "consumer" else {},
    )  # fmt: skip
    result = run_simulation(settings_)
    assert result.metrics.violations == []
    assert compute_metrics(result.events).to_json() == result.metrics.to_json()


def test_the_timeline_draws_large_groups_as_counts(tmp_path: Path) -> None:
    from regroup.sim.timeline import MAX_LANES, build_timeline, write_timeline

    result = run("crash", "consumer", partitions=MAX_LANES + 4, members=4)
    timeline = build_timeline(result.events)
    assert len(timeline.partitions) == MAX_LANES + 4
    assert len(timeline.rows) == 4
    write_timeline(result.events, tmp_path / "t.html")
    assert "<polyline" in (tmp_path / "t.html").read_text()


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_a_classic_member_busy_with_a_batch_rejoins_after_it(protocol: str) -> None:
    """Kafka sends JoinGroup from the application's poll(): a member stalled in a batch
    holds the join phase until its batch ends (the barrier the classic protocol pays)."""
    scenario = Scenario(
        "slow-batch-scale-out",
        members=3,
        duration_ms=80000,
        actions=(
            Action("slow", at_ms=30000, members=(0,), duration_ms=8000),
            Action("start", at_ms=30500, count=1),
        ),
    )
    result = run_simulation(Settings(scenario, protocol=protocol, seed=1))
    events = result.events
    stall_start = next(
        e.ts_ms for e in events if isinstance(e, ScenarioStep) and e.action == "slow"
    )
    bumps = [e.ts_ms for e in events if isinstance(e, GenerationBumped) and e.ts_ms > 30500]
    assert bumps, "the new member's rebalance completed"
    # member 0's batch (started at its first poll after the stall began) ends >= 8 s later
    assert bumps[0] >= stall_start + 8000
    assert result.metrics.violations == []


def test_the_png_timeline_of_a_large_group_is_right_way_up() -> None:
    """Above MAX_LANES partitions the PNG draws counts; on its inverted y axis
    a count was drawn upside down (more partitions lower). At 400 partitions, a row's
    line must be higher on screen where the consumer serves more partitions."""
    import matplotlib.pyplot as plt

    from regroup.sim.timeline import MAX_LANES, _counts, build_timeline, png_figure

    result = run("crash", "consumer", partitions=400, members=4)
    timeline = build_timeline(result.events)
    assert len(timeline.partitions) == 400 > MAX_LANES
    figure = png_figure(timeline)
    try:
        axes = figure.axes[0]
        checked = 0
        for line in axes.get_lines():
            if line.get_label() not in timeline.rows and line.get_label() != "unowned":
                continue  # the step markers
            xs, ys = line.get_xdata(), line.get_ydata()
            shown = axes.transData.transform(list(zip(xs, ys, strict=True)))
            screen = [float(y) for _, y in shown]  # display y grows upward
            # the count at each point, from the timeline itself (not from the drawing)
            counts = [c for _, c in _counts(timeline)[str(line.get_label())]]
            pairs = sorted(zip(counts, screen, strict=True))
            low, high = pairs[0], pairs[-1]
            if high[0] > low[0]:
                assert high[1] > low[1], f"{line.get_label()}: more partitions drawn lower"
                checked += 1
        assert checked >= len(timeline.rows)  # every consumer's count changed at least once
    finally:
        plt.close(figure)


def test_the_html_timeline_has_a_time_axis() -> None:
    from regroup.sim.timeline import axis_ticks_ms, build_timeline, to_html

    assert axis_ticks_ms(142_000) == list(range(0, 142_001, 20_000))
    assert axis_ticks_ms(9) == list(range(10))
    assert axis_ticks_ms(50_000) == list(range(0, 50_001, 5_000))
    result = run("crash", "eager", partitions=4, members=2)
    page = to_html(build_timeline(result.events))
    end = build_timeline(result.events).end_ms
    assert page.count(" s</text>") == len(axis_ticks_ms(end)) >= 5
    assert ">0 s</text>" in page
