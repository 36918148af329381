"""The constrained fast path: every member subscribes to the same topics.

Kafka: ``AbstractStickyAssignor.ConstrainedAssignmentBuilder``. With ``P``
partitions and ``N`` members, every member ends with ``minQuota = P // N`` or
``maxQuota = ceil(P / N)`` partitions, and exactly ``P % N`` members get
``maxQuota``.

1. Retain (members in Kafka's map order): drop rack-mismatched claims, sort
   the rest by (partition number, topic), drop partitions claimed by several
   members of one generation. Fewer than ``minQuota``: keep all, the member is
   UNDER quota. At least ``maxQuota`` while fewer than ``P % N`` members hold
   ``maxQuota``: keep ``maxQuota`` (once ``P % N`` members hold it, the EXACT
   list is cleared). Otherwise keep ``minQuota`` and, while more members may
   still reach ``maxQuota``, join the EXACT list. What is not kept "may be
   revoked".
2. Unassigned partitions in global order (topics by name, partitions
   ascending); UNDER and EXACT sorted by member id. Rack-aware: unassigned
   partitions sorted (stably) by how many consumers sit on their racks, and a
   rack-matching round robin runs first.
3. Round robin: a cursor walks UNDER, wrapping; a member reaching
   ``minQuota`` leaves UNDER and joins the end of EXACT; with UNDER empty,
   members are taken from the front of EXACT, one partition each.

A newly given partition that "may be revoked" from another member, or that
several members claimed, is *transferring ownership* (what
``cooperative-sticky`` withholds).

The round robin of step 3 is computed in passes: pass ``k`` visits, in UNDER
order, the members still ``k`` or more short of ``minQuota``. That turns
Kafka's per-partition cursor into a few array operations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from regroup.assignors.classic.sticky_engine.indexing import IntArray, TopicIndex
from regroup.assignors.classic.sticky_engine.racks import RackInfo
from regroup.assignors.errors import PartitionAssignorError

__all__ = ["ConstrainedResult", "constrained_assign"]

_EMPTY = np.zeros(0, dtype=np.int64)

BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class ConstrainedResult:
    """Each member's partitions (by member position) and the ownership transfers."""

    assignment: list[IntArray]
    transferring_partitions: IntArray
    transferring_members: IntArray


def _sorted_claims(
    index: TopicIndex, owned: Sequence[IntArray], keep_masks: Sequence[BoolArray | None]
) -> tuple[IntArray, IntArray]:
    """All members' retainable claims, each member's sorted by (partition, topic).

    Returns the concatenated sorted claims and each member's segment start.
    """
    parts = [o if m is None else o[m] for o, m in zip(owned, keep_masks, strict=True)]
    lengths = np.array([len(p) for p in parts], dtype=np.int64)
    starts = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    if starts[-1] == 0:
        return _EMPTY, starts
    claims = np.concatenate(parts)
    topics = index.topic_of[claims]
    numbers = claims - index.offsets[topics]
    n_topics = len(index.names)
    key = numbers * n_topics + topics
    key_span = int(key.max()) + 1
    members = np.repeat(np.arange(len(parts), dtype=np.int64), lengths)
    if key_span * len(parts) < 2**62:
        order = np.argsort(members * key_span + key, kind="stable")
    else:
        order = np.lexsort((key, members))
    return claims[order], starts


