"""JoinGroup on the broker: admission, KIP-394, the initial delay, the join barrier, the vote."""

from __future__ import annotations

from typing import TYPE_CHECKING

from regroup.classic.group.group import ClassicGroup
from regroup.classic.group.group_state import ClassicGroupState
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.events import GenerationBumped, MemberLeft
from regroup.model.errors import ErrorCode
from regroup.model.requests.classic import JoinGroupRequestProtocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.coordinator.conftest import ClassicContext

S = ClassicGroupState


def test_empty_group_id_is_invalid(classic_cc: ClassicContext) -> None:
    reply = classic_cc.join_reply(classic_cc.join(group_id=""))
    assert reply.error_code == ErrorCode.INVALID_GROUP_ID
    assert classic_cc.groups == {}


def test_session_timeout_outside_bounds(classic_cc: ClassicContext) -> None:
    for timeout in (5999, 1800001):
        reply = classic_cc.join_reply(classic_cc.join(session_timeout_ms=timeout))
        assert reply.error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    for timeout in (6000, 1800000):
        reply = classic_cc.join_reply(classic_cc.join(session_timeout_ms=timeout))
        assert reply.error_code == ErrorCode.MEMBER_ID_REQUIRED


def test_unknown_group_with_member_id(classic_cc: ClassicContext) -> None:
    reply = classic_cc.join_reply(classic_cc.join("someone"))
    assert reply.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert classic_cc.groups == {}


def test_unknown_member_id_in_existing_group(classic_cc: ClassicContext) -> None:
    classic_cc.stable_group(1)
    reply = classic_cc.join_reply(classic_cc.join("nobody"))
    assert reply.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_member_id_required_then_pending_then_joined(classic_cc: ClassicContext) -> None:
    first = classic_cc.join_reply(classic_cc.join(client_id="app"))
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("app-")
    group: ClassicGroup = classic_cc.group()
    assert group.pending_members == {first.member_id}
    assert group.state_name() == "Empty"
    # the new group was committed with an empty record
    assert len(classic_cc.records) == 1 and classic_cc.group_metadata(0).members == ()
    token = classic_cc.join(first.member_id, client_id="app")
    assert classic_cc.reply(token) is None  # parked
    assert group.pending_members == set()
    assert group.state is S.PREPARING_REBALANCE


def test_member_ids_come_from_injected_rng(
    classic_coordinator: Callable[..., ClassicContext],
) -> None:
    ids = []
    for _ in range(2):
        cc = classic_coordinator(seed=7)
        ids.append(cc.join_reply(cc.join(client_id="x")).member_id)
    assert ids[0] == ids[1]


def test_old_clients_join_without_member_id_required(classic_cc: ClassicContext) -> None:
    token = classic_cc.join(require_known_member_id=False)
    assert classic_cc.reply(token) is None
    assert len(classic_cc.group()) == 1


def test_pending_member_expires_after_session_timeout(classic_cc: ClassicContext) -> None:
    first = classic_cc.join_reply(classic_cc.join(session_timeout_ms=10000))
    classic_cc.advance(10000)
    assert classic_cc.group().pending_members == set()
    reply = classic_cc.join_reply(classic_cc.join(first.member_id))
    # the id is forgotten: the group is Empty, so an unknown id is refused
    assert reply.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_initial_rebalance_delay_then_one_generation(classic_cc: ClassicContext) -> None:
    a, ta = classic_cc.join_new(client_id="a")
    classic_cc.advance(2999)
    assert classic_cc.reply(ta) is None
    classic_cc.advance(1)
    reply = classic_cc.join_reply(ta)
    assert reply.error_code == ErrorCode.NONE
    assert reply.generation_id == 1
    assert reply.leader == a
    assert reply.protocol_name == "range"
    assert classic_cc.group().state is S.COMPLETING_REBALANCE


def test_initial_delay_extended_while_members_arrive(classic_cc: ClassicContext) -> None:
    """Kafka ``InitialDelayedJoin``: delay 3000, remaining max(rebalance - delay, 0), ..."""
    _a, ta = classic_cc.join_new(rebalance_timeout_ms=10000)
    classic_cc.advance(1000)
    _b, tb = classic_cc.join_new(rebalance_timeout_ms=10000)  # a new member during the delay
    classic_cc.advance(2000)  # t=3000: first delay over; new member seen: wait min(3000, 7000)
    assert classic_cc.reply(ta) is None
    classic_cc.advance(3000)  # t=6000: nothing new: complete
    assert classic_cc.join_reply(ta).generation_id == 1
    assert classic_cc.join_reply(tb).generation_id == 1


