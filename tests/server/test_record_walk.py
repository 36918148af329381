"""The walk over a produced batch's records (rule 3 of ``regroup.server.log.record_batch``).

Each record is read by ``_common_record_end`` when it has the shape most records have and
the offset delta it must have, and by ``_any_record`` otherwise; the first is a shortcut
for speed and must never disagree with the second. These tests give both the same bytes,
well formed and not: whenever the shortcut reads a record, ``_any_record`` reads it too,
to the same end, and the walk as a whole gives what a walk with ``_any_record`` alone
gives, raising the same error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.server.log.partitions import encode_batch
from regroup.server.log.record_batch import (
    HEADER_SIZE,
    _any_record,
    _common_record_end,
    _walk_records,
    write_varint,
)


def sized(field: bytes | None, null_as: int = -1) -> bytes:
    """A length and the bytes; a null as ``null_as`` (Kafka reads any negative length
    as null, -1 is what clients write)."""
    return write_varint(null_as) if field is None else write_varint(len(field)) + field


record_fields = st.fixed_dictionaries(
    {
        "timestamp_delta": st.one_of(st.integers(0, 200), st.integers(0, 1 << 40)),
        "key": st.one_of(st.none(), st.binary(max_size=80)),
        "value": st.one_of(
            st.none(), st.binary(max_size=300), st.integers(8100, 8300).map(b"v".__mul__)
        ),
        "null_as": st.sampled_from([-1, -1, -2, -64, -65]),
        "headers": st.lists(
            st.tuples(
                st.one_of(st.binary(max_size=5), st.binary(max_size=5), st.none()),
                st.one_of(st.none(), st.binary(max_size=5)),
            ),
            max_size=2,
        ),
        "delta_shift": st.sampled_from([0, 0, 0, 1, -1, 1000, 20_000, 1 << 20]),
        # Bytes cut off the body's end, its length written after the cut: a record
        # whose own length is consistent but whose fields are not.
        "cut": st.sampled_from([0, 0, 0, 0, 1, 2]),
    }
)


def record(index: int, fields: dict[str, Any]) -> bytes:
    body = (
        b"\x00"
        + write_varint(fields["timestamp_delta"])
        + write_varint(index + fields["delta_shift"])
        + sized(fields["key"], fields["null_as"])
        + sized(fields["value"], fields["null_as"])
        + write_varint(len(fields["headers"]))
        + b"".join(sized(k) + sized(v) for k, v in fields["headers"])
    )
    body = body[: len(body) - fields["cut"]]
    return write_varint(len(body)) + body


def walk_with_any_record(data: bytes, count: int) -> tuple[int, int] | None:
    """The walk's result, every record read by ``_any_record``."""
    pos, misplaced = 0, None
    for index in range(count):
        _, pos, _, _, raw = _any_record(data, pos, len(data), index, count)
        delta = (raw >> 1) ^ -(raw & 1)
        if delta != index and misplaced is None:
            misplaced = (index, delta)
    if pos != len(data):
        raise KafkaProtocolError(ErrorCode.INVALID_RECORD, "records still remaining")
    return misplaced


def outcome(walk: Callable[[bytes, int], Any], data: bytes, count: int) -> Any:
    try:
        return walk(data, count)
    except KafkaProtocolError as error:
        return error.code


def fast_walk(data: bytes, count: int) -> tuple[int, int] | None:
    return _walk_records(data, 0, len(data), count)


def assert_shortcut_agrees(data: bytes) -> None:
    """At every position (of the first 600 bytes: the rest are a long value's), with the
    offset delta there and with another, ``_common_record_end`` reads nothing (-1) or
    the record ``_any_record`` reads, to the same end."""
    end = len(data)
    for pos in range(min(end, 600)):
        try:
            _, record_end, _, _, delta = _any_record(data, pos, end, 0, 1)
        except KafkaProtocolError:
            for other in (0, 2, 4, 128):
                assert _common_record_end(data, pos, end, other) == -1, pos
            continue
        assert _common_record_end(data, pos, end, delta) in (-1, record_end), pos
        assert _common_record_end(data, pos, end, delta + 2) == -1, pos


