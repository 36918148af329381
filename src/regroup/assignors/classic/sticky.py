"""Kafka's ``sticky`` assignor (``org.apache.kafka.clients.consumer.StickyAssignor``, KIP-54).

Balanced first, then sticky: partitions are spread as evenly as possible and,
across rebalances, stay with the member that had them as far as balance
allows (the algorithm is in ``sticky_engine``).

``sticky`` runs under the EAGER protocol only, where a member revokes all its
partitions before rejoining, so the Subscription's ``ownedPartitions`` is
always empty. Each member therefore carries its last assignment itself, in its
user data (``StickyAssignorUserData`` V1: the partitions by topic and the
generation), set by ``on_assignment`` and ``None`` before the first one; the
leader reads previous ownership *only* from that user data.
"""

from __future__ import annotations

from collections.abc import Sequence, Set

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
    decode_sticky_user_data,
    encode_sticky_user_data,
)
from regroup.model import TopicPartition

__all__ = ["StickyAssignor"]


class StickyAssignor(AbstractStickyAssignor):
    """Kafka's ``StickyAssignor``: ``name() == "sticky"``, EAGER only.

    ``prefer_rack_aware_logic`` is Kafka's test-only switch that uses
    rack-aware assignment even when every partition is on every rack.
    """

    cooperative = False

    name = "sticky"

    def __init__(self, *, prefer_rack_aware_logic: bool = False) -> None:
        super().__init__(prefer_rack_aware_logic=prefer_rack_aware_logic)
        self._member_assignment: Sequence[TopicPartition] | None = None
        self._generation = DEFAULT_GENERATION

    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]:
        return (RebalanceProtocol.EAGER,)

    def on_assignment(self, assignment: Assignment, metadata: ConsumerGroupMetadata) -> None:
        """Remember the assignment and its generation for the next subscription."""
        self._member_assignment = assignment.partitions
        self._generation = metadata.generation_id

    def subscription_user_data(self, topics: Set[str]) -> bytes | None:
        """The last assignment and generation (V1), or ``None`` before any assignment."""
        if self._member_assignment is None:
            return None
        return encode_sticky_user_data(self._member_assignment, self._generation)

    @staticmethod
    def member_data(subscription: Subscription) -> MemberData:
        """Kafka's ``StickyAssignor.memberData``: previous ownership from the user data only."""
        partitions, generation = decode_sticky_user_data(subscription.user_data)
        return MemberData(partitions, generation)
