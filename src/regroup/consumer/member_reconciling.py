"""The KIP-848 member applying a new assignment (KIP-848, "Response Handling" 1-3).

Kafka: ``ConsumerMembershipManager.maybeReconcile``. Revoked partitions have
their positions committed first (when the member auto-commits), then
``onPartitionsRevoked``, the new assignment, ``onPartitionsAssigned``, and an
acknowledging heartbeat at once.
"""

from __future__ import annotations

from regroup.assignors.consumer.client_side import MemberAssignmentUpdate
from regroup.consumer.member_core import Reconciliation
from regroup.consumer.member_leaving import MemberLeaving
from regroup.consumer.member_state import MemberState
from regroup.events.schema import PartitionsAssigned, PartitionsRevoked

__all__ = ["MemberReconciling"]


class MemberReconciling(MemberLeaving):
    """Reconciliation: from the target the coordinator sent to the partitions owned."""

    def _reconcile_ready(self) -> bool:
        if self._state is not MemberState.RECONCILING or self._reconciling is not None:
            return False
        return self._assigned.plan(self._metadata) is not None

    def _maybe_reconcile(self) -> None:
        """KIP-848, "Response Handling" steps 1-3 (Kafka's ``maybeReconcile``)."""
        if self._state is not MemberState.RECONCILING or self._reconciling is not None:
            return
        plan = self._assigned.plan(self._metadata)
        if plan is None:
            return
        if plan.acknowledge_only:
            # Only unresolved topics differ: acknowledge the resolved part at the new epoch.
            self._assigned.apply(plan)
            self._enter(MemberState.ACKNOWLEDGING)
            return
        reconciliation = Reconciliation(plan, self.member_epoch)
        if plan.revoked:
            self._assigned.pending_revocation = frozenset(plan.revoked)
            offsets = self._consumed_positions()
            if offsets:
                self._reconciling = reconciliation
                self._queue_commit(offsets, "revocation")
                return
        self._finish_reconciliation(reconciliation)

    def _finish_reconciliation(self, reconciliation: Reconciliation) -> None:
        """Revoke, onPartitionsRevoked, assign, onAssignment, onPartitionsAssigned, ack."""
        self._reconciling = None
        self._assigned.pending_revocation = frozenset()
        if (
            self._state is not MemberState.RECONCILING
            or self.member_epoch < reconciliation.member_epoch
        ):
            return  # Kafka's maybeAbortReconciliation: left RECONCILING or rejoined meanwhile.
        plan = reconciliation.plan
        if plan.revoked:
            self._errors.call(self._listener.on_partitions_revoked, plan.revoked)
            self._emit_partitions(PartitionsRevoked, plan.revoked)
        self._assigned.apply(plan)
        if self._assignors:
            update = MemberAssignmentUpdate(self._assigned.owned, self.member_epoch)
            try:
                self._assignors[0].on_assignment(update)
            except Exception as error:
                self._errors.record(error)
        self._errors.call(self._listener.on_partitions_assigned, plan.added)
        self._emit_partitions(PartitionsAssigned, plan.added)
        self._enter(MemberState.ACKNOWLEDGING)
