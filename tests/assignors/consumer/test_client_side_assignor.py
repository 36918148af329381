"""KIP-848's client-side ``PartitionAssignor`` interface and ``ServerLogicAssignor``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.consumer.api import (
    GroupSpec,
    MemberSubscriptionSpec,
    SubscribedTopicDescriber,
)
from regroup.assignors.consumer.api import TopicMetadata as ServerTopic
from regroup.assignors.consumer.client_side import (
    CLIENT_ASSIGNOR_NAMES,
    AssignmentMemberSpec,
    AssignmentSpec,
    AssignorMetadata,
    ClientGroupAssignment,
    PartitionAssignor,
    ServerLogicAssignor,
    create_client_assignor,
)
from regroup.assignors.consumer.registry import create_server_assignor
from regroup.assignors.errors import UnknownAssignorError
from regroup.model import Uuid

FOO = Uuid.for_name("foo")
BAR = Uuid.for_name("bar")


def member(
    member_id: str,
    topics: frozenset[Uuid],
    target: dict[Uuid, frozenset[int]] | None = None,
    instance_id: str | None = None,
) -> AssignmentMemberSpec:
    return AssignmentMemberSpec(
        member_id=member_id,
        member_epoch=1,
        instance_id=instance_id,
        subscribed_topic_ids=topics,
        assignor_version=0,
        assignor_reason=0,
        assignor_metadata=b"",
        target_partitions=target or {},
    )


def spec(
    members: list[AssignmentMemberSpec], counts: dict[Uuid, int], name: str = "uniform"
) -> AssignmentSpec:
    return AssignmentSpec(
        group_epoch=3,
        assignor_name=name,
        members={m.member_id: m for m in members},
        partition_counts=counts,
        topic_names={FOO: "foo", BAR: "bar"},
    )


def test_the_case_study_with_three_members() -> None:
    both = frozenset({FOO})
    result = create_client_assignor("uniform").assign(
        spec([member("A", both), member("B", both), member("C", both)], {FOO: 3})
    )
    assert sorted(p for m in result.members.values() for p in m.partitions[FOO]) == [0, 1, 2]
    assert all(len(m.partitions[FOO]) == 1 for m in result.members.values())
    assert result.error == 0


def test_uniform_keeps_current_targets_when_balanced() -> None:
    topics = frozenset({FOO})
    result = create_client_assignor("uniform").assign(
        spec(
            [
                member("A", topics, {FOO: frozenset({2})}),
                member("B", topics, {FOO: frozenset({0})}),
                member("C", topics, {FOO: frozenset({1})}),
            ],
            {FOO: 3},
        )
    )
    assert {m: dict(a.partitions) for m, a in result.members.items()} == {
        "A": {FOO: frozenset({2})},
        "B": {FOO: frozenset({0})},
        "C": {FOO: frozenset({1})},
    }


def test_members_without_partitions_are_listed_empty() -> None:
    topics = frozenset({FOO})
    result = create_client_assignor("range").assign(
        spec([member(m, topics) for m in "ABCD"], {FOO: 2}, "range")
    )
    assert set(result.members) == set("ABCD")
    assert sum(1 for a in result.members.values() if not a.partitions) == 2


def test_metadata_defaults_to_the_highest_version() -> None:
    assignor = ServerLogicAssignor("uniform", name="mine", minimum_version=1, maximum_version=5)
    assert assignor.name == "mine"
    assert assignor.metadata(frozenset({"foo"})) == AssignorMetadata(version=5)


def test_invalid_version_ranges_are_refused() -> None:
    with pytest.raises(ValueError):
        ServerLogicAssignor("uniform", minimum_version=3, maximum_version=2)
    with pytest.raises(ValueError):
        ServerLogicAssignor("uniform", minimum_version=-1)


def test_unknown_client_assignor() -> None:
    assert CLIENT_ASSIGNOR_NAMES == ("uniform", "range")
    with pytest.raises(UnknownAssignorError):
        create_client_assignor("sticky")


def test_a_custom_assignor_only_needs_assign() -> None:
    class Everything(PartitionAssignor):
        name = "everything"

        def assign(self, spec: AssignmentSpec) -> ClientGroupAssignment:
            return ClientGroupAssignment({}, error=7)

    assignor = Everything()
    assert (assignor.minimum_version, assignor.maximum_version) == (0, 0)
    assert assignor.assign(spec([], {})).error == 7
    assert assignor.on_assignment is not None


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(CLIENT_ASSIGNOR_NAMES),
    n_members=st.integers(1, 6),
    foo_parts=st.integers(0, 8),
    bar_parts=st.integers(0, 5),
    subscriptions=st.lists(st.sampled_from(["foo", "bar", "both"]), min_size=6, max_size=6),
)
def test_client_side_equals_the_server_side_logic(
    name: str, n_members: int, foo_parts: int, bar_parts: int, subscriptions: list[str]
) -> None:
    """Running ``uniform``/``range`` on the member gives the server assignor's answer,
    every subscribed partition exactly once."""
    topic_sets = {
        "foo": frozenset({FOO}),
        "bar": frozenset({BAR}),
        "both": frozenset({FOO, BAR}),
    }
    members = [member(f"m{i}", topic_sets[subscriptions[i]]) for i in range(n_members)]
    counts = {FOO: foo_parts, BAR: bar_parts}
    result = ServerLogicAssignor(name).assign(spec(members, counts, name))
    server = create_server_assignor(name).assign(
        GroupSpec.of(
            {m.member_id: MemberSubscriptionSpec(m.subscribed_topic_ids) for m in members}
        ),
        SubscribedTopicDescriber(
            [ServerTopic(FOO, "foo", foo_parts), ServerTopic(BAR, "bar", bar_parts)]
        ),
    )
    for member_id, assignment in result.members.items():
        expected = server.members.get(member_id)
        want = {} if expected is None else {t: p for t, p in expected.partitions.items() if p}
        assert dict(assignment.partitions) == want
    subscribed = set().union(*(m.subscribed_topic_ids for m in members))
    seen: list[tuple[Uuid, int]] = [
        (t, p)
        for assignment in result.members.values()
        for t, parts in assignment.partitions.items()
        for p in parts
    ]
    assert len(seen) == len(set(seen))
    assert set(seen) == {(t, p) for t in subscribed for p in range(counts[t])}
