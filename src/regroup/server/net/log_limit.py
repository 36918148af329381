"""One warning line per bad request, and not more lines than an operator can read.

A client that sends malformed frames as fast as it can must not be able to fill
the disk with the server's log (a traceback is ~570 bytes
per frame). Kafka's ``SocketServer`` logs such a request in one line (an
``InvalidRequestException`` message, the traceback only at DEBUG); regroup does
the same and also rate-limits the lines.

Rule 1: every bad-input warning is one line: what the connection sent and why
it was refused; never a traceback (that goes to DEBUG, for a developer).
Rule 2: a token bucket: ``burst`` lines at once, then one per ``interval_s``;
lines over the limit are counted, and the next line that is written says how
many were suppressed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["RateLimitedLog"]


class RateLimitedLog:
    """Rule 2 over ``logger.warning``."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        burst: int = 20,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._burst = burst
        self._interval = interval_s
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        #: Lines not written since the last one that was.
        self.suppressed = 0
        #: Lines not written in all.
        self.suppressed_total = 0

    def _allow(self) -> bool:
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._last) / self._interval)
        self._last = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        self.suppressed += 1
        self.suppressed_total += 1
        return False

    def warning(self, message: str, *args: object) -> None:
        """Rule 1 and 2: one line, or a count when over the limit."""
        if not self._logger.isEnabledFor(logging.WARNING) or not self._allow():
            return
        if self.suppressed:
            message += " (%d similar lines suppressed)"
            args = (*args, self.suppressed)
            self.suppressed = 0
        self._logger.warning(message, *args)

    def failure(self, message: str, error: BaseException, *args: object) -> None:
        """A request that failed: one warning line with the error; the traceback at DEBUG."""
        self.warning(message + ": %s: %s; closing", *args, type(error).__name__, error)
        self._logger.debug("traceback of the failure above", exc_info=error)
