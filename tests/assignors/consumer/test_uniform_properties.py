"""Properties of the uniform assignor over random groups (hypothesis).

Valid, complete, balanced (homogeneous), sticky, deterministic, and movement
at the physical limit when one member joins or leaves a balanced group.
"""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.consumer.api import (
    GroupSpec,
    MemberSubscriptionSpec,
    SubscriptionType,
)
from regroup.assignors.consumer.uniform import UniformAssignor
from regroup.model import Uuid
from tests.assignors.consumer.consumer_assignor_helpers import group, member, plain, topics

assignor = UniformAssignor()
TOPIC_POOL = [Uuid(i * 0x1F3D5B79 - 3, -i) for i in range(1, 6)]
MEMBER_POOL = ["A", "B", "C", "D", "consumer1", "consumer2", "consumer3", "m-9", "x", "Aa", "BB"]
Plain = dict[str, dict[Uuid, set[int]]]


@st.composite
def groups(draw: st.DrawFn, homogeneous: bool) -> tuple[GroupSpec, dict[Uuid, int]]:
    """A group with random (consistent) current targets, and its topic partition counts."""
    topic_ids = draw(st.lists(st.sampled_from(TOPIC_POOL), min_size=1, max_size=4, unique=True))
    counts = {t: draw(st.integers(0, 12)) for t in topic_ids}
    member_ids = draw(st.lists(st.sampled_from(MEMBER_POOL), min_size=1, max_size=7, unique=True))
    if homogeneous:
        shared = draw(st.sets(st.sampled_from(topic_ids), min_size=1))
        subscriptions = dict.fromkeys(member_ids, shared)
    else:
        subscriptions = {m: draw(st.sets(st.sampled_from(topic_ids))) for m in member_ids}
    owned: dict[str, dict[Uuid, set[int]]] = {m: {} for m in member_ids}
    for topic_id, count in counts.items():
        for partition in range(count):
            holder = draw(st.sampled_from([None, *member_ids]))
            if holder is not None:
                owned[holder].setdefault(topic_id, set()).add(partition)
    members = {m: member(subscriptions[m], *owned[m].items()) for m in member_ids}
    kind = SubscriptionType.HOMOGENEOUS if homogeneous else SubscriptionType.HETEROGENEOUS
    return group(members, kind), counts


def sizes(result: Plain) -> dict[str, int]:
    return {m: sum(len(p) for p in target.values()) for m, target in result.items()}


def check_valid_and_complete(spec: GroupSpec, counts: Mapping[Uuid, int], result: Plain) -> None:
    subscribed = set().union(*(s.subscribed_topic_ids for s in spec.members.values()))
    if not subscribed:
        assert result == {}
        return
    assert set(result) == set(spec.members)
    seen: set[tuple[Uuid, int]] = set()
    for member_id, target in result.items():
        for topic_id, partitions in target.items():
            assert partitions, "no empty partition sets"
            assert topic_id in spec.members[member_id].subscribed_topic_ids
            for partition in partitions:
                assert 0 <= partition < counts[topic_id]
                assert (topic_id, partition) not in seen
                seen.add((topic_id, partition))
    expected = {(t, p) for t in subscribed for p in range(counts[t])}
    assert seen == expected


@settings(max_examples=300, deadline=None)
@given(groups(homogeneous=True))
def test_homogeneous_valid_complete_balanced_sticky(
    case: tuple[GroupSpec, dict[Uuid, int]],
) -> None:
    spec, counts = case
    result = plain(assignor.assign(spec, topics(counts)))
    check_valid_and_complete(spec, counts, result)
    per_member = sizes(result)
    assert max(per_member.values()) - min(per_member.values()) <= 1
    total = sum(per_member.values())
    floor_quota = total // len(spec.members)
    for member_id, member_spec in spec.members.items():
        old = {
            (t, p)
            for t, parts in member_spec.assigned_partitions.items()
            if t in member_spec.subscribed_topic_ids
            for p in parts
        }
        new = {(t, p) for t, parts in result[member_id].items() for p in parts}
        # Balance allows everybody to keep up to the floor quota.
        assert len(old & new) >= min(len(old), floor_quota)
        if len(old) <= floor_quota:
            assert old <= new


@settings(max_examples=300, deadline=None)
@given(groups(homogeneous=False))
def test_heterogeneous_valid_complete_deterministic(
    case: tuple[GroupSpec, dict[Uuid, int]],
) -> None:
    spec, counts = case
    first = plain(assignor.assign(spec, topics(counts)))
    check_valid_and_complete(spec, counts, first)
    assert plain(assignor.assign(spec, topics(counts))) == first


