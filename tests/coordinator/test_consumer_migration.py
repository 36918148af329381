"""Online migration between classic and KIP-848 groups (group.consumer.migration.policy).

Scenario tests of ``coordinator.consumer``'s ``upgrade``, ``downgrade`` and
``classic_members``: the upgrade's conversion (members, records, replay), its
refusals, classic members served by the consumer group, and the downgrade.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from regroup.assignors.classic.api import Assignment
from regroup.classic import protocol
from regroup.classic.group.group import ClassicGroup
from regroup.consumer.group.group import ConsumerGroup
from regroup.consumer.group.group_member import MemberState
from regroup.coordinator.classic.records import group_metadata_value
from regroup.events import MemberLeft
from regroup.model.errors import ErrorCode
from regroup.model.requests.classic import (
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from regroup.model.requests.offsets import (
    OffsetCommitResponse,
)
from regroup.records.classic import GroupMetadataKey
from regroup.records.consumer import ConsumerGroupMemberMetadataKey, ConsumerGroupMetadataValue
from tests.coordinator.migration_harness import MigrationHarness, tps


def upgraded(**config: Any) -> tuple[MigrationHarness, list[str]]:
    """A classic group a=[0, 1], b=[2] (generation 1) that KIP-848 member "k" joins."""
    h = MigrationHarness(**config)
    ids = h.stable_classic_group([[0, 1], [2]])
    response = h.join("k")
    assert response.error_code == ErrorCode.NONE, response.error_message
    return h, ids


def owners(group: ConsumerGroup) -> list[tuple[object, int]]:
    """Every (topic id, partition) held by some member, assigned or pending revocation."""
    return [tp for m in group.members.values() for tp in m.owned_partitions()]


def assert_exclusive(group: ConsumerGroup) -> None:
    held = owners(group)
    assert len(held) == len(set(held)), held


def test_upgrade_converts_every_classic_member_with_its_assignment() -> None:
    h, (a, b) = upgraded()
    group = h.group()
    assert isinstance(group, ConsumerGroup)
    foo = h.topic_id("foo")
    for member_id, parts in ((a, {0, 1}), (b, {2})):
        member = group.members[member_id]
        assert member.use_classic_protocol
        assert member.classic_member_metadata is not None
        assert member.classic_member_metadata.session_timeout_ms == 45000
        assert [p.name for p in member.classic_member_metadata.supported_protocols] == [
            "cooperative-sticky"
        ]
        assert member.member_epoch == 1 and member.previous_member_epoch == 1
        assert member.state is MemberState.STABLE
        assert member.assigned_partitions == {foo: frozenset(parts)}
        assert member.subscribed_topic_names == {"foo"}
        assert member.rebalance_timeout_ms == 300000
    # The KIP-848 member joined as a new member: the epoch moved on from the generation.
    assert group.group_epoch == 2 and group.assignment_epoch == 2
    assert not group.members["k"].use_classic_protocol
    assert_exclusive(group)


def test_upgrade_writes_kafkas_records_in_kafkas_order() -> None:
    h = MigrationHarness()
    _a, _b = h.stable_classic_group([[0, 1], [2]])
    h.join("k")
    names = [(r.key.record_name, r.value is None) for r in h.last_records]
    assert names[:12] == [
        ("GroupMetadata", True),
        ("ConsumerGroupMemberMetadata", False),
        ("ConsumerGroupMemberMetadata", False),
        ("ConsumerGroupMetadata", False),
        ("ConsumerGroupTargetAssignmentMember", False),
        ("ConsumerGroupTargetAssignmentMember", False),
        ("ConsumerGroupTargetAssignmentMetadata", False),
        ("ConsumerGroupCurrentMemberAssignment", False),
        ("ConsumerGroupCurrentMemberAssignment", False),
        # Then the joining member, as any new member: its metadata, the subscription
        # metadata with the next epoch.
        ("ConsumerGroupMemberMetadata", False),
        ("ConsumerGroupPartitionMetadata", False),
        ("ConsumerGroupMetadata", False),
    ]
    converted, joining, bumped = (h.last_records[i] for i in (3, 9, 11))
    assert isinstance(converted.value, ConsumerGroupMetadataValue)
    assert converted.value.epoch == 1
    assert isinstance(joining.key, ConsumerGroupMemberMetadataKey)
    assert joining.key.member_id == "k"
    assert isinstance(bumped.value, ConsumerGroupMetadataValue)
    assert bumped.value.epoch == 2


def test_a_converted_group_replays_to_the_live_state() -> None:
    h, (a, _) = upgraded()
    assert h.rebuilt() == h.group()
    h.cjoin(a, tps(0, 1))
    assert h.rebuilt() == h.group()
    # A restart: replay, then on_loaded arms every member's own session timer.
    fresh = h.replay_into_new(through_json=False)
    fresh.on_loaded()
    timer = fresh.coordinator.timer
    assert timer.deadline(f"consumer-session-g-{a}") == h.now_ms + 45000  # a's own timeout
    assert timer.deadline("consumer-session-g-k") == h.now_ms + 45000  # the group's
    assert fresh.groups["g"] == h.group()


def test_the_classic_group_parked_requests_are_answered_rebalance_in_progress() -> None:
    h = MigrationHarness()
    a, _b = h.stable_classic_group([[0, 1], [2]])
    # a rejoin parks: PreparingRebalance
    parked = h.submit(h.join_request(a, tps(0, 1)), JoinGroupResponse)
    assert not parked.answered
    h.join("k")
    assert parked.response.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert isinstance(h.coordinator.groups["g"], ConsumerGroup)


@pytest.mark.parametrize("policy", ["DISABLED", "DOWNGRADE"])
def test_upgrade_refused_by_the_policy(policy: str) -> None:
    h = MigrationHarness(group_consumer_migration_policy=policy)
    h.stable_classic_group([[0, 1], [2]])
    before = list(h.records)
    response = h.join("k")
    assert response.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert response.error_message == "Group g is not a consumer group."
    group = h.coordinator.groups["g"]
    assert isinstance(group, ClassicGroup) and group.state_name() == "Stable"
    assert h.records == before


def test_upgrade_allowed_by_the_upgrade_policy() -> None:
    h, _ = upgraded(group_consumer_migration_policy="UPGRADE")
    assert isinstance(h.coordinator.groups["g"], ConsumerGroup)


def test_upgrade_refused_above_the_consumer_group_size_limit() -> None:
    h = MigrationHarness(group_consumer_max_size=1)
    h.stable_classic_group([[0, 1], [2]])
    assert h.join("k").error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert isinstance(h.coordinator.groups["g"], ClassicGroup)


def test_a_failed_heartbeat_rolls_the_conversion_back() -> None:
    h = MigrationHarness()
    h.stable_classic_group([[0, 1], [2]])
    before = list(h.records)
    response = h.join("k", server_assignor="no-such-assignor")
    assert response.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
    group = h.coordinator.groups["g"]
    assert isinstance(group, ClassicGroup) and len(group.members) == 2
    assert h.records == before
    assert h.join("k").error_code == ErrorCode.NONE


def test_an_empty_classic_group_makes_way_for_a_consumer_group() -> None:
    h = MigrationHarness()
    (a,) = h.stable_classic_group([[0, 1, 2]])
    h.cleave(a)
    assert h.coordinator.groups["g"].state_name() == "Empty"
    assert h.join("k").error_code == ErrorCode.NONE
    assert isinstance(h.coordinator.groups["g"], ConsumerGroup)
    assert isinstance(h.last_records[0].key, GroupMetadataKey) and h.last_records[0].value is None


# -- classic members inside the consumer group ----------------------------------------------


def test_a_cooperative_classic_member_revokes_then_gets_its_target() -> None:
    h, (a, _b) = upgraded()
    group = h.group()
    foo = h.topic_id("foo")
    # The group epoch moved past a's generation: its heartbeat asks it to rejoin.
    assert h.cheartbeat(a, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    target = group.target_of(a)[foo]
    assert len(target) == 1 and target < {0, 1}
    join = h.cjoin(a, tps(0, 1))
    assert join.error_code == ErrorCode.NONE
    assert join.generation_id == 1  # revoking: still at its old epoch
    assert join.leader == "" and join.members == () and join.protocol_name == "cooperative-sticky"
    assert group.members[a].state is MemberState.UNREVOKED_PARTITIONS
    sync = h.csync(a, 1)
    assert sync.error_code == ErrorCode.NONE
    assert h.decoded(sync) == tps(*sorted(target))  # never the partitions pending revocation
    assert h.cheartbeat(a, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    join = h.cjoin(a, tps(*sorted(target)))
    assert join.generation_id == 2
    assert group.members[a].state is MemberState.STABLE
    assert h.decoded(h.csync(a, 2)) == tps(*sorted(target))
    assert h.cheartbeat(a, 2) == ErrorCode.NONE
    assert_exclusive(group)
    assert h.rebuilt() == group


def test_an_eager_classic_member_rejoins_with_nothing_and_gets_its_target() -> None:
    h = MigrationHarness()
    a, _b = h.stable_classic_group([[0, 1], [2]], name="range", version=0)
    h.join("k")
    group = h.group()
    join = h.cjoin(a, [], name="range", version=0)
    assert join.generation_id == 2 and join.protocol_name == "range"
    assert group.members[a].state is MemberState.STABLE
    sync = h.csync(a, 2, name="range")
    assert h.decoded(sync) == tps(*sorted(group.target_of(a)[h.topic_id("foo")]))
    assert sync.assignment[:2] == b"\x00\x00"  # the Assignment version of its Subscription
    assert_exclusive(group)


def test_the_kip_848_member_gets_a_partition_only_once_its_classic_owner_revoked_it() -> None:
    h, (a, b) = upgraded()
    group = h.group()
    foo = h.topic_id("foo")
    k_target = group.target_of("k")[foo]
    (taken,) = k_target
    old_owner = a if taken in (0, 1) else b
    h.hb("k", 2, [])
    assert taken not in h.parts("k")  # still held by the classic member
    h.cjoin(old_owner, tps(*h.parts(old_owner)))  # rejoins owning it: not yet revoked
    h.hb("k", group.members["k"].member_epoch, h.parts("k"))
    assert taken not in h.parts("k")
    kept = sorted(group.target_of(old_owner)[foo])
    h.cjoin(old_owner, tps(*kept))  # revoked now
    h.hb("k", group.members["k"].member_epoch, h.parts("k"))
    assert taken in h.parts("k")
    assert_exclusive(group)


def test_classic_requests_inside_the_consumer_group_are_validated() -> None:
    h, (a, _b) = upgraded()
    assert h.csync(a, 7).error_code == ErrorCode.ILLEGAL_GENERATION
    assert h.csync("nobody", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.csync("k", 2).error_code == ErrorCode.UNKNOWN_MEMBER_ID  # not a classic member
    assert h.cheartbeat(a, 7) == ErrorCode.ILLEGAL_GENERATION
    assert h.cheartbeat("nobody", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    join = h.cjoin(a, tps(0, 1))
    assert h.csync(a, join.generation_id, name="range").error_code == (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    assert h.cjoin("", [], protocol_type="connect").error_code == (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    assert h.cjoin("", [], name="roundrobin").error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_a_sync_behind_the_group_epoch_is_rebalance_in_progress() -> None:
    h, (_a, b) = upgraded()
    assert h.csync(b, 1).error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_a_new_classic_member_needs_a_member_id_then_joins_the_consumer_group() -> None:
    h, _ = upgraded()
    first = h.cjoin("", [], require_known_member_id=True)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.member_id
    epoch = h.group().group_epoch
    join = h.cjoin(first.member_id, [])
    assert join.error_code == ErrorCode.NONE
    group = h.group()
    assert group.group_epoch == epoch + 1
    assert group.members[first.member_id].use_classic_protocol
    assert join.generation_id == group.members[first.member_id].member_epoch
    assert h.rebuilt() == group


def test_a_classic_member_leaves_the_consumer_group() -> None:
    h, (a, _b) = upgraded()
    epoch = h.group().group_epoch
    response = h.cleave(a, "nobody")
    assert response.error_code == ErrorCode.NONE
    assert [m.error_code for m in response.members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    group = h.group()
    assert a not in group.members and group.group_epoch == epoch + 1
    assert h.rebuilt() == group


def test_a_classic_member_expires_by_its_own_session_timeout() -> None:
    h = MigrationHarness(group_min_session_timeout_ms=1000)
    h.stable_classic_group([[0, 1], [2]])
    h.join("k")
    c = h.cjoin("", [], session_timeout_ms=10000).member_id
    assert c in h.group().members
    h.hb("k", h.group().members["k"].member_epoch, h.parts("k"))
    h.advance(10001)
    assert c not in h.group().members
    left = [e for e in h.events_of(MemberLeft) if e.member_id == c]
    assert [e.reason for e in left] == ["session_timeout"]


def test_a_classic_member_told_to_rejoin_is_removed_after_its_rebalance_timeout() -> None:
    h, (a, b) = upgraded()
    assert h.cheartbeat(a, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    told = h.now_ms
    while h.now_ms < told + 300000:  # heartbeats keep every session alive; a never rejoins
        h.advance(20000)
        h.hb("k", h.group().members["k"].member_epoch, h.parts("k"))
        h.cheartbeat(b, h.group().members[b].member_epoch)
        if h.now_ms < told + 300000:
            assert a in h.group().members
            assert h.cheartbeat(a, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    assert a not in h.group().members
    left = h.events_of(MemberLeft)
    assert [(e.member_id, e.reason) for e in left] == [(a, "join_timeout")]


def test_offset_commits_of_classic_members_use_the_generation() -> None:
    h, (a, _b) = upgraded()

    def commit(member: str, generation: int) -> ErrorCode:
        reply = h.offset_commit(
            "g",
            {("foo", 0): 5},
            member_id=member,
            generation_id_or_member_epoch=generation,
            supports_member_epoch=False,
        )
        assert isinstance(reply, OffsetCommitResponse)
        return reply.topics[0].partitions[0].error_code

    assert commit(a, 1) == ErrorCode.NONE
    assert commit(a, 2) == ErrorCode.ILLEGAL_GENERATION
    assert commit("k", 2) == ErrorCode.UNSUPPORTED_VERSION  # a KIP-848 member needs v9+


# -- downgrade ---------------------------------------------------------------------------------


def assert_replays_to(h: MigrationHarness, classic: ClassicGroup) -> None:
    """Replaying every record written gives the same classic group."""
    rebuilt = h.replay_into_new(through_json=False).groups["g"]
    assert isinstance(rebuilt, ClassicGroup)
    assert group_metadata_value(rebuilt) == group_metadata_value(classic)


def test_the_last_kip_848_member_leaving_downgrades_to_a_classic_group() -> None:
    h, (a, b) = upgraded()
    group = h.group()
    epoch = group.group_epoch
    targets = {m: sorted(group.target_of(m)[h.topic_id("foo")]) for m in (a, b)}
    h.hb("k", -1)
    classic = h.coordinator.groups["g"]
    assert isinstance(classic, ClassicGroup)
    assert set(classic.members) == {a, b}
    assert classic.generation_id == epoch
    assert classic.protocol_type == "consumer" and classic.protocol_name == "cooperative-sticky"
    assert classic.state_name() == "PreparingRebalance"
    for m in (a, b):
        assert classic.members[m].session_timeout_ms == 45000
        decoded = MigrationHarness.decoded_bytes(classic.members[m].assignment)
        assert decoded == tps(*targets[m])
    names = [(r.key.record_name, r.value is None) for r in h.last_records]
    assert names[-2:] == [("ConsumerGroupMetadata", True), ("GroupMetadata", False)]
    # Replaying every record gives the same classic group (Stable, as loaded groups are).
    assert_replays_to(h, classic)
    # The classic members rejoin the classic group.
    assert h.cheartbeat(a, epoch) == ErrorCode.REBALANCE_IN_PROGRESS


def test_a_fenced_kip_848_member_downgrades_too() -> None:
    h, (a, b) = upgraded()
    for _ in range(2):
        h.advance(20000)
        for m in (a, b):
            h.cheartbeat(m, h.group().members[m].member_epoch)
    h.advance(20000)  # k's session timeout (45 s) has passed; a and b are alive
    assert isinstance(h.coordinator.groups["g"], ClassicGroup)
    reasons = [e.reason for e in h.events_of(MemberLeft)]
    assert reasons == ["session_timeout"]


@pytest.mark.parametrize("policy", ["UPGRADE", "DISABLED"])
def test_no_downgrade_unless_the_policy_allows_it(policy: str) -> None:
    h, (a, b) = upgraded(group_consumer_migration_policy="BIDIRECTIONAL")
    h.coordinator.config = replace(h.coordinator.config, group_consumer_migration_policy=policy)
    h.hb("k", -1)
    group = h.coordinator.groups["g"]
    assert isinstance(group, ConsumerGroup) and set(group.members) == {a, b}


def test_no_downgrade_while_another_kip_848_member_remains() -> None:
    h, (_a, _b) = upgraded()
    h.join("k2")
    h.hb("k", -1)
    assert isinstance(h.coordinator.groups["g"], ConsumerGroup)
    h.hb("k2", -1)
    assert isinstance(h.coordinator.groups["g"], ClassicGroup)


def static_kip_848_member_replaced(
    topics: tuple[str, ...] = ("foo",), policy: str = "BIDIRECTIONAL"
) -> tuple[MigrationHarness, list[str], list[int], JoinGroupResponse, int]:
    """The classic group a=[0, 1], b=[2] upgraded by a *static* KIP-848 member "k"
    (instance "ik"), settled; then instance "ik" restarts as a classic consumer and joins
    with ``topics``, under migration ``policy``. Returns the harness, (a, b), k's
    partitions, the join reply, and how many events there were before that join."""
    h = MigrationHarness(topics={"foo": 3, "bar": 1})
    ids = h.stable_classic_group([[0, 1], [2]])
    assert h.join("k", instance_id="ik").error_code == ErrorCode.NONE
    for _ in range(6):  # a and b give up what k is to get; k takes it
        for m in ids:
            h.cjoin(m, tps(*h.parts(m)))
            h.csync(m, h.group().members[m].member_epoch)
        h.hb("k", h.group().members["k"].member_epoch, h.parts("k"))
    k_parts = h.parts("k")
    assert k_parts, "k holds partitions before it is replaced"
    h.coordinator.config = replace(h.coordinator.config, group_consumer_migration_policy=policy)
    request = replace(
        h.join_request(instance_id="ik"),
        protocols=(MigrationHarness.protocol(tps(*k_parts), topics=topics),),
    )
    before = len(h.events)
    reply = h.submit(request).response
    assert isinstance(reply, JoinGroupResponse)
    return h, ids, k_parts, reply, before


def test_a_classic_static_member_replacing_the_last_kip_848_member_downgrades() -> None:
    """Kafka ``validateOnlineDowngradeWithReplacedMember``: the group becomes classic with
    the replacement in the replaced member's place; nobody left, so no rebalance."""
    h, (a, b), k_parts, reply, before = static_kip_848_member_replaced()
    assert reply.error_code == ErrorCode.NONE
    classic = h.coordinator.groups["g"]
    assert isinstance(classic, ClassicGroup)
    assert set(classic.members) == {a, b, reply.member_id}
    assert classic.members[reply.member_id].group_instance_id == "ik"
    assert classic.state_name() == "Stable"
    since = h.events[before:]
    assert [e.kind for e in since if e.kind == "rebalance_started"] == []
    left = [(e.member_id, e.reason) for e in since if isinstance(e, MemberLeft)]
    assert left == [("k", "replaced")]
    # The joining member syncs with the classic group and gets what k held; the others
    # carry on with no rebalance in progress.
    synced = h.csync(reply.member_id, classic.generation_id)
    assert synced.error_code == ErrorCode.NONE
    assert MigrationHarness.decoded(synced) == tps(*k_parts)
    for m in (a, b):
        assert h.cheartbeat(m, classic.generation_id) == ErrorCode.NONE
    assert_replays_to(h, classic)


