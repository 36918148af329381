"""What ``cooperative-sticky`` withholds (Kafka: ``CooperativeStickyAssignor``).

Under the incremental cooperative protocol (KIP-429) a partition may not be
given to a new owner in the same rebalance in which its current owner still
holds it: the owner must revoke it first, rejoin, and only the follow-up
rebalance hands it out. So after the sticky assignment, every partition that
is *transferring ownership* is removed from its new owner's assignment:

* constrained path: the builder's own ``partitionsTransferringOwnership``
  (new partitions that "may be revoked" from another member or were claimed
  by several members);
* general path: recomputed from the raw ``ownedPartitions``: partitions a
  member gets but did not own, that some member owned and does not keep
  (``computePartitionsTransferringOwnership``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from regroup.assignors.classic.sticky_engine.indexing import IntArray

__all__ = ["transfers_from_owned", "withhold_transfers"]


def transfers_from_owned(
    total: int, owned: Sequence[IntArray], assignment: Sequence[IntArray]
) -> IntArray:
    """Partitions added to some member that another member revokes (general path)."""
    if not any(len(o) for o in owned):
        return np.zeros(0, dtype=np.int64)
    final_owner = np.full(total, -1, dtype=np.int64)
    for member, partitions in enumerate(assignment):
        final_owner[partitions] = member
    claimed = np.concatenate(owned)
    claimants = np.repeat(np.arange(len(owned), dtype=np.int64), [len(o) for o in owned])
    revoked = np.zeros(total, dtype=bool)
    revoked[claimed[final_owner[claimed] != claimants]] = True
    assigned = np.flatnonzero(final_owner >= 0)
    candidates = assigned[revoked[assigned]]
    if len(candidates) == 0:
        return candidates
    owned_keys = claimants * total + claimed
    candidate_keys = final_owner[candidates] * total + candidates
    added = ~np.isin(candidate_keys, owned_keys)
    return np.asarray(candidates[added], dtype=np.int64)


def withhold_transfers(
    total: int, assignment: Sequence[IntArray], transferring: IntArray
) -> list[IntArray]:
    """Each member's assignment without the partitions transferring ownership."""
    if len(transferring) == 0:
        return list(assignment)
    withheld = np.zeros(total, dtype=bool)
    withheld[transferring] = True
    out: list[IntArray] = []
    for partitions in assignment:
        mask = withheld[partitions]
        out.append(partitions[~mask] if mask.any() else partitions)
    return out
