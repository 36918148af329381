"""The member's side of KIP-848's client-side assignment: Prepare, assign, Install.

KIP-848, "Client Side Mode": when a heartbeat response carries the
COMPUTE_ASSIGNMENT error, the member "is expected to call the
PrepareAssignment API to get the current group metadata and the current target
assignment", computes the new assignment with the selected assignor, and calls
InstallAssignment. One assignment is in flight at a time (the coordinator
allows only one; a member notified again while busy ignores the notice).

Rules
-----

Rule 1: IDLE -> PREPARE (on COMPUTE_ASSIGNMENT) -> PREPARING (request sent)
        -> INSTALL (assignor ran) -> INSTALLING (request sent) -> IDLE.
Rule 2: any error in a ConsumerGroupPrepareAssignment response (the KIP lists
        GROUP_AUTHORIZATION_FAILED, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
        COORDINATOR_LOAD_IN_PROGRESS, INVALID_REQUEST, INVALID_GROUP_ID,
        GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH) abandons the
        process: "the member must abandon the process". The coordinator picks a
        member again when the rebalance timeout runs out; fencing itself is
        learnt from the heartbeat.
Rule 3: an assignor that raises ``PartitionAssignorError``, returns an error,
        or is not among the member's assignors still installs, with a
        non-zero ``error_code`` and no members: the coordinator then keeps the
        current target (KIP-848, "Assignment Error").
Rule 4: an error in the ConsumerGroupInstallAssignment response (INVALID_ASSIGNMENT
        when validation failed, fencing, coordinator errors) ends the process;
        the member does not retry on its own.
Rule 5: a failed request (no response), a fencing, a leave: back to IDLE.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from regroup.assignors.consumer.client_side import (
    ASSIGNOR_FAILED,
    AssignmentMemberSpec,
    AssignmentSpec,
    ClientGroupAssignment,
    PartitionAssignor,
)
from regroup.assignors.errors import PartitionAssignorError
from regroup.consumer.member.heartbeat import topic_partitions_of
from regroup.model import ErrorCode, Uuid
from regroup.model.metadata import MetadataImage
from regroup.model.requests.consumer import (
    ClientAssignor,
    ConsumerGroupInstallAssignmentMember,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    TopicPartitions,
)

__all__ = [
    "AssignmentOutcome",
    "AssignmentProcessState",
    "ClientAssignmentProcess",
    "assignment_spec_from",
    "client_assignors_of",
    "is_compute_assignment",
]


def is_compute_assignment(code: ErrorCode) -> bool:
    """True for KIP-848's COMPUTE_ASSIGNMENT (regroup's number: Kafka never gave it one)."""
    return code is ErrorCode.COMPUTE_ASSIGNMENT


def client_assignors_of(
    assignors: Sequence[PartitionAssignor], topics: frozenset[str]
) -> tuple[ClientAssignor, ...]:
    """The heartbeat's ``ClientAssignors``, in the member's order of preference."""
    advertised = []
    for assignor in assignors:
        metadata = assignor.metadata(topics)
        advertised.append(
            ClientAssignor(
                name=assignor.name,
                minimum_version=assignor.minimum_version,
                maximum_version=assignor.maximum_version,
                version=metadata.version,
                reason=metadata.reason,
                metadata=metadata.metadata,
            )
        )
    return tuple(advertised)


def _by_topic(partitions: Sequence[TopicPartitions]) -> dict[Uuid, frozenset[int]]:
    merged: dict[Uuid, set[int]] = {}
    for entry in partitions:
        merged.setdefault(entry.topic_id, set()).update(entry.partitions)
    return {topic_id: frozenset(parts) for topic_id, parts in merged.items() if parts}


def assignment_spec_from(
    response: ConsumerGroupPrepareAssignmentResponse, metadata: MetadataImage
) -> AssignmentSpec:
    """The assignor's input from a PrepareAssignment response (names from ``metadata``)."""
    counts = {entry.topic_id: entry.num_partitions for entry in response.partition_metadata}
    names: dict[Uuid, str] = {}
    for topic_id in counts:
        topic = metadata.topic_by_id(topic_id)
        if topic is not None:
            names[topic_id] = topic.name
    members = {
        member.member_id: AssignmentMemberSpec(
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            instance_id=member.instance_id,
            subscribed_topic_ids=frozenset(member.subscriptions),
            assignor_version=member.assignor_version,
            assignor_reason=member.assignor_reason,
            assignor_metadata=member.assignor_metadata,
            target_partitions=_by_topic(member.topic_partitions),
        )
        for member in response.members
    }
    return AssignmentSpec(
        group_epoch=response.group_epoch,
        assignor_name=response.client_assignor_name,
        members=members,
        partition_counts=counts,
        topic_names=names,
    )


class AssignmentProcessState(enum.Enum):
    IDLE = "IDLE"
    PREPARE = "PREPARE"
    PREPARING = "PREPARING"
    INSTALL = "INSTALL"
    INSTALLING = "INSTALLING"


@dataclass(frozen=True, slots=True)
class AssignmentOutcome:
    """How one assignment process ended (for the member's owner and for tests)."""

    #: ``installed``, ``install_rejected``, ``abandoned`` or ``assignor_error``.
    result: str
    group_epoch: int = -1
    error: str | None = None


