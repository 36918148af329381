"""The errors a classic member raises to its application (from ``poll``, ``commit`` ...).

Kafka's client exceptions, reduced to what the member can tell apart: the
ones both members raise (``regroup.members.errors``: ``MemberFatalError`` for a
non-retriable group error such as FENCED_INSTANCE_ID,
INCONSISTENT_GROUP_PROTOCOL, GROUP_MAX_SIZE_REACHED, INVALID_SESSION_TIMEOUT
... -- Kafka throws the matching ``ApiException`` from every later ``poll`` --
and ``IllegalStateError`` for API misuse), and the classic member's own:
``CommitFailedError`` (Kafka: ``CommitFailedException``, the member is not in
an active group) and its sibling ``RebalanceInProgressError`` (Kafka:
``RebalanceInProgressException``: KIP-429, "Allow Consumer to Return Records
in Rebalance": a commit while a rebalance is in progress).

And, as data, what the member does with each error code in each response
(``ERROR_ACTIONS``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from regroup.model import ErrorCode

__all__ = [
    "DEFAULT_ACTIONS",
    "ERROR_ACTIONS",
    "CommitFailedError",
    "CommitRefusedError",
    "ErrorAction",
    "RebalanceInProgressError",
    "error_action",
]


class CommitRefusedError(Exception):
    """The member refused to send a commit (base of the two reasons below)."""


class CommitFailedError(CommitRefusedError):
    """Kafka's ``CommitFailedException``: the member is not part of an active group."""


class RebalanceInProgressError(CommitRefusedError):
    """Kafka's ``RebalanceInProgressException``: retry after the rebalance completes."""


class ErrorAction(enum.Enum):
    """What the member does with an error code in a response (Kafka's response handlers)."""

    #: MEMBER_ID_REQUIRED (KIP-394, KIP-429 step 1.e): take the id, join again at once.
    ADOPT_MEMBER_ID = "adopt_member_id"
    #: The rebalance failed; join again at once keeping generation and partitions.
    REJOIN_AT_ONCE = "rejoin_at_once"
    #: The rebalance failed on a coordinator problem; join again after ``retry.backoff.ms``.
    REJOIN_AFTER_BACKOFF = "rejoin_after_backoff"
    #: KIP-429 step 1.c: rejoin, keeping every owned partition (only when STABLE).
    REQUEST_REJOIN = "request_rejoin"
    #: KIP-429 step 1.d, ILLEGAL_GENERATION: reset the generation, keep the member id.
    RESET_GENERATION = "reset_generation"
    #: KIP-429 step 1.d, UNKNOWN_MEMBER_ID: reset the generation and the member id.
    RESET_MEMBER = "reset_member"
    #: Try the same request again after ``retry.backoff.ms``.
    RETRY_AFTER_BACKOFF = "retry_after_backoff"
    #: Non-retriable: the member turns FATAL.
    FATAL = "fatal"
    #: Recorded, nothing else.
    IGNORE = "ignore"


_RETRIABLE = (
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.NETWORK_EXCEPTION,
)

_A = ErrorAction

#: ERROR_ACTIONS[api][code] -> action; a code not listed takes ``DEFAULT_ACTIONS[api]``.
#: Kafka: ``AbstractCoordinator.{JoinGroup,SyncGroup,Heartbeat}ResponseHandler`` and
#: ``ConsumerCoordinator.OffsetCommitResponseHandler``; research §6.8.
ERROR_ACTIONS: Mapping[str, Mapping[ErrorCode, ErrorAction]] = {
    "JoinGroup": {
        ErrorCode.MEMBER_ID_REQUIRED: _A.ADOPT_MEMBER_ID,
        ErrorCode.REBALANCE_IN_PROGRESS: _A.REJOIN_AT_ONCE,
        ErrorCode.UNKNOWN_MEMBER_ID: _A.RESET_MEMBER,
        ErrorCode.ILLEGAL_GENERATION: _A.RESET_GENERATION,
        **dict.fromkeys(_RETRIABLE, _A.REJOIN_AFTER_BACKOFF),
    },
    "SyncGroup": {
        ErrorCode.REBALANCE_IN_PROGRESS: _A.REJOIN_AT_ONCE,
        ErrorCode.UNKNOWN_MEMBER_ID: _A.RESET_MEMBER,
        ErrorCode.ILLEGAL_GENERATION: _A.RESET_GENERATION,
        **dict.fromkeys(_RETRIABLE, _A.REJOIN_AFTER_BACKOFF),
    },
    "Heartbeat": {
        ErrorCode.REBALANCE_IN_PROGRESS: _A.REQUEST_REJOIN,
        ErrorCode.UNKNOWN_MEMBER_ID: _A.RESET_MEMBER,
        ErrorCode.ILLEGAL_GENERATION: _A.RESET_GENERATION,
        **dict.fromkeys(_RETRIABLE, _A.RETRY_AFTER_BACKOFF),
    },
    "OffsetCommit": {
        ErrorCode.REBALANCE_IN_PROGRESS: _A.REQUEST_REJOIN,
        ErrorCode.UNKNOWN_MEMBER_ID: _A.RESET_MEMBER,
        ErrorCode.ILLEGAL_GENERATION: _A.RESET_GENERATION,
        ErrorCode.FENCED_INSTANCE_ID: _A.FATAL,
    },
}

#: FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL, GROUP_MAX_SIZE_REACHED,
#: INVALID_SESSION_TIMEOUT, GROUP_AUTHORIZATION_FAILED ... are fatal for the group RPCs;
#: a commit's other errors (offset metadata too large, retriable ones) only fail that commit.
DEFAULT_ACTIONS: Mapping[str, ErrorAction] = {
    "JoinGroup": _A.FATAL,
    "SyncGroup": _A.FATAL,
    "Heartbeat": _A.FATAL,
    "OffsetCommit": _A.IGNORE,
}


def error_action(api: str, code: ErrorCode) -> ErrorAction:
    """The member's reaction to ``code`` in a response of ``api``."""
    return ERROR_ACTIONS[api].get(code, DEFAULT_ACTIONS[api])
