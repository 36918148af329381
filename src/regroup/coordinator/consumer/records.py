"""KIP-848 consumer group state <-> records: building them, and replaying them.

Kafka: ``GroupCoordinatorRecordHelpers`` (builders) and
``GroupMetadataManager.replay`` (replay). Replay is the only path by which a
consumer group changes: handlers build records, their operation (``txn``)
replays them as it writes them, and loading a group from its log replays the
same records, so the two are equal.
"""

from __future__ import annotations

from collections.abc import Mapping

from regroup.assignors.consumer.api import TopicMetadata
from regroup.classic.group.group import ClassicGroup
from regroup.consumer.group.group import ConsumerGroup, IllegalGroupStateError, ResolvedRegex
from regroup.consumer.group.group_member import (
    Assignment,
    ClassicMemberMetadata,
    ConsumerGroupMember,
    MemberState,
    assignment_from_topic_partitions,
    assignment_to_topic_partitions,
)
from regroup.coordinator.state import GroupCoordinatorState
from regroup.model.requests.classic import JoinGroupRequestProtocol
from regroup.records import CoordinatorRecord
from regroup.records.consumer import ClassicMemberMetadata as RecordClassicMemberMetadata
from regroup.records.consumer import (
    ClassicProtocol,
    ConsumerGroupConfigKey,
    ConsumerGroupConfigValue,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    GroupConfigEntry,
    PartitionMetadataTopic,
)

__all__ = [
    "RECORD_KEYS",
    "config_record",
    "current_assignment_record",
    "current_assignment_tombstone",
    "epoch_record",
    "group_tombstone",
    "member_metadata_record",
    "member_metadata_tombstone",
    "partition_metadata_record",
    "partition_metadata_tombstone",
    "regex_record",
    "regex_tombstone",
    "replay",
    "target_member_record",
    "target_member_tombstone",
    "target_metadata_record",
    "target_metadata_tombstone",
]


# -- builders --------------------------------------------------------------------------


def epoch_record(group_id: str, epoch: int) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupMetadataKey(group_id), ConsumerGroupMetadataValue(epoch))


def group_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupMetadataKey(group_id), None)


def partition_metadata_record(
    group_id: str, topics: Mapping[str, TopicMetadata]
) -> CoordinatorRecord:
    value = ConsumerGroupPartitionMetadataValue(
        tuple(
            PartitionMetadataTopic(t.topic_id, t.name, t.partitions)
            for t in sorted(topics.values(), key=lambda t: t.name)
        )
    )
    return CoordinatorRecord(ConsumerGroupPartitionMetadataKey(group_id), value)


def partition_metadata_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupPartitionMetadataKey(group_id), None)


def member_metadata_record(group_id: str, member: ConsumerGroupMember) -> CoordinatorRecord:
    value = ConsumerGroupMemberMetadataValue(
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=tuple(sorted(member.subscribed_topic_names)),
        subscribed_topic_regex=member.subscribed_topic_regex or None,
        rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor,
        client_assignors=member.client_assignors,
        classic_member_metadata=_classic_to_record(member.classic_member_metadata),
    )
    return CoordinatorRecord(ConsumerGroupMemberMetadataKey(group_id, member.member_id), value)


def _classic_to_record(
    classic: ClassicMemberMetadata | None,
) -> RecordClassicMemberMetadata | None:
    if classic is None:
        return None
    return RecordClassicMemberMetadata(
        classic.session_timeout_ms,
        tuple(ClassicProtocol(p.name, p.metadata) for p in classic.supported_protocols),
    )


def _classic_from_record(
    classic: RecordClassicMemberMetadata | None,
) -> ClassicMemberMetadata | None:
    if classic is None:
        return None
    return ClassicMemberMetadata(
        classic.session_timeout_ms,
        tuple(JoinGroupRequestProtocol(p.name, p.metadata) for p in classic.supported_protocols),
    )


def member_metadata_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupMemberMetadataKey(group_id, member_id), None)


def target_member_record(group_id: str, member_id: str, target: Assignment) -> CoordinatorRecord:
    value = ConsumerGroupTargetAssignmentMemberValue(assignment_to_topic_partitions(target))
    return CoordinatorRecord(ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), value)


