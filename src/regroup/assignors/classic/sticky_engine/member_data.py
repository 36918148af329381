"""Previous ownership: each member's claims, validated by generation.

Kafka: ``AbstractStickyAssignor.MemberData`` and ``allSubscriptionsEqual``.
Every member reports the partitions it owned and the generation it owned them
in (where that comes from depends on the assignor: ``sticky`` reads only its
user data, ``cooperative-sticky`` the Subscription's ``ownedPartitions``).
Walking members in the leader's map order, a partition claimed by a second
member goes to the higher generation; a tie means *both* lose it and it is
remembered as "claimed by multiple previous owners"; a missing generation
counts as -1. The other claimant's generation is read from its Subscription's
``generationId`` (as Kafka does), not from its user data.

Claims of partitions that do not exist in the metadata are ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from regroup.assignors.classic.sticky_engine.indexing import IntArray, PartitionList, TopicIndex
from regroup.assignors.classic.sticky_engine.user_data import DEFAULT_GENERATION, TopicGroups
from regroup.model import TopicPartition

__all__ = ["MemberData", "Ownership", "claimed_indices", "validate_ownership"]


@dataclass(frozen=True, slots=True)
class MemberData:
    """Kafka's ``MemberData``: what a member says it owned, and in which generation."""

    partitions: Sequence[TopicPartition]
    generation: int | None


def claimed_indices(index: TopicIndex, partitions: Sequence[TopicPartition]) -> IntArray:
    """Global indices of the claimed partitions that exist, in claim order."""
    if isinstance(partitions, TopicGroups):
        if not partitions.numbers:
            return np.zeros(0, dtype=np.int64)
        by_raw = index.raw_position()
        topics = np.array([by_raw.get(raw, -1) for raw in partitions.raw_topics], dtype=np.int64)
        per_partition = np.repeat(topics, partitions.sizes)
        numbers = np.array(partitions.numbers, dtype=np.int64)
        valid = per_partition >= 0
        valid[valid] = (numbers[valid] >= 0) & (numbers[valid] < index.counts[per_partition[valid]])
        return np.asarray(index.offsets[per_partition[valid]] + numbers[valid], dtype=np.int64)
    if isinstance(partitions, PartitionList):
        return partitions.reindexed(index)
    return index.to_global(partitions)


@dataclass(frozen=True, slots=True)
class Ownership:
    """The validated previous assignment, by member position in iteration order.

    ``owned[i]``: what member ``i`` keeps claiming, in its claim order.
    ``claims[i]``: everything member ``i`` claimed (existing partitions only).
    ``multiple_owners``: partitions claimed by several members of one generation.
    ``max_generation``: the highest generation reported (Kafka's ``maxGeneration``).
    """

    owned: list[IntArray]
    claims: list[IntArray]
    multiple_owners: IntArray
    max_generation: int


def validate_ownership(
    index: TopicIndex,
    data: Sequence[MemberData],
    subscription_generations: Sequence[int],
) -> Ownership:
    """Resolve conflicting claims as ``allSubscriptionsEqual`` does.

    ``data`` and ``subscription_generations`` are per member, in Kafka's member
    iteration order (``-1`` for a Subscription without a generation).
    Uncontested partitions (almost all of them) are settled with array
    operations; only contested ones replay Kafka's claim-by-claim walk.
    """
    claims = [claimed_indices(index, member.partitions) for member in data]
    generations = [DEFAULT_GENERATION if m.generation is None else m.generation for m in data]
    max_generation = max([DEFAULT_GENERATION, *generations])
    lengths = np.array([len(c) for c in claims], dtype=np.int64)
    if lengths.sum() == 0:
        return Ownership(claims, claims, np.zeros(0, dtype=np.int64), max_generation)
    all_claims = np.concatenate(claims)
    claim_counts = np.bincount(all_claims, minlength=index.total)
    contested = np.flatnonzero(claim_counts[all_claims] > 1)
    if len(contested) == 0:
        return Ownership(claims, claims, np.zeros(0, dtype=np.int64), max_generation)

    members = np.repeat(np.arange(len(claims), dtype=np.int64), lengths)
    keep = np.ones(len(all_claims), dtype=bool)
    keep[contested] = False
    owner: dict[int, int] = {}
    holder: dict[int, int] = {}
    multiple: set[int] = set()
    for claim, partition, member in zip(
        contested.tolist(),
        all_claims[contested].tolist(),
        members[contested].tolist(),
        strict=True,
    ):
        other = owner.get(partition)
        if other is None:
            owner[partition] = member
            holder[partition] = claim
            continue
        mine, theirs = generations[member], subscription_generations[other]
        if mine == theirs:
            # Same generation: nobody keeps it (Kafka removes it from the other member).
            multiple.add(partition)
            holder[partition] = -1
            owner[partition] = member
        elif mine > theirs:
            holder[partition] = claim
            owner[partition] = member
    for claim in holder.values():
        if claim >= 0:
            keep[claim] = True
    kept_lengths = np.bincount(members[keep], minlength=len(claims))
    owned = np.split(all_claims[keep], np.cumsum(kept_lengths)[:-1])
    return Ownership(owned, claims, np.array(sorted(multiple), dtype=np.int64), max_generation)
