"""The server's broker log: the group coordinator's events as Kafka 4.x logs them.

Every event the coordinator emits goes, after the event log (``events``), through
``regroup.brokerlog.CoordinatorLog``, which gives the lines Kafka's Java group
coordinator writes at the same step. Each line is a record of a Python logger named
``regroup.kafka.`` + the Kafka logger (``%c``: the Java class, e.g.
``regroup.kafka.org.apache.kafka.coordinator.group.GroupMetadataManager``), so a
user routes the whole broker log by the one name ``regroup.kafka`` (``KAFKA_LOGGER``)
like any Python logger. ``KafkaLayout`` formats records in Kafka's ``server.log``
layout (``[%d] %p %m (%c)%n``, local time as log4j writes it), with the time of the
event; ``log_to_file`` is ``regroup serve --log-file``.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from regroup.brokerlog import CoordinatorLog, LoadedGroup, LogLine, format_line
from regroup.classic.group.group import ClassicGroup
from regroup.consumer.group.group import ConsumerGroup
from regroup.coordinator.group import Group
from regroup.events import Event

__all__ = [
    "KAFKA_LOGGER",
    "CoordinatorLogSink",
    "KafkaLayout",
    "detach",
    "loaded_group",
    "log_to_file",
    "log_to_stream",
]

#: The Python logger every broker-log line goes to (a child per Kafka logger).
KAFKA_LOGGER = "regroup.kafka"

_TS_ATTRIBUTE = "kafka_ts_ms"
_LOGGER_ATTRIBUTE = "kafka_logger"
_OWNER_ATTRIBUTE = "kafka_owner"


class KafkaLayout(logging.Formatter):
    """Kafka's ``server.log`` layout for any log record.

    A broker-log record carries its event's time and Kafka logger; any other record
    is laid out the same way with its own time and its Python logger name as ``%c``.
    ``tz``: the zone of ``%d`` (default: the local zone, as the JVM's).
    """

    def __init__(self, tz: datetime.tzinfo | None = None) -> None:
        super().__init__()
        self.tz = tz

    def format(self, record: logging.LogRecord) -> str:
        ts_ms = getattr(record, _TS_ATTRIBUTE, None)
        if not isinstance(ts_ms, int):
            ts_ms = int(record.created * 1000)
        logger = getattr(record, _LOGGER_ATTRIBUTE, None)
        if not isinstance(logger, str):
            logger = record.name
        tz = self.tz if self.tz is not None else _local_zone(ts_ms)
        line = format_line(ts_ms, record.levelname, logger, record.getMessage(), tz)
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        return line


def _local_zone(ts_ms: int) -> datetime.tzinfo:
    zone = datetime.datetime.fromtimestamp(ts_ms / 1000).astimezone().tzinfo
    assert zone is not None
    return zone


class CoordinatorLogSink:
    """Logs each event's broker-log lines under ``regroup.kafka.<Kafka logger>``."""

    def __init__(self, *, broker_id: int = 0, owner: object = None) -> None:
        self._log = CoordinatorLog(broker_id=broker_id)
        #: Whose lines these are (the server's options): ``log_to_file(only=owner)``.
        self.owner = owner
        self._root = logging.getLogger(KAFKA_LOGGER)
        self._loggers: dict[str, logging.Logger] = {}

    def follow(self, broker_of: Callable[[str], int], offsets_partitions: int) -> None:
        """Several brokers (``regroup.server.cluster``): each group's lines name the broker
        coordinating it now and its partition of ``offsets_partitions``."""
        self._log.broker_of = broker_of
        self._log.offsets_partitions = offsets_partitions

    def publish(self, events: Iterable[Event]) -> None:
        for event in events:
            for line in self._log.lines(event):
                self._write(line)

    def loaded(self, ts_ms: int, groups: Iterable[Group]) -> None:
        """The groups a restart rebuilt from the store, as Kafka logs a loaded partition's."""
        for group in groups:
            for line in self._log.loaded(ts_ms, loaded_group(group)):
                self._write(line)

    def _write(self, line: LogLine) -> None:
        logger = self._loggers.get(line.logger)
        if logger is None:
            logger = self._loggers[line.logger] = logging.getLogger(f"{KAFKA_LOGGER}.{line.logger}")
        level = logging.getLevelName(line.level)
        if isinstance(level, int) and logger.isEnabledFor(level):
            logger.log(
                level,
                "%s",
                line.message,
                extra={
                    _TS_ATTRIBUTE: line.ts_ms,
                    _LOGGER_ATTRIBUTE: line.logger,
                    _OWNER_ATTRIBUTE: self.owner,
                },
            )


def loaded_group(group: Group) -> LoadedGroup:
    """What the broker log needs of a group the coordinator rebuilt from its records."""
    if isinstance(group, ClassicGroup):
        return LoadedGroup(
            group_id=group.group_id,
            group_type="classic",
            state=group.state_name(),
            members={m: member.group_instance_id for m, member in group.members.items()},
            leader_id=group.leader_id or "",
        )
    if isinstance(group, ConsumerGroup):
        return LoadedGroup(
            group_id=group.group_id,
            group_type="consumer",
            state=group.state_name(),
            members={m: member.instance_id for m, member in group.members.items()},
        )
    return LoadedGroup(group.group_id, group.group_type, group.state_name(), {})


def log_to_file(path: Path, level: int = logging.INFO, *, only: object = None) -> logging.Handler:
    """Send the broker log to ``path`` (appended; Kafka's layout) and nowhere else.

    ``only``: just the lines of the sinks of that owner (a server's ``ServerOptions``:
    several servers in one process, as tests run them). Returns the handler;
    ``detach`` undoes it. ``OSError`` if the file cannot be opened.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    return _attach(handler, level, only)


def log_to_stream(stream: TextIO | None = None, level: int = logging.INFO) -> logging.Handler:
    """Send the broker log to ``stream`` (stderr by default) in Kafka's layout."""
    handler = logging.StreamHandler(stream)
    return _attach(handler, level, None)


def detach(handler: logging.Handler) -> None:
    """Stop sending the broker log to ``handler`` and close it; with no handler left, the
    lines go up to the root logger again."""
    root = logging.getLogger(KAFKA_LOGGER)
    root.removeHandler(handler)
    handler.close()
    if not root.handlers:
        root.propagate = True


def _attach(handler: logging.Handler, level: int, only: object) -> logging.Handler:
    handler.setFormatter(KafkaLayout())
    handler.setLevel(level)
    if only is not None:
        handler.addFilter(lambda record: getattr(record, _OWNER_ATTRIBUTE, None) is only)
    root = logging.getLogger(KAFKA_LOGGER)
    root.addHandler(handler)
    root.propagate = False
    if root.level == logging.NOTSET or root.level > level:
        root.setLevel(level)
    return handler
