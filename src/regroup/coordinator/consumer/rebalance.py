"""The KIP-848 rebalance: bump the group epoch, compute the target assignment, install it.

KIP-848, "Group Epoch" and "Target Assignment"; Kafka
``GroupMetadataManager.updateTargetAssignment`` with ``TargetAssignmentBuilder``
(``regroup.consumer.group.target_assignment`` here).

1. Anything that changes what the group should look like bumps the group epoch
   (``bump_epoch``): a member joins or leaves, a subscription or an assignor
   changes, the partition metadata changes ("Group Epoch - Trigger a
   rebalance"). The subscription metadata (the subscribed topics that exist) is
   refreshed with it, and written when it changed.
2. While the group epoch is ahead of the assignment epoch, the target is
   recomputed: by the server-side assignor the members prefer
   (``compute_target``), or by a member running a client-side assignor
   (``client_assignors``). A member chosen for that is dropped from the work
   when a new target is computed on the server (``drop_in_flight``).
3. ``install_target`` writes a record per member whose target changed, then the
   assignment epoch; members then reconcile to it one heartbeat at a time.

A new metadata image re-resolves every regular expression and refreshes every
group's subscription metadata at once (``on_metadata_update``; Kafka does it
lazily, at the next heartbeat).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from regroup.assignors.consumer.api import (
    ConsumerGroupPartitionAssignor,
    GroupAssignment,
    GroupSpec,
    SubscribedTopicDescriber,
    TopicMetadata,
)
from regroup.assignors.errors import PartitionAssignorError
from regroup.consumer.group.group import ConsumerGroup, ResolvedRegex
from regroup.consumer.group.group_member import Assignment, ConsumerGroupMember
from regroup.consumer.group.subscription import InvalidRegexError, resolve_regex
from regroup.consumer.group.target_assignment import (
    build_target_assignment,
    preferred_server_assignor,
)
from regroup.coordinator.consumer import records
from regroup.coordinator.consumer.timers import client_assign_key
from regroup.coordinator.consumer.txn import ConsumerTxn
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.events.schema import (
    GroupEpochBumped,
    MemberAssignmentChanged,
    TargetAssignmentComputed,
)
from regroup.model.topic_partition import TopicPartition

__all__ = [
    "ScriptedAssignor",
    "bump_epoch",
    "compute_target",
    "configured_assignors",
    "drop_in_flight",
    "emit_assignment_changed",
    "install_target",
    "on_metadata_update",
    "partitions_by_name",
    "resolve",
    "server_assignor_name",
    "subscription_metadata_changed",
]


class ScriptedAssignor(ConsumerGroupPartitionAssignor):
    """An assignor that returns a given result, or fails with a given message
    (``regroup replay`` scripts, tests).

    Used once, unless ``repeat``: then it answers every computation until a newer
    scripted result replaces it (Kafka's test ``MockPartitionAssignor``).
    """

    name = "scripted"

    def __init__(
        self, assignment: GroupAssignment | None, error: str | None = None, repeat: bool = False
    ) -> None:
        self._assignment = assignment
        self._error = error
        self.repeat = repeat

    def assign(
        self, group_spec: GroupSpec, subscribed_topic_describer: SubscribedTopicDescriber
    ) -> GroupAssignment:
        if self._assignment is None:
            raise PartitionAssignorError(self._error or "scripted assignor failure")
        return self._assignment


def configured_assignors(state: GroupCoordinatorState) -> tuple[str, ...]:
    """``group.consumer.assignors``: the server-side assignors members may ask for."""
    return tuple(state.config.group_consumer_assignors)


def server_assignor_name(state: GroupCoordinatorState, group: ConsumerGroup) -> str:
    """The server-side assignor most members ask for, else the first configured one."""
    return preferred_server_assignor(group.members, configured_assignors(state))


def partitions_by_name(
    state: GroupCoordinatorState, group: ConsumerGroup, assignment: Assignment
) -> tuple[TopicPartition, ...]:
    """``assignment`` by topic name, sorted (``partition_names``)."""
    return state.consumer.names.partitions_by_name(group, state.metadata, assignment)


# -- the group epoch ---------------------------------------------------------------------


def _subscription_metadata(
    state: GroupCoordinatorState, group: ConsumerGroup
) -> dict[str, TopicMetadata]:
    """The subscribed topics that exist, from the current metadata image."""
    image = state.metadata
    topics: dict[str, TopicMetadata] = {}
    for name in sorted(group.subscribed_topic_names()):
        topic = image.topic(name)
        if topic is not None:
            topics[name] = TopicMetadata(
                topic.topic_id, topic.name, topic.partitions, topic.partition_racks
            )
    return topics


def _metadata_equal(a: Mapping[str, TopicMetadata], b: Mapping[str, TopicMetadata]) -> bool:
    def key(m: Mapping[str, TopicMetadata]) -> dict[str, tuple[object, int]]:
        return {n: (t.topic_id, t.partitions) for n, t in m.items()}

    return key(a) == key(b)


def subscription_metadata_changed(state: GroupCoordinatorState, group: ConsumerGroup) -> bool:
    """The subscribed topics that exist differ from the group's subscription metadata."""
    return not _metadata_equal(_subscription_metadata(state, group), group.subscription_metadata)


def resolve(
    state: GroupCoordinatorState,
    regex: str,
    now_ms: int,
    may_describe_topic: Callable[[str], bool] | None = None,
) -> ResolvedRegex:
    """The topics of the current image that ``regex`` matches (none for an invalid one).

    With topic authorization, only those the requester may DESCRIBE (Kafka's
    ``GroupMetadataManager.filterTopicDescribeAuthorizedTopics``): a topic it may not
    describe is neither assigned nor named to the group. Without a request context
    there, nothing (the callers resolve only under one).
    """
    try:
        topics = resolve_regex(regex, state.metadata.topics_by_name)
    except InvalidRegexError:
        topics = frozenset()
    if state.consumer.topic_authorization:
        allowed = may_describe_topic or (lambda _: False)
        topics = frozenset(t for t in topics if allowed(t))
    return ResolvedRegex(topics, state.consumer.metadata_version, now_ms)


def bump_epoch(txn: ConsumerTxn, reason: str) -> None:
    """Refresh the subscription metadata, then write the next group epoch."""
    group = txn.group
    assert group is not None
    metadata = _subscription_metadata(txn.state, group)
    if not _metadata_equal(metadata, group.subscription_metadata):
        txn.write(records.partition_metadata_record(txn.group_id, metadata))
    epoch = group.group_epoch + 1
    txn.write(records.epoch_record(txn.group_id, epoch))
    txn.emit(GroupEpochBumped(ts_ms=txn.now_ms, group_id=txn.group_id, epoch=epoch, reason=reason))


def on_metadata_update(state: GroupCoordinatorState, now_ms: int) -> CoordinatorResult:
    """Topics created, deleted or grown: re-resolve regexes, refresh metadata, bump epochs.

    KIP-848, "Group Epoch - Trigger a rebalance": "The partition metadata is
    updated. For instance when a new partition is added or a new topic matching
    the subscribed topics is created." Kafka refreshes lazily on the next
    heartbeat; regroup refreshes every consumer group at once.
    """
    state.consumer.metadata_version += 1
    results = []
    for group_id in sorted(state.groups):
        group = state.consumer_group(group_id)
        if group is None or group.dead:
            continue
        txn = ConsumerTxn(state, group_id, now_ms)
        changed = False
        # With topic authorization a regex resolves only under a heartbeat's request
        # context: the next heartbeat refreshes it (Kafka's condition 4, new topics, in
        # ``maybeUpdateRegularExpressions``; ``regex_refresh``).
        stale = () if state.consumer.topic_authorization else group.resolved_regexes.items()
        for regex, resolved in sorted(stale):
            fresh = resolve(state, regex, now_ms)
            if fresh.topics != resolved.topics:
                txn.write(records.regex_record(group_id, regex, fresh))
                changed = True
        metadata = _subscription_metadata(state, group)
        if changed or not _metadata_equal(metadata, group.subscription_metadata):
            bump_epoch(txn, "metadata_changed")
        results.append(txn.finish())
    return CoordinatorResult.merge(results)


# -- the target assignment ---------------------------------------------------------------


def drop_in_flight(
    state: GroupCoordinatorState, group_id: str, member_id: str | None = None
) -> None:
    """No member computes the group's target with a client-side assignor any more.

    With ``member_id``: only when that member is the one chosen (it left).
    """
    if member_id is not None:
        in_flight = state.consumer.in_flight.get(group_id)
        if in_flight is None or in_flight.member_id != member_id:
            return
    state.consumer.in_flight.pop(group_id, None)
    state.timer.cancel(client_assign_key(group_id))


def compute_target(txn: ConsumerTxn) -> None:
    """Run the server-side assignor, write the new target (Kafka ``updateTargetAssignment``)."""
    group = txn.group
    assert group is not None
    state = txn.state
    drop_in_flight(state, txn.group_id)
    scripted = state.consumer.scripted.get(txn.group_id)
    if scripted:
        head = scripted[0]
        repeat = isinstance(head, ScriptedAssignor) and head.repeat
        assignor = head if repeat else scripted.pop(0)
        name = assignor.name
    else:
        name = server_assignor_name(state, group)
        assignor = state.consumer.assignor_resolver(name)
    specs = state.consumer.spec_cache.setdefault(txn.group_id, {})
    result = build_target_assignment(group, group.members, assignor, specs)
    install_target(txn, result.targets, group.group_epoch, name, result.changed)


def install_target(
    txn: ConsumerTxn,
    targets: Mapping[str, Assignment],
    epoch: int,
    assignor_name: str,
    changed: Mapping[str, Assignment] | None = None,
) -> None:
    """Write a target record per member whose target changed (by member id), then the epoch.

    ``changed``: the members of ``targets`` whose target differs from the group's,
    when the caller knows them already (``build_target_assignment`` does); the
    records are the same, without a walk over every member.
    """
    group = txn.group
    assert group is not None
    current = group.target_assignment
    for member_id in sorted(targets if changed is None else changed):
        if member_id not in group.members:
            continue
        target = targets[member_id]
        now = current.get(member_id)
        if now is None or (now is not target and now != target):
            txn.write(records.target_member_record(txn.group_id, member_id, target))
    txn.write(records.target_metadata_record(txn.group_id, epoch))
    txn.emit(
        TargetAssignmentComputed(
            ts_ms=txn.now_ms,
            group_id=txn.group_id,
            epoch=epoch,
            assignor=assignor_name,
            assignment=txn.state.consumer.names.targets_by_name(group, txn.state.metadata),
        )
    )


def emit_assignment_changed(txn: ConsumerTxn, member: ConsumerGroupMember) -> None:
    """The ``member_assignment_changed`` event of one reconciliation step."""
    group = txn.group
    assert group is not None
    state = txn.state
    txn.emit(
        MemberAssignmentChanged(
            ts_ms=txn.now_ms,
            group_id=txn.group_id,
            member_id=member.member_id,
            epoch=member.member_epoch,
            previous_epoch=member.previous_member_epoch,
            member_state=member.state.name,
            assigned=partitions_by_name(state, group, member.assigned_partitions),
            pending_revocation=partitions_by_name(
                state, group, member.partitions_pending_revocation
            ),
        )
    )
