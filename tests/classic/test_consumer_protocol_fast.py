"""The consumer protocol's fast paths agree with the reference code, and the decode memo is exact.

``regroup.classic.protocol_fast`` must, on any input it accepts, return what
the ``ByteReader`` / ``ByteWriter`` reference returns, and must refuse
(``Irregular``) every input the reference refuses; well-formed input must not
be refused (else the fast path would silently never run).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.classic.api import Assignment, Subscription
from regroup.assignors.classic.sticky_engine.indexing import PartitionList, TopicIndex
from regroup.classic import protocol
from regroup.classic.protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from regroup.classic.protocol_fast import (
    Irregular,
    read_assignment,
    read_subscription,
    write_assignment,
    write_subscription,
)
from regroup.model import TopicPartition

TP = TopicPartition

kafka_topic = st.from_regex(r"[a-zA-Z0-9._-]{1,12}", fullmatch=True)
# Any text, lone surrogates included: they cannot be written as UTF-8 (both paths refuse).
wild_text = st.text(st.characters(), max_size=6)
topic_name = st.one_of(kafka_topic, wild_text)
int32 = st.integers(-(2**31), 2**31 - 1)
partition = st.one_of(st.integers(0, 64), int32, st.integers(2**31, 2**40))
topic_partition = st.builds(TP, topic_name, partition)
user_data = st.one_of(st.none(), st.binary(max_size=24))
subscriptions = st.builds(
    Subscription,
    topics=st.lists(topic_name, max_size=5),
    user_data=user_data,
    owned_partitions=st.lists(topic_partition, max_size=12),
    generation_id=st.one_of(int32, st.integers(-(2**40), 2**40)),
    rack_id=st.one_of(st.none(), wild_text),
)
assignments = st.builds(
    Assignment, partitions=st.lists(topic_partition, max_size=12), user_data=user_data
)


def _outcome(call: object, *args: object) -> tuple[str, object]:
    try:
        return "ok", call(*args)  # type: ignore[operator]
    except Irregular:
        return "irregular", None
    except ConsumerProtocolError:
        return "error", None


@settings(max_examples=400, deadline=None)
@given(subscriptions, st.integers(0, 3))
def test_subscription_writer_matches_the_reference(
    subscription: Subscription, version: int
) -> None:
    fast = _outcome(write_subscription, subscription, version)
    reference = _outcome(protocol._write_subscription_reference, subscription, version)
    if reference[0] == "ok":
        assert fast == reference
    else:
        assert fast[0] == "irregular"


@settings(max_examples=400, deadline=None)
@given(assignments, st.integers(0, 3))
def test_assignment_writer_matches_the_reference(assignment: Assignment, version: int) -> None:
    fast = _outcome(write_assignment, assignment, version)
    reference = _outcome(protocol._write_assignment_reference, assignment, version)
    if reference[0] == "ok":
        assert fast == reference
    else:
        assert fast[0] == "irregular"


def _mutations(data: bytes, cut: int, flip: int, value: int) -> list[bytes]:
    """The bytes, truncated, with one byte replaced, and with garbage appended."""
    out = [data, data[: cut % (len(data) + 1)], data + bytes([value])]
    if data:
        i = flip % len(data)
        out.append(data[:i] + bytes([value]) + data[i + 1 :])
    return out


def _check_reader(fast_read: object, reference_read: object, data: bytes, valid: bool) -> None:
    fast = _outcome(fast_read, data)
    reference = _outcome(reference_read, data)
    if reference[0] == "ok":
        assert fast == reference
    else:
        assert fast[0] == "irregular"
    if valid:
        assert fast[0] == "ok"  # well-formed input takes the fast path


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(subscriptions.filter(lambda s: _writable(s)), st.just(Subscription(topics=()))),
    st.integers(0, 3),
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.integers(0, 255),
)
def test_subscription_reader_matches_the_reference(
    subscription: Subscription, version: int, cut: int, flip: int, value: int
) -> None:
    data = encode_subscription(subscription, version)
    for i, candidate in enumerate(_mutations(data, cut, flip, value)):
        _check_reader(
            read_subscription, protocol._read_subscription_reference, candidate, valid=i == 0
        )


@settings(max_examples=400, deadline=None)
@given(
    assignments.filter(lambda a: _writable(a)),
    st.integers(0, 3),
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.integers(0, 255),
)
def test_assignment_reader_matches_the_reference(
    assignment: Assignment, version: int, cut: int, flip: int, value: int
) -> None:
    data = encode_assignment(assignment, version)
    for i, candidate in enumerate(_mutations(data, cut, flip, value)):
        _check_reader(read_assignment, protocol._read_assignment_reference, candidate, valid=i == 0)


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=64))
def test_readers_match_the_reference_on_arbitrary_bytes(data: bytes) -> None:
    _check_reader(read_subscription, protocol._read_subscription_reference, data, valid=False)
    _check_reader(read_assignment, protocol._read_assignment_reference, data, valid=False)


def _writable(value: Subscription | Assignment) -> bool:
    try:
        if isinstance(value, Subscription):
            encode_subscription(value)
        else:
            encode_assignment(value)
    except ConsumerProtocolError:
        return False
    return True


def test_the_decode_memo_returns_the_same_frozen_value_for_equal_bytes() -> None:
    data = encode_assignment(Assignment((TP("a", 1), TP("b", 0), TP("a", 0)), b"u"))
    first = decode_assignment(data)
    assert first == Assignment((TP("a", 1), TP("a", 0), TP("b", 0)), b"u")
    # Equal bytes of another object and type: the memoised (immutable) value.
    assert decode_assignment(bytearray(data)) is first
    assert decode_assignment(memoryview(bytes(data))) is first
    subscription = Subscription(("t",), None, (TP("t", 3),), 4, "r1")
    encoded = encode_subscription(subscription)
    assert decode_subscription(encoded) is decode_subscription(bytes(bytearray(encoded)))
    assert decode_subscription(encoded) == subscription


def test_errors_are_not_memoised() -> None:
    for _ in range(2):
        with pytest.raises(
            ConsumerProtocolError, match="malformed assignment v0: array of 1 elements"
        ):
            decode_assignment(b"\x00\x00\x00\x00\x00\x01")
        with pytest.raises(ConsumerProtocolError, match="unsupported subscription version -1"):
            decode_subscription(b"\xff\xff")


def test_the_memo_is_bounded() -> None:
    for i in range(protocol.DECODE_CACHE_SIZE + 10):
        decode_assignment(encode_assignment(Assignment((TP("bounded", i),))))
    info = protocol._decode_assignment_bytes.cache_info()
    assert info.currsize <= protocol.DECODE_CACHE_SIZE


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(kafka_topic, st.integers(1, 8), min_size=1, max_size=4),
    st.lists(st.integers(0, 10_000), max_size=20),
    user_data,
)
def test_a_sticky_partition_list_is_written_as_its_partitions(
    counts: dict[str, int], picks: list[int], data: bytes | None
) -> None:
    # The sticky assignors hand back PartitionList (global indices, any order): the writer
    # groups it without building tuples, and must write exactly the tuples' bytes.
    index = TopicIndex(counts)
    indices = np.array([p % index.total for p in picks], dtype=np.int64)
    partitions = PartitionList(index, indices)
    as_tuples = tuple(partitions)
    grouped: dict[str, list[int]] = {}
    for topic, number in as_tuples:
        grouped.setdefault(topic, []).append(number)
    assert partitions.by_topic() == list(grouped.items())
    for version in range(4):
        assert write_assignment(Assignment(partitions, data), version) == (
            protocol._write_assignment_reference(Assignment(as_tuples, data), version)
        )
