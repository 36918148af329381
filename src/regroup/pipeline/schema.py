"""The event log as a Spark table: an explicit schema (never inferred) and the row converter.

One row per event (``regroup.events``), flat: the common columns, then one
nullable column per field the analytics read, then ``json``, the event's own
JSON line, so nothing of an event is lost. Partitions are written as Kafka
does in logs, ``"topic-3"``.

``run_id`` names one run (one event log); ``seq`` is the event's position in
its log. *Log order* is ``(ts_ms, seq)``: the simulator's metrics read events
in log order (``regroup.sim.metrics``), and several events often share a
timestamp, so ``seq`` is what breaks the tie, never the order of rows in a
DataFrame.

On disk (``sweep``): Parquet under ``events/``, partitioned by ``scenario``
and ``run_id`` (``events/scenario=crash/run_id=.../*.parquet``), so one
scenario or one run is read alone by a partition filter or its directory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from regroup.events import Event

__all__ = [
    "EVENT_COLUMNS",
    "EVENT_SCHEMA",
    "event_row",
    "event_rows",
    "events_frame",
    "rows_to_arrow_batches",
]

EVENT_SCHEMA = StructType(
    [
        StructField("scenario", StringType(), False),
        StructField("run_id", StringType(), False),
        StructField("seq", LongType(), False),
        StructField("ts_ms", LongType(), False),
        StructField("kind", StringType(), False),
        StructField("group_id", StringType(), True),
        StructField("member_id", StringType(), True),
        StructField("client_id", StringType(), True),
        StructField("instance_id", StringType(), True),
        #: partitions_assigned / _revoked / _lost / _restored, offset commit rejections.
        StructField("partitions", ArrayType(StringType(), False), True),
        #: records_* and invariant_violated.
        StructField("partition", StringType(), True),
        StructField("count", LongType(), True),
        StructField("first_offset", LongType(), True),
        StructField("last_offset", LongType(), True),
        StructField("end_offset", LongType(), True),
        #: ``generation`` (classic), ``epoch`` (KIP-848) or ``generation_or_epoch``.
        StructField("epoch", LongType(), True),
        StructField("crashed", BooleanType(), True),
        #: simulation_started / scenario_step: topic -> partition count.
        StructField("topics", MapType(StringType(), LongType(), False), True),
        StructField("action", StringType(), True),
        StructField("invariant", StringType(), True),
        StructField("detail", StringType(), True),
        StructField("reason", StringType(), True),
        StructField("new_state", StringType(), True),
        StructField("json", StringType(), False),
    ]
)

EVENT_COLUMNS: tuple[str, ...] = tuple(f.name for f in EVENT_SCHEMA.fields)

_EPOCH_FIELDS = ("generation_or_epoch", "generation", "epoch")
_DIRECT = (
    "group_id",
    "member_id",
    "client_id",
    "instance_id",
    "partition",
    "count",
    "first_offset",
    "last_offset",
    "end_offset",
    "crashed",
    "action",
    "invariant",
    "detail",
    "reason",
    "new_state",
)


def event_row(event: Event, *, scenario: str, run_id: str, seq: int) -> dict[str, Any]:
    """The row of one event (a dict keyed by ``EVENT_COLUMNS``)."""
    import json

    data = event.to_dict()
    row: dict[str, Any] = dict.fromkeys(EVENT_COLUMNS)
    row.update(scenario=scenario, run_id=run_id, seq=seq, ts_ms=event.ts_ms, kind=event.kind)
    for name in _DIRECT:
        if name in data:
            row[name] = data[name]
    if "partitions" in data:
        row["partitions"] = list(data["partitions"])
    for name in _EPOCH_FIELDS:
        if name in data:
            row["epoch"] = data[name]
            break
    if "topics" in data:
        row["topics"] = {str(k): int(v) for k, v in data["topics"].items()}
    row["json"] = json.dumps(data, separators=(",", ":"))
    return row


def event_rows(events: Iterable[Event], *, scenario: str, run_id: str) -> Iterator[dict[str, Any]]:
    """The rows of one event log, ``seq`` numbering the log order from 0."""
    for seq, event in enumerate(events):
        yield event_row(event, scenario=scenario, run_id=run_id, seq=seq)


def rows_to_arrow_batches(rows: Iterable[dict[str, Any]], *, batch_rows: int = 65536) -> Any:
    """Arrow record batches of ``EVENT_SCHEMA`` (for ``mapInArrow``), ``batch_rows`` at a time."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(EVENT_SCHEMA)
    chunk: list[dict[str, Any]] = []

    def flush() -> Any:
        columns = {name: [r[name] for r in chunk] for name in EVENT_COLUMNS}
        for r_index, r in enumerate(chunk):
            if r["topics"] is not None:
                columns["topics"][r_index] = list(r["topics"].items())
        return pa.RecordBatch.from_pydict(columns, schema=arrow_schema)

    for row in rows:
        chunk.append(row)
        if len(chunk) >= batch_rows:
            yield flush()
            chunk = []
    if chunk:
        yield flush()


def events_frame(spark: Any, rows: Iterable[dict[str, Any]]) -> Any:
    """A DataFrame of ``EVENT_SCHEMA`` from event rows, through Arrow (fast, schema exact)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    batches = list(rows_to_arrow_batches(rows))
    table = pa.Table.from_batches(batches, schema=to_arrow_schema(EVENT_SCHEMA))
    return spark.createDataFrame(table, schema=EVENT_SCHEMA)
