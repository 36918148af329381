"""Compute a new target assignment with a server-side assignor.

KIP-848, "Assignment Epoch - Compute the group assignment" and "Server Side
Mode"; Kafka: ``TargetAssignmentBuilder``. When the group epoch is ahead of the
assignment epoch, the coordinator hands the assignor

* every member (after this heartbeat's change) with the ids of the topics it
  subscribes to - names and resolved regex topics, only those that exist in the
  subscription metadata (unknown names are dropped silently, as in Kafka) - its
  rack, instance id and current *target* (stickiness is the assignor's job);
* the subscription type (``regroup.consumer.group.subscription``);
* the subscribed topics' partition counts.

The result gives every member its new target (a member the assignor leaves out
gets an empty one). The caller writes one target record per member whose
target changed, then the assignment epoch = the group epoch.

The assignor most members ask for (``ServerAssignor``) runs; without votes,
the default (the first of ``group.consumer.assignors``). Ties go to the
assignor listed first in the broker config, then by name (Kafka takes the first
of its vote map; the KIP says "the most common one").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from regroup.assignors.consumer.api import (
    ConsumerGroupPartitionAssignor,
    GroupSpec,
    MemberSubscriptionSpec,
    SubscribedTopicDescriber,
)
from regroup.consumer.group.group import ConsumerGroup
from regroup.consumer.group.group_member import Assignment, ConsumerGroupMember
from regroup.consumer.group.subscription import subscription_type

__all__ = [
    "SpecCache",
    "TargetAssignmentResult",
    "build_target_assignment",
    "preferred_server_assignor",
]


@dataclass(frozen=True, slots=True)
class TargetAssignmentResult:
    #: Every member's new target.
    targets: Mapping[str, Assignment]
    #: Only the members whose target differs from the current one (records to write).
    changed: Mapping[str, Assignment]


def preferred_server_assignor(
    members: Mapping[str, ConsumerGroupMember], configured: Sequence[str]
) -> str:
    """The assignor most members ask for; the first configured one when none asks."""
    votes = Counter(m.server_assignor for m in members.values() if m.server_assignor)
    if not votes:
        return configured[0]
    order = {name: index for index, name in enumerate(configured)}
    return min(votes, key=lambda name: (-votes[name], order.get(name, len(order)), name))


#: Per member: what its ``MemberSubscriptionSpec`` was built from, and the spec
#: (``build_target_assignment``'s ``spec_cache``).
SpecCache = dict[str, tuple[tuple[object, ...], MemberSubscriptionSpec]]


def build_target_assignment(
    group: ConsumerGroup,
    members: Mapping[str, ConsumerGroupMember],
    assignor: ConsumerGroupPartitionAssignor,
    spec_cache: SpecCache | None = None,
) -> TargetAssignmentResult:
    """Run ``assignor`` over ``members`` (the group's members after this change).

    ``spec_cache`` (kept by the caller between computations of one group) saves
    rebuilding the spec of a member whose subscription, rack, instance id,
    target and topics equal last time's (mostly the very same objects, so the
    comparison is by identity): a computation then costs little per unchanged
    member. The result is the same with or without it.

    Raises whatever the assignor raises (Kafka: ``PartitionAssignorException``,
    answered UNKNOWN_SERVER_ERROR with nothing written).
    """
    metadata = group.subscription_metadata
    ids_by_name = {name: topic.topic_id for name, topic in metadata.items()}
    cache: SpecCache = {} if spec_cache is None else spec_cache
    cached = cache.get
    specs: dict[str, MemberSubscriptionSpec] = {}
    targets_now = group.target_assignment
    current_target = targets_now.get
    regexes = group.resolved_regexes
    for member_id, member in members.items():
        target = current_target(member_id)
        regex = member.subscribed_topic_regex
        inputs = (
            member.subscribed_topic_names,
            regex,
            regexes.get(regex) if regex else None,
            member.rack_id,
            member.instance_id,
            target,
            metadata,
        )
        hit = cached(member_id)
        if hit is not None and hit[0] == inputs:
            specs[member_id] = hit[1]
            continue
        topic_ids = frozenset(
            ids_by_name[name] for name in group.member_topic_names(member) if name in ids_by_name
        )
        spec = MemberSubscriptionSpec(
            subscribed_topic_ids=topic_ids,
            rack_id=member.rack_id,
            instance_id=member.instance_id,
            assigned_partitions=group.target_of(member_id) if target is None else target,
        )
        specs[member_id] = spec
        cache[member_id] = (inputs, spec)
    if len(cache) != len(specs):
        for gone in cache.keys() - specs.keys():
            del cache[gone]
    group_spec = GroupSpec(specs, subscription_type(members))
    describer = SubscribedTopicDescriber({topic.topic_id: topic for topic in metadata.values()})
    result = assignor.assign(group_spec, describer)
    assigned_of = result.members.get
    targets: dict[str, Assignment] = {}
    changed: dict[str, Assignment] = {}
    for member_id in members:
        assigned = assigned_of(member_id)
        current = current_target(member_id)
        new_target: Assignment
        if assigned is None:
            new_target = {}
        elif current is not None and (
            assigned.partitions is current or assigned.partitions == current
        ):
            targets[member_id] = current  # unchanged: the group's own map (no copy, no record)
            continue
        else:
            new_target = {t: frozenset(p) for t, p in assigned.partitions.items() if p}
        targets[member_id] = new_target
        if current is None or current != new_target:
            changed[member_id] = new_target
    return TargetAssignmentResult(targets, changed)
