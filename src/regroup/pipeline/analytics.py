"""Event-log analytics in Spark: the simulator's metrics as DataFrame transforms.

The definitions are ``regroup.sim.metrics``'s, exactly (its docstring states
them); ``tests/pipeline`` checks that both give the same numbers on the same
runs. Every transform is ``DataFrame -> DataFrame`` over ``EVENT_SCHEMA`` rows
of any number of runs (``run_id``), so it runs unchanged on one tiny log in a
test and on a directory of sweeps on a cluster.

Theory of operation
-------------------

Log order. Every event gets ``ord``, its rank in log order ``(ts_ms, seq)``
within its run (``with_log_order``); "before" and "after" below compare
``ord``, so events sharing a timestamp keep the order the log gave them.

Window (``run_bounds``). It opens at the first ``scenario_step`` (else the
first ``group_stabilized``): ``open_ord`` / ``window_start_ms``; it closes at
the last ``simulation_ended`` (else the last event): ``window_end_ms``. A
(window) count takes the events with ``ord >= open_ord``, as the simulator's
accumulator opens its counters *at* that event.

Ownership (``ownership_intervals``). The member events are exploded to one row
per (member, partition): ``assign``, ``restore`` or ``release`` (revoked, lost,
or ``consumer_stopped`` of that member, which releases every partition the
member had; releasing a partition not owned changes nothing, as in the
accumulator). Per (run, member, partition) a window counts the releases before
each row: the rows between two releases form one *segment*, owned from its
first ``assign`` to its closing release (or the end), served from the first
``restore`` after that ``assign``.

Idle (``idle_by_partition``). Per partition, the serving intervals of all
members are merged into islands (gaps-and-islands: a new island starts where
an interval starts after the running maximum of the previous ends); the idle
intervals are the gaps: from the partition's creation (``simulation_started``
or ``scenario_step`` topics) to the first island, between islands, and from
the last island to the end; a partition never served is idle from creation to
the end. Each gap is clipped to the window; only positive lengths count.

Counters (``run_metrics``). Lag is a running sum over the run of per-event
deltas (``records_produced``: the partition's new end offset minus its
previous one; ``records_processed``: how far it raised the partition's
highest processed offset); ``peak_lag`` is its maximum from the opening on.

Decision metrics (``decision_metrics``). Pauses are the idle gaps of positive
length (``idle_gaps``), their nearest-rank percentiles taken by row number
over each run's lengths. The coordinator's states (``group_state_changed``)
become, per run, a running count of groups not ``Stable``; its rising and
falling edges bound the unstable intervals, clipped to the window for
``unstable_ms`` and followed to the next ``group_stabilized`` for
``time_to_stable_ms``. ``catch_up_s`` runs over the same lag series as
``peak_lag``: the steady lag before the first step, the lag at the start of the
catch-up (the last step or return to ``Stable``), and the last crossing back
to the steady lag after it.
Duplicates per partition are the processed lengths minus the size of their
union (each offset counted once when first processed, every later cover is a
duplicate: the sum of ``IntervalSet.add``'s overlaps). ``partitions_moved``
compares each assignment's identity (``member_joined.instance_id`` if the
member joined with one before, else the member id) with the previous
assignment of that partition, by window ``lag``.

Plan (``analyze``)
------------------

Every table is per run, so the events are shuffled once, by ``run_id``
(``with_log_order``'s window), and that ordered table is cached without the
bulky ``json`` column (kept only on ``simulation_started``, for the labels).
Everything downstream groups, windows or joins by keys that start with
``run_id``: with broadcast joins off and
``spark.sql.requireAllClusterKeysForCoPartition=false``
(``regroup.pipeline.spark``), Spark reuses that partitioning instead of
shuffling again or collecting a broadcast per join. The shared intermediates
(bounds, intervals, idle, metrics, labels) are cached too, so writing the five
tables and collecting the report's rows computes each of them once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import Column, Window
from pyspark.sql import functions as F

from regroup.sim.metrics import STEADY_LAG_MS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "METRIC_COLUMNS",
    "Analysis",
    "analyze",
    "decision_metrics",
    "idle_by_partition",
    "idle_gaps",
    "ownership_intervals",
    "run_bounds",
    "run_labels",
    "run_metrics",
    "summary",
    "violations",
    "with_log_order",
    "write_analysis",
    "write_table",
]

#: The per-run metrics table's columns after ``run_id`` (``RunMetrics``'s scalar fields,
#: and ``invariant_violations``: how many ``invariant_violated`` events).
METRIC_COLUMNS = (
    "idle_partition_seconds",
    "max_partition_pause_ms",
    "paused_partitions",
    "duplicates",
    "peak_lag",
    "rebalances",
    "generations",
    "group_epochs",
    "partitions_assigned",
    "partitions_revoked",
    "partitions_lost",
    "partitions_moved",
    "time_to_stable_ms",
    "pause_p50_ms",
    "pause_p99_ms",
    "pause_max_ms",
    "unstable_ms",
    "catch_up_s",
    "records_produced",
    "records_processed",
    "window_start_ms",
    "window_end_ms",
    "invariant_violations",
)

_RUN = "run_id"


def _first(condition: Column, *fields: str) -> Column:
    """The fields of the first row in log order where ``condition`` holds (a struct)."""
    return F.min(F.when(condition, F.struct(F.col("ord"), *[F.col(f) for f in fields])))


def _last(condition: Column, *fields: str) -> Column:
    return F.max(F.when(condition, F.struct(F.col("ord"), *[F.col(f) for f in fields])))


def with_log_order(events: DataFrame) -> DataFrame:
    """``events`` plus ``ord``: 1, 2, ... in log order ``(ts_ms, seq)`` within each run."""
    order = Window.partitionBy(_RUN).orderBy("ts_ms", "seq")
    return events.withColumn("ord", F.row_number().over(order))


def run_bounds(ordered: DataFrame) -> DataFrame:
    """Per run: ``open_ord``, ``window_start_ms``, ``window_end_ms``, steps and stabilization."""
    kind = F.col("kind")
    agg = ordered.groupBy(_RUN).agg(
        _first(kind == "scenario_step", "ts_ms").alias("first_step"),
        _last(kind == "scenario_step", "ts_ms").alias("last_step"),
        _first(kind == "group_stabilized", "ts_ms").alias("first_stable"),
        _last(kind == "simulation_ended", "ts_ms").alias("ended"),
        F.max("ts_ms").alias("last_ts"),
    )
    bounds = agg.select(
        _RUN,
        F.coalesce(F.col("ended.ts_ms"), F.col("last_ts")).alias("window_end_ms"),
        F.coalesce(F.col("first_step.ord"), F.col("first_stable.ord")).alias("open_ord"),
        F.coalesce(F.col("first_step.ts_ms"), F.col("first_stable.ts_ms")).alias("open_ts"),
        F.col("first_step.ts_ms").alias("first_step_ms"),
        F.col("first_step.ord").alias("first_step_ord"),
        F.col("first_stable.ord").alias("first_stable_ord"),
        F.col("last_step.ord").alias("last_step_ord"),
    ).withColumn("window_start_ms", F.coalesce(F.col("open_ts"), F.col("window_end_ms")))
    return bounds.select(
        _RUN,
        "open_ord",
        "window_start_ms",
        "window_end_ms",
        "last_step_ord",
        "first_step_ord",
        "first_step_ms",
        "first_stable_ord",
    )


def _member_ops(ordered: DataFrame) -> DataFrame:
    """One row per (member event, partition): ``op`` assign / restore / release, ``how``."""
    kind = F.col("kind")
    exploded = ordered.where(
        kind.isin(
            "partitions_assigned", "partitions_restored", "partitions_revoked", "partitions_lost"
        )
    ).select(
        _RUN,
        "ord",
        "ts_ms",
        "member_id",
        F.explode("partitions").alias("partition"),
        F.when(kind == "partitions_assigned", "assign")
        .when(kind == "partitions_restored", "restore")
        .otherwise("release")
        .alias("op"),
        F.when(kind == "partitions_revoked", "revoked")
        .when(kind == "partitions_lost", "lost")
        .alias("how"),
    )
    seen = exploded.select(_RUN, "member_id", "partition").distinct()
    stopped = (
        ordered.where((kind == "consumer_stopped") & (F.length("member_id") > 0))
        .select(_RUN, "ord", "ts_ms", "member_id")
        .join(seen, [_RUN, "member_id"])
        .select(
            _RUN,
            "ord",
            "ts_ms",
            "member_id",
            "partition",
            F.lit("release").alias("op"),
            F.lit("stopped").alias("how"),
        )
    )
    return exploded.unionByName(stopped)


def _segments(ops: DataFrame) -> DataFrame:
    """Per (run, member, partition, segment): the ownership and serving of one segment."""
    key = [_RUN, "member_id", "partition"]
    by_ord = Window.partitionBy(*key).orderBy("ord")
    release = (F.col("op") == "release").cast("long")
    segmented = ops.withColumn(
        "segment",
        F.coalesce(
            F.sum(release).over(by_ord.rowsBetween(Window.unboundedPreceding, -1)), F.lit(0)
        ),
    )
    in_segment = Window.partitionBy(*key, "segment")
    segmented = segmented.withColumn(
        "assign_ord", F.min(F.when(F.col("op") == "assign", F.col("ord"))).over(in_segment)
    )
    op = F.col("op")
    return (
        segmented.groupBy(*key, "segment")
        .agg(
            _first(op == "assign", "ts_ms").alias("assigned"),
            _first((op == "restore") & (F.col("ord") > F.col("assign_ord")), "ts_ms").alias(
                "restored"
            ),
            _first(op == "release", "ts_ms", "how").alias("released"),
        )
        .where(F.col("assigned").isNotNull())
    )


def ownership_intervals(ordered: DataFrame) -> DataFrame:
    """Per-partition ownership: who owned it when, and from when it served it.

    Columns: ``run_id, partition, member_id, assigned_ms, serving_ms`` (null:
    never restored while owned), ``released_ms`` (null: still owned at the end)
    and ``released_by`` (``revoked``, ``lost``, ``stopped`` or null).
    """
    return _segments(_member_ops(ordered)).select(
        _RUN,
        "partition",
        "member_id",
        F.col("assigned.ts_ms").alias("assigned_ms"),
        F.col("restored.ts_ms").alias("serving_ms"),
        F.col("released.ts_ms").alias("released_ms"),
        F.col("released.how").alias("released_by"),
    )


def _created(ordered: DataFrame) -> DataFrame:
    """Per (run, partition): when the partition first existed (topics of start and steps)."""
    topics = ordered.where(
        F.col("kind").isin("simulation_started", "scenario_step") & F.col("topics").isNotNull()
    ).select(_RUN, "ts_ms", F.explode("topics").alias("topic", "partition_count"))
    numbered = topics.where(F.col("partition_count") > 0).select(
        _RUN,
        "ts_ms",
        "topic",
        F.explode(F.sequence(F.lit(0).cast("long"), F.col("partition_count") - 1)).alias("n"),
    )
    return (
        numbered.select(
            _RUN,
            "ts_ms",
            F.concat_ws("-", F.col("topic"), F.col("n").cast("string")).alias("partition"),
        )
        .groupBy(_RUN, "partition")
        .agg(F.min("ts_ms").alias("created_ms"))
    )


def idle_gaps(ordered: DataFrame, bounds: DataFrame, intervals: DataFrame) -> DataFrame:
    """Every pause: ``run_id, partition, length`` of each idle gap clipped to the window,
    positive lengths only."""
    ends = bounds.select(_RUN, "window_start_ms", "window_end_ms")
    serving = (
        intervals.where(F.col("serving_ms").isNotNull())
        .join(ends, _RUN)
        .select(
            _RUN,
            "partition",
            F.col("serving_ms").alias("start"),
            F.coalesce(F.col("released_ms"), F.col("window_end_ms")).alias("end"),
        )
    )
    by_start = Window.partitionBy(_RUN, "partition").orderBy("start", "end")
    previous_end = F.max("end").over(by_start.rowsBetween(Window.unboundedPreceding, -1))
    islands = (
        serving.withColumn(
            "new", (previous_end.isNull() | (F.col("start") > previous_end)).cast("long")
        )
        .withColumn("island", F.sum("new").over(by_start))
        .groupBy(_RUN, "partition", "island")
        .agg(F.min("start").alias("i_start"), F.max("end").alias("i_end"))
    )
    created = _created(ordered)
    by_island = Window.partitionBy(_RUN, "partition").orderBy("i_start")
    leading = (
        islands.join(created, [_RUN, "partition"], "left")
        .select(
            _RUN,
            "partition",
            F.coalesce(F.lag("i_end").over(by_island), F.col("created_ms")).alias("g_start"),
            F.col("i_start").alias("g_end"),
        )
        .where(F.col("g_start").isNotNull())
    )
    trailing = (
        islands.groupBy(_RUN, "partition")
        .agg(F.max("i_end").alias("g_start"))
        .join(ends, _RUN)
        .select(_RUN, "partition", "g_start", F.col("window_end_ms").alias("g_end"))
    )
    never = (
        created.join(islands.select(_RUN, "partition").distinct(), [_RUN, "partition"], "left_anti")
        .join(ends, _RUN)
        .select(
            _RUN,
            "partition",
            F.col("created_ms").alias("g_start"),
            F.col("window_end_ms").alias("g_end"),
        )
    )
    return (
        leading.unionByName(trailing)
        .unionByName(never)
        .join(ends, _RUN)
        .select(
            _RUN,
            "partition",
            (
                F.least(F.col("g_end"), F.col("window_end_ms"))
                - F.greatest(F.col("g_start"), F.col("window_start_ms"))
            ).alias("length"),
        )
        .where(F.col("length") > 0)
    )


def _partitions(ordered: DataFrame, intervals: DataFrame) -> DataFrame:
    """Per run, every partition accounted: created by the topics, or served once."""
    served = intervals.where(F.col("serving_ms").isNotNull()).select(_RUN, "partition")
    return _created(ordered).select(_RUN, "partition").unionByName(served).distinct()


def idle_by_partition(ordered: DataFrame, intervals: DataFrame, gaps: DataFrame) -> DataFrame:
    """Per (run, partition): ``idle_ms`` and ``longest_pause_ms`` in the window (0 if none)."""
    totals = gaps.groupBy(_RUN, "partition").agg(
        F.sum("length").alias("idle_ms"), F.max("length").alias("longest_pause_ms")
    )
    return (
        _partitions(ordered, intervals)
        .join(totals, [_RUN, "partition"], "left")
        .select(
            _RUN,
            "partition",
            F.coalesce(F.col("idle_ms"), F.lit(0)).cast("long").alias("idle_ms"),
            F.coalesce(F.col("longest_pause_ms"), F.lit(0)).cast("long").alias("longest_pause_ms"),
        )
    )


def _lag_series(ordered: DataFrame) -> DataFrame:
    """Per lag-changing event (``records_produced`` / ``records_processed``): ``run_id, ord,
    ts_ms, delta, lag``, the total lag after it (a running sum of the deltas)."""
    by_partition = Window.partitionBy(_RUN, "partition").orderBy("ord")
    produced = ordered.where(F.col("kind") == "records_produced").select(
        _RUN,
        "ord",
        "ts_ms",
        (F.col("end_offset") - F.coalesce(F.lag("end_offset").over(by_partition), F.lit(0))).alias(
            "delta"
        ),
    )
    high = F.col("last_offset") + 1
    high_before = F.coalesce(
        F.max(high).over(by_partition.rowsBetween(Window.unboundedPreceding, -1)), F.lit(0)
    )
    processed = ordered.where(F.col("kind") == "records_processed").select(
        _RUN, "ord", "ts_ms", (high_before - F.greatest(high, high_before)).alias("delta")
    )
    running = Window.partitionBy(_RUN).orderBy("ord")
    return produced.unionByName(processed).withColumn("lag", F.sum("delta").over(running))


def _lag_peak(lags: DataFrame, bounds: DataFrame) -> DataFrame:
    """Per run: ``peak_lag`` (window)."""
    lag = lags.join(bounds.select(_RUN, "open_ord"), _RUN)
    inside = F.col("ord") >= F.col("open_ord")
    peaks = lag.groupBy(_RUN).agg(
        F.max(F.when(inside, F.col("lag"))).alias("inside"),
        F.sum(F.when(~inside, F.col("delta"))).alias("before"),
        F.first("open_ord").alias("open_ord"),
    )
    return peaks.select(
        _RUN,
        F.when(F.col("open_ord").isNull(), F.lit(0))
        .otherwise(
            F.greatest(F.coalesce(F.col("inside"), F.lit(0)), F.coalesce(F.col("before"), F.lit(0)))
        )
        .cast("long")
        .alias("peak_lag"),
    )


def _duplicates(ordered: DataFrame) -> DataFrame:
    """Per run: ``duplicates`` (whole run), the processed lengths minus their union's size."""
    spans = (
        ordered.where(F.col("kind") == "records_processed")
        .select(
            _RUN,
            "partition",
            F.col("first_offset").alias("start"),
            (F.col("last_offset") + 1).alias("end"),
        )
        .where(F.col("end") > F.col("start"))
    )
    by_start = Window.partitionBy(_RUN, "partition").orderBy("start", "end")
    previous_end = F.max("end").over(by_start.rowsBetween(Window.unboundedPreceding, -1))
    islands = (
        spans.withColumn(
            "new", (previous_end.isNull() | (F.col("start") > previous_end)).cast("long")
        )
        .withColumn("island", F.sum("new").over(by_start))
        .groupBy(_RUN, "partition", "island")
        .agg(
            F.sum(F.col("end") - F.col("start")).alias("total"),
            (F.max("end") - F.min("start")).alias("union"),
        )
    )
    return islands.groupBy(_RUN).agg(
        (F.sum("total") - F.sum("union")).cast("long").alias("duplicates")
    )


