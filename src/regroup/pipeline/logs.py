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

A file or directory that is not an event log is refused on the driver, before
any Spark job, with one line naming the file (``LogError``): a JSON file whose
first line is not an event, a Parquet directory whose files lack the event
columns (``regroup analyze OUT`` instead of ``OUT/events``), a directory with no
log at all. A URI (``hdfs://``, ``s3a://``, ...) is read as the Parquet
``events/`` layout, through Spark's reader.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import StringType, StructField, StructType

from regroup.events import SimulationStarted, UnknownEventKind, event_from_json_line
from regroup.pipeline.schema import EVENT_COLUMNS, EVENT_SCHEMA, event_rows, rows_to_arrow_batches

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["LogError", "check_logs", "json_log_batches", "read_events"]

JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")


class LogError(ValueError):
    """No event log at the path given (one-line message)."""


def _read_json_log(path: str) -> list[Any]:
    events = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                events.append(event_from_json_line(line))
            except UnknownEventKind:
                continue
            except (ValueError, TypeError, KeyError) as error:
                raise LogError(f"{path}:{number}: not an event ({error})") from None
    return events


def _check_json_log(path: Path) -> None:
    """The first line of ``path`` is an event (else ``LogError``): a stray JSON file (a
    ``grid.json``, a config) is named here rather than failing inside a Spark task."""
    try:
        with path.open(encoding="utf-8") as lines:
            first = next((line for line in lines if line.strip()), None)
    except (OSError, UnicodeDecodeError) as error:
        raise LogError(f"{path}: cannot be read as an event log ({error})") from None
    if first is None:
        return  # an empty log is an empty run
    try:
        event_from_json_line(first)
    except UnknownEventKind:
        # A kind of a later version is skipped; a JSON object with no kind is no event.
        if isinstance(json.loads(first).get("kind"), str):
            return
        raise LogError(f"{path} is not an event log (line 1 has no event kind)") from None
    except (ValueError, TypeError, KeyError) as error:
        raise LogError(f"{path} is not an event log (line 1: {error})") from None


def _check_parquet(root: Path) -> None:
    """The Parquet files under ``root`` have the event columns (else ``LogError``).

    One file of each directory directly under ``root`` is read (its footer only):
    a table is written by one writer, so one file speaks for its directory, and a
    directory of several tables (a sweep's output) shows each of them."""
    import pyarrow.parquet as pq

    wanted = {f.name for f in EVENT_SCHEMA.fields} - {"scenario", "run_id"}
    first: dict[str, Path] = {}
    for file in sorted(root.rglob("*.parquet")):
        first.setdefault(file.relative_to(root).parts[0], file)
    for file in first.values():
        try:
            names = set(pq.read_schema(file).names)
        except Exception as error:
            raise LogError(f"{file} is not a Parquet file ({error})") from None
        if not wanted <= names:
            hint = " (did you mean its events/ directory?)" if (root / "events").is_dir() else ""
            raise LogError(f"{file} is not an event table{hint}")


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


def check_logs(path: str | Path) -> Path | list[Path] | None:
    """Check ``path`` on the driver, before Spark: the Parquet directory (returned as a
    ``Path``), the JSON-lines files (a list), or ``None`` for a URI left to Spark's reader.
    ``LogError`` (one line naming the file) for anything that is not an event log."""
    text = str(path)
    if "://" in text and not text.startswith("file://"):
        return None
    root = Path(text.removeprefix("file://"))
    if root.is_dir() and any(root.rglob("*.parquet")):
        _check_parquet(root)
        return root
    if root.is_file():
        files = [root]
    elif root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in JSON_SUFFIXES)
    else:
        raise LogError(f"no such file or directory: {root}")
    if not files:
        raise LogError(f"no event logs (Parquet or {', '.join(JSON_SUFFIXES)}) under {root}")
    for file in files:
        _check_json_log(file)
    return files


def read_events(spark: SparkSession, path: str | Path) -> DataFrame:
    """The event rows (``EVENT_SCHEMA``) of every log at ``path``; ``LogError`` if none."""
    found = check_logs(path)
    if found is None:
        return spark.read.schema(EVENT_SCHEMA).parquet(str(path)).select(*EVENT_COLUMNS)
    if isinstance(found, Path):
        root = found
        reader = spark.read.schema(EVENT_SCHEMA)
        parts = root.resolve().parts
        keyed = [i for i, part in enumerate(parts) if part.startswith(("scenario=", "run_id="))]
        if keyed:
            # One scenario's or one run's directory: the partition columns come from above it.
            reader = reader.option("basePath", str(Path(*parts[: keyed[0]])))
        return reader.parquet(str(root)).select(*EVENT_COLUMNS)
    files = found
    names = spark.createDataFrame(
        [(str(p.resolve()),) for p in files], StructType([StructField("path", StringType(), False)])
    ).repartition(max(1, min(len(files), spark.sparkContext.defaultParallelism * 4)))
    return names.mapInArrow(json_log_batches, EVENT_SCHEMA)
