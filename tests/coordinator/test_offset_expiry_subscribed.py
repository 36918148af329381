"""Offsets of topics no member subscribes to expire in a group with members.

Kafka ``OffsetMetadataManager.cleanupExpiredOffsets`` expires every offset of a
topic the group is not subscribed to (``Group.isSubscribedToTopic``) once the
group's ``offsetExpirationCondition`` says so: always for a KIP-848 group, from
the commit time (``ConsumerGroup.offsetExpirationCondition``); for a classic
group only when it is Stable, uses protocol type ``consumer`` and its members'
subscribed topics could be read (``ClassicGroup.offsetExpirationCondition``).
The group itself stays while it has members.

The clock is moved without firing timers so members do not time out: only the
expiry pass runs.
"""

from __future__ import annotations

from typing import Any

from regroup.consumer.group.group import ConsumerGroup
from regroup.model import TopicPartition
from regroup.model.errors import ErrorCode
from regroup.model.requests.classic import JoinGroupResponse
from regroup.records.offsets import OffsetCommitKey
from tests.coordinator.migration_harness import MigrationHarness

RETENTION_MS = 60_000  # offsets.retention.minutes = 1
FOO, BAR = TopicPartition("foo", 0), TopicPartition("bar", 0)


def harness(**fields: Any) -> MigrationHarness:
    return MigrationHarness(
        topics={"foo": 3, "bar": 1, "baz": 1}, offsets_retention_minutes=1, **fields
    )


def commit(h: MigrationHarness, member: str, epoch: int, *tps: TopicPartition) -> None:
    reply = h.offset_commit(
        "g",
        {tp: 7 for tp in tps},
        member_id=member,
        generation_id_or_member_epoch=epoch,
        supports_member_epoch=False,
    )
    assert all(p.error_code == ErrorCode.NONE for t in reply.topics for p in t.partitions)


def expire(h: MigrationHarness) -> list[TopicPartition]:
    """One expiry pass; the partitions it tombstoned."""
    result = h.absorb(h.coordinator.expire_offsets(h.now_ms))
    tombstoned = []
    for record in result.records:
        assert record.value is None
        if isinstance(record.key, OffsetCommitKey):
            tombstoned.append(TopicPartition(record.key.topic, record.key.partition))
    return tombstoned


def committed(h: MigrationHarness) -> set[TopicPartition]:
    return set(h.coordinator.offsets.by_group.get("g", {}))


# -- classic groups --------------------------------------------------------------------------


def test_a_stable_classic_group_loses_the_offsets_of_topics_it_no_longer_reads() -> None:
    h = harness()
    leader, _ = h.stable_classic_group([[0, 1], [2]])  # both subscribe to foo only
    commit(h, leader, 1, FOO, BAR)
    h.clock.advance(RETENTION_MS - 1)
    assert expire(h) == []
    h.clock.advance(1)
    assert expire(h) == [BAR]
    assert committed(h) == {FOO}
    assert h.coordinator.groups["g"].state_name() == "Stable"
    # Nothing else ages out later: foo is subscribed.
    h.clock.advance(10 * RETENTION_MS)
    assert expire(h) == [] and committed(h) == {FOO}
    # The tombstone replays: a rebuilt coordinator has foo's offset only.
    assert set(h.replay_into_new().coordinator.offsets.by_group["g"]) == {FOO}