def _moves(ordered: DataFrame, bounds: DataFrame) -> DataFrame:
    """Per run: ``partitions_moved`` (window)."""
    joined = (
        ordered.where(
            (F.col("kind") == "member_joined")
            & (F.length(F.coalesce("instance_id", F.lit(""))) > 0)
        )
        .groupBy(_RUN, "member_id")
        .agg(F.min(F.struct("ord", "instance_id")).alias("joined"))
    )
    assigns = ordered.where(F.col("kind") == "partitions_assigned").select(
        _RUN, "ord", "member_id", F.explode("partitions").alias("partition")
    )
    identity = F.when(F.col("ord") > F.col("joined.ord"), F.col("joined.instance_id")).otherwise(
        F.col("member_id")
    )
    by_partition = Window.partitionBy(_RUN, "partition").orderBy("ord")
    with_identity = assigns.join(joined, [_RUN, "member_id"], "left").withColumn(
        "identity", identity
    )
    previous = F.lag("identity").over(by_partition)
    moved = (
        with_identity.withColumn(
            "moved", (previous.isNotNull() & (previous != F.col("identity"))).cast("long")
        )
        .join(bounds.select(_RUN, "open_ord"), _RUN)
        .where(F.col("ord") >= F.col("open_ord"))
    )
    return moved.groupBy(_RUN).agg(F.sum("moved").cast("long").alias("partitions_moved"))


