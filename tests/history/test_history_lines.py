"""One raw line -> a record: Kafka's envelope, deployment prefixes, damage, and real lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from regroup.history.lines import OTHER, UNRECOGNISED, Record, parse_line, timestamp_ms

DATA = Path(__file__).parent / "data"

STABILIZED = (
    "[2026-12-02 14:03:11,123] INFO [GroupCoordinator 2]: Stabilized group payments generation "
    "41 (__consumer_offsets-17) with 12 members (kafka.coordinator.group.GroupCoordinator)"
)


def _record(line: str) -> Record:
    outcome = parse_line(line)
    assert isinstance(outcome, Record), outcome
    return outcome


def test_a_log4j_line_becomes_a_record_with_its_time_and_fields() -> None:
    record = _record(STABILIZED)
    assert record.kind == "group_stabilized"
    assert record.family == "scala-group-coordinator"
    assert record.at == "2026-12-02T14:03:11.123"
    assert record.ts_ms == 1_796_220_191_123
    assert record.level == "INFO"
    assert dict(record.fields) == {
        "broker_id": 2,
        "group_id": "payments",
        "generation": 41,
        "offsets_partition": 17,
        "members": 12,
    }
    assert record.line == STABILIZED


@pytest.mark.parametrize(
    "prefix",
    [
        "kafka_1  | ",
        "kafka-broker-2  | ",
        "2026-12-02T14:03:11.123456789Z ",
        "2026-12-02T14:03:11.123456789Z stdout F ",
        "Dec  2 14:03:11 broker-2 kafka[2211]: ",
    ],
)
def test_deployment_prefixes_are_skipped(prefix: str) -> None:
    record = _record(prefix + STABILIZED)
    assert record.at == "2026-12-02T14:03:11.123"
    assert record.fields["members"] == 12
    assert record.line == STABILIZED


def test_other_broker_lines_are_other_and_not_parsed() -> None:
    assert parse_line("[2026-12-02 14:03:11,123] INFO [LocalLog partition=a-0] Rolled (x)") == OTHER
    assert parse_line("") == OTHER
    assert parse_line("\x00\x01 binary junk GroupCoordinator") == UNRECOGNISED


@pytest.mark.parametrize(
    "damaged",
    [
        STABILIZED[:60],  # cut inside the prefix
        STABILIZED[:-52],  # cut inside the message
        STABILIZED[:95] + STABILIZED,  # two writers interleaved
        "[2026-13-45 14:03:11,123] INFO [GroupCoordinator 2]: Stabilized group g generation 1 "
        "(__consumer_offsets-1) with 1 members (kafka.coordinator.group.GroupCoordinator)",
        "[GroupCoordinator 2]: Stabilized group g generation 1 (__consumer_offsets-1) with 1 "
        "members",
    ],
)
def test_truncated_interleaved_or_timeless_coordinator_lines_are_unrecognised(damaged: str) -> None:
    assert parse_line(damaged) == UNRECOGNISED


def test_a_coordinator_line_of_another_message_is_unrecognised() -> None:
    line = (
        "[2026-12-02 14:03:11,123] INFO [GroupCoordinator 2]: Startup complete. "
        "(kafka.coordinator.group.GroupCoordinator)"
    )
    assert parse_line(line) == UNRECOGNISED


def test_a_client_line_in_an_applications_own_layout() -> None:
    line = (
        "2026-12-02 14:03:11.123  WARN 1 --- [orders-app-0] o.a.k.c.c.internals.ConsumerCoordinator"
        "  : [Consumer clientId=consumer-orders-1, groupId=orders] consumer poll timeout has "
        "expired. This means the time between subsequent calls to poll() was longer than the "
        "configured max.poll.interval.ms, which typically implies that the poll loop is spending "
        "too much time processing messages. You can address this either by increasing "
        "max.poll.interval.ms or by reducing the maximum size of batches returned in poll() "
        "with max.poll.records."
    )
    record = _record(line)
    assert record.kind == "client_poll_timeout"
    assert record.group_id == "orders"
    assert record.fields["client_id"] == "consumer-orders-1"
    assert record.level == "WARN"
    assert record.at == "2026-12-02T14:03:11.123"


def test_scala_option_instance_ids_are_normalised() -> None:
    line = (
        "[2020-05-01 10:00:00,000] INFO [GroupCoordinator 0]: Member[group.instance.id "
        "Some(app-3), member.id app-3-77] in group g has left, removing it from the group "
        "(kafka.coordinator.group.GroupCoordinator)"
    )
    assert _record(line).fields["instance_id"] == "app-3"
    dynamic = line.replace("Some(app-3)", "None")
    assert _record(dynamic).fields["instance_id"] == ""


def test_timestamps() -> None:
    assert timestamp_ms("2026-12-02 14:03:11,123") == (1_796_220_191_123, "2026-12-02T14:03:11.123")
    assert timestamp_ms("2026-12-02T14:03:11.5") == (1_796_220_191_500, "2026-12-02T14:03:11.500")
    assert timestamp_ms("2026-12-02T14:03:11") == (1_796_220_191_000, "2026-12-02T14:03:11")
    assert timestamp_ms("2026-12-02T25:03:11") is None
    assert timestamp_ms("not a time") is None


def _public_cases() -> list[tuple[str, str, str, dict[str, str]]]:
    cases = []
    source, expect = "", ""
    for line in (DATA / "public-lines.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("# source: "):
            source = line.removeprefix("# source: ")
        elif line.startswith("# expect: "):
            expect = line.removeprefix("# expect: ")
        elif line and not line.startswith("#"):
            kind, _, rest = expect.partition(" ")
            fields = {}
            for part in rest.split(" ") if rest else []:
                if "=" in part:
                    name, _, value = part.partition("=")
                    fields[name] = value
                elif fields:  # a value with spaces continues the last field
                    last = list(fields)[-1]
                    fields[last] += " " + part
            cases.append((source, line, kind, fields))
            expect = ""
    return cases


PUBLIC = _public_cases()


def test_the_public_fixture_holds_lines_of_several_threads() -> None:
    assert len(PUBLIC) >= 12
    assert len({source for source, *_ in PUBLIC}) >= 4


@pytest.mark.parametrize(("source", "line", "kind", "fields"), PUBLIC)
def test_lines_users_posted_parse_as_kafka_wrote_them(
    source: str, line: str, kind: str, fields: dict[str, str]
) -> None:
    outcome = parse_line(line, source)
    if kind == "unrecognised":
        assert outcome == UNRECOGNISED
        return
    assert isinstance(outcome, Record), (source, line)
    assert outcome.kind == kind
    for name, value in fields.items():
        assert str(outcome.fields[name]) == value, name
