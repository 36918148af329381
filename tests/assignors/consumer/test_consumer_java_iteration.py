"""The Java iteration orders behind the KIP-848 assignors."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.consumer.java_iteration import (
    java_string_hashes,
    member_iteration_order,
    partition_set_order,
    topic_set_order,
)
from regroup.assignors.consumer.topic_index import TopicIndex, uuid_sort_key
from regroup.assignors.java_order import java_hashmap_order, java_string_hash
from regroup.model import Uuid
from tests.assignors.consumer.consumer_assignor_helpers import T1, T2, T3


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=30))
def test_vectorised_string_hash_matches_scalar(texts: list[str]) -> None:
    expected = [java_string_hash(t) & 0xFFFFFFFF for t in texts]
    assert java_string_hashes(texts).tolist() == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), max_size=40, unique=True))
def test_member_order_is_the_java_hash_map_order(ids: list[str]) -> None:
    assert member_iteration_order(ids) == java_hashmap_order(ids, java_string_hash)


def test_known_java_orders() -> None:
    # Verified against Java: consumer1..4 iterate as 4, 3, 2, 1; A, B, C in order.
    assert member_iteration_order([f"consumer{i}" for i in range(1, 5)]) == [
        "consumer4",
        "consumer3",
        "consumer2",
        "consumer1",
    ]
    assert member_iteration_order(["C", "A", "B"]) == ["A", "B", "C"]
    # Uuid.hashCode buckets (of 16): T2 -> 1, T3 -> 9, T1 -> 10.
    assert topic_set_order({T1, T2, T3}) == [T2, T3, T1]


def test_partition_set_order() -> None:
    assert partition_set_order({5, 1, 3}) == [1, 3, 5]
    # 16 buckets for three values: 17 -> bucket 1, 3 -> 3, 20 -> 4.
    assert partition_set_order({3, 17, 20}) == [17, 3, 20]
    assert partition_set_order(set()) == []


def test_topic_index_by_identity_and_value() -> None:
    index = TopicIndex([T1, T2])
    assert index.get(T2) == 1
    assert index.get(Uuid(T1.most_significant_bits, T1.least_significant_bits)) == 0
    assert index.get(T3) is None
    assert len(index) == 2
    assert sorted([T3, T1, T2], key=uuid_sort_key) == sorted([T3, T1, T2])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.text(min_size=1, max_size=6), max_size=12, unique=True), max_size=6))
def test_member_order_through_a_small_hash_memo(rounds: list[list[str]]) -> None:
    """The memo of member-id hashes never changes the order, even when it is emptied."""
    from regroup.assignors.consumer import java_iteration

    limit, memo = java_iteration._HASH_MEMO_LIMIT, dict(java_iteration._HASH_MEMO)
    java_iteration._HASH_MEMO_LIMIT = 8
    java_iteration._HASH_MEMO.clear()
    largest = 8
    try:
        for ids in rounds:
            largest = max(largest, len(ids))
            assert member_iteration_order(ids) == java_hashmap_order(ids, java_string_hash)
            assert len(java_iteration._HASH_MEMO) <= largest
    finally:
        java_iteration._HASH_MEMO_LIMIT = limit
        java_iteration._HASH_MEMO.clear()
        java_iteration._HASH_MEMO.update(memo)