def test_a_replacement_with_another_subscription_downgrades_and_rebalances() -> None:
    h, _ids, _k_parts, reply, _before = static_kip_848_member_replaced(topics=("foo", "bar"))
    assert reply.error_code == ErrorCode.NONE
    classic = h.coordinator.groups["g"]
    assert isinstance(classic, ClassicGroup)
    assert classic.state_name() == "PreparingRebalance"


@pytest.mark.parametrize("policy", ["UPGRADE", "DISABLED"])
def test_no_downgrade_on_replacement_unless_the_policy_allows_it(policy: str) -> None:
    h, ids, _k_parts, reply, _before = static_kip_848_member_replaced(policy=policy)
    assert reply.error_code == ErrorCode.NONE
    group = h.coordinator.groups["g"]
    assert isinstance(group, ConsumerGroup)
    assert set(group.members) == {*ids, reply.member_id}


def test_no_downgrade_when_a_classic_static_member_replaces_a_classic_one() -> None:
    """Only the last KIP-848 member's replacement downgrades (Kafka
    ``allMembersUseClassicProtocolExcept``): k stays, a classic static member is replaced."""
    h = MigrationHarness()
    h.stable_classic_group([[0, 1], [2]])
    h.join("k")
    first = h.cjoin("", instance_id="is")
    assert first.error_code == ErrorCode.NONE
    second = h.cjoin("", instance_id="is")
    assert second.error_code == ErrorCode.NONE and second.member_id != first.member_id
    assert isinstance(h.coordinator.groups["g"], ConsumerGroup)


