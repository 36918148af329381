"""A JoinGroup listing one protocol twice, and handlers or timers that raise.

Before the fix, a member listing ``range`` twice counted as two supporters of
``range``: no protocol was ever supported by exactly every member, the vote in
the join-completion timer raised, and the group stayed in PreparingRebalance
with its members' JoinGroups unanswered; every later member got
INCONSISTENT_GROUP_PROTOCOL. More generally a handler or timer that raises must
change nothing (its group is rebuilt from its records) and answer every request
waiting on the group with UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from regroup.classic.group.group_state import ClassicGroupState
from regroup.coordinator import service
from regroup.coordinator.classic import rebalance
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.coordinator.state import CommittedOffset
from regroup.coordinator.timer import TimerRunaway
from regroup.model.errors import ErrorCode
from regroup.model.requests.classic import MemberIdentity
from regroup.model.requests.consumer import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from regroup.model.topic_partition import TopicPartition
from regroup.testing import CoordinatorTestContext

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.coordinator.conftest import ClassicContext

TWICE = (("range", b"r"), ("range", b"r2"))


def test_a_member_listing_one_protocol_twice_joins_and_the_group_stays_usable(
    classic_coordinator: Callable[..., ClassicContext],
) -> None:
    cc = classic_coordinator(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0))
    dup_id, dup = cc.join_new(protocols=TWICE)
    cc.settle(dup)
    reply = cc.join_reply(dup)
    assert reply.error_code == ErrorCode.NONE
    assert reply.protocol_name == "range"
    assert reply.members[0].metadata == b"r"  # the first entry's metadata
    assert cc.group().state is ClassicGroupState.COMPLETING_REBALANCE
    # A real consumer joins the same group afterwards: one rebalance, both members.
    other_id, other = cc.join_new()
    again = cc.join(dup_id, protocols=TWICE)
    cc.settle(other, again)
    assert cc.join_reply(other).error_code == ErrorCode.NONE
    assert cc.join_reply(again).error_code == ErrorCode.NONE
    assert set(cc.group().members) == {dup_id, other_id}
    assert cc.group().supported_protocol_counts() == {"range": 2}


def _boom(*args: Any) -> None:
    raise RuntimeError("injected")


def test_a_timer_that_raises_rebuilds_its_group_and_answers_every_waiting_join(
    classic_coordinator: Callable[..., ClassicContext], monkeypatch: pytest.MonkeyPatch
) -> None:
    cc = classic_coordinator(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0))
    leader, first = cc.stable_group(2)
    records_before = len(cc.records)
    waiting = cc.join(leader)  # the leader rejoins; ``first`` does not: the timer completes
    with monkeypatch.context() as patch:
        patch.setattr(rebalance, "complete_join", _boom)
        result = cc.advance(10_000)  # first's session times out: the join completes
    assert [f.operation for f in result.failures] == ["timer"]
    assert result.failures[0].group_id == "g" and result.failures[0].answered == 1
    assert isinstance(result.failures[0].error, RuntimeError)
    assert cc.join_reply(waiting).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    # Nothing of the failed operation was recorded; the group is what its records say.
    assert len(cc.records) == records_before
    group = cc.group()
    assert group.state is ClassicGroupState.STABLE and set(group.members) == {leader, first}
    assert not any(m.is_awaiting_join for m in group.members.values())
    # The members rejoin and the group rebalances as usual.
    tokens = [cc.join(leader), cc.join(first)]
    cc.settle(*tokens)
    assert all(cc.join_reply(t).error_code == ErrorCode.NONE for t in tokens)


def test_a_handler_that_raises_changes_nothing_and_answers_unknown_server_error(
    classic_coordinator: Callable[..., ClassicContext], monkeypatch: pytest.MonkeyPatch
) -> None:
    cc = classic_coordinator(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0))
    leader, _ = cc.stable_group(2)
    waiting = cc.join(leader)  # parked: the group prepares a rebalance
    assert cc.group().state is ClassicGroupState.PREPARING_REBALANCE
    commit = OffsetCommitRequest(
        "g", -1, "", (OffsetCommitRequestTopic("t", (OffsetCommitRequestPartition(0, 5),)),)
    )
    with monkeypatch.context() as patch:
        patch.setitem(
            service.ROUTES,
            OffsetCommitRequest,
            service.to(OffsetCommitRequest, _boom_handler),
        )
        call = cc.submit(commit, OffsetCommitResponse)
    response = call.response
    assert response is not None
    assert response.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert cc.join_reply(waiting).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert cc.group().state is ClassicGroupState.STABLE
    assert cc.coordinator.offsets.committed("g", _tp("t", 0)) is None


def _boom_handler(state: Any, token: Any, request: Any, now: int) -> Any:
    state.offsets.put(request.group_id, _tp("t", 0), CommittedOffset(5))
    group = state.classic_group(request.group_id)
    group.state = ClassicGroupState.DEAD  # a half-applied change, then the failure
    raise RuntimeError("injected")


def _tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def test_a_consumer_group_handler_that_raises_leaves_the_group_as_its_records_say(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cc = CoordinatorTestContext()
    cc.set_topics({"t": 2})

    def heartbeat(member_id: str, epoch: int) -> ConsumerGroupHeartbeatResponse:
        request = ConsumerGroupHeartbeatRequest(
            "cg",
            member_id,
            epoch,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=("t",) if epoch == 0 else None,
            topic_partitions=() if epoch == 0 else None,
        )
        return cc.call(request, ConsumerGroupHeartbeatResponse)

    joined = heartbeat("m-1", 0)
    assert joined.error_code == ErrorCode.NONE and joined.member_id == "m-1"
    group = cc.coordinator.state.consumer_group("cg")
    assert group is not None
    before = dict(group.members)

    def half_then_raise(state: Any, token: Any, request: Any, now: int) -> Any:
        state.consumer_group("cg").members.clear()  # a half-applied change
        raise RuntimeError("injected")

    with monkeypatch.context() as patch:
        patch.setitem(
            service.ROUTES,
            ConsumerGroupHeartbeatRequest,
            service.to(ConsumerGroupHeartbeatRequest, half_then_raise),
        )
        failed = heartbeat("m-1", joined.member_epoch)
    assert failed.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert cc.last_result is not None and len(cc.last_result.failures) == 1
    group = cc.coordinator.state.consumer_group("cg")
    assert group is not None and set(group.members) == set(before)
    again = heartbeat("m-1", joined.member_epoch)
    assert again.error_code == ErrorCode.NONE


def test_a_runaway_join_timer_fails_its_group_and_answers_its_waiters(
    classic_coordinator: Callable[..., ClassicContext], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the one-tick wait, the zero-rebalance-timeout join phase re-arms itself at
    one instant: the timer stops it as a runaway, and the guard fails that group alone."""
    monkeypatch.setattr(rebalance, "TIMER_TICK_MS", 0)
    cc = classic_coordinator(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0))
    tokens = [cc.join(instance_id=i, session_timeout_ms=10000) for i in ("i1", "i2")]
    cc.settle(*tokens)
    ids = {i: cc.join_reply(t).member_id for i, t in zip(("i1", "i2"), tokens, strict=True)}
    leader = cc.join_reply(tokens[0]).leader
    cc.sync(leader, 1, {m: b"" for m in ids.values()})
    cc.sync(next(m for m in ids.values() if m != leader), 1)
    other_id, other = cc.join_new(group_id="other")  # a second group, untouched
    cc.settle(other)
    replaced = cc.join_reply(
        cc.join(instance_id="i2", session_timeout_ms=10000, rebalance_timeout_ms=0)
    )
    records_before = len(cc.records)
    result = cc.leave_group("g", MemberIdentity(ids["i1"], "i1"))
    del result
    fired = cc.advance(0)
    assert [type(f.error) for f in fired.failures] == [TimerRunaway]
    assert fired.failures[0].group_id == "g"
    assert len(cc.records) == records_before  # nothing of the runaway was recorded
    # The group is what its records say: Stable, i1 (its leave was never recorded) and i2.
    assert cc.group().state is ClassicGroupState.STABLE
    assert set(cc.group().members) == {ids["i1"], replaced.member_id}
    assert cc.group("other").has_member(other_id)


