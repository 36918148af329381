"""What the coordinator asks of a group of either type (Kafka: the ``Group`` interface).

Both ``regroup.classic``'s group and ``regroup.consumer``'s group satisfy this
protocol structurally (they cannot import this layer). The offsets and ListGroups
use it to serve a group without knowing its protocol, as Kafka's
``OffsetMetadataManager`` calls ``Group.validateOffsetCommit``. ``GroupType`` is
Kafka's ``Group.GroupType``: the service routes a request by it.
"""

from __future__ import annotations

from enum import Enum
from typing import Protocol

__all__ = ["Group", "GroupType"]


class GroupType(Enum):
    """The type of a group (Kafka ``Group.GroupType``); the value is Kafka's name."""

    CLASSIC = "classic"
    CONSUMER = "consumer"


class Group(Protocol):
    @property
    def group_id(self) -> str: ...

    @property
    def group_type(self) -> str:
        """``"classic"`` or ``"consumer"``."""
        ...

    def state_name(self) -> str:
        """Kafka's name of the current state (``Stable``, ``PreparingRebalance``, ...)."""
        ...

    def is_empty(self) -> bool: ...

    def validate_offset_commit(
        self,
        member_id: str,
        group_instance_id: str | None,
        generation_id_or_member_epoch: int,
        supports_member_epoch: bool,
    ) -> None:
        """Raise ``KafkaProtocolError`` when this member may not commit now."""
        ...

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        """Raise ``KafkaProtocolError`` when this member may not fetch offsets now."""
        ...