def _pauses(gaps: DataFrame) -> DataFrame:
    """Per run: the nearest-rank ``pause_p50_ms`` and ``pause_p99_ms`` and ``pause_max_ms``."""
    by_length = Window.partitionBy(_RUN).orderBy("length")
    ranked = gaps.withColumn("rank", F.row_number().over(by_length)).withColumn(
        "n", F.count(F.lit(1)).over(Window.partitionBy(_RUN))
    )

    def percentile(share: float) -> Column:
        reached = F.col("rank") >= F.ceil(F.lit(share) * F.col("n"))
        return F.min(F.when(reached, F.col("length")))

    return ranked.groupBy(_RUN).agg(
        percentile(0.50).cast("long").alias("pause_p50_ms"),
        percentile(0.99).cast("long").alias("pause_p99_ms"),
        F.max("length").cast("long").alias("pause_max_ms"),
    )


def _unstable_edges(ordered: DataFrame) -> DataFrame:
    """Per run, the moments the run's groups stop or start being all ``Stable``:
    ``run_id, ord, ts_ms, rising`` (true: some group just left ``Stable``)."""
    states = ordered.where(F.col("kind") == "group_state_changed").select(
        _RUN, "ord", "ts_ms", "group_id", (F.col("new_state") != "Stable").cast("long").alias("u")
    )
    by_group = Window.partitionBy(_RUN, "group_id").orderBy("ord")
    running = Window.partitionBy(_RUN).orderBy("ord")
    counted = states.withColumn(
        "count", F.sum(F.col("u") - F.coalesce(F.lag("u").over(by_group), F.lit(0))).over(running)
    )
    flagged = counted.withColumn("now", F.col("count") > 0).withColumn(
        "before", F.coalesce(F.lag("now").over(running), F.lit(False))
    )
    return flagged.where(F.col("now") != F.col("before")).select(
        _RUN, "ord", "ts_ms", F.col("now").alias("rising")
    )


