"""KIP-848's client-side assignor interface (``PartitionAssignor``), and assignors for it.

KIP-848, "Client-Side Assignor" / "Client Side Mode": a power user (Kafka
Streams) may run the assignment on a member instead of the coordinator. The
member advertises each assignor it supports with a *version range* of its
metadata schema and the metadata itself (``ClientAssignors`` in the
heartbeat). When the coordinator picks the member (the COMPUTE_ASSIGNMENT
error in a heartbeat response), the member fetches the group's state with
ConsumerGroupPrepareAssignment, runs ``PartitionAssignor.assign`` on it and
installs the result with ConsumerGroupInstallAssignment. Every member later
learns its own part in a heartbeat response and hands it to
``PartitionAssignor.on_assignment`` before ``onPartitionsAssigned``.

The KIP names this interface ``org.apache.kafka.clients.consumer.PartitionAssignor``
(distinct from the classic ``ConsumerPartitionAssignor``, which is tied to the
classic protocol): ``name``, ``minimumVersion``, ``maximumVersion``,
``metadata``, ``assign(AssignmentSpec)`` and ``onAssignment``. Apache Kafka
removed client-side assignors before releasing KIP-848 (commit 6acf69d7a2,
2023); the names below follow the KIP in snake_case. Everything is keyed by
topic id, as on the wire.

Assignor errors (KIP-848, "Assignment Error"): an assignor that cannot
compute an assignment raises ``PartitionAssignorError`` or returns a
``ClientGroupAssignment`` with a non-zero ``error``; the member reports the
error in the install request and the coordinator keeps the current target.

``ServerLogicAssignor`` runs the server-side ``uniform`` or ``range`` logic of
``regroup.assignors.consumer`` on the member (looked up by name when it runs,
through the server-side registry), so a group can exercise the whole
client-side flow with a proven algorithm.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field

from regroup.assignors.consumer.api import (
    GroupSpec,
    MemberSubscriptionSpec,
    SubscribedTopicDescriber,
    TopicMetadata,
)
from regroup.assignors.errors import UnknownAssignorError
from regroup.model import TopicPartition, Uuid

__all__ = [
    "ASSIGNOR_FAILED",
    "CLIENT_ASSIGNOR_NAMES",
    "AssignmentMemberSpec",
    "AssignmentSpec",
    "AssignorMetadata",
    "ClientGroupAssignment",
    "ClientMemberAssignment",
    "MemberAssignmentUpdate",
    "PartitionAssignor",
    "ServerLogicAssignor",
    "create_client_assignor",
]

#: The error a member reports when its assignor raised (an int8, like the KIP's
#: assignor errors; any non-zero value makes the coordinator keep the current target).
ASSIGNOR_FAILED = -1


@dataclass(frozen=True, slots=True)
class AssignorMetadata:
    """What a member advertises for one assignor (KIP-848 ``PartitionAssignor.Metadata``).

    ``version`` is the schema version the bytes are encoded with, usually the
    highest the member supports; ``reason`` is the KIP's "reason of the
    metadata update" (a member may change it to ask for a new assignment).
    """

    version: int
    metadata: bytes = b""
    reason: int = 0


@dataclass(frozen=True, slots=True)
class AssignmentMemberSpec:
    """One member as the client-side assignor sees it (from ConsumerGroupPrepareAssignment)."""

    member_id: str
    member_epoch: int
    instance_id: str | None
    subscribed_topic_ids: frozenset[Uuid]
    assignor_version: int
    assignor_reason: int
    assignor_metadata: bytes
    #: The member's current *target* partitions, by topic id.
    target_partitions: Mapping[Uuid, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AssignmentSpec:
    """The group as the coordinator prepared it for the chosen member."""

    group_epoch: int
    assignor_name: str
    members: Mapping[str, AssignmentMemberSpec]
    #: Partition count of every subscribed topic, by id.
    partition_counts: Mapping[Uuid, int]
    #: Topic names the computing member knows from its metadata (may be partial).
    topic_names: Mapping[Uuid, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClientMemberAssignment:
    """One member's part of a client-side assignment."""

    partitions: Mapping[Uuid, frozenset[int]]
    error: int = 0
    metadata_version: int = 0
    metadata: bytes = b""


