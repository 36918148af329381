"""Kafka's primitive encodings, and clear errors on bad bytes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.model.wire import ByteReader, ByteWriter, WireFormatError


def test_primitives_are_big_endian_with_kafka_lengths() -> None:
    data = (
        ByteWriter()
        .int16(1)
        .int32(-1)
        .string("ab")
        .nullable_string(None)
        .nullable_bytes(b"\x01")
        .int32_array([7])
        .getvalue()
    )
    assert data == (
        b"\x00\x01"
        + b"\xff\xff\xff\xff"
        + b"\x00\x02ab"
        + b"\xff\xff"
        + b"\x00\x00\x00\x01\x01"
        + b"\x00\x00\x00\x01\x00\x00\x00\x07"
    )
    reader = ByteReader(data)
    assert reader.int16() == 1
    assert reader.int32() == -1
    assert reader.string() == "ab"
    assert reader.nullable_string() is None
    assert reader.nullable_bytes() == b"\x01"
    assert reader.int32_array() == [7]
    assert reader.remaining == 0


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00", b"\x00\x05ab", b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe"],
)
def test_truncated_or_corrupt_input_raises_wire_format_error(data: bytes) -> None:
    with pytest.raises(WireFormatError):
        ByteReader(data).array(lambda r: r.string())


@given(st.lists(st.text(max_size=30), max_size=20))
@settings(max_examples=100, deadline=None)
def test_string_array_round_trip(items: list[str]) -> None:
    data = ByteWriter().array(items, ByteWriter.string).getvalue()
    assert ByteReader(data).array(ByteReader.string) == items


@given(st.binary(max_size=64))
@settings(max_examples=300, deadline=None)
def test_arbitrary_bytes_decode_or_raise_one_error(data: bytes) -> None:
    reader = ByteReader(data)
    try:
        items = reader.array(lambda r: (r.string(), r.int32_array()))
    except WireFormatError:
        return
    assert all(isinstance(name, str) and isinstance(ints, list) for name, ints in items)
