"""The classic and offset managers behind the GroupCoordinator facade (driven through
``regroup.testing.CoordinatorTestContext``, which uses nothing but the facade)."""

from __future__ import annotations

from regroup.classic.group.group_state import ClassicGroupState
from regroup.model.errors import ErrorCode
from regroup.model.requests.classic import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from regroup.testing import CoordinatorTestContext


def _join(member_id: str = "", group_id: str = "g") -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id, 10000, 30000, member_id, "consumer", (JoinGroupRequestProtocol("range", b"r"),)
    )


def test_round_trip_through_the_facade_and_replay() -> None:
    ctx = CoordinatorTestContext()
    first = ctx.submit(_join(), JoinGroupResponse)
    assert first.response.error_code == ErrorCode.MEMBER_ID_REQUIRED
    member = first.response.member_id
    join = ctx.submit(_join(member), JoinGroupResponse)
    ctx.run_until_answered(join)  # the coordinator's timers, deadline by deadline
    joined = join.response
    assert joined.leader == member
    synced = ctx.submit(
        SyncGroupRequest(
            "g",
            joined.generation_id,
            member,
            assignments=(SyncGroupRequestAssignment(member, b"A"),),
        ),
        SyncGroupResponse,
    )
    assert synced.response.assignment == b"A"
    commit = OffsetCommitRequest(
        "g",
        joined.generation_id,
        member,
        (OffsetCommitRequestTopic("t", (OffsetCommitRequestPartition(0, 42),)),),
    )
    ctx.send(commit)

    restarted = ctx.replay_into_new()
    group = restarted.groups["g"]
    assert group.state_name() == ClassicGroupState.STABLE.value
    fetched = restarted.call(OffsetFetchRequest("g", None), OffsetFetchResponse)
    assert fetched.topics[0].partitions[0].committed_offset == 42


class _ConsumerGroupStub:
    group_id = "kip848"
    group_type = "consumer"

    def state_name(self) -> str:
        return "Stable"

    def is_empty(self) -> bool:
        return False

    def validate_offset_commit(
        self,
        member_id: str,
        group_instance_id: str | None,
        generation_id_or_member_epoch: int,
        supports_member_epoch: bool,
    ) -> None:
        raise AssertionError("this test commits no offsets to the stub")

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        raise AssertionError("this test fetches no offsets from the stub")


def test_join_to_a_kip848_group_is_inconsistent() -> None:
    ctx = CoordinatorTestContext()
    ctx.groups["kip848"] = _ConsumerGroupStub()
    reply = ctx.call(_join(group_id="kip848"), JoinGroupResponse)
    assert reply.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