def test_a_classic_group_ages_each_unsubscribed_offset_from_its_own_commit() -> None:
    h = harness()
    leader, _ = h.stable_classic_group([[0, 1], [2]])
    commit(h, leader, 1, BAR)
    h.clock.advance(RETENTION_MS // 2)
    commit(h, leader, 1, TopicPartition("baz", 0))
    h.clock.advance(RETENTION_MS // 2)
    assert expire(h) == [BAR]
    h.clock.advance(RETENTION_MS // 2)
    assert expire(h) == [TopicPartition("baz", 0)]


def test_a_classic_group_mid_rebalance_keeps_every_offset() -> None:
    h = harness()
    leader, _ = h.stable_classic_group([[0, 1], [2]])
    commit(h, leader, 1, BAR)
    h.submit(h.join_request())  # a new member: PreparingRebalance, its join parked
    assert h.coordinator.groups["g"].state_name() == "PreparingRebalance"
    h.clock.advance(RETENTION_MS)
    assert expire(h) == []


def test_a_stable_classic_group_of_another_protocol_type_keeps_every_offset() -> None:
    # Kafka: the Stable rule needs protocol type "consumer" (usesConsumerGroupProtocol).
    h = harness()
    calls = [h.submit(h.join_request(protocol_type="connect"), JoinGroupResponse) for _ in range(2)]
    h.advance(1)
    joins = [c.response for c in calls]
    leader = joins[0].leader
    for member in sorted((j.member_id for j in joins), key=lambda m: m != leader):
        h.sync_group("g", member, 1, protocol_type="connect")
    assert h.coordinator.groups["g"].state_name() == "Stable"
    commit(h, leader, 1, BAR)
    h.clock.advance(10 * RETENTION_MS)
    assert expire(h) == [] and committed(h) == {BAR}


def test_unreadable_subscriptions_keep_every_offset_of_a_stable_classic_group() -> None:
    # Kafka computeSubscribedTopics: a SchemaException leaves the topics unknown, and
    # the Stable rule then does not apply.
    h = harness()
    calls = [h.submit(h.join_request(), JoinGroupResponse) for _ in range(1)]
    h.advance(1)
    (member,) = [c.response.member_id for c in calls]
    h.csync(member, 1)
    group = h.classic_group("g")
    commit(h, member, 1, BAR)
    protocol = group.members[member].supported_protocols[0]
    group.members[member].supported_protocols = (
        type(protocol)(protocol.name, b"\x00\x00\xff", protocol.version),
    )
    h.clock.advance(10 * RETENTION_MS)
    assert expire(h) == [] and committed(h) == {BAR}


# -- KIP-848 groups --------------------------------------------------------------------------


def test_a_kip848_group_loses_the_offsets_of_topics_no_member_subscribes_to() -> None:
    h = harness()
    assert h.join("m1", ("foo",)).error_code == ErrorCode.NONE
    assert h.join("m2", ("foo", "baz")).error_code == ErrorCode.NONE
    epoch = h.group().members["m1"].member_epoch
    h.offset_commit(
        "g", {FOO: 1, BAR: 2, ("baz", 0): 3}, member_id="m1", generation_id_or_member_epoch=epoch
    )
    assert committed(h) == {FOO, BAR, TopicPartition("baz", 0)}
    h.clock.advance(RETENTION_MS - 1)
    assert expire(h) == []
    h.clock.advance(1)
    assert expire(h) == [BAR]
    assert isinstance(h.coordinator.groups["g"], ConsumerGroup)
    assert set(h.group().members) == {"m1", "m2"}
    # m2 leaves: nobody reads baz any more, and its offset is past the retention.
    h.hb("m2", -1, None)
    assert expire(h) == [TopicPartition("baz", 0)]
    assert committed(h) == {FOO}
    assert set(h.replay_into_new().coordinator.offsets.by_group["g"]) == {FOO}


def test_a_kip848_regex_subscription_keeps_the_topics_it_resolved() -> None:
    h = harness()
    assert h.join("m1", subscribed_topic_regex="ba.*").error_code == ErrorCode.NONE
    h.advance(1)  # the regex is resolved asynchronously
    h.hb("m1", h.group().members["m1"].member_epoch, {})
    assert "bar" in h.group().subscribed_topic_names()
    epoch = h.group().members["m1"].member_epoch
    h.offset_commit("g", {FOO: 1, BAR: 2}, member_id="m1", generation_id_or_member_epoch=epoch)
    h.clock.advance(RETENTION_MS)
    assert expire(h) == [FOO]
    assert committed(h) == {BAR}
