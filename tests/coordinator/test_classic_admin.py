"""ListGroups and DescribeGroups."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from regroup.model.errors import ErrorCode
from regroup.model.requests.admin import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)

if TYPE_CHECKING:
    from tests.coordinator.conftest import ClassicContext


class _ConsumerGroupStub:
    """Something that satisfies the Group protocol like a KIP-848 group."""

    group_id = "new"
    group_type = "consumer"

    def state_name(self) -> str:
        return "Assigning"

    def is_empty(self) -> bool:
        return False

    def validate_offset_commit(
        self,
        member_id: str,
        group_instance_id: str | None,
        generation_id_or_member_epoch: int,
        supports_member_epoch: bool,
    ) -> None:
        raise AssertionError("these tests commit no offsets to the stub")

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        raise AssertionError("these tests fetch no offsets from the stub")


def _groups(cc: ClassicContext, **filters: Any) -> list[tuple[str, str, str, str]]:
    response = cc.call(ListGroupsRequest(**filters))
    assert isinstance(response, ListGroupsResponse) and response.error_code == ErrorCode.NONE
    return sorted(
        (g.group_id, g.protocol_type, g.group_state, g.group_type) for g in response.groups
    )


def test_list_groups_with_filters(classic_cc: ClassicContext) -> None:
    classic_cc.stable_group(1)
    classic_cc.call(
        OffsetCommitRequest(
            "simple",
            -1,
            "",
            (OffsetCommitRequestTopic("t", (OffsetCommitRequestPartition(0, 1),)),),
        )
    )
    classic_cc.groups["new"] = _ConsumerGroupStub()
    assert _groups(classic_cc) == [
        ("g", "consumer", "Stable", "classic"),
        ("new", "consumer", "Assigning", "consumer"),
        ("simple", "", "Empty", "classic"),
    ]
    assert _groups(classic_cc, states_filter=("stable", "EMPTY")) == [
        ("g", "consumer", "Stable", "classic"),
        ("simple", "", "Empty", "classic"),
    ]
    assert _groups(classic_cc, types_filter=("Consumer",)) == [
        ("new", "consumer", "Assigning", "consumer")
    ]
    assert _groups(classic_cc, states_filter=("Dead",)) == []


def test_describe_stable_group(classic_cc: ClassicContext) -> None:
    a, b = classic_cc.stable_group(2, protocols=(("range", b"sub"),), client_id="app")
    response = classic_cc.call(DescribeGroupsRequest(("g", "unknown")))
    assert isinstance(response, DescribeGroupsResponse)
    described, unknown = response.groups
    assert described.group_state == "Stable" and described.protocol_type == "consumer"
    assert described.protocol_data == "range"
    assert [
        (m.member_id, m.client_id, m.member_metadata, m.member_assignment)
        for m in described.members
    ] == [
        (a, "app", b"sub", f"assign-{a}".encode()),
        (b, "app", b"sub", f"assign-{b}".encode()),
    ]
    assert (
        unknown.group_state == "Dead"
        and unknown.error_code == ErrorCode.NONE
        and unknown.members == ()
    )


def test_describe_kip848_group_is_dead_for_the_classic_api(classic_cc: ClassicContext) -> None:
    classic_cc.groups["new"] = _ConsumerGroupStub()
    (described,) = classic_cc.call(DescribeGroupsRequest(("new",)), DescribeGroupsResponse).groups
    assert described.group_state == "Dead" and described.members == ()


def test_describe_rebalancing_group_has_no_bytes(classic_cc: ClassicContext) -> None:
    a, _b = classic_cc.stable_group(2)
    classic_cc.join(a)
    (described,) = classic_cc.call(DescribeGroupsRequest(("g",)), DescribeGroupsResponse).groups
    assert described.group_state == "PreparingRebalance" and described.protocol_data == ""
    assert all(m.member_metadata == b"" and m.member_assignment == b"" for m in described.members)
