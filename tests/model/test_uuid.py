"""Kafka's Uuid semantics: text form, signed-half ordering, hash, reserved ids."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.model import Uuid

halves = st.integers(min_value=-(2**63), max_value=2**63 - 1)


def test_text_form_is_url_safe_base64_without_padding() -> None:
    # Kafka's UuidTest: new Uuid(0, 1) prints as "AAAAAAAAAAAAAAAAAAAAAQ".
    assert str(Uuid(0, 1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert str(Uuid(0, 0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    # -1 halves are all ones: URL-safe alphabet uses '_' for 63.
    assert str(Uuid(-1, -1)) == "_____________________w"


def test_parse_round_trip_and_errors() -> None:
    uuid = Uuid(0x1234_5678_9ABC_DEF0, -42)
    assert Uuid.from_string(str(uuid)) == uuid
    for bad in ("", "short", "!" * 22, "A" * 23):
        with pytest.raises(ValueError):
            Uuid.from_string(bad)


@given(halves, halves, halves, halves)
@settings(max_examples=200, deadline=None)
def test_order_is_signed_msb_then_signed_lsb(a: int, b: int, c: int, d: int) -> None:
    x, y = Uuid(a, b), Uuid(c, d)
    assert (x < y) == ((a, b) < (c, d))
    assert Uuid.from_string(str(x)) == x


def test_negative_msb_sorts_first() -> None:
    # Unlike a byte-wise comparison, Kafka's compareTo treats the halves as signed longs.
    assert Uuid(-1, 0) < Uuid(0, 0) < Uuid(1, -5) < Uuid(1, 5)


def test_java_hash_code() -> None:
    # hashCode = (int)(h >> 32) ^ (int)h with h = msb ^ lsb, as in Kafka's Uuid.
    assert Uuid(0, 1).java_hash_code() == 1
    assert Uuid(1 << 32, 0).java_hash_code() == 1
    assert Uuid(-1, 0).java_hash_code() == 0  # (-1 >> 32) ^ (int)-1 = -1 ^ -1
    assert Uuid(0, 0xFFFF_FFFF).java_hash_code() == -1


def test_random_is_injected_and_never_reserved() -> None:
    first = [Uuid.random(random.Random(7)) for _ in range(3)]
    assert first[0] == first[1] == first[2]
    rng = random.Random(1)
    for _ in range(500):
        uuid = Uuid.random(rng)
        assert uuid not in (Uuid.ZERO, Uuid.METADATA_TOPIC_ID)
        assert not str(uuid).startswith("-")


def test_for_name_is_deterministic_and_distinct() -> None:
    assert Uuid.for_name("orders") == Uuid.for_name("orders")
    assert Uuid.for_name("orders") != Uuid.for_name("payments")
    assert not str(Uuid.for_name("orders")).startswith("-")