def target_member_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), None)


def target_metadata_record(group_id: str, epoch: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        ConsumerGroupTargetAssignmentMetadataKey(group_id),
        ConsumerGroupTargetAssignmentMetadataValue(epoch),
    )


def target_metadata_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupTargetAssignmentMetadataKey(group_id), None)


def current_assignment_record(group_id: str, member: ConsumerGroupMember) -> CoordinatorRecord:
    value = ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=member.member_epoch,
        previous_member_epoch=member.previous_member_epoch,
        state=int(member.state),
        assigned_partitions=assignment_to_topic_partitions(member.assigned_partitions),
        partitions_pending_revocation=assignment_to_topic_partitions(
            member.partitions_pending_revocation
        ),
    )
    return CoordinatorRecord(
        ConsumerGroupCurrentMemberAssignmentKey(group_id, member.member_id), value
    )


def current_assignment_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id), None)


def regex_record(group_id: str, regex: str, resolved: ResolvedRegex) -> CoordinatorRecord:
    value = ConsumerGroupRegularExpressionValue(
        tuple(sorted(resolved.topics)), resolved.version, resolved.timestamp
    )
    return CoordinatorRecord(ConsumerGroupRegularExpressionKey(group_id, regex), value)


def regex_tombstone(group_id: str, regex: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupRegularExpressionKey(group_id, regex), None)


def config_record(group_id: str, configs: Mapping[str, str]) -> CoordinatorRecord:
    if not configs:
        return CoordinatorRecord(ConsumerGroupConfigKey(group_id), None)
    value = ConsumerGroupConfigValue(
        tuple(GroupConfigEntry(name, configs[name]) for name in sorted(configs))
    )
    return CoordinatorRecord(ConsumerGroupConfigKey(group_id), value)


# -- replay ----------------------------------------------------------------------------------


def replay(state: GroupCoordinatorState, record: CoordinatorRecord) -> None:
    """Apply one KIP-848 record: its key is one of ``RECORD_KEYS``."""
    key = record.key
    value = record.value
    if type(key) is ConsumerGroupCurrentMemberAssignmentKey:
        # The record of every heartbeat that moves a member: straight to its branch below.
        current = _group(state, key.group_id, create=value is not None)
        if current is not None:
            _replay_current(current, key, value)
        return
    if isinstance(key, ConsumerGroupConfigKey):
        configs = state.consumer.group_configs
        if value is None:
            configs.pop(key.group_id, None)
        else:
            assert isinstance(value, ConsumerGroupConfigValue)
            configs[key.group_id] = {entry.name: entry.value for entry in value.configs}
        return
    assert isinstance(key, _GROUP_KEYS)
    group_id = key.group_id
    if isinstance(key, ConsumerGroupMetadataKey) and value is None:
        existing = state.groups.pop(group_id, None)
        if isinstance(existing, ConsumerGroup):
            existing.mark_dead()
        return
    group = _group(state, group_id, create=value is not None)
    if group is None:
        return
    if isinstance(key, ConsumerGroupMetadataKey):
        assert isinstance(value, ConsumerGroupMetadataValue)
        group.set_group_epoch(value.epoch)
    elif isinstance(key, ConsumerGroupPartitionMetadataKey):
        if value is None:
            group.set_subscription_metadata({})
        else:
            assert isinstance(value, ConsumerGroupPartitionMetadataValue)
            group.set_subscription_metadata(
                {
                    t.topic_name: TopicMetadata(t.topic_id, t.topic_name, t.num_partitions)
                    for t in value.topics
                }
            )
    elif isinstance(key, ConsumerGroupMemberMetadataKey):
        if value is None:
            group.remove_member(key.member_id)
        else:
            assert isinstance(value, ConsumerGroupMemberMetadataValue)
            group.put_member_metadata(
                ConsumerGroupMember(
                    member_id=key.member_id,
                    instance_id=value.instance_id,
                    rack_id=value.rack_id,
                    rebalance_timeout_ms=value.rebalance_timeout_ms,
                    client_id=value.client_id,
                    client_host=value.client_host,
                    subscribed_topic_names=frozenset(value.subscribed_topic_names),
                    subscribed_topic_regex=value.subscribed_topic_regex or "",
                    server_assignor=value.server_assignor,
                    client_assignors=value.client_assignors,
                    classic_member_metadata=_classic_from_record(value.classic_member_metadata),
                )
            )
    elif isinstance(key, ConsumerGroupTargetAssignmentMetadataKey):
        if value is None:
            group.set_assignment_epoch(-1)
        else:
            assert isinstance(value, ConsumerGroupTargetAssignmentMetadataValue)
            group.set_assignment_epoch(value.assignment_epoch)
    elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
        if value is None:
            group.remove_target(key.member_id)
        else:
            assert isinstance(value, ConsumerGroupTargetAssignmentMemberValue)
            group.set_target(
                key.member_id, assignment_from_topic_partitions(value.topic_partitions)
            )
    elif isinstance(key, ConsumerGroupCurrentMemberAssignmentKey):
        _replay_current(group, key, value)
    elif isinstance(key, ConsumerGroupRegularExpressionKey):
        if value is None:
            group.remove_regex(key.regular_expression)
        else:
            assert isinstance(value, ConsumerGroupRegularExpressionValue)
            group.put_regex(
                key.regular_expression,
                ResolvedRegex(frozenset(value.topics), value.version, value.timestamp),
            )


