"""offsets.retention.minutes, with empty groups removed (Kafka
``GroupMetadataManager.cleanupGroupMetadata``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.model.errors import ErrorCode
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from regroup.model.topic_partition import TopicPartition
from regroup.records.classic import GroupMetadataKey
from regroup.records.offsets import OffsetCommitKey

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.coordinator.conftest import ClassicContext

DAY_MS = 24 * 3_600_000
RETENTION_MS = 7 * DAY_MS  # offsets.retention.minutes = 10080, Kafka's default


def _commit(cc: ClassicContext, group: str, generation: int = -1, member: str = "") -> None:
    request = OffsetCommitRequest(
        group,
        generation,
        member,
        (OffsetCommitRequestTopic("t", (OffsetCommitRequestPartition(0, 5),)),),
    )
    response = cc.call(request, OffsetCommitResponse)
    assert response.topics[0].partitions[0].error_code == ErrorCode.NONE


def _expire(cc: ClassicContext) -> Any:
    return cc.absorb(cc.coordinator.expire_offsets(cc.now_ms))


def test_a_simple_groups_offsets_expire_after_the_retention_and_the_group_goes(
    classic_coordinator: Callable[..., ClassicContext],
) -> None:
    cc = classic_coordinator()
    _commit(cc, "simple")
    cc.advance(RETENTION_MS - 1)
    assert _expire(cc).records == []
    assert cc.coordinator.offsets.committed("simple", TopicPartition("t", 0)) is not None
    cc.advance(1)
    result = _expire(cc)
    assert [(type(r.key), r.value) for r in result.records] == [
        (OffsetCommitKey, None),
        (GroupMetadataKey, None),
    ]
    assert cc.coordinator.offsets.by_group == {} and "simple" not in cc.groups
    # What was written describes the state: a coordinator replaying it has nothing either.
    assert cc.replayed().groups == {} and cc.replayed().coordinator.offsets.by_group == {}


def test_an_empty_classic_groups_offsets_age_from_when_it_became_empty(
    classic_coordinator: Callable[..., ClassicContext],
) -> None:
    cc = classic_coordinator(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0))
    (member,) = cc.stable_group(1)
    _commit(cc, "g", cc.group().generation_id, member)
    committed_at = cc.now_ms
    cc.advance(10_000)  # the member's session times out: the group becomes Empty now
    assert cc.group().state_name() == "Empty"
    empty_since = cc.group().current_state_timestamp_ms
    assert empty_since > committed_at
    cc.advance(committed_at + RETENTION_MS - cc.now_ms)  # retention after the commit only
    assert _expire(cc).records == []
    cc.advance(empty_since + RETENTION_MS - cc.now_ms)
    assert len(_expire(cc).records) == 2
    assert "g" not in cc.groups


def test_a_group_with_members_keeps_its_offsets(
    classic_coordinator: Callable[..., ClassicContext],
) -> None:
    # The suite's members send the Subscription bytes b"r", which Kafka's
    # ClassicGroup.computeSubscribedTopics cannot read: the Stable rule does not apply
    # (test_offset_expiry_subscribed covers groups whose topics are known).
    cc = classic_coordinator(
        GroupCoordinatorConfig(
            group_initial_rebalance_delay_ms=0, group_max_session_timeout_ms=1_800_000
        )
    )
    (member,) = cc.stable_group(1, session_timeout_ms=1_800_000)
    _commit(cc, "g", cc.group().generation_id, member)
    cc.coordinator.config = GroupCoordinatorConfig(offsets_retention_minutes=1)
    cc.clock.advance(60_000)  # past the retention, the member still there (no timer fired)
    assert _expire(cc).records == []
    assert cc.coordinator.offsets.committed("g", TopicPartition("t", 0)) is not None
