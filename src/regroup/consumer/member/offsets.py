"""The member's OffsetCommits: the application's, auto-commit, and before a revocation.

KIP-848, "Consumer", "Rebalance Process": revoked partitions have their
offsets committed before ``onPartitionsRevoked`` runs. A KIP-848 member
commits with its member id and member epoch (OffsetCommit v9+,
``generation_id_or_member_epoch``); outside the group it commits with
member id ``""`` and epoch -1, as Kafka's ``CommitRequestManager`` does.

``enable.auto.commit`` (Kafka default true) commits the consumed positions
every ``auto.commit.interval.ms`` (5 s), on the application's poll (Kafka's
``updateTimerAndMaybeCommit``), and only the positions that moved since they
were last committed.
The member does not own fetch positions: the driver reports them through the
member's ``positions`` callable (Kafka's ``subscriptions.allConsumed()``), which
the tracker holds, as Kafka's ``CommitRequestManager`` holds the subscriptions.
Auto-commit, and the commits before a revocation and a leave, need both
``enable.auto.commit`` and that callable; without them no positions are
"consumed" and nothing is committed on the member's own initiative.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from regroup.consumer.member.config import CommitResult
from regroup.model import ErrorCode, TopicPartition, topic_partition
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)

__all__ = ["CommitTracker", "PositionsProvider"]

#: Returns the application's consumed positions (``allConsumed`` in Kafka).
PositionsProvider = Callable[[], Mapping[TopicPartition, int]]


@dataclass(frozen=True, slots=True)
class _Commit:
    request: OffsetCommitRequest
    purpose: str
    offsets: Mapping[TopicPartition, int]


class CommitTracker:
    """Queued and in-flight commits, their results, the consumed positions and the
    auto-commit clock."""

    def __init__(
        self,
        auto_commit_interval_ms: int,
        *,
        positions: PositionsProvider | None = None,
        enable_auto_commit: bool = True,
    ) -> None:
        self._auto_interval_ms = auto_commit_interval_ms
        self._positions = positions
        #: ``enable.auto.commit`` with positions to commit (see the module docstring).
        self.auto_commits = enable_auto_commit and positions is not None
        self._queued: list[_Commit] = []
        self._in_flight: dict[int, _Commit] = {}
        self._results: list[CommitResult] = []
        self._next_auto_ms: int | None = None
        self._last_auto: dict[TopicPartition, int] = {}

    def consumed_positions(self, owned: frozenset[TopicPartition]) -> dict[TopicPartition, int]:
        """The consumed positions of the ``owned`` partitions (empty without auto-commit)."""
        if not self.auto_commits or self._positions is None:
            return {}
        positions = self._positions()
        return {tp: offset for tp, offset in positions.items() if tp in owned}

    @property
    def has_queued(self) -> bool:
        return bool(self._queued)

    @property
    def next_auto_commit_ms(self) -> int | None:
        return self._next_auto_ms

    def queue(
        self,
        offsets: Mapping[TopicPartition, int],
        purpose: str,
        *,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
    ) -> OffsetCommitRequest:
        """Queue one OffsetCommit (``member_epoch`` -1 and ``member_id`` "" outside the group)."""
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for tp, offset in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                OffsetCommitRequestPartition(tp.partition, offset)
            )
        request = OffsetCommitRequest(
            group_id=group_id,
            generation_id_or_member_epoch=member_epoch,
            member_id=member_id,
            topics=tuple(OffsetCommitRequestTopic(t, tuple(p)) for t, p in by_topic.items()),
            group_instance_id=instance_id,
        )
        self._queued.append(_Commit(request, purpose, dict(offsets)))
        # The next auto-commit sends only what moved since any commit of these positions
        # (a revocation's commit followed by a due auto-commit sends nothing twice).
        self._last_auto.update(offsets)
        return request

    def take_queued(self) -> list[OffsetCommitRequest]:
        """The queued requests, now in flight."""
        requests = []
        for commit in self._queued:
            self._in_flight[id(commit.request)] = commit
            requests.append(commit.request)
        self._queued = []
        return requests

    def answered(
        self, request: OffsetCommitRequest, response: OffsetCommitResponse
    ) -> CommitResult | None:
        """Record the response to a commit in flight; ``None`` for a request not ours.

        The verbs are the classic member's ``CommitTracker``'s: ``answered`` when a
        response came, ``failed`` when none will.
        """
        return self._done(request, response)

    def failed(self, request: OffsetCommitRequest) -> CommitResult | None:
        """No response will come to a commit in flight; ``None`` for a request not ours."""
        return self._done(request, None)

    def _done(
        self, request: OffsetCommitRequest, response: OffsetCommitResponse | None
    ) -> CommitResult | None:
        commit = self._in_flight.get(id(request))
        if commit is None or commit.request is not request:
            return None
        del self._in_flight[id(request)]
        errors: dict[TopicPartition, ErrorCode] = {}
        if response is not None:
            for topic in response.topics:
                for partition in topic.partitions:
                    if partition.error_code.is_error:
                        tp = topic_partition(topic.name, partition.partition_index)
                        errors[tp] = partition.error_code
        result = CommitResult(
            purpose=commit.purpose,
            member_epoch=request.generation_id_or_member_epoch,
            offsets=commit.offsets,
            errors=errors,
            failed=response is None,
        )
        self._results.append(result)
        return result

    def take_results(self) -> list[CommitResult]:
        results, self._results = self._results, []
        return results

    def auto_commit_due(
        self, now_ms: int, positions: Callable[[], Mapping[TopicPartition, int]]
    ) -> dict[TopicPartition, int]:
        """The moved positions to auto-commit now (empty when not due); starts the clock.

        ``positions`` is asked only when a commit is due: the member polls far more
        often than ``auto.commit.interval.ms``, and collecting the consumed positions
        costs O(partitions) each time.
        """
        if self._next_auto_ms is None:
            self._next_auto_ms = now_ms + self._auto_interval_ms
            return {}
        if now_ms < self._next_auto_ms:
            return {}
        self._next_auto_ms = now_ms + self._auto_interval_ms
        last = self._last_auto
        moved = {tp: off for tp, off in positions().items() if last.get(tp) != off}
        self._last_auto.update(moved)
        return moved
