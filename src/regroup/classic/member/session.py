"""The classic member's session: when to heartbeat, and the poll timer.

Kafka: ``org.apache.kafka.clients.consumer.internals.Heartbeat`` (its
heartbeat and poll timers) and ``AbstractCoordinator.HeartbeatThread``. The
member (``ClassicMember``) holds one ``Session`` and asks it *when*; *whether*
it heartbeats at all in its state is the member's table
(``state.HEARTBEATING``), and what an error in a Heartbeat response does
is ``errors.ERROR_ACTIONS``.

Rule 1: at most one Heartbeat is in flight. The next one is due
        ``heartbeat.interval.ms`` after the last was sent, or
        ``retry.backoff.ms`` after a failed request or a retriable error.
Rule 2: the schedule runs from a successful JoinGroup (``start``: the first
        heartbeat is due an interval later) until the generation ends or the
        rebalance fails (``stop``: nothing due, nothing in flight).
Rule 3: the poll timer (KIP-62): ``max.poll.interval.ms`` after the
        application's last ``poll()`` the member must leave the group (Kafka
        ``pollTimeoutExpired`` -> ``maybeLeaveGroup``). Once expired it stays
        expired, and the member does not rejoin, until the application polls
        again (``application_polled``).
"""

from __future__ import annotations

from regroup.model.requests.classic import HeartbeatRequest

__all__ = ["Session"]


class Session:
    """The heartbeat schedule and the poll timer of one classic member."""

    def __init__(
        self,
        *,
        heartbeat_interval_ms: int,
        retry_backoff_ms: int,
        max_poll_interval_ms: int,
        now_ms: int,
    ) -> None:
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.max_poll_interval_ms = max_poll_interval_ms
        #: The Heartbeat sent and not answered yet (Rule 1).
        self.in_flight: HeartbeatRequest | None = None
        #: When the next Heartbeat is due; ``None`` outside a generation (Rule 2).
        self.next_heartbeat_ms: int | None = None
        self.last_application_poll_ms = now_ms
        #: Rule 3: the member left on the poll timer and waits for the application.
        self.poll_timeout_expired = False

    # -- the heartbeat schedule (Rules 1 and 2) ------------------------------------------

    def start(self, now_ms: int) -> None:
        """A JoinGroup succeeded: the first Heartbeat is due an interval from now."""
        self.next_heartbeat_ms = now_ms + self.heartbeat_interval_ms

    def stop(self) -> None:
        """The generation ended or the rebalance failed: nothing is due or awaited."""
        self.in_flight = None
        self.next_heartbeat_ms = None

    def heartbeat_due(self, now_ms: int) -> bool:
        return (
            self.in_flight is None
            and self.next_heartbeat_ms is not None
            and now_ms >= self.next_heartbeat_ms
        )

    def sent(self, request: HeartbeatRequest, now_ms: int) -> None:
        self.in_flight = request
        self.next_heartbeat_ms = now_ms + self.heartbeat_interval_ms

    def answered(self, request: HeartbeatRequest) -> None:
        """A response arrived (for this Heartbeat, or for an older one: then nothing)."""
        if request is self.in_flight:
            self.in_flight = None

    def back_off(self, now_ms: int) -> None:
        """A retriable error: the next Heartbeat after ``retry.backoff.ms``."""
        self.next_heartbeat_ms = now_ms + self.retry_backoff_ms

    def failed(self, request: object, now_ms: int) -> bool:
        """No response will come; ``True`` when ``request`` was the Heartbeat in flight."""
        if request is not self.in_flight:
            return False
        self.in_flight = None
        self.back_off(now_ms)
        return True

    # -- the poll timer (Rule 3) ---------------------------------------------------------

    def application_polled(self, now_ms: int) -> None:
        self.last_application_poll_ms = now_ms
        self.poll_timeout_expired = False

    def poll_timer_expired(self, now_ms: int) -> bool:
        return now_ms >= self.last_application_poll_ms + self.max_poll_interval_ms

    # -- deadlines -----------------------------------------------------------------------

    def next_deadline(self) -> int:
        """The poll timer's expiry, or the next Heartbeat if it is due earlier."""
        expiry = self.last_application_poll_ms + self.max_poll_interval_ms
        if self.in_flight is None and self.next_heartbeat_ms is not None:
            return min(expiry, self.next_heartbeat_ms)
        return expiry
