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
from typing import Any

from regroup.events import Event
from regroup.records import CoordinatorRecord

__all__ = ["CoordinatorResult", "Reply"]


class Reply:
    """The response to the request that was handed in with ``token``.

    A plain class with slots rather than a frozen dataclass: a simulation makes
    one per request, and a frozen dataclass's generated ``__init__`` (one
    ``object.__setattr__`` per field, interpreted even in the compiled build)
    cost more than the rest of building a result.
    """

    __slots__ = ("response", "token")

    def __init__(self, token: Hashable, response: Any) -> None:
        self.token = token
        #: Any response dataclass (``Any``, not ``object``: mypyc cannot compile ``object``).
        self.response = response

    def __repr__(self) -> str:
        return f"Reply(token={self.token!r}, response={self.response!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Reply):
            return NotImplemented
        return bool(self.token == other.token and self.response == other.response)


class CoordinatorResult:
    """The responses (``replies``), ``records`` and ``events`` of one coordinator step.

    A plain class with slots (see ``Reply``): one is made per request.
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
