"""The analytics against hand-computed answers on tiny event logs (one analysis, many checks).

Logs (all in one DataFrame, one ``run_id`` each):

basic    topics t:3 at 0; m1 owns t-0, t-1 from 10; the window opens at 100
         (scenario_step); m1 revokes t-1 at 200, m2 gets it at 250 and serves
         it from 300; t-2 is never owned; the run ends at 1000.
crash    topic t:1; m1 serves t-0 from 0 and crashes at 50 (consumer_stopped,
         no revoke); m2 gets t-0 at 400, serves from 450; stable at 460.
shuffled events sharing a timestamp, given to Spark in reverse order: at 100
         m1's partitions_restored comes *before* its partitions_assigned in the
         log, so it is ignored (not owned yet); m1 serves only from 200.
static   a static member (instance i1) comes back with a new member id and
         gets its partition back: not a move.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType
from pyspark.testing import assertDataFrameEqual

from regroup.events import (
    ConsumerStopped,
    Event,
    GenerationBumped,
    GroupStabilized,
    GroupStateChanged,
    MemberJoined,
    PartitionsAssigned,
    PartitionsRestored,
    PartitionsRevoked,
    RecordsProcessed,
    RecordsProduced,
    ScenarioStep,
    SimulationEnded,
    SimulationStarted,
)
from regroup.model import TopicPartition
from regroup.pipeline.analytics import (
    METRIC_COLUMNS,
    TABLES,
    Analysis,
    analyze,
    unpersist,
    write_analysis,
)
from regroup.pipeline.schema import EVENT_SCHEMA, event_rows, events_frame
from regroup.sim.metrics import compute_metrics
from regroup.sim.scenario import builtin_scenario
from regroup.sim.simulation import RunResult, Settings, run_simulation

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# One worker runs the Spark tests and the real-client interop tests, one after another.
pytestmark = pytest.mark.xdist_group("heavy")

G = "g"


def tp(n: int) -> TopicPartition:
    return TopicPartition("t", n)


def started(topics: int) -> SimulationStarted:
    return SimulationStarted(
        ts_ms=0,
        group_id=G,
        scenario="hand",
        group_protocol="classic",
        rebalance_protocol="eager",
        assignor="range",
        seed=0,
        topics={"t": topics},
    )


def assigned(ts: int, member: str, *ns: int) -> PartitionsAssigned:
    return PartitionsAssigned(ts_ms=ts, group_id=G, member_id=member, partitions=tuple(map(tp, ns)))


def restored(ts: int, member: str, *ns: int) -> PartitionsRestored:
    return PartitionsRestored(ts_ms=ts, group_id=G, member_id=member, partitions=tuple(map(tp, ns)))


def revoked(ts: int, member: str, *ns: int) -> PartitionsRevoked:
    return PartitionsRevoked(ts_ms=ts, group_id=G, member_id=member, partitions=tuple(map(tp, ns)))


def state(ts: int, old: str, new: str) -> GroupStateChanged:
    return GroupStateChanged(
        ts_ms=ts, group_id=G, group_protocol="classic", old_state=old, new_state=new
    )


def produced(ts: int, n: int, end_offset: int) -> RecordsProduced:
    return RecordsProduced(ts_ms=ts, group_id=G, partition=tp(n), count=10, end_offset=end_offset)


def processed(ts: int, n: int, first: int, last: int) -> RecordsProcessed:
    return RecordsProcessed(
        ts_ms=ts, group_id=G, member_id="m1", partition=tp(n), first_offset=first, last_offset=last
    )


def step(ts: int, action: str = "stop") -> ScenarioStep:
    return ScenarioStep(ts_ms=ts, group_id=G, action=action)


def ended(ts: int) -> SimulationEnded:
    return SimulationEnded(ts_ms=ts, group_id=G)


LOGS: dict[str, list[Event]] = {
    "basic": [
        started(3),
        assigned(10, "m1", 0, 1),
        restored(10, "m1", 0, 1),
        RecordsProduced(ts_ms=20, group_id=G, partition=tp(0), count=10, end_offset=10),
        RecordsProcessed(
            ts_ms=30, group_id=G, member_id="m1", partition=tp(0), first_offset=0, last_offset=5
        ),
        step(100),
        GenerationBumped(
            ts_ms=150,
            group_id=G,
            generation=2,
            protocol_name="range",
            leader_id="m1",
            member_ids=(),
        ),
        RecordsProduced(ts_ms=160, group_id=G, partition=tp(0), count=5, end_offset=15),
        revoked(200, "m1", 1),
        assigned(250, "m2", 1),
        restored(300, "m2", 1),
        RecordsProcessed(
            ts_ms=400, group_id=G, member_id="m1", partition=tp(0), first_offset=3, last_offset=14
        ),
        ended(1000),
    ],
    "catch-up": [
        started(1),
        state(0, "Empty", "Stable"),
        assigned(0, "m1", 0),
        restored(0, "m1", 0),
        GroupStabilized(
            ts_ms=5, group_id=G, group_protocol="classic", generation_or_epoch=1, members=1
        ),
        produced(10, 0, 10),
        processed(12, 0, 0, 9),
        step(20, "slow"),
        produced(30, 0, 20),  # lag 10: the steady lag
        produced(40, 0, 40),  # lag 30: behind
        state(45, "Stable", "PreparingRebalance"),
        state(50, "PreparingRebalance", "Stable"),  # the catch-up starts here
        processed(70, 0, 10, 29),  # lag 10: back (20 ms after the start)
        produced(80, 0, 50),  # lag 20: behind again
        processed(90, 0, 30, 49),  # lag 0: back (40 ms after the start)
        GroupStabilized(
            ts_ms=95, group_id=G, group_protocol="classic", generation_or_epoch=2, members=1
        ),
        ended(100),
    ],
    "crash": [
        started(1),
        state(0, "Empty", "Stable"),
        assigned(0, "m1", 0),
        restored(0, "m1", 0),
        step(50, "crash"),
        ConsumerStopped(ts_ms=50, group_id=G, client_id="c1", member_id="m1", crashed=True),
        state(390, "Stable", "PreparingRebalance"),
        state(395, "PreparingRebalance", "CompletingRebalance"),
        assigned(400, "m2", 0),
        state(400, "CompletingRebalance", "Stable"),
        restored(450, "m2", 0),
        GroupStabilized(
            ts_ms=460, group_id=G, group_protocol="classic", generation_or_epoch=2, members=1
        ),
        ended(600),
    ],
    "shuffled": [
        started(1),
        step(0, "start"),
        restored(100, "m1", 0),
        assigned(100, "m1", 0),
        restored(200, "m1", 0),
        ended(300),
    ],
    "static": [
        started(1),
        MemberJoined(
            ts_ms=0, group_id=G, member_id="a", group_protocol="classic", instance_id="i1"
        ),
        assigned(0, "a", 0),
        restored(0, "a", 0),
        step(10, "restart"),
        revoked(10, "a", 0),
        MemberJoined(
            ts_ms=20, group_id=G, member_id="b", group_protocol="classic", instance_id="i1"
        ),
        assigned(30, "b", 0),
        restored(30, "b", 0),
        assigned(40, "c", 0),
        ended(50),
    ],
}


#: Simulator runs analyzed together with the hand logs (one Spark analysis for the module).
SIM_RUNS = (
    ("crash", "eager"),
    ("rolling-bounce", "cooperative"),
    ("scale-out", "consumer"),
    ("add-partitions", "cooperative"),
    ("network-partition", "consumer"),
)


@pytest.fixture(scope="module")
def sim_runs() -> dict[str, RunResult]:
    results = {}
    for scenario, protocol in SIM_RUNS:
        settings = Settings(
            scenario=builtin_scenario(scenario), protocol=protocol, members=3, partitions=4, seed=7
        )
        results[f"{scenario}.{protocol}"] = run_simulation(settings)
    return results


def frame(spark: SparkSession, sim_runs: dict[str, RunResult] | None = None) -> Any:
    rows: list[dict[str, Any]] = []
    for run_id, events in LOGS.items():
        log = list(event_rows(events, scenario="hand", run_id=run_id))
        rows.extend(reversed(log) if run_id == "shuffled" else log)
    for run_id, result in (sim_runs or {}).items():
        rows.extend(event_rows(result.events, scenario=run_id.split(".")[0], run_id=run_id))
    return events_frame(spark, rows)


@pytest.fixture(scope="module")
def analysis(spark: SparkSession, sim_runs: dict[str, RunResult]) -> Analysis:
    return analyze(frame(spark, sim_runs))


@pytest.fixture(scope="module")
def metrics(analysis: Analysis) -> dict[str, dict[str, Any]]:
    return {row["run_id"]: row.asDict() for row in analysis.metrics.collect()}


OWNERSHIP = StructType(
    [
        StructField("run_id", StringType()),
        StructField("partition", StringType()),
        StructField("member_id", StringType()),
        StructField("assigned_ms", LongType()),
        StructField("serving_ms", LongType()),
        StructField("released_ms", LongType()),
        StructField("released_by", StringType()),
    ]
)


def test_pipeline_schema_is_explicit(spark: SparkSession) -> None:
    assert frame(spark).schema == EVENT_SCHEMA


def test_pipeline_ownership_intervals(spark: SparkSession, analysis: Analysis) -> None:
    expected = spark.createDataFrame(
        [
            ("basic", "t-0", "m1", 10, 10, None, None),
            ("basic", "t-1", "m1", 10, 10, 200, "revoked"),
            ("basic", "t-1", "m2", 250, 300, None, None),
            ("catch-up", "t-0", "m1", 0, 0, None, None),
            ("crash", "t-0", "m1", 0, 0, 50, "stopped"),
            ("crash", "t-0", "m2", 400, 450, None, None),
            ("shuffled", "t-0", "m1", 100, 200, None, None),
            ("static", "t-0", "a", 0, 0, 10, "revoked"),
            ("static", "t-0", "b", 30, 30, None, None),
            ("static", "t-0", "c", 40, None, None, None),
        ],
        OWNERSHIP,
    )
    hand = analysis.ownership.where(analysis.ownership.run_id.isin(list(LOGS)))
    assertDataFrameEqual(hand, expected, checkRowOrder=False)


def test_pipeline_idle_by_partition(spark: SparkSession, analysis: Analysis) -> None:
    schema = "run_id string, partition string, idle_ms long, longest_pause_ms long"
    expected = spark.createDataFrame(
        [
            # Before the window (100) t-0 and t-1 were idle 0..10: clipped away.
            ("basic", "t-0", 0, 0),
            ("basic", "t-1", 100, 100),
            ("basic", "t-2", 900, 900),  # never owned: idle the whole window
            ("catch-up", "t-0", 0, 0),
            ("crash", "t-0", 400, 400),
            ("shuffled", "t-0", 200, 200),
            ("static", "t-0", 20, 20),
        ],
        schema,
    )
    hand = analysis.idle.where(analysis.idle.run_id.isin(list(LOGS)))
    assertDataFrameEqual(hand, expected, checkRowOrder=False)


def test_pipeline_window_and_counts(metrics: dict[str, dict[str, Any]]) -> None:
    basic = metrics["basic"]
    assert (basic["window_start_ms"], basic["window_end_ms"]) == (100, 1000)
    assert basic["idle_partition_seconds"] == 1.0
    assert basic["max_partition_pause_ms"] == 900
    assert basic["paused_partitions"] == 2
    assert basic["rebalances"] == basic["generations"] == 1
    assert (basic["partitions_assigned"], basic["partitions_revoked"]) == (1, 1)
    assert basic["partitions_moved"] == 1
    assert basic["records_produced"] == 15
    assert basic["records_processed"] == 6 + 12
    assert basic["duplicates"] == 3  # offsets 3, 4, 5 processed twice
    # Lag at the opening is 10 - 6 = 4; after the second produce 15 - 6 = 9.
    assert basic["peak_lag"] == 9
    assert basic["time_to_stable_ms"] is None  # never stabilized after the step


def test_pipeline_crash_and_stable(metrics: dict[str, dict[str, Any]]) -> None:
    crash = metrics["crash"]
    # Unstable from 390 to 400; the first group_stabilized after that is at 460.
    assert crash["time_to_stable_ms"] == 410 and crash["unstable_ms"] == 10
    # One partition, one pause (50 to 450): every percentile is that pause.
    assert (crash["pause_p50_ms"], crash["pause_p99_ms"], crash["pause_max_ms"]) == (400, 400, 400)
    assert crash["partitions_moved"] == 1
    assert crash["partitions_lost"] == 0
    assert crash["max_partition_pause_ms"] == 400


def test_pipeline_decision_metrics_of_a_backlog_worked_off(
    metrics: dict[str, dict[str, Any]],
) -> None:
    run = metrics["catch-up"]
    assert run["unstable_ms"] == 5 and run["time_to_stable_ms"] == 95 - 20
    assert run["catch_up_s"] == 0.04  # the last crossing back to the steady lag of 10
    assert run["peak_lag"] == 30


def test_pipeline_static_member_is_not_a_move(metrics: dict[str, dict[str, Any]]) -> None:
    # b is i1 again (not a move); c takes it from i1 (a move).
    assert metrics["static"]["partitions_moved"] == 1


def test_pipeline_violations_table_matches_the_counts(
    analysis: Analysis, metrics: dict[str, dict[str, Any]]
) -> None:
    counts: dict[str, int] = {}
    for row in analysis.violations.collect():
        counts[row["run_id"]] = counts.get(row["run_id"], 0) + 1
    assert counts == {
        r: m["invariant_violations"] for r, m in metrics.items() if m["invariant_violations"]
    }


def test_pipeline_hand_logs_agree_with_the_simulator_metrics(
    analysis: Analysis, metrics: dict[str, dict[str, Any]]
) -> None:
    """The same logs through ``regroup.sim.metrics`` (in log order) give the same numbers."""
    idle = _idle(analysis)
    for run_id, events in LOGS.items():
        _assert_same(run_id, compute_metrics(events).to_json(), metrics[run_id], idle[run_id])


def test_pipeline_metrics_equal_the_simulators_on_its_runs(
    analysis: Analysis, metrics: dict[str, dict[str, Any]], sim_runs: dict[str, RunResult]
) -> None:
    """Spark's metrics equal the simulator's own on real runs: every field, every partition."""
    idle = _idle(analysis)
    for run_id, result in sim_runs.items():
        _assert_same(run_id, result.metrics.to_json(), metrics[run_id], idle[run_id])


def _idle(analysis: Analysis) -> dict[str, dict[str, int]]:
    idle: dict[str, dict[str, int]] = {}
    for row in analysis.idle.collect():
        idle.setdefault(row["run_id"], {})[row["partition"]] = row["idle_ms"]
    return idle


def _assert_same(
    run_id: str, want: dict[str, Any], got: dict[str, Any], idle: dict[str, int]
) -> None:
    want["invariant_violations"] = len(want["violations"])
    assert {c: got[c] for c in METRIC_COLUMNS} == {c: want[c] for c in METRIC_COLUMNS}, run_id
    assert idle == want["idle_ms_by_partition"], run_id


def test_pipeline_analysis_is_one_spark_job_per_table(
    spark: SparkSession, sim_runs: dict[str, RunResult], tmp_path: Path
) -> None:
    """The events are shuffled once and cached: writing the five tables runs five jobs.

    (Before the plan was tuned, each use of a cached frame shuffled again and
    every shuffle and broadcast was a job of its own: ~44 jobs for these tables.)
    """
    context = spark.sparkContext
    fresh = analyze(frame(spark, sim_runs))
    context.setJobGroup("test-job-count", "analysis job count")
    try:
        write_analysis(fresh, tmp_path)
        jobs = context.statusTracker().getJobIdsForGroup("test-job-count")
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]  # None clears it
        unpersist(fresh)
    assert len(jobs) == len(TABLES)
    written = {name: spark.read.parquet(str(tmp_path / name)) for name in TABLES}
    assert written["metrics"].count() == len(LOGS) + len(SIM_RUNS)
