"""Static membership (KIP-345) on the broker."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from regroup.classic.group.group_state import ClassicGroupState
from regroup.events import MemberLeft, RebalanceStarted
from regroup.model.errors import ErrorCode
from regroup.model.requests.classic import MemberIdentity

if TYPE_CHECKING:
    from tests.coordinator.conftest import ClassicContext

S = ClassicGroupState


def _static_stable(cc: ClassicContext, *instances: str, **kwargs: Any) -> dict[str, str]:
    """A Stable group of static members; returns instance id -> member id."""
    tokens = {i: cc.join(instance_id=i, **kwargs) for i in instances}
    cc.settle(*tokens.values())
    replies = {i: cc.join_reply(t) for i, t in tokens.items()}
    ids = {i: r.member_id for i, r in replies.items()}
    leader = next(iter(replies.values())).leader
    cc.sync(leader, 1, {m: f"assign-{i}".encode() for i, m in ids.items()})
    for m in ids.values():
        if m != leader:
            cc.sync(m, 1)
    assert cc.group().state is S.STABLE
    return ids


def test_static_member_needs_no_member_id_round_trip(classic_cc: ClassicContext) -> None:
    token = classic_cc.join(instance_id="i1")
    assert classic_cc.reply(token) is None
    classic_cc.settle(token)
    reply = classic_cc.join_reply(token)
    assert reply.member_id.startswith("i1-")


def test_bounce_within_session_timeout_without_rebalance(classic_cc: ClassicContext) -> None:
    """The spec's acceptance case: a static member bounced within its session timeout."""
    ids = _static_stable(classic_cc, "i1", "i2")
    records_before = len(classic_cc.records)
    classic_cc.advance(5000)
    reply = classic_cc.join_reply(classic_cc.join(instance_id="i2"))  # restarted: no member id
    assert reply.error_code == ErrorCode.NONE
    assert reply.generation_id == 1
    assert reply.member_id != ids["i2"]
    assert classic_cc.group().state is S.STABLE
    assert classic_cc.events_of(RebalanceStarted) == [classic_cc.events_of(RebalanceStarted)[0]]
    assert len(classic_cc.records) == records_before + 1  # the replacement is persisted
    sync = classic_cc.sync_reply(classic_cc.sync(reply.member_id, 1, instance_id="i2"))
    assert sync.assignment == b"assign-i2"  # the new id inherits the assignment
    # the old id is fenced
    assert (
        classic_cc.heartbeat("g", ids["i2"], 1, group_instance_id="i2").error_code
        == ErrorCode.FENCED_INSTANCE_ID
    )
    reasons = [(e.member_id, e.reason) for e in classic_cc.events_of(MemberLeft)]
    assert reasons == [(ids["i2"], "replaced")]


def test_returning_static_leader_skips_assignment(classic_cc: ClassicContext) -> None:
    ids = _static_stable(classic_cc, "i1", "i2")
    leader_instance = next(i for i, m in ids.items() if classic_cc.group().is_leader(m))
    reply = classic_cc.join_reply(classic_cc.join(instance_id=leader_instance))
    assert reply.skip_assignment
    assert reply.leader == reply.member_id
    assert len(reply.members) == 2
    assert classic_cc.group().state is S.STABLE


def test_returning_static_leader_on_old_version_acts_as_follower(
    classic_cc: ClassicContext,
) -> None:
    ids = _static_stable(classic_cc, "i1", "i2")
    leader_instance, old_leader = next(
        (i, m) for i, m in ids.items() if classic_cc.group().is_leader(m)
    )
    reply = classic_cc.join_reply(
        classic_cc.join(instance_id=leader_instance, supports_skip_assignment=False)
    )
    assert not reply.skip_assignment
    assert reply.leader == old_leader
    assert reply.members == ()


def test_replacement_rebalances_when_vote_changes(classic_cc: ClassicContext) -> None:
    _static_stable(classic_cc, "i1", protocols=(("range", b""), ("roundrobin", b"")))
    token = classic_cc.join(instance_id="i1", protocols=(("roundrobin", b""), ("range", b"")))
    # the vote changes: a rebalance (which, with one member, completes at once)
    reply = classic_cc.join_reply(token)
    assert reply.generation_id == 2 and reply.protocol_name == "roundrobin"
    assert classic_cc.group().state is S.COMPLETING_REBALANCE
    assert len(classic_cc.events_of(RebalanceStarted)) == 2


def test_replacement_fences_parked_requests_of_old_id(classic_cc: ClassicContext) -> None:
    t1 = classic_cc.join(instance_id="i1")
    t2 = classic_cc.join(instance_id="i2")
    classic_cc.settle(t1, t2)
    r2 = classic_cc.join_reply(t2)
    follower = r2.member_id if r2.leader != r2.member_id else classic_cc.join_reply(t1).member_id
    instance = "i2" if follower == r2.member_id else "i1"
    parked_sync = classic_cc.sync(follower, 1, instance_id=instance)
    token = classic_cc.join(instance_id=instance)  # CompletingRebalance: forces a rebalance
    assert classic_cc.sync_reply(parked_sync).error_code == ErrorCode.FENCED_INSTANCE_ID
    assert classic_cc.reply(token) is None
    assert classic_cc.group().state is S.PREPARING_REBALANCE


