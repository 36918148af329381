"""Which rebalance protocol (EAGER or COOPERATIVE) a classic member follows.

Two modes, chosen by ``rebalance.protocol.selection`` (``config``):

``static`` -- Apache Kafka's behaviour (``ConsumerCoordinator`` constructor,
    KIP-429 "Compatibility and Upgrade Path"): "only consider protocols that
    are supported by all the assignors. If there is no common protocols
    supported across all the assignors, throw an exception during starting up
    time"; among the common ones take the highest id. Fixed for the member's
    life, whatever assignor the group selects.

``dynamic`` -- KIP-726 as accepted ("this static rebalance protocol selection
    will be replaced by a dynamic protocol that depends on the actual assignor
    that was selected for use in the rebalance"): the member follows the
    highest protocol of the assignor the group selected in its last JoinGroup
    response. Before any selection it follows the highest protocol of its
    first (preferred) assignor -- it owns nothing then, so nothing depends on
    it. A member that held partitions as COOPERATIVE and then learns that an
    EAGER-only assignor was selected has not revoked them while the leader may
    hand them out freely: it calls ``onPartitionsLost`` and refuses commits
    until the rebalance completes (KIP-726, "Proposed Changes").
"""

from __future__ import annotations

from collections.abc import Sequence

from regroup.assignors.classic.api import ConsumerPartitionAssignor, RebalanceProtocol

__all__ = [
    "DuplicateAssignorError",
    "NoCommonProtocolError",
    "ProtocolSelector",
    "highest_protocol",
    "static_protocol",
]


class NoCommonProtocolError(ValueError):
    """The configured assignors share no rebalance protocol (Kafka: IllegalArgumentException)."""


class DuplicateAssignorError(ValueError):
    """Two configured assignors with one name (Kafka: KafkaException)."""


def highest_protocol(assignor: ConsumerPartitionAssignor) -> RebalanceProtocol:
    """The most advanced protocol one assignor supports (the highest id)."""
    protocols = assignor.supported_protocols()
    if not protocols:
        raise NoCommonProtocolError(f"assignor {assignor.name!r} supports no rebalance protocol")
    return max(protocols)


def static_protocol(assignors: Sequence[ConsumerPartitionAssignor]) -> RebalanceProtocol:
    """Kafka's rule: the highest protocol every assignor supports."""
    if not assignors:
        raise NoCommonProtocolError("no partition assignors are configured")
    common = set(RebalanceProtocol)
    for assignor in assignors:
        common &= set(assignor.supported_protocols())
    if not common:
        names = ", ".join(a.name for a in assignors)
        raise NoCommonProtocolError(
            f"specified assignors [{names}] do not have commonly supported rebalance protocol"
        )
    return max(common)


class ProtocolSelector:
    """The member's current protocol under one of the two modes."""

    __slots__ = ("_assignors", "_current", "mode")

    def __init__(self, mode: str, assignors: Sequence[ConsumerPartitionAssignor]) -> None:
        names = [a.name for a in assignors]
        if len(set(names)) != len(names):
            raise DuplicateAssignorError(f"assignor names are not unique: {names}")
        self.mode = mode
        self._assignors = {a.name: a for a in assignors}
        # Both modes validate the list as Kafka does at start-up.
        fixed = static_protocol(assignors)
        self._current = fixed if mode == "static" else highest_protocol(assignors[0])

    @property
    def current(self) -> RebalanceProtocol:
        """The protocol the member follows now (before its next JoinGroup, and after it)."""
        return self._current

    def on_assignor_selected(self, name: str) -> RebalanceProtocol:
        """The group selected ``name``; returns the protocol to follow from now on."""
        if self.mode == "dynamic":
            assignor = self._assignors.get(name)
            if assignor is not None:
                self._current = highest_protocol(assignor)
        return self._current
