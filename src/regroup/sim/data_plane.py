"""Partition logs with records arriving at a configured rate.

Rule 1: production is a pure function of time: a partition that produces
``rate`` records per second has ``rate * t // 1000`` records at every produce
tick ``t`` (ticks every ``produce_interval_ms``), so the log end offsets never
depend on anything a consumer does.

Rule 2: at each tick one ``records_produced`` event per partition that grew
(its count and new end offset), in partition order.

A partition added by the scenario starts empty at the time it is added.
Fetch, process and commit positions belong to the consumers (``consumer``);
the data plane only answers "what is the log end offset now".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from regroup.events import RecordsProduced
from regroup.model import TopicPartition, topic_partition

__all__ = ["DataPlane", "DataPlaneConfig"]


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


class DataPlane:
    """Log end offsets of every partition, advanced at produce ticks."""

    __slots__ = ("_born", "_emit", "config", "end_offsets", "group_id")

    def __init__(
        self,
        config: DataPlaneConfig,
        group_id: str,
        emit: Callable[[RecordsProduced], None],
    ) -> None:
        self.config = config
        self.group_id = group_id
        self._emit = emit
        #: The log end offset of every partition (the next offset to be written).
        self.end_offsets: dict[TopicPartition, int] = {}
        self._born: dict[TopicPartition, int] = {}

    @property
    def active(self) -> bool:
        return self.config.records_per_second > 0

    def set_topics(self, topics: Mapping[str, int], now_ms: int) -> None:
        """Create the partitions of ``topics`` that do not exist yet (born at ``now_ms``)."""
        for topic in sorted(topics):
            for partition in range(topics[topic]):
                tp = topic_partition(topic, partition)
                if tp not in self.end_offsets:
                    self.end_offsets[tp] = 0
                    self._born[tp] = now_ms

    def next_tick(self, now_ms: int) -> int:
        """The first produce tick strictly after ``now_ms``."""
        interval = self.config.produce_interval_ms
        return (now_ms // interval + 1) * interval

    def tick(self, now_ms: int) -> None:
        """Append what each partition produced up to ``now_ms`` (Rule 1) and report it."""
        rate = self.config.records_per_second
        if rate <= 0:
            return
        emit = self._emit
        group_id = self.group_id
        for tp, end in self.end_offsets.items():
            target = rate * (now_ms - self._born[tp]) // 1000
            if target > end:
                self.end_offsets[tp] = target
                emit(
                    RecordsProduced(
                        ts_ms=now_ms,
                        group_id=group_id,
                        partition=tp,
                        count=target - end,
                        end_offset=target,
                    )
                )
