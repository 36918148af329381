"""Calling the ``ConsumerRebalanceListener`` with KIP-429's error rule.

KIP-429, "Rebalance Callback Error Handling": a callback is a notification;
an exception it raises does not change the assignment or revocation it was
told about. When several callbacks run in one step (``onPartitionsRevoked``
then ``onPartitionsAssigned`` in a cooperative rebalance) every one still
runs, the *first* exception is remembered, and it is raised from ``poll``.
Kafka: ``ConsumerRebalanceListenerInvoker`` and the ``firstException``
bookkeeping of ``ConsumerCoordinator.onJoinComplete``. Like Kafka (which lets
``WakeupException`` / ``InterruptException`` through at once) only
``Exception`` is caught; ``KeyboardInterrupt`` and friends propagate.

``ListenerInvoker`` is the part of both members (``ClassicMember``,
``ConsumerMember``) that does this: it keeps the first exception until the
member raises it, including one the member hands it from elsewhere under the
same rule (the leader's assignor, an assignor's ``on_assignment``, an assignment
that cannot be read, a topic authorization error).

Time: a sans-IO member does not read a clock, so a callback takes zero
virtual time unless the driver says otherwise through a ``CallbackClock``:
``clock(callback, partitions) -> elapsed_ms``, called once per callback
invocation (``callback`` is ``"revoked"``, ``"assigned"`` or ``"lost"``). The
elapsed time is the callback's latency metric (handed to ``on_completed``,
the classic member's KIP-429 metrics) and moves the member's clock on (a
simulator charges, say, the time to commit or flush state on revoke).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from regroup.model import TopicPartition
from regroup.model.listener import ConsumerRebalanceListener

__all__ = ["CallbackClock", "CallbackCompleted", "CallbackOutcome", "ListenerInvoker"]

#: The listener method of each callback.
_METHODS: Final = {
    "revoked": "on_partitions_revoked",
    "assigned": "on_partitions_assigned",
    "lost": "on_partitions_lost",
}

#: ``(callback, partitions) -> milliseconds the callback took``.
CallbackClock = Callable[[str, Sequence[TopicPartition]], int]
#: ``(callback, elapsed_ms, end_ms)``: told of every callback that returned normally.
CallbackCompleted = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class CallbackOutcome:
    """What one invocation did: how long it took and what it raised (if anything)."""

    elapsed_ms: int
    error: Exception | None


class ListenerInvoker:
    """Invokes one listener, charges callback time, reports completed callbacks, and
    keeps the first exception until the member raises it."""

    def __init__(
        self,
        listener: ConsumerRebalanceListener | None = None,
        *,
        clock: CallbackClock | None = None,
        on_completed: CallbackCompleted | None = None,
    ) -> None:
        self._listener = listener
        self._clock = clock
        self._on_completed = on_completed
        self._first_error: Exception | None = None

    @property
    def error_pending(self) -> bool:
        """An exception waits to be raised from the member's next ``poll``."""
        return self._first_error is not None

    def remember(self, error: Exception | None) -> None:
        """Keep ``error`` unless an earlier one waits (the listener's, or an assignor's)."""
        if error is not None and self._first_error is None:
            self._first_error = error

    def take_error(self) -> Exception | None:
        """The first exception since the last ``take_error``, cleared."""
        error, self._first_error = self._first_error, None
        return error

    def invoke(
        self, callback: str, partitions: Sequence[TopicPartition], now_ms: int = 0
    ) -> CallbackOutcome:
        """Run ``on_partitions_<callback>(partitions)``; never raises an ``Exception``
        (one it catches is remembered, and returned in the outcome).

        ``partitions`` come in Kafka's callback order (``sorted_partitions``: the
        member sorts them once, for this call and for its event); the listener gets
        its own copy of the list.
        """
        ordered = list(partitions)
        elapsed = 0
        if self._clock is not None:
            elapsed = max(0, int(self._clock(callback, ordered)))
        if self._listener is None:
            return CallbackOutcome(elapsed, None)
        method = getattr(self._listener, _METHODS[callback])
        try:
            method(ordered)
        except Exception as error:
            self.remember(error)
            return CallbackOutcome(elapsed, error)
        if self._on_completed is not None:
            self._on_completed(callback, elapsed, now_ms + elapsed)
        return CallbackOutcome(elapsed, None)
