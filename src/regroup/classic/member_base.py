"""The classic member's state and bookkeeping (the base of ``ClassicMember``).

Everything the member *is* -- its identity in the group (member id,
generation, selected assignor, leadership), the partitions it owns, its
subscription, the rejoin flag, the requests in flight, its clock -- and the
small steps every part of the protocol flow shares: asking to rejoin, failing
a rebalance, resetting the generation (KIP-429 step 1.d), turning fatal,
calling the listener (with KIP-429's error rule) and emitting the events.
``member.py`` holds the protocol flow on top of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from regroup.assignors.classic.api import ConsumerPartitionAssignor
from regroup.classic.member_config import ClassicMemberConfig
from regroup.classic.member_errors import IllegalMemberUse, MemberFatalError
from regroup.classic.member_listener import CallbackClock, ListenerInvoker
from regroup.classic.member_metrics import MemberMetrics
from regroup.classic.member_protocol import ProtocolSelector
from regroup.classic.member_session import Session
from regroup.classic.member_state import MemberState, MemberStateMachine, Trigger
from regroup.events import (
    Event,
    MemberStateChanged,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    RebalanceRequested,
)
from regroup.model import NO_GENERATION, ErrorCode, TopicPartition, sorted_partitions
from regroup.model.listener import ConsumerRebalanceListener
from regroup.model.metadata import MetadataImage
from regroup.model.requests.classic import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from regroup.model.requests.offsets import OffsetCommitRequest

__all__ = ["GROUP_PROTOCOL", "MemberBase", "MemberRequest"]

MemberRequest = (
    JoinGroupRequest | SyncGroupRequest | HeartbeatRequest | LeaveGroupRequest | OffsetCommitRequest
)

#: ``group_protocol`` of the events this member emits.
GROUP_PROTOCOL: Final = "classic"

_EVENT_KINDS: Final = {
    "revoked": PartitionsRevoked,
    "assigned": PartitionsAssigned,
    "lost": PartitionsLost,
}


class MemberBase:
    """State and shared steps; not used on its own."""

    def __init__(
        self,
        config: ClassicMemberConfig,
        *,
        listener: ConsumerRebalanceListener | None = None,
        assignors: Sequence[ConsumerPartitionAssignor] | None = None,
        metadata: MetadataImage | None = None,
        callback_clock: CallbackClock | None = None,
        now_ms: int = 0,
        join_on_application_poll: bool = False,
    ) -> None:
        self.config = config
        #: Send a needed JoinGroup only after the application's next ``poll()`` (Kafka's
        #: ``ConsumerCoordinator.poll`` runs on the application thread); see ``ClassicMember``.
        self.join_on_application_poll = join_on_application_poll
        if assignors is None:
            # Imported at call time: the registry imports every assignor implementation.
            from regroup.assignors.classic.registry import create_classic_assignor

            assignors = [create_classic_assignor(name) for name in config.assignment_strategy]
        self._assignors: tuple[ConsumerPartitionAssignor, ...] = tuple(assignors)
        self._by_name = {a.name: a for a in self._assignors}
        self._selector = ProtocolSelector(config.rebalance_protocol_selection, self._assignors)
        self.metrics = MemberMetrics(config.metrics_sample_window_ms, config.metrics_num_samples)
        self._invoker = ListenerInvoker(listener, self.metrics, callback_clock)
        self._sm = MemberStateMachine()
        self._now = now_ms
        self._metadata = metadata or MetadataImage()
        self._metadata_changed_from: MetadataImage | None = None

        self.member_id = ""
        #: The id the member had before it was reset (its events keep naming it).
        self._former_member_id = ""
        self.generation_id = NO_GENERATION
        #: The assignor the group selected in the current generation.
        self.protocol_name: str | None = None
        self.leader_id = ""
        self.is_leader = False
        self._owned: frozenset[TopicPartition] = frozenset()
        self._subscription: frozenset[str] = frozenset()
        self._joined_subscription: frozenset[str] | None = None
        #: Kafka ``rejoinNeeded`` / ``rejoinReason`` / ``needsJoinPrepare``.
        self._rejoin_needed = False
        self._rejoin_reason = ""
        self._needs_join_prepare = True
        #: The application polled since the rejoin became needed (``join_on_application_poll``).
        self._app_polled_since_rejoin_needed = True
        #: Kafka ``assignmentSnapshot`` (leader only): partition counts at assignment time.
        self._assignment_snapshot: dict[str, int] | None = None
        #: KIP-726: set after losing partitions to an EAGER selection, until rejoined.
        self._commits_disabled = False

        self._join: JoinGroupRequest | None = None
        self._sync: SyncGroupRequest | None = None
        self._commits: list[OffsetCommitRequest] = []
        self._join_retry_at = now_ms
        self._session = Session(
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            retry_backoff_ms=config.retry_backoff_ms,
            max_poll_interval_ms=config.max_poll_interval_ms,
            now_ms=now_ms,
        )

        self._outbox: list[MemberRequest] = []
        self._events: list[Event] = []
        self._callback_error: Exception | None = None
        self._fatal: MemberFatalError | None = None
        #: The error of the last failed commit response (``None``: the last one succeeded).
        self.last_commit_error: ErrorCode | None = None
        #: A listener exception raised during ``close`` (close itself never raises).
        self.close_error: Exception | None = None

    @property
    def group_id(self) -> str:
        return self.config.group_id

    @property
    def event_member_id(self) -> str:
        """The member id events carry: the current one, else the one the member had.

        Kafka clears the member id on UNKNOWN_MEMBER_ID, on a poll timeout and on a
        leave before ``onJoinPrepare`` reports the loss; the events still name the
        member that lost the partitions (``""`` only before the first JoinGroup reply).
        """
        return self.member_id or self._former_member_id

    # -- bookkeeping -------------------------------------------------------------------

    def _need_rejoin(self, reason: str) -> None:
        """Kafka ``rejoinNeeded = true``: from now on the JoinGroup waits for an app poll."""
        self._rejoin_needed = True
        self._rejoin_reason = reason
        self._app_polled_since_rejoin_needed = False

    def _request_rejoin(self, reason: str) -> None:
        self._need_rejoin(reason)
        self._emit(
            RebalanceRequested(
                ts_ms=self._now,
                group_id=self.group_id,
                member_id=self.event_member_id,
                reason=reason,
            )
        )

    def _rebalance_failed(self, cause: str, *, backoff: bool) -> None:
        """Kafka ``recordRebalanceFailure``: count it, drop to UNJOINED, join again."""
        self.metrics.rebalance_failed(self._now)
        self._join = self._sync = None
        self._session.stop()
        if self._sm.can(Trigger.REBALANCE_FAILED):
            self._transition(Trigger.REBALANCE_FAILED)
        # Kafka: the failed join future is retried by ``joinGroupIfNeeded``, app thread.
        self._need_rejoin(f"rebalance failed due to {cause}")
        self._join_retry_at = self._now + (self.config.retry_backoff_ms if backoff else 0)

    def _clear_generation(self, *, reset_member_id: bool) -> None:
        self.generation_id = NO_GENERATION
        self.protocol_name = None
        if reset_member_id:
            self._former_member_id = self.member_id or self._former_member_id
            self.member_id = ""
        self._join = self._sync = None
        self._session.stop()
        self.is_leader = False
        self._assignment_snapshot = None

    def _reset_generation(self, reason: str, reset_member_id: bool) -> None:
        """Kafka ``resetStateAndRejoin``: KIP-429 step 1.d (the loss runs before the join)."""
        self._clear_generation(reset_member_id=reset_member_id)
        self._transition(Trigger.GENERATION_RESET)
        self._needs_join_prepare = True
        self._join_retry_at = self._now
        self._request_rejoin(reason)

    def _fail(self, code: ErrorCode, context: str) -> None:
        """A fatal error: the partitions are lost (another member may own them now)."""
        self._fatal = MemberFatalError(code, context)
        owned, self._owned = self._owned, frozenset()
        self._join = self._sync = None
        self._session.stop()
        self._outbox.clear()  # a fatal member sends nothing more
        self._commits.clear()
        self._transition(Trigger.FATAL_ERROR)
        if owned:
            self._callback("lost", owned)

    def _callback(self, name: str, partitions: frozenset[TopicPartition]) -> None:
        """Run one listener callback, charge its time, remember its error, log the event."""
        generation = self.generation_id
        ordered = sorted_partitions(partitions)
        outcome = self._invoker.invoke(name, ordered, self._now)
        self._now += outcome.elapsed_ms
        self._remember(outcome.error)
        self._emit(
            _EVENT_KINDS[name](
                ts_ms=self._now,
                group_id=self.group_id,
                member_id=self.event_member_id,
                partitions=tuple(ordered),
                generation_or_epoch=generation,
            )
        )

    def _remember(self, error: Exception | None) -> None:
        if error is not None and self._callback_error is None:
            self._callback_error = error

    def _raise_callback_error(self) -> None:
        error, self._callback_error = self._callback_error, None
        if error is not None:
            raise error

    def _transition(self, trigger: Trigger) -> None:
        old, new = self._sm.process(trigger)
        if old is not new:
            self._events.append(
                MemberStateChanged(
                    ts_ms=self._now,
                    group_id=self.config.group_id,
                    member_id=self.member_id or self._former_member_id,
                    group_protocol=GROUP_PROTOCOL,
                    old_state=old.value,  # str(state): its Kafka name
                    new_state=new.value,
                )
            )

    def _emit(self, event: Event) -> None:
        self._events.append(event)

    def _advance(self, now_ms: int) -> None:
        if now_ms > self._now:
            self._now = now_ms

    def _drain(self) -> list[MemberRequest]:
        out, self._outbox = self._outbox, []
        return out

    def _ensure_open(self) -> None:
        if self._sm.state is MemberState.CLOSED:
            raise IllegalMemberUse("This consumer has already been closed.")