def _unstable_intervals(edges: DataFrame) -> DataFrame:
    """Per run, each unstable interval: ``start, end`` (``end`` null: open at the end)."""
    by_ord = Window.partitionBy(_RUN).orderBy("ord")
    return (
        edges.withColumn("next_ts", F.lead("ts_ms").over(by_ord))
        .where(F.col("rising"))
        .select(_RUN, F.col("ts_ms").alias("start"), F.col("next_ts").alias("end"))
    )


def decision_metrics(
    ordered: DataFrame, bounds: DataFrame, gaps: DataFrame, lags: DataFrame
) -> DataFrame:
    """Per run: ``pause_*``, ``unstable_ms``, ``time_to_stable_ms``, ``catch_up_s``."""
    b = bounds.select(
        _RUN,
        "window_start_ms",
        "window_end_ms",
        "first_step_ord",
        "first_step_ms",
        "first_stable_ord",
    )
    edges = _unstable_edges(ordered)
    spans = _unstable_intervals(edges).join(b, _RUN)
    end = F.coalesce(F.col("end"), F.col("window_end_ms"))
    clipped = F.greatest(
        F.lit(0),
        F.least(end, F.col("window_end_ms")) - F.greatest(F.col("start"), F.col("window_start_ms")),
    )
    reaching = F.col("first_step_ms").isNotNull() & (
        (end > F.col("first_step_ms")) | (F.col("start") >= F.col("first_step_ms"))
    )
    seen_states = (
        ordered.where(F.col("kind") == "group_state_changed")
        .select(_RUN)
        .distinct()
        .withColumn("has_states", F.lit(1))
    )
    unstable = spans.groupBy(_RUN).agg(
        F.sum(clipped).cast("long").alias("unstable_ms"),
        F.max(F.when(reaching, 1).otherwise(0)).alias("reaching"),
        F.max(F.when(reaching & F.col("end").isNull(), 1).otherwise(0)).alias("open_at_end"),
        F.max(F.when(reaching, F.col("end"))).alias("healed_ms"),
    )
    stabilized = ordered.where(F.col("kind") == "group_stabilized").select(
        _RUN, F.col("ts_ms").alias("stable_ms")
    )
    healed = (
        unstable.where((F.col("reaching") == 1) & (F.col("open_at_end") == 0))
        .join(stabilized, _RUN)
        .where(F.col("stable_ms") >= F.col("healed_ms"))
        .groupBy(_RUN)
        .agg(F.min("stable_ms").alias("stable_after_ms"))
    )
    # catch-up: the steady lag before the first step, the start, the last crossing back.
    with_bounds = lags.join(b, _RUN)
    steady = with_bounds.groupBy(_RUN).agg(
        F.max(
            F.when(
                F.col("first_stable_ord").isNotNull()
                & (F.col("ord") > F.col("first_stable_ord"))
                & (F.col("ord") < F.col("first_step_ord"))
                & (F.col("ts_ms") >= F.col("first_step_ms") - F.lit(STEADY_LAG_MS)),
                F.col("lag"),
            )
        ).alias("steady"),
        F.max(F.struct("ord", "lag")).alias("last_lag"),
    )
    falling = edges.where(~F.col("rising")).join(b.select(_RUN, "first_step_ord"), _RUN)
    starts = (
        ordered.where(F.col("kind") == "scenario_step")
        .select(_RUN, "ord", "ts_ms")
        .unionByName(
            falling.where(F.col("ord") > F.col("first_step_ord")).select(_RUN, "ord", "ts_ms")
        )
        .groupBy(_RUN)
        .agg(F.max(F.struct("ord", "ts_ms")).alias("from"))
    )
    by_ord = Window.partitionBy(_RUN).orderBy("ord")
    crossings = (
        lags.withColumn("prev_lag", F.coalesce(F.lag("lag").over(by_ord), F.lit(0)))
        .join(starts, _RUN)
        .join(steady.select(_RUN, "steady"), _RUN)
        .where(
            (F.col("ord") > F.col("from.ord"))
            & (F.col("lag") <= F.coalesce("steady", F.lit(0)))
            & (F.col("prev_lag") > F.coalesce("steady", F.lit(0)))
        )
        .groupBy(_RUN)
        .agg(F.max("ts_ms").alias("caught_ms"))
    )
    catch_up = (
        starts.join(steady, _RUN, "left")
        .join(crossings, _RUN, "left")
        .select(
            _RUN,
            F.when(
                F.coalesce(F.col("last_lag.lag"), F.lit(0)) > F.coalesce("steady", F.lit(0)),
                F.lit(None),
            )
            .when(F.col("caught_ms").isNull(), F.lit(0.0))
            .otherwise(F.round((F.col("caught_ms") - F.col("from.ts_ms")) / F.lit(1000.0), 3))
            .cast("double")
            .alias("catch_up_s"),
        )
    )
    runs = b.select(_RUN, "first_step_ms")
    return (
        runs.join(_pauses(gaps), _RUN, "left")
        .join(unstable, _RUN, "left")
        .join(healed, _RUN, "left")
        .join(catch_up, _RUN, "left")
        .join(seen_states, _RUN, "left")
        .select(
            _RUN,
            F.coalesce("pause_p50_ms", F.lit(0)).cast("long").alias("pause_p50_ms"),
            F.coalesce("pause_p99_ms", F.lit(0)).cast("long").alias("pause_p99_ms"),
            F.coalesce("pause_max_ms", F.lit(0)).cast("long").alias("pause_max_ms"),
            F.coalesce("unstable_ms", F.lit(0)).cast("long").alias("unstable_ms"),
            F.when(F.col("first_step_ms").isNull() | F.col("has_states").isNull(), F.lit(None))
            .when(F.coalesce("reaching", F.lit(0)) == 0, F.lit(0))
            .when(F.col("stable_after_ms").isNull(), F.lit(None))
            .otherwise(F.col("stable_after_ms") - F.col("first_step_ms"))
            .cast("long")
            .alias("time_to_stable_ms"),
            "catch_up_s",
        )
    )


