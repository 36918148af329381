"""The member's heartbeats: what a ConsumerGroupHeartbeat says, when one is sent, and the
poll timer.

KIP-848, "ConsumerGroupHeartbeat API", "Request Schema": the member sets every
top-level field when it joins and after an error (a lost or failed request);
otherwise it fills in only the fields that changed since its last heartbeat,
leaving the others ``None`` (``-1`` for ``rebalance_timeout_ms``).

Apache Kafka does this in the client's ``ConsumerHeartbeatRequestManager`` (its
inner ``HeartbeatState`` keeps the ``SentFields``); this module follows it:

* ``group_id``, ``member_id``, ``member_epoch`` and ``instance_id`` are sent in
  every heartbeat;
* a *full* request is built while JOINING, and after ``reset()`` (Kafka resets
  the sent fields on every error response and every failed request, so the
  coordinator gets a full picture and answers with the full assignment);
* ``rebalance_timeout_ms``, the subscription (names or regular expression),
  the assignors (server-side name or KIP-848 client-side list) and ``rack_id``
  are sent when they differ from what was last *sent*;
* ``topic_partitions`` (the owned partitions) is sent when the local assignment
  changed, *including its local epoch*: reconciling the same partitions at a
  new member epoch still has to be acknowledged.

``HEARTBEAT_ERROR_ACTIONS`` says, as data, what each error in a response makes
the member do (retry at once, retry after backoff, rejoin as fenced, surface,
or go FATAL).

``HeartbeatSchedule`` is Kafka's ``HeartbeatRequestState``: one request in
flight at most, the next one due ``heartbeat_interval_ms`` after the last
response (the interval comes from the coordinator, KIP-848 "Heartbeat &
Session"), and an exponential backoff after failures (``retry.backoff.ms`` 100,
``retry.backoff.max.ms`` 1000; Kafka adds 20% random jitter, omitted here so
the member needs no randomness for timing).

``HeartbeatRequestManager`` is the part the member (``ConsumerMember``) holds,
Kafka's ``ConsumerHeartbeatRequestManager``: a builder and a schedule, the
request in flight, the "heartbeat now" flag, and the poll timer. *Whether* a
state heartbeats, and whether without waiting, is the state table's
(``state``, Rule 5); the member passes its state in.

Rule 1: at most one heartbeat is in flight; only the response to that one is
        handled (``answered``).
Rule 2: one heartbeat "now" per request for it (``request_now``, on entering
        JOINING, ACKNOWLEDGING or LEAVING); it is honoured only while the state
        heartbeats now, and sending any heartbeat uses it up.
Rule 3: an error response resets the sent fields (the next heartbeat is full)
        and reschedules as its action says: at once (RETRY_NOW, FENCED), after
        the backoff (RETRY_BACKOFF), else after the interval. A failed request
        (no response) resets the sent fields and backs off.
Rule 4: the poll timer starts with the first subscription and restarts at every
        application poll; it has expired once more than ``max.poll.interval.ms``
        passed since (Kafka's ``pollTimer``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from regroup.consumer.member.state import MemberState
from regroup.model import ErrorCode, Uuid
from regroup.model.requests.consumer import (
    ClientAssignor,
    ConsumerGroupHeartbeatRequest,
    TopicPartitions,
)

__all__ = [
    "HEARTBEAT_ERROR_ACTIONS",
    "HeartbeatErrorAction",
    "HeartbeatFields",
    "HeartbeatRequestBuilder",
    "HeartbeatRequestManager",
    "HeartbeatSchedule",
    "LocalAssignment",
    "heartbeat_error_action",
    "topic_partitions_of",
]


class HeartbeatErrorAction(enum.Enum):
    """What an error in a heartbeat response makes the member do (Kafka 4.0's
    ``ConsumerHeartbeatRequestManager.onErrorResponse``). Every error also resets
    the sent fields, so the next heartbeat is full."""

    #: Rediscover the coordinator and send again at once.
    RETRY_NOW = "retry_now"
    #: Send again after the retry backoff.
    RETRY_BACKOFF = "retry_backoff"
    #: KIP-848, "Response Handling": abandon the partitions, rejoin with epoch 0, same id.
    FENCED = "fenced"
    #: Raise from the application's poll; stay in the group.
    SURFACE = "surface"
    #: The member cannot go on: FATAL.
    FATAL = "fatal"


#: The rules as data; an error not listed is FATAL (Kafka: "unexpected error").
HEARTBEAT_ERROR_ACTIONS: Mapping[ErrorCode, HeartbeatErrorAction] = {
    ErrorCode.NOT_COORDINATOR: HeartbeatErrorAction.RETRY_NOW,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: HeartbeatErrorAction.RETRY_NOW,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: HeartbeatErrorAction.RETRY_BACKOFF,
    ErrorCode.FENCED_MEMBER_EPOCH: HeartbeatErrorAction.FENCED,
    ErrorCode.UNKNOWN_MEMBER_ID: HeartbeatErrorAction.FENCED,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: HeartbeatErrorAction.SURFACE,
    # Named for the reader; FATAL is also the default.
    ErrorCode.GROUP_AUTHORIZATION_FAILED: HeartbeatErrorAction.FATAL,
    ErrorCode.INVALID_REQUEST: HeartbeatErrorAction.FATAL,
    ErrorCode.GROUP_MAX_SIZE_REACHED: HeartbeatErrorAction.FATAL,
    ErrorCode.UNSUPPORTED_ASSIGNOR: HeartbeatErrorAction.FATAL,
    ErrorCode.UNSUPPORTED_VERSION: HeartbeatErrorAction.FATAL,
    ErrorCode.INVALID_REGULAR_EXPRESSION: HeartbeatErrorAction.FATAL,
    ErrorCode.UNRELEASED_INSTANCE_ID: HeartbeatErrorAction.FATAL,
    ErrorCode.FENCED_INSTANCE_ID: HeartbeatErrorAction.FATAL,
}


def heartbeat_error_action(code: ErrorCode) -> HeartbeatErrorAction:
    return HEARTBEAT_ERROR_ACTIONS.get(code, HeartbeatErrorAction.FATAL)


@dataclass(frozen=True, slots=True)
class LocalAssignment:
    """The partitions the member owns, by topic id, and Kafka's *local epoch* of them.

    The local epoch grows on every reconciliation, so an acknowledgement of an
    unchanged partition set still differs from what was last sent.
    """

    local_epoch: int
    partitions: Mapping[Uuid, frozenset[int]]

    @classmethod
    def empty(cls) -> LocalAssignment:
        return cls(0, {})


def topic_partitions_of(partitions: Mapping[Uuid, frozenset[int]]) -> tuple[TopicPartitions, ...]:
    """The wire form: topics ordered by id text, partitions ascending, empty topics dropped."""
    return tuple(
        TopicPartitions(topic_id, tuple(sorted(parts)))
        for topic_id, parts in sorted(partitions.items(), key=lambda item: str(item[0]))
        if parts
    )


@dataclass(frozen=True, slots=True)
class HeartbeatFields:
    """Everything the member would tell the coordinator in a full heartbeat."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    #: Sorted topic names, or ``None`` when subscribed by regular expression.
    subscribed_topic_names: tuple[str, ...] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    client_assignors: tuple[ClientAssignor, ...] | None
    owned: LocalAssignment
    #: From the request header in Kafka (not a heartbeat field); the coordinator records it.
    client_id: str = ""