def test_records_the_store_refused_leave_their_group_as_the_store_has_it(
    classic_coordinator: Any,
) -> None:
    """``guard`` rule 5: the driver could not write a sync's records (a full disk)."""
    cc = classic_coordinator(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0))
    leader, follower = cc.stable_group(2)
    generation = cc.group().generation_id
    durable = list(cc.records)
    rejoin = [cc.join(leader), cc.join(follower)]  # a rebalance; joins write no record
    cc.settle(*rejoin)
    new_generation = cc.join_reply(rejoin[0]).generation_id
    assert new_generation == generation + 1
    waiting = cc.sync(follower, new_generation)  # waits for the leader's assignment
    completing = cc.sync(leader, new_generation, {leader: b"a", follower: b"b"})
    failed = cc.last_result
    assert failed.records and {r.token for r in failed.replies} == {waiting, completing}
    restored = cc.coordinator.restore(failed, durable, ErrorCode.NOT_COORDINATOR, cc.now_ms)
    assert {r.token: r.response.error_code for r in restored.replies} == {
        waiting: ErrorCode.NOT_COORDINATOR,
        completing: ErrorCode.NOT_COORDINATOR,
    }
    assert restored.records == []
    group = cc.group()
    assert group.state is ClassicGroupState.STABLE  # as the store holds it
    assert (group.generation_id, set(group.members)) == (generation, {leader, follower})
