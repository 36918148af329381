"""The broker side of the KIP texts' worked examples and edge cases.

The broker treats Subscription and Assignment bytes as opaque; these
scenarios check what it must guarantee for the client-side algorithms of
KIP-429, KIP-726 and KIP-568 to work: the leader sees every member's owned
partitions, the vote selects the assignor the KIPs say, the follow-up
rebalance after a revocation is a plain new generation, a misconfigured
member is refused, a static member comes back without a rebalance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from regroup.assignors.classic.api import Assignment, Subscription
from regroup.classic.group.group_state import ClassicGroupState
from regroup.classic.protocol import decode_subscription, encode_assignment, encode_subscription
from regroup.events import RebalanceCompleted, RebalanceStarted
from regroup.model import TopicPartition
from regroup.model.errors import ErrorCode

if TYPE_CHECKING:
    from tests.coordinator.conftest import ClassicContext

S = ClassicGroupState
A0, B0 = TopicPartition("a", 0), TopicPartition("b", 0)
COOP = "cooperative-sticky"


def sub(*owned: TopicPartition, generation: int = -1) -> bytes:
    return encode_subscription(
        Subscription(["a", "b"], owned_partitions=owned, generation_id=generation)
    )


def asg(*partitions: TopicPartition) -> bytes:
    return encode_assignment(Assignment(list(partitions)))


def test_kip429_new_member_joins_and_only_b0_moves(classic_cc: ClassicContext) -> None:
    """KIP-429, Consumer Coordinator Algorithm: the a-0 / b-0 example, broker side.

    Member 1 owns a-0 and b-0; member 2 joins. Round 1: the leader sees
    member 1's owned partitions, keeps a-0 with it and withholds b-0 (still
    owned). Member 1 revokes b-0 and rejoins (the follow-up rebalance); round 2
    gives b-0 to member 2.
    """
    cc = classic_cc
    m1, t1 = cc.join_new(protocols=((COOP, sub()),))
    cc.settle(t1)
    cc.sync(m1, 1, {m1: asg(A0, B0)})
    assert cc.group().state is S.STABLE

    # member 2 arrives; member 1 learns of the rebalance by heartbeat and rejoins owning a-0, b-0
    m2, t2 = cc.join_new(protocols=((COOP, sub()),))
    assert cc.heartbeat("g", m1, 1).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    t1 = cc.join(m1, protocols=((COOP, sub(A0, B0, generation=1)),))
    r1, r2 = cc.join_reply(t1), cc.join_reply(t2)
    assert r1.generation_id == r2.generation_id == 2 and r1.leader == m1
    seen = {m.member_id: decode_subscription(m.metadata) for m in r1.members}
    assert tuple(seen[m1].owned_partitions) == (A0, B0) and seen[m1].generation_id == 1
    assert tuple(seen[m2].owned_partitions) == ()
    s2 = cc.sync(m2, 2)
    cc.sync(m1, 2, {m1: asg(A0), m2: asg()})  # b-0 withheld: still owned by m1
    assert cc.sync_reply(s2).assignment == asg()
    completed = cc.events_of(RebalanceCompleted)[-1]
    assert dict(completed.assignment) == {m1: (A0,), m2: ()}

    # member 1 revoked b-0 and rejoins at once: the follow-up rebalance
    t1 = cc.join(m1, protocols=((COOP, sub(A0, generation=2)),))
    assert cc.heartbeat("g", m2, 2).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    t2 = cc.join(m2, protocols=((COOP, sub(generation=2)),))
    r1 = cc.join_reply(t1)
    assert r1.generation_id == 3
    seen = {m.member_id: decode_subscription(m.metadata) for m in r1.members}
    assert tuple(seen[m1].owned_partitions) == (A0,)
    s2 = cc.sync(m2, 3)
    cc.sync(m1, 3, {m1: asg(A0), m2: asg(B0)})
    assert cc.sync_reply(s2).assignment == asg(B0)
    assert dict(cc.events_of(RebalanceCompleted)[-1].assignment) == {m1: (A0,), m2: (B0,)}


def _bounce(
    cc: ClassicContext, members: dict[str, str], name: str, protocols: tuple[tuple[str, bytes], ...]
) -> str:
    """Restart one static member with a new config; every member rejoins; returns the protocol."""
    tokens = {name: cc.join(instance_id=name, protocols=protocols)}
    group = cc.group()
    if group.state is S.STABLE:
        members[name] = cc.join_reply(tokens[name]).member_id
        return str(group.protocol_name)
    # a rebalance: every other member rejoins with its current protocols
    for instance, member_id in members.items():
        if instance != name:
            current = group.members[member_id].supported_protocols
            tokens[instance] = cc.join(
                member_id,
                instance_id=instance,
                protocols=tuple((p.name, p.metadata) for p in current),
            )
    cc.settle(*tokens.values())
    replies = {i: cc.join_reply(t) for i, t in tokens.items()}
    for instance, reply in replies.items():
        members[instance] = reply.member_id
    leader = next(r.leader for r in replies.values())
    generation = next(r.generation_id for r in replies.values())
    cc.sync(leader, generation, {m: b"" for m in members.values()})
    for m in members.values():
        if m != leader:
            cc.sync(m, generation)
    assert cc.group().state is S.STABLE
    return str(cc.group().protocol_name)


def _static_group(
    cc: ClassicContext, protocols: tuple[tuple[str, bytes], ...], n: int = 3
) -> dict[str, str]:
    tokens = {f"i{k}": cc.join(instance_id=f"i{k}", protocols=protocols) for k in range(n)}
    cc.settle(*tokens.values())
    members = {i: cc.join_reply(t).member_id for i, t in tokens.items()}
    leader = cc.join_reply(tokens["i0"]).leader
    cc.sync(leader, 1, {m: b"" for m in members.values()})
    for m in members.values():
        if m != leader:
            cc.sync(m, 1)
    return members


def test_kip429_double_rolling_bounce_from_range_to_cooperative_sticky(
    classic_cc: ClassicContext,
) -> None:
    """KIP-429, Compatibility and Upgrade Path, Consumer: two rolling bounces."""
    members = _static_group(classic_cc, (("range", b""),))
    both = ((COOP, b""), ("range", b""))
    # first bounce: range stays selected while any member supports only range
    assert _bounce(classic_cc, members, "i0", both) == "range"
    assert _bounce(classic_cc, members, "i1", both) == "range"
    # the last member of the first bounce: everyone now votes for its first choice (Kafka's vote)
    assert _bounce(classic_cc, members, "i2", both) == COOP
    # second bounce: range removed; cooperative-sticky is the only common protocol
    for instance in ("i0", "i1", "i2"):
        assert _bounce(classic_cc, members, instance, ((COOP, b""),)) == COOP


def test_kip726_single_rolling_bounce(classic_cc: ClassicContext) -> None:
    """KIP-726: one bounce from [range] to [cooperative-sticky, range]."""
    members = _static_group(classic_cc, (("range", b""),))
    new_default = ((COOP, b""), ("range", b""))
    assert [_bounce(classic_cc, members, i, new_default) for i in ("i0", "i1", "i2")] == [
        "range",
        "range",
        COOP,
    ]


def test_kip429_misconfigured_eager_only_member_is_refused(classic_cc: ClassicContext) -> None:
    """KIP-429, Edge Cases: an eager-only new member joining a cooperative group."""
    classic_cc.stable_group(2, protocols=((COOP, b""),))
    reply = classic_cc.join_reply(classic_cc.join(protocols=(("range", b""),)))
    assert reply.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert classic_cc.group().state is S.STABLE  # the group is not disturbed


def test_kip429_downgrade_the_right_way(classic_cc: ClassicContext) -> None:
    """KIP-429, Downgrading: add range back in one bounce, then drop cooperative-sticky."""
    members = _static_group(classic_cc, ((COOP, b""),))
    # a downgraded member with the old config only cannot join
    wrong = classic_cc.join_reply(classic_cc.join(instance_id="new", protocols=(("range", b""),)))
    assert wrong.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    both = ((COOP, b""), ("range", b""))
    assert [_bounce(classic_cc, members, i, both) for i in ("i0", "i1", "i2")] == [COOP, COOP, COOP]
    only_range = (("range", b""),)
    assert [_bounce(classic_cc, members, i, only_range) for i in ("i0", "i1", "i2")] == [
        "range"
    ] * 3


def test_static_member_bounce_within_session_timeout_no_rebalance(
    classic_cc: ClassicContext,
) -> None:
    members = _static_group(classic_cc, (("range", b""),))
    started = len(classic_cc.events_of(RebalanceStarted))
    classic_cc.advance(5000)
    assert _bounce(classic_cc, members, "i1", (("range", b""),)) == "range"
    assert len(classic_cc.events_of(RebalanceStarted)) == started
    assert classic_cc.group().generation_id == 1


def test_kip568_enforced_rebalance_by_the_leader(classic_cc: ClassicContext) -> None:
    """KIP-568: enforceRebalance rejoins without revoking; the leader's JoinGroup always rebalances.

    A follower's JoinGroup with unchanged metadata in Stable only returns the
    current generation (Kafka's broker), so the reason reaches the events only
    when the rejoin causes a rebalance.
    """
    a, b = classic_cc.stable_group(2)
    follower = classic_cc.join_reply(classic_cc.join(b, reason="enforce: follower"))
    assert follower.generation_id == 1 and classic_cc.group().state is S.STABLE
    ta = classic_cc.join(a, reason="enforce: refresh standbys")
    assert classic_cc.group().state is S.PREPARING_REBALANCE
    assert "enforce: refresh standbys" in classic_cc.events_of(RebalanceStarted)[-1].reason
    tb = classic_cc.join(b)
    assert classic_cc.join_reply(ta).generation_id == classic_cc.join_reply(tb).generation_id == 2
