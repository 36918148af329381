"""The KIP-848 member's heartbeats: when to send one, what it says, what its answer does.

Kafka: ``ConsumerHeartbeatRequestManager`` and ``ConsumerMembershipManager``
(``onHeartbeatRequestGenerated``, ``onHeartbeatSuccess``). The request fields
and the schedule are ``regroup.consumer.member_heartbeat``'s.
"""

from __future__ import annotations

from regroup.consumer.member_client_assignor import client_assignors_of, is_compute_assignment
from regroup.consumer.member_config import TopicAuthorizationError
from regroup.consumer.member_heartbeat import (
    HeartbeatErrorAction,
    HeartbeatFields,
    heartbeat_error_action,
)
from regroup.consumer.member_reconciling import MemberReconciling
from regroup.consumer.member_state import MemberState
from regroup.model import ErrorCode
from regroup.model.requests.consumer import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

__all__ = ["MemberHeartbeating"]


class MemberHeartbeating(MemberReconciling):
    """Heartbeat requests and responses."""

    def _maybe_heartbeat(self) -> ConsumerGroupHeartbeatRequest | None:
        state = self._state
        if not state.sends_heartbeats:
            return None
        urgent = self._heartbeat_now and state.heartbeats_now
        if not self._schedule.can_send(self._now, urgent=urgent):
            return None
        request = self._builder.build(self._heartbeat_fields(), full=state is MemberState.JOINING)
        self._schedule.on_sent(self._now)
        self._heartbeat_request = request
        self._heartbeat_now = False
        self._on_heartbeat_generated()
        return request

    def _heartbeat_fields(self) -> HeartbeatFields:
        return HeartbeatFields(
            group_id=self.config.group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            instance_id=self.config.group_instance_id,
            rack_id=self.config.client_rack,
            rebalance_timeout_ms=self.config.max_poll_interval_ms,
            subscribed_topic_names=self._topics if self._regex is None else None,
            subscribed_topic_regex=self._regex,
            server_assignor=self.config.group_remote_assignor,
            client_assignors=client_assignors_of(self._assignors, frozenset(self._topics or ()))
            if self._assignors
            else None,
            owned=self._assigned.current,
            client_id=self.config.client_id,
        )

    def _on_heartbeat_generated(self) -> None:
        """Kafka's ``onHeartbeatRequestGenerated``."""
        if self._state is MemberState.ACKNOWLEDGING:
            self._transition(
                MemberState.STABLE if self._assigned.reconciled else MemberState.RECONCILING
            )
        elif self._state is MemberState.LEAVING:
            if self._poll_timer_expired:
                self._transition(MemberState.STALE)
                self._lose_all()
            else:
                self._transition(MemberState.UNSUBSCRIBED)

    def _on_heartbeat_response(
        self, request: ConsumerGroupHeartbeatRequest, response: ConsumerGroupHeartbeatResponse
    ) -> None:
        code = response.error_code
        if request.member_epoch < 0:
            # The answer to a leave heartbeat: the member already moved on.
            self._schedule.on_response(self._now, response.heartbeat_interval_ms)
            return
        if code is ErrorCode.NONE or is_compute_assignment(code):
            self._schedule.on_response(self._now, response.heartbeat_interval_ms)
            if is_compute_assignment(code) and self._state.is_active:
                self._process.on_compute_assignment()
            if code is ErrorCode.NONE or response.member_epoch >= 0:
                self._on_heartbeat_success(response)
            return
        self._builder.reset()
        action = heartbeat_error_action(code)
        if action is HeartbeatErrorAction.RETRY_NOW:
            self._schedule.on_retry_now(self._now)
        elif action is HeartbeatErrorAction.RETRY_BACKOFF:
            self._schedule.on_failure(self._now)
        elif action is HeartbeatErrorAction.FENCED:
            self._schedule.on_retry_now(self._now)
            self._transition_to_fenced()
        elif action is HeartbeatErrorAction.SURFACE:
            self._schedule.on_response(self._now, response.heartbeat_interval_ms)
            self._errors.record(TopicAuthorizationError(response.error_message or code.name))
        else:
            self._schedule.on_response(self._now, response.heartbeat_interval_ms)
            self._transition_to_fatal(code, response.error_message)

    def _on_heartbeat_success(self, response: ConsumerGroupHeartbeatResponse) -> None:
        """Kafka's ``onHeartbeatSuccess``."""
        if self._state is MemberState.LEAVING or not self._state.in_group:
            return
        self.member_epoch = response.member_epoch
        if response.assignment is None or not self._state.can_handle_new_assignment:
            return
        self._assigned.receive(response.assignment.topic_partitions)
        if not self._assigned.reconciled:
            if self._state is not MemberState.RECONCILING:
                self._transition(MemberState.RECONCILING)
        elif self._state in (MemberState.JOINING, MemberState.RECONCILING):
            self._transition(MemberState.STABLE)