def test_initial_delay_bounded_by_rebalance_timeout(classic_cc: ClassicContext) -> None:
    _, ta = classic_cc.join_new(rebalance_timeout_ms=5000)
    # remaining = 2000; members keep arriving every second
    for _ in range(12):
        classic_cc.advance(1000)
        classic_cc.join_new(rebalance_timeout_ms=5000)
        if classic_cc.reply(ta) is not None:
            break
    assert classic_cc.join_reply(ta).error_code == ErrorCode.NONE
    # 3000 + min(3000, 2000) = 5000
    assert classic_cc.events_of(GenerationBumped)[0].ts_ms == 5000


def test_initial_delay_zero_completes_when_timer_fires(
    classic_coordinator: Callable[..., ClassicContext],
) -> None:
    cc = classic_coordinator(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0))
    _, t = cc.join_new()
    cc.advance(0)
    assert cc.join_reply(t).generation_id == 1


def test_only_the_leader_gets_the_member_metadata(classic_cc: ClassicContext) -> None:
    a, ta = classic_cc.join_new(protocols=(("range", b"A"),))
    b, tb = classic_cc.join_new(protocols=(("range", b"B"),))
    classic_cc.settle(ta, tb)
    ra, rb = classic_cc.join_reply(ta), classic_cc.join_reply(tb)
    assert ra.leader == rb.leader == a
    assert {(m.member_id, m.metadata) for m in ra.members} == {(a, b"A"), (b, b"B")}
    assert rb.members == ()


def test_rejoin_of_existing_member_waits_for_all(classic_cc: ClassicContext) -> None:
    a, b = classic_cc.stable_group(2)
    ta = classic_cc.join(a)  # the leader rejoins: rebalance
    assert classic_cc.group().state is S.PREPARING_REBALANCE
    assert classic_cc.reply(ta) is None
    assert classic_cc.heartbeat("g", b, 1).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    tb = classic_cc.join(b)
    assert classic_cc.join_reply(ta).generation_id == 2
    assert classic_cc.join_reply(tb).generation_id == 2


def test_member_not_rejoining_removed_after_rebalance_timeout(classic_cc: ClassicContext) -> None:
    a, b = classic_cc.stable_group(2, rebalance_timeout_ms=20000)
    ta = classic_cc.join(a, rebalance_timeout_ms=20000)
    classic_cc.advance(9000)
    classic_cc.heartbeat("g", b, 1)  # alive, but never rejoins
    classic_cc.advance(9000)
    classic_cc.heartbeat("g", b, 1)
    classic_cc.advance(2000)
    reply = classic_cc.join_reply(ta)
    assert reply.generation_id == 2
    assert [m.member_id for m in reply.members] == [a]
    assert not classic_cc.group().has_member(b)
    left = classic_cc.events_of(MemberLeft)
    assert [(e.member_id, e.reason) for e in left] == [(b, "rebalance_timeout")]


def test_follower_with_same_metadata_in_stable_gets_current_generation(
    classic_cc: ClassicContext,
) -> None:
    a, b = classic_cc.stable_group(2)
    reply = classic_cc.join_reply(classic_cc.join(b))
    assert reply.error_code == ErrorCode.NONE
    assert reply.generation_id == 1 and reply.members == () and reply.leader == a
    assert classic_cc.group().state is S.STABLE


def test_follower_with_new_metadata_in_stable_triggers_rebalance(
    classic_cc: ClassicContext,
) -> None:
    _, b = classic_cc.stable_group(2)
    token = classic_cc.join(b, protocols=(("range", b"changed"),))
    assert classic_cc.reply(token) is None
    assert classic_cc.group().state is S.PREPARING_REBALANCE


def test_same_metadata_join_in_completing_rebalance_returns_generation(
    classic_cc: ClassicContext,
) -> None:
    a, ta = classic_cc.join_new()
    b, tb = classic_cc.join_new()
    classic_cc.settle(ta, tb)
    again = classic_cc.join_reply(classic_cc.join(a))
    assert again.generation_id == 1 and len(again.members) == 2
    changed = classic_cc.join(b, protocols=(("range", b"x"),))
    assert classic_cc.reply(changed) is None
    assert classic_cc.group().state is S.PREPARING_REBALANCE


