"""What ``sticky`` and ``cooperative-sticky`` share (Kafka: ``AbstractStickyAssignor``).

Both run the same engine (``sticky_engine``); they differ only in where a
member's previous ownership comes from (``member_data``) and in whether
partitions that change owner are withheld until revoked (``cooperative``).
"""

from __future__ import annotations

import abc
from typing import ClassVar

from regroup.assignors.classic.api import (
    Assignment,
    ClusterMetadata,
    ConsumerPartitionAssignor,
    GroupAssignment,
    GroupSubscription,
    Subscription,
)
from regroup.assignors.classic.sticky_engine import MemberData, StickyResult, sticky_assign

__all__ = ["AbstractStickyAssignor"]


class AbstractStickyAssignor(ConsumerPartitionAssignor):
    """The sticky family behind KIP-429's assignor interface.

    ``prefer_rack_aware_logic`` is Kafka's test-only switch that uses
    rack-aware assignment even when every partition is on every rack.
    """

    #: True for ``cooperative-sticky``: withhold partitions their owner must revoke first.
    cooperative: ClassVar[bool]

    def __init__(self, *, prefer_rack_aware_logic: bool = False) -> None:
        self.prefer_rack_aware_logic = prefer_rack_aware_logic

    @staticmethod
    @abc.abstractmethod
    def member_data(subscription: Subscription) -> MemberData:
        """A member's previous ownership and generation, as this assignor reads it."""

    def assign_with_details(
        self,
        metadata: ClusterMetadata,
        group_subscription: GroupSubscription,
        *,
        member_map_capacity: int = 16,
    ) -> StickyResult:
        """The assignment plus what Kafka's tests inspect (transfers, path, stickiness)."""
        return sticky_assign(
            metadata,
            group_subscription.subscriptions,
            self.member_data,
            cooperative=self.cooperative,
            prefer_rack_aware_logic=self.prefer_rack_aware_logic,
            member_map_capacity=member_map_capacity,
        )

    def assign(
        self, metadata: ClusterMetadata, group_subscription: GroupSubscription
    ) -> GroupAssignment:
        result = self.assign_with_details(metadata, group_subscription)
        return GroupAssignment(
            {member: Assignment(partitions) for member, partitions in result.assignment.items()}
        )
