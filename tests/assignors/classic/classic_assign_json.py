"""Run a classic assignor through ``regroup assign``'s JSON, racks as Kafka's metadata has them.

The ported Kafka tests describe replicas by their brokers' racks, ``None`` for a
broker without a rack (Kafka's ``nullRacks`` and ``RackConfig.NO_BROKER_RACK``).
``assign_via_json`` sends exactly that to ``regroup assign`` (``null`` in
``partition_racks``), so the tests also check the path a user's input takes.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from regroup.assignors.classic.api import Subscription
from regroup.cli.assign import assign_document
from regroup.model import TopicPartition

ReplicaRacks = Mapping[str, Sequence[Sequence[str | None]]]


def assign_via_json(
    assignor: str,
    partitions_per_topic: Mapping[str, int],
    replica_racks: ReplicaRacks,
    subscriptions: Mapping[str, Subscription],
) -> dict[str, list[TopicPartition]]:
    """Every member's partitions, sorted, as ``regroup assign`` answers them."""
    members: list[dict[str, Any]] = []
    for member_id, s in subscriptions.items():
        members.append(
            {
                "member_id": member_id,
                "topics": list(s.topics),
                "group_instance_id": s.group_instance_id,
                "rack": s.rack_id,
                "owned_partitions": [str(p) for p in s.owned_partitions],
                "generation": s.generation_id if s.has_generation else None,
                "user_data": None
                if s.user_data is None
                else base64.b64encode(s.user_data).decode("ascii"),
            }
        )
    document = {
        "assignor": assignor,
        "topics": dict(partitions_per_topic),
        "partition_racks": {
            topic: [list(racks) for racks in per_partition]
            for topic, per_partition in replica_racks.items()
            if topic in partitions_per_topic
        },
        "members": members,
    }
    out = assign_document(document)["assignment"]
    return {m: [TopicPartition.parse(p) for p in parts] for m, parts in out.items()}
