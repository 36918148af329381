"""A handler or timer that raises changes nothing; every request waiting on its group is answered.

Kafka: the ``CoordinatorRuntime`` runs each write operation against a snapshot of
its timeline data structures and reverts to that snapshot when the operation
throws; the operation's future fails, and ``GroupCoordinatorService`` answers
the request with the exception's code (``Errors.forException``: an unexpected
exception is ``UNKNOWN_SERVER_ERROR``). A timer task that throws is logged by
the runtime and the state is reverted the same way.

regroup's handlers change the state in place, so an exception halfway would
leave a half-applied group whose changes no record describes, and members whose
JoinGroup or SyncGroup waits forever. Rules:

1. The coordinator remembers, per group, the last record written under each
   key (``RecordedGroups``, fed with every result's records and every replayed
   record): exactly what its store holds, compacted as the store compacts.
2. When an operation on group ``G`` raises (a request naming ``G``, or a timer
   whose ``owner`` is ``G``), ``G`` is rebuilt from those records as a restart
   rebuilds it: its groups, offsets and timers are dropped, its records are
   replayed, its timers are armed (``on_loaded`` for ``G`` only). Whatever the
   failing operation changed is gone, and so is whatever no record described
   yet (a rebalance under way: its members rejoin), as after a restart. Other
   groups and their timers are not touched.
3. Every request waiting on the old ``G`` (a parked JoinGroup or SyncGroup) and
   the failing request itself are answered ``UNKNOWN_SERVER_ERROR``.
4. The failure is reported once, in the result's ``failures``, for the driver
   to log; the result carries no record of the failed operation.
5. When the driver cannot write a result's records (a full disk: ``restore``),
   each group they name is rebuilt as in rule 2 from what the store still holds
   of it, and every reply of that result, like every request waiting on those
   groups, carries the driver's error code instead. Kafka: the runtime reverts
   the write operation whose append failed, and
   ``CoordinatorOperationExceptionHelper.handleOperationException`` answers a
   ``KafkaStorageException`` with NOT_COORDINATOR (a client then looks the
   coordinator up again and retries).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

from regroup.classic.group.group import ClassicGroup
from regroup.coordinator.classic import rebalance as classic_rebalance
from regroup.coordinator.consumer import fencing
from regroup.coordinator.result import CoordinatorResult, HandlerFailure
from regroup.coordinator.state import GroupCoordinatorState
from regroup.model.errors import ErrorCode
from regroup.model.requests.admin import (
    DescribedGroup,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from regroup.model.requests.classic import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from regroup.model.requests.consumer import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    DescribeGroupConfigsRequest,
    DescribeGroupConfigsResponse,
    IncrementalAlterGroupConfigsRequest,
    IncrementalAlterGroupConfigsResponse,
)
from regroup.model.requests.consumer import DescribedGroup as DescribedConsumerGroup
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from regroup.records import CoordinatorRecord
from regroup.records.base import RecordKey

__all__ = [
    "RecordedGroups",
    "error_response",
    "failed_response",
    "group_of",
    "recover",
    "reload",
    "restore",
]

UNKNOWN = ErrorCode.UNKNOWN_SERVER_ERROR


def _key_group(key: RecordKey) -> str:
    """The group id a record key names (``group`` for classic and offset keys)."""
    group = getattr(key, "group", None)
    if group is None:
        group = getattr(key, "group_id", "")
    return str(group)


@dataclass(slots=True, eq=False)
class RecordedGroups:
    """Rule 1: the last record under each key, per group, in the store's order."""

    by_group: dict[str, dict[RecordKey, CoordinatorRecord]] = field(default_factory=dict)

    def note(self, records: Iterable[CoordinatorRecord]) -> None:
        for record in records:
            group_id = _key_group(record.key)
            kept = self.by_group.get(group_id)
            if kept is None:
                if record.value is None:
                    continue
                kept = self.by_group[group_id] = {}
            # A key written again moves to the end, as the store's row does (its seq).
            kept.pop(record.key, None)
            if record.value is not None:
                kept[record.key] = record
            elif not kept:
                del self.by_group[group_id]

    def records_of(self, group_id: str) -> list[CoordinatorRecord]:
        return list(self.by_group.get(group_id, {}).values())


