"""DeleteGroups: delete empty groups of both types (Kafka ``GroupCoordinatorShard.deleteGroups``).

For each group id of the request, in its order, on its own (one group's error does
not stop the others):

1. an empty group id is INVALID_GROUP_ID (Kafka ``GroupCoordinatorService.deleteGroups``
   answers it without asking a shard);
2. an id no group has is GROUP_ID_NOT_FOUND (Kafka ``GroupMetadataManager.group``);
3. the group must be empty (``Group.validateDeleteGroup``): a classic group in
   PreparingRebalance, CompletingRebalance or Stable, or with a pending member, and a
   consumer group with a member, are NON_EMPTY_GROUP;
4. otherwise every committed offset of the group is tombstoned
   (``OffsetMetadataManager.deleteAllOffsets``), then the group itself
   (``createGroupTombstoneRecords``): it is gone, and a later commit or join starts a
   new one.
"""

from __future__ import annotations

from collections.abc import Hashable

from regroup.classic.group.group import ClassicGroup
from regroup.consumer.group.group import ConsumerGroup
from regroup.coordinator import offsets
from regroup.coordinator.classic import rebalance
from regroup.coordinator.consumer.txn import ConsumerTxn, delete_group
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.admin import DeletedGroup, DeleteGroupsRequest, DeleteGroupsResponse

__all__ = ["handle_delete_groups"]


def handle_delete_groups(
    state: GroupCoordinatorState, token: Hashable, request: DeleteGroupsRequest, now_ms: int
) -> CoordinatorResult:
    out = CoordinatorResult()
    results = []
    for group_id in request.groups_names:
        try:
            out.extend(_delete(state, group_id, now_ms))
            code = ErrorCode.NONE
        except KafkaProtocolError as exc:
            code = exc.code
        results.append(DeletedGroup(group_id, code))
    return out.reply(token, DeleteGroupsResponse(tuple(results)))


def _delete(state: GroupCoordinatorState, group_id: str, now_ms: int) -> CoordinatorResult:
    if not group_id:
        raise KafkaProtocolError(ErrorCode.INVALID_GROUP_ID)
    group = state.groups.get(group_id)
    if isinstance(group, ClassicGroup):
        # Validated before any offset goes: a non-empty group keeps its offsets.
        rebalance.check_deletable(group)
        out = offsets.delete_group_offsets(state, group_id)
        out.extend(rebalance.delete_group(state, group_id, now_ms))
        return out
    if isinstance(group, ConsumerGroup):
        if not group.is_empty():
            raise KafkaProtocolError(ErrorCode.NON_EMPTY_GROUP)
        out = offsets.delete_group_offsets(state, group_id)
        txn = ConsumerTxn(state, group_id, now_ms)
        delete_group(txn)
        out.extend(txn.finish())
        return out
    raise KafkaProtocolError(ErrorCode.GROUP_ID_NOT_FOUND)
