"""The coordinator's events as Kafka 4.x's log lines: each kind, its wording and its order."""

from __future__ import annotations

from regroup.brokerlog import KAFKA_VERSION, CoordinatorLog, LoadedGroup, coordinator_partition
from regroup.events import (
    Event,
    GenerationBumped,
    GroupEpochBumped,
    GroupStateChanged,
    MemberAssignmentChanged,
    MemberJoined,
    MemberLeft,
    MemberPending,
    RebalanceCompleted,
    RebalanceStarted,
    TargetAssignmentComputed,
    event_from_json_line,
)
from regroup.history.formats import Family, Kind, parse

G = "orders"
PREFIX = f"[GroupCoordinator id=3 topic=__consumer_offsets partition={coordinator_partition(G)}] "
LOGGER = "org.apache.kafka.coordinator.group.GroupMetadataManager"


def messages(events: list[Event]) -> list[str]:
    log = CoordinatorLog(broker_id=3)
    lines = list(log.lines_of(events))
    for line in lines:
        assert line.level == "INFO"
        assert line.logger == LOGGER
        assert line.message.startswith(PREFIX)
        # Every line reads back through the same table, as the kind it was written as.
        found = parse(line.message, Family.JAVA)
        assert found is not None, line.message
        assert str(found.format.kind) == line.kind
        assert found.format.holds(KAFKA_VERSION)
        assert found.fields["group_id"] == G
        assert found.fields["offsets_partition"] == coordinator_partition(G)
    return [line.message.removeprefix(PREFIX) for line in lines]


def joined(ts: int, member: str, protocol: str, instance: str | None = None) -> MemberJoined:
    return MemberJoined(
        ts_ms=ts, group_id=G, member_id=member, group_protocol=protocol, instance_id=instance
    )


def left(ts: int, member: str, protocol: str, reason: str, **more: object) -> MemberLeft:
    return MemberLeft(
        ts_ms=ts,
        group_id=G,
        member_id=member,
        group_protocol=protocol,
        reason=reason,
        **more,  # type: ignore[arg-type]
    )


def state(ts: int, old: str, new: str, protocol: str = "classic") -> GroupStateChanged:
    return GroupStateChanged(
        ts_ms=ts, group_id=G, group_protocol=protocol, old_state=old, new_state=new
    )


