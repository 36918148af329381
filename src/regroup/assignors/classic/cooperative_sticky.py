"""Kafka's ``cooperative-sticky`` assignor
(``org.apache.kafka.clients.consumer.CooperativeStickyAssignor``, KIP-429).

The ``sticky`` algorithm (``sticky_engine``) under the incremental cooperative
protocol: members keep their partitions through a rebalance and report them in
the Subscription's ``ownedPartitions``. A partition that moves is *withheld*
from its new owner until its current owner has revoked it: the owner rejoins
and a follow-up rebalance hands the partition out (``sticky_engine.cooperative``).

Previous ownership: ``ownedPartitions`` with the Subscription's generation
(ConsumerProtocolSubscription v2+); for older subscriptions, the generation
this assignor wrote in its user data (one INT32; unreadable bytes give -1, no
user data gives none). ``on_assignment`` only records the generation.
Supports COOPERATIVE (preferred) and EAGER.
"""

from __future__ import annotations

from collections.abc import Set

from regroup.assignors.classic.abstract_sticky import AbstractStickyAssignor
from regroup.assignors.classic.api import (
    Assignment,
    ConsumerGroupMetadata,
    RebalanceProtocol,
    Subscription,
)
from regroup.assignors.classic.sticky_engine import MemberData
from regroup.assignors.classic.sticky_engine.user_data import (
    DEFAULT_GENERATION,
    decode_cooperative_user_data,
    encode_cooperative_user_data,
)

__all__ = ["CooperativeStickyAssignor"]


class CooperativeStickyAssignor(AbstractStickyAssignor):
    """Kafka's ``CooperativeStickyAssignor``: ``name() == "cooperative-sticky"``.

    ``prefer_rack_aware_logic`` is Kafka's test-only switch that uses
    rack-aware assignment even when every partition is on every rack.
    """

    cooperative = True

    name = "cooperative-sticky"

    def __init__(self, *, prefer_rack_aware_logic: bool = False) -> None:
        super().__init__(prefer_rack_aware_logic=prefer_rack_aware_logic)
        self._generation = DEFAULT_GENERATION

    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]:
        return (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def on_assignment(self, assignment: Assignment, metadata: ConsumerGroupMetadata) -> None:
        """Record the generation of this assignment for the next subscription."""
        self._generation = metadata.generation_id

    def subscription_user_data(self, topics: Set[str]) -> bytes | None:
        """The generation of the last assignment as one INT32 (-1 before any)."""
        return encode_cooperative_user_data(self._generation)

    @staticmethod
    def member_data(subscription: Subscription) -> MemberData:
        """Kafka's ``CooperativeStickyAssignor.memberData``."""
        if subscription.has_generation:
            return MemberData(subscription.owned_partitions, subscription.generation_id)
        return MemberData(
            subscription.owned_partitions, decode_cooperative_user_data(subscription.user_data)
        )
