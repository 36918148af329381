"""The order in which Kafka's classic assignors consider members.

Kafka's ``AbstractPartitionAssignor.MemberInfo.compareTo``: members with a
``group.instance.id`` (static members, KIP-345) come first, ordered by their
instance id; then dynamic members, ordered by member id. Both compare as Java
strings; Python compares code points rather than UTF-16 units, which differs
only for characters outside the Basic Multilingual Plane.

Ordering static members by instance id is what lets a static member keep the
same ``range`` partitions across restarts, though its member id changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from regroup.assignors.classic.api import Subscription

__all__ = ["member_sort_key", "sorted_members"]


def member_sort_key(member_id: str, group_instance_id: str | None) -> tuple[int, str]:
    """A key that sorts members as ``MemberInfo.compareTo`` does."""
    if group_instance_id is not None:
        return (0, group_instance_id)
    return (1, member_id)


def sorted_members(
    subscriptions: Mapping[str, Subscription], member_ids: Iterable[str] | None = None
) -> list[str]:
    """Member ids (all, or the given ones) in Kafka's member order."""
    ids = subscriptions.keys() if member_ids is None else member_ids
    return sorted(
        ids,
        key=lambda member_id: member_sort_key(
            member_id, subscriptions[member_id].group_instance_id
        ),
    )
