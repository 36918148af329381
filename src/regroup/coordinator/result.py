"""What a coordinator step returns: responses, records and events (sans-IO).

Kafka's handlers return a ``CoordinatorResult(records, response)``; ours also
carry events, and *several* responses, because the classic protocol parks
requests: a JoinGroup waits for the join phase to complete and a follower's
SyncGroup waits for the leader's. The driver (simulator or server) gives every
request an opaque ``token`` (a connection and correlation id, say); a result
answers requests by token, this one or earlier parked ones.

Records must be persisted before the responses are sent (DESIGN.md:
"written before a response is sent"); events are published in order.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from regroup.events import Event
from regroup.records import CoordinatorRecord

__all__ = ["CoordinatorResult", "Reply"]


@dataclass(frozen=True, slots=True)
class Reply:
    """The response to the request that was handed in with ``token``."""

    token: Hashable
    #: Any response dataclass (``Any``, not ``object``: mypyc cannot compile an ``object`` field).
    response: Any

    def __init__(self, token: Hashable, response: Any) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        # A simulation makes one Reply per request.
        object.__setattr__(self, "token", token)
        object.__setattr__(self, "response", response)


class CoordinatorResult:
    """The responses (``replies``), ``records`` and ``events`` of one coordinator step.

    A plain class with slots, not a dataclass: one is made per request, and the
    ``__init__`` a dataclass generates (with three ``default_factory`` lists) stays
    interpreted even in the compiled build (``regroup.native``).
    """

    __slots__ = ("events", "records", "replies")

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.records: list[CoordinatorRecord] = []
        self.events: list[Event] = []

    def __repr__(self) -> str:
        return (
            f"CoordinatorResult(replies={self.replies!r}, records={self.records!r}, "
            f"events={self.events!r})"
        )

    def reply(self, token: Hashable, response: object) -> CoordinatorResult:
        self.replies.append(Reply(token, response))
        return self

    def extend(self, other: CoordinatorResult) -> CoordinatorResult:
        self.replies.extend(other.replies)
        self.records.extend(other.records)
        self.events.extend(other.events)
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
                response: object = reply.response
                return response
        return None