def test_a_classic_group_from_first_join_to_empty() -> None:
    events: list[Event] = [
        joined(1, "m1", "classic"),
        state(1, "Empty", "PreparingRebalance"),
        RebalanceStarted(
            ts_ms=1,
            group_id=G,
            generation=0,
            reason="Adding new member m1 with group instance id null; client reason: not provided",
        ),
        joined(2, "m2", "classic", "i2"),
        state(3, "PreparingRebalance", "CompletingRebalance"),
        GenerationBumped(
            ts_ms=3,
            group_id=G,
            generation=1,
            protocol_name="range",
            leader_id="m1",
            member_ids=("m1", "m2"),
        ),
        state(4, "CompletingRebalance", "Stable"),
        RebalanceCompleted(ts_ms=4, group_id=G, generation=1, assignment={"m1": (), "m2": ()}),
        # A static member back under a new id: one line, naming the id it replaces.
        left(5, "m2", "classic", "replaced", instance_id="i2"),
        joined(5, "m3", "classic", "i2"),
        left(6, "m1", "classic", "session_timeout"),
        left(
            7,
            "m3",
            "classic",
            "leave",
            instance_id="i2",
            reason_text="the consumer is being closed",
        ),
        joined(8, "m4", "classic"),
        left(9, "m4", "classic", "leave"),
        left(10, "m5", "classic", "rebalance_timeout"),
        left(10, "m6", "classic", "rebalance_timeout"),
        GenerationBumped(
            ts_ms=10, group_id=G, generation=2, protocol_name=None, leader_id="", member_ids=()
        ),
        # KIP-394: the id handed out, then the member joining with it.
        state(11, "PreparingRebalance", "Empty"),
        MemberPending(ts_ms=11, group_id=G, member_id="m7", client_id="app"),
        joined(12, "m7", "classic"),
    ]
    assert messages(events) == [
        "Dynamic member with unknown member id joins group orders in state Empty. Created a "
        "new member id m1 and added the member to the group.",
        "Preparing to rebalance group orders in state PreparingRebalance with old generation 0 "
        "(reason: Adding new member m1 with group instance id null; client reason: not provided).",
        "Static member with groupInstanceId=i2 and unknown member id joins group orders in "
        "PreparingRebalance state. Created a new member id m2 for this member and added to the "
        "group.",
        "Stabilized group orders generation 1 with 2 members.",
        "Assignment received from leader m1 for group orders for generation 1. The group has 2 "
        "members, 1 of which are static.",
        "Static member with groupInstanceId=i2 and unknown member id joins group orders in "
        "Stable state. Replacing previously mapped member m2 with this groupInstanceId.",
        "Member m1 in group orders has failed, removing it from the group.",
        "[GroupId orders] Static member m3 with instance id i2 has left group through explicit "
        "`LeaveGroup` request; client reason: the consumer is being closed",
        "Dynamic member with unknown member id joins group orders in state Stable. Created a "
        "new member id m4 and added the member to the group.",
        "[GroupId orders] Dynamic member m4 has left group through explicit `LeaveGroup` "
        "request; client reason: not provided",
        "Group orders removed dynamic members who haven't joined: [m5, m6]",
        "Group orders with generation 2 is now empty.",
        "Dynamic member with unknown member id joins group orders in Empty state. Created a "
        "new member id m7 and requesting the member to rejoin with this id.",
        "Pending dynamic member with id m7 joins group orders in Empty state. Adding to the "
        "group now.",
    ]


def test_a_consumer_group_joins_bumps_leaves_and_fences() -> None:
    events: list[Event] = [
        joined(1, "c1", "consumer"),
        GroupEpochBumped(ts_ms=1, group_id=G, epoch=1, reason="member_joined"),
        TargetAssignmentComputed(ts_ms=1, group_id=G, epoch=1, assignor="uniform", assignment={}),
        # Kafka writes a member's assignment steps at DEBUG only: not in server.log.
        MemberAssignmentChanged(
            ts_ms=1,
            group_id=G,
            member_id="c1",
            epoch=1,
            previous_epoch=0,
            member_state="STABLE",
            assigned=(),
        ),
        joined(2, "c2", "consumer", "s2"),
        MemberAssignmentChanged(
            ts_ms=3,
            group_id=G,
            member_id="c2",
            epoch=-2,
            previous_epoch=1,
            member_state="STABLE",
            assigned=(),
        ),
        left(4, "c2", "consumer", "replaced", instance_id="s2"),
        joined(4, "c3", "consumer", "s2"),
        left(5, "c3", "consumer", "leave", instance_id="s2"),
        left(6, "c1", "consumer", "leave"),
        left(7, "c4", "consumer", "session_timeout"),
        left(8, "c5", "consumer", "rebalance_timeout", member_epoch=7, rebalance_timeout_ms=300000),
        # A classic member inside a consumer group (online migration).
        joined(9, "k1", "classic"),
        left(10, "k1", "classic", "leave", reason_text="bye"),
        left(11, "k2", "consumer", "join_timeout"),
        left(12, "k3", "consumer", "sync_timeout"),
    ]
    assert messages(events) == [
        "[GroupId orders] Member c1 joins the consumer group using the consumer protocol.",
        "[GroupId orders] Bumped group epoch to 1.",
        "[GroupId orders] Computed a new target assignment for epoch 1 with 'uniform' assignor "
        "in 0ms.",
        "[GroupId orders] Static member c2 with instance id s2 joins the consumer group using "
        "the consumer protocol.",
        "[GroupId orders] Static member c2 with instance id s2 temporarily left the consumer "
        "group.",
        "[GroupId orders] Static member with instance id s2 re-joins the consumer group using "
        "the consumer protocol. Created a new member c3 to replace the existing member c2.",
        "[GroupId orders] Static member c3 with instance id s2 left the consumer group.",
        "[GroupId orders] Member c1 left the consumer group.",
        # Kafka's reason ends in a full stop, and so does its template.
        "[GroupId orders] Member c4 fenced from the group because the member session expired..",
        "[GroupId orders] Member c5 fenced from the group because it failed to transition from "
        "epoch 7 within 300000ms.",
        "[GroupId orders] Member k1 joins the consumer group using the classic protocol.",
        "[GroupId orders] Dynamic member k1 has left group through explicit `LeaveGroup` "
        "request; client reason: bye",
        "[GroupId orders] Member k2 fenced from the group because the classic member failed to "
        "join within the rebalance timeout..",
        "[GroupId orders] Member k3 fenced from the group because the member failed to sync "
        "within timeout..",
    ]


