"""Reading event logs into Spark: the pipeline's Parquet layout, or JSON-lines files.

``read_events(spark, path)``:

* a directory holding Parquet (``sweep``'s ``events/``, or one scenario's or
  one run's subdirectory of it) is read with ``EVENT_SCHEMA`` given, never
  inferred; partition directories (``scenario=...``, ``run_id=...``) fill
  those columns;
* otherwise JSON-lines logs (``regroup simulate --events``, the wire server):
  a file, or every ``*.jsonl`` / ``*.ndjson`` / ``*.json`` file under a
  directory. Each file is one run (``run_id``: its name without suffix) and is
  read whole inside one Spark task (``mapInArrow`` over the file names), so
  ``seq`` is the exact line order; ``scenario`` comes from the log's
  ``simulation_started`` (``"unknown"`` without one). Lines of kinds this
  version does not know are skipped, as the schema's versioning rule says.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import StringType, StructField, StructType

from regroup.events import SimulationStarted, UnknownEventKind, event_from_json_line
from regroup.pipeline.schema import EVENT_COLUMNS, EVENT_SCHEMA, event_rows, rows_to_arrow_batches

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["LogError", "json_log_batches", "read_events"]

JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")


class LogError(ValueError):
    """No event log at the path given (one-line message)."""


def _read_json_log(path: str) -> list[Any]:
    events = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            try:
                events.append(event_from_json_line(line))
            except UnknownEventKind:
                continue
    return events


def json_log_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """The ``mapInArrow`` function: file paths in, their event rows out."""
    for batch in batches:
        for row in batch.to_pylist():
            path = row["path"]
            events = _read_json_log(path)
            scenario = next(
                (e.scenario for e in events if isinstance(e, SimulationStarted)), "unknown"
            )
            yield from rows_to_arrow_batches(
                event_rows(events, scenario=scenario, run_id=Path(path).stem)
            )


def read_events(spark: SparkSession, path: str | Path) -> DataFrame:
    """The event rows (``EVENT_SCHEMA``) of every log at ``path``; ``LogError`` if none."""
    root = Path(path)
    if root.is_dir() and any(root.rglob("*.parquet")):
        reader = spark.read.schema(EVENT_SCHEMA)
        parts = root.resolve().parts
        keyed = [i for i, part in enumerate(parts) if part.startswith(("scenario=", "run_id="))]
        if keyed:
            # One scenario's or one run's directory: the partition columns come from above it.
            reader = reader.option("basePath", str(Path(*parts[: keyed[0]])))
        return reader.parquet(str(root)).select(*EVENT_COLUMNS)
    if root.is_file():
        files = [root]
    elif root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in JSON_SUFFIXES)
    else:
        raise LogError(f"no such file or directory: {root}")
    if not files:
        raise LogError(f"no event logs (Parquet or {', '.join(JSON_SUFFIXES)}) under {root}")
    names = spark.createDataFrame(
        [(str(p.resolve()),) for p in files], StructType([StructField("path", StringType(), False)])
    ).repartition(max(1, min(len(files), spark.sparkContext.defaultParallelism * 4)))
    return names.mapInArrow(json_log_batches, EVENT_SCHEMA)
