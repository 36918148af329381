"""What a coordinator step returns: responses, records and events (sans-IO).

Kafka's handlers return a ``CoordinatorResult(records, response)``; ours also
carry events, and *several* responses, because the classic protocol parks
requests: a JoinGroup waits for the join phase to complete and a follower's
SyncGroup waits for the leader's. The driver (simulator or server) gives every
request an opaque ``token`` (a connection and correlation id, say); a result
answers requests by token, this one or earlier parked ones.

Records must be persisted before the responses are sent (docs/architecture.md,
"Contracts between the parts"); events are published in order.
``failures`` names the operations that raised and were contained
(``regroup.coordinator.guard``), for the driver to log once each.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from regroup.events import Event
from regroup.records import CoordinatorRecord

__all__ = ["CoordinatorResult", "HandlerFailure", "Reply"]


@dataclass(frozen=True, slots=True)
class Reply:
    """The response to the request that was handed in with ``token``."""

    token: Hashable
    #: A response dataclass of ``regroup.model.requests``.
    response: object


@dataclass(frozen=True, slots=True)
class HandlerFailure:
    """An operation that raised: its group was rebuilt from its records (``guard``)."""

    #: The request type, or ``timer`` for a timer operation.
    operation: str
    group_id: str | None
    error: Exception
    #: Requests answered UNKNOWN_SERVER_ERROR (the failing one and those waiting on the group).
    answered: int


@dataclass(slots=True, eq=False)
class CoordinatorResult:
    """The responses (``replies``), ``records`` and ``events`` of one coordinator step."""

    replies: list[Reply] = field(default_factory=list)
    records: list[CoordinatorRecord] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    failures: list[HandlerFailure] = field(default_factory=list)

    def reply(self, token: Hashable, response: object) -> CoordinatorResult:
        self.replies.append(Reply(token, response))
        return self

    def extend(self, other: CoordinatorResult) -> CoordinatorResult:
        self.replies.extend(other.replies)
        self.records.extend(other.records)
        self.events.extend(other.events)
        if other.failures:
            self.failures.extend(other.failures)
        return self

    @classmethod
    def merge(cls, results: Iterable[CoordinatorResult]) -> CoordinatorResult:
        merged = cls()
        for result in results:
            merged.extend(result)
        return merged

    def response_for(self, token: Hashable) -> object | None:
        """The response to ``token`` in this result, if any (for tests and drivers)."""
        for reply in self.replies:
            if reply.token == token:
                return reply.response
        return None
