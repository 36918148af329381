"""Properties of the KIP-848 server-side range assignor over random groups (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.consumer.api import GroupSpec
from regroup.assignors.consumer.range_assignor import RangeAssignor, sorted_member_ids
from regroup.model import Uuid
from tests.assignors.consumer.consumer_assignor_helpers import group, member, plain, topics

assignor = RangeAssignor()
TOPIC_POOL = [Uuid(7 - i, i * 0x9E3779B97F4A7C15 % (1 << 63)) for i in range(5)]
MEMBER_POOL = ["A", "B", "C", "D", "E", "consumer1", "consumer2", "zz", "m\u00e9", "m\U0001f600"]


@st.composite
def groups(draw: st.DrawFn) -> tuple[GroupSpec, dict[Uuid, int]]:
    topic_ids = draw(st.lists(st.sampled_from(TOPIC_POOL), min_size=1, max_size=4, unique=True))
    counts = {t: draw(st.integers(0, 12)) for t in topic_ids}
    member_ids = draw(st.lists(st.sampled_from(MEMBER_POOL), min_size=1, max_size=8, unique=True))
    instances = draw(
        st.lists(
            st.sampled_from(["i1", "i2", "i3", "i10", None]),
            min_size=len(member_ids),
            max_size=len(member_ids),
        )
    )
    # Instance ids are unique within a group.
    seen: set[str] = set()
    unique_instances: list[str | None] = []
    for instance in instances:
        unique_instances.append(instance if instance not in seen else None)
        if instance is not None:
            seen.add(instance)
    if draw(st.booleans()):
        shared = draw(st.sets(st.sampled_from(topic_ids)))
        subscriptions = dict.fromkeys(member_ids, shared)
    else:
        subscriptions = {m: draw(st.sets(st.sampled_from(topic_ids))) for m in member_ids}
    members = {
        m: member(subscriptions[m], instance_id=i)
        for m, i in zip(member_ids, unique_instances, strict=True)
    }
    return group(members), counts


@settings(max_examples=300, deadline=None)
@given(groups())
def test_valid_complete_contiguous_and_balanced_per_topic(
    case: tuple[GroupSpec, dict[Uuid, int]],
) -> None:
    spec, counts = case
    result = plain(assignor.assign(spec, topics(counts)))
    assert set(result) == set(spec.members)  # everybody is listed
    order = sorted_member_ids(spec.members)
    for topic_id, count in counts.items():
        subscribers = [m for m in order if topic_id in spec.members[m].subscribed_topic_ids]
        if not subscribers:
            assert all(topic_id not in target for target in result.values())
            continue
        # Contiguous ranges, in member order, covering 0..count-1 exactly once.
        next_start = 0
        lengths = []
        for m in subscribers:
            partitions = sorted(result[m].get(topic_id, set()))
            if partitions:
                assert partitions == list(range(next_start, next_start + len(partitions)))
            next_start += len(partitions)
            lengths.append(len(partitions))
        assert next_start == count
        assert max(lengths) - min(lengths) <= 1
        assert lengths == sorted(lengths, reverse=True)


@settings(max_examples=200, deadline=None)
@given(groups())
def test_deterministic_and_independent_of_member_map_order(
    case: tuple[GroupSpec, dict[Uuid, int]],
) -> None:
    spec, counts = case
    first = plain(assignor.assign(spec, topics(counts)))
    reversed_members = dict(reversed(list(spec.members.items())))
    again = group(reversed_members, spec.subscription_type)
    assert plain(assignor.assign(again, topics(counts))) == first


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 9), st.integers(0, 20), st.integers(1, 4))
def test_co_partitioned_topics_line_up(
    member_count: int, partitions: int, topic_count: int
) -> None:
    ids = TOPIC_POOL[:topic_count]
    members = {f"m{i}": member(ids) for i in range(member_count)}
    result = plain(assignor.assign(group(members), topics(dict.fromkeys(ids, partitions))))
    for target in result.values():
        sets = [frozenset(target.get(t, set())) for t in ids]
        assert len(set(sets)) == 1


@settings(max_examples=100, deadline=None)
@given(groups())
def test_not_sticky_current_target_is_ignored(case: tuple[GroupSpec, dict[Uuid, int]]) -> None:
    spec, counts = case
    first = plain(assignor.assign(spec, topics(counts)))
    shuffled = {
        m: member(
            s.subscribed_topic_ids,
            *[(t, range(counts[t])) for t in list(counts)[:1]],
            instance_id=s.instance_id,
        )
        for m, s in spec.members.items()
    }
    assert plain(assignor.assign(group(shuffled), topics(counts))) == first
