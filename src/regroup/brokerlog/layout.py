"""Kafka's log4j layout: ``[%d] %p %m (%c)%n``.

Apache Kafka 4.x ships ``config/log4j2.yaml`` with one pattern for ``server.log``
and the console, ``logPattern: "[%d] %p %m (%c)%n"`` (Kafka 2.x-3.x's
``config/log4j.properties`` had the same ``ConversionPattern``):

* ``%d``: the date in log4j's default format ``yyyy-MM-dd HH:mm:ss,SSS``, in the
  JVM's time zone;
* ``%p``: the level, ``INFO``, ``WARN``, ``ERROR``, ``DEBUG``, ``TRACE``
  (Python's ``WARNING`` and ``CRITICAL`` are log4j's ``WARN`` and ``FATAL``);
* ``%m``: the message (the coordinator's messages begin with its log context);
* ``%c``: the logger name, the fully qualified Java class.

Example (one line)::

    [2026-12-02 14:03:11,123] INFO [GroupCoordinator id=0 topic=__consumer_offsets
    partition=12] Stabilized group g generation 3 with 2 members.
    (org.apache.kafka.coordinator.group.GroupMetadataManager)

Pure: a time in, text out (the caller chooses the clock and the zone).
"""

from __future__ import annotations

import datetime

__all__ = ["PATTERN", "format_line", "log4j_level", "timestamp"]

#: The ``PatternLayout`` of Kafka's ``server.log``.
PATTERN = "[%d] %p %m (%c)%n"

_LEVELS = {"WARNING": "WARN", "CRITICAL": "FATAL"}


def log4j_level(level: str) -> str:
    """log4j's name (``%p``) of a level named the Python or the log4j way."""
    upper = level.upper()
    return _LEVELS.get(upper, upper)


def timestamp(ts_ms: int, tz: datetime.tzinfo = datetime.UTC) -> str:
    """``ts_ms`` (ms since the epoch) as log4j's ``%d``: ``2026-12-02 14:03:11,123``."""
    moment = datetime.datetime.fromtimestamp(ts_ms // 1000, tz)
    return f"{moment:%Y-%m-%d %H:%M:%S},{ts_ms % 1000:03d}"


def format_line(
    ts_ms: int,
    level: str,
    logger: str,
    message: str,
    tz: datetime.tzinfo = datetime.UTC,
) -> str:
    """One line of ``server.log`` without its line separator (``%n``)."""
    return f"[{timestamp(ts_ms, tz)}] {log4j_level(level)} {message} ({logger})"