def constrained_assign(
    index: TopicIndex,
    member_ids: Sequence[str],
    id_rank: Sequence[int],
    owned: Sequence[IntArray],
    multiple_owners: IntArray,
    racks: RackInfo,
) -> ConstrainedResult:
    """Run the constrained builder; members are given by position in Kafka's map order.

    ``id_rank[i]`` is member ``i``'s rank in member id order (Java string order).
    """
    n_members = len(member_ids)
    total = index.total
    min_quota = total // n_members
    max_quota = -(-total // n_members)
    expected_max = total % n_members
    current_max = 0

    maybe_revoked = np.full(total, -1, dtype=np.int64)
    multi = np.zeros(total, dtype=bool)
    multi[multiple_owners] = True

    keep_masks: list[BoolArray | None] = []
    for member, claims in enumerate(owned):
        mask: BoolArray | None = None
        if racks.enabled and len(claims):
            mismatched = racks.mismatches(member, claims)
            if mismatched.any():
                maybe_revoked[claims[mismatched]] = member
                mask = ~mismatched
        if len(multiple_owners) and len(claims):
            doubly = multi[claims]
            if doubly.any():
                mask = ~doubly if mask is None else mask & ~doubly
        keep_masks.append(mask)
    sorted_claims, starts = _sorted_claims(index, owned, keep_masks)

    under: list[int] = []
    exact: list[int] = []
    keep_counts = [0] * n_members
    for member in range(n_members):
        have = int(starts[member + 1] - starts[member])
        if have < min_quota:
            keep = have
            under.append(member)
        elif have >= max_quota and current_max < expected_max:
            keep = max_quota
            current_max += 1
            if current_max == expected_max:
                exact.clear()
        else:
            keep = min_quota
            if current_max < expected_max:
                exact.append(member)
        keep_counts[member] = keep

    retained = np.zeros(total, dtype=bool)
    pieces: list[list[IntArray]] = []
    if len(sorted_claims):
        keep_arr = np.array(keep_counts, dtype=np.int64)
        lengths = np.diff(starts)
        members = np.repeat(np.arange(n_members, dtype=np.int64), lengths)
        rank = np.arange(len(sorted_claims), dtype=np.int64) - starts[members]
        kept = rank < keep_arr[members]
        retained[sorted_claims[kept]] = True
        dropped = ~kept
        maybe_revoked[sorted_claims[dropped]] = members[dropped]
        for member in range(n_members):
            start = int(starts[member])
            pieces.append([sorted_claims[start : start + keep_counts[member]]])
    else:
        pieces = [[] for _ in range(n_members)]

    unassigned = np.flatnonzero(~retained).astype(np.int64, copy=False)
    under.sort(key=lambda m: id_rank[m])
    exact.sort(key=lambda m: id_rank[m])
    counts = list(keep_counts)

    transfers = _Transfers(maybe_revoked, multi)

    if racks.enabled and len(unassigned):
        assert racks.num_consumers is not None
        unassigned = unassigned[np.argsort(racks.num_consumers[unassigned], kind="stable")]
        state = _QuotaState(min_quota, max_quota, expected_max, current_max)
        unassigned, rack_parts, rack_members = _rack_aware_round_robin(
            unassigned, under, exact, counts, racks, state
        )
        current_max = state.current_max
        if rack_parts:
            transfers.give(
                np.array(rack_parts, dtype=np.int64), np.array(rack_members, dtype=np.int64)
            )
            for partition, member in zip(rack_parts, rack_members, strict=True):
                pieces[member].append(np.array([partition], dtype=np.int64))

    # Plain round robin, phase A: passes over UNDER until every member has minQuota.
    remaining = unassigned
    if under:
        deficits = np.array([min_quota - counts[m] for m in under], dtype=np.int64)
        needed = int(deficits.sum())
        if needed > len(remaining):
            raise PartitionAssignorError(
                "We haven't reached the expected number of members with more than the "
                "minQuota partitions, but no more partitions to be assigned"
            )
        passes = int(deficits.max())
        grid = np.arange(passes, dtype=np.int64)[:, None] < deficits[None, :]
        slots = np.full(grid.shape, -1, dtype=np.int64)
        slots[grid] = remaining[:needed]
        by_member = slots.T[grid.T]
        member_of = np.repeat(np.array(under, dtype=np.int64), deficits)
        transfers.give(by_member, member_of)
        bounds = np.concatenate(([0], np.cumsum(deficits)))
        for j, member in enumerate(under):
            pieces[member].append(by_member[bounds[j] : bounds[j + 1]])
        order = np.argsort(deficits, kind="stable")
        exact = exact + [under[j] for j in order.tolist()]
        remaining = remaining[needed:]
    # Phase B: one partition each to members taken from the front of EXACT.
    if len(remaining):
        if len(remaining) > len(exact):
            raise PartitionAssignorError("No more unfilled consumers to be assigned.")
        takers = np.array(exact[: len(remaining)], dtype=np.int64)
        transfers.give(remaining, takers)
        for partition, member in zip(remaining.tolist(), takers.tolist(), strict=True):
            pieces[member].append(np.array([partition], dtype=np.int64))
        current_max += len(remaining)

    assignment = [np.concatenate(p) if len(p) > 1 else (p[0] if p else _EMPTY) for p in pieces]
    partitions, members = transfers.found()
    return ConstrainedResult(assignment, partitions, members)


class _Transfers:
    """The partitions given out that transfer ownership, in the order they are given.

    A partition given to a member transfers ownership if another member "may
    revoke" it or several members claimed it. Only those partitions are
    candidates, so each batch given out is first narrowed to them (on a fresh
    assignment, none).
    """

    def __init__(self, maybe_revoked: IntArray, multi: BoolArray) -> None:
        self._maybe_revoked = maybe_revoked
        self._multi = multi
        self._candidate = (maybe_revoked >= 0) | multi
        self._partitions: list[IntArray] = []
        self._members: list[IntArray] = []

    def give(self, partitions: IntArray, members: IntArray) -> None:
        """``partitions[i]`` is given to ``members[i]``."""
        candidate = self._candidate[partitions]
        partitions, members = partitions[candidate], members[candidate]
        previous = self._maybe_revoked[partitions]
        transfer = ((previous >= 0) & (previous != members)) | self._multi[partitions]
        self._partitions.append(partitions[transfer])
        self._members.append(members[transfer])

    def found(self) -> tuple[IntArray, IntArray]:
        """The transferring partitions and their new owners."""
        if not self._partitions:
            return _EMPTY, _EMPTY
        return np.concatenate(self._partitions), np.concatenate(self._members)


@dataclass(slots=True)
class _QuotaState:
    min_quota: int
    max_quota: int
    expected_max: int
    current_max: int


def _rack_aware_round_robin(
    unassigned: IntArray,
    under: list[int],
    exact: list[int],
    counts: list[int],
    racks: RackInfo,
    state: _QuotaState,
) -> tuple[IntArray, list[int], list[int]]:
    """Kafka's ``assignRackAwareRoundRobin``: fill quotas with rack-matching partitions.

    Returns the partitions left unassigned (in order) and the (partition,
    member) pairs given out, in order. ``under``, ``exact`` and ``counts`` are
    updated in place.
    """
    given_partitions: list[int] = []
    given_members: list[int] = []
    left: list[int] = []
    next_index = 0
    for partition in unassigned.tolist():
        consumer = -1
        found = _next_rack_consumer(racks, partition, under, next_index)
        if found >= 0:
            consumer = under[found]
            count = counts[consumer] + 1
            if count >= state.min_quota:
                under.remove(consumer)
                if count < state.max_quota and state.current_max < state.expected_max:
                    exact.append(consumer)
            else:
                found += 1
            next_index = found % len(under) if under else 0
        elif exact:
            first = _next_rack_consumer(racks, partition, exact, 0)
            if first >= 0:
                consumer = exact[first]
                if counts[consumer] + 1 == state.max_quota:
                    del exact[first]
                    state.current_max += 1
                    if state.current_max == state.expected_max:
                        exact.clear()
        if consumer >= 0:
            counts[consumer] += 1
            given_partitions.append(partition)
            given_members.append(consumer)
        else:
            left.append(partition)
    return np.array(left, dtype=np.int64), given_partitions, given_members


def _next_rack_consumer(racks: RackInfo, partition: int, members: list[int], first: int) -> int:
    """Kafka's ``nextRackConsumer``: from ``first``, cyclically, the first rack-matching member."""
    if not racks.masks[partition]:
        return -1
    size = len(members)
    for i in range(size):
        position = (first + i) % size
        if racks.matches(members[position], partition):
            return position
    return -1
