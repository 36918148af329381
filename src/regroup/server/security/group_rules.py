"""What each group API needs, on the version-neutral requests (Kafka's ``KafkaApis``).

``plan(check, request)`` says what to do with one request before it reaches the
coordinator: forward it (maybe with its unauthorized topics taken out) and
finish the coordinator's answer, or answer at once with Kafka's error. The
rules, as ``KafkaApis`` (4.x) applies them:

* JoinGroup, SyncGroup, Heartbeat, LeaveGroup, regroup's ConsumerGroupPrepare/
  InstallAssignment: READ on the GROUP, else GROUP_AUTHORIZATION_FAILED;
* ConsumerGroupHeartbeat: READ on the GROUP, and DESCRIBE on each subscribed TOPIC
  (TOPIC_AUTHORIZATION_FAILED naming the topics); a regex is not checked here: the
  heartbeat goes on with the principal's request context (``may_describe_topic``),
  and the coordinator resolves the regex to the topics it may DESCRIBE (Kafka's
  ``GroupMetadataManager.refreshRegularExpressions``);
* OffsetCommit: READ on the GROUP (else GROUP_AUTHORIZATION_FAILED on every
  partition) and READ on each TOPIC (else TOPIC_AUTHORIZATION_FAILED on its partitions);
* OffsetFetch: DESCRIBE on the GROUP (else GROUP_AUTHORIZATION_FAILED) and DESCRIBE
  on each TOPIC (TOPIC_AUTHORIZATION_FAILED per partition; left out when all topics
  were asked for);
* DescribeGroups, ConsumerGroupDescribe: DESCRIBE on each GROUP, else that group's
  GROUP_AUTHORIZATION_FAILED; a consumer group whose members' assignment or target
  assignment names a topic the principal may not DESCRIBE is answered
  TOPIC_AUTHORIZATION_FAILED with no members, so neither the topic's name nor its id
  leaves (Kafka's ``KafkaApis.handleConsumerGroupDescribe``);
* ListGroups: every group with DESCRIBE on the CLUSTER, else only the groups the
  principal may DESCRIBE;
* DeleteGroups: DELETE on each GROUP, else that group's GROUP_AUTHORIZATION_FAILED
  (Kafka's ``KafkaApis.handleDeleteGroupsRequest``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from regroup.model.errors import ErrorCode
from regroup.model.requests import admin, classic, consumer, offsets
from regroup.server.security.acl import CLUSTER_NAME, AclOperation, ResourceType

__all__ = ["Check", "Plan", "plan"]

#: ``check(operation, resource_type, name) -> allowed`` for the connection's principal.
Check = Callable[[AclOperation, ResourceType, str], bool]

GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED


@dataclass(frozen=True, slots=True)
class Plan:
    """Forward ``forward`` (``None``: answer at once) and pass the answer through ``finish``."""

    forward: object | None
    finish: Callable[[Any], Any]


def _same(answer: Any) -> Any:
    return answer


def _deny(response: object) -> Plan:
    return Plan(None, lambda _: response)


def _read_group(check: Check, group_id: str) -> bool:
    return check(AclOperation.READ, ResourceType.GROUP, group_id)


#: The requests that need READ on their group and nothing else, and their refusal.
_READ_GROUP: dict[type[Any], Callable[[Any], object]] = {
    classic.JoinGroupRequest: lambda r: classic.JoinGroupResponse(
        GROUP_DENIED, member_id=r.member_id
    ),
    classic.SyncGroupRequest: lambda _: classic.SyncGroupResponse(GROUP_DENIED),
    classic.HeartbeatRequest: lambda _: classic.HeartbeatResponse(GROUP_DENIED),
    classic.LeaveGroupRequest: lambda _: classic.LeaveGroupResponse(GROUP_DENIED),
    consumer.ConsumerGroupPrepareAssignmentRequest: lambda _: (
        consumer.ConsumerGroupPrepareAssignmentResponse(GROUP_DENIED)
    ),
    consumer.ConsumerGroupInstallAssignmentRequest: lambda _: (
        consumer.ConsumerGroupInstallAssignmentResponse(GROUP_DENIED)
    ),
}


def plan(check: Check, request: Any) -> Plan:
    """The plan for one neutral request (see the module docstring)."""
    refusal = _READ_GROUP.get(type(request))
    if refusal is not None:
        if _read_group(check, request.group_id):
            return Plan(request, _same)
        return _deny(refusal(request))
    if isinstance(request, consumer.ConsumerGroupHeartbeatRequest):
        return _consumer_heartbeat(check, request)
    if isinstance(request, offsets.OffsetCommitRequest):
        return _offset_commit(check, request)
    if isinstance(request, offsets.OffsetFetchRequest):
        return _offset_fetch(check, request)
    if isinstance(request, admin.DescribeGroupsRequest):
        return _describe(check, request.groups, _describe_classic, "groups", request)
    if isinstance(request, consumer.ConsumerGroupDescribeRequest):
        return _describe(check, request.group_ids, _describe_consumer, "group_ids", request)
    if isinstance(request, admin.ListGroupsRequest):
        return _list_groups(check, request)
    if isinstance(request, admin.DeleteGroupsRequest):
        return _delete_groups(check, request)
    raise TypeError(f"no authorization rule for {type(request).__name__}")


def _consumer_heartbeat(check: Check, request: consumer.ConsumerGroupHeartbeatRequest) -> Plan:
    if not _read_group(check, request.group_id):
        return _deny(consumer.ConsumerGroupHeartbeatResponse(GROUP_DENIED))
    names = request.subscribed_topic_names or ()
    denied = sorted(
        n for n in set(names) if not check(AclOperation.DESCRIBE, ResourceType.TOPIC, n)
    )
    if denied:
        return _deny(
            consumer.ConsumerGroupHeartbeatResponse(
                TOPIC_DENIED,
                error_message="The group member is not authorized to describe topics: "
                + ", ".join(denied),
            )
        )

    def may_describe_topic(name: str) -> bool:
        return check(AclOperation.DESCRIBE, ResourceType.TOPIC, name)

    return Plan(dataclasses.replace(request, may_describe_topic=may_describe_topic), _same)


def _offset_commit(check: Check, request: offsets.OffsetCommitRequest) -> Plan:
    def failed(topic: offsets.OffsetCommitRequestTopic, code: ErrorCode) -> Any:
        return offsets.OffsetCommitResponseTopic(
            topic.name,
            tuple(
                offsets.OffsetCommitResponsePartition(p.partition_index, code)
                for p in topic.partitions
            ),
        )

    if not _read_group(check, request.group_id):
        return _deny(
            offsets.OffsetCommitResponse(tuple(failed(t, GROUP_DENIED) for t in request.topics))
        )
    allowed = tuple(
        t for t in request.topics if check(AclOperation.READ, ResourceType.TOPIC, t.name)
    )
    if len(allowed) == len(request.topics):
        return Plan(request, _same)
    denied = tuple(failed(t, TOPIC_DENIED) for t in request.topics if t not in allowed)
    if not allowed:
        return _deny(offsets.OffsetCommitResponse(denied))

    def finish(answer: offsets.OffsetCommitResponse) -> offsets.OffsetCommitResponse:
        return dataclasses.replace(answer, topics=answer.topics + denied)

    return Plan(dataclasses.replace(request, topics=allowed), finish)


def _offset_fetch(check: Check, request: offsets.OffsetFetchRequest) -> Plan:
    if not check(AclOperation.DESCRIBE, ResourceType.GROUP, request.group_id):
        return _deny(offsets.OffsetFetchResponse(GROUP_DENIED))

    def describable(name: str) -> bool:
        return check(AclOperation.DESCRIBE, ResourceType.TOPIC, name)

    if request.topics is None:  # every committed topic: keep those the principal may describe

        def keep(answer: offsets.OffsetFetchResponse) -> offsets.OffsetFetchResponse:
            return dataclasses.replace(
                answer, topics=tuple(t for t in answer.topics if describable(t.name))
            )

        return Plan(request, keep)
    allowed = tuple(t for t in request.topics if describable(t.name))
    if len(allowed) == len(request.topics):
        return Plan(request, _same)
    denied = tuple(
        offsets.OffsetFetchResponseTopic(
            t.name,
            tuple(
                offsets.OffsetFetchResponsePartition(i, error_code=TOPIC_DENIED)
                for i in t.partition_indexes
            ),
        )
        for t in request.topics
        if t not in allowed
    )
    if not allowed:
        return _deny(offsets.OffsetFetchResponse(ErrorCode.NONE, denied))

    def finish(answer: offsets.OffsetFetchResponse) -> offsets.OffsetFetchResponse:
        return dataclasses.replace(answer, topics=answer.topics + denied)

    return Plan(dataclasses.replace(request, topics=allowed), finish)


def _describe_classic(group_id: str) -> Any:
    return admin.DescribedGroup(GROUP_DENIED, group_id, "")


def _describe_consumer(group_id: str) -> Any:
    return consumer.DescribedGroup(GROUP_DENIED, group_id)


#: Kafka's message for a described consumer group that names a topic the caller may not
#: DESCRIBE (``KafkaApis.handleConsumerGroupDescribe``).
UNDESCRIBABLE_TOPICS = (
    "The group has described topic(s) that the client is not authorized to describe."
)


def _hide_undescribable_topics(check: Check, group: Any) -> Any:
    """A consumer group as the caller may see it: unchanged, or TOPIC_AUTHORIZATION_FAILED
    with no members when an assignment or target assignment names a topic it may not
    DESCRIBE."""
    if not isinstance(group, consumer.DescribedGroup) or group.error_code != ErrorCode.NONE:
        return group
    names = {
        tp.topic_name
        for member in group.members
        for assignment in (member.assignment, member.target_assignment)
        for tp in assignment.topic_partitions
    }
    if all(check(AclOperation.DESCRIBE, ResourceType.TOPIC, n) for n in sorted(names)):
        return group
    return consumer.DescribedGroup(TOPIC_DENIED, group.group_id, UNDESCRIBABLE_TOPICS)


#: The operations Kafka reports for a GROUP (``AclEntry.supportedOperations(GROUP)``).
GROUP_OPERATIONS = (
    AclOperation.READ,
    AclOperation.DESCRIBE,
    AclOperation.DELETE,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
)


def authorized_operations(check: Check, group_id: str) -> int:
    """The ``authorized_operations`` bit field of a described group: bit ``code`` set for
    each operation the principal may perform (Kafka's ``Utils.to32BitField``)."""
    return sum(1 << int(op) for op in GROUP_OPERATIONS if check(op, ResourceType.GROUP, group_id))


def _describe(
    check: Check,
    group_ids: tuple[str, ...],
    denied_entry: Callable[[str], Any],
    field: str,
    request: Any,
) -> Plan:
    allowed = tuple(g for g in group_ids if check(AclOperation.DESCRIBE, ResourceType.GROUP, g))
    with_operations = bool(request.include_authorized_operations)
    consumer_groups = isinstance(request, consumer.ConsumerGroupDescribeRequest)
    if len(allowed) == len(group_ids) and not with_operations and not consumer_groups:
        return Plan(request, _same)
    response_type = (
        admin.DescribeGroupsResponse
        if isinstance(request, admin.DescribeGroupsRequest)
        else consumer.ConsumerGroupDescribeResponse
    )
    if not allowed:
        return _deny(response_type(tuple(denied_entry(g) for g in group_ids)))

    def described(group: Any) -> Any:
        group = _hide_undescribable_topics(check, group)
        if not with_operations or group.error_code != ErrorCode.NONE:
            return group
        operations = authorized_operations(check, group.group_id)
        return dataclasses.replace(group, authorized_operations=operations)

    def finish(answer: Any) -> Any:
        # Kafka answers in the request's order; the coordinator answered the allowed ones.
        answered = iter(answer.groups)
        groups = tuple(
            described(next(answered)) if g in allowed else denied_entry(g) for g in group_ids
        )
        return dataclasses.replace(answer, groups=groups)

    return Plan(dataclasses.replace(request, **{field: allowed}), finish)


def _delete_groups(check: Check, request: admin.DeleteGroupsRequest) -> Plan:
    names = request.groups_names
    allowed = tuple(g for g in names if check(AclOperation.DELETE, ResourceType.GROUP, g))
    if len(allowed) == len(names):
        return Plan(request, _same)

    def finish(answer: admin.DeleteGroupsResponse) -> admin.DeleteGroupsResponse:
        # Kafka answers the refused groups beside the coordinator's results.
        answered = iter(answer.results)
        results = tuple(
            next(answered) if g in allowed else admin.DeletedGroup(g, GROUP_DENIED) for g in names
        )
        return dataclasses.replace(answer, results=results)

    if not allowed:
        return _deny(finish(admin.DeleteGroupsResponse(())))
    return Plan(admin.DeleteGroupsRequest(allowed), finish)


def _list_groups(check: Check, request: admin.ListGroupsRequest) -> Plan:
    if check(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return Plan(request, _same)

    def keep(answer: admin.ListGroupsResponse) -> admin.ListGroupsResponse:
        groups = tuple(
            g for g in answer.groups if check(AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)
        )
        return dataclasses.replace(answer, groups=groups)

    return Plan(request, keep)
