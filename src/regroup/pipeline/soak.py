"""``regroup soak --spark``: soak seeds spread over Spark, one summary on the driver.

The same machinery as ``regroup.pipeline.sweep``: the work items (here
``(protocol, seed)`` pairs and the size limits) become a small DataFrame,
repartitioned to a few slots per core, and ``mapInArrow`` hands each Python
worker its rows as an Arrow batch; the worker draws each seed's schedule, runs
and checks it (``regroup.sim.soak``) exactly as ``regroup soak`` does locally,
and returns one row per seed: the outcome as JSON text (``summary.outcome_row``),
a few hundred bytes, so nothing but the outcomes crosses to the JVM. The
driver folds the rows into the same ``Summary``; a failure is minimised on the
driver (``regroup.cli.soak``), from the seed alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import (
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from regroup.sim.soak.check import run_scenario
from regroup.sim.soak.schedule import Limits, draw_scenario
from regroup.sim.soak.summary import Summary, outcome_from_row, outcome_row

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["OUTCOME_SCHEMA", "SEED_SCHEMA", "soak_batches", "soak_on_spark"]

SEED_SCHEMA = StructType(
    [
        StructField("protocol", StringType(), False),
        StructField("seed", LongType(), False),
        StructField("max_members", IntegerType(), False),
        StructField("max_partitions", IntegerType(), False),
        StructField("zero_timeouts", BooleanType(), False),
    ]
)
OUTCOME_SCHEMA = StructType(
    [
        StructField("protocol", StringType(), False),
        StructField("seed", LongType(), False),
        StructField("outcome", StringType(), False),
    ]
)


def soak_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """The ``mapInArrow`` function: seed rows in, outcome rows (``OUTCOME_SCHEMA``) out."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(OUTCOME_SCHEMA)
    for batch in batches:
        out: dict[str, list[Any]] = {"protocol": [], "seed": [], "outcome": []}
        for row in batch.to_pylist():
            protocol, seed = str(row["protocol"]), int(row["seed"])
            limits = Limits(
                int(row["max_members"]),
                int(row["max_partitions"]),
                zero_timeouts=bool(row["zero_timeouts"]),
            )
            outcome = run_scenario(draw_scenario(protocol, seed, limits), protocol, seed)
            out["protocol"].append(protocol)
            out["seed"].append(seed)
            out["outcome"].append(json.dumps(outcome_row(outcome)))
        yield pa.RecordBatch.from_pydict(out, schema=schema)


def soak_on_spark(
    spark: SparkSession, protocols: Sequence[str], seeds: Sequence[int], limits: Limits
) -> Summary:
    """Run every (protocol, seed) in a Spark task; the summary of their outcomes."""
    rows = [
        (protocol, seed, limits.max_members, limits.max_partitions, limits.zero_timeouts)
        for protocol in protocols
        for seed in seeds
    ]
    frame = spark.createDataFrame(rows, SEED_SCHEMA)
    slots = max(1, spark.sparkContext.defaultParallelism) * 8
    frame = frame.repartition(max(1, min(len(rows), slots)))
    summary = Summary()
    collected = frame.mapInArrow(soak_batches, OUTCOME_SCHEMA).collect()
    for row in sorted(collected, key=lambda r: (r["protocol"], r["seed"])):
        summary.add(outcome_from_row(json.loads(row["outcome"])))
    return summary
