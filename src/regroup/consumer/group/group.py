"""The KIP-848 consumer group: epochs, members, target assignment, derived state.

KIP-848, "Data Model" and "Rebalance Process"; Kafka: ``ConsumerGroup`` (and
``ModernGroup``). The group holds

* the **group epoch** (bumped when the group's metadata changes), the
  **assignment epoch** (the group epoch the target was computed at), and each
  member's **member epoch** (in its current assignment);
* the members by id, the static members by instance id;
* the **target assignment** by member, with its inverted map
  (partition -> member) used by the assignors' "is this partition assigned";
* the **partition epochs**: which member epoch owns each partition now
  (assigned or pending revocation) - the input of Rule 3 of
  ``regroup.consumer.group.reconciliation``. Kafka keeps partition -> epoch and
  rewrites it for every partition of a member whose epoch moves; the epoch is
  always its owner's member epoch, so regroup keeps partition -> owner and reads
  the epoch from the owner: a member that only moves to a new epoch (every
  member, after every target assignment) then costs no index update at all;
* the **subscription metadata** (the subscribed topics that exist, with their
  partition counts) and the resolved regular expressions;
* how many STABLE members are at each member epoch, so that the state below
  is derived in O(1), not by a walk over every member on each heartbeat.

Only the coordinator's record replay calls the mutators (``set_*``,
``put_*``, ``remove_*``), so a group rebuilt from its records equals the live
one (``==`` compares every field, derived maps included).

Undo journal (rolling an operation back). The coordinator replays each record
as it is written and must restore the group when the operation fails. Copying
the group for that made every heartbeat cost O(members). Instead, between
``start_journal()`` and ``end_journal()`` every mutator notes the previous
value of each map entry and attribute it changes, so ``undo_journal()`` puts
them back, newest first, in O(entries changed). Maps whose iteration order is
visible (members, targets, static members, regexes) are copied once, on the
first deletion in the operation, so their order is restored exactly too; the
pure indexes (partition -> owner / epoch, the STABLE counts) are only ever
looked up, so their order does not matter. One operation at a time: starting
a journal discards any unfinished one.

States (KIP-848, "Consumer Group States"), derived after every change:

=============  ==================================================================
EMPTY          no members
ASSIGNING      group epoch > assignment epoch: a new target is due
RECONCILING    some member is not yet STABLE at the assignment epoch
STABLE         every member is STABLE at the assignment epoch
DEAD           the group was deleted (``mark_dead``)
=============  ==================================================================

DEAD: the KIP says a group that stays EMPTY "for a configured period" becomes
DEAD and is deleted. Kafka 4.x deletes an empty consumer group once its
committed offsets have expired (``offsets.retention.minutes`` after it became
empty; ``GroupMetadataManager.maybeDeleteGroup``) or on DeleteGroups; the group
object is then gone and ``DEAD`` is only a state name. regroup does the same:
the coordinator deletes a group that has stayed EMPTY for
``offsets.retention.minutes`` (writing its tombstones), and the deleted object
reports DEAD to anyone still holding it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from regroup.assignors.consumer.api import SubscriptionType, TopicMetadata
from regroup.consumer.group.group_member import Assignment, ConsumerGroupMember, MemberState
from regroup.consumer.group.subscription import subscription_type
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.uuid import Uuid

__all__ = ["ConsumerGroup", "ConsumerGroupState", "IllegalGroupStateError", "ResolvedRegex"]

GROUP_TYPE = "consumer"


class ConsumerGroupState(enum.Enum):
    """Kafka's ``ConsumerGroup.ConsumerGroupState``; the value is Kafka's display name."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class IllegalGroupStateError(RuntimeError):
    """A record that contradicts the group (two owners for a partition...): a bug."""


#: "No entry": the previous value of a map entry that did not exist.
_MISSING: Final = object()
#: Journal key meaning "restore this whole map from the copy" (an order-sensitive map).
_WHOLE_MAP: Final = object()
#: Journal key meaning "restore these entries" (the old value: a map of previous values).
_MANY: Final = object()


class _Journal:
    """The undo entries of one operation: ``(map or group, key or attribute, old value)``."""

    __slots__ = ("copied", "entries")

    def __init__(self) -> None:
        self.entries: list[tuple[Any, Any, Any]] = []
        #: ids of the order-sensitive maps already copied whole in this operation.
        self.copied: set[int] = set()


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    """A regular expression resolved to topic names (Kafka ``ResolvedRegularExpression``)."""

    topics: frozenset[str]
    version: int
    timestamp: int


