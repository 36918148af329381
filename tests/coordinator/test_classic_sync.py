"""SyncGroup, Heartbeat, LeaveGroup and the timers of a classic group."""

from __future__ import annotations

from typing import TYPE_CHECKING

from regroup.assignors.classic.api import Assignment
from regroup.classic.group.group_state import ClassicGroupState
from regroup.classic.protocol import encode_assignment
from regroup.events import MemberLeft, RebalanceCompleted
from regroup.model import TopicPartition
from regroup.model.errors import ErrorCode
from regroup.model.requests.classic import MemberIdentity

if TYPE_CHECKING:
    from tests.coordinator.conftest import ClassicContext

S = ClassicGroupState


def _two_joined(cc: ClassicContext) -> tuple[str, str, int]:
    a, ta = cc.join_new()
    b, tb = cc.join_new()
    cc.settle(ta, tb)
    return a, b, cc.join_reply(ta).generation_id


# -- SyncGroup -----------------------------------------------------------------------


def test_followers_wait_for_the_leader(classic_cc: ClassicContext) -> None:
    a, b, gen = _two_joined(classic_cc)
    tb = classic_cc.sync(b, gen)
    assert classic_cc.reply(tb) is None
    ta = classic_cc.sync(a, gen, {a: b"for-a", b: b"for-b"})
    assert classic_cc.sync_reply(ta).assignment == b"for-a"
    assert classic_cc.sync_reply(tb).assignment == b"for-b"
    assert classic_cc.sync_reply(tb).protocol_name == "range"
    assert classic_cc.group().state is S.STABLE
    # a follower that syncs after the leader gets its stored assignment at once
    assert classic_cc.sync_reply(classic_cc.sync(b, gen)).assignment == b"for-b"


def test_members_without_assignment_get_empty_bytes(classic_cc: ClassicContext) -> None:
    a, b, gen = _two_joined(classic_cc)
    tb = classic_cc.sync(b, gen)
    classic_cc.sync(a, gen, {a: b"x", "stranger": b"y"})
    assert classic_cc.sync_reply(tb).error_code == ErrorCode.NONE
    assert classic_cc.sync_reply(tb).assignment == b""
    assert classic_cc.group().group_assignment() == {a: b"x", b: b""}


