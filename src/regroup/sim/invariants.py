"""Invariants checked online over the event log; violations are reported, never hidden.

The checker reads events only (the ``regroup.events`` schema), so it runs the
same on a live simulation (fed each event as it is emitted) and on a log read
back from disk (``check_events``). It ignores ``invariant_violated`` events it
is fed; what it finds it returns as new ``InvariantViolated`` events.

Ownership, as the checker sees it: a member *owns* a partition from its
``partitions_assigned`` until its ``partitions_revoked`` / ``partitions_lost``
for it, or until its process stops (``consumer_stopped`` with its member id).
An owner is identified by its member id.

Rule 1, ``exclusive_ownership``: no partition is owned by two members at the
same time. Every protocol promises it among members that are alive and can
reach the coordinator (eager: revoke-all before JoinGroup; cooperative:
KIP-429's revoke-then-rejoin; KIP-848: a partition is assigned only once its
previous owner acknowledged the revocation). A member cut off by the network
keeps processing (a zombie) until it notices, in Kafka as here: this rule
reports it, on purpose.

Rule 2, ``commit_by_owner``: a stored commit (``offsets_committed``) for a
partition comes from its owner, or from nobody's partition (a member that
just gave it up and whose commit arrives before anyone else owns it). A
commit by a member whose generation/epoch is not its current one (classic:
the last ``generation_bumped``, unknown after a coordinator failover until the
next one; KIP-848: its epoch in the last ``member_assignment_changed``) is also
reported. Commits from outside the
group (``member_id`` ``""``) are not checked.

Rule 3, ``offsets_monotonic``: the committed offset of a partition never goes
backwards.

Rule 4, ``all_partitions_owned``: when the group is stable
(``group_stabilized``) every partition of the topics (``simulation_started``
and ``scenario_step`` ``topics``) has an owner.

Rule 5, ``nothing_lost``: every record below the highest processed offset of
a partition was processed at least once: reported when a ``records_processed``
starts above every offset processed so far (a consumer skipped records).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from regroup.events import (
    ConsumerStopped,
    Event,
    GenerationBumped,
    GroupStabilized,
    InvariantViolated,
    MemberAssignmentChanged,
    OffsetsCommitted,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    RecordsProcessed,
    ScenarioStep,
    SimulationStarted,
)
from regroup.model import TopicPartition, topic_partition
from regroup.sim.dispatch import memoised_handler
from regroup.sim.partition_table import (
    NOBODY,
    PartitionTable,
    held_by,
    with_member,
    without_member,
)

__all__ = ["INVARIANTS", "IntervalSet", "InvariantChecker", "check_events"]

INVARIANTS = (
    "exclusive_ownership",
    "commit_by_owner",
    "offsets_monotonic",
    "all_partitions_owned",
    "nothing_lost",
)


class IntervalSet:
    """Disjoint, sorted half-open intervals of offsets; ``add`` returns the overlap count."""

    __slots__ = ("_spans", "high")

    def __init__(self) -> None:
        self._spans: list[list[int]] = []
        #: The end of the highest span (0 when empty): one past the highest offset held.
        self.high = 0

    def add(self, start: int, end: int) -> int:
        """Add ``[start, end)``; returns how many of its offsets were already present."""
        if end <= start:
            return 0
        spans = self._spans
        # Fastest path: the records right after the highest held (a consumer going on).
        if start == self.high and spans:
            spans[-1][1] = end
            self.high = end
            return 0
        # Fast path: appending at (or overlapping only) the last span.
        if spans and start >= spans[-1][0]:
            last = spans[-1]
            if start > last[1]:
                spans.append([start, end])
                self.high = end
                return 0
            overlap = max(0, min(end, last[1]) - start)
            if end > last[1]:
                last[1] = end
                self.high = end
            return overlap
        overlap = 0
        merged_start, merged_end = start, end
        kept: list[list[int]] = []
        for span in spans:
            if span[1] < start or span[0] > end:
                kept.append(span)
                continue
            overlap += max(0, min(end, span[1]) - max(start, span[0]))
            merged_start = min(merged_start, span[0])
            merged_end = max(merged_end, span[1])
        kept.append([merged_start, merged_end])
        kept.sort()
        self._spans = kept
        self.high = kept[-1][1]
        return overlap

    def gaps(self) -> list[tuple[int, int]]:
        """The missing ``[start, end)`` ranges below ``high`` (from offset 0)."""
        out: list[tuple[int, int]] = []
        previous = 0
        for start, end in self._spans:
            if start > previous:
                out.append((previous, start))
            previous = end
        return out

    def __len__(self) -> int:
        return sum(end - start for start, end in self._spans)


class InvariantChecker:
    """Feed it events in order (``observe``), then ``finish`` at the end of the log.

    ``observe`` runs on every event of a simulation, so each rule costs what the
    event touches: it dispatches on the event's class through a table, keeps its
    per-partition state in columns by partition number (``partition_table``), and
    rule 4 keeps a count of the partitions without an owner up to date instead of
    scanning every partition at each ``group_stabilized`` (it scans only to name
    them when the count is not zero).
    """

    __slots__ = (
        "_committed",
        "_handlers",
        "_in_topics",
        "_owners",
        "_processed",
        "_table",
        "_unowned",
        "generation",
        "member_epochs",
        "topics",
        "violations",
    )

    def __init__(self, table: PartitionTable | None = None) -> None:
        #: Its own, or one shared with other observers of the same events (the simulator's).
        table = self._table = table if table is not None else PartitionTable()
        #: The members owning the partition.
        self._owners = table.column(NOBODY)
        #: Whether the partition is one of ``topics``'.
        self._in_topics = table.column(False)
        self._committed: list[int | None] = table.column(None)
        self._processed: list[IntervalSet | None] = table.column(None)
        #: How many partitions of ``topics`` nobody owns now.
        self._unowned = 0
        self.topics: dict[str, int] = {}
        self.generation: int | None = None
        self.member_epochs: dict[str, int] = {}
        self.violations: list[InvariantViolated] = []
        self._handlers: dict[type, Callable[[Any, list[InvariantViolated]], None] | None] = {
            PartitionsAssigned: self._assign,
            PartitionsRevoked: self._on_released,
            PartitionsLost: self._on_released,
            ConsumerStopped: self._on_stopped,
            RecordsProcessed: self._on_processed,
            OffsetsCommitted: self._commit,
            GenerationBumped: self._on_generation,
            MemberAssignmentChanged: self._on_member_epoch,
            GroupStabilized: self._on_stabilized,
            SimulationStarted: self._on_topics,
            ScenarioStep: self._on_topics,
        }

    def observe(self, event: Event) -> list[InvariantViolated]:
        """Check one event; returns the violations it revealed (also kept in ``violations``)."""
        found: list[InvariantViolated] = []
        kind = type(event)
        try:
            handler = self._handlers[kind]
        except KeyError:
            handler = memoised_handler(self._handlers, kind)
        if handler is not None:
            handler(event, found)
            if found:
                self.violations.extend(found)
        return found

    def _on_released(self, event: PartitionsRevoked | PartitionsLost, found: list[Any]) -> None:
        self._release(event.member_id, self._table.indices(event.partitions))

    def _on_stopped(self, event: ConsumerStopped, found: list[InvariantViolated]) -> None:
        if event.member_id:
            self._release(event.member_id, held_by(self._owners, event.member_id))

    def _on_processed(self, event: RecordsProcessed, found: list[InvariantViolated]) -> None:
        violation = self._nothing_lost(
            event.ts_ms,
            event.group_id,
            event.member_id,
            event.partition,
            event.first_offset,
            event.last_offset,
        )
        if violation is not None:
            found.append(violation)

    def check_processed(
        self,
        ts_ms: int,
        group_id: str,
        member_id: str,
        partition: TopicPartition,
        first_offset: int,
        last_offset: int,
    ) -> InvariantViolated | None:
        """Rule 5 for one ``records_processed`` (the simulator's batches call it with no
        event object); a violation is also kept in ``violations``."""
        found = self._nothing_lost(ts_ms, group_id, member_id, partition, first_offset, last_offset)
        if found is not None:
            self.violations.append(found)
        return found

    def check_processed_batch(
        self,
        ts_ms: int,
        group_id: str,
        member_id: str,
        chunks: Sequence[tuple[TopicPartition, int, int]],
    ) -> list[InvariantViolated]:
        """``check_processed`` for each chunk ``(partition, first, last)`` of a batch."""
        found: list[InvariantViolated] = []
        index = self._table.index
        processed = self._processed
        for partition, first, last in chunks:
            intervals = processed[index(partition)]
            if intervals is not None and first == intervals.high and last >= first:
                intervals.add(first, last + 1)  # the usual case: right after the last
                continue
            violation = self._nothing_lost(ts_ms, group_id, member_id, partition, first, last)
            if violation is not None:
                found.append(violation)
        self.violations.extend(found)
        return found

    def _nothing_lost(
        self,
        ts_ms: int,
        group_id: str,
        member_id: str,
        partition: TopicPartition,
        first_offset: int,
        last_offset: int,
    ) -> InvariantViolated | None:
        number = self._table.index(partition)
        intervals = self._processed[number]
        if intervals is None:
            intervals = self._processed[number] = IntervalSet()
        high = intervals.high
        found = None
        if first_offset > high:
            found = InvariantViolated(
                ts_ms=ts_ms,
                group_id=group_id,
                invariant="nothing_lost",
                detail=f"{member_id} processed {partition} from offset "
                f"{first_offset}, skipping [{high}, {first_offset})",
                member_id=member_id,
                partition=partition,
            )
        intervals.add(first_offset, last_offset + 1)
        return found

    def _on_generation(self, event: GenerationBumped, found: list[InvariantViolated]) -> None:
        self.generation = event.generation
        # A classic generation is every member's (after an online downgrade, the
        # member epochs of the consumer group it was are history).
        if self.member_epochs:
            self.member_epochs.clear()

    def _on_member_epoch(
        self, event: MemberAssignmentChanged, found: list[InvariantViolated]
    ) -> None:
        self.member_epochs[event.member_id] = event.epoch

    def _on_stabilized(self, event: GroupStabilized, found: list[InvariantViolated]) -> None:
        if not self._unowned:
            return
        owners, in_topics = self._owners, self._in_topics
        unowned = [
            tp
            for number, tp in enumerate(self._table.partitions)
            if in_topics[number] and not owners[number]
        ]
        # In the order of a scan of every partition: by topic, then partition number.
        for tp in sorted(unowned):
            found.append(
                _violation(
                    event,
                    "all_partitions_owned",
                    f"{tp} has no owner although the group is stable",
                    partition=tp,
                )
            )

    def _on_topics(
        self, event: SimulationStarted | ScenarioStep, found: list[InvariantViolated]
    ) -> None:
        if event.topics:
            self.topics.update(event.topics)
            self._recount_unowned()
        if isinstance(event, ScenarioStep) and event.action == "coordinator_loaded":
            # Rule 2 after a failover: the new coordinator holds the classic generation its
            # records held, and a generation bumped but not yet stored is gone (Kafka writes
            # a classic group's record at the leader's SyncGroup, ``GroupCoordinator``
            # ``doSyncGroup`` -> ``storeGroup``). Which one survived is not in the events, so
            # generations are not checked until the next ``generation_bumped`` (the
            # coordinator still fences stale ones itself).
            self.generation = None

    def _recount_unowned(self) -> None:
        table, topics = self._table, self.topics
        for topic, count in topics.items():
            for partition in range(count):
                table.index(topic_partition(topic, partition))
        in_topics, owners = self._in_topics, self._owners
        unowned = 0
        for number, tp in enumerate(table.partitions):
            inside = 0 <= tp.partition < topics.get(tp.topic, 0)
            in_topics[number] = inside
            if inside and not owners[number]:
                unowned += 1
        self._unowned = unowned

    def finish(self, ts_ms: int) -> list[InvariantViolated]:
        """End-of-log checks. Rule 5 is checked when a gap opens (a consumer skipping
        offsets); records produced but not processed by the end are lag, not loss."""
        return []

    # -- rules ----------------------------------------------------------------------------

    def _assign(self, event: PartitionsAssigned, found: list[InvariantViolated]) -> None:
        member = event.member_id
        partitions = event.partitions
        numbers = self._table.indices(partitions)
        all_owners, in_topics = self._owners, self._in_topics
        for position, number in enumerate(numbers):
            owners = all_owners[number]
            if not owners:
                all_owners[number] = (member,)
                if in_topics[number]:
                    self._unowned -= 1
                continue
            if len(owners) > 1 or owners[0] != member:
                tp = partitions[position]
                others = sorted(o for o in owners if o != member)
                found.append(
                    _violation(
                        event,
                        "exclusive_ownership",
                        f"{tp} assigned to {member} while {', '.join(others)} still owns it",
                        member_id=member,
                        partition=tp,
                    )
                )
                all_owners[number] = with_member(owners, member)

    def _release(self, member: str, numbers: Iterable[int]) -> None:
        all_owners, in_topics = self._owners, self._in_topics
        for number in numbers:
            owners = all_owners[number]
            if member in owners:
                owners = all_owners[number] = without_member(owners, member)
                if not owners and in_topics[number]:
                    self._unowned += 1

    def _commit(self, event: OffsetsCommitted, found: list[InvariantViolated]) -> None:
        member = event.member_id
        if member:
            expected = self.member_epochs.get(member, self.generation)
            if expected is not None and event.generation_or_epoch != expected:
                found.append(
                    _violation(
                        event,
                        "commit_by_owner",
                        f"{member} committed at generation/epoch {event.generation_or_epoch}, "
                        f"its current one is {expected}",
                        member_id=member,
                    )
                )
        table = self._table
        all_owners, committed = self._owners, self._committed
        # Checked in the log's order of the offsets; reported by partition (the order of
        # a sorted walk), which only needs a sort when one commit breaks two rules.
        by_partition: list[tuple[TopicPartition, int, InvariantViolated]] = []
        for tp, offset in event.offsets.items():
            number = table.index(tp)
            if member:
                owners = all_owners[number]
                if owners and member not in owners:
                    by_partition.append(
                        (
                            tp,
                            0,
                            _violation(
                                event,
                                "commit_by_owner",
                                f"{member} committed {tp} owned by {', '.join(sorted(owners))}",
                                member_id=member,
                                partition=tp,
                            ),
                        )
                    )
            previous = committed[number]
            if previous is not None and offset < previous:
                by_partition.append(
                    (
                        tp,
                        1,
                        _violation(
                            event,
                            "offsets_monotonic",
                            f"committed offset of {tp} went back from {previous} to {offset}",
                            member_id=member or None,
                            partition=tp,
                        ),
                    )
                )
            committed[number] = offset
        if len(by_partition) > 1:
            by_partition.sort(key=lambda item: (item[0], item[1]))
        found.extend(violation for _, _, violation in by_partition)


def _violation(
    event: Event,
    invariant: str,
    detail: str,
    *,
    member_id: str | None = None,
    partition: TopicPartition | None = None,
) -> InvariantViolated:
    return InvariantViolated(
        ts_ms=event.ts_ms,
        group_id=event.group_id,
        invariant=invariant,
        detail=detail,
        member_id=member_id,
        partition=partition,
    )


def check_events(events: Iterable[Event]) -> list[InvariantViolated]:
    """Every violation in a whole event log (``invariant_violated`` events in it are ignored)."""
    checker = InvariantChecker()
    last = 0
    for event in events:
        last = event.ts_ms
        if not isinstance(event, InvariantViolated):
            checker.observe(event)
    checker.finish(last)
    return list(checker.violations)