@settings(max_examples=200, deadline=None)
@given(groups(homogeneous=False))
def test_heterogeneous_identical_subscriptions_balance(
    case: tuple[GroupSpec, dict[Uuid, int]],
) -> None:
    # Declared heterogeneous but identical: the balancing pass must still even it out.
    spec, counts = case
    everything = frozenset(counts)
    members = {
        m: MemberSubscriptionSpec(everything, assigned_partitions=s.assigned_partitions)
        for m, s in spec.members.items()
    }
    result = plain(assignor.assign(group(members, SubscriptionType.HETEROGENEOUS), topics(counts)))
    per_member = sizes(result)
    assert max(per_member.values()) - min(per_member.values()) <= 1


def with_targets(spec: GroupSpec, result: Plain) -> dict[str, MemberSubscriptionSpec]:
    return {
        m: MemberSubscriptionSpec(
            s.subscribed_topic_ids,
            assigned_partitions={t: frozenset(p) for t, p in result.get(m, {}).items()},
        )
        for m, s in spec.members.items()
    }


@settings(max_examples=200, deadline=None)
@given(groups(homogeneous=True))
def test_homogeneous_balanced_assignment_is_left_untouched(
    case: tuple[GroupSpec, dict[Uuid, int]],
) -> None:
    # KAFKA-18688: feeding the result back changes nothing, whoever holds the extras.
    spec, counts = case
    first = plain(assignor.assign(spec, topics(counts)))
    again = group(with_targets(spec, first), SubscriptionType.HOMOGENEOUS)
    assert plain(assignor.assign(again, topics(counts))) == first


def moved(before: Plain, after: Plain) -> int:
    owner = {(t, p): m for m, target in before.items() for t, ps in target.items() for p in ps}
    return sum(
        1
        for m, target in after.items()
        for t, ps in target.items()
        for p in ps
        if (t, p) in owner and owner[(t, p)] != m
    )


def minimum_moves(old_sizes: list[int], members_after: int) -> int:
    """Fewest partitions that must change owner to balance after a member joins."""
    total = sum(old_sizes)
    quota, extra = divmod(total, members_after)
    kept = 0
    for rank, size in enumerate(sorted(old_sizes, reverse=True)):
        kept += min(size, quota + (1 if rank < extra else 0))
    return total - kept


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 9),
    st.lists(st.integers(0, 40), min_size=1, max_size=3),
    st.sampled_from(MEMBER_POOL),
)
def test_one_member_joining_moves_the_minimum(
    member_count: int, partition_counts: list[int], newcomer: str
) -> None:
    ids = TOPIC_POOL[: len(partition_counts)]
    counts = dict(zip(ids, partition_counts, strict=True))
    names = [f"member-{i}" for i in range(member_count)]
    spec = group({m: member(ids) for m in names}, SubscriptionType.HOMOGENEOUS)
    before = plain(assignor.assign(spec, topics(counts)))
    joined = with_targets(spec, before)
    joined[newcomer] = member(ids)
    after = plain(assignor.assign(group(joined, SubscriptionType.HOMOGENEOUS), topics(counts)))
    total = sum(partition_counts)
    count = moved(before, after)
    assert count == minimum_moves(list(sizes(before).values()), member_count + 1)
    assert count >= total // (member_count + 1)
    # Only the newcomer gains: every old member's target shrinks or stays.
    for m in names:
        assert all(after[m].get(t, set()) <= before[m].get(t, set()) for t in ids)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(2, 9),
    st.lists(st.integers(0, 40), min_size=1, max_size=3),
    st.data(),
)
def test_one_member_leaving_moves_only_its_partitions(
    member_count: int, partition_counts: list[int], data: st.DataObject
) -> None:
    ids = TOPIC_POOL[: len(partition_counts)]
    counts = dict(zip(ids, partition_counts, strict=True))
    names = [f"member-{i}" for i in range(member_count)]
    spec = group({m: member(ids) for m in names}, SubscriptionType.HOMOGENEOUS)
    before = plain(assignor.assign(spec, topics(counts)))
    leaver = data.draw(st.sampled_from(names))
    remaining = {m: s for m, s in with_targets(spec, before).items() if m != leaver}
    after = plain(assignor.assign(group(remaining, SubscriptionType.HOMOGENEOUS), topics(counts)))
    for m in remaining:
        assert all(before[m].get(t, set()) <= after[m].get(t, set()) for t in ids)
    assert moved(before, after) == sizes(before)[leaver]
