"""KIP-429's "Consumer Coordinator Algorithm" steps 1 and 3 as pure functions.

The member (``member.py``) decides *when* a step runs; this module decides
*what* it does to the owned partitions, so the rules can be read -- and
property-tested -- on their own. Every function takes the owned partitions and
returns a frozen plan; nothing here calls a listener.

Step 1 (before every JoinGroup; Kafka ``ConsumerCoordinator.onJoinPrepare``):

* 1.d -- the generation was reset (UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION, a
  poll timeout, a leave): ``onPartitionsLost`` on everything owned, *only if
  non-empty*; join with nothing.
* EAGER -- ``onPartitionsRevoked`` on everything owned, *always* (even empty:
  Kafka calls it unconditionally under EAGER); join with nothing.
* COOPERATIVE, 1.a -- revoke only partitions of topics no longer subscribed
  (callback only if non-empty); join with the rest. 1.c (REBALANCE_IN_PROGRESS)
  needs nothing more: the member simply joins with everything it owns.

Step 1.b (metadata change): owned partitions that no longer exist are *lost*.

Step 3 (after SyncGroup; Kafka ``onJoinComplete``): 3.a added = assigned -
owned and, under COOPERATIVE, revoked = owned - assigned; 3.b install the
assignment; 3.c ``onPartitionsRevoked(revoked)`` and a follow-up rejoin when
revoked is non-empty; 3.d ``onPartitionsAssigned(added)`` always.
"""

from __future__ import annotations

from dataclasses import dataclass

from regroup.assignors.classic.api import RebalanceProtocol
from regroup.model import TopicPartition
from regroup.model.metadata import MetadataImage

__all__ = [
    "JoinCompletion",
    "JoinPreparation",
    "complete_join",
    "leave_callback",
    "prepare_join",
    "vanished_partitions",
]

Partitions = frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class JoinPreparation:
    """Step 1: the callback to run (``None``: none), on which partitions, and what is kept."""

    callback: str | None
    partitions: Partitions
    kept: Partitions


@dataclass(frozen=True, slots=True)
class JoinCompletion:
    """Step 3: what was revoked (3.c), what is new (3.d), and the assignment installed (3.b)."""

    revoked: Partitions
    added: Partitions
    assigned: Partitions

    @property
    def needs_follow_up(self) -> bool:
        """3.c: a revocation triggers another rebalance so the partitions reach their owner."""
        return bool(self.revoked)


def prepare_join(
    owned: Partitions,
    *,
    generation_reset: bool,
    protocol: RebalanceProtocol,
    subscription: frozenset[str],
) -> JoinPreparation:
    """KIP-429 step 1 (see the module docstring)."""
    if generation_reset:
        return JoinPreparation("lost" if owned else None, owned, frozenset())
    if protocol is RebalanceProtocol.EAGER:
        return JoinPreparation("revoked", owned, frozenset())
    gone = frozenset(tp for tp in owned if tp.topic not in subscription)
    return JoinPreparation("revoked" if gone else None, gone, owned - gone)


def complete_join(
    owned: Partitions, assigned: Partitions, protocol: RebalanceProtocol
) -> JoinCompletion:
    """KIP-429 step 3. Under EAGER the member owns nothing at this point (it revoked or
    lost everything in step 1); should it still own something, nothing is revoked here,
    as in Kafka, whose EAGER branch computes no revoked set."""
    revoked = owned - assigned if protocol is RebalanceProtocol.COOPERATIVE else frozenset()
    return JoinCompletion(revoked=revoked, added=assigned - owned, assigned=assigned)


def vanished_partitions(
    owned: Partitions, previous: MetadataImage, current: MetadataImage
) -> Partitions:
    """KIP-429 step 1.b: owned partitions that existed in ``previous`` and are gone now
    (the topic was deleted, or has fewer partitions)."""
    gone: set[TopicPartition] = set()
    for tp in owned:
        if previous.topic(tp.topic) is None:
            continue
        topic = current.topic(tp.topic)
        if topic is None or tp.partition >= topic.partitions:
            gone.add(tp)
    return frozenset(gone)


def leave_callback(owned: Partitions, *, generation_reset: bool, rebalancing: bool) -> str | None:
    """Kafka ``onLeavePrepare`` (close, unsubscribe): lost when the generation was reset or
    a rebalance is in progress (someone else may own them already), else revoked."""
    if not owned:
        return None
    return "lost" if generation_reset or rebalancing else "revoked"