@dataclass(frozen=True, slots=True)
class ClientGroupAssignment:
    """The result of ``assign``: each member's part; ``error`` != 0 keeps the current target."""

    members: Mapping[str, ClientMemberAssignment]
    error: int = 0


@dataclass(frozen=True, slots=True)
class MemberAssignmentUpdate:
    """What ``on_assignment`` receives: the member's partitions, now usable (KIP ``Assignment``)."""

    partitions: frozenset[TopicPartition]
    member_epoch: int
    error: int = 0
    metadata: bytes = b""


class PartitionAssignor(abc.ABC):
    """KIP-848's client-side ``PartitionAssignor``."""

    #: Unique name advertised in ``ClientAssignors``.
    name: str
    #: The metadata schema versions this assignor can read (KIP-848, "Metadata Version Handling").
    minimum_version: int = 0
    maximum_version: int = 0

    def metadata(self, topics: frozenset[str]) -> AssignorMetadata:
        """The metadata to advertise for ``topics`` (the member's subscription).

        Default: no bytes, at the highest supported version.
        """
        return AssignorMetadata(version=self.maximum_version)

    @abc.abstractmethod
    def assign(self, spec: AssignmentSpec) -> ClientGroupAssignment:
        """The new target of every member; raise ``PartitionAssignorError`` when impossible."""

    def on_assignment(self, assignment: MemberAssignmentUpdate) -> None:
        """Called after the member took new partitions, before ``onPartitionsAssigned``."""
        return None


class ServerLogicAssignor(PartitionAssignor):
    """A client-side assignor that runs a server-side assignor's algorithm on the member.

    ``server_assignor`` names the logic (``uniform`` or ``range``); ``name`` is
    what members advertise (by default the same name). Members absent from the
    server assignor's output get an empty assignment, as Kafka's
    ``TargetAssignmentBuilder`` treats them.
    """

    def __init__(
        self,
        server_assignor: str = "uniform",
        *,
        name: str | None = None,
        minimum_version: int = 0,
        maximum_version: int = 0,
    ) -> None:
        if minimum_version < 0 or maximum_version < minimum_version:
            raise ValueError(
                f"invalid version range [{minimum_version}, {maximum_version}] for {name!r}"
            )
        self.server_assignor = server_assignor
        self.name = name or server_assignor
        self.minimum_version = minimum_version
        self.maximum_version = maximum_version

    def assign(self, spec: AssignmentSpec) -> ClientGroupAssignment:
        # Registry at call time: the server-side implementations are their own modules.
        from regroup.assignors.consumer.registry import create_server_assignor

        assignor = create_server_assignor(self.server_assignor)
        members = {
            member_id: MemberSubscriptionSpec(
                subscribed_topic_ids=member.subscribed_topic_ids,
                instance_id=member.instance_id,
                assigned_partitions={
                    topic_id: parts
                    for topic_id, parts in member.target_partitions.items()
                    if parts and topic_id in spec.partition_counts
                },
            )
            for member_id, member in sorted(spec.members.items())
        }
        topics = [
            TopicMetadata(topic_id, spec.topic_names.get(topic_id, str(topic_id)), count)
            for topic_id, count in spec.partition_counts.items()
        ]
        result = assignor.assign(GroupSpec.of(members), SubscribedTopicDescriber(topics))
        assigned: dict[str, ClientMemberAssignment] = {}
        for member_id in members:
            computed = result.members.get(member_id)
            partitions = {} if computed is None else dict(computed.partitions)
            assigned[member_id] = ClientMemberAssignment(
                partitions={t: frozenset(p) for t, p in partitions.items() if p}
            )
        return ClientGroupAssignment(assigned)


#: The client-side assignors ``create_client_assignor`` knows by name.
CLIENT_ASSIGNOR_NAMES: tuple[str, ...] = ("uniform", "range")


def create_client_assignor(name: str) -> PartitionAssignor:
    """A client-side assignor running the server-side logic of the same name."""
    if name not in CLIENT_ASSIGNOR_NAMES:
        raise UnknownAssignorError(name, list(CLIENT_ASSIGNOR_NAMES))
    return ServerLogicAssignor(name)
