"""Kafka's rack-aware sticky cases (KIP-881), ported with their exact expected outputs.

Kafka: ``AbstractStickyAssignorTest.testRackAwareAssignmentWithUniformSubscription`` and
``testRackAwareAssignmentWithNonEqualSubscription``, which use
``AbstractPartitionAssignorTest.verifyRackAssignment``: topics t1 (6), t2 (7),
t3 (2); broker ``i`` on ``brokerRacks[i]``; replica ``j`` of partition ``p``
of a topic on broker ``(p + j + first) % brokers`` where ``first`` counts the
partitions of the topics before it; consumers ``consumer0..2`` in a Java
``HashMap`` created with capacity 3; expected assignments as sorted strings.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from regroup.assignors.classic.api import ClusterMetadata, GroupSubscription, Subscription
from regroup.assignors.classic.cooperative_sticky import CooperativeStickyAssignor
from regroup.assignors.classic.sticky import StickyAssignor
from regroup.model import TopicPartition

ALL_RACKS = ("a", "b", "c", "d", "e", "f")
TOPICS = {"t1": 6, "t2": 7, "t3": 2}
ALL = ["t1", "t2", "t3"]

Assignor = StickyAssignor | CooperativeStickyAssignor


def racks(n: int) -> list[str | None]:
    return [ALL_RACKS[i % len(ALL_RACKS)] for i in range(n)]


def null_racks(n: int) -> list[str | None]:
    return [None] * n


def _partition_racks(
    rf: int, broker_racks: Sequence[str | None]
) -> dict[str, list[frozenset[str]]]:
    out: dict[str, list[frozenset[str]]] = {}
    first = 0
    brokers = len(broker_racks)
    for topic, count in TOPICS.items():
        out[topic] = [
            frozenset(r for j in range(rf) if (r := broker_racks[(p + j + first) % brokers]))
            for p in range(count)
        ]
        first += count
    return out


def _parse(text: str | None) -> list[TopicPartition]:
    return [TopicPartition.parse(s) for s in text.split(", ")] if text else []


def verify_rack_assignment(
    assignor: Assignor,
    rf: int,
    broker_racks: Sequence[str | None],
    consumer_racks: Sequence[str | None],
    consumer_topics: Sequence[Sequence[str]],
    owned: Sequence[str] | None,
    expected: Sequence[str],
    mismatches: int,
) -> None:
    """Kafka: ``AbstractPartitionAssignorTest.verifyRackAssignment``."""
    partition_racks = _partition_racks(rf, broker_racks)
    metadata = ClusterMetadata(dict(TOPICS), partition_racks)
    subscriptions = {
        f"consumer{i}": Subscription(
            list(topics),
            owned_partitions=_parse(owned[i]) if owned and i < len(owned) else [],
            rack_id=consumer_racks[i],
        )
        for i, topics in enumerate(consumer_topics)
    }
    result = assignor.assign_with_details(
        metadata, GroupSubscription(subscriptions), member_map_capacity=len(consumer_racks)
    )
    actual = {m: ", ".join(sorted(str(p) for p in ps)) for m, ps in result.assignment.items()}
    assert actual == {f"consumer{i}": text for i, text in enumerate(expected)}
    if mismatches >= 0:
        found = [
            p
            for i, rack in enumerate(consumer_racks)
            if rack is not None
            for p in result.assignment[f"consumer{i}"]
            if rack not in partition_racks[p.topic][p.partition]
        ]
        assert len(found) == mismatches, found


def _both(
    assignor: Assignor,
    rf: int,
    broker_racks: Sequence[str | None],
    consumer_racks: Sequence[str | None],
    topics: Sequence[Sequence[str]],
    expected: Sequence[str],
    mismatches: int,
) -> None:
    """Kafka: ``verifyUniformSubscription`` / ``verifyNonEqualSubscription``: fresh, then
    with the expected assignment already owned."""
    verify_rack_assignment(
        assignor, rf, broker_racks, consumer_racks, topics, None, expected, mismatches
    )
    verify_rack_assignment(
        assignor, rf, broker_racks, consumer_racks, topics, expected, expected, mismatches
    )


@pytest.mark.parametrize("kind", ["sticky", "cooperative"])
def test_rack_aware_assignment_with_uniform_subscription(kind: str) -> None:
    # Kafka: testRackAwareAssignmentWithUniformSubscription
    assignor: Assignor = StickyAssignor() if kind == "sticky" else CooperativeStickyAssignor()
    topics = [ALL, ALL, ALL]
    plain = [
        "t1-0, t1-3, t2-0, t2-3, t2-6",
        "t1-1, t1-4, t2-1, t2-4, t3-0",
        "t1-2, t1-5, t2-2, t2-5, t3-1",
    ]
    _both(assignor, 3, null_racks(3), racks(3), topics, plain, -1)
    _both(assignor, 3, racks(3), null_racks(3), topics, plain, -1)
    assignor.prefer_rack_aware_logic = True
    _both(assignor, 3, racks(3), racks(3), topics, plain, 0)
    _both(assignor, 4, racks(4), racks(3), topics, plain, 0)
    assignor.prefer_rack_aware_logic = False
    _both(assignor, 3, racks(3), racks(3), topics, plain, 0)
    _both(assignor, 3, racks(3), ["d", "e", "f"], topics, plain, -1)
    _both(assignor, 3, racks(3), [None, "e", "f"], topics, plain, -1)
    # Rack-aligned for lower replication factors where brokers hold a subset.
    _both(assignor, 1, racks(3), racks(3), topics, plain, 0)
    _both(assignor, 2, racks(3), racks(3), topics, plain, 0)
    # One consumer on a rack without partitions: misaligned to keep the balance.
    _both(assignor, 3, racks(2), racks(3), topics, plain, 5)

    owned = [
        "t1-0, t1-1, t1-2, t1-3, t1-4",
        "t1-5, t2-0, t2-1, t2-2, t2-3",
        "t2-4, t2-5, t2-6, t3-0, t3-1",
    ]
    if kind == "cooperative":
        # Misaligned owned partitions are revoked first (withheld from their new owners).
        verify_rack_assignment(
            assignor, 1, racks(3), racks(3), topics, owned, ["t1-0, t1-3", "t2-1", "t2-5, t3-1"], 0
        )
    else:
        # sticky reads ownership only from its user data, so "owned" here changes nothing.
        verify_rack_assignment(assignor, 1, racks(3), racks(3), topics, owned, plain, 0)
    # Stickiness is kept when racks match.
    assignor.prefer_rack_aware_logic = True
    verify_rack_assignment(assignor, 3, racks(3), racks(3), topics, plain, plain, 0)


@pytest.mark.parametrize("kind", ["sticky", "cooperative"])
def test_rack_aware_assignment_with_non_equal_subscription(kind: str) -> None:
    # Kafka: testRackAwareAssignmentWithNonEqualSubscription
    assignor: Assignor = StickyAssignor() if kind == "sticky" else CooperativeStickyAssignor()
    topics = [ALL, ALL, ["t1", "t3"]]
    plain = [
        "t1-5, t2-0, t2-2, t2-4, t2-6",
        "t1-3, t2-1, t2-3, t2-5, t3-0",
        "t1-0, t1-1, t1-2, t1-4, t3-1",
    ]
    _both(assignor, 3, null_racks(3), racks(3), topics, plain, -1)
    _both(assignor, 3, racks(3), null_racks(3), topics, plain, -1)
    assignor.prefer_rack_aware_logic = True
    _both(assignor, 3, racks(3), racks(3), topics, plain, 0)
    _both(assignor, 4, racks(4), racks(3), topics, plain, 0)
    assignor.prefer_rack_aware_logic = False
    _both(assignor, 3, racks(3), racks(3), topics, plain, 0)
    _both(assignor, 3, racks(3), ["d", "e", "f"], topics, plain, -1)
    _both(assignor, 3, racks(3), [None, "e", "f"], topics, plain, -1)

    rf1 = [
        "t1-3, t2-0, t2-2, t2-3, t2-6",
        "t1-4, t2-1, t2-4, t2-5, t3-0",
        "t1-0, t1-1, t1-2, t1-5, t3-1",
    ]
    _both(assignor, 1, racks(3), racks(3), topics, rf1, 4)
    rf2 = [
        "t1-3, t2-0, t2-2, t2-5, t2-6",
        "t1-0, t2-1, t2-3, t2-4, t3-0",
        "t1-1, t1-2, t1-4, t1-5, t3-1",
    ]
    _both(assignor, 2, racks(3), racks(3), topics, rf2, 0)
    _both(assignor, 3, racks(2), racks(3), topics, plain, 5)

    owned = [
        "t1-0, t1-1, t1-2, t1-3, t1-4",
        "t1-5, t2-0, t2-1, t2-2, t2-3",
        "t2-4, t2-5, t2-6, t3-0, t3-1",
    ]
    if kind == "sticky":
        verify_rack_assignment(assignor, 1, racks(3), racks(3), topics, owned, rf1, 4)
        assignor.prefer_rack_aware_logic = False
        verify_rack_assignment(assignor, 3, racks(3), racks(3), topics, owned, plain, 0)
        assignor.prefer_rack_aware_logic = True
        verify_rack_assignment(assignor, 3, racks(3), racks(3), topics, owned, plain, 0)
    else:
        intermediate = ["t1-3", "t2-1", "t3-1"]
        verify_rack_assignment(assignor, 1, racks(3), racks(3), topics, owned, intermediate, 0)
        verify_rack_assignment(assignor, 1, racks(3), racks(3), topics, intermediate, rf1, 4)
        final = [
            "t1-2, t1-3, t1-4, t2-4, t2-5",
            "t2-0, t2-1, t2-2, t2-3, t2-6",
            "t1-0, t1-1, t1-5, t3-0, t3-1",
        ]
        intermediate = ["t1-2, t1-3, t1-4", "t2-0, t2-1, t2-2, t2-3", "t3-0, t3-1"]
        for prefer in (False, True):
            assignor.prefer_rack_aware_logic = prefer
            verify_rack_assignment(assignor, 3, racks(3), racks(3), topics, owned, intermediate, 0)
            verify_rack_assignment(assignor, 3, racks(3), racks(3), topics, intermediate, final, 0)


def test_uniform_subscription_transfer_ownership_list_is_right() -> None:
    # Kafka: CooperativeStickyAssignorTest.testUniformSubscriptionTransferOwnershipListIsRight
    # (replication factor 1, two broker racks a/b; c0 on a, c1 on b)
    assignor = CooperativeStickyAssignor()
    metadata = ClusterMetadata(
        {"topic1": 4},
        {"topic1": [frozenset({"a"}), frozenset({"b"}), frozenset({"a"}), frozenset({"b"})]},
    )
    user_data = assignor.subscription_user_data({"topic1"})
    subscriptions = {
        "c0": Subscription(
            ["topic1"],
            user_data,
            [TopicPartition("topic1", 0), TopicPartition("topic1", 1)],
            generation_id=1,
            rack_id="a",
        ),
        "c1": Subscription(
            ["topic1"],
            user_data,
            [TopicPartition("topic1", 2), TopicPartition("topic1", 3)],
            generation_id=1,
            rack_id="b",
        ),
    }
    result = assignor.assign_with_details(metadata, GroupSubscription(subscriptions))
    assert result.partitions_transferring_ownership is not None
    assert len(result.partitions_transferring_ownership) == 2
