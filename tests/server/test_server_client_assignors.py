"""KIP-848 client-side assignors over a real socket: regroup's member against regroup's server.

COMPUTE_ASSIGNMENT arrives in a heartbeat response (regroup's private code, sent
only because the member's heartbeats carry regroup's private tag), the chosen
member calls PrepareAssignment and InstallAssignment on the private keys, and
every member receives its part of the installed assignment.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import ExitStack

from regroup.assignors.consumer.client_side import (
    AssignmentSpec,
    ClientGroupAssignment,
    ClientMemberAssignment,
    MemberAssignmentUpdate,
    ServerLogicAssignor,
)
from regroup.consumer.member.config import ConsumerMemberConfig
from regroup.consumer.member.member import ConsumerMember
from regroup.consumer.member.state import MemberState
from regroup.model.errors import ErrorCode
from regroup.model.topic_partition import TopicPartition
from regroup.server.background import BackgroundServer
from regroup.server.clients.wire_client import WireClient
from regroup.server.clients.wire_member import WireMember, fetch_metadata

#: The members' own clock: it jumps a heartbeat interval per round, so the test
#: never sleeps (the server keeps the wall clock; its session timeout is seconds).
ROUND_MS = 1_000


class RecordingAssignor(ServerLogicAssignor):
    """``uniform`` run on the client, under its own name; logs ``on_assignment``."""

    def __init__(self) -> None:
        super().__init__("uniform", name="wire-uniform", minimum_version=0, maximum_version=1)
        self.updates: list[MemberAssignmentUpdate] = []

    def on_assignment(self, assignment: MemberAssignmentUpdate) -> None:
        self.updates.append(assignment)


def _members(server: BackgroundServer, stack: ExitStack, count: int) -> Iterator[WireMember]:
    for index in range(count):
        client = stack.enter_context(
            WireClient("127.0.0.1", server.port, client_id=f"m{index}", timeout=10)
        )
        member = ConsumerMember(
            ConsumerMemberConfig("wire-group", client_id=f"m{index}", enable_auto_commit=False),
            rng=random.Random(index),
            client_assignors=[RecordingAssignor()],
            metadata=fetch_metadata(client),
        )
        member.on_application_poll(0)
        member.subscribe(["foo", "bar"])
        yield WireMember(client, member)


def test_server_client_side_assignor_flow_over_a_socket(server: BackgroundServer) -> None:
    assert server.server is not None
    server.call(server.server.create_topic, "foo", 4)
    server.call(server.server.create_topic, "bar", 2)
    with ExitStack() as stack:
        members = list(_members(server, stack, 3))
        now = 0
        for _ in range(40):
            now += ROUND_MS
            for wire in members:
                wire.member.on_application_poll(now)
                wire.step(now)
            if (
                all(w.member.state is MemberState.STABLE for w in members)
                and sum(len(w.member.assignment) for w in members) == 6
            ):
                break
        owned = [w.member.assignment for w in members]
    # Every partition once, to the three members, as ``uniform`` spreads 6 over 3.
    everything = {TopicPartition("foo", p) for p in range(4)} | {
        TopicPartition("bar", p) for p in range(2)
    }
    assert set().union(*owned) == everything
    assert sum(len(o) for o in owned) == 6 and sorted(len(o) for o in owned) == [2, 2, 2]
    # The private code reached regroup's client over the wire, and the chosen member
    # installed an assignment through the private RPCs.
    computed = [w for w in members if ErrorCode.COMPUTE_ASSIGNMENT in w.heartbeat_errors]
    assert computed
    outcomes = [o for w in computed for o in w.member.take_assignment_outcomes()]
    assert outcomes and all(o.result == "installed" for o in outcomes)
    assert ErrorCode.UNKNOWN_SERVER_ERROR not in {e for w in members for e in w.heartbeat_errors}
    # The coordinator describes the group with the client-side assignor's target.
    with WireClient("127.0.0.1", server.port) as admin:
        described = admin.request(
            69, 1, {"group_ids": ("wire-group",), "include_authorized_operations": False}
        )
    (group,) = described.groups
    assert group.group_state == "Stable" and len(group.members) == 3


class OverreachingAssignor(RecordingAssignor):
    """Assigns a partition that does not exist: the coordinator must refuse the install."""

    def assign(self, spec: AssignmentSpec) -> ClientGroupAssignment:
        everything = {tid: frozenset(range(n + 1)) for tid, n in spec.partition_counts.items()}
        return ClientGroupAssignment(
            {member: ClientMemberAssignment(everything) for member in spec.members}
        )


def test_server_invalid_assignment_reaches_the_member_as_its_own_code(
    server: BackgroundServer,
) -> None:
    assert server.server is not None
    server.call(server.server.create_topic, "foo", 2)
    with WireClient("127.0.0.1", server.port, client_id="dup", timeout=10) as client:
        member = ConsumerMember(
            ConsumerMemberConfig("dup-group", enable_auto_commit=False),
            rng=random.Random(9),
            client_assignors=[OverreachingAssignor()],
            metadata=fetch_metadata(client),
        )
        member.on_application_poll(0)
        member.subscribe(["foo"])
        wire = WireMember(client, member)
        outcomes = []
        for now in range(ROUND_MS, 20 * ROUND_MS, ROUND_MS):
            member.on_application_poll(now)
            wire.step(now)
            outcomes += member.take_assignment_outcomes()
            if outcomes:
                break
    # A partition out of range: INVALID_ASSIGNMENT (10001) over the private Install key,
    # decoded as regroup's code, not UNKNOWN_SERVER_ERROR; nothing was installed.
    assert outcomes[0].result == "install_rejected"
    assert outcomes[0].error == ErrorCode.INVALID_ASSIGNMENT.name
    assert ErrorCode.COMPUTE_ASSIGNMENT in wire.heartbeat_errors
    assert not member.assignment
