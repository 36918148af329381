"""``cooperative-sticky`` and ``sticky`` as KIP-429 assignors, and their result type.

Names, supported protocols, Kafka class names, the ``GroupAssignment`` shape,
a cooperative rebalance followed round by round, and the lazy
``PartitionList`` behaving like a tuple of ``TopicPartition``.
"""

from __future__ import annotations

from regroup.assignors.classic.api import (
    ClusterMetadata,
    GroupSubscription,
    RebalanceProtocol,
    Subscription,
)
from regroup.assignors.classic.cooperative_sticky import CooperativeStickyAssignor
from regroup.assignors.classic.registry import create_classic_assignor
from regroup.assignors.classic.sticky import StickyAssignor
from regroup.assignors.classic.sticky_engine import PartitionList, TopicIndex
from regroup.model import TopicPartition

TP = TopicPartition


def test_names_and_protocols() -> None:
    assert CooperativeStickyAssignor.name == "cooperative-sticky"
    assert CooperativeStickyAssignor().supported_protocols() == (
        RebalanceProtocol.COOPERATIVE,
        RebalanceProtocol.EAGER,
    )
    assert StickyAssignor.name == "sticky"
    assert StickyAssignor().supported_protocols() == (RebalanceProtocol.EAGER,)
    assert CooperativeStickyAssignor().version() == 0


def test_kafka_class_names_resolve() -> None:
    cooperative = create_classic_assignor(
        "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
    )
    assert isinstance(cooperative, CooperativeStickyAssignor)
    sticky = create_classic_assignor("org.apache.kafka.clients.consumer.StickyAssignor")
    assert isinstance(sticky, StickyAssignor)


def test_group_assignment_has_every_member_and_no_user_data() -> None:
    subscriptions = {
        "a": Subscription(["t"]),
        "b": Subscription(["t"]),
        "idle": Subscription(["missing"]),
    }
    result = CooperativeStickyAssignor().assign(
        ClusterMetadata({"t": 3, "unrelated": 5}), GroupSubscription(subscriptions)
    )
    assert set(result.assignments) == {"a", "b", "idle"}
    assert all(a.user_data is None for a in result.assignments.values())
    assert result.assignments["a"].partitions == [TP("t", 0), TP("t", 2)]
    assert result.assignments["b"].partitions == [TP("t", 1)]
    assert result.assignments["idle"].partitions == []


def test_cooperative_rebalance_round_by_round() -> None:
    # A third member joins two members owning 3 partitions each (generation 4). Round 1
    # withholds what moves (t-2 from a, t-5 from b); after a and b revoke them, round 2
    # hands them to c.
    assignor = CooperativeStickyAssignor()
    metadata = ClusterMetadata({"t": 6})
    a_owned = [TP("t", 0), TP("t", 1), TP("t", 2)]
    b_owned = [TP("t", 3), TP("t", 4), TP("t", 5)]
    round1 = assignor.assign_with_details(
        metadata,
        GroupSubscription(
            {
                "a": Subscription(["t"], owned_partitions=a_owned, generation_id=4),
                "b": Subscription(["t"], owned_partitions=b_owned, generation_id=4),
                "c": Subscription(["t"], generation_id=4),
            }
        ),
    )
    assert round1.assignment == {
        "a": [TP("t", 0), TP("t", 1)],
        "b": [TP("t", 3), TP("t", 4)],
        "c": [],
    }
    assert round1.partitions_transferring_ownership == {TP("t", 2): "c", TP("t", 5): "c"}
    round2 = assignor.assign(
        metadata,
        GroupSubscription(
            {
                m: Subscription(["t"], owned_partitions=list(p), generation_id=5)
                for m, p in round1.assignment.items()
            }
        ),
    )
    assert {m: list(a.partitions) for m, a in round2.assignments.items()} == {
        "a": [TP("t", 0), TP("t", 1)],
        "b": [TP("t", 3), TP("t", 4)],
        "c": [TP("t", 2), TP("t", 5)],
    }


def test_partition_list_behaves_like_a_tuple() -> None:
    index = TopicIndex({"b": 2, "a": 3})
    assert index.names == ("a", "b")
    partitions = PartitionList(index, index.to_global([TP("b", 1), TP("a", 0), TP("a", 2)]))
    expected = (TP("b", 1), TP("a", 0), TP("a", 2))
    assert len(partitions) == 3
    assert tuple(partitions) == expected
    assert partitions == list(expected) and partitions == expected
    assert partitions != [TP("a", 0)]
    assert partitions[0] == TP("b", 1) and partitions[-1] == TP("a", 2)
    assert partitions[1:] == [TP("a", 0), TP("a", 2)]
    assert TP("a", 2) in partitions and TP("a", 1) not in partitions
    assert TP("zzz", 0) not in partitions
    assert hash(partitions) == hash(expected)
    assert str(partitions[0]) == "b-1"
    other_index = TopicIndex({"a": 3, "b": 2, "c": 1})
    assert PartitionList(other_index, partitions.reindexed(other_index)) == partitions