def test_lines_keep_the_events_time_and_the_other_kinds_write_nothing() -> None:
    log = CoordinatorLog()
    assert log.lines(state(5, "Empty", "Assigning", "consumer")) == []
    (line,) = log.lines(GroupEpochBumped(ts_ms=1234, group_id=G, epoch=9, reason="x"))
    assert line.ts_ms == 1234
    assert line.kind == str(Kind.GROUP_EPOCH_BUMPED)
    assert line.message.startswith("[GroupCoordinator id=0 topic=__consumer_offsets partition=")


def test_new_member_left_fields_are_left_out_of_the_json_until_set() -> None:
    plain = left(1, "m", "classic", "leave")
    assert "reason_text" not in plain.to_json_line()
    assert "rebalance_timeout_ms" not in plain.to_json_line()
    assert plain.to_json_line() == (
        '{"schema":1,"kind":"member_left","ts_ms":1,"group_id":"orders","member_id":"m",'
        '"group_protocol":"classic","reason":"leave","instance_id":null}'
    )
    told = left(1, "m", "consumer", "rebalance_timeout", member_epoch=3, rebalance_timeout_ms=10)
    assert '"member_epoch":3,"rebalance_timeout_ms":10' in told.to_json_line()
    for event in (plain, told):
        assert event_from_json_line(event.to_json_line()) == event


def test_a_loaded_group_is_logged_and_what_follows_starts_from_it() -> None:
    log = CoordinatorLog(broker_id=3)
    (classic,) = log.loaded(
        50,
        LoadedGroup(
            group_id=G,
            group_type="classic",
            state="Stable",
            members={"m1": None, "m2": "i2"},
            leader_id="m1",
        ),
    )
    assert classic.ts_ms == 50
    assert classic.message == PREFIX + "Loaded classic group orders with 2 members."
    assert str(parse(classic.message, Family.JAVA).format.kind) == "group_loaded"  # type: ignore[union-attr]
    (received,) = log.lines(
        RebalanceCompleted(ts_ms=60, group_id=G, generation=4, assignment={"m1": (), "m2": ()})
    )
    assert received.message.endswith(
        "Assignment received from leader m1 for group orders for generation 4. The group has "
        "2 members, 1 of which are static."
    )
    (consumer,) = log.loaded(70, LoadedGroup("other", "consumer", "Stable", {"c1": None}))
    assert consumer.message.endswith("Loaded consumer group other with 1 members.")
    # A classic member joining the loaded consumer group: the consumer group's wording.
    (joined_line,) = log.lines(
        MemberJoined(ts_ms=80, group_id="other", member_id="k1", group_protocol="classic")
    )
    assert joined_line.message.endswith(
        "[GroupId other] Member k1 joins the consumer group using the classic protocol."
    )