def test_inconsistent_protocol_type_and_names(classic_cc: ClassicContext) -> None:
    classic_cc.stable_group(1)
    reply = classic_cc.join_reply(classic_cc.join(protocol_type="connect"))
    assert reply.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    reply = classic_cc.join_reply(classic_cc.join(protocols=(("roundrobin", b""),)))
    assert reply.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    reply = classic_cc.join_reply(classic_cc.join(protocols=()))
    assert reply.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_empty_protocols_refused_even_in_empty_group(classic_cc: ClassicContext) -> None:
    reply = classic_cc.join_reply(classic_cc.join(protocols=()))
    assert reply.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_protocol_vote_picks_majority_choice(classic_cc: ClassicContext) -> None:
    both = (("cooperative-sticky", b""), ("range", b""))
    range_first = (("range", b""), ("cooperative-sticky", b""))
    tokens = [classic_cc.join_new(protocols=p)[1] for p in (both, range_first, range_first)]
    classic_cc.settle(*tokens)
    assert {classic_cc.join_reply(t).protocol_name for t in tokens} == {"range"}


def test_group_max_size(classic_coordinator: Callable[..., ClassicContext]) -> None:
    cc = classic_coordinator(GroupCoordinatorConfig(group_max_size=2))
    cc.stable_group(2)
    reply = cc.join_reply(cc.join())
    # a new member in Stable is refused when the group is full
    assert reply.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert len(cc.group()) == 2


def test_group_max_size_in_preparing_rebalance_counts_awaiting_members(
    classic_coordinator: Callable[..., ClassicContext],
) -> None:
    cc = classic_coordinator(GroupCoordinatorConfig(group_max_size=2))
    _, t1 = cc.join_new()
    b = cc.join_reply(cc.join())
    c = cc.join_reply(cc.join())
    assert b.error_code == c.error_code == ErrorCode.MEMBER_ID_REQUIRED
    t2 = cc.join(b.member_id)
    refused = cc.join_reply(cc.join(c.member_id))
    assert refused.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert not cc.group().is_pending_member(c.member_id)
    cc.settle(t1, t2)
    assert cc.join_reply(t1).error_code == ErrorCode.NONE
    assert len(cc.group()) == 2


def test_duplicate_join_answers_superseded_token(classic_cc: ClassicContext) -> None:
    a, t1 = classic_cc.join_new()
    t2 = classic_cc.join(a)
    assert classic_cc.join_reply(t1).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    classic_cc.settle(t2)
    assert classic_cc.join_reply(t2).generation_id == 1


def test_assignor_version_prefers_highest_version_leader(classic_cc: ClassicContext) -> None:
    """KIP-429, "Looking into the Future: Assignor Version"."""
    v = JoinGroupRequestProtocol
    _a, ta = classic_cc.join_new(protocols=(v("streams", b"", 3),))
    b, tb = classic_cc.join_new(protocols=(v("streams", b"", 4),))
    _c, tc = classic_cc.join_new(protocols=(v("streams", b"", 4),))
    classic_cc.settle(ta, tb, tc)
    assert classic_cc.join_reply(ta).leader == b
    assert len(classic_cc.join_reply(tb).members) == 3
    assert classic_cc.join_reply(tc).members == ()


def test_assignor_version_keeps_tied_current_leader(classic_cc: ClassicContext) -> None:
    v = JoinGroupRequestProtocol
    a, ta = classic_cc.join_new(protocols=(v("streams", b"", 4),))
    _b, tb = classic_cc.join_new(protocols=(v("streams", b"", 4),))
    classic_cc.settle(ta, tb)
    assert classic_cc.join_reply(tb).leader == a


def test_events_of_a_first_rebalance(classic_cc: ClassicContext) -> None:
    a, _ta = classic_cc.join_new()
    deadline = classic_cc.next_deadline()
    assert deadline is not None
    classic_cc.advance(deadline - classic_cc.now_ms)
    kinds = [e.kind for e in classic_cc.events]
    assert kinds == [
        "member_pending",  # KIP-394: the id handed out, then the join with it
        "member_joined",
        "group_state_changed",
        "rebalance_started",
        "group_state_changed",
        "generation_bumped",
    ]
    bumped = classic_cc.events_of(GenerationBumped)[0]
    assert bumped.generation == 1 and bumped.leader_id == a and bumped.member_ids == (a,)
