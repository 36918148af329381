"""Kafka's log4j layout, [%d] %p %m (%c)%n."""

from __future__ import annotations

import datetime

from regroup.brokerlog import PATTERN, format_line, timestamp
from regroup.brokerlog.layout import log4j_level


def test_the_pattern_is_kafkas() -> None:
    # config/log4j2.yaml (Kafka 4.x) and config/log4j.properties (2.x-3.x) alike.
    assert PATTERN == "[%d] %p %m (%c)%n"


def test_timestamp_is_log4j_default_date_format() -> None:
    ts = int(datetime.datetime(2026, 12, 2, 14, 3, 11, tzinfo=datetime.UTC).timestamp()) * 1000
    assert timestamp(ts + 123) == "2026-12-02 14:03:11,123"
    assert timestamp(ts + 7) == "2026-12-02 14:03:11,007"
    assert timestamp(0) == "1970-01-01 00:00:00,000"
    plus_one = datetime.timezone(datetime.timedelta(hours=1))
    assert timestamp(ts, plus_one) == "2026-12-02 15:03:11,000"


def test_a_whole_line() -> None:
    line = format_line(
        1_764_684_191_123,
        "INFO",
        "org.apache.kafka.coordinator.group.GroupMetadataManager",
        "[GroupCoordinator id=0 topic=__consumer_offsets partition=12] "
        "Stabilized group my-group generation 3 with 2 members.",
    )
    assert line == (
        "[2025-12-02 14:03:11,123] INFO [GroupCoordinator id=0 topic=__consumer_offsets "
        "partition=12] Stabilized group my-group generation 3 with 2 members. "
        "(org.apache.kafka.coordinator.group.GroupMetadataManager)"
    )


def test_levels_are_log4j_names() -> None:
    assert [log4j_level(x) for x in ("INFO", "warning", "WARN", "CRITICAL", "debug")] == [
        "INFO",
        "WARN",
        "WARN",
        "FATAL",
        "DEBUG",
    ]