def test_replacement_during_preparing_rebalance_fences_parked_join(
    classic_cc: ClassicContext,
) -> None:
    ids = _static_stable(classic_cc, "i1", "i2")
    t_old = classic_cc.join(ids["i1"], instance_id="i1", reason="leader or not, rejoin")
    if classic_cc.group().state is S.STABLE:  # a follower with same metadata gets the generation
        t_old = classic_cc.join(ids["i2"], instance_id="i2", protocols=(("range", b"v2"),))
        instance = "i2"
    else:
        instance = "i1"
    assert classic_cc.group().state is S.PREPARING_REBALANCE
    t_new = classic_cc.join(instance_id=instance)
    assert classic_cc.join_reply(t_old).error_code == ErrorCode.FENCED_INSTANCE_ID
    classic_cc.settle(t_new)
    assert classic_cc.join_reply(t_new).error_code == ErrorCode.NONE


def test_stale_member_id_is_fenced_everywhere(classic_cc: ClassicContext) -> None:
    ids = _static_stable(classic_cc, "i1")
    classic_cc.join_reply(classic_cc.join(instance_id="i1"))
    old = ids["i1"]
    assert (
        classic_cc.join_reply(classic_cc.join(old, instance_id="i1")).error_code
        == ErrorCode.FENCED_INSTANCE_ID
    )
    assert (
        classic_cc.sync_reply(classic_cc.sync(old, 1, instance_id="i1")).error_code
        == ErrorCode.FENCED_INSTANCE_ID
    )
    assert (
        classic_cc.heartbeat("g", old, 1, group_instance_id="i1").error_code
        == ErrorCode.FENCED_INSTANCE_ID
    )
    response = classic_cc.leave_group("g", MemberIdentity(old, "i1"))
    assert response.members[0].error_code == ErrorCode.FENCED_INSTANCE_ID


def test_admin_removal_by_instance_id(classic_cc: ClassicContext) -> None:
    ids = _static_stable(classic_cc, "i1", "i2")
    response = classic_cc.leave_group("g", MemberIdentity("", "i2"), MemberIdentity("", "nobody"))
    assert [m.error_code for m in response.members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    assert not classic_cc.group().has_member(ids["i2"])
    assert classic_cc.group().state is S.PREPARING_REBALANCE


def test_static_member_not_rejoining_is_kept_then_removed_by_sync_timeout(
    classic_cc: ClassicContext,
) -> None:
    ids = _static_stable(
        classic_cc, "i1", "i2", session_timeout_ms=600000, rebalance_timeout_ms=30000
    )
    leader = next(m for m in ids.values() if classic_cc.group().is_leader(m))
    other = next(m for m in ids.values() if m != leader)
    t = classic_cc.join(
        leader,
        instance_id=next(i for i, m in ids.items() if m == leader),
        session_timeout_ms=600000,
        rebalance_timeout_ms=30000,
    )
    classic_cc.settle(t)
    reply = classic_cc.join_reply(t)
    assert reply.generation_id == 2
    assert classic_cc.group().has_member(other)  # static: kept although it did not rejoin
    classic_cc.sync(leader, 2, {leader: b"a"})
    classic_cc.advance(30000)
    assert not classic_cc.group().has_member(other)
    assert classic_cc.group().state is S.PREPARING_REBALANCE


def test_zero_rebalance_timeout_join_phase_waits_for_the_session_timeout_not_forever(
    classic_cc: ClassicContext,
) -> None:
    """A static replacement with ``rebalance_timeout`` 0, then the other member leaves.

    The join phase waits on a static member that never rejoins. Kafka re-arms the
    join check after the group's rebalance timeout (here 0: at once, on and on) until
    the session timeout removes that member; the group then completes its join
    phase Empty. It must not run the check forever at one instant.
    """
    ids = _static_stable(classic_cc, "i1", "i2", session_timeout_ms=10000)
    replaced = classic_cc.join_reply(
        classic_cc.join(instance_id="i2", session_timeout_ms=10000, rebalance_timeout_ms=0)
    )
    assert replaced.error_code == ErrorCode.NONE
    assert classic_cc.group().state is S.STABLE
    classic_cc.leave_group("g", MemberIdentity(ids["i1"], "i1"))
    assert classic_cc.group().state is S.PREPARING_REBALANCE
    classic_cc.advance(5000)  # the join check has run every tick; nothing failed
    assert classic_cc.group().state is S.PREPARING_REBALANCE
    assert classic_cc.group().has_member(replaced.member_id)
    classic_cc.advance(5000)  # i2's session times out: the group ends its join phase Empty
    assert classic_cc.group().state is S.EMPTY
    reasons = [e.reason for e in classic_cc.events_of(MemberLeft)]
    assert reasons[-1] == "session_timeout"