@dataclass(slots=True)
class _SentFields:
    """What was last sent of each optional field (Kafka's ``SentFields``)."""

    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    client_assignors: tuple[ClientAssignor, ...] | None = None
    owned: LocalAssignment | None = None


class HeartbeatRequestBuilder:
    """Builds requests that send only what changed; ``reset()`` makes the next one full."""

    __slots__ = ("_sent",)

    def __init__(self) -> None:
        self._sent = _SentFields()

    def reset(self) -> None:
        """Forget what was sent (Kafka: ``HeartbeatState.reset`` after an error or a failure)."""
        self._sent = _SentFields()

    def build(self, fields: HeartbeatFields, *, full: bool) -> ConsumerGroupHeartbeatRequest:
        """The next request; records what it carries as sent."""
        sent = self._sent
        rack_id = fields.rack_id if (full or fields.rack_id != sent.rack_id) else None
        timeout = (
            fields.rebalance_timeout_ms
            if (full or fields.rebalance_timeout_ms != sent.rebalance_timeout_ms)
            else -1
        )
        names: tuple[str, ...] | None = None
        regex: str | None = None
        if fields.subscribed_topic_regex is not None:
            if full or fields.subscribed_topic_regex != sent.subscribed_topic_regex:
                regex = fields.subscribed_topic_regex
            sent.subscribed_topic_names = None
        else:
            wanted = fields.subscribed_topic_names or ()
            if full or wanted != sent.subscribed_topic_names:
                names = wanted
            if sent.subscribed_topic_regex:
                # Kafka clears a previous regular expression with "" (ConsumerGroupHeartbeat v1).
                regex = ""
        server = (
            fields.server_assignor
            if (full or fields.server_assignor != sent.server_assignor)
            else None
        )
        clients = (
            fields.client_assignors
            if (full or fields.client_assignors != sent.client_assignors)
            else None
        )
        owned = (
            topic_partitions_of(fields.owned.partitions)
            if (full or fields.owned != sent.owned)
            else None
        )
        request = ConsumerGroupHeartbeatRequest(
            group_id=fields.group_id,
            member_id=fields.member_id,
            member_epoch=fields.member_epoch,
            instance_id=fields.instance_id,
            rack_id=rack_id,
            rebalance_timeout_ms=timeout,
            subscribed_topic_names=names,
            subscribed_topic_regex=regex,
            server_assignor=server,
            client_assignors=clients,
            topic_partitions=owned,
            client_id=fields.client_id,
        )
        sent.rack_id = fields.rack_id
        sent.rebalance_timeout_ms = fields.rebalance_timeout_ms
        if fields.subscribed_topic_regex is not None:
            sent.subscribed_topic_regex = fields.subscribed_topic_regex
        else:
            sent.subscribed_topic_names = fields.subscribed_topic_names or ()
            sent.subscribed_topic_regex = None
        sent.server_assignor = fields.server_assignor
        sent.client_assignors = fields.client_assignors
        sent.owned = fields.owned
        return request


