"""ConsumerGroupDescribe and the GROUP config resource (KIP-848; Kafka 4.x).

ConsumerGroupDescribe (Kafka ``GroupMetadataManager.consumerGroupDescribe``):
per group id, the state, epochs, the assignor most members ask for (else the
default), and each member with its current and target assignment; topics
carry their names, and topics no longer in the metadata are left out. An
empty group id answers INVALID_GROUP_ID; a missing group or a classic group
GROUP_ID_NOT_FOUND ("Group X is not a consumer group.").

Group configs (KIP-848, "Dynamic Group Configuration"; Kafka ``GroupConfig``):
``consumer.session.timeout.ms`` and ``consumer.heartbeat.interval.ms`` per
group, each within the broker's ``group.consumer.min/max.*`` bounds, and the
heartbeat interval below the session timeout (INVALID_CONFIG otherwise; an
unknown name is INVALID_CONFIG too). They take effect at each member's next
heartbeat. A group's overrides are deleted with the group.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from regroup.consumer.group import ConsumerGroup
from regroup.consumer.group_member import Assignment
from regroup.consumer.target_assignment import preferred_server_assignor
from regroup.coordinator import consumer_records as rec
from regroup.coordinator.result import CoordinatorResult
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.consumer import (
    CONFIG_OP_DELETE,
    CONFIG_OP_SET,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedAssignment,
    DescribedGroup,
    DescribedGroupConfig,
    DescribedGroupMember,
    DescribedTopicPartitions,
    DescribeGroupConfigsRequest,
    DescribeGroupConfigsResponse,
    IncrementalAlterGroupConfigsRequest,
    IncrementalAlterGroupConfigsResponse,
)

if TYPE_CHECKING:
    from regroup.coordinator.consumer_manager import ConsumerGroupManager

__all__ = ["describe_group", "handle_alter_configs", "handle_describe", "handle_describe_configs"]


def handle_describe(
    manager: ConsumerGroupManager, token: Hashable, req: ConsumerGroupDescribeRequest, now_ms: int
) -> CoordinatorResult:
    groups = tuple(describe_group(manager, group_id) for group_id in req.group_ids)
    return CoordinatorResult().reply(token, ConsumerGroupDescribeResponse(groups))


def describe_group(manager: ConsumerGroupManager, group_id: str) -> DescribedGroup:
    if not group_id:
        return DescribedGroup(ErrorCode.INVALID_GROUP_ID, group_id, "The group id is empty.")
    group = manager.consumer_group(group_id)
    if group is None:
        return DescribedGroup(
            ErrorCode.GROUP_ID_NOT_FOUND, group_id, f"Group {group_id} is not a consumer group."
        )
    members = tuple(
        DescribedGroupMember(
            member_id=m.member_id,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            member_epoch=m.member_epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=tuple(sorted(m.subscribed_topic_names)),
            subscribed_topic_regex=m.subscribed_topic_regex or None,
            assignment=_described(manager, m.assigned_partitions),
            target_assignment=_described(manager, group.target_of(m.member_id)),
            # ConsumerGroupDescribe v1 (Kafka 4.0, KIP-1099): 0 classic, 1 consumer.
            member_type=0 if m.use_classic_protocol else 1,
        )
        for m in (group.members[mid] for mid in sorted(group.members))
    )
    return DescribedGroup(
        error_code=ErrorCode.NONE,
        group_id=group_id,
        group_state=group.state_name(),
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=_assignor_name(manager, group),
        members=members,
    )


def _assignor_name(manager: ConsumerGroupManager, group: ConsumerGroup) -> str:
    in_flight = manager.in_flight.get(group.group_id)
    if in_flight is not None:
        return in_flight.assignor
    return preferred_server_assignor(group.members, manager.configured_assignors())


def _described(manager: ConsumerGroupManager, assignment: Assignment) -> DescribedAssignment:
    image = manager.state.metadata
    topics = []
    for topic_id in sorted(assignment):
        topic = image.topic_by_id(topic_id)
        if topic is None or not assignment[topic_id]:
            continue
        topics.append(
            DescribedTopicPartitions(topic_id, topic.name, tuple(sorted(assignment[topic_id])))
        )
    return DescribedAssignment(tuple(topics))


# -- configs ---------------------------------------------------------------------------------


def _bounds(manager: ConsumerGroupManager) -> dict[str, tuple[int, int, int]]:
    """Config name -> (min, max, broker default)."""
    config = manager.state.config
    return {
        "consumer.session.timeout.ms": (
            config.group_consumer_min_session_timeout_ms,
            config.group_consumer_max_session_timeout_ms,
            config.group_consumer_session_timeout_ms,
        ),
        "consumer.heartbeat.interval.ms": (
            config.group_consumer_min_heartbeat_interval_ms,
            config.group_consumer_max_heartbeat_interval_ms,
            config.group_consumer_heartbeat_interval_ms,
        ),
    }


def _altered(
    manager: ConsumerGroupManager, req: IncrementalAlterGroupConfigsRequest
) -> dict[str, str]:
    bounds = _bounds(manager)
    configs = dict(manager.group_configs.get(req.resource_name, {}))
    for entry in req.configs:
        if entry.name not in bounds:
            raise KafkaProtocolError(
                ErrorCode.INVALID_CONFIG, f"Unknown group config name: {entry.name}"
            )
        if entry.config_operation == CONFIG_OP_DELETE:
            configs.pop(entry.name, None)
        elif entry.config_operation == CONFIG_OP_SET:
            low, high, _ = bounds[entry.name]
            try:
                value = int(entry.value or "")
            except ValueError:
                raise KafkaProtocolError(
                    ErrorCode.INVALID_CONFIG, f"{entry.name} must be an integer"
                ) from None
            if not low <= value <= high:
                raise KafkaProtocolError(
                    ErrorCode.INVALID_CONFIG,
                    f"{entry.name} must be between {low} and {high}, got {value}",
                )
            configs[entry.name] = str(value)
        else:
            raise KafkaProtocolError(
                ErrorCode.INVALID_CONFIG,
                f"Operation {entry.config_operation} is not supported for {entry.name}",
            )
    session = int(
        configs.get("consumer.session.timeout.ms", bounds["consumer.session.timeout.ms"][2])
    )
    interval = int(
        configs.get("consumer.heartbeat.interval.ms", bounds["consumer.heartbeat.interval.ms"][2])
    )
    if interval >= session:
        raise KafkaProtocolError(
            ErrorCode.INVALID_CONFIG,
            "consumer.heartbeat.interval.ms must be less than consumer.session.timeout.ms",
        )
    return configs


def handle_alter_configs(
    manager: ConsumerGroupManager,
    token: Hashable,
    req: IncrementalAlterGroupConfigsRequest,
    now_ms: int,
) -> CoordinatorResult:
    if not req.resource_name:
        return CoordinatorResult().reply(
            token,
            IncrementalAlterGroupConfigsResponse(
                ErrorCode.INVALID_GROUP_ID, req.resource_name, "The group id is empty."
            ),
        )
    try:
        configs = _altered(manager, req)
    except KafkaProtocolError as exc:
        return CoordinatorResult().reply(
            token, IncrementalAlterGroupConfigsResponse(exc.code, req.resource_name, exc.message)
        )
    result = CoordinatorResult()
    if not req.validate_only and configs != manager.group_configs.get(req.resource_name, {}):
        record = rec.config_record(req.resource_name, configs)
        result.records.append(record)
        manager.replay(record)
    return result.reply(
        token, IncrementalAlterGroupConfigsResponse(ErrorCode.NONE, req.resource_name)
    )


def handle_describe_configs(
    manager: ConsumerGroupManager, token: Hashable, req: DescribeGroupConfigsRequest, now_ms: int
) -> CoordinatorResult:
    overrides = manager.group_configs.get(req.resource_name, {})
    described = tuple(
        DescribedGroupConfig(name, overrides.get(name, str(default)), name not in overrides)
        for name, (_, _, default) in sorted(_bounds(manager).items())
    )
    return CoordinatorResult().reply(
        token, DescribeGroupConfigsResponse(ErrorCode.NONE, req.resource_name, configs=described)
    )
