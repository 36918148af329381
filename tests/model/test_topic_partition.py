"""TopicPartition text form and order."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.model import TopicPartition, sorted_partitions, topic_partition

topic_names = st.text(
    alphabet=st.characters(whitelist_categories=("Ll", "Lu", "Nd"), whitelist_characters="-._"),
    min_size=1,
    max_size=20,
)


def test_prints_like_kafka() -> None:
    assert str(TopicPartition("orders", 3)) == "orders-3"


def test_parse_splits_at_the_last_dash() -> None:
    assert TopicPartition.parse("my-topic-12") == TopicPartition("my-topic", 12)


@pytest.mark.parametrize(
    "bad", ["", "orders", "orders-", "-3", "orders-x", "orders-1.5", "orders-+1"]
)
def test_parse_rejects_malformed(bad: str) -> None:
    with pytest.raises(ValueError, match="partition"):
        TopicPartition.parse(bad)


@given(topic_names, st.integers(min_value=0, max_value=10_000))
@settings(max_examples=200, deadline=None)
def test_parse_round_trip(topic: str, partition: int) -> None:
    tp = TopicPartition(topic, partition)
    assert TopicPartition.parse(str(tp)) == tp


def test_callback_order_is_topic_then_partition() -> None:
    parts = [TopicPartition("b", 0), TopicPartition("a", 10), TopicPartition("a", 2)]
    assert sorted_partitions(parts) == [
        TopicPartition("a", 2),
        TopicPartition("a", 10),
        TopicPartition("b", 0),
    ]


@given(topic_names, st.integers(min_value=0, max_value=10_000))
@settings(max_examples=200, deadline=None)
def test_the_fast_constructor_makes_the_same_partition(topic: str, partition: int) -> None:
    made = topic_partition(topic, partition)
    expected = TopicPartition(topic, partition)
    assert type(made) is TopicPartition
    assert made == expected and hash(made) == hash(expected)
    assert (made.topic, made.partition, str(made)) == (topic, partition, str(expected))


partition_lists = st.lists(
    st.builds(
        TopicPartition,
        st.sampled_from(["a", "b", "orders", "orders-dlq"]),
        st.integers(min_value=-3, max_value=300),
    ),
    max_size=40,
)


@given(partition_lists, st.booleans())
@settings(max_examples=300, deadline=None)
def test_sorted_partitions_sorts_as_the_tuples_sort(
    parts: list[TopicPartition], one_topic: bool
) -> None:
    """The one-topic shortcut (by number alone) gives what sorting the tuples gives."""
    if one_topic:
        parts = [TopicPartition("orders", tp.partition) for tp in parts]
    assert sorted_partitions(parts) == sorted(parts)
    assert sorted_partitions(frozenset(parts)) == sorted(set(parts))


def test_sorted_partitions_gives_a_new_list() -> None:
    parts = [TopicPartition("t", 1), TopicPartition("t", 0)]
    ordered = sorted_partitions(parts)
    assert ordered == [TopicPartition("t", 0), TopicPartition("t", 1)]
    assert parts == [TopicPartition("t", 1), TopicPartition("t", 0)]
