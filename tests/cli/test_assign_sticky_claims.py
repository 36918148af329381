"""``regroup assign`` with ``sticky``: a partition claimed by several members of one generation.

Kafka: ``StickyAssignorTest`` / ``CooperativeStickyAssignorTest``
``testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultipleConsumersInSameGeneration
With{Equal,Unequal}PartitionsPerConsumer`` and ``AbstractStickyAssignorTest.
testPartitionsTransferringOwnershipIncludeThePartitionClaimedByMultipleConsumersInSameGeneration``,
fed through the assign JSON the way a real member sends its Subscription:

* ``sticky`` (EAGER): the previous assignment and its generation only in the
  user data (``StickyAssignor.memberData`` reads nothing else; ``onJoinPrepare``
  revoked everything, so ``owned_partitions`` is empty), and the member's current
  generation in the Subscription's ``generation`` (``ConsumerCoordinator.metadata``
  sends it under every assignor).
* ``cooperative-sticky``: ``owned_partitions`` and ``generation``.

Kafka's validation (``AbstractStickyAssignor.allSubscriptionsEqual``) compares
a claimant's *member-data* generation with the other claimant's *Subscription*
``generationId``; the last test pins what that rule gives when the Subscription
carries no generation (an input no Kafka client of protocol v2+ produces). Both
outcomes were checked against Kafka's own ``AbstractStickyAssignor`` (apache/kafka
1eb7644) compiled and run on these inputs.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from regroup.assignors.classic.sticky_engine.user_data import encode_sticky_user_data
from regroup.cli.assign import assign_document
from regroup.model import TopicPartition


def _user_data(partitions: list[int], generation: int | None) -> str:
    owned = [TopicPartition("topic", p) for p in partitions]
    return base64.b64encode(encode_sticky_user_data(owned, generation)).decode("ascii")


def _sticky_member(
    member_id: str, owned: list[int], generation: int, *, subscription_generation: bool = True
) -> dict[str, Any]:
    member: dict[str, Any] = {
        "member_id": member_id,
        "topics": ["topic"],
        "user_data": _user_data(owned, generation),
    }
    if subscription_generation:
        member["generation"] = generation
    return member


def _cooperative_member(member_id: str, owned: list[int], generation: int) -> dict[str, Any]:
    return {
        "member_id": member_id,
        "topics": ["topic"],
        "owned_partitions": [f"topic-{p}" for p in owned],
        "generation": generation,
    }


def _assign(assignor: str, partitions: int, members: list[dict[str, Any]]) -> dict[str, Any]:
    document = {"assignor": assignor, "topics": {"topic": partitions}, "members": members}
    assignment: dict[str, Any] = assign_document(document)["assignment"]
    return assignment


@pytest.mark.parametrize(
    ("partitions", "consumer1"),
    [(3, ["topic-1"]), (4, ["topic-1", "topic-3"])],
    ids=["equal", "unequal"],
)
def test_sticky_invalidates_a_partition_claimed_twice_in_one_generation(
    partitions: int, consumer1: list[str]
) -> None:
    # Kafka: StickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedBy
    # MultipleConsumersInSameGenerationWith{Equal,Unequal}PartitionsPerConsumer
    members = [
        _sticky_member("consumer1", [0, 1], 1),
        _sticky_member("consumer2", [0, 2], 1),
        _sticky_member("consumer3", [], 1),
    ]
    assert _assign("sticky", partitions, members) == {
        "consumer1": consumer1,
        "consumer2": ["topic-2"],
        "consumer3": ["topic-0"],
    }


def test_sticky_reads_previous_ownership_from_the_user_data_only() -> None:
    # Kafka: StickyAssignor.memberData ("Always deserialize ownedPartitions and generation id
    # from user data"): owned_partitions that say otherwise change nothing.
    members = [
        {**_sticky_member("consumer1", [0, 1], 1), "owned_partitions": ["topic-2"]},
        {**_sticky_member("consumer2", [0, 2], 1), "owned_partitions": ["topic-1"]},
        {**_sticky_member("consumer3", [], 1), "owned_partitions": ["topic-0"]},
    ]
    assert _assign("sticky", 3, members) == {
        "consumer1": ["topic-1"],
        "consumer2": ["topic-2"],
        "consumer3": ["topic-0"],
    }


@pytest.mark.parametrize(
    ("partitions", "consumer1"),
    [(3, ["topic-1"]), (4, ["topic-1", "topic-3"])],
    ids=["equal", "unequal"],
)
def test_cooperative_sticky_withholds_a_partition_claimed_twice(
    partitions: int, consumer1: list[str]
) -> None:
    # Kafka: CooperativeStickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhen
    # ClaimedByMultipleConsumersInSameGenerationWith{Equal,Unequal}PartitionsPerConsumer:
    # nobody keeps topic-0, and it is handed out only after both claimants revoked it.
    members = [
        _cooperative_member("consumer1", [0, 1], 1),
        _cooperative_member("consumer2", [0, 2], 1),
        _cooperative_member("consumer3", [], 1),
    ]
    first = _assign("cooperative-sticky", partitions, members)
    assert first == {"consumer1": consumer1, "consumer2": ["topic-2"], "consumer3": []}
    # The follow-up rebalance, every member reporting what it now owns.
    second = _assign(
        "cooperative-sticky",
        partitions,
        [
            _cooperative_member(m, [int(p.rsplit("-", 1)[1]) for p in owned], 2)
            for m, owned in first.items()
        ],
    )
    assert second == {**first, "consumer3": ["topic-0"]}


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
def test_partitions_transferring_ownership_include_the_multiply_claimed_partition(
    assignor: str,
) -> None:
    # Kafka: AbstractStickyAssignorTest.testPartitionsTransferringOwnershipIncludeThePartition
    # ClaimedByMultipleConsumersInSameGeneration (the transfer map itself is checked in
    # tests/assignors/classic/test_sticky_kafka_cases.py): topic-0 goes to consumer3, for
    # cooperative-sticky one rebalance later.
    build = _sticky_member if assignor == "sticky" else _cooperative_member
    members = [
        build("consumer1", [0, 1], 1),
        build("consumer2", [0, 2], 1),
        build("consumer3", [], 1),
    ]
    result = _assign(assignor, 3, members)
    assert result["consumer1"] == ["topic-1"]
    assert result["consumer2"] == ["topic-2"]
    assert result["consumer3"] == (["topic-0"] if assignor == "sticky" else [])


def test_sticky_without_subscription_generations_follows_kafkas_rule() -> None:
    # AbstractStickyAssignor.allSubscriptionsEqual reads the other claimant's generation
    # from its Subscription's generationId (absent = -1), not from its user data. With
    # generations in the user data only, the later claimant in Kafka's member order
    # (consumer1; consumer3, consumer2, consumer1 in HashMap order) has the "higher"
    # generation and takes topic-0; the constrained pass then keeps topic-0 and moves
    # topic-1 to consumer3. Kafka's own test sends the generation in both places.
    members = [
        _sticky_member("consumer1", [0, 1], 1, subscription_generation=False),
        _sticky_member("consumer2", [0, 2], 1, subscription_generation=False),
        _sticky_member("consumer3", [], 1, subscription_generation=False),
    ]
    assert _assign("sticky", 3, members) == {
        "consumer1": ["topic-0"],
        "consumer2": ["topic-2"],
        "consumer3": ["topic-1"],
    }