def group_of(request: object) -> str | None:
    """The one group a request acts on, or ``None`` (reads of several groups)."""
    if isinstance(request, IncrementalAlterGroupConfigsRequest | DescribeGroupConfigsRequest):
        return request.resource_name
    group_id = getattr(request, "group_id", None)
    return group_id if isinstance(group_id, str) else None


def error_response(request: object, code: ErrorCode = UNKNOWN) -> object:
    """The response to ``request`` that carries only ``code`` (Kafka ``getErrorResponse``)."""
    match request:
        case JoinGroupRequest():
            return JoinGroupResponse(code, member_id=request.member_id)
        case SyncGroupRequest():
            return SyncGroupResponse(code)
        case HeartbeatRequest():
            return HeartbeatResponse(code)
        case LeaveGroupRequest():
            return LeaveGroupResponse(code)
        case OffsetCommitRequest():
            return OffsetCommitResponse(
                tuple(
                    OffsetCommitResponseTopic(
                        topic.name,
                        tuple(
                            OffsetCommitResponsePartition(p.partition_index, code)
                            for p in topic.partitions
                        ),
                    )
                    for topic in request.topics
                )
            )
        case OffsetFetchRequest():
            return OffsetFetchResponse(code)
        case ConsumerGroupHeartbeatRequest():
            return ConsumerGroupHeartbeatResponse(code, "Unexpected error in the coordinator.")
        case ConsumerGroupPrepareAssignmentRequest():
            return ConsumerGroupPrepareAssignmentResponse(code)
        case ConsumerGroupInstallAssignmentRequest():
            return ConsumerGroupInstallAssignmentResponse(code)
        case IncrementalAlterGroupConfigsRequest():
            return IncrementalAlterGroupConfigsResponse(code, request.resource_name)
        case DescribeGroupConfigsRequest():
            return DescribeGroupConfigsResponse(code, request.resource_name)
        case DescribeGroupsRequest():
            described = tuple(DescribedGroup(code, g, "") for g in request.groups)
            return DescribeGroupsResponse(described)
        case ConsumerGroupDescribeRequest():
            return ConsumerGroupDescribeResponse(
                tuple(DescribedConsumerGroup(code, g) for g in request.group_ids)
            )
        case ListGroupsRequest():
            return ListGroupsResponse(code)
    raise TypeError(f"no error response for {type(request).__name__}")


def failed_response(response: object, code: ErrorCode) -> object:
    """``response`` as its request is answered when its step failed with ``code`` (rule 5):
    the same partitions for an OffsetCommit, the member id for a JoinGroup, else only
    the code (Kafka ``getErrorResponse`` of each request)."""
    match response:
        case OffsetCommitResponse():
            return OffsetCommitResponse(
                tuple(
                    OffsetCommitResponseTopic(
                        topic.name,
                        tuple(
                            OffsetCommitResponsePartition(p.partition_index, code)
                            for p in topic.partitions
                        ),
                    )
                    for topic in response.topics
                )
            )
        case JoinGroupResponse():
            return JoinGroupResponse(code, member_id=response.member_id)
        case IncrementalAlterGroupConfigsResponse() | DescribeGroupConfigsResponse():
            return type(response)(code, response.resource_name)
        case (
            SyncGroupResponse()
            | HeartbeatResponse()
            | LeaveGroupResponse()
            | ConsumerGroupHeartbeatResponse()
            | ConsumerGroupPrepareAssignmentResponse()
            | ConsumerGroupInstallAssignmentResponse()
            | OffsetFetchResponse()
            | ListGroupsResponse()
        ):
            return type(response)(code)
    return response  # a read of several groups (Describe*): nothing of it was written