class HeartbeatSchedule:
    """When the next heartbeat may go out (Kafka's ``HeartbeatRequestState``)."""

    __slots__ = (
        "_attempts",
        "_next_due_ms",
        "backoff_max_ms",
        "backoff_ms",
        "heartbeat_interval_ms",
        "in_flight",
    )

    def __init__(self, *, backoff_ms: int = 100, backoff_max_ms: int = 1000) -> None:
        self.backoff_ms = backoff_ms
        self.backoff_max_ms = backoff_max_ms
        #: From the last response; 0 until the coordinator has said.
        self.heartbeat_interval_ms = 0
        self.in_flight = False
        self._next_due_ms = 0
        self._attempts = 0

    def can_send(self, now_ms: int, *, urgent: bool) -> bool:
        """Nothing in flight, and the interval (or backoff) elapsed unless ``urgent``."""
        return not self.in_flight and (urgent or now_ms >= self._next_due_ms)

    def next_due_ms(self) -> int | None:
        """When the interval (or backoff) ends; ``None`` while a request is in flight."""
        return None if self.in_flight else self._next_due_ms

    def on_sent(self, now_ms: int) -> None:
        self.in_flight = True
        self._next_due_ms = now_ms + self.heartbeat_interval_ms

    def on_response(self, now_ms: int, heartbeat_interval_ms: int) -> None:
        """A response arrived (any error code): the next one is due an interval later."""
        self.in_flight = False
        self._attempts = 0
        if heartbeat_interval_ms > 0:
            self.heartbeat_interval_ms = heartbeat_interval_ms
        self._next_due_ms = now_ms + self.heartbeat_interval_ms

    def on_retry_now(self, now_ms: int) -> None:
        """Retry at once (Kafka, NOT_COORDINATOR: rediscover the coordinator, no backoff)."""
        self.in_flight = False
        self._next_due_ms = now_ms

    def on_failure(self, now_ms: int) -> None:
        """The request failed or must be retried with backoff (exponential, capped)."""
        self.in_flight = False
        delay = min(self.backoff_ms * (2**self._attempts), self.backoff_max_ms)
        self._attempts += 1
        self._next_due_ms = now_ms + delay

    def reset_interval(self, now_ms: int) -> None:
        """Due now (a rejoin after fencing, a new subscription)."""
        self._next_due_ms = now_ms


