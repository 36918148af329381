"""Rebalances rebuilt from records: the keying and timing rules, both protocols; events."""

from __future__ import annotations

from typing import Any

from regroup.history.events import record_events
from regroup.history.formats import Family, Kind, render_line
from regroup.history.lines import Record, parse_line
from regroup.history.rebalances import reconstruct

T0 = 1_796_220_000_000
S = Family.SCALA
J = Family.JAVA


def _records(lines: list[str]) -> list[Record]:
    out = []
    for number, line in enumerate(lines):
        record = parse_line(line, "server.log", number)
        assert isinstance(record, Record), line
        out.append(record)
    return out


def _scala(at: int, kind: Kind, version: str = "3.6", **fields: Any) -> str:
    return render_line(kind, S, T0 + at, version=version, broker_id=1, **fields)


def _java(at: int, kind: Kind, **fields: Any) -> str:
    return render_line(kind, J, T0 + at, broker_id=2, offsets_partition=7, **fields)


def _prepare(at: int, old: int, reason: str, version: str = "3.6") -> str:
    return _scala(
        at,
        Kind.REBALANCE_PREPARING,
        version,
        group_id="g",
        state="PreparingRebalance",
        generation=old,
        offsets_partition=7,
        reason=reason,
    )


def _stable(at: int, generation: int, members: int) -> str:
    return _scala(
        at,
        Kind.GROUP_STABILIZED,
        group_id="g",
        generation=generation,
        offsets_partition=7,
        members=members,
    )


def test_a_classic_rebalance_is_keyed_by_the_generation_it_produced() -> None:
    history = reconstruct(
        "g",
        _records(
            [
                _prepare(0, 4, "removing member m-1 on heartbeat expiration"),
                _stable(2500, 5, 3),
                _prepare(
                    60_000,
                    5,
                    "Adding new member m-9 with group instance id None; "
                    "client reason: not provided",
                ),
                _stable(63_000, 6, 4),
            ]
        ),
    )
    assert history.protocol == "classic"
    first, second = history.rebalances
    assert (first.generation, first.duration_ms, first.members, first.reason_class) == (
        5,
        2500,
        3,
        "session_timeout",
    )
    assert first.started_at == "2026-12-02T14:00:00.000"
    assert first.stabilized_at == "2026-12-02T14:00:02.500"
    assert first.broker_id == 1 and first.coordinator_partition == 7
    assert (second.generation, second.members, second.members_before) == (6, 4, 3)
    assert second.reason_class == "member_joined"
    assert [j.member_id for j in history.members_joined] == ["m-9"]


def test_empty_unfinished_and_headless_rebalances() -> None:
    lines = [
        _stable(1_000, 8, 2),  # the log starts mid-rebalance: no start
        _prepare(
            10_000,
            8,
            "Removing member m-1 on LeaveGroup; client reason: the consumer is being closed",
        ),
        _scala(10_001, Kind.GROUP_EMPTY, group_id="g", generation=9, offsets_partition=7),
        _prepare(
            20_000,
            9,
            "Adding new member m-2 with group instance id None; client reason: not provided",
        ),
    ]
    headless, empty, unfinished = reconstruct("g", _records(lines)).rebalances
    assert headless.started_at is None and headless.duration_ms is None
    assert headless.stabilized_at == "2026-12-02T14:00:01.000" and headless.generation == 8
    assert empty.outcome == "empty" and empty.members == 0 and empty.stabilized_at is None
    assert empty.ended_at == "2026-12-02T14:00:10.001" and empty.duration_ms == 1
    assert empty.reason_class == "member_left"
    assert empty.client_reason == "the consumer is being closed"
    assert unfinished.outcome == "unfinished" and unfinished.generation == 10
    assert unfinished.stabilized_at is None and unfinished.duration_ms is None


def test_before_kafka_2_8_members_come_from_the_assignment_line() -> None:
    lines = [
        _prepare(0, 1, "Adding new member m-3", version="2.3"),
        _scala(40, Kind.GROUP_STABILIZED, "2.3", group_id="g", generation=2, offsets_partition=7),
        _scala(45, Kind.ASSIGNMENT_RECEIVED, "2.7", group_id="g", generation=2),
        _scala(
            90_000,
            Kind.ASSIGNMENT_RECEIVED,
            "2.8",
            group_id="g",
            generation=2,
            members=3,
            static_members=0,
        ),
    ]
    (rebalance,) = reconstruct("g", _records(lines)).rebalances
    assert rebalance.members == 3 and rebalance.duration_ms == 40


def test_a_line_given_twice_counts_once_and_files_merge_by_time() -> None:
    lines = [_prepare(0, 1, "x"), _stable(100, 2, 1)]
    broker_a = _records(lines)
    copy = [parse_line(line, "copy.log", 0) for line in lines]
    history = reconstruct("g", [*broker_a, *(r for r in copy if isinstance(r, Record))][::-1])
    assert len(history.rebalances) == 1 and history.rebalances[0].duration_ms == 100


def test_a_coordinator_move_is_seen_when_another_broker_loads_the_group() -> None:
    lines = [
        _stable(0, 3, 2),
        render_line(Kind.GROUP_UNLOADED, S, T0 + 5000, broker_id=1, group_id="g", generation=3),
        render_line(Kind.GROUP_LOADED, S, T0 + 5040, broker_id=2, group_id="g", generation=3),
    ]
    (move,) = reconstruct("g", _records(lines)).coordinator_moves
    assert (move.from_broker, move.to_broker) == (1, 2)


