"""DeleteGroups in the coordinator (Kafka ``GroupCoordinatorShard.deleteGroups``).

Each group is answered on its own: an empty group of either type goes with its
offsets (tombstones that a replay honours), a group with members is NON_EMPTY_GROUP and
keeps everything, an unknown id is GROUP_ID_NOT_FOUND, an empty id INVALID_GROUP_ID.
"""

from __future__ import annotations

from regroup.model.errors import ErrorCode
from regroup.model.requests.admin import DeleteGroupsRequest, DeleteGroupsResponse
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from tests.coordinator.migration_harness import MigrationHarness


def _commit(h: MigrationHarness, group: str, offset: int) -> None:
    reply = h.call(
        OffsetCommitRequest(
            group,
            -1,
            "",
            (OffsetCommitRequestTopic("foo", (OffsetCommitRequestPartition(0, offset),)),),
            supports_member_epoch=False,
        ),
        OffsetCommitResponse,
    )
    assert reply.topics[0].partitions[0].error_code == ErrorCode.NONE


def _delete(h: MigrationHarness, *groups: str) -> list[tuple[str, ErrorCode]]:
    reply = h.call(DeleteGroupsRequest(groups), DeleteGroupsResponse)
    return [(r.group_id, r.error_code) for r in reply.results]


def test_each_group_is_answered_on_its_own_and_empty_ones_go_with_their_offsets() -> None:
    h = MigrationHarness()
    _commit(h, "busy", 3)
    h.join("m1", group="busy")  # then a KIP-848 group with a member
    _commit(h, "simple", 7)  # an Empty classic group that only stores offsets
    h.join("m2", group="left")
    h.hb("m2", -1, group="left")  # its one member leaves: an Empty consumer group
    _commit(h, "left", 4)  # not while it has a member: UNKNOWN_MEMBER_ID
    answered = _delete(h, "busy", "simple", "nobody", "left", "")
    assert answered == [
        ("busy", ErrorCode.NON_EMPTY_GROUP),
        ("simple", ErrorCode.NONE),
        ("nobody", ErrorCode.GROUP_ID_NOT_FOUND),
        ("left", ErrorCode.NONE),
        ("", ErrorCode.INVALID_GROUP_ID),
    ]
    assert set(h.coordinator.groups) == {"busy"}
    assert set(h.coordinator.offsets.by_group.get("busy", {})) != set()
    assert not h.coordinator.offsets.by_group.get("simple")
    assert not h.coordinator.offsets.by_group.get("left")
    # the records say the same: a coordinator rebuilt from them has only "busy"
    rebuilt = h.replay_into_new()
    assert set(rebuilt.coordinator.groups) == {"busy"}
    assert not rebuilt.coordinator.offsets.by_group.get("simple")
    h.assert_replay_matches()
    # a deleted group is gone: deleting it again is GROUP_ID_NOT_FOUND
    assert _delete(h, "simple") == [("simple", ErrorCode.GROUP_ID_NOT_FOUND)]


def test_a_classic_group_with_members_is_not_empty() -> None:
    h = MigrationHarness()
    h.stable_classic_group([[0, 1, 2]])
    assert _delete(h, "g") == [("g", ErrorCode.NON_EMPTY_GROUP)]
    assert "g" in h.coordinator.groups
