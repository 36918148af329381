"""Properties of ``sticky`` and ``cooperative-sticky`` over random groups (hypothesis).

Valid (only existing, subscribed partitions, each at most once), complete,
balanced with identical subscriptions, sticky (a member keeps what it owns as
far as its quota allows), cooperative safety (nothing is revoked from one
member and given to another in the same round; rounds converge within 4),
deterministic; and movement at the physical limit when one member joins or
leaves a balanced group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.classic.api import ClusterMetadata, GroupSubscription, Subscription
from regroup.assignors.classic.cooperative_sticky import CooperativeStickyAssignor
from regroup.assignors.classic.sticky import StickyAssignor
from regroup.assignors.classic.sticky_engine.user_data import encode_sticky_user_data
from regroup.model import TopicPartition

Assignment = dict[str, list[TopicPartition]]
Assignor = StickyAssignor | CooperativeStickyAssignor


def _assign(
    assignor: Assignor, topics: Mapping[str, int], subs: Mapping[str, Subscription]
) -> Assignment:
    result = assignor.assign(ClusterMetadata(dict(topics)), GroupSubscription(dict(subs)))
    return {m: list(a.partitions) for m, a in result.assignments.items()}


def _owning(
    kind: str, topics: Sequence[str], owned: Sequence[TopicPartition], generation: int = 1
) -> Subscription:
    """A member that owned ``owned`` in ``generation``, as each assignor expects to hear it."""
    if kind == "sticky":
        return Subscription(
            list(topics), encode_sticky_user_data(owned, generation), generation_id=generation
        )
    return Subscription(list(topics), owned_partitions=list(owned), generation_id=generation)


def _new(kind: str) -> Assignor:
    return StickyAssignor() if kind == "sticky" else CooperativeStickyAssignor()


def _settle(
    kind: str, topics: Mapping[str, int], subs: dict[str, Subscription], assignment: Assignment
) -> tuple[Assignment, int]:
    """Cooperative follow-up rounds until nothing is revoked; checks safety each round."""
    rounds = 0
    assignor = _new(kind)
    while True:
        added: set[TopicPartition] = set()
        revoked: set[TopicPartition] = set()
        for member, partitions in assignment.items():
            owned = set(subs[member].owned_partitions)
            revoked |= owned - set(partitions)
            added |= set(partitions) - owned
        assert not added & revoked, "a partition was revoked and reassigned in one round"
        if kind == "sticky" or not revoked:
            return assignment, rounds
        subs = {m: _owning(kind, subs[m].topics, assignment[m], 1) for m in subs}
        assignment = _assign(assignor, topics, subs)
        rounds += 1
        assert rounds <= 4, "cooperative rounds did not converge within 4"


def _check_valid(
    topics: Mapping[str, int], subs: Mapping[str, Subscription], assignment: Assignment
) -> None:
    assert set(assignment) == set(subs)
    seen: set[TopicPartition] = set()
    for member, partitions in assignment.items():
        for partition in partitions:
            assert partition.topic in subs[member].topics
            assert 0 <= partition.partition < topics[partition.topic]
            assert partition not in seen
            seen.add(partition)


def _check_complete(
    topics: Mapping[str, int], subs: Mapping[str, Subscription], assignment: Assignment
) -> None:
    subscribed = {t for s in subs.values() for t in s.topics if t in topics}
    total = sum(topics[t] for t in subscribed)
    assert sum(len(p) for p in assignment.values()) == total


@st.composite
def groups(draw: st.DrawFn, identical: bool) -> tuple[dict[str, int], dict[str, list[str]]]:
    n_topics = draw(st.integers(1, 4))
    topics = {f"t{i}": draw(st.integers(1, 12)) for i in range(n_topics)}
    n_members = draw(st.integers(1, 6))
    names = list(topics)
    members: dict[str, list[str]] = {}
    for i in range(n_members):
        if identical:
            members[f"m{i}"] = names
        else:
            members[f"m{i}"] = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    return topics, members


kinds = st.sampled_from(["sticky", "cooperative"])


@settings(max_examples=50, deadline=None)
@given(kinds, groups(identical=True), st.data())
def test_identical_subscriptions_valid_complete_balanced_sticky(
    kind: str, group: tuple[dict[str, int], dict[str, list[str]]], data: st.DataObject
) -> None:
    topics, members = group
    assignor = _new(kind)
    subs = {m: Subscription(t) for m, t in members.items()}
    first = _assign(assignor, topics, subs)
    _check_valid(topics, subs, first)
    _check_complete(topics, subs, first)
    sizes = [len(p) for p in first.values()]
    assert max(sizes) - min(sizes) <= 1

    # Next round: some members leave, some join; survivors report what they own.
    leaving = data.draw(st.sets(st.sampled_from(sorted(members))))
    joining = data.draw(st.integers(0, 3))
    names = sorted(topics)
    subs2 = {m: _owning(kind, names, first[m]) for m in members if m not in leaving}
    subs2.update({f"new{i}": Subscription(names) for i in range(joining)})
    if not subs2:
        return
    second = _assign(assignor, topics, subs2)
    _check_valid(topics, subs2, second)
    total = sum(topics.values())
    min_quota = total // len(subs2)
    for member in subs2:
        if member in first:
            kept = set(first[member]) & set(second[member])
            # Sticky: a member keeps what it owns as far as the quota allows.
            assert len(kept) >= min(len(first[member]), min_quota)
    final, _ = _settle(kind, topics, subs2, second)
    _check_valid(topics, subs2, final)
    _check_complete(topics, subs2, final)
    sizes = [len(p) for p in final.values()]
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=50, deadline=None)
@given(kinds, groups(identical=False), st.data())
def test_differing_subscriptions_valid_and_cooperative_safe(
    kind: str, group: tuple[dict[str, int], dict[str, list[str]]], data: st.DataObject
) -> None:
    topics, members = group
    assignor = _new(kind)
    subs = {m: Subscription(t) for m, t in members.items()}
    first = _assign(assignor, topics, subs)
    _check_valid(topics, subs, first)
    _check_complete(topics, subs, first)
    assert first == _assign(_new(kind), topics, subs), "not deterministic"

    # Members change their subscriptions and report what they own.
    names = sorted(topics)
    subs2 = {
        m: _owning(kind, data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True)), p)
        for m, p in first.items()
    }
    second = _assign(assignor, topics, subs2)
    _check_valid(topics, subs2, second)
    assert second == _assign(_new(kind), topics, subs2), "not deterministic"
    final, _ = _settle(kind, topics, subs2, second)
    _check_valid(topics, subs2, final)
    _check_complete(topics, subs2, final)


def _minimum_moves_when_joining(sizes: Sequence[int], total: int) -> int:
    """Fewest partitions that must move when a member joins members holding ``sizes``."""
    n = len(sizes) + 1
    low, extra = divmod(total, n)
    ordered = sorted(sizes, reverse=True)
    # The newcomer takes a minimum share; the largest old members keep the larger shares.
    targets = [low + 1 if i < extra else low for i in range(len(ordered))]
    if extra == n:  # pragma: no cover - divmod never gives this
        targets = [low + 1] * len(ordered)
    return total - sum(min(s, t) for s, t in zip(ordered, targets, strict=True))


@settings(max_examples=40, deadline=None)
@given(kinds, st.integers(1, 8), st.integers(1, 5), st.integers(1, 30))
def test_one_member_joining_moves_the_minimum(
    kind: str, n_members: int, n_topics: int, per_topic: int
) -> None:
    topics = {f"t{i}": per_topic for i in range(n_topics)}
    names = sorted(topics)
    total = n_topics * per_topic
    assignor = _new(kind)
    subs = {f"m{i}": Subscription(names) for i in range(n_members)}
    before = _assign(assignor, topics, subs)
    subs2 = {m: _owning(kind, names, p) for m, p in before.items()}
    subs2["joiner"] = Subscription(names)
    after, _ = _settle(kind, topics, subs2, _assign(assignor, topics, subs2))
    moved = sum(len(set(p) - set(after[m])) for m, p in before.items())
    expected = _minimum_moves_when_joining([len(p) for p in before.values()], total)
    assert moved == expected
    assert moved >= total // (n_members + 1)


@settings(max_examples=40, deadline=None)
@given(kinds, st.integers(2, 8), st.integers(1, 5), st.integers(1, 30), st.data())
def test_one_member_leaving_moves_only_its_partitions(
    kind: str, n_members: int, n_topics: int, per_topic: int, data: st.DataObject
) -> None:
    topics = {f"t{i}": per_topic for i in range(n_topics)}
    names = sorted(topics)
    assignor = _new(kind)
    subs = {f"m{i}": Subscription(names) for i in range(n_members)}
    before = _assign(assignor, topics, subs)
    leaver = data.draw(st.sampled_from(sorted(before)))
    subs2 = {m: _owning(kind, names, p) for m, p in before.items() if m != leaver}
    after, rounds = _settle(kind, topics, subs2, _assign(assignor, topics, subs2))
    assert rounds == 0
    for member in subs2:
        assert set(before[member]) <= set(after[member])
