"""One classic group on the broker: its state, members and rules (Kafka: ``ClassicGroup``).

Pure state and rules; no timers, records or responses (those belong to the
coordinator layer, ``regroup.coordinator.classic``). The rules, as Kafka's
``ClassicGroup`` applies them:

Rule 1 (protocol compatibility): an Empty group accepts any member with a
non-empty protocol type and at least one protocol; otherwise the member's
protocol type must equal the group's and at least one of its protocols must be
supported by *every* current member (else INCONSISTENT_GROUP_PROTOCOL).

Rule 2 (protocol vote): the candidates are the protocols every member
supports; each member votes for the first candidate in its own preference
order; the most votes win. Ties: Kafka takes the first maximum in the
iteration order of a Java ``HashMap`` filled in voting order; we reproduce
that order (``java_hashmap_order``) so the same group picks the same protocol.

Rule 3 (leader): the first member added leads; when the leader leaves, the
first remaining member (in order of arrival; Kafka: ``HashMap`` order); at the
end of a join phase a leader that did not rejoin is replaced by the first
member that did. KIP-429, "Looking into the Future: Assignor Version": when
members advertise an assignor version for the selected protocol
(``JoinGroupRequestProtocol.version``, the KIP's ``ProtocolVersion``), the
leader is a rejoined member with the highest version; the current leader keeps
the role when it ties for the highest (no needless leader change).

Rule 4 (join barrier): the join phase may complete when every member is
awaiting join and no pending (KIP-394, id handed out but not yet joined)
member remains.

Rule 5 (offset fencing, Kafka ``ClassicGroup.validateOffsetCommit``): see
``validate_offset_commit``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterator
from typing import Final

from regroup.assignors.java_order import java_hashmap_order, java_string_hash
from regroup.classic.group.group_member import AwaitingJoinCount, ClassicGroupMember
from regroup.classic.group.group_state import ClassicGroupState, check_transition
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.classic import JoinGroupRequestProtocol, JoinGroupResponseMember

__all__ = ["CLASSIC_GROUP_TYPE", "ClassicGroup"]

#: ``Group.group_type`` of classic groups (ListGroups ``GroupType``).
CLASSIC_GROUP_TYPE: Final = "classic"


class ClassicGroup:
    """A classic group; satisfies ``regroup.coordinator.group.Group`` structurally."""

    def __init__(self, group_id: str, now_ms: int = 0) -> None:
        self.group_id = group_id
        self.state = ClassicGroupState.EMPTY
        self.previous_state: ClassicGroupState | None = None
        self.current_state_timestamp_ms = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        #: Members in order of arrival (the order decides leader succession, Rule 3).
        self.members: dict[str, ClassicGroupMember] = {}
        #: KIP-394: ids handed out with MEMBER_ID_REQUIRED whose owner has not joined yet.
        self.pending_members: set[str] = set()
        #: Members of the current generation that have not sent SyncGroup yet.
        self.pending_sync_members: set[str] = set()
        #: group.instance.id -> member id.
        self.static_members: dict[str, str] = {}
        #: A member joined during the initial rebalance delay (Kafka: ``newMemberAdded``).
        self.new_member_added = False
        self._supported_protocols: Counter[str] = Counter()
        self._awaiting_join = AwaitingJoinCount()

    # -- the Group protocol ------------------------------------------------------------

    @property
    def group_type(self) -> str:
        return CLASSIC_GROUP_TYPE

    def state_name(self) -> str:
        return self.state.value

    def is_empty(self) -> bool:
        return self.state is ClassicGroupState.EMPTY

    def is_simple_group(self) -> bool:
        """A group that only holds offsets (created by a commit from outside any group).

        Kafka ``ClassicGroup.isSimpleGroup``: Empty, no protocol type. Such a
        group has no GroupMetadata record and may be replaced by a group of
        the other type.
        """
        return self.state is ClassicGroupState.EMPTY and not self.protocol_type and not self.members

    def validate_offset_commit(
        self,
        member_id: str,
        group_instance_id: str | None,
        generation_id_or_member_epoch: int,
        supports_member_epoch: bool,
    ) -> None:
        """Raise ``KafkaProtocolError`` when this commit must be refused.

        Kafka (``ClassicGroup.validateOffsetCommit``): a Dead group answers
        COORDINATOR_NOT_AVAILABLE; generation -1 into an Empty group is a
        commit from outside group management and is accepted; a commit that
        names a member is checked like a heartbeat (UNKNOWN_MEMBER_ID,
        FENCED_INSTANCE_ID, ILLEGAL_GENERATION); one that names nobody into a
        non-empty group is UNKNOWN_MEMBER_ID; in CompletingRebalance a valid
        member gets REBALANCE_IN_PROGRESS.

        KIP-429, "Allow Consumer to Return Records in Rebalance": a member that
        is itself in the middle of a rebalance gets REBALANCE_IN_PROGRESS. We
        apply this on the broker in PreparingRebalance to members that have
        already rejoined (their JoinGroup is parked). A member that has not yet
        rejoined still commits at the current generation, as Kafka allows: that
        is the commit an eager member makes in ``onPartitionsRevoked`` before it
        rejoins, and refusing it would lose its progress.
        """
        del supports_member_epoch  # classic members always send a generation
        if self.state is ClassicGroupState.DEAD:
            raise KafkaProtocolError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if generation_id_or_member_epoch < 0 and self.state is ClassicGroupState.EMPTY:
            return
        if generation_id_or_member_epoch >= 0 or member_id or group_instance_id is not None:
            self.validate_member(member_id, group_instance_id)
            if generation_id_or_member_epoch != self.generation_id:
                raise KafkaProtocolError(ErrorCode.ILLEGAL_GENERATION)
        elif self.state is not ClassicGroupState.EMPTY:
            raise KafkaProtocolError(ErrorCode.UNKNOWN_MEMBER_ID)
        if self.state is ClassicGroupState.COMPLETING_REBALANCE:
            raise KafkaProtocolError(ErrorCode.REBALANCE_IN_PROGRESS)
        if self.state is ClassicGroupState.PREPARING_REBALANCE:
            member = self.members.get(member_id)
            if member is not None and member.is_awaiting_join:
                raise KafkaProtocolError(ErrorCode.REBALANCE_IN_PROGRESS)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        """Kafka (``ClassicGroup.validateOffsetFetch``): only a Dead group refuses fetches."""
        del member_id, member_epoch
        if self.state is ClassicGroupState.DEAD:
            raise KafkaProtocolError(ErrorCode.GROUP_ID_NOT_FOUND)

    # -- state -------------------------------------------------------------------------

    def transition_to(self, new_state: ClassicGroupState, now_ms: int) -> None:
        """Move to ``new_state`` (``IllegalGroupStateTransition`` if the table forbids it)."""
        check_transition(self.group_id, self.state, new_state)
        self.previous_state = self.state
        self.state = new_state
        self.current_state_timestamp_ms = now_ms

    def is_in(self, *states: ClassicGroupState) -> bool:
        return self.state in states

    def can_rebalance(self) -> bool:
        """Stable, CompletingRebalance or Empty (the states PreparingRebalance may follow)."""
        return self.state in (
            ClassicGroupState.STABLE,
            ClassicGroupState.COMPLETING_REBALANCE,
            ClassicGroupState.EMPTY,
        )

    # -- members -----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.members)

    def __iter__(self) -> Iterator[ClassicGroupMember]:
        return iter(list(self.members.values()))

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def member(self, member_id: str) -> ClassicGroupMember:
        return self.members[member_id]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        return None if group_instance_id is None else self.static_members.get(group_instance_id)

    def num_awaiting_join(self) -> int:
        """Members with a parked JoinGroup; O(1) (a count the members keep)."""
        return self._awaiting_join.value

    def rebalance_timeout_ms(self) -> int:
        """The largest member rebalance timeout (Kafka: ``ClassicGroup.rebalanceTimeoutMs``)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def add(self, member: ClassicGroupMember, awaiting_join: Hashable | None = None) -> None:
        """Admit ``member`` (Kafka ``ClassicGroup.add``); the first one sets the protocol type."""
        if not self.members:
            self.protocol_type = member.protocol_type
        previous = self.members.get(member.member_id)
        if previous is not None and previous is not member:
            previous.attach(None)
        self.members[member.member_id] = member
        self._supported_protocols.update(member.protocol_names())
        if self.leader_id is None:
            self.leader_id = member.member_id
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        member.attach(self._awaiting_join)
        member.awaiting_join = awaiting_join
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> ClassicGroupMember | None:
        """Drop a member or pending member (Kafka ``ClassicGroup.remove``); leadership passes on."""
        removed = self.members.pop(member_id, None)
        if removed is not None:
            removed.attach(None)
            self._supported_protocols.subtract(removed.protocol_names())
            self._supported_protocols += Counter()  # drop zero counts
            if removed.group_instance_id is not None:
                self.static_members.pop(removed.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return removed

    def update_member(
        self,
        member: ClassicGroupMember,
        protocols: tuple[JoinGroupRequestProtocol, ...],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        awaiting_join: Hashable | None,
    ) -> None:
        """New protocols and timeouts of a rejoining member (Kafka ``updateMember``)."""
        before = member.protocol_names()
        member.supported_protocols = protocols
        after = member.protocol_names()
        if after != before:  # the same names (the usual rejoin) leave the counts as they are
            self._supported_protocols.subtract(before)
            self._supported_protocols.update(after)
            self._supported_protocols += Counter()
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.awaiting_join = awaiting_join

    def replace_static_member(
        self, group_instance_id: str, old_member_id: str, new_member_id: str
    ) -> tuple[ClassicGroupMember, ClassicGroupMember]:
        """KIP-345: a new id for a returning static member; returns ``(old, new)``.

        The new member inherits everything (protocols, timeouts, assignment,
        leadership). The caller answers the old member's parked requests with
        FENCED_INSTANCE_ID (their tokens stay on the returned old member).
        """
        old = self.members.pop(old_member_id)
        old.attach(None)  # its parked requests are answered by the caller, outside the group
        new = ClassicGroupMember(
            member_id=new_member_id,
            group_instance_id=old.group_instance_id,
            client_id=old.client_id,
            client_host=old.client_host,
            rebalance_timeout_ms=old.rebalance_timeout_ms,
            session_timeout_ms=old.session_timeout_ms,
            protocol_type=old.protocol_type,
            supported_protocols=old.supported_protocols,
            assignment=old.assignment,
        )
        self.members[new_member_id] = new
        new.attach(self._awaiting_join)
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        return old, new

    def validate_member(self, member_id: str, group_instance_id: str | None) -> None:
        """UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID (Kafka: ``ClassicGroup.validateMember``)."""
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                raise KafkaProtocolError(ErrorCode.UNKNOWN_MEMBER_ID)
            if current != member_id:
                raise KafkaProtocolError(ErrorCode.FENCED_INSTANCE_ID)
        elif member_id not in self.members:
            raise KafkaProtocolError(ErrorCode.UNKNOWN_MEMBER_ID)

    # -- rules -------------------------------------------------------------------------

    def supports_protocols(self, protocol_type: str, protocol_names: tuple[str, ...]) -> bool:
        """Rule 1 (Kafka: ``ClassicGroup.supportsProtocols``)."""
        if self.state is ClassicGroupState.EMPTY or not self.members:
            return bool(protocol_type) and bool(protocol_names)
        if self.protocol_type != protocol_type:
            return False
        count = len(self.members)
        return any(self._supported_protocols[name] == count for name in protocol_names)

    def candidate_protocols(self) -> list[str]:
        """Protocols every member supports, in the first member's preference order."""
        count = len(self.members)
        first = next(iter(self.members.values()), None)
        if first is None:
            return []
        return [n for n in first.protocol_names() if self._supported_protocols[n] == count]

    def select_protocol(self) -> str:
        """Rule 2, the vote (Kafka: ``ClassicGroup.selectProtocol``)."""
        if not self.members:
            raise ValueError(f"group {self.group_id!r} has no members to select a protocol")
        candidates = self.candidate_protocols()
        if len(candidates) == 1:
            # Every member votes for the only protocol all support: skip the O(members) ballot
            # (it runs on every static member's rejoin in Stable).
            return candidates[0]
        votes: Counter[str] = Counter()
        ballot_order: list[str] = []
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] += 1
            ballot_order.append(choice)
        best: str | None = None
        for name in java_hashmap_order(ballot_order, java_string_hash):
            if best is None or votes[name] > votes[best]:
                best = name
        assert best is not None
        return best

    def has_all_members_joined(self) -> bool:
        """Rule 4 (Kafka: ``ClassicGroup.hasAllMembersJoined``)."""
        return self.num_awaiting_join() == len(self.members) and not self.pending_members

    def maybe_elect_new_joined_leader(self) -> bool:
        """Rule 3 at join completion: a leader that rejoined; False when nobody did."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def prefer_leader_by_assignor_version(self) -> None:
        """Rule 3, KIP-429 "Assignor Version": a rejoined member with the highest version leads."""
        joined = [m for m in self.members.values() if m.is_awaiting_join]
        versions = {m.member_id: m.assignor_version(self.protocol_name) for m in joined}
        advertised = {k: v for k, v in versions.items() if v is not None}
        if not advertised:
            return
        highest = max(advertised.values())
        if self.leader_id is not None and advertised.get(self.leader_id) == highest:
            return
        self.leader_id = next(k for k, v in advertised.items() if v == highest)

    def init_next_generation(self, now_ms: int) -> None:
        """Bump the generation, select the protocol and enter CompletingRebalance (or Empty)."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.prefer_leader_by_assignor_version()
            self.transition_to(ClassicGroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(ClassicGroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def current_members_metadata(self) -> tuple[JoinGroupResponseMember, ...]:
        """What only the leader receives: every member with its metadata for the chosen protocol."""
        if self.protocol_name is None:
            raise ValueError(f"group {self.group_id!r} has no selected protocol")
        name = self.protocol_name
        return tuple(
            JoinGroupResponseMember(m.member_id, m.group_instance_id, m.metadata(name))
            for m in self.members.values()
        )

    def group_assignment(self) -> dict[str, bytes]:
        return {m.member_id: m.assignment for m in self.members.values()}

    def supported_protocol_counts(self) -> dict[str, int]:
        return dict(self._supported_protocols)

    def __repr__(self) -> str:
        return (
            f"ClassicGroup({self.group_id!r}, {self.state}, generation={self.generation_id}, "
            f"protocol={self.protocol_name!r}, leader={self.leader_id!r}, "
            f"members={list(self.members)})"
        )