def run_metrics(
    ordered: DataFrame, bounds: DataFrame, idle: DataFrame, decision: DataFrame, lags: DataFrame
) -> DataFrame:
    """Per run: ``run_id`` and ``METRIC_COLUMNS`` (the ``RunMetrics`` definitions)."""
    kind = F.col("kind")
    inside = F.col("open_ord").isNotNull() & (F.col("ord") >= F.col("open_ord"))

    def count(condition: Column) -> Column:
        return F.sum(F.when(condition & inside, 1).otherwise(0)).cast("long")

    def listed(name: str) -> Column:
        return F.sum(F.when((kind == name) & inside, F.size("partitions")).otherwise(0)).cast(
            "long"
        )

    counters = (
        ordered.join(bounds.select(_RUN, "open_ord"), _RUN)
        .groupBy(_RUN)
        .agg(
            count(kind.isin("generation_bumped", "target_assignment_computed")).alias("rebalances"),
            count(kind == "generation_bumped").alias("generations"),
            count(kind == "group_epoch_bumped").alias("group_epochs"),
            listed("partitions_assigned").alias("partitions_assigned"),
            listed("partitions_revoked").alias("partitions_revoked"),
            listed("partitions_lost").alias("partitions_lost"),
            F.sum(F.when(kind == "records_produced", F.col("count")).otherwise(0))
            .cast("long")
            .alias("records_produced"),
            F.sum(
                F.when(
                    kind == "records_processed",
                    F.col("last_offset") - F.col("first_offset") + 1,
                ).otherwise(0)
            )
            .cast("long")
            .alias("records_processed"),
            F.sum(F.when(kind == "invariant_violated", 1).otherwise(0))
            .cast("long")
            .alias("invariant_violations"),
        )
    )
    idle_totals = idle.groupBy(_RUN).agg(
        F.round(F.sum("idle_ms") / F.lit(1000.0), 3).alias("idle_partition_seconds"),
        F.max("longest_pause_ms").alias("max_partition_pause_ms"),
        F.sum(F.when(F.col("idle_ms") > 0, 1).otherwise(0)).cast("long").alias("paused_partitions"),
    )
    zero = F.lit(0).cast("long")
    return (
        counters.join(bounds, _RUN)
        .join(idle_totals, _RUN, "left")
        .join(_duplicates(ordered), _RUN, "left")
        .join(_lag_peak(lags, bounds), _RUN, "left")
        .join(_moves(ordered, bounds), _RUN, "left")
        .join(decision, _RUN, "left")
        .select(
            _RUN,
            F.coalesce("idle_partition_seconds", F.lit(0.0)).alias("idle_partition_seconds"),
            F.coalesce("max_partition_pause_ms", zero).alias("max_partition_pause_ms"),
            F.coalesce("paused_partitions", zero).alias("paused_partitions"),
            F.coalesce("duplicates", zero).alias("duplicates"),
            F.coalesce("peak_lag", zero).alias("peak_lag"),
            "rebalances",
            "generations",
            "group_epochs",
            "partitions_assigned",
            "partitions_revoked",
            "partitions_lost",
            F.coalesce("partitions_moved", zero).alias("partitions_moved"),
            F.col("time_to_stable_ms").cast("long").alias("time_to_stable_ms"),
            "pause_p50_ms",
            "pause_p99_ms",
            "pause_max_ms",
            "unstable_ms",
            "catch_up_s",
            "records_produced",
            "records_processed",
            F.col("window_start_ms").cast("long").alias("window_start_ms"),
            F.col("window_end_ms").cast("long").alias("window_end_ms"),
            "invariant_violations",
        )
    )


