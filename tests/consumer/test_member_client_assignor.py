"""The member as a KIP-848 client-side assignor: ClientAssignors, COMPUTE_ASSIGNMENT,
PrepareAssignment, the assignor run, InstallAssignment, and the error paths."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from regroup.assignors.consumer.client_side import (
    ASSIGNOR_FAILED,
    AssignmentSpec,
    AssignorMetadata,
    ClientGroupAssignment,
    MemberAssignmentUpdate,
    ServerLogicAssignor,
)
from regroup.assignors.errors import PartitionAssignorError
from regroup.consumer.member.config import ConsumerMemberConfig
from regroup.consumer.member.member import ConsumerMember
from regroup.consumer.member.state import MemberState
from regroup.model import ErrorCode, TopicPartition, Uuid
from regroup.model.metadata import MetadataImage
from regroup.model.requests.consumer import (
    ClientAssignor,
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentMember,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    PartitionMetadata,
    TopicPartitions,
)

FOO = Uuid.for_name("foo")
METADATA = MetadataImage.from_partition_counts({"foo": 3})


class VersionedAssignor(ServerLogicAssignor):
    """``uniform`` with metadata that names the subscription, and a log of on_assignment."""

    def __init__(self, *, fail: bool = False, error: int = 0) -> None:
        super().__init__("uniform", name="versioned", minimum_version=1, maximum_version=3)
        self.fail = fail
        self.error = error
        self.seen: list[MemberAssignmentUpdate] = []
        self.log: list[str] | None = None

    def metadata(self, topics: frozenset[str]) -> AssignorMetadata:
        return AssignorMetadata(version=3, metadata=",".join(sorted(topics)).encode(), reason=0)

    def assign(self, spec: AssignmentSpec) -> ClientGroupAssignment:
        if self.fail:
            raise PartitionAssignorError("cannot")
        if self.error:
            return ClientGroupAssignment({}, error=self.error)
        return super().assign(spec)

    def on_assignment(self, assignment: MemberAssignmentUpdate) -> None:
        self.seen.append(assignment)
        if self.log is not None:
            self.log.append("on_assignment")


class Log:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def on_partitions_revoked(self, partitions: Sequence[TopicPartition]) -> None:
        self.log.append("revoked")

    def on_partitions_assigned(self, partitions: Sequence[TopicPartition]) -> None:
        self.log.append("assigned")

    def on_partitions_lost(self, partitions: Sequence[TopicPartition]) -> None:
        self.log.append("lost")


def make(assignor: VersionedAssignor, listener: Log | None = None) -> ConsumerMember:
    member = ConsumerMember(
        ConsumerMemberConfig("grp"),
        rng=random.Random(3),
        client_assignors=[assignor],
        metadata=METADATA,
        listener=listener,
    )
    member.subscribe(["foo"])
    return member


def ok(epoch: int, partitions: Sequence[int] | None = None) -> ConsumerGroupHeartbeatResponse:
    assignment = None
    if partitions is not None:
        assignment = ConsumerGroupHeartbeatAssignment((TopicPartitions(FOO, tuple(partitions)),))
    return ConsumerGroupHeartbeatResponse(
        ErrorCode.NONE, member_epoch=epoch, heartbeat_interval_ms=1000, assignment=assignment
    )


def compute(epoch: int = -1) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(
        ErrorCode.COMPUTE_ASSIGNMENT, member_epoch=epoch, heartbeat_interval_ms=1000
    )


def prepared(member_ids: Sequence[str]) -> ConsumerGroupPrepareAssignmentResponse:
    return ConsumerGroupPrepareAssignmentResponse(
        ErrorCode.NONE,
        group_epoch=4,
        client_assignor_name="versioned",
        members=tuple(
            ConsumerGroupPrepareAssignmentMember(
                member_id=m,
                member_epoch=1,
                instance_id=None,
                subscriptions=(FOO,),
                assignor_version=3,
                assignor_reason=0,
                assignor_metadata=b"foo",
                topic_partitions=(),
            )
            for m in member_ids
        ),
        partition_metadata=(PartitionMetadata(FOO, 3),),
    )


def only(requests: Sequence[object], kind: type) -> object:
    found = [r for r in requests if isinstance(r, kind)]
    assert len(found) == 1, requests
    return found[0]


def stable(member: ConsumerMember, now: int = 0) -> ConsumerGroupHeartbeatRequest:
    join = only(member.poll(now), ConsumerGroupHeartbeatRequest)
    assert isinstance(join, ConsumerGroupHeartbeatRequest)
    member.on_response(join, ok(1, []), now)
    ack = only(member.poll(now), ConsumerGroupHeartbeatRequest)
    assert isinstance(ack, ConsumerGroupHeartbeatRequest)
    member.on_response(ack, ok(1), now)
    return join


def run_compute(member: ConsumerMember, now: int) -> None:
    hb = only(member.poll(now), ConsumerGroupHeartbeatRequest)
    member.on_response(hb, compute(), now)


def test_the_heartbeat_advertises_client_assignors_only_when_they_change() -> None:
    member = make(VersionedAssignor())
    join = stable(member)
    assert join.server_assignor is None
    assert join.client_assignors == (
        ClientAssignor("versioned", 1, 3, version=3, reason=0, metadata=b"foo"),
    )
    nxt = only(member.poll(1000), ConsumerGroupHeartbeatRequest)
    assert isinstance(nxt, ConsumerGroupHeartbeatRequest)
    assert nxt.client_assignors is None
    member.on_response(nxt, ok(1), 1000)
    member.subscribe(["foo", "bar"])  # the metadata names the topics: it changes
    changed = only(member.poll(2000), ConsumerGroupHeartbeatRequest)
    assert isinstance(changed, ConsumerGroupHeartbeatRequest)
    assert changed.client_assignors is not None
    assert changed.client_assignors[0].metadata == b"bar,foo"


def test_server_and_client_assignors_are_exclusive() -> None:
    with pytest.raises(ValueError):
        ConsumerMember(
            ConsumerMemberConfig("grp", group_remote_assignor="range"),
            rng=random.Random(0),
            client_assignors=[VersionedAssignor()],
        )


def test_compute_assignment_prepare_assign_install() -> None:
    member = make(VersionedAssignor())
    stable(member)
    run_compute(member, 1000)
    assert member.state is MemberState.STABLE  # the member's own state is untouched
    prepare = only(member.poll(1000), ConsumerGroupPrepareAssignmentRequest)
    assert prepare == ConsumerGroupPrepareAssignmentRequest("grp", member.member_id, 1)
    member.on_response(prepare, prepared([member.member_id, "other"]), 1000)
    install = only(member.poll(1000), ConsumerGroupInstallAssignmentRequest)
    assert isinstance(install, ConsumerGroupInstallAssignmentRequest)
    assert install.group_epoch == 4 and install.error_code == 0
    assert install.member_epoch == 1
    assigned = sorted(
        p for m in install.members for tp in m.topic_partitions for p in tp.partitions
    )
    assert assigned == [0, 1, 2]
    assert {m.member_id for m in install.members} == {member.member_id, "other"}
    member.on_response(install, ConsumerGroupInstallAssignmentResponse(ErrorCode.NONE), 1000)
    [outcome] = member.take_assignment_outcomes()
    assert (outcome.result, outcome.group_epoch) == ("installed", 4)


def test_a_second_compute_assignment_while_busy_is_ignored() -> None:
    member = make(VersionedAssignor())
    stable(member)
    run_compute(member, 1000)
    prepare = only(member.poll(1000), ConsumerGroupPrepareAssignmentRequest)
    run_compute(member, 2000)
    assert not [
        r for r in member.poll(2000) if isinstance(r, ConsumerGroupPrepareAssignmentRequest)
    ]
    member.on_response(prepare, prepared([member.member_id]), 2000)
    only(member.poll(2000), ConsumerGroupInstallAssignmentRequest)


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.FENCED_MEMBER_EPOCH,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.GROUP_ID_NOT_FOUND,
    ],
)
def test_a_prepare_error_abandons_the_process(code: ErrorCode) -> None:
    member = make(VersionedAssignor())
    stable(member)
    run_compute(member, 1000)
    prepare = only(member.poll(1000), ConsumerGroupPrepareAssignmentRequest)
    member.on_response(prepare, ConsumerGroupPrepareAssignmentResponse(code), 1000)
    assert not [
        r for r in member.poll(1000) if isinstance(r, ConsumerGroupInstallAssignmentRequest)
    ]
    [outcome] = member.take_assignment_outcomes()
    assert (outcome.result, outcome.error) == ("abandoned", code.name)


def test_an_invalid_assignment_is_reported_and_not_retried() -> None:
    member = make(VersionedAssignor())
    stable(member)
    run_compute(member, 1000)
    prepare = only(member.poll(1000), ConsumerGroupPrepareAssignmentRequest)
    member.on_response(prepare, prepared([member.member_id]), 1000)
    install = only(member.poll(1000), ConsumerGroupInstallAssignmentRequest)
    member.on_response(
        install, ConsumerGroupInstallAssignmentResponse(ErrorCode.INVALID_ASSIGNMENT), 1000
    )
    [outcome] = member.take_assignment_outcomes()
    assert (outcome.result, outcome.error) == ("install_rejected", "INVALID_ASSIGNMENT")
    assert [type(r) for r in member.poll(5000)] in ([], [ConsumerGroupHeartbeatRequest])


@pytest.mark.parametrize(
    ("assignor", "error"),
    [(VersionedAssignor(fail=True), ASSIGNOR_FAILED), (VersionedAssignor(error=5), 5)],
)
def test_an_assignor_error_is_installed_as_an_error(
    assignor: VersionedAssignor, error: int
) -> None:
    member = make(assignor)
    stable(member)
    run_compute(member, 1000)
    prepare = only(member.poll(1000), ConsumerGroupPrepareAssignmentRequest)
    member.on_response(prepare, prepared([member.member_id]), 1000)
    install = only(member.poll(1000), ConsumerGroupInstallAssignmentRequest)
    assert isinstance(install, ConsumerGroupInstallAssignmentRequest)
    assert (install.error_code, install.members) == (error, ())
    member.on_response(install, ConsumerGroupInstallAssignmentResponse(ErrorCode.NONE), 1000)
    [outcome] = member.take_assignment_outcomes()
    assert outcome.result == "assignor_error"


def test_an_assignor_the_member_does_not_have_installs_unsupported_assignor() -> None:
    member = make(VersionedAssignor())
    stable(member)
    run_compute(member, 1000)
    prepare = only(member.poll(1000), ConsumerGroupPrepareAssignmentRequest)
    response = prepared([member.member_id])
    other = ConsumerGroupPrepareAssignmentResponse(
        ErrorCode.NONE,
        group_epoch=4,
        client_assignor_name="streams",
        members=response.members,
        partition_metadata=response.partition_metadata,
    )
    member.on_response(prepare, other, 1000)
    install = only(member.poll(1000), ConsumerGroupInstallAssignmentRequest)
    assert isinstance(install, ConsumerGroupInstallAssignmentRequest)
    assert install.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR


def test_a_failed_prepare_request_abandons_and_a_later_notice_restarts() -> None:
    member = make(VersionedAssignor())
    stable(member)
    run_compute(member, 1000)
    prepare = only(member.poll(1000), ConsumerGroupPrepareAssignmentRequest)
    member.on_request_failed(prepare, 1000)
    assert member.take_assignment_outcomes()[0].result == "abandoned"
    run_compute(member, 2000)
    only(member.poll(2000), ConsumerGroupPrepareAssignmentRequest)


def test_fencing_abandons_a_running_assignment() -> None:
    member = make(VersionedAssignor())
    stable(member)
    run_compute(member, 1000)
    prepare = only(member.poll(1000), ConsumerGroupPrepareAssignmentRequest)
    hb = only(member.poll(2000), ConsumerGroupHeartbeatRequest)
    member.on_response(hb, ConsumerGroupHeartbeatResponse(ErrorCode.FENCED_MEMBER_EPOCH), 2000)
    member.on_response(prepare, prepared([member.member_id]), 2000)
    assert not [
        r for r in member.poll(2000) if isinstance(r, ConsumerGroupInstallAssignmentRequest)
    ]
    assert member.take_assignment_outcomes()[0].result == "abandoned"


def test_compute_assignment_with_a_body_is_also_a_heartbeat_answer() -> None:
    member = make(VersionedAssignor())
    hb = only(member.poll(0), ConsumerGroupHeartbeatRequest)
    answer = ConsumerGroupHeartbeatResponse(
        ErrorCode.COMPUTE_ASSIGNMENT,
        member_epoch=1,
        heartbeat_interval_ms=1000,
        assignment=ConsumerGroupHeartbeatAssignment((TopicPartitions(FOO, (0,)),)),
    )
    member.on_response(hb, answer, 0)
    assert member.member_epoch == 1 and member.state is MemberState.RECONCILING
    requests = member.poll(0)
    assert {type(r) for r in requests} == {
        ConsumerGroupPrepareAssignmentRequest,
        ConsumerGroupHeartbeatRequest,
    }


def test_on_assignment_runs_between_the_assignment_and_on_partitions_assigned() -> None:
    log: list[str] = []
    assignor = VersionedAssignor()
    assignor.log = log
    member = make(assignor, Log(log))
    hb = only(member.poll(0), ConsumerGroupHeartbeatRequest)
    member.on_response(hb, ok(2, [1, 2]), 0)
    member.poll(0)
    assert log == ["on_assignment", "assigned"]
    [update] = assignor.seen
    assert update.partitions == frozenset({TopicPartition("foo", 1), TopicPartition("foo", 2)})
    assert update.member_epoch == 2