@settings(max_examples=300, deadline=None)
@given(st.lists(record_fields, min_size=1, max_size=12))
def test_the_shortcut_reads_well_formed_records_as_the_full_reader_does(
    fields: list[dict[str, Any]],
) -> None:
    data = b"".join(record(index, each) for index, each in enumerate(fields))
    assert outcome(fast_walk, data, len(fields)) == outcome(walk_with_any_record, data, len(fields))
    assert_shortcut_agrees(data)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(record_fields, min_size=1, max_size=6),
    st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=4),
    st.integers(0, 3),
    st.integers(-2, 2),
)
def test_the_shortcut_never_accepts_what_the_full_reader_refuses(
    fields: list[dict[str, Any]], flips: list[tuple[int, int]], cut: int, miscount: int
) -> None:
    """Bytes changed, cut short, or counted wrong: the two walks agree, error for error."""
    changed = bytearray(b"".join(record(index, each) for index, each in enumerate(fields)))
    for at, byte in flips:
        changed[at % len(changed)] = byte
    data = bytes(changed[: len(changed) - cut])
    count = max(0, len(fields) + miscount)
    assert outcome(fast_walk, data, count) == outcome(walk_with_any_record, data, count)
    assert_shortcut_agrees(data)


@given(st.binary(min_size=10, max_size=200))
def test_the_shortcut_on_arbitrary_bytes(data: bytes) -> None:
    assert_shortcut_agrees(data)


@pytest.mark.parametrize(("count", "value"), [(3000, b"x" * 100), (20_000, b"")])
def test_a_producers_batch_is_read_by_the_shortcut_alone(count: int, value: bytes) -> None:
    """kio's encoder, as a producer writes: null keys, values under 8 KiB, no headers;
    past 8,192 records the offset deltas take three bytes."""
    batch = encode_batch([value] * count, 1_700_000_000_000)
    pos, end = HEADER_SIZE, len(batch)
    for index in range(count - 1):  # the last record is shorter than the window
        pos = _common_record_end(batch, pos, end, 2 * index)
        assert pos > 0
    assert _walk_records(batch, HEADER_SIZE, end, count) is None


@pytest.mark.parametrize("index", [0, 1, 63, 64, 8191, 8192, 30_000])
def test_a_misplaced_offset_delta_is_found_by_either_reader(index: int) -> None:
    fields: dict[str, Any] = {
        "timestamp_delta": 0,
        "key": None,
        "value": b"v" * 20,
        "headers": [],
        "null_as": -1,
        "cut": 0,
    }
    records = [record(i, {**fields, "delta_shift": 0}) for i in range(index + 2)]
    records[index] = record(index, {**fields, "delta_shift": 5})
    data = b"".join(records)
    assert _walk_records(data, 0, len(data), index + 2) == (index, index + 5)


@pytest.mark.parametrize("null_as", [-1, -2, -64, -65])
@pytest.mark.parametrize("cut", [0, 1])
def test_a_short_record_with_any_null_key_is_read_alike(null_as: int, cut: int) -> None:
    """Kafka reads any negative key length as null: a record of a null key and an empty
    value, whole or without its header count, then a well-formed one."""
    short: dict[str, Any] = {"timestamp_delta": 0, "key": None, "value": b"", "headers": []}
    after = {**short, "value": b"v" * 20, "null_as": -1, "cut": 0}
    data = record(0, {**short, "null_as": null_as, "cut": cut, "delta_shift": 0}) + record(
        1, {**after, "delta_shift": 0}
    )
    assert outcome(fast_walk, data, 2) == outcome(walk_with_any_record, data, 2)
    assert (outcome(fast_walk, data, 2) == ErrorCode.INVALID_RECORD) == (cut == 1)
    assert_shortcut_agrees(data)


def test_every_width_of_every_field_is_read_alike() -> None:
    """Each field at the widths where the shortcut's reading changes (a varint of one to
    nine bytes for the timestamp delta, one to three for the offset delta, a null, short
    and long key, ...), every combination, each record followed by a plain one."""
    after: dict[str, Any] = {
        "timestamp_delta": 0,
        "key": None,
        "value": b"v",
        "headers": [],
        "null_as": -1,
        "cut": 0,
    }
    for stamp in (0, 100, 10_000, 1 << 20, 1 << 27, 1 << 34, 1 << 40, 1 << 62):
        for shift in (0, 100, 10_000):
            for key in (None, b"k" * 10, b"k" * 100):
                for value in (None, b"", b"v" * 100):
                    for headers in ([], [(b"h", b"v")]):
                        fields = {
                            "timestamp_delta": stamp,
                            "key": key,
                            "value": value,
                            "headers": headers,
                            "null_as": -1,
                            "cut": 0,
                            "delta_shift": shift,
                        }
                        data = record(0, fields) + record(1, {**after, "delta_shift": 0})
                        expected = outcome(walk_with_any_record, data, 2)
                        assert outcome(fast_walk, data, 2) == expected, fields
                        assert_shortcut_agrees(data)
