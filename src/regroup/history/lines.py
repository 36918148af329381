"""One raw log line -> one recognised record, or the reason it is not one.

A line as operators have it carries up to three layers around Kafka's message:

1. what the deployment adds in front: docker-compose's ``kafka_1  | ``, Kubernetes'
   RFC 3339 timestamp (``kubectl logs --timestamps``, the CRI file format's
   ``2026-12-02T14:03:11.123456789Z stdout F ``), a syslog header ...;
2. Kafka's log4j layout ``[%d] %p %m (%c)`` (``config/log4j.properties`` up to 3.x,
   ``log4j2.yaml`` from 4.0): ``[2026-12-02 14:03:11,123] INFO ... (kafka.coordinator...)``;
   also without the brackets and with the thread after the logger (``%d %p %m (%c) [%t]``,
   as some distributions configure it);
3. the family prefix and message, matched against ``regroup.history.formats``.

Layer 1 is not parsed: the log4j envelope is *searched* for, so whatever precedes it is
skipped. A client line (``[Consumer clientId=..``) may come from an application's own
layout (logback, ...): its timestamp is then the first ISO-8601 timestamp of the line.

The outcome of a line is ``Record`` (recognised), ``OTHER`` (no coordinator or client
marker: the usual broker chatter, counted and skipped) or ``UNRECOGNISED`` (a coordinator
or client line no row matches: a wording this table does not hold, a line cut short, or two
lines interleaved by concurrent writers; counted and skipped, never an error).

Timestamps: log4j writes the broker's local time with no zone; the record keeps the text
as ISO-8601 (``2026-12-02T14:03:11.123``, no zone, as the log) and ``ts_ms`` reads it as
UTC, which orders one cluster's lines correctly when its brokers share a time zone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache

from regroup.history.formats import Family, family_of, parse

__all__ = ["MARKERS", "OTHER", "UNRECOGNISED", "Record", "parse_line", "timestamp_ms"]

OTHER = "other"
UNRECOGNISED = "unrecognised"

#: A line without one of these substrings is not looked at further (a fast first filter).
MARKERS = ("GroupCoordinator", "GroupMetadataManager", "[Consumer clientId=")

_LOG4J = re.compile(
    r"\[?(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d{1,9})?)\]? "
    r"(TRACE|DEBUG|INFO|WARN|ERROR|FATAL) "
)
_LOGGER_TAIL = re.compile(r" \(([\w.$]+)\)(?: \[[^\]]*\])?\s*$")
_ISO = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:[,.](\d{1,9}))?")
_LEVEL = re.compile(r"\b(TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\b")


@lru_cache(maxsize=4096)
def _day_ms(day: str) -> int:
    moment = datetime(int(day[0:4]), int(day[5:7]), int(day[8:10]), tzinfo=UTC)
    return int(moment.timestamp()) * 1000


def timestamp_ms(text: str) -> tuple[int, str] | None:
    """``(ms since the epoch read as UTC, ISO-8601 text)`` of a log timestamp, or None."""
    found = _ISO.match(text)
    if found is None:
        return None
    day, clock, fraction = found.groups()
    try:
        hours, minutes, seconds = int(clock[0:2]), int(clock[3:5]), int(clock[6:8])
        if hours > 23 or minutes > 59 or seconds > 60:
            return None
        base = _day_ms(day)
    except ValueError:
        return None
    millis = int((fraction or "0")[:3].ljust(3, "0"))
    ts = base + ((hours * 60 + minutes) * 60 + seconds) * 1000 + millis
    iso = f"{day}T{clock}" + (f".{(fraction or '')[:3].ljust(3, '0')}" if fraction else "")
    return ts, iso


@dataclass(frozen=True, slots=True)
class Record:
    """A recognised line: when, which row (family, kind, versions), its fields, the line."""

    ts_ms: int
    at: str
    level: str
    family: str
    kind: str
    first: str
    versions: str
    fields: Mapping[str, str | int]
    line: str
    source: str = ""
    line_no: int = 0

    @property
    def group_id(self) -> str | None:
        value = self.fields.get("group_id")
        return None if value is None else str(value)

    def get_int(self, name: str) -> int | None:
        value = self.fields.get(name)
        return value if isinstance(value, int) else None

    def get_str(self, name: str) -> str | None:
        value = self.fields.get(name)
        return None if value is None else str(value)


def instance_id(value: object) -> str | None:
    """A logged ``group.instance.id``: Scala's ``None`` / ``Some(x)``, Java's ``null``."""
    if value is None:
        return None
    text = str(value)
    if text in {"None", "null", ""}:
        return None
    if text.startswith("Some(") and text.endswith(")"):
        return text[5:-1]
    return text


def parse_line(raw: str, source: str = "", line_no: int = 0) -> Record | str:
    """The record of one line, or ``OTHER`` / ``UNRECOGNISED`` (see the module docstring)."""
    if not any(marker in raw for marker in MARKERS):
        return OTHER
    line = raw.rstrip("\r\n")
    envelope = _LOG4J.search(line)
    if envelope is not None:
        body = line[envelope.end() :]
        tail = _LOGGER_TAIL.search(body)
        if tail is not None:
            body = body[: tail.start()]
        if _LOG4J.search(body) is not None:
            return UNRECOGNISED  # two lines interleaved by concurrent writers
        stamp = timestamp_ms(envelope.group(1))
        level = envelope.group(2)
        kept = line[envelope.start() :]
    else:
        client = line.find("[Consumer clientId=")
        if client < 0:
            return UNRECOGNISED
        body = line[client:]
        head = _ISO.search(line, 0, client)
        stamp = timestamp_ms(line[head.start() :]) if head is not None else None
        found_level = _LEVEL.search(line, 0, client)
        level = found_level.group(1) if found_level else "INFO"
        kept = line
    if stamp is None:
        return UNRECOGNISED
    family = family_of(body)
    if family is None:
        client = body.find("[Consumer clientId=")
        if client < 0:
            return OTHER if envelope is not None else UNRECOGNISED
        body, family = body[client:], Family.CLIENT
    match = parse(body, family)
    if match is None:
        return UNRECOGNISED
    fields = dict(match.fields)
    for name in ("instance_id",):
        if name in fields:
            fields[name] = instance_id(fields[name]) or ""
    row = match.format
    return Record(
        ts_ms=stamp[0],
        at=stamp[1],
        level=level,
        family=str(row.family),
        kind=str(row.kind),
        first=row.first,
        versions=row.versions,
        fields=fields,
        line=kept,
        source=source,
        line_no=line_no,
    )