def violations(ordered: DataFrame) -> DataFrame:
    """Every ``invariant_violated`` event (run, time, invariant, detail, member, partition)."""
    return ordered.where(F.col("kind") == "invariant_violated").select(
        _RUN, "ts_ms", "invariant", "detail", "member_id", "partition"
    )


def run_labels(ordered: DataFrame, bounds: DataFrame) -> DataFrame:
    """Per run: scenario, protocol, assignor, seed (``simulation_started``) and ``members``.

    ``members``: how many consumers started before the window opened (the
    group's initial size; every ``consumer_started`` if the window never opens).
    """
    started = ordered.where(F.col("kind") == "simulation_started")
    field = F.get_json_object
    labels = started.groupBy(_RUN).agg(
        F.first("scenario").alias("scenario"),
        F.first(field("json", "$.rebalance_protocol")).alias("protocol"),
        F.first(field("json", "$.assignor")).alias("assignor"),
        F.first(field("json", "$.seed").cast("long")).alias("seed"),
    )
    initial = (
        ordered.where(F.col("kind") == "consumer_started")
        .join(bounds.select(_RUN, "open_ord"), _RUN)
        .where(F.col("open_ord").isNull() | (F.col("ord") < F.col("open_ord")))
        .groupBy(_RUN)
        .agg(F.countDistinct("client_id").cast("long").alias("members"))
    )
    return labels.join(initial, _RUN, "left")


