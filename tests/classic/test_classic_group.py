"""ClassicGroup's rules: compatibility, the vote, leader succession, offset fencing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.java_order import java_hashmap_order, java_string_hash
from regroup.classic.group.group import ClassicGroup
from regroup.classic.group.group_member import ClassicGroupMember
from regroup.classic.group.group_state import ClassicGroupState
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.classic import JoinGroupRequestProtocol

S = ClassicGroupState


def member(
    member_id: str, *protocols: str, instance: str | None = None, version: int | None = None
) -> ClassicGroupMember:
    return ClassicGroupMember(
        member_id=member_id,
        group_instance_id=instance,
        client_id="c",
        client_host="h",
        rebalance_timeout_ms=1000,
        session_timeout_ms=1000,
        protocol_type="consumer",
        supported_protocols=tuple(
            JoinGroupRequestProtocol(p, p.encode(), version) for p in protocols
        ),
    )


def group_of(*members: ClassicGroupMember) -> ClassicGroup:
    group = ClassicGroup("g")
    for m in members:
        group.add(m, awaiting_join=f"tok-{m.member_id}")
    return group


def test_empty_group_accepts_any_non_empty_protocols() -> None:
    group = ClassicGroup("g")
    assert group.supports_protocols("consumer", ("range",))
    assert group.supports_protocols("connect", ("whatever",))
    assert not group.supports_protocols("", ("range",))
    assert not group.supports_protocols("consumer", ())


def test_non_empty_group_needs_type_and_a_common_protocol() -> None:
    group = group_of(member("a", "range", "cooperative-sticky"), member("b", "cooperative-sticky"))
    group.transition_to(S.PREPARING_REBALANCE, 0)
    assert group.supports_protocols("consumer", ("cooperative-sticky",))
    assert not group.supports_protocols("consumer", ("range",))  # b does not support range
    assert not group.supports_protocols("connect", ("cooperative-sticky",))


def test_vote_majority() -> None:
    group = group_of(
        member("a", "cooperative-sticky", "range"),
        member("b", "range", "cooperative-sticky"),
        member("c", "range", "cooperative-sticky"),
    )
    assert group.candidate_protocols() == ["cooperative-sticky", "range"]
    assert group.select_protocol() == "range"


def test_vote_only_among_common_protocols() -> None:
    group = group_of(member("a", "roundrobin", "range"), member("b", "sticky", "range"))
    assert group.select_protocol() == "range"


def test_vote_tie_follows_java_hashmap_order() -> None:
    group = group_of(member("a", "range", "roundrobin"), member("b", "roundrobin", "range"))
    expected = java_hashmap_order(["range", "roundrobin"], java_string_hash)[0]
    assert group.select_protocol() == expected


def test_leader_is_first_member_and_passes_in_arrival_order() -> None:
    group = group_of(member("a", "range"), member("b", "range"), member("c", "range"))
    assert group.leader_id == "a"
    group.remove("a")
    assert group.leader_id == "b"
    group.remove("c")
    group.remove("b")
    assert group.leader_id is None


def test_leader_that_did_not_rejoin_is_replaced_at_join_completion() -> None:
    group = group_of(member("a", "range"), member("b", "range"))
    group.members["a"].awaiting_join = None
    assert group.maybe_elect_new_joined_leader()
    assert group.leader_id == "b"
    group.members["b"].awaiting_join = None
    assert not group.maybe_elect_new_joined_leader()


def test_assignor_version_leader_preference() -> None:
    group = group_of(
        member("a", "s", version=1), member("b", "s", version=3), member("c", "s", version=2)
    )
    group.transition_to(S.PREPARING_REBALANCE, 0)
    group.init_next_generation(5)
    assert group.leader_id == "b" and group.protocol_name == "s"
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 1


def test_no_versions_keeps_kafka_leader() -> None:
    group = group_of(member("a", "s"), member("b", "s"))
    group.transition_to(S.PREPARING_REBALANCE, 0)
    group.init_next_generation(5)
    assert group.leader_id == "a"


def test_all_members_joined_needs_no_pending_members() -> None:
    group = group_of(member("a", "range"))
    assert group.has_all_members_joined()
    group.pending_members.add("p")
    assert not group.has_all_members_joined()


def test_replace_static_member_inherits_everything() -> None:
    group = group_of(member("a", "range", instance="i"), member("b", "range"))
    group.members["a"].assignment = b"A"
    group.pending_sync_members.add("a")
    old, new = group.replace_static_member("i", "a", "a2")
    assert old.member_id == "a" and old.awaiting_join == "tok-a"
    assert new.assignment == b"A" and new.awaiting_join is None
    assert group.leader_id == "a2" and group.static_members == {"i": "a2"}
    assert list(group.members) == ["b", "a2"]
    assert group.pending_sync_members == {"a2"}


def _stable(group: ClassicGroup) -> ClassicGroup:
    group.transition_to(S.PREPARING_REBALANCE, 0)
    group.init_next_generation(0)
    group.transition_to(S.STABLE, 0)
    return group


@pytest.mark.parametrize(
    ("member_id", "instance", "generation", "expected"),
    [
        ("a", None, 1, None),
        ("a", None, 2, ErrorCode.ILLEGAL_GENERATION),
        ("x", None, 1, ErrorCode.UNKNOWN_MEMBER_ID),
        ("", None, -1, ErrorCode.UNKNOWN_MEMBER_ID),
        ("b", "i", 1, None),
        ("a", "i", 1, ErrorCode.FENCED_INSTANCE_ID),
        ("b", "j", 1, ErrorCode.UNKNOWN_MEMBER_ID),
    ],
)
def test_offset_commit_fencing_in_stable(
    member_id: str, instance: str | None, generation: int, expected: ErrorCode | None
) -> None:
    group = _stable(group_of(member("a", "range"), member("b", "range", instance="i")))
    if expected is None:
        group.validate_offset_commit(member_id, instance, generation, True)
    else:
        with pytest.raises(KafkaProtocolError) as info:
            group.validate_offset_commit(member_id, instance, generation, True)
        assert info.value.code == expected


def test_offset_commit_in_empty_group_from_outside() -> None:
    group = ClassicGroup("g")
    group.validate_offset_commit("", None, -1, True)
    with pytest.raises(KafkaProtocolError) as info:
        group.validate_offset_commit("m", None, 0, True)
    assert info.value.code == ErrorCode.UNKNOWN_MEMBER_ID


def test_offset_fetch_only_refused_when_dead() -> None:
    group = ClassicGroup("g")
    group.validate_offset_fetch(None, -1)
    group.transition_to(S.DEAD, 1)
    with pytest.raises(KafkaProtocolError):
        group.validate_offset_fetch(None, -1)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from(["range", "roundrobin", "sticky", "cooperative-sticky"]),
            min_size=1,
            max_size=4,
            unique=True,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_vote_winner_is_supported_by_every_member(prefs: list[list[str]]) -> None:
    common = set(prefs[0]).intersection(*map(set, prefs))
    group = group_of(*(member(f"m{i}", *p) for i, p in enumerate(prefs)))
    if not common:
        with pytest.raises(ValueError):
            group.select_protocol()
        return
    winner = group.select_protocol()
    assert winner in common
    votes = {name: 0 for name in common}
    for p in prefs:
        votes[next(n for n in p if n in common)] += 1
    assert votes[winner] == max(votes.values())


def test_the_awaiting_join_count_follows_every_way_a_token_changes() -> None:
    """``num_awaiting_join`` is a kept count (O(1)); it equals a scan of the members."""
    group = ClassicGroup("g")

    def scan() -> int:
        return sum(m.awaiting_join is not None for m in group.members.values())

    a, b, c = member("a"), member("b"), member("c")
    group.add(a, awaiting_join="ta")
    group.add(b)
    assert group.num_awaiting_join() == scan() == 1
    b.awaiting_join = "tb"
    b.awaiting_join = "tb2"  # a replaced token is still one parked join
    assert group.num_awaiting_join() == scan() == 2
    group.update_member(a, a.supported_protocols, 1, 1, None)
    assert group.num_awaiting_join() == scan() == 1
    c.awaiting_join = "tc"  # parked before it is added: counted when added
    group.add(c, awaiting_join="tc")
    assert group.num_awaiting_join() == scan() == 2
    group.remove("b")
    b.awaiting_join = None  # a removed member no longer touches the count
    assert group.num_awaiting_join() == scan() == 1


def test_a_replaced_static_member_takes_its_parked_join_out_of_the_count() -> None:
    group = ClassicGroup("g")
    group.add(member("a", "range", instance="i"), awaiting_join="ta")
    old, new = group.replace_static_member("i", "a", "a2")
    assert old.awaiting_join == "ta" and group.num_awaiting_join() == 0
    new.awaiting_join = "tn"
    old.awaiting_join = None  # the caller answers the old member's parked join
    assert group.num_awaiting_join() == 1