def test_a_consumer_group_rebalance_is_keyed_by_the_epoch_and_ends_when_all_reach_it() -> None:
    def state(at: int, member: str, epoch: int, value: str) -> str:
        return _java(
            at,
            Kind.MEMBER_ASSIGNMENT_UPDATED,
            group_id="g",
            member_id=member,
            epoch=epoch,
            previous_epoch=epoch - 1,
            state=value,
            assigned="[t-0, t-1]",
        )

    lines = [
        _java(0, Kind.CONSUMER_MEMBER_JOINED, group_id="g", member_id="A", protocol="consumer"),
        _java(0, Kind.GROUP_EPOCH_BUMPED, group_id="g", epoch=1, metadata_hash=5),
        state(3, "A", 1, "STABLE"),
        _java(
            10_000, Kind.CONSUMER_MEMBER_JOINED, group_id="g", member_id="B", protocol="consumer"
        ),
        _java(10_000, Kind.GROUP_EPOCH_BUMPED, group_id="g", epoch=2, metadata_hash=5),
        state(10_004, "A", 2, "UNREVOKED_PARTITIONS"),
        state(12_000, "A", 2, "STABLE"),
        state(13_500, "B", 2, "STABLE"),
        _java(
            50_000,
            Kind.CONSUMER_MEMBER_FENCED,
            group_id="g",
            member_id="B",
            reason="the member session expired",
        ),
        _java(50_000, Kind.GROUP_EPOCH_BUMPED, group_id="g", epoch=3, metadata_hash=5),
        _java(90_000, Kind.GROUP_EPOCH_BUMPED, group_id="g", epoch=4, metadata_hash=6),
    ]
    history = reconstruct("g", _records(lines))
    assert history.protocol == "consumer"
    one, two, three, four = history.rebalances
    assert (one.epoch, one.duration_ms, one.members, one.reason_class) == (1, 3, 1, "member_joined")
    assert (two.epoch, two.duration_ms, two.members) == (2, 3500, 2)
    assert two.stabilized_at == "2026-12-02T14:00:13.500"
    assert (three.epoch, three.reason_class, three.members) == (3, "session_timeout", 1)
    assert three.outcome == "unfinished" and three.stabilized_at is None
    assert four.reason_class == "unknown" and four.started_at == "2026-12-02T14:01:30.000"
    (left,) = history.members_left
    assert (left.member_id, left.reason) == ("B", "session_timeout")


def test_an_info_log_counts_a_consumer_groups_members_at_each_bump() -> None:
    # INFO only (Kafka writes the "new assignment state" lines at DEBUG): every epoch
    # closes at the next bump, after the next join or leave. The count is the membership
    # when the epoch was bumped; 0 once the last member left.
    def joined(at: int, member: str) -> str:
        return _java(
            at, Kind.CONSUMER_MEMBER_JOINED, group_id="g", member_id=member, protocol="consumer"
        )

    def bumped(at: int, epoch: int) -> str:
        return _java(at, Kind.GROUP_EPOCH_BUMPED, group_id="g", epoch=epoch, metadata_hash=5)

    def left(at: int, member: str) -> str:
        return _java(at, Kind.CONSUMER_MEMBER_LEFT, group_id="g", member_id=member)

    lines = [
        joined(0, "A"),
        bumped(0, 1),
        joined(5_000, "B"),
        bumped(5_000, 2),
        left(9_000, "B"),
        bumped(9_000, 3),
        left(12_000, "A"),
        bumped(12_000, 4),
    ]
    history = reconstruct("g", _records(lines))
    assert [r.members for r in history.rebalances] == [1, 2, 1, 0]
    assert [r.members_before for r in history.rebalances] == [None, 1, 2, 1]
    # A bump the log shows no member for counts nothing, not 0.
    alone = reconstruct("g", _records([bumped(0, 7), bumped(1_000, 8)]))
    assert [r.members for r in alone.rebalances] == [None, None]


def test_events_carry_what_the_log_says() -> None:
    (start,) = record_events(
        _records([_prepare(0, 4, "removing member m on heartbeat expiration")])[0]
    )
    data = start.to_dict()
    assert data["kind"] == "rebalance_started"
    assert (data["generation"], data["broker_id"], data["coordinator_partition"]) == (4, 1, 7)
    assert data["reason_class"] == "session_timeout"
    leave_line = _java(
        0,
        Kind.MEMBER_LEFT,
        group_id="g",
        member_id="m",
        instance_id="i-0",
        reason="the consumer is being closed",
    )
    (left,) = record_events(_records([leave_line])[0])
    assert left.to_dict()["reason_text"] == "the consumer is being closed"
    assert left.to_dict()["instance_id"] == "i-0"


def test_observed_fields_are_left_out_of_simulated_events() -> None:
    from regroup.events import RebalanceStarted

    data = RebalanceStarted(ts_ms=1, group_id="g", generation=1, reason="r").to_dict()
    assert "broker_id" not in data and "reason_class" not in data


def test_a_pending_member_that_never_came_back_did_not_join() -> None:
    lines = [
        _scala(
            0,
            Kind.DYNAMIC_MEMBER_PENDING,
            group_id="g",
            state="Stable",
            member_id="m-1",
        ),
        _scala(0, Kind.DYNAMIC_MEMBER_PENDING, group_id="g", state="Stable", member_id="m-2"),
        _scala(45_000, Kind.PENDING_MEMBER_EXPIRED, group_id="g", member_id="m-1"),
    ]
    history = reconstruct("g", _records(lines))
    assert [j.member_id for j in history.members_joined] == ["m-2"]
