"""The coordinator partition of a group: Java's String.hashCode, Kafka's Utils.abs, modulo."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from regroup.brokerlog import DEFAULT_OFFSETS_PARTITIONS, coordinator_partition, java_string_hash


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("ab", 97 * 31 + 98),
        ("hello", 99162322),
        # Wraps around 2^31 (Java's int arithmetic).
        ("my-group", -1906497762),
        # The one famous string whose hashCode is Integer.MIN_VALUE.
        ("polygenelubricants", -(2**31)),
        # Non-ASCII: UTF-16 code units; a character outside the BMP is two of them.
        ("é", 0xE9),
        ("\U0001f600", 0xD83D * 31 + 0xDE00),
    ],
)
def test_java_string_hash_matches_java(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


@pytest.mark.parametrize(
    ("group_id", "partition"),
    [
        # Public broker logs, which print the group's __consumer_offsets partition beside it:
        # "Stabilized group test_consumer generation 14 (__consumer_offsets-7)"
        # (github.com/spreedly/kaffe/issues/92, Kafka 2.3) and
        # "... group stl-jss-product-event-reader-group ... (__consumer_offsets-45)"
        # (github.com/ClickHouse/ClickHouse/issues/33433).
        ("test_consumer", 7),
        ("stl-jss-product-event-reader-group", 45),
        ("my-group", 12),
        # Utils.abs(Integer.MIN_VALUE) is 0, not a negative partition.
        ("polygenelubricants", 0),
        ("", 0),
    ],
)
def test_coordinator_partition_of_known_groups(group_id: str, partition: int) -> None:
    assert coordinator_partition(group_id) == partition


def test_partition_count_is_a_setting() -> None:
    assert DEFAULT_OFFSETS_PARTITIONS == 50
    assert coordinator_partition("my-group", 1) == 0
    assert coordinator_partition("a", 10) == 7
    with pytest.raises(ValueError, match="at least 1"):
        coordinator_partition("a", 0)


@given(st.text(max_size=40), st.integers(min_value=1, max_value=1000))
def test_partition_is_in_range_and_a_32_bit_hash(group_id: str, partitions: int) -> None:
    h = java_string_hash(group_id)
    assert -(2**31) <= h < 2**31
    assert 0 <= coordinator_partition(group_id, partitions) < partitions