def test_a_classic_join_into_an_empty_consumer_group_makes_it_classic() -> None:
    h = MigrationHarness()
    h.join("k")
    h.hb("k", -1)
    assert h.coordinator.groups["g"].state_name() == "Empty"
    join = h.submit(h.join_request(), JoinGroupResponse)
    h.advance(1)
    assert join.response.error_code == ErrorCode.NONE
    assert isinstance(h.coordinator.groups["g"], ClassicGroup)


# -- static members ----------------------------------------------------------------------------


def test_a_kip_848_static_member_replaces_its_classic_predecessor_without_a_rebalance() -> None:
    """Kafka 3.8+: a static member held by a classic member is replaced at once (no
    UNRELEASED_INSTANCE_ID: the classic member never sends a leave with epoch -2)."""
    h = MigrationHarness()
    calls = [h.submit(h.join_request(instance_id=f"i{n}"), JoinGroupResponse) for n in range(2)]
    h.advance(1)
    joins = [c.response for c in calls]
    a, b = (j.member_id for j in joins)
    leader = joins[0].leader
    assignments = tuple(
        SyncGroupRequestAssignment(m, protocol.encode_assignment(Assignment(tps(*ps))))
        for m, ps in ((a, [0, 1]), (b, [2]))
    )
    h.submit(SyncGroupRequest("g", 1, leader, group_instance_id=None, assignments=assignments))
    response = h.join("k", instance_id="i0")
    assert response.error_code == ErrorCode.NONE, response.error_message
    group = h.group()
    assert a not in group.members and set(group.members) == {"k", b}
    assert group.group_epoch == 1  # no rebalance: the new member takes a's place
    assert response.member_epoch == 1 and h.parts("k") == [0, 1]
    assert not group.members["k"].use_classic_protocol
    assert h.rebuilt() == group


def test_a_classic_static_member_rejoining_with_a_new_id_replaces_itself() -> None:
    h, (a, _b) = upgraded()
    h.cleave(a)
    c = h.cjoin("", [], instance_id="s1").member_id
    parts = h.parts(c)
    epoch = h.group().group_epoch
    again = h.cjoin("", [], instance_id="s1")
    assert again.error_code == ErrorCode.NONE and again.member_id != c
    group = h.group()
    assert c not in group.members and again.member_id in group.members
    assert h.parts(again.member_id) == parts and group.group_epoch == epoch
    # The old instance is fenced.
    assert h.cjoin(c, [], instance_id="s1").error_code == ErrorCode.FENCED_INSTANCE_ID
    assert h.rebuilt() == group