@dataclass(eq=True)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    target_assignment: dict[str, Assignment] = field(default_factory=dict)
    subscription_metadata: dict[str, TopicMetadata] = field(default_factory=dict)
    resolved_regexes: dict[str, ResolvedRegex] = field(default_factory=dict)
    # -- derived indexes, kept in step by the mutators --
    static_members: dict[str, str] = field(default_factory=dict)
    inverted_target: dict[Uuid, dict[int, str]] = field(default_factory=dict)
    #: Topic id -> partition -> the member that owns it (assigned or pending revocation).
    partition_owners: dict[Uuid, dict[int, str]] = field(default_factory=dict)
    dead: bool = False
    #: member epoch -> how many STABLE members are at it (the state in O(1)).
    stable_by_epoch: dict[int, int] = field(default_factory=dict, repr=False)
    #: regex -> how many members subscribe through it (Kafka ``ConsumerGroup``'s
    #: ``subscribedRegularExpressions``): a heartbeat asks about the group's regexes
    #: without walking its members.
    regex_subscriber_counts: dict[str, int] = field(default_factory=dict, repr=False)
    _journal: _Journal | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Derived state is rebuilt here, whatever was passed in (``copy`` passes the
        # original's through ``replace``), so a copy never shares it with the original.
        self.stable_by_epoch = {}
        self.regex_subscriber_counts = {}
        self._journal = None
        for member in self.members.values():
            self._count_stable(member, 1)
            self._count_regex(member, 1)

    # -- the Group protocol of regroup.coordinator.group ------------------------------

    @property
    def group_type(self) -> str:
        return GROUP_TYPE

    def state(self) -> ConsumerGroupState:
        if self.dead:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if self.stable_by_epoch.get(self.assignment_epoch, 0) != len(self.members):
            # Some member is not STABLE at the assignment epoch (``is_reconciled_to``).
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def state_name(self) -> str:
        value: str = self.state().value
        return value

    def is_empty(self) -> bool:
        return not self.members

    def validate_offset_commit(
        self,
        member_id: str,
        group_instance_id: str | None,
        generation_id_or_member_epoch: int,
        supports_member_epoch: bool,
    ) -> None:
        """Kafka 4.x ``ConsumerGroup.validateOffsetCommit``.

        A member that uses the classic protocol (online migration) commits with
        any OffsetCommit version, its generation being its member epoch.

        A negative epoch with an empty group is a commit from outside the group
        (admin client, ``assign()``): accepted. Otherwise the member must exist
        (UNKNOWN_MEMBER_ID), must use OffsetCommit v9+ (UNSUPPORTED_VERSION) and
        its epoch must be its current member epoch exactly (STALE_MEMBER_EPOCH).
        """
        if generation_id_or_member_epoch < 0 and not self.members:
            return
        member = self._member_or_unknown(member_id)
        classic = member.classic_member_metadata is not None
        if not supports_member_epoch and not classic:
            raise KafkaProtocolError(
                ErrorCode.UNSUPPORTED_VERSION,
                "OffsetCommit version 9 or above must be used by members using the "
                "consumer protocol",
            )
        self._validate_member_epoch(generation_id_or_member_epoch, member.member_epoch, classic)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        """Kafka 4.x ``ConsumerGroup.validateOffsetFetch``.

        No member id and a negative epoch: a fetch from outside the group,
        accepted. Otherwise UNKNOWN_MEMBER_ID / STALE_MEMBER_EPOCH as for commits.
        """
        if member_id is None and member_epoch < 0:
            return
        member = self._member_or_unknown(member_id or "")
        self._validate_member_epoch(member_epoch, member.member_epoch)

    def _member_or_unknown(self, member_id: str) -> ConsumerGroupMember:
        member = self.members.get(member_id)
        if member is None:
            raise KafkaProtocolError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a member of group {self.group_id}.",
            )
        return member

    @staticmethod
    def _validate_member_epoch(received: int, expected: int, classic: bool = False) -> None:
        """Kafka ``ConsumerGroup.validateMemberEpoch``: a member that uses the classic
        protocol commits with its generation (its member epoch) and gets
        ILLEGAL_GENERATION, the classic error, when it is not the current one."""
        if received != expected and classic:
            raise KafkaProtocolError(
                ErrorCode.ILLEGAL_GENERATION,
                f"The received generation id {received} does not match the expected member "
                f"epoch {expected}.",
            )
        if received != expected:
            raise KafkaProtocolError(
                ErrorCode.STALE_MEMBER_EPOCH,
                f"The received member epoch {received} does not match the expected member "
                f"epoch {expected}.",
            )

    # -- queries ----------------------------------------------------------------------

    def member(self, member_id: str) -> ConsumerGroupMember | None:
        return self.members.get(member_id)

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def target_of(self, member_id: str) -> Assignment:
        return self.target_assignment.get(member_id, {})

    def current_partition_epoch(self, topic_id: Uuid, partition: int) -> int:
        """Kafka ``currentPartitionEpoch``: the owner's epoch, or -1 when free."""
        owners = self.partition_owners.get(topic_id)
        owner = None if owners is None else owners.get(partition)
        return -1 if owner is None else self.members[owner].member_epoch

    def subscription_type(self) -> SubscriptionType:
        return subscription_type(self.members)

    def subscribed_topic_names(
        self, members: Mapping[str, ConsumerGroupMember] | None = None
    ) -> frozenset[str]:
        """Every topic some member subscribes to, by name or through a resolved regex."""
        names: set[str] = set()
        for member in (self.members if members is None else members).values():
            names |= self.member_topic_names(member)
        return frozenset(names)

    def member_topic_names(self, member: ConsumerGroupMember) -> frozenset[str]:
        """Names plus the topics of its resolved regex (an unresolved one: none)."""
        names = member.subscribed_topic_names
        if member.subscribed_topic_regex:
            resolved = self.resolved_regexes.get(member.subscribed_topic_regex)
            if resolved is not None:
                names = names | resolved.topics
        return names

    def regex_subscribers(self, regex: str) -> int:
        return self.regex_subscriber_counts.get(regex, 0)

    # -- mutators: called by record replay only ----------------------------------------

    def set_group_epoch(self, epoch: int) -> None:
        self._set_attr("group_epoch", epoch)

    def set_subscription_metadata(self, topics: Mapping[str, TopicMetadata]) -> None:
        self._set_attr("subscription_metadata", dict(topics))

    def put_member_metadata(self, updated: ConsumerGroupMember) -> None:
        """Record 5: the member's metadata; its current assignment is kept."""
        old = self.members.get(updated.member_id)
        if old is not None:
            updated = replace(
                updated,
                state=old.state,
                member_epoch=old.member_epoch,
                previous_member_epoch=old.previous_member_epoch,
                assigned_partitions=old.assigned_partitions,
                partitions_pending_revocation=old.partitions_pending_revocation,
            )
            if old.instance_id is not None and old.instance_id != updated.instance_id:
                self._drop_static(old)
        self._put(old, updated)

    def put_current_assignment(
        self,
        member_id: str,
        *,
        member_epoch: int,
        previous_member_epoch: int,
        state: MemberState,
        assigned: Assignment,
        pending: Assignment,
    ) -> None:
        """Record 8: the member's epochs and partitions (a member is made if needed)."""
        old = self.members.get(member_id)
        base = old if old is not None else ConsumerGroupMember(member_id)
        updated = base.with_current_assignment(
            state, member_epoch, previous_member_epoch, dict(assigned), dict(pending)
        )
        self._put(old, updated)

    def remove_member(self, member_id: str) -> None:
        """Record 5 tombstone."""
        old = self.members.get(member_id)
        if old is None:
            return
        self._del_ordered(self.members, member_id)
        self._count_stable(old, -1)
        self._count_regex(old, -1)
        self._release(old)
        self._drop_static(old)

    def set_target(self, member_id: str, assignment: Assignment) -> None:
        """Record 7."""
        self.remove_target(member_id)
        self._set_item(self.target_assignment, member_id, dict(assignment))
        for topic_id, partitions in assignment.items():
            by_partition = self.inverted_target.get(topic_id)
            if by_partition is None:
                by_partition = {}
                self._set_item(self.inverted_target, topic_id, by_partition)
            if self._journal is not None:
                get = by_partition.get
                self._note_many(by_partition, {p: get(p, _MISSING) for p in partitions})
            by_partition.update(dict.fromkeys(partitions, member_id))

    def remove_target(self, member_id: str) -> None:
        """Record 7 tombstone."""
        old = self.target_assignment.get(member_id)
        if old is None:
            return
        self._del_ordered(self.target_assignment, member_id)
        for topic_id, partitions in old.items():
            by_partition = self.inverted_target.get(topic_id)
            if by_partition is None:
                continue
            mine = [p for p in partitions if by_partition.get(p) == member_id]
            if self._journal is not None:
                self._note_many(by_partition, dict.fromkeys(mine, member_id))
            for partition in mine:
                del by_partition[partition]
            if not by_partition:
                self._del_item(self.inverted_target, topic_id)

    def set_assignment_epoch(self, epoch: int) -> None:
        """Record 6 (tombstone: -1)."""
        self._set_attr("assignment_epoch", epoch)

    def put_regex(self, regex: str, resolved: ResolvedRegex) -> None:
        self._set_item(self.resolved_regexes, regex, resolved)

    def remove_regex(self, regex: str) -> None:
        if regex in self.resolved_regexes:
            self._del_ordered(self.resolved_regexes, regex)

    def mark_dead(self) -> None:
        self._set_attr("dead", True)

    def copy(self) -> ConsumerGroup:
        """An independent copy (members and assignments are immutable, maps are copied)."""
        copied = replace(
            self,
            members=dict(self.members),
            target_assignment=dict(self.target_assignment),
            subscription_metadata=dict(self.subscription_metadata),
            resolved_regexes=dict(self.resolved_regexes),
            static_members=dict(self.static_members),
            inverted_target={t: dict(p) for t, p in self.inverted_target.items()},
            partition_owners={t: dict(p) for t, p in self.partition_owners.items()},
        )
        return copied

    # -- the undo journal (see the module docstring) ------------------------------------

    def start_journal(self) -> None:
        """From now on, note how to undo every change (an operation begins)."""
        self._journal = _Journal()

    def end_journal(self) -> None:
        """Keep the changes (the operation succeeded)."""
        self._journal = None

    def undo_journal(self) -> None:
        """Undo every change since ``start_journal`` (the operation failed)."""
        journal, self._journal = self._journal, None
        if journal is None:
            return
        for target, key, old in reversed(journal.entries):
            if target is self:
                setattr(self, key, old)
            elif key is _WHOLE_MAP:
                target.clear()
                target.update(old)
            elif key is _MANY:
                for item, value in old.items():
                    if value is _MISSING:
                        target.pop(item, None)
                    else:
                        target[item] = value
            elif old is _MISSING:
                target.pop(key, None)
            else:
                target[key] = old

    def _set_attr(self, name: str, value: object) -> None:
        if self._journal is not None:
            self._journal.entries.append((self, name, getattr(self, name)))
        setattr(self, name, value)

    def _set_item(self, mapping: dict[Any, Any], key: object, value: object) -> None:
        if self._journal is not None:
            self._journal.entries.append((mapping, key, mapping.get(key, _MISSING)))
        mapping[key] = value

    def _note_many(self, mapping: dict[Any, Any], previous: dict[Any, Any]) -> None:
        """Note the previous values of many entries of an index at once."""
        assert self._journal is not None
        self._journal.entries.append((mapping, _MANY, previous))

    def _del_item(self, mapping: dict[Any, Any], key: object) -> None:
        """Delete from a map whose order nobody sees (an index)."""
        if self._journal is not None:
            self._journal.entries.append((mapping, key, mapping[key]))
        del mapping[key]

    def _del_ordered(self, mapping: dict[Any, Any], key: object) -> None:
        """Delete from a map whose order is visible: copied whole, once per operation."""
        journal = self._journal
        if journal is not None and id(mapping) not in journal.copied:
            journal.copied.add(id(mapping))
            journal.entries.append((mapping, _WHOLE_MAP, dict(mapping)))
        del mapping[key]

    # -- index maintenance ---------------------------------------------------------------

    def _put(self, old: ConsumerGroupMember | None, updated: ConsumerGroupMember) -> None:
        """Swap ``updated`` in; move the partition ownership from ``old``'s partitions to its own.

        Only the difference is applied: partitions ``old`` held and ``updated`` does not
        are released, new ones are claimed (each must be free); kept ones stay this
        member's, whatever its epoch (the epoch is read from the member).
        """
        if old is not None:
            self._count_stable(old, -1)
            self._count_regex(old, -1)
        if old is None or not (
            old.assigned_partitions == updated.assigned_partitions
            and old.partitions_pending_revocation == updated.partitions_pending_revocation
        ):
            self._move_ownership(old, updated)
        self._set_item(self.members, updated.member_id, updated)
        self._count_stable(updated, 1)
        self._count_regex(updated, 1)
        if updated.instance_id is not None:
            self._set_item(self.static_members, updated.instance_id, updated.member_id)

    def _move_ownership(
        self, old: ConsumerGroupMember | None, updated: ConsumerGroupMember
    ) -> None:
        before = _owned_by_topic(old) if old is not None else {}
        after = _owned_by_topic(updated)
        member_id = updated.member_id
        for topic_id, partitions in after.items():
            owners = self.partition_owners.get(topic_id)
            if owners is None:
                owners = {}
                self._set_item(self.partition_owners, topic_id, owners)
            held = before.get(topic_id, frozenset())
            claimed = partitions - held
            taken = owners.keys() & claimed  # a set (typeshed calls frozenset & keys() a frozenset)
            if taken:
                partition = min(taken)
                holder = self.members.get(owners[partition])
                epoch = -1 if holder is None else holder.member_epoch
                raise IllegalGroupStateError(
                    f"partition {topic_id}-{partition} is owned at epoch {epoch}; "
                    f"member {member_id} cannot own it too"
                )
            gone = held - partitions
            if gone:
                self._pop_many(owners, gone)
            if claimed:
                if self._journal is not None:
                    self._note_many(owners, dict.fromkeys(claimed, _MISSING))
                owners.update(dict.fromkeys(claimed, member_id))
        for topic_id, held in before.items():
            if topic_id in after:
                continue
            owners = self.partition_owners.get(topic_id)
            if owners is not None:
                self._pop_many(owners, held)
                if not owners:
                    self._del_item(self.partition_owners, topic_id)

    def _pop_many(self, owners: dict[int, str], partitions: Iterable[int]) -> None:
        present = [p for p in partitions if p in owners]
        if self._journal is not None:
            self._note_many(owners, {p: owners[p] for p in present})
        for partition in present:
            del owners[partition]

    def _release(self, member: ConsumerGroupMember) -> None:
        for topic_id, partitions in _owned_by_topic(member).items():
            owners = self.partition_owners.get(topic_id)
            if owners is not None:
                self._pop_many(owners, partitions)
                if not owners:
                    self._del_item(self.partition_owners, topic_id)

    def _count_stable(self, member: ConsumerGroupMember, delta: int) -> None:
        """Keep ``stable_by_epoch`` (no zero counts, so rebuilt groups compare equal)."""
        if member.state is not MemberState.STABLE:
            return
        count = self.stable_by_epoch.get(member.member_epoch, 0) + delta
        if count:
            self._set_item(self.stable_by_epoch, member.member_epoch, count)
        else:
            self._del_item(self.stable_by_epoch, member.member_epoch)

    def _count_regex(self, member: ConsumerGroupMember, delta: int) -> None:
        """Keep ``regex_subscriber_counts`` (no zero counts, as ``stable_by_epoch``)."""
        regex = member.subscribed_topic_regex
        if not regex:
            return
        count = self.regex_subscriber_counts.get(regex, 0) + delta
        if count:
            self._set_item(self.regex_subscriber_counts, regex, count)
        else:
            self._del_item(self.regex_subscriber_counts, regex)

    def _drop_static(self, member: ConsumerGroupMember) -> None:
        if (
            member.instance_id is not None
            and self.static_members.get(member.instance_id) == member.member_id
        ):
            self._del_ordered(self.static_members, member.instance_id)


def _owned_by_topic(member: ConsumerGroupMember) -> dict[Uuid, frozenset[int]]:
    """Assigned plus pending-revocation partitions, by topic (no empty sets)."""
    owned = {t: p for t, p in member.assigned_partitions.items() if p}
    for topic_id, partitions in member.partitions_pending_revocation.items():
        if partitions:
            owned[topic_id] = owned[topic_id] | partitions if topic_id in owned else partitions
    return owned
