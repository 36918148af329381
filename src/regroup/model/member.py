"""Member ids and the sentinel values both group protocols use for them.

Classic protocol (KIP-394, KIP-345): the coordinator makes the id, from the
client id (or, for a static member, the ``group.instance.id``) followed by ``-``
and a random java.util.UUID in its dashed text form. ``""`` means "no id yet".

KIP-848: ConsumerGroupHeartbeat v0 lets the coordinator make the id (Kafka's
``Uuid.randomUuid().toString()``); from v1 the client makes it once per process
(KIP-1082). Epoch and generation sentinels are Kafka's.
"""

from __future__ import annotations

import random
import uuid as _stdlib_uuid
from typing import Final, NewType

from regroup.model.uuid import Uuid

__all__ = [
    "JOIN_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "NO_GENERATION",
    "UNKNOWN_MEMBER_ID",
    "MemberId",
    "new_classic_member_id",
    "new_consumer_member_id",
]

MemberId = NewType("MemberId", str)

#: The member id of a member that has none yet (JoinGroup's ``member_id=""``).
UNKNOWN_MEMBER_ID = MemberId("")
#: The generation of a classic member outside any generation (Kafka: ``Generation.NO_GENERATION``).
NO_GENERATION: Final = -1
#: KIP-848 member epochs with a meaning of their own.
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


def new_classic_member_id(prefix: str, rng: random.Random) -> MemberId:
    """``<client.id or group.instance.id>-<java UUID>`` as Kafka's classic coordinator makes it."""
    return MemberId(f"{prefix}-{_stdlib_uuid.UUID(int=rng.getrandbits(128), version=4)}")


def new_consumer_member_id(rng: random.Random) -> MemberId:
    """A KIP-848 member id: a random Kafka Uuid in its base64 text form."""
    return MemberId(str(Uuid.random(rng)))