def summary(metrics: DataFrame, labels: DataFrame) -> DataFrame:
    """Per (scenario, protocol, assignor, members): runs, means and worst cases across seeds."""
    return (
        metrics.join(labels, _RUN, "left")
        .groupBy("scenario", "protocol", "assignor", "members")
        .agg(
            F.count(F.lit(1)).alias("runs"),
            F.round(F.avg("idle_partition_seconds"), 3).alias("idle_partition_s_mean"),
            F.max("max_partition_pause_ms").alias("longest_pause_ms"),
            F.round(F.avg("rebalances"), 2).alias("rebalances_mean"),
            F.round(F.avg("partitions_moved"), 2).alias("moved_mean"),
            F.round(F.avg("duplicates"), 1).alias("duplicates_mean"),
            F.max("time_to_stable_ms").alias("time_to_stable_max_ms"),
            F.max("pause_p99_ms").alias("pause_p99_max_ms"),
            F.round(F.avg("unstable_ms"), 1).alias("unstable_ms_mean"),
            F.max("catch_up_s").alias("catch_up_max_s"),
            F.sum("invariant_violations").alias("violations"),
        )
        .orderBy("scenario", "members", "protocol", "assignor")
    )


@dataclass(frozen=True, slots=True)
class Analysis:
    """The analytics' tables (lazy DataFrames)."""

    metrics: DataFrame
    ownership: DataFrame
    idle: DataFrame
    violations: DataFrame
    labels: DataFrame
    #: Every frame ``analyze`` cached, the intermediates too (for ``unpersist``).
    cached: tuple[DataFrame, ...] = ()