class HeartbeatRequestManager:
    """The member's heartbeat part (see the module rules)."""

    def __init__(self, *, backoff_ms: int, backoff_max_ms: int, max_poll_interval_ms: int) -> None:
        self.schedule = HeartbeatSchedule(backoff_ms=backoff_ms, backoff_max_ms=backoff_max_ms)
        self.builder = HeartbeatRequestBuilder()
        self.max_poll_interval_ms = max_poll_interval_ms
        #: Rule 1: the heartbeat sent and not answered yet.
        self.in_flight: ConsumerGroupHeartbeatRequest | None = None
        #: Rule 2: a heartbeat without waiting for the interval was asked for.
        self.send_now = False
        #: Rule 4: when the application last polled (``None``: the timer has not started).
        self.last_app_poll_ms: int | None = None

    # -- sending (Rules 1 and 2) ---------------------------------------------------------

    def request_now(self) -> None:
        self.send_now = True

    def restart(self, now_ms: int) -> None:
        """The member (re)joins: a full heartbeat, due now."""
        self.builder.reset()
        self.schedule.reset_interval(now_ms)
        self.send_now = True

    def can_send(self, state: MemberState, now_ms: int) -> bool:
        if not state.sends_heartbeats:
            return False
        return self.schedule.can_send(now_ms, urgent=self.send_now and state.heartbeats_now)

    def send(
        self, fields: HeartbeatFields, *, full: bool, now_ms: int
    ) -> ConsumerGroupHeartbeatRequest:
        request = self.builder.build(fields, full=full)
        self.schedule.on_sent(now_ms)
        self.in_flight = request
        self.send_now = False
        return request

    def next_deadline(self, state: MemberState, now_ms: int) -> int | None:
        """When the next heartbeat may go out in ``state`` (``None``: not before an input)."""
        if not state.sends_heartbeats:
            return None
        due = self.schedule.next_due_ms()
        if due is None:
            return None
        return now_ms if self.send_now and state.heartbeats_now else due

    # -- answers (Rules 1 and 3) ---------------------------------------------------------

    def answered(self, request: ConsumerGroupHeartbeatRequest) -> bool:
        """A response arrived; ``True`` when it answers the heartbeat in flight."""
        if request is not self.in_flight:
            return False
        self.in_flight = None
        return True

    def on_success(self, now_ms: int, heartbeat_interval_ms: int) -> None:
        self.schedule.on_response(now_ms, heartbeat_interval_ms)

    def on_error(
        self, action: HeartbeatErrorAction, now_ms: int, heartbeat_interval_ms: int
    ) -> None:
        """Rule 3, for an error response (Kafka ``onErrorResponse``)."""
        self.builder.reset()
        if action is HeartbeatErrorAction.RETRY_NOW or action is HeartbeatErrorAction.FENCED:
            self.schedule.on_retry_now(now_ms)
        elif action is HeartbeatErrorAction.RETRY_BACKOFF:
            self.schedule.on_failure(now_ms)
        else:
            self.schedule.on_response(now_ms, heartbeat_interval_ms)

    def failed(self, request: object, now_ms: int) -> None:
        """Rule 3, for a request that got no response (Kafka ``onFailure``)."""
        if request is self.in_flight:
            self.in_flight = None
            self.builder.reset()
            self.schedule.on_failure(now_ms)

    # -- the poll timer (Rule 4) ---------------------------------------------------------

    def start_poll_timer(self, now_ms: int) -> None:
        if self.last_app_poll_ms is None:
            self.last_app_poll_ms = now_ms

    def application_polled(self, now_ms: int) -> None:
        self.last_app_poll_ms = now_ms

    def poll_timer_expired(self, now_ms: int) -> bool:
        last = self.last_app_poll_ms
        return last is not None and now_ms - last > self.max_poll_interval_ms

    def poll_timer_deadline(self) -> int | None:
        """The first instant at which the poll timer has expired."""
        last = self.last_app_poll_ms
        return None if last is None else last + self.max_poll_interval_ms + 1