class ClientAssignmentProcess:
    """One member's client-side assignment runs, one at a time (see the module rules)."""

    __slots__ = ("_assignors", "_in_flight", "_install", "_outcomes", "_state")

    def __init__(self, assignors: Sequence[PartitionAssignor]) -> None:
        self._assignors = tuple(assignors)
        self._state = AssignmentProcessState.IDLE
        self._install: ConsumerGroupInstallAssignmentRequest | None = None
        self._outcomes: list[AssignmentOutcome] = []
        #: The request sent and not answered yet (it may outlive an abandoned run).
        self._in_flight: (
            ConsumerGroupPrepareAssignmentRequest | ConsumerGroupInstallAssignmentRequest | None
        ) = None

    @property
    def state(self) -> AssignmentProcessState:
        return self._state

    @property
    def has_request_ready(self) -> bool:
        """A request is due and nothing is in flight."""
        ready = (AssignmentProcessState.PREPARE, AssignmentProcessState.INSTALL)
        return self._in_flight is None and self._state in ready

    def take_outcomes(self) -> list[AssignmentOutcome]:
        outcomes, self._outcomes = self._outcomes, []
        return outcomes

    def on_compute_assignment(self) -> bool:
        """COMPUTE_ASSIGNMENT arrived: start unless busy or without assignors (Rule 1)."""
        if self._state is not AssignmentProcessState.IDLE or not self._assignors:
            return False
        self._state = AssignmentProcessState.PREPARE
        return True

    def abandon(self, reason: str) -> None:
        """Rule 5."""
        if self._state is not AssignmentProcessState.IDLE:
            self._outcomes.append(AssignmentOutcome("abandoned", error=reason))
        self._state = AssignmentProcessState.IDLE
        self._install = None

    def next_request(
        self, group_id: str, member_id: str, member_epoch: int
    ) -> ConsumerGroupPrepareAssignmentRequest | ConsumerGroupInstallAssignmentRequest | None:
        """The request to send now, if any; marks it in flight."""
        request: ConsumerGroupPrepareAssignmentRequest | ConsumerGroupInstallAssignmentRequest
        if self._in_flight is not None:
            return None
        if self._state is AssignmentProcessState.PREPARE:
            self._state = AssignmentProcessState.PREPARING
            request = ConsumerGroupPrepareAssignmentRequest(group_id, member_id, member_epoch)
        elif self._state is AssignmentProcessState.INSTALL and self._install is not None:
            self._state = AssignmentProcessState.INSTALLING
            request = self._install
        else:
            return None
        self._in_flight = request
        return request

    def on_request_failed(self, request: object) -> None:
        """Rule 5: no response will come."""
        if request is self._in_flight:
            self._in_flight = None
            self.abandon("request failed")

    def on_prepare_response(
        self,
        request: ConsumerGroupPrepareAssignmentRequest,
        response: ConsumerGroupPrepareAssignmentResponse,
        metadata: MetadataImage,
    ) -> None:
        """Rules 2 and 3: run the assignor and stage the install request."""
        if request is not self._in_flight:
            return
        self._in_flight = None
        if self._state is not AssignmentProcessState.PREPARING:
            return
        if response.error_code.is_error:
            self.abandon(response.error_code.name)
            return
        spec = assignment_spec_from(response, metadata)
        error, members = self._run(spec)
        self._install = ConsumerGroupInstallAssignmentRequest(
            group_id=request.group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            group_epoch=response.group_epoch,
            error_code=error,
            members=members,
        )
        self._state = AssignmentProcessState.INSTALL

    def _run(
        self, spec: AssignmentSpec
    ) -> tuple[int, tuple[ConsumerGroupInstallAssignmentMember, ...]]:
        assignor = next((a for a in self._assignors if a.name == spec.assignor_name), None)
        if assignor is None:
            return int(ErrorCode.UNSUPPORTED_ASSIGNOR), ()
        try:
            result: ClientGroupAssignment = assignor.assign(spec)
        except PartitionAssignorError:
            return ASSIGNOR_FAILED, ()
        if result.error:
            return result.error, ()
        members = tuple(
            ConsumerGroupInstallAssignmentMember(member_id, topic_partitions_of(part.partitions))
            for member_id, part in sorted(result.members.items())
        )
        return 0, members

    def on_install_response(
        self,
        request: ConsumerGroupInstallAssignmentRequest,
        response: ConsumerGroupInstallAssignmentResponse,
    ) -> None:
        """Rule 4."""
        if request is not self._in_flight:
            return
        self._in_flight = None
        if self._state is not AssignmentProcessState.INSTALLING:
            return
        if response.error_code.is_error:
            outcome = AssignmentOutcome(
                "install_rejected", request.group_epoch, response.error_code.name
            )
        elif request.error_code:
            outcome = AssignmentOutcome(
                "assignor_error", request.group_epoch, str(request.error_code)
            )
        else:
            outcome = AssignmentOutcome("installed", request.group_epoch)
        self._outcomes.append(outcome)
        self._state = AssignmentProcessState.IDLE
        self._install = None