def _slim(events: DataFrame) -> DataFrame:
    """The event columns, ``json`` kept only where the analytics read it (the labels)."""
    keep = F.when(F.col("kind") == "simulation_started", F.col("json"))
    return events.select(*[keep.alias(c) if c == "json" else F.col(c) for c in events.columns])


def analyze(events: DataFrame) -> Analysis:
    """Every table, from event rows (``EVENT_SCHEMA``) of any number of runs (lazy, cached)."""
    ordered = with_log_order(_slim(events)).cache()
    bounds = run_bounds(ordered).cache()
    intervals = ownership_intervals(ordered).cache()
    gaps = idle_gaps(ordered, bounds, intervals).cache()
    idle = idle_by_partition(ordered, intervals, gaps).cache()
    lags = _lag_series(ordered)
    decision = decision_metrics(ordered, bounds, gaps, lags)
    metrics = run_metrics(ordered, bounds, idle, decision, lags).cache()
    labels = run_labels(ordered, bounds).cache()
    return Analysis(
        metrics=metrics,
        ownership=intervals,
        idle=idle,
        violations=violations(ordered),
        labels=labels,
        cached=(metrics, labels, idle, gaps, intervals, bounds, ordered),
    )


def unpersist(analysis: Analysis) -> None:
    """Drop every frame ``analyze`` cached for ``analysis`` (its tables and intermediates)."""
    for frame in analysis.cached:
        frame.unpersist()


#: The order ``write_analysis`` writes in: each table after those it is computed from.
TABLES = ("ownership", "idle", "metrics", "labels", "violations")


def write_analysis(analysis: Analysis, out_dir: str | Path) -> dict[str, str]:
    """Write the tables as Parquet under ``out_dir`` (overwriting); returns name -> path.

    ``out_dir`` is a local directory or any URI Spark writes (``regroup.pipeline.output``).
    """
    return {name: write_table(analysis, out_dir, name) for name in TABLES}


def write_table(analysis: Analysis, out_dir: str | Path, name: str) -> str:
    """Write one table of ``TABLES`` as Parquet under ``out_dir`` (overwriting); its path."""
    from regroup.pipeline.output import Output

    path = Output(out_dir).join(name)
    frame: DataFrame = getattr(analysis, name)
    frame.write.mode("overwrite").parquet(path)
    return path
