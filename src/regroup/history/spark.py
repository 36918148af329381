"""The parse as Spark tasks: splits -> records -> one task per group -> histories and findings.

No raw line reaches the driver. Each split (``regroup.history.reader``) is one task that
reads its bytes and keeps only recognised records and its counts; the records are
persisted, counted (``SplitStats``, one small object per split, collected), grouped by
group id (one shuffle) and each group is rebuilt in one task
(``regroup.history.rebalances``, ``regroup.history.findings``); the driver collects one
``GroupHistory`` and its findings per group. With ``events_dir`` the same groups are turned
into regroup's event log (``regroup.history.events``) and written as the pipeline's Parquet
layout (``scenario=history/run_id=<group>``), which ``regroup analyze`` reads.

URIs that are not local files are read by Spark's ``textFile`` (it decompresses ``.gz``);
their splits are Spark's, and a damaged ``.gz`` there is Spark's error, not a count.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from regroup.history.findings import Finding, find
from regroup.history.lines import Record
from regroup.history.reader import Split, SplitStats, Window, read_lines, read_split
from regroup.history.rebalances import GroupHistory, reconstruct, sort_key

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["HistoryResult", "analyze_group", "group_event_rows", "run_history"]


@dataclass(frozen=True, slots=True)
class HistoryResult:
    stats: list[SplitStats]
    groups: list[tuple[GroupHistory, list[Finding]]]


def analyze_group(
    group_id: str, records: Iterable[Record], logs: str
) -> tuple[GroupHistory, list[Finding]]:
    """One group's history and findings (the body of one Spark task, also used without)."""
    history = reconstruct(group_id, list(records))
    return history, find(history, logs)


def group_event_rows(group_id: str, records: Iterable[Record]) -> Iterator[tuple[Any, ...]]:
    """The event rows (``EVENT_SCHEMA`` order) of one group's records, in time order."""
    from regroup.history.events import record_events
    from regroup.pipeline.schema import EVENT_COLUMNS, event_row

    seq = 0
    seen: set[tuple[int, str]] = set()
    for record in sorted(records, key=sort_key):
        key = (record.ts_ms, record.line)
        if key in seen:
            continue
        seen.add(key)
        for event in record_events(record):
            row = event_row(event, scenario="history", run_id=group_id, seq=seq)
            seq += 1
            yield tuple(row[name] for name in EVENT_COLUMNS)


def _is_stats(item: Any) -> bool:
    return isinstance(item, SplitStats)


def _keyed(item: Any) -> list[tuple[str, Record]]:
    if isinstance(item, Record) and item.group_id:
        return [(item.group_id, item)]
    return []


def _analyze(pair: Any, logs: str) -> tuple[GroupHistory, list[Finding]]:
    return analyze_group(pair[0], pair[1], logs)


def _rows(pair: Any) -> Iterator[tuple[Any, ...]]:
    return group_event_rows(pair[0], pair[1])


def _parse(split: Split, window: Window, done: Any) -> Iterator[Record | SplitStats]:
    for item in read_split(split, window):
        if isinstance(item, SplitStats):
            done.add(1)
        yield item


def _uri_reader(uri: str, window: Window) -> Callable[[int, Any], Iterator[Any]]:
    def read(index: int, lines: Any) -> Iterator[Any]:
        return read_lines(lines, f"{uri}#{index}", window)

    return read


def run_history(
    spark: SparkSession,
    splits: list[Split],
    uris: list[str],
    window: Window,
    *,
    logs: str,
    events_dir: str | None = None,
    progress: Callable[[int, Any, Callable[[], None]], None] | None = None,
) -> HistoryResult:
    """Parse, group and rebuild on Spark (see the module docstring)."""
    from pyspark import StorageLevel

    context = spark.sparkContext
    done = context.accumulator(0)
    parts: list[Any] = []
    if splits:
        parts.append(
            context.parallelize(splits, len(splits)).flatMap(
                lambda split: _parse(split, window, done)
            )
        )
    for uri in uris:
        parts.append(context.textFile(uri).mapPartitionsWithIndex(_uri_reader(uri, window)))
    parsed = parts[0] if len(parts) == 1 else context.union(parts)
    parsed.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        collected: list[SplitStats] = []

        def count() -> None:
            collected.extend(parsed.filter(_is_stats).collect())

        if progress is not None:
            progress(len(splits), done, count)
        else:
            count()
        by_group = parsed.flatMap(_keyed).groupByKey()
        by_group.persist(StorageLevel.MEMORY_AND_DISK)
        groups: list[tuple[GroupHistory, list[Finding]]] = by_group.map(
            lambda pair: _analyze(pair, logs)
        ).collect()
        if events_dir is not None:
            from regroup.pipeline.schema import EVENT_SCHEMA

            rows = by_group.flatMap(_rows)
            frame = spark.createDataFrame(rows, EVENT_SCHEMA)
            frame.write.mode("overwrite").partitionBy("scenario", "run_id").parquet(events_dir)
        by_group.unpersist()
    finally:
        parsed.unpersist()
    groups.sort(key=lambda pair: pair[0].group_id)
    return HistoryResult(sorted(collected, key=lambda s: (s.path, s.start)), groups)
