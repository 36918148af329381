"""GroupMetadata records: what is written when, their JSON form, and replay."""

from __future__ import annotations

from typing import TYPE_CHECKING

from regroup.classic.group.group_state import ClassicGroupState
from regroup.coordinator.classic.rebalance import delete_group
from regroup.coordinator.classic.records import group_from_value, group_metadata_value
from regroup.events import GroupStateChanged, MemberLeft
from regroup.model.errors import ErrorCode
from regroup.model.requests.classic import MemberIdentity
from regroup.records import RECORD_TYPES, CoordinatorRecord
from regroup.records.classic import GroupMetadataKey, GroupMetadataValue, GroupMetadataValueMember
from regroup.records.offsets import OffsetCommitKey

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.coordinator.conftest import ClassicContext

S = ClassicGroupState


def test_record_types_registered_with_kafka_ids() -> None:
    assert RECORD_TYPES[1] is OffsetCommitKey
    assert RECORD_TYPES[2] is GroupMetadataKey
    assert GroupMetadataKey.record_name == "GroupMetadata"


def test_json_round_trip() -> None:
    record = CoordinatorRecord(
        GroupMetadataKey("g"),
        GroupMetadataValue(
            protocol_type="consumer",
            generation=3,
            protocol="range",
            leader="m1",
            current_state_timestamp=42,
            members=(
                GroupMetadataValueMember("m1", "i1", "c", "h", 300000, 45000, b"\x00\x01", b"\x02"),
            ),
        ),
    )
    assert CoordinatorRecord.from_json(record.to_json()) == record
    tombstone = CoordinatorRecord(GroupMetadataKey("g"), None)
    assert CoordinatorRecord.from_json(tombstone.to_json()) == tombstone


def test_records_written_where_kafka_writes_them(classic_cc: ClassicContext) -> None:
    a, b = classic_cc.stable_group(2)
    values = [classic_cc.group_metadata(i) for i in range(len(classic_cc.records))]
    # the empty record of the new group, then the leader's assignment
    assert [v.generation for v in values] == [0, 1]
    assert values[0].members == ()
    stable = values[1]
    assert stable.protocol == "range" and stable.leader == a
    assert {m.member_id: m.assignment for m in stable.members} == {
        a: f"assign-{a}".encode(),
        b: f"assign-{b}".encode(),
    }
    assert all(m.subscription == b"r" for m in stable.members)
    classic_cc.leave_group("g", MemberIdentity(a))
    classic_cc.leave_group("g", MemberIdentity(b))
    assert classic_cc.group_metadata(-1).members == ()
    assert classic_cc.group_metadata(-1).generation == 2


def test_replay_rebuilds_stable_group(classic_cc: ClassicContext) -> None:
    classic_cc.stable_group(3)
    live = classic_cc.group()
    replayed = classic_cc.replayed().group()
    assert replayed.state is S.STABLE
    assert group_metadata_value(replayed) == group_metadata_value(live)
    assert replayed.static_members == live.static_members
    assert replayed.supported_protocol_counts() == live.supported_protocol_counts()


def test_replayed_group_keeps_serving(classic_cc: ClassicContext) -> None:
    """After a "restart", members heartbeat and sync against the rebuilt group."""
    a, b = classic_cc.stable_group(2)
    restarted = classic_cc.replayed()
    assert restarted.heartbeat("g", b, 1).error_code == ErrorCode.NONE
    assert restarted.sync_reply(restarted.sync(b, 1)).assignment == f"assign-{b}".encode()
    # a replayed group has no timers: a rejoin rebuilds them
    t = restarted.join(a)
    tb = restarted.join(b)
    restarted.settle(t, tb)
    assert restarted.join_reply(t).generation_id == 2


def test_kafka_only_record_falls_back_to_selected_protocol() -> None:
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=1,
        protocol="range",
        leader="m",
        current_state_timestamp=0,
        members=(GroupMetadataValueMember("m", None, "c", "h", 1000, 6000, b"sub", b"asg"),),
    )
    group = group_from_value("g", value)
    assert group.members["m"].protocol_names() == ("range",)
    assert group.members["m"].metadata("range") == b"sub"
    assert group.state is S.STABLE and group.leader_id == "m"


def test_tombstone_removes_group(classic_cc: ClassicContext) -> None:
    classic_cc.join_reply(classic_cc.join())
    classic_cc.leave_group("g", MemberIdentity(classic_cc.group().pending_members.copy().pop()))
    result = classic_cc.absorb(delete_group(classic_cc.coordinator.state, "g", classic_cc.now_ms))
    assert result.records[-1].is_tombstone
    assert "g" not in classic_cc.groups
    assert [e.new_state for e in classic_cc.events_of(GroupStateChanged)] == ["Dead"]
    assert "g" not in classic_cc.replayed().groups


def test_delete_non_empty_group_refused(classic_cc: ClassicContext) -> None:
    import pytest

    from regroup.model.errors import KafkaProtocolError

    classic_cc.stable_group(1)
    with pytest.raises(KafkaProtocolError) as info:
        delete_group(classic_cc.coordinator.state, "g", 0)
    assert info.value.code == ErrorCode.NON_EMPTY_GROUP


def test_on_loaded_arms_session_timers(classic_cc: ClassicContext) -> None:
    a, _ = classic_cc.stable_group(2)
    restarted = classic_cc.replayed()
    assert restarted.now_ms == classic_cc.now_ms
    assert restarted.next_deadline() is None
    restarted.on_loaded()
    restarted.advance(9000)
    restarted.heartbeat("g", a, 1)
    restarted.advance(1000)  # b never heartbeats after the restart
    assert list(restarted.group().members) == [a]
    assert restarted.events_of(MemberLeft)[0].reason == "session_timeout"


def test_on_loaded_rebalances_group_over_capacity(
    classic_cc: ClassicContext, classic_coordinator: Callable[..., ClassicContext]
) -> None:
    from regroup.coordinator.config import GroupCoordinatorConfig

    classic_cc.stable_group(3)
    smaller = classic_coordinator(GroupCoordinatorConfig(group_max_size=2))
    smaller.replay(classic_cc.records)
    smaller.on_loaded()
    assert smaller.group().state is S.PREPARING_REBALANCE
