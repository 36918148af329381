"""KIP-848 consumer groups in the coordinator: handlers, replay, timers, metadata updates.

Kafka: the consumer-group half of ``GroupMetadataManager``. This class wires the
parts together; each concern has its module:

* ``consumer_heartbeat``: ConsumerGroupHeartbeat (join, heartbeat, leave,
  fencing, static members, reconciliation);
* ``consumer_client_assign``: KIP-848's client-side assignors
  (COMPUTE_ASSIGNMENT, ConsumerGroupPrepareAssignment, ConsumerGroupInstallAssignment);
* ``consumer_describe``: ConsumerGroupDescribe and the GROUP config resource;
* ``consumer_records``: record builders and replay;
* ``consumer_txn``: one operation's records, replayed as written, or rolled back;
* ``consumer_migration`` / ``consumer_classic_members``: the online migration
  between the classic protocol and KIP-848, and classic members inside a
  consumer group;
* ``consumer_timers`` (the base class): the timers below.

Shared steps live here: removing ("fencing") a member, computing a new target,
refreshing the subscription metadata. The timers:

========================================  =========================================================
timer key                                 fires
========================================  =========================================================
``consumer-session-<group>-<member>``     the member sent no heartbeat for the session timeout:
                                          removed (``member_left`` reason ``session_timeout``)
``consumer-rebalance-<group>-<member>``   the member did not revoke within its rebalance timeout:
                                          removed if still revoking at that epoch
``consumer-client-assign-<group>``        the member chosen to run the client-side assignor did
                                          not install in time: another member is chosen
``consumer-expire-<group>``               the group stayed EMPTY for ``offsets.retention.minutes``:
                                          deleted (DEAD)
``consumer-classic-join-<group>-<member>`` a member using the classic protocol was told to rejoin
                                          and did not within its rebalance timeout: removed
``consumer-classic-sync-<group>-<member>`` a member using the classic protocol joined and did not
                                          send SyncGroup within its rebalance timeout: removed
========================================  =========================================================

Members that use the classic protocol (online migration, ``consumer_migration``
and ``consumer_classic_members``) expire by their own session timeout (Kafka
``scheduleConsumerGroupSessionTimeout(groupId, memberId, classicProtocolSessionTimeout)``).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Hashable, Iterable, Mapping
from itertools import chain
from typing import Any

from regroup.assignors.consumer.api import (
    ConsumerGroupPartitionAssignor,
    GroupAssignment,
    GroupSpec,
    SubscribedTopicDescriber,
    TopicMetadata,
)
from regroup.consumer.client_assignors import ClientAssignmentInFlight
from regroup.consumer.group import ConsumerGroup, ResolvedRegex
from regroup.consumer.group_member import Assignment, ConsumerGroupMember
from regroup.consumer.subscription import InvalidRegexError, resolve_regex
from regroup.consumer.target_assignment import (
    SpecCache,
    build_target_assignment,
    preferred_server_assignor,
)
from regroup.coordinator import consumer_records as rec
from regroup.coordinator.consumer_migration import PendingUpgrade, maybe_downgrade
from regroup.coordinator.consumer_timers import ConsumerGroupTimers
from regroup.coordinator.consumer_txn import ConsumerTxn
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.events.schema import (
    GroupEpochBumped,
    MemberAssignmentChanged,
    MemberLeft,
    TargetAssignmentComputed,
)
from regroup.model.metadata import MetadataImage
from regroup.model.topic_partition import TopicPartition, topic_partition
from regroup.model.uuid import Uuid
from regroup.records import CoordinatorRecord

__all__ = ["ConsumerGroupManager", "ScriptedAssignor"]

Handler = Callable[[Hashable, Any, int], CoordinatorResult]

#: Group config names (KIP-848 "Dynamic Group Configuration"; Kafka ``GroupConfig``).
#: A member's target, the names it was converted with, and the converted target.
SESSION_TIMEOUT_CONFIG = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL_CONFIG = "consumer.heartbeat.interval.ms"


#: Entries of ``_TopicNames.single`` kept at most (emptied when full).
_SINGLE_TOPIC_MEMO_LIMIT = 1 << 16


class _TopicNames:
    """Topic id -> name for one subscription metadata and one image, and converted sets.

    ``single`` memoises ``partitions_by_name`` for one-topic assignments, by
    (topic id, partitions): every heartbeat that moves a member's epoch reports its
    partitions by name (``member_assignment_changed``), and they rarely change.
    """

    __slots__ = ("image", "metadata", "names", "single")

    def __init__(self, metadata: Mapping[str, TopicMetadata], image: MetadataImage) -> None:
        self.metadata = metadata
        self.image = image
        self.names: dict[Uuid, str] = {t.topic_id: name for name, t in metadata.items()}
        self.single: dict[tuple[Uuid, frozenset[int]], tuple[TopicPartition, ...]] = {}


class _NamedTargets:
    """One group's targets by topic name (``_targets_by_name``), kept between epochs.

    Valid for one subscription metadata and one image (names come from them).
    ``ids`` is the target's member ids, sorted; ``named`` maps each to the target
    map it was converted from and the result.
    """

    __slots__ = ("ids", "image", "metadata", "named")

    def __init__(self, metadata: object, image: object) -> None:
        self.metadata = metadata
        self.image = image
        self.ids: list[str] = []
        self.named: dict[str, tuple[Assignment, tuple[TopicPartition, ...]]] = {}

    def sync_ids(self, targets: Mapping[str, Assignment]) -> None:
        """Make ``ids`` the sorted keys of ``targets``, moving only what changed."""
        named = self.named
        if len(named) == len(targets) and named.keys() == targets.keys():
            return
        gone = named.keys() - targets.keys()
        for member_id in gone:
            del named[member_id]
        added = [m for m in targets if m not in named]
        if len(gone) + len(added) > 8:
            self.ids = sorted(targets)
        else:
            ids = self.ids
            for member_id in gone:
                del ids[bisect_left(ids, member_id)]
            for member_id in added:
                insort(ids, member_id)
        for member_id in added:
            named[member_id] = _UNCONVERTED


#: A target nobody has converted yet (never the same object as a real target).
_UNCONVERTED: tuple[Assignment, tuple[TopicPartition, ...]] = ({}, ())


class ScriptedAssignor(ConsumerGroupPartitionAssignor):
    """An assignor that returns a given result once (``regroup replay`` scripts, tests)."""

    name = "scripted"

    def __init__(self, assignment: GroupAssignment) -> None:
        self._assignment = assignment

    def assign(
        self, group_spec: GroupSpec, subscribed_topic_describer: SubscribedTopicDescriber
    ) -> GroupAssignment:
        return self._assignment


def _default_assignor_resolver(name: str) -> ConsumerGroupPartitionAssignor:
    # Imported at call time: the registry imports every assignor implementation.
    from regroup.assignors.consumer.registry import create_server_assignor

    return create_server_assignor(name)


class ConsumerGroupManager(ConsumerGroupTimers):
    """The KIP-848 part of the coordinator (``coordinator.consumer``)."""

    def __init__(self, state: GroupCoordinatorState) -> None:
        self.state = state
        #: name -> server-side assignor (tests and scripts may replace it).
        self.assignor_resolver: Callable[[str], ConsumerGroupPartitionAssignor] = (
            _default_assignor_resolver
        )
        #: Scripted assignor results, used (once each) by the next target computations.
        self.scripted: dict[str, list[ConsumerGroupPartitionAssignor]] = {}
        #: The client-side assignment each group waits for (transient, KIP-848 Rule 5).
        self.in_flight: dict[str, ClientAssignmentInFlight] = {}
        #: Group config overrides by group id (record 900).
        self.group_configs: dict[str, dict[str, str]] = {}
        #: How many metadata images were seen (the "version" of resolved regexes).
        self.metadata_version = 0
        #: Per group, each member's target converted to names (``_targets_by_name``).
        self._target_names: dict[str, _NamedTargets] = {}
        #: One ``TopicPartition`` per partition number, by topic name (``partitions_by_name``).
        self._topic_partitions: dict[str, list[TopicPartition]] = {}
        #: Topic names of the last subscription metadata and image seen (``partitions_by_name``).
        self._names = _TopicNames({}, MetadataImage())
        #: Per group, the assignor's member specs (``build_target_assignment``).
        self._spec_cache: dict[str, SpecCache] = {}
        #: Classic groups converted by the operation under way (``consumer_migration``).
        self.pending_upgrades: dict[str, PendingUpgrade] = {}

    # -- wiring ----------------------------------------------------------------------------

    def handlers(self) -> dict[type, Handler]:
        from regroup.coordinator import (
            consumer_client_assign,
            consumer_describe,
            consumer_heartbeat,
        )
        from regroup.model.requests import consumer as msg

        return {
            msg.ConsumerGroupHeartbeatRequest: lambda t, r, n: consumer_heartbeat.handle(
                self, t, r, n
            ),
            msg.ConsumerGroupPrepareAssignmentRequest: lambda t, r, n: (
                consumer_client_assign.handle_prepare(self, t, r, n)
            ),
            msg.ConsumerGroupInstallAssignmentRequest: lambda t, r, n: (
                consumer_client_assign.handle_install(self, t, r, n)
            ),
            msg.ConsumerGroupDescribeRequest: lambda t, r, n: consumer_describe.handle_describe(
                self, t, r, n
            ),
            msg.IncrementalAlterGroupConfigsRequest: lambda t, r, n: (
                consumer_describe.handle_alter_configs(self, t, r, n)
            ),
            msg.DescribeGroupConfigsRequest: lambda t, r, n: (
                consumer_describe.handle_describe_configs(self, t, r, n)
            ),
        }

    def replay(self, record: CoordinatorRecord) -> bool:
        return rec.replay_consumer_record(self.state.groups, self.group_configs, record)

    def begin(self, group_id: str, now_ms: int) -> ConsumerTxn:
        return ConsumerTxn(self, group_id, now_ms)

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        group = self.state.groups.get(group_id)
        return group if isinstance(group, ConsumerGroup) else None

    # -- configs -----------------------------------------------------------------------------

    def session_timeout_ms(self, group_id: str) -> int:
        override = self.group_configs.get(group_id, {}).get(SESSION_TIMEOUT_CONFIG)
        if override is not None:
            return int(override)
        return int(self.state.config.group_consumer_session_timeout_ms)

    def heartbeat_interval_ms(self, group_id: str) -> int:
        override = self.group_configs.get(group_id, {}).get(HEARTBEAT_INTERVAL_CONFIG)
        if override is not None:
            return int(override)
        return int(self.state.config.group_consumer_heartbeat_interval_ms)

    def configured_assignors(self) -> tuple[str, ...]:
        return tuple(self.state.config.group_consumer_assignors)

    # -- shared steps ----------------------------------------------------------------------------

    def subscription_metadata(self, group: ConsumerGroup) -> dict[str, TopicMetadata]:
        """The subscribed topics that exist, from the current metadata image."""
        image: MetadataImage = self.state.metadata
        topics: dict[str, TopicMetadata] = {}
        for name in sorted(group.subscribed_topic_names()):
            topic = image.topic(name)
            if topic is not None:
                topics[name] = TopicMetadata(
                    topic.topic_id, topic.name, topic.partitions, topic.partition_racks
                )
        return topics

    def _metadata_equal(
        self, a: Mapping[str, TopicMetadata], b: Mapping[str, TopicMetadata]
    ) -> bool:
        def key(m: Mapping[str, TopicMetadata]) -> dict[str, tuple[object, int]]:
            return {n: (t.topic_id, t.partitions) for n, t in m.items()}

        return key(a) == key(b)

    def resolve(self, regex: str, now_ms: int) -> ResolvedRegex:
        image: MetadataImage = self.state.metadata
        try:
            topics = resolve_regex(regex, image.topics_by_name)
        except InvalidRegexError:
            topics = frozenset()
        return ResolvedRegex(topics, self.metadata_version, now_ms)

    def bump_epoch(self, txn: ConsumerTxn, reason: str) -> None:
        """Refresh the subscription metadata, then write the next group epoch."""
        group = txn.group
        assert group is not None
        metadata = self.subscription_metadata(group)
        if not self._metadata_equal(metadata, group.subscription_metadata):
            txn.write(rec.partition_metadata_record(txn.group_id, metadata))
        epoch = group.group_epoch + 1
        txn.write(rec.epoch_record(txn.group_id, epoch))
        txn.emit(
            GroupEpochBumped(ts_ms=txn.now_ms, group_id=txn.group_id, epoch=epoch, reason=reason)
        )

    def remove_member(self, txn: ConsumerTxn, member: ConsumerGroupMember, reason: str) -> None:
        """Kafka ``removeMember`` + epoch bump: three tombstones, metadata, next epoch.

        Or, when the member is the last one using the KIP-848 protocol among
        classic ones, the online downgrade instead (``consumer_migration``).
        """
        group = txn.group
        assert group is not None
        if maybe_downgrade(self, txn, member, reason):
            return
        gid = txn.group_id
        txn.write(
            rec.current_assignment_tombstone(gid, member.member_id),
            rec.target_member_tombstone(gid, member.member_id),
            rec.member_metadata_tombstone(gid, member.member_id),
        )
        regex = member.subscribed_topic_regex
        if regex and regex in group.resolved_regexes and group.regex_subscribers(regex) == 0:
            txn.write(rec.regex_tombstone(gid, regex))
        txn.emit(
            MemberLeft(
                ts_ms=txn.now_ms,
                group_id=gid,
                member_id=member.member_id,
                group_protocol="consumer",
                reason=reason,
                instance_id=member.instance_id,
            )
        )
        self.bump_epoch(txn, f"member_left:{reason}")
        self.cancel_member_timers(gid, member.member_id)
        in_flight = self.in_flight.get(gid)
        if in_flight is not None and in_flight.member_id == member.member_id:
            self.drop_in_flight(gid)

    def drop_in_flight(self, group_id: str) -> None:
        self.in_flight.pop(group_id, None)
        self.state.timer.cancel(self.client_assign_key(group_id))

    def delete_group(self, txn: ConsumerTxn) -> None:
        """Kafka ``createGroupTombstoneRecords`` for an empty group; the group becomes DEAD."""
        group = txn.group
        assert group is not None and group.is_empty()
        gid = txn.group_id
        for member_id in list(group.target_assignment):
            txn.write(rec.target_member_tombstone(gid, member_id))
        txn.write(rec.target_metadata_tombstone(gid))
        for regex in sorted(group.resolved_regexes):
            txn.write(rec.regex_tombstone(gid, regex))
        txn.write(rec.partition_metadata_tombstone(gid))
        if gid in self.group_configs:
            txn.write(rec.config_record(gid, {}))
        txn.write(rec.group_tombstone(gid))

    def compute_target(self, txn: ConsumerTxn) -> None:
        """Run the server-side assignor, write the new target (Kafka ``updateTargetAssignment``)."""
        group = txn.group
        assert group is not None
        self.drop_in_flight(txn.group_id)
        scripted = self.scripted.get(txn.group_id)
        if scripted:
            assignor = scripted.pop(0)
            name = assignor.name
        else:
            name = preferred_server_assignor(group.members, self.configured_assignors())
            assignor = self.assignor_resolver(name)
        specs = self._spec_cache.setdefault(txn.group_id, {})
        result = build_target_assignment(group, group.members, assignor, specs)
        self.install_target(txn, result.targets, group.group_epoch, name, result.changed)

    def install_target(
        self,
        txn: ConsumerTxn,
        targets: Mapping[str, Assignment],
        epoch: int,
        assignor_name: str,
        changed: Mapping[str, Assignment] | None = None,
    ) -> None:
        """Write a target record per member whose target changed (by member id), then the epoch.

        ``changed``: the members of ``targets`` whose target differs from the group's,
        when the caller knows them already (``build_target_assignment`` does); the
        records are the same, without a walk over every member.
        """
        group = txn.group
        assert group is not None
        current = group.target_assignment
        for member_id in sorted(targets if changed is None else changed):
            if member_id not in group.members:
                continue
            target = targets[member_id]
            now = current.get(member_id)
            if now is None or (now is not target and now != target):
                txn.write(rec.target_member_record(txn.group_id, member_id, target))
        txn.write(rec.target_metadata_record(txn.group_id, epoch))
        txn.emit(
            TargetAssignmentComputed(
                ts_ms=txn.now_ms,
                group_id=txn.group_id,
                epoch=epoch,
                assignor=assignor_name,
                assignment=self._targets_by_name(group),
            )
        )

    def _targets_by_name(self, group: ConsumerGroup) -> dict[str, tuple[TopicPartition, ...]]:
        """Every member's target by topic name, for ``target_assignment_computed``.

        Converting is O(partitions); an epoch changes few targets. A member's
        converted target is kept while its target map is the same object (the
        group stores a new map only when a target record changes it) and the
        names it was converted with are the same (the subscription metadata and
        the image are replaced, never changed in place), so each epoch converts
        only the targets that changed. The member ids are kept sorted between
        epochs too: a rolling bounce swaps one member per epoch, and re-sorting
        every id at every epoch would cost more than the rest.
        """
        targets = group.target_assignment
        metadata = group.subscription_metadata
        image = self.state.metadata
        cache = self._target_names.get(group.group_id)
        if cache is None or cache.metadata is not metadata or cache.image is not image:
            cache = _NamedTargets(metadata, image)
            self._target_names[group.group_id] = cache
        cache.sync_ids(targets)
        named = cache.named
        assignment: dict[str, tuple[TopicPartition, ...]] = {}
        for member_id in cache.ids:
            target = targets[member_id]
            hit = named.get(member_id)
            if hit is None or hit[0] is not target:
                hit = named[member_id] = (target, self.partitions_by_name(group, target))
            assignment[member_id] = hit[1]
        return assignment

    def partitions_by_name(
        self, group: ConsumerGroup, assignment: Assignment
    ) -> tuple[TopicPartition, ...]:
        """Topic ids to names (subscription metadata first, then the image); unknown ids kept.

        Sorted by name then partition (``TopicPartition`` order), built topic by
        topic so that only integers are sorted, from one shared (immutable)
        ``TopicPartition`` per partition.
        """
        if not assignment:
            return ()
        metadata = group.subscription_metadata
        image: MetadataImage = self.state.metadata
        known = self._names
        if known.metadata is not metadata or known.image is not image:
            # Both are replaced, never changed in place: identity is enough.
            known = self._names = _TopicNames(metadata, image)
        if len(assignment) == 1:
            ((topic_id, partitions),) = assignment.items()
            if type(partitions) is frozenset:
                hit = known.single.get((topic_id, partitions))
                if hit is None:
                    hit = self._by_name(known, assignment)
                    if len(known.single) >= _SINGLE_TOPIC_MEMO_LIMIT:
                        known.single.clear()
                    known.single[(topic_id, partitions)] = hit
                return hit
        return self._by_name(known, assignment)

    def _by_name(self, known: _TopicNames, assignment: Assignment) -> tuple[TopicPartition, ...]:
        names = known.names
        image = known.image
        by_name: dict[str, list[Iterable[int]]] = {}
        for topic_id, partitions in assignment.items():
            name = names.get(topic_id)
            if name is None:
                topic = image.topic_by_id(topic_id)
                name = topic.name if topic is not None else str(topic_id)
            by_name.setdefault(name, []).append(partitions)
        result: list[TopicPartition] = []
        for name in sorted(by_name):
            ordered = sorted(chain.from_iterable(by_name[name]))
            shared = self._topic_partitions.get(name)
            if shared is None:
                shared = self._topic_partitions[name] = []
            if ordered and ordered[-1] >= len(shared):
                shared.extend(topic_partition(name, p) for p in range(len(shared), ordered[-1] + 1))
            if ordered and ordered[0] < 0:  # not a partition number: no sharing
                result.extend(topic_partition(name, p) for p in ordered)
            else:
                result.extend(map(shared.__getitem__, ordered))
        return tuple(result)

    def emit_assignment_changed(self, txn: ConsumerTxn, member: ConsumerGroupMember) -> None:
        group = txn.group
        assert group is not None
        txn.emit(
            MemberAssignmentChanged(
                ts_ms=txn.now_ms,
                group_id=txn.group_id,
                member_id=member.member_id,
                epoch=member.member_epoch,
                previous_epoch=member.previous_member_epoch,
                member_state=member.state.name,
                assigned=self.partitions_by_name(group, member.assigned_partitions),
                pending_revocation=self.partitions_by_name(
                    group, member.partitions_pending_revocation
                ),
            )
        )

    def on_loaded(self, now_ms: int) -> None:
        """Arm the timers of groups rebuilt from records (Kafka ``GroupMetadataManager.onLoaded``).

        Timers are not records: after a log is replayed, every member gets a fresh
        session timer, every member still revoking a rebalance timer, and every
        EMPTY group its expiration.
        """
        from regroup.consumer.group_member import MemberState

        for group_id in sorted(self.state.groups):
            group = self.consumer_group(group_id)
            if group is None:
                continue
            for member in group.members.values():
                classic = member.classic_member_metadata
                self.schedule_session(
                    group_id,
                    member.member_id,
                    now_ms,
                    None if classic is None else classic.session_timeout_ms,
                )
                if member.state is MemberState.UNREVOKED_PARTITIONS:
                    self.schedule_rebalance(group_id, member, now_ms)
            self.after_change(group_id, group.state_name(), now_ms)

    # -- metadata updates -------------------------------------------------------------------

    def on_metadata_update(
        self, previous: MetadataImage, image: MetadataImage, now_ms: int
    ) -> CoordinatorResult:
        """Topics created, deleted or grown: re-resolve regexes, refresh metadata, bump epochs.

        KIP-848, "Group Epoch - Trigger a rebalance": "The partition metadata is
        updated. For instance when a new partition is added or a new topic
        matching the subscribed topics is created." Kafka refreshes lazily on the
        next heartbeat; regroup refreshes every consumer group at once.
        """
        self.metadata_version += 1
        results = []
        for group_id in sorted(self.state.groups):
            group = self.consumer_group(group_id)
            if group is None or group.dead:
                continue
            txn = self.begin(group_id, now_ms)
            changed = False
            for regex, resolved in sorted(group.resolved_regexes.items()):
                fresh = self.resolve(regex, now_ms)
                if fresh.topics != resolved.topics:
                    txn.write(rec.regex_record(group_id, regex, fresh))
                    changed = True
            metadata = self.subscription_metadata(group)
            if changed or not self._metadata_equal(metadata, group.subscription_metadata):
                self.bump_epoch(txn, "metadata_changed")
            results.append(txn.finish())
        return CoordinatorResult.merge(results)
