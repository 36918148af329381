"""The classic member's OffsetCommits: which are in flight, how the last one ended, and
when the member refuses to send one.

Kafka: ``ConsumerCoordinator.sendOffsetCommitRequest`` and its
``OffsetCommitResponseHandler``. The member (``ClassicMember``) holds one
``CommitTracker``; what a commit error does to the member (rejoin, reset the
generation, turn fatal) is ``errors.ERROR_ACTIONS``, applied by the
member.

Rule 1: a commit goes out only in a stable generation. During a rebalance it
        is refused with ``RebalanceInProgressError`` (KIP-429, "Allow Consumer
        to Return Records in Rebalance"), outside a generation with
        ``CommitFailedError`` (Kafka ``CommitFailedException``).
Rule 2: KIP-726, "Proposed Changes": a member that lost its partitions because
        the group selected an EAGER assignor refuses commits, as during a
        rebalance, until its next rebalance completes (``disabled``).
Rule 3: every response or failure of a commit in flight sets ``last_error``
        (``None``: the last commit succeeded; REQUEST_TIMED_OUT: no response).
"""

from __future__ import annotations

from regroup.classic.member.errors import (
    CommitFailedError,
    CommitRefusedError,
    RebalanceInProgressError,
)
from regroup.classic.member.state import REBALANCING, MemberState
from regroup.model import ErrorCode
from regroup.model.requests.offsets import OffsetCommitRequest, OffsetCommitResponse

__all__ = ["CommitTracker"]


class CommitTracker:
    """The commits in flight, the last one's error, and KIP-726's refusal."""

    def __init__(self) -> None:
        self.in_flight: list[OffsetCommitRequest] = []
        #: Rule 3: the error of the last failed commit (``None``: the last one succeeded).
        self.last_error: ErrorCode | None = None
        #: Rule 2: set after losing partitions to an EAGER selection, until rejoined.
        self.disabled = False

    def refusal(self, state: MemberState) -> CommitRefusedError | None:
        """Rules 1 and 2: why a commit may not go out in ``state`` (``None``: it may)."""
        if state is MemberState.STABLE and not self.disabled:
            return None
        if state in REBALANCING or self.disabled:
            return RebalanceInProgressError(
                "Offset commit cannot be completed since the consumer is undergoing a "
                "rebalance for auto partition assignment."
            )
        return CommitFailedError(
            "Offset commit cannot be completed since the consumer is not part of an active "
            "group for auto partition assignment."
        )

    def sent(self, request: OffsetCommitRequest) -> None:
        self.in_flight.append(request)

    def answered(
        self, request: OffsetCommitRequest, response: OffsetCommitResponse
    ) -> ErrorCode | None:
        """Rule 3; returns the response's first partition error (``None``: none)."""
        if request in self.in_flight:
            self.in_flight.remove(request)
        errors = [p.error_code for t in response.topics for p in t.partitions if p.error_code]
        self.last_error = errors[0] if errors else None
        return self.last_error

    def failed(self, request: object) -> bool:
        """Rule 3: no response will come; ``True`` when ``request`` was a commit in flight."""
        if not isinstance(request, OffsetCommitRequest) or request not in self.in_flight:
            return False
        self.in_flight.remove(request)
        self.last_error = ErrorCode.REQUEST_TIMED_OUT
        return True

    def clear(self) -> None:
        """The member turned fatal: no answer to an earlier commit matters any more."""
        self.in_flight.clear()
