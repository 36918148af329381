"""One member of a classic group, as the coordinator sees it (Kafka: ``ClassicGroupMember``).

A member is its identity (member id, ``group.instance.id`` for static members,
client id and host), its timeouts, the protocols it supports in its own order
of preference (assignor name, Subscription bytes and, optionally, the assignor
version of KIP-429's "Looking into the Future: Assignor Version"), and its
assignment bytes of the current generation.

Parked requests: where Kafka keeps a member's pending JoinGroup / SyncGroup
response *futures*, we keep the driver's *tokens* (``awaiting_join`` and
``awaiting_sync``); the coordinator layer answers them by token.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from regroup.model.requests.classic import JoinGroupRequestProtocol

__all__ = ["AwaitingJoinCount", "ClassicGroupMember"]


class AwaitingJoinCount:
    """How many of a group's members have a parked JoinGroup (Kafka:
    ``ClassicGroup.numMembersAwaitingJoinResponse``), kept up to date by the members
    themselves so that the count costs O(1) on every JoinGroup."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


@dataclass(slots=True)
class ClassicGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    #: In the member's order of preference (the order of its JoinGroup protocols).
    supported_protocols: tuple[JoinGroupRequestProtocol, ...]
    assignment: bytes = b""
    #: The token of a parked SyncGroup (Kafka: ``awaitingSyncFuture``).
    awaiting_sync: Hashable | None = None
    #: A member added in this join phase; it may expire even while its JoinGroup is parked.
    is_new: bool = False
    # The two private fields below are never passed in: the group sets them.
    #: The token of a parked JoinGroup (Kafka: ``awaitingJoinFuture``); see ``awaiting_join``.
    _awaiting_join: Hashable | None = None
    #: The count of the group the member is in (set by ``ClassicGroup.add``).
    _join_count: AwaitingJoinCount | None = field(default=None, repr=False, compare=False)

    @property
    def awaiting_join(self) -> Hashable | None:
        """The token of a parked JoinGroup; setting it keeps the group's count."""
        return self._awaiting_join

    @awaiting_join.setter
    def awaiting_join(self, token: Hashable | None) -> None:
        count = self._join_count
        if count is not None:
            count.value += (token is not None) - (self._awaiting_join is not None)
        self._awaiting_join = token

    def attach(self, count: AwaitingJoinCount | None) -> None:
        """Join a group's count (``None``: leave it), carrying this member's parked join."""
        if self._join_count is not None and self._awaiting_join is not None:
            self._join_count.value -= 1
        self._join_count = count
        if count is not None and self._awaiting_join is not None:
            count.value += 1

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    def protocol_names(self) -> tuple[str, ...]:
        """The names of the protocols, each once, in the member's order of preference.

        A JoinGroup may list a name twice (Kafka's ``JoinGroupRequestProtocolCollection``
        is a multi-collection); the group counts each member once per name, as
        Kafka's ``MemberMetadata.plainProtocolSet`` did, or a member listing
        ``range`` twice would count as two supporters and no protocol would ever
        be supported by exactly every member. The first entry's metadata is the
        one used (``metadata``).
        """
        return tuple(dict.fromkeys(p.name for p in self.supported_protocols))

    def metadata(self, protocol_name: str) -> bytes:
        """The Subscription bytes this member sent for ``protocol_name``."""
        for protocol in self.supported_protocols:
            if protocol.name == protocol_name:
                return protocol.metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol_name!r}")

    def assignor_version(self, protocol_name: str | None) -> int | None:
        """The assignor version advertised for ``protocol_name``, ``None`` if not advertised."""
        for protocol in self.supported_protocols:
            if protocol.name == protocol_name:
                return protocol.version
        return None

    def vote(self, candidates: Iterable[str]) -> str:
        """The first protocol in this member's preference order among ``candidates``.

        Kafka: ``ClassicGroupMember.vote``; the coordinator only asks with
        candidates every member supports, so a vote always exists.
        """
        allowed = set(candidates)
        for name in self.protocol_names():
            if name in allowed:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(allowed)}")

    def matches(self, protocols: Iterable[JoinGroupRequestProtocol]) -> bool:
        """Whether ``protocols`` equal this member's, (Kafka ``ClassicGroupMember.matches``)."""
        return tuple(protocols) == self.supported_protocols
