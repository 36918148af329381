"""KIP-429 step 2 for the leader (``run_leader_assignment``): what the assignor is given."""

from __future__ import annotations

from regroup.assignors.classic.api import (
    ClusterMetadata,
    GroupAssignment,
    GroupSubscription,
    RebalanceProtocol,
    Subscription,
)
from regroup.assignors.classic.range_assignor import RangeAssignor
from regroup.classic.member.leader import run_leader_assignment
from regroup.classic.protocol import encode_subscription
from regroup.model import TopicPartition
from regroup.model.metadata import MetadataImage
from regroup.model.requests.classic import JoinGroupResponseMember


class RecordingRange(RangeAssignor):
    """The range assignor, keeping the subscriptions it was asked to assign."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, Subscription] = {}

    def assign(
        self, metadata: ClusterMetadata, group_subscription: GroupSubscription
    ) -> GroupAssignment:
        self.seen = dict(group_subscription.subscriptions)
        return super().assign(metadata, group_subscription)


def test_the_leader_adds_each_members_instance_id_from_the_member_list() -> None:
    """The Subscription bytes carry no instance id: the leader takes it from the JoinGroup
    response's member list (Kafka ``ConsumerCoordinator.onLeaderElected``), and a dynamic
    member's stays ``None``."""
    owned = (TopicPartition("t", 1),)
    static_bytes = encode_subscription(Subscription(["t"], owned_partitions=owned))
    dynamic_bytes = encode_subscription(Subscription(["t"]))
    assignor = RecordingRange()
    result = run_leader_assignment(
        assignor,
        RebalanceProtocol.EAGER,
        [
            JoinGroupResponseMember("m-static", "instance-1", static_bytes),
            JoinGroupResponseMember("m-dynamic", None, dynamic_bytes),
        ],
        MetadataImage.from_partition_counts({"t": 2}),
    )
    assert assignor.seen["m-static"].group_instance_id == "instance-1"
    assert assignor.seen["m-static"].owned_partitions == owned
    assert assignor.seen["m-dynamic"].group_instance_id is None
    assert sorted(tp for a in result.assignments.values() for tp in a.partitions) == [
        TopicPartition("t", 0),
        TopicPartition("t", 1),
    ]