def _answer_waiting(group: object, out: CoordinatorResult, code: ErrorCode = UNKNOWN) -> int:
    """Rule 3 for the requests parked on a classic group's members; how many."""
    if not isinstance(group, ClassicGroup):
        return 0
    answered = 0
    for member in group.members.values():
        if member.awaiting_join is not None:
            out.reply(member.awaiting_join, JoinGroupResponse(code, member_id=member.member_id))
            answered += 1
        if member.awaiting_sync is not None:
            out.reply(member.awaiting_sync, SyncGroupResponse(code))
            answered += 1
    return answered


def _rebuild(
    state: GroupCoordinatorState,
    recorded: RecordedGroups,
    replay: Callable[[CoordinatorRecord], None],
    group_id: str,
    now_ms: int,
    out: CoordinatorResult,
    code: ErrorCode = UNKNOWN,
) -> int:
    """Rule 2 for ``group_id``, its waiting requests answered ``code``; how many."""
    kept = state.consumer
    answered = _answer_waiting(state.groups.pop(group_id, None), out, code)
    answered += _answer_waiting(kept.pending_upgrades.pop(group_id, None), out, code)
    state.offsets.by_group.pop(group_id, None)
    kept.group_configs.pop(group_id, None)
    kept.effective_configs.pop(group_id, None)
    kept.names.forget(group_id)
    kept.spec_cache.pop(group_id, None)
    kept.in_flight.pop(group_id, None)
    state.timer.cancel_owned(group_id)
    for record in recorded.records_of(group_id):
        replay(record)
    out.extend(classic_rebalance.on_loaded(state, now_ms, only=group_id))
    fencing.on_loaded(state, now_ms, only=group_id)
    return answered


def recover(
    state: GroupCoordinatorState,
    recorded: RecordedGroups,
    replay: Callable[[CoordinatorRecord], None],
    group_id: str | None,
    failed: str,
    error: Exception,
    now_ms: int,
    token: Hashable = None,
    request: object = None,
) -> CoordinatorResult:
    """Rules 2-4 after ``failed`` (a request type or timer name) raised ``error``."""
    out = CoordinatorResult()
    answered = 0
    if request is not None:
        out.reply(token, error_response(request))
        answered += 1
    if group_id is not None:
        answered += _rebuild(state, recorded, replay, group_id, now_ms, out)
    out.failures.append(HandlerFailure(failed, group_id, error, answered))
    return out


def restore(
    state: GroupCoordinatorState,
    recorded: RecordedGroups,
    replay: Callable[[CoordinatorRecord], None],
    failed: CoordinatorResult,
    durable: Iterable[CoordinatorRecord],
    code: ErrorCode,
    now_ms: int,
) -> CoordinatorResult:
    """Rule 5: ``failed``'s records were not written; ``durable`` is what the store holds."""
    groups = dict.fromkeys(_key_group(record.key) for record in failed.records)
    out = CoordinatorResult()
    for reply in failed.replies:
        out.reply(reply.token, failed_response(reply.response, code))
    for group_id in groups:
        recorded.by_group.pop(group_id, None)
    recorded.note(record for record in durable if _key_group(record.key) in groups)
    for group_id in groups:
        _rebuild(state, recorded, replay, group_id, now_ms, out, code)
    out.failures.extend(failed.failures)
    return out


def reload(
    state: GroupCoordinatorState,
    recorded: RecordedGroups,
    replay: Callable[[CoordinatorRecord], None],
    group_ids: Iterable[str],
    code: ErrorCode,
    now_ms: int,
) -> CoordinatorResult:
    """A coordinator failover of ``group_ids``: each is unloaded (every request waiting on
    it answered ``code``) and loaded again from its records with fresh timers, as rule 2
    rebuilds a group. Kafka: ``GroupMetadataManager.onUnloaded`` fails the members' pending
    joins and syncs with NOT_COORDINATOR; the new leader of the ``__consumer_offsets``
    partition replays its records and runs ``onLoaded``."""
    out = CoordinatorResult()
    for group_id in group_ids:
        _rebuild(state, recorded, replay, group_id, now_ms, out, code)
    return out
