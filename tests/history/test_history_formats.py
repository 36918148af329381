"""The table of Kafka's log line formats: every row parses its own wording, and only its own."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from regroup.history import formats
from regroup.history.formats import FORMATS, Family, Kind, LogFormat, parse, render, render_line

# One line per row, in that version's wording, written as the Kafka class named in the row
# writes it (prefix included). Keyed by (family, kind, first version).
SAMPLES: dict[tuple[str, ...], str] = {
    ("scala-group-coordinator", "rebalance_preparing", "2.1"): (
        "[GroupCoordinator 0]: Preparing to rebalance group group02 in state PreparingRebalance "
        "with old generation 1 (__consumer_offsets-43) (reason: removing member "
        "consumer-group02-1-6cb0 on LeaveGroup)"
    ),
    ("scala-group-coordinator", "rebalance_preparing", "1.1"): (
        "[GroupCoordinator 2]: Preparing to rebalance group orders with old generation 14 "
        "(__consumer_offsets-7)"
    ),
    ("scala-group-coordinator", "group_stabilized", "2.8"): (
        "[GroupCoordinator 0]: Stabilized group test-consumer-group generation 1 "
        "(__consumer_offsets-31) with 1 members"
    ),
    ("scala-group-coordinator", "group_stabilized", "1.1"): (
        "[GroupCoordinator 1]: Stabilized group orders generation 15 (__consumer_offsets-7)"
    ),
    ("scala-group-coordinator", "assignment_received", "3.0"): (
        "[GroupCoordinator 0]: Assignment received from leader consumer-g-1-9a1b for group g "
        "for generation 3. The group has 2 members, 0 of which are static."
    ),
    ("scala-group-coordinator", "assignment_received", "2.8"): (
        "[GroupCoordinator 0]: Assignment received from leader for group g for generation 3. "
        "The group has 2 members, 1 of which are static."
    ),
    ("scala-group-coordinator", "assignment_received", "1.1"): (
        "[GroupCoordinator 1]: Assignment received from leader for group orders for generation 15"
    ),
    ("scala-group-coordinator", "member_failed", "1.1"): (
        "[GroupCoordinator 1]: Member consumer-1-6f2a in group lab has failed, removing it from "
        "the group"
    ),
    ("scala-group-coordinator", "member_left", "3.2"): (
        "[GroupCoordinator 0]: Member MemberMetadata(memberId=consumer-g-1-aa, "
        "groupInstanceId=None, clientId=consumer-g-1, clientHost=/10.0.0.7, "
        "sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range, "
        "cooperative-sticky)) has left group g through explicit `LeaveGroup`; client reason: "
        "the consumer is being closed"
    ),
    ("scala-group-coordinator", "member_left", "3.0"): (
        "[GroupCoordinator 0]: Member MemberMetadata(memberId=consumer-g-1-aa, "
        "groupInstanceId=Some(app-0), clientId=consumer-g-1, clientHost=/10.0.0.7, "
        "sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range)) "
        "has left group g through explicit `LeaveGroup` request"
    ),
    ("scala-group-coordinator", "member_left", "2.4"): (
        "[GroupCoordinator 0]: Member[group.instance.id None, member.id "
        "consumer-group02-1-6cb0c9e9] in group group02 has left, removing it from the group"
    ),
    ("scala-group-coordinator", "member_left", "2.2"): (
        "[GroupCoordinator 3]: Member consumer-7-1d2e in group etl has left, removing it from "
        "the group"
    ),
    ("scala-group-coordinator", "pending_member_left", "3.0"): (
        "[GroupCoordinator 0]: Pending member with memberId=consumer-g-2-bb has left group g "
        "through explicit `LeaveGroup` request"
    ),
    ("scala-group-coordinator", "pending_member_expired", "2.4"): (
        "[GroupCoordinator 0]: Pending member consumer-g-2-bb in group g has been removed after "
        "session timeout expiration."
    ),
    ("scala-group-coordinator", "group_empty", "1.1"): (
        "[GroupCoordinator 0]: Group group02 with generation 2 is now empty (__consumer_offsets-43)"
    ),
    ("scala-group-coordinator", "static_member_replaced", "3.0"): (
        "[GroupCoordinator 1]: Static member with groupInstanceId=pay-0 and unknown member id "
        "joins group payments in Stable state. Replacing previously mapped member "
        "consumer-pay-0-11 with this groupInstanceId."
    ),
    ("scala-group-coordinator", "static_member_replaced", "2.4"): (
        "[GroupCoordinator 1]: Static member Some(pay-0) with unknown member id rejoins, "
        "assigning new member id consumer-pay-0-12, while old member consumer-pay-0-11 will be "
        "removed."
    ),
    ("scala-group-coordinator", "static_member_joined", "3.0"): (
        "[GroupCoordinator 1]: Static member with groupInstanceId=pay-0 and unknown member id "
        "joins group payments in Empty state. Created a new member id consumer-pay-0-11 for "
        "this member and add to the group."
    ),
    ("scala-group-coordinator", "dynamic_member_pending", "3.0"): (
        "[GroupCoordinator 0]: Dynamic member with unknown member id joins group test-group in "
        "Empty state. Created a new member id console-consumer-1-5f and request the member to "
        "rejoin with this id."
    ),
    ("scala-group-coordinator", "dynamic_member_joined", "3.0"): (
        "[GroupCoordinator 0]: Dynamic Member with unknown member id joins group test-group in "
        "Empty state. Created a new member id console-consumer-1-5f for this member and add to "
        "the group."
    ),
    ("scala-group-coordinator", "rebalance_stalled", "2.4"): (
        "[GroupCoordinator 2]: Group orders could not complete rebalance because no members "
        "rejoined"
    ),
    ("scala-group-coordinator", "unjoined_members_removed", "3.0"): (
        "[GroupCoordinator 2]: Group orders removed dynamic members who haven't joined: "
        "Set(consumer-orders-3-aa)"
    ),
    ("scala-group-coordinator", "group_loaded", "1.1"): (
        "[GroupCoordinator 2]: Loading group metadata for orders with generation 15"
    ),
    ("scala-group-coordinator", "group_unloaded", "1.1"): (
        "[GroupCoordinator 1]: Unloading group metadata for orders with generation 15"
    ),
    ("scala-group-coordinator", "coordinator_elected", "2.8"): (
        "[GroupCoordinator 2]: Elected as the group coordinator for partition 7 in epoch 3"
    ),
    ("scala-group-coordinator", "coordinator_resigned", "2.8"): (
        "[GroupCoordinator 1]: Resigned as the group coordinator for partition 7 in epoch "
        "OptionalInt[3]"
    ),
    ("scala-group-coordinator", "partition_loaded", "2.0"): (
        "[GroupMetadataManager brokerId=2] Finished loading offsets and group metadata from "
        "__consumer_offsets-7 in 42 milliseconds, of which 1 milliseconds was spent in the "
        "scheduler."
    ),
    ("java-group-coordinator", "rebalance_preparing", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] Preparing to rebalance "
        "group g in state PreparingRebalance with old generation 4 (reason: Adding new member "
        "consumer-g-1-aa with group instance id null; client reason: not provided)."
    ),
    ("java-group-coordinator", "group_stabilized", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] Stabilized group g "
        "generation 5 with 3 members."
    ),
    ("java-group-coordinator", "assignment_received", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] Assignment received from "
        "leader consumer-g-1-aa for group g for generation 5. The group has 3 members, 3 of "
        "which are static."
    ),
    ("java-group-coordinator", "member_failed", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] Member consumer-g-2-bb in "
        "group g has failed, removing it from the group."
    ),
    ("java-group-coordinator", "member_left", "4.0", "dynamic"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] [GroupId g] Dynamic "
        "member consumer-g-2-bb has left group through explicit `LeaveGroup` request; client "
        "reason: the consumer is being closed"
    ),
    ("java-group-coordinator", "member_left", "3.8", "dynamic"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] [Group g] Dynamic Member "
        "consumer-g-2-bb has left group through explicit `LeaveGroup` request; client reason: "
        "the consumer unsubscribed from all topics"
    ),
    ("java-group-coordinator", "member_left", "4.0", "static"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] [GroupId g] Static "
        "member pay-0-11 with instance id pay-0 has left group through explicit `LeaveGroup` "
        "request; client reason: the consumer is being closed"
    ),
    ("java-group-coordinator", "member_left", "3.8", "static"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] [Group g] Static Member "
        "pay-0-11 with instance id pay-0 has left group through explicit `LeaveGroup` request; "
        "client reason: the consumer is being closed"
    ),
    ("java-group-coordinator", "member_left", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] [Group g] Member "
        "consumer-g-2-bb has left group through explicit `LeaveGroup` request; client reason: "
        "not provided"
    ),
    ("java-group-coordinator", "pending_member_left", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] [Group g] Pending member "
        "consumer-g-2-bb has left group through explicit `LeaveGroup` request; client reason: "
        "not provided"
    ),
    ("java-group-coordinator", "pending_member_expired", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] Pending member "
        "consumer-g-2-bb in group g has been removed after session timeout expiration."
    ),
    ("java-group-coordinator", "group_empty", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] Group g with generation "
        "6 is now empty."
    ),
    ("java-group-coordinator", "static_member_replaced", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] Static member with "
        "groupInstanceId=pay-0 and unknown member id joins group payments in Stable state. "
        "Replacing previously mapped member pay-0-11 with this groupInstanceId."
    ),
    ("java-group-coordinator", "static_member_joined", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] Static member with "
        "groupInstanceId=pay-0 and unknown member id joins group payments in Empty state. "
        "Created a new member id pay-0-11 for this member and added to the group."
    ),
    ("java-group-coordinator", "dynamic_member_pending", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] Dynamic member with "
        "unknown member id joins group g in Empty state. Created a new member id "
        "consumer-g-1-aa and requesting the member to rejoin with this id."
    ),
    ("java-group-coordinator", "dynamic_member_joined", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] Dynamic member with "
        "unknown member id joins group g in state Empty. Created a new member id "
        "consumer-g-1-aa and added the member to the group."
    ),
    ("java-group-coordinator", "pending_member_joined", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] Pending dynamic member "
        "with id consumer-g-1-aa joins group g in PreparingRebalance state. Adding to the "
        "group now."
    ),
    ("java-group-coordinator", "rebalance_stalled", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] Group g could not "
        "complete rebalance because no members rejoined."
    ),
    ("java-group-coordinator", "unjoined_members_removed", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] Group g removed dynamic "
        "members who haven't joined: [consumer-g-3-cc]"
    ),
    ("java-group-coordinator", "group_loaded", "3.7"): (
        "[GroupCoordinator id=2 topic=__consumer_offsets partition=12] Loaded classic group g "
        "with 3 members."
    ),
    ("java-group-coordinator", "group_unloaded", "3.8"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] [GroupId=g] Unloading "
        "group metadata for generation 6."
    ),
    ("java-group-coordinator", "consumer_member_joined", "4.0"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Member "
        "Xk2-pQ joins the consumer group using the consumer protocol."
    ),
    ("java-group-coordinator", "consumer_member_joined", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Member "
        "Xk2-pQ joins the consumer group."
    ),
    ("java-group-coordinator", "consumer_static_member_joined", "4.0"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Static "
        "member Xk2-pQ with instance id orders-0 joins the consumer group using the classic "
        "protocol."
    ),
    ("java-group-coordinator", "consumer_static_member_joined", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Static "
        "member Xk2-pQ with instance id orders-0 joins the consumer group."
    ),
    ("java-group-coordinator", "consumer_static_member_replaced", "4.0"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Static "
        "member with instance id orders-0 re-joins the consumer group using the consumer "
        "protocol. Created a new member Yz9 to replace the existing member Xk2-pQ."
    ),
    ("java-group-coordinator", "consumer_static_member_replaced", "3.8"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Static "
        "member with unknown member id and instance id orders-0 re-joins the consumer group. "
        "Created a new member Yz9 to replace the existing member Xk2-pQ."
    ),
    ("java-group-coordinator", "consumer_static_member_replaced", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Static "
        "member Xk2-pQ with instance id orders-0 re-joins the consumer group."
    ),
    ("java-group-coordinator", "consumer_static_member_left_temporarily", "4.0"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Static "
        "member Xk2-pQ with instance id orders-0 temporarily left the consumer group."
    ),
    ("java-group-coordinator", "consumer_static_member_left_temporarily", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Static "
        "Member Xk2-pQ with instance id orders-0 temporarily left the consumer group."
    ),
    ("java-group-coordinator", "consumer_static_member_left", "4.0"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Static "
        "member Xk2-pQ with instance id orders-0 left the consumer group."
    ),
    ("java-group-coordinator", "consumer_static_member_left", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Static "
        "Member Xk2-pQ with instance id orders-0 left the consumer group."
    ),
    ("java-group-coordinator", "consumer_member_left", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Member "
        "Xk2-pQ left the consumer group."
    ),
    ("java-group-coordinator", "consumer_member_fenced", "3.8"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Member "
        "Xk2-pQ fenced from the group because the member session expired."
    ),
    ("java-group-coordinator", "consumer_member_fenced", "3.7", "session"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Member "
        "Xk2-pQ fenced from the group because its session expired."
    ),
    ("java-group-coordinator", "group_epoch_bumped", "4.1"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Bumped "
        "group epoch to 12 with metadata hash -7071590244163283415."
    ),
    ("java-group-coordinator", "group_epoch_bumped", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Bumped "
        "group epoch to 12."
    ),
    ("java-group-coordinator", "target_assignment_computed", "3.9"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Computed "
        "a new target assignment for epoch 12 with 'uniform' assignor in 3ms."
    ),
    ("java-group-coordinator", "target_assignment_computed", "3.8"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Computed "
        "a new target assignment for epoch 12 with 'range' assignor in 1ms: "
        "{Xk2-pQ=MemberAssignment(partitions={Tm5=[0, 1]})}."
    ),
    ("java-group-coordinator", "target_assignment_computed", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Computed "
        "a new target assignment for epoch 12 with 'range' assignor: "
        "{Xk2-pQ=MemberAssignment(partitions={Tm5=[0, 1]})}."
    ),
    ("java-group-coordinator", "member_assignment_updated", "3.9"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Member "
        "Xk2-pQ new assignment state: epoch=12, previousEpoch=11, state=STABLE, "
        "assignedPartitions=[orders-0, orders-1]."
    ),
    ("java-group-coordinator", "member_assignment_updated", "3.8"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Member "
        "Xk2-pQ new assignment state: epoch=12, previousEpoch=11, state=UNREVOKED_PARTITIONS, "
        "assignedPartitions=[orders-0] and revokedPartitions=[orders-1]."
    ),
    ("java-group-coordinator", "member_assignment_updated", "3.7"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Member "
        "Xk2-pQ transitioned from CurrentAssignmentBuilder(memberEpoch=11) to "
        "CurrentAssignmentBuilder(memberEpoch=12)."
    ),
    ("java-group-coordinator", "consumer_member_fenced", "3.7", "revocation"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId orders] Member "
        "Xk2-pQ fenced from the group because it failed to revoke partitions within 300000ms."
    ),
    ("java-group-coordinator", "consumer_group_loaded", "3.7"): (
        "[GroupCoordinator id=2 topic=__consumer_offsets partition=3] Loaded consumer group "
        "orders with 4 members."
    ),
    ("java-group-coordinator", "consumer_group_unloaded", "3.8"): (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId=orders] Unloaded "
        "group metadata for group epoch 12."
    ),
    ("java-consumer-client", "client_joining", "2.0"): (
        "[Consumer clientId=consumer-orders-1, groupId=orders] (Re-)joining group"
    ),
    ("java-consumer-client", "client_joined", "2.8"): (
        "[Consumer clientId=consumer-orders-1, groupId=orders] Successfully joined group with "
        "generation Generation{generationId=7, memberId='consumer-orders-1-aa', "
        "protocol='range'}"
    ),
    ("java-consumer-client", "client_joined", "2.0"): (
        "[Consumer clientId=consumer-1, groupId=orders] Successfully joined group with generation 7"
    ),
    ("java-consumer-client", "client_synced", "2.8"): (
        "[Consumer clientId=consumer-orders-1, groupId=orders] Successfully synced group in "
        "generation Generation{generationId=7, memberId='consumer-orders-1-aa', "
        "protocol='range'}"
    ),
    ("java-consumer-client", "client_rejoin_requested", "3.0"): (
        "[Consumer clientId=consumer-orders-1, groupId=orders] Request joining group due to: "
        "group is already rebalancing"
    ),
    ("java-consumer-client", "client_leaving", "2.4"): (
        "[Consumer clientId=consumer-orders-1, groupId=orders] Member consumer-orders-1-aa "
        "sending LeaveGroup request to coordinator broker-1:9092 (id: 2147483646 rack: null) "
        "due to consumer poll timeout has expired."
    ),
    ("java-consumer-client", "client_poll_timeout", "3.0"): (
        "[Consumer clientId=consumer-orders-1, groupId=orders] consumer poll timeout has "
        "expired. This means the time between subsequent calls to poll() was longer than the "
        "configured max.poll.interval.ms, which typically implies that the poll loop is "
        "spending too much time processing messages. You can address this either by "
        "increasing max.poll.interval.ms or by reducing the maximum size of batches returned "
        "in poll() with max.poll.records."
    ),
    ("java-consumer-client", "client_assignment", "2.4"): (
        "[Consumer clientId=consumer-orders-1, groupId=orders] Notifying assignor about the new "
        "Assignment(partitions=[orders-0, orders-1])"
    ),
}


def _key(row: LogFormat) -> tuple[str, ...]:
    key = (str(row.family), str(row.kind), row.first)
    return (*key, row.variant) if row.variant else key


def test_every_row_has_one_sample_and_every_sample_a_row() -> None:
    rows = {_key(row) for row in FORMATS}
    assert len(rows) == len(FORMATS), "two rows share family, kind and first version"
    assert rows == set(SAMPLES)


@pytest.mark.parametrize("row", FORMATS, ids=lambda row: "/".join(_key(row)))
def test_each_sample_parses_to_its_own_row(row: LogFormat) -> None:
    found = parse(SAMPLES[_key(row)])
    assert found is not None
    assert found.format is row


def test_fields_come_out_typed() -> None:
    found = parse(SAMPLES[("scala-group-coordinator", "rebalance_preparing", "2.1")])
    assert found is not None
    assert found.fields == {
        "broker_id": 0,
        "group_id": "group02",
        "state": "PreparingRebalance",
        "generation": 1,
        "offsets_partition": 43,
        "reason": "removing member consumer-group02-1-6cb0 on LeaveGroup",
    }
    java = parse(SAMPLES[("java-group-coordinator", "group_epoch_bumped", "4.1")])
    assert java is not None
    assert java.fields["metadata_hash"] == -7071590244163283415
    assert java.fields["offsets_partition"] == 3


def test_lines_of_no_family_or_an_unknown_wording_are_not_recognised() -> None:
    assert parse("[ReplicaManager broker=1] Stopped fetchers") is None
    assert parse("[GroupCoordinator 1]: Something Kafka never wrote about group g") is None
    # A truncated line stops mid-template: no row matches it whole.
    truncated = SAMPLES[("scala-group-coordinator", "group_stabilized", "2.8")][:-12]
    assert parse(truncated) is None


def test_render_picks_the_newest_wording_or_the_version_asked() -> None:
    common: dict[str, Any] = {
        "broker_id": 1,
        "offsets_partition": 3,
        "group_id": "orders",
        "epoch": 5,
    }
    assert render(Kind.GROUP_EPOCH_BUMPED, Family.JAVA, metadata_hash=9, **common).endswith(
        "Bumped group epoch to 5 with metadata hash 9."
    )
    assert render(Kind.GROUP_EPOCH_BUMPED, Family.JAVA, version="4.0", **common).endswith(
        "[GroupId orders] Bumped group epoch to 5."
    )
    # Static or dynamic: two rows of one kind, told apart by the fields given.
    leave: dict[str, Any] = {
        "broker_id": 1,
        "offsets_partition": 3,
        "group_id": "g",
        "member_id": "m",
    }
    assert "Dynamic member m" in render(Kind.MEMBER_LEFT, Family.JAVA, reason="r", **leave)
    static = render(Kind.MEMBER_LEFT, Family.JAVA, reason="r", instance_id="i", **leave)
    assert "Static member m with instance id i" in static
    with pytest.raises(KeyError, match="field sets"):
        render(Kind.MEMBER_LEFT, Family.JAVA, **leave)
    with pytest.raises(KeyError, match="no format"):
        render(Kind.GROUP_EPOCH_BUMPED, Family.SCALA, **common)


def test_render_line_is_kafkas_log4j_layout() -> None:
    line = render_line(
        Kind.GROUP_STABILIZED,
        Family.JAVA,
        1_764_684_191_123,
        broker_id=1,
        offsets_partition=12,
        group_id="g",
        generation=5,
        members=3,
    )
    assert line == (
        "[2025-12-02 14:03:11,123] INFO [GroupCoordinator id=1 topic=__consumer_offsets "
        "partition=12] Stabilized group g generation 5 with 3 members. "
        "(org.apache.kafka.coordinator.group.GroupMetadataManager)"
    )


def test_versions_held() -> None:
    row = next(
        r for r in FORMATS if _key(r) == ("scala-group-coordinator", "group_stabilized", "2.8")
    )
    assert row.versions == "2.8-3.9"
    assert row.holds("2.8") and row.holds("3.9.1") and not row.holds("2.7") and not row.holds("4.0")
    newest = next(
        r for r in FORMATS if _key(r) == ("java-group-coordinator", "group_stabilized", "3.7")
    )
    assert newest.versions == "3.7+" and newest.holds(formats.NEWEST_CHECKED)


_IDS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,30}", fullmatch=True)
_TEXT = st.from_regex(r"[ -~]{0,40}", fullmatch=True).map(str.strip)
_SPECIAL = {
    "state": st.sampled_from(["Empty", "PreparingRebalance", "CompletingRebalance", "Stable"]),
    "protocol": st.sampled_from(["classic", "consumer"]),
    "assignor": st.sampled_from(["uniform", "range"]),
    "generation_text": st.builds(
        "Generation{{generationId={}, memberId='{}', protocol='range'}}".format,
        st.integers(-1, 10**6),
        _IDS,
    ),
    "client_host": st.from_regex(r"/[0-9.]{1,15}", fullmatch=True),
}


def _strategy(name: str) -> st.SearchStrategy[object]:
    if name in formats.INT_FIELDS:
        return st.integers(-(2**63), 2**63 - 1)
    if name in _SPECIAL:
        return _SPECIAL[name]
    if formats.FIELD_PATTERNS.get(name) in {r".*", r".*?"}:
        return _TEXT
    return _IDS


@given(data=st.data())
def test_render_then_parse_returns_the_fields_for_every_row(data: st.DataObject) -> None:
    row = data.draw(st.sampled_from(FORMATS))
    values = {name: data.draw(_strategy(name), label=name) for name in row.fields}
    found = parse(row.render(**values))
    assert found is not None
    assert found.format.kind == row.kind
    if found.format is row:
        assert found.fields == values


def test_docs_list_every_row_with_its_versions() -> None:
    from pathlib import Path

    docs = (Path(__file__).parents[2] / "docs" / "history.md").read_text(encoding="utf-8")
    for row in FORMATS:
        template = row.template.replace("|", "\\|")
        assert f"| {row.family} | {row.kind} | {row.versions} | `{template}` |" in docs, row
