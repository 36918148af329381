"""A simulated run's broker log: Kafka's ``server.log`` lines, timed by the virtual clock.

``BrokerLogWriter`` is a journal tap (``Simulation(taps=[writer])``): each event
of the run's coordinator becomes the lines Kafka 4.x's group coordinator logs at
that step (``regroup.brokerlog``), laid out as ``server.log`` is, with the virtual
time as ``%d`` (in UTC, from ``start_ms``: by default the epoch, so a run's first
second is ``1970-01-01 00:00:00,000``). The lines stream to the file as the run
goes, so a log of any length needs no event log kept in memory
(``regroup simulate --broker-log``).

The run's broker is broker 0 with Kafka's 50 ``__consumer_offsets`` partitions.
"""

from __future__ import annotations

import datetime
from typing import TextIO

from regroup.brokerlog import CoordinatorLog, format_line
from regroup.events import Event

__all__ = ["BrokerLogWriter"]


class BrokerLogWriter:
    """Writes the run's broker log to ``out`` (see the module docstring)."""

    def __init__(self, out: TextIO, *, start_ms: int = 0) -> None:
        self._out = out
        self._start_ms = start_ms
        self._log = CoordinatorLog()
        #: Lines written so far.
        self.lines = 0

    def __call__(self, event: Event) -> None:
        for line in self._log.lines(event):
            self._out.write(
                format_line(
                    self._start_ms + line.ts_ms, line.level, line.logger, line.message, datetime.UTC
                )
            )
            self._out.write("\n")
            self.lines += 1