def test_sync_errors(classic_cc: ClassicContext) -> None:
    a, _b, gen = _two_joined(classic_cc)
    assert (
        classic_cc.sync_reply(classic_cc.sync(a, gen + 1)).error_code
        == ErrorCode.ILLEGAL_GENERATION
    )
    assert (
        classic_cc.sync_reply(classic_cc.sync("x", gen)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    )
    wrong_type = classic_cc.sync(a, gen, protocol_type="connect")
    assert classic_cc.sync_reply(wrong_type).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    wrong_name = classic_cc.sync(a, gen, protocol_name="roundrobin")
    assert classic_cc.sync_reply(wrong_name).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    unknown_group = classic_cc.sync(a, gen, group_id="other")
    assert classic_cc.sync_reply(unknown_group).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    right = classic_cc.sync(a, gen, {a: b""}, protocol_type="consumer", protocol_name="range")
    assert classic_cc.sync_reply(right).error_code == ErrorCode.NONE


def test_sync_during_preparing_rebalance(classic_cc: ClassicContext) -> None:
    a, b = classic_cc.stable_group(2)
    classic_cc.join(a)
    reply = classic_cc.sync_reply(classic_cc.sync(b, 1))
    assert reply.error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_new_rebalance_fails_parked_syncs(classic_cc: ClassicContext) -> None:
    _a, b, gen = _two_joined(classic_cc)
    tb = classic_cc.sync(b, gen)
    classic_cc.join_new()  # a third member arrives before the leader syncs
    assert classic_cc.sync_reply(tb).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert classic_cc.group().state is S.PREPARING_REBALANCE


def test_rebalance_completed_event_decodes_consumer_assignment(classic_cc: ClassicContext) -> None:
    a, b, gen = _two_joined(classic_cc)
    bytes_a = encode_assignment(Assignment([TopicPartition("t", 0)]))
    bytes_b = encode_assignment(Assignment([TopicPartition("t", 1)]))
    classic_cc.sync(a, gen, {a: bytes_a, b: bytes_b})
    completed = classic_cc.events_of(RebalanceCompleted)
    assert len(completed) == 1
    assert completed[0].generation == gen
    assert dict(completed[0].assignment) == {
        a: (TopicPartition("t", 0),),
        b: (TopicPartition("t", 1),),
    }


def test_rebalance_completed_event_without_decodable_bytes(classic_cc: ClassicContext) -> None:
    a, b, gen = _two_joined(classic_cc)
    classic_cc.sync(a, gen, {a: b"\xff", b: b""})
    assert dict(classic_cc.events_of(RebalanceCompleted)[0].assignment) == {}


def test_pending_sync_timeout_removes_silent_members(classic_cc: ClassicContext) -> None:
    a, b, gen = _two_joined(classic_cc)
    classic_cc.sync(a, gen, {a: b"x", b: b"y"})
    for _ in range(11):  # 55000 ms of heartbeats, but b never syncs
        classic_cc.advance(5000)
        classic_cc.heartbeat("g", a, gen)
        classic_cc.heartbeat("g", b, gen)
    classic_cc.advance(4999)
    assert classic_cc.group().has_member(b)
    classic_cc.advance(1)
    assert not classic_cc.group().has_member(b)
    assert classic_cc.group().state is S.PREPARING_REBALANCE
    reasons = [(e.member_id, e.reason) for e in classic_cc.events_of(MemberLeft)]
    assert reasons == [(b, "sync_timeout")]


# -- Heartbeat -----------------------------------------------------------------------


def test_heartbeat_errors(classic_cc: ClassicContext) -> None:
    a, _b = classic_cc.stable_group(2)
    assert classic_cc.heartbeat("g", a, 1).error_code == ErrorCode.NONE
    assert classic_cc.heartbeat("g", a, 2).error_code == ErrorCode.ILLEGAL_GENERATION
    assert classic_cc.heartbeat("g", "x", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert classic_cc.heartbeat("nope", a, 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert (
        classic_cc.heartbeat("g", a, 1, group_instance_id="i").error_code
        == ErrorCode.UNKNOWN_MEMBER_ID
    )


def test_heartbeat_in_completing_rebalance_is_fine(classic_cc: ClassicContext) -> None:
    _a, b, gen = _two_joined(classic_cc)
    assert classic_cc.heartbeat("g", b, gen).error_code == ErrorCode.NONE


def test_heartbeat_keeps_member_alive_and_session_timeout_removes_it(
    classic_cc: ClassicContext,
) -> None:
    a, b = classic_cc.stable_group(2, session_timeout_ms=10000)
    for _ in range(5):
        classic_cc.advance(9000)
        classic_cc.heartbeat("g", a, 1)
        classic_cc.heartbeat("g", b, 1)
    classic_cc.advance(9000)
    classic_cc.heartbeat("g", a, 1)
    classic_cc.advance(1000)  # b's session is over
    assert not classic_cc.group().has_member(b)
    assert classic_cc.group().state is S.PREPARING_REBALANCE
    assert [(e.member_id, e.reason) for e in classic_cc.events_of(MemberLeft)] == [
        (b, "session_timeout")
    ]
    # a heartbeat during PreparingRebalance still resets the timer
    assert classic_cc.heartbeat("g", a, 1).error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_new_member_join_timeout(classic_cc: ClassicContext) -> None:
    """A member added in this join phase expires after the 300000 ms join timeout."""
    a, b = classic_cc.stable_group(2, rebalance_timeout_ms=600000, session_timeout_ms=10000)
    classic_cc.join(a, rebalance_timeout_ms=600000, session_timeout_ms=10000)  # rebalance starts
    c, tc = classic_cc.join_new(rebalance_timeout_ms=600000, session_timeout_ms=10000)
    for _ in range(40):
        classic_cc.advance(9000)
        classic_cc.heartbeat("g", b, 1)
    assert classic_cc.join_reply(tc).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert ("join_timeout", c) in [
        (e.reason, e.member_id) for e in classic_cc.events_of(MemberLeft)
    ]


# -- LeaveGroup ----------------------------------------------------------------------


def test_leave_triggers_rebalance(classic_cc: ClassicContext) -> None:
    a, b = classic_cc.stable_group(2)
    response = classic_cc.leave_group("g", MemberIdentity(b, reason="bye"))
    assert response.error_code == ErrorCode.NONE
    assert [(m.member_id, m.error_code) for m in response.members] == [(b, ErrorCode.NONE)]
    assert classic_cc.group().state is S.PREPARING_REBALANCE
    ta = classic_cc.join(a)
    assert classic_cc.join_reply(ta).generation_id == 2


def test_last_member_leaving_empties_the_group(classic_cc: ClassicContext) -> None:
    (a,) = classic_cc.stable_group(1)
    classic_cc.leave_group("g", MemberIdentity(a))
    group = classic_cc.group()
    assert group.state is S.EMPTY and group.generation_id == 2 and len(group) == 0
    assert classic_cc.group_metadata(-1).members == ()


def test_batch_leave_with_per_member_errors(classic_cc: ClassicContext) -> None:
    a, b, c = classic_cc.stable_group(3)
    response = classic_cc.leave_group(
        "g", MemberIdentity(b), MemberIdentity("ghost"), MemberIdentity(c)
    )
    codes = [(m.member_id, m.error_code) for m in response.members]
    assert codes == [
        (b, ErrorCode.NONE),
        ("ghost", ErrorCode.UNKNOWN_MEMBER_ID),
        (c, ErrorCode.NONE),
    ]
    assert list(classic_cc.group().members) == [a]


def test_leave_of_pending_member(classic_cc: ClassicContext) -> None:
    first = classic_cc.join_reply(classic_cc.join())
    response = classic_cc.leave_group("g", MemberIdentity(first.member_id))
    assert response.members[0].error_code == ErrorCode.NONE
    assert classic_cc.group().pending_members == set()


def test_parked_join_of_leaving_member_answered_unknown_member(classic_cc: ClassicContext) -> None:
    a, b = classic_cc.stable_group(2)
    tb = classic_cc.join(b, protocols=(("range", b"new"),))
    classic_cc.leave_group("g", MemberIdentity(b))
    assert classic_cc.join_reply(tb).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    ta = classic_cc.join(a)
    assert classic_cc.join_reply(ta).generation_id == 2


def test_leave_unknown_group(classic_cc: ClassicContext) -> None:
    assert (
        classic_cc.leave_group("nope", MemberIdentity("a")).error_code
        == ErrorCode.UNKNOWN_MEMBER_ID
    )


def test_leader_leaving_passes_leadership(classic_cc: ClassicContext) -> None:
    a, b, _c = classic_cc.stable_group(3)
    classic_cc.leave_group("g", MemberIdentity(a))
    assert classic_cc.group().leader_id == b


def test_empty_group_id_is_invalid_everywhere(classic_cc: ClassicContext) -> None:
    assert classic_cc.heartbeat("", "a", 1).error_code == ErrorCode.INVALID_GROUP_ID
    assert (
        classic_cc.sync_reply(classic_cc.sync("a", 1, group_id="")).error_code
        == ErrorCode.INVALID_GROUP_ID
    )
    assert classic_cc.leave_group("", MemberIdentity("a")).error_code == ErrorCode.INVALID_GROUP_ID
