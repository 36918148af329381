"""The classic and offset managers behind the GroupCoordinator facade."""

from __future__ import annotations

from regroup.classic.group_state import ClassicGroupState
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.service import GroupCoordinator
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


def _join(member_id: str = "", group_id: str = "g") -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id, 10000, 30000, member_id, "consumer", (JoinGroupRequestProtocol("range", b"r"),)
    )


def test_round_trip_through_the_facade_and_replay() -> None:
    coordinator = GroupCoordinator()
    records = []
    first = coordinator.handle("j1", _join(), 0)
    records += first.records
    reply = first.response_for("j1")
    assert isinstance(reply, JoinGroupResponse) and reply.error_code == ErrorCode.MEMBER_ID_REQUIRED
    member = reply.member_id
    records += coordinator.handle("j2", _join(member), 0).records
    result = CoordinatorResult()
    now = 0
    while result.response_for("j2") is None:
        deadline = coordinator.next_deadline()
        assert deadline is not None
        now = deadline
        result.extend(coordinator.on_timer(now))
    records += result.records
    joined = result.response_for("j2")
    assert isinstance(joined, JoinGroupResponse) and joined.leader == member
    synced = coordinator.handle(
        "s",
        SyncGroupRequest(
            "g",
            joined.generation_id,
            member,
            assignments=(SyncGroupRequestAssignment(member, b"A"),),
        ),
        now,
    )
    records += synced.records
    sync_reply = synced.response_for("s")
    assert isinstance(sync_reply, SyncGroupResponse) and sync_reply.assignment == b"A"
    commit = OffsetCommitRequest(
        "g",
        joined.generation_id,
        member,
        (OffsetCommitRequestTopic("t", (OffsetCommitRequestPartition(0, 42),)),),
    )
    records += coordinator.handle("c", commit, now).records

    restarted = GroupCoordinator()
    for record in records:
        restarted.replay(record)
    group = restarted.groups["g"]
    assert group.state_name() == ClassicGroupState.STABLE.value
    fetched = restarted.handle("f", OffsetFetchRequest("g", None), now).response_for("f")
    assert isinstance(fetched, OffsetFetchResponse)
    assert fetched.topics[0].partitions[0].committed_offset == 42


class _ConsumerGroupStub:
    group_id = "kip848"
    group_type = "consumer"

    def state_name(self) -> str:
        return "Stable"

    def is_empty(self) -> bool:
        return False


def test_join_to_a_kip848_group_is_inconsistent() -> None:
    coordinator = GroupCoordinator()
    coordinator.groups["kip848"] = _ConsumerGroupStub()  # type: ignore[assignment]
    reply = coordinator.handle("j", _join(group_id="kip848"), 0).response_for("j")
    assert isinstance(reply, JoinGroupResponse)
    assert reply.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