#: The keys of the records of a consumer group's own state.
_GROUP_KEYS = (
    ConsumerGroupMetadataKey,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupRegularExpressionKey,
)
#: Every key ``replay`` applies: a group's records, and its config overrides.
RECORD_KEYS = (*_GROUP_KEYS, ConsumerGroupConfigKey)


def _group(state: GroupCoordinatorState, group_id: str, *, create: bool) -> ConsumerGroup | None:
    """The consumer group a record applies to (Kafka ``getOrMaybeCreatePersistedConsumerGroup``).

    A simple classic group (created by replaying an offset commit from outside
    group management) is described by no record, so the consumer group that
    took its place when a KIP-848 member joined replaces it here too, as in
    Kafka: the offsets were written before the consumer group, and without this
    the records of such a group could never be replayed. A tombstone leaves a
    simple group alone (Kafka would replace it with an empty consumer group
    there too; with no consumer group to remove, regroup keeps the group the
    offsets belong to). Any other group of another type is a contradiction
    (Kafka: ``IllegalStateException``): ``IllegalGroupStateError``.
    """
    existing = state.groups.get(group_id)
    if existing is None:
        if not create:
            return None
        group = ConsumerGroup(group_id)
        state.groups[group_id] = group
        return group
    if not isinstance(existing, ConsumerGroup):
        if isinstance(existing, ClassicGroup) and existing.is_simple_group():
            if not create:
                return None
            del state.groups[group_id]
            return _group(state, group_id, create=True)
        raise IllegalGroupStateError(f"group {group_id} is not a consumer group")
    return existing


#: ``MemberState(value)`` as a lookup (an enum call costs more than the rest of the replay).
_STATES: dict[int, MemberState] = {state.value: state for state in MemberState}


def _replay_current(
    group: ConsumerGroup,
    key: ConsumerGroupCurrentMemberAssignmentKey,
    value: object,
) -> None:
    if value is None:
        if key.member_id in group.members:
            group.put_current_assignment(
                key.member_id,
                member_epoch=-1,
                previous_member_epoch=-1,
                state=MemberState.STABLE,
                assigned={},
                pending={},
            )
        return
    assert isinstance(value, ConsumerGroupCurrentMemberAssignmentValue)
    state = _STATES.get(value.state, MemberState.UNKNOWN)
    group.put_current_assignment(
        key.member_id,
        member_epoch=value.member_epoch,
        previous_member_epoch=value.previous_member_epoch,
        state=state,
        assigned=assignment_from_topic_partitions(value.assigned_partitions),
        pending=assignment_from_topic_partitions(value.partitions_pending_revocation),
    )
