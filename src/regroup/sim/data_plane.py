"""Partition logs with records arriving at a configured rate, in closed form.

Rule 1: production is a pure function of time: a partition that produces
``rate`` records per second has ``rate * (t - born) // 1000`` records at every
produce tick ``t`` (ticks every ``produce_interval_ms``; ``born`` is when the
partition was created), so the log end offsets never depend on anything a
consumer does. A log end offset is computed when it is asked for
(``end_offset``: its value at the last tick), never stored per partition.

Rule 2: at each tick the records produced since the previous tick are
published at once (``Journal.records_produced``: their total count, which is
all the metrics and the invariant checker read of production), whatever the
number of partitions: the totals of the partitions born at the same time are
one product. Only a run that keeps its event log (or streams it to taps) also
gets the log's ``records_produced`` event for every partition that grew, in
partition order, as before: those are the only per-partition work per tick,
and only then.

A partition added by the scenario starts empty at the time it is added.
Fetch, process and commit positions belong to the consumers (``consumer``);
the data plane only answers "what is the log end offset now".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from regroup.events import RecordsProduced
from regroup.model import TopicPartition, topic_partition

__all__ = ["DataPlane", "DataPlaneConfig", "ProductionSink"]


@dataclass(frozen=True, slots=True)
class DataPlaneConfig:
    """``records_per_second`` per partition (0: no records, no produce events)."""

    records_per_second: int = 0
    produce_interval_ms: int = 1000

    def __post_init__(self) -> None:
        if self.records_per_second < 0:
            raise ValueError("records_per_second must be >= 0")
        if self.produce_interval_ms < 1:
            raise ValueError("produce_interval_ms must be >= 1")


class ProductionSink(Protocol):
    """Where a tick's production goes (the run's ``Journal``)."""

    @property
    def logging(self) -> bool:
        """Whether the run writes its event log (then each partition's event is wanted)."""
        ...

    def log(self, event: RecordsProduced) -> None:
        """One partition's production, for the log only (the observers get the total)."""
        ...

    def records_produced(self, ts_ms: int, count: int) -> None:
        """``count`` records were produced at ``ts_ms``, over all partitions."""
        ...


class DataPlane:
    """Log end offsets of every partition, as of the last produce tick (see the module doc)."""

    __slots__ = (
        "_born",
        "_by_birth",
        "_logged_ends",
        "_produced",
        "_sink",
        "config",
        "group_id",
        "last_tick",
        "rate",
    )

    def __init__(self, config: DataPlaneConfig, group_id: str, sink: ProductionSink) -> None:
        self.config = config
        self.group_id = group_id
        self._sink = sink
        #: Records per second per partition.
        self.rate = config.records_per_second
        #: When each partition was created, and how many were created at each time.
        self._born: dict[TopicPartition, int] = {}
        self._by_birth: dict[int, int] = {}
        #: The time of the last produce tick (``None``: none yet).
        self.last_tick: int | None = None
        #: Records produced over all partitions up to the last tick.
        self._produced = 0
        #: The log's end offsets, per partition: kept only for a run that logs its events.
        self._logged_ends: dict[TopicPartition, int] = {}

    @property
    def active(self) -> bool:
        return self.config.records_per_second > 0

    @property
    def born(self) -> Mapping[TopicPartition, int]:
        """When each partition was created (the partitions the data plane knows)."""
        return self._born

    def set_topics(self, topics: Mapping[str, int], now_ms: int) -> None:
        """Create the partitions of ``topics`` that do not exist yet (born at ``now_ms``)."""
        born = self._born
        for topic in sorted(topics):
            for partition in range(topics[topic]):
                tp = topic_partition(topic, partition)
                if tp not in born:
                    born[tp] = now_ms
                    self._by_birth[now_ms] = self._by_birth.get(now_ms, 0) + 1
                    if self._sink.logging:
                        self._logged_ends[tp] = 0

    def end_offset(self, tp: TopicPartition) -> int:
        """The log end offset of ``tp`` (the next offset to be written) as of the last tick."""
        tick = self.last_tick
        born = self._born.get(tp)
        if tick is None or born is None or born > tick:
            return 0
        return self.rate * (tick - born) // 1000

    def next_tick(self, now_ms: int) -> int:
        """The first produce tick strictly after ``now_ms``."""
        interval = self.config.produce_interval_ms
        return (now_ms // interval + 1) * interval

    def tick(self, now_ms: int) -> None:
        """Append what each partition produced up to ``now_ms`` (Rule 1) and report it."""
        rate = self.rate
        if rate <= 0:
            return
        self.last_tick = now_ms
        total = 0
        for born, count in self._by_birth.items():
            if born <= now_ms:
                total += count * (rate * (now_ms - born) // 1000)
        grown = total - self._produced
        if grown <= 0:
            return
        self._produced = total
        sink = self._sink
        if sink.logging:
            group_id = self.group_id
            ends = self._logged_ends
            born_at = self._born
            for tp, end in ends.items():
                target = rate * (now_ms - born_at[tp]) // 1000
                if target > end:
                    ends[tp] = target
                    sink.log(
                        RecordsProduced(
                            ts_ms=now_ms,
                            group_id=group_id,
                            partition=tp,
                            count=target - end,
                            end_offset=target,
                        )
                    )
        sink.records_produced(now_ms, grown)
