"""``CoordinatorTestContext``: a coordinator on a manual clock, its logs, its timers, its replay.

The contract of ``advance(ms)``: every timer expiring within the ``ms`` fires, in
deadline order, each at its own deadline (so one armed by an earlier timer fires
too if it falls within), and what they produced -- exactly that -- comes back.
"""

from __future__ import annotations

import pytest

from regroup.coordinator.config import GroupCoordinatorConfig, InvalidConfigError
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.service import GroupCoordinator
from regroup.events import MemberLeft
from regroup.model.errors import ErrorCode
from regroup.model.metadata import MetadataImage
from regroup.model.requests.classic import JoinGroupRequest, JoinGroupRequestProtocol
from regroup.model.requests.consumer import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from regroup.model.uuid import Uuid
from regroup.records import CoordinatorRecord
from regroup.testing import CoordinatorTestContext, NotAnsweredError, ReplayMismatchError


def join_consumer(
    ctx: CoordinatorTestContext, member: str, topics: tuple[str, ...] = ("foo",)
) -> ConsumerGroupHeartbeatResponse:
    return ctx.consumer_group_heartbeat(
        "g", member, 0, subscribed_topic_names=topics, rebalance_timeout_ms=60000, owned={}
    )


# -- configuration and topics --------------------------------------------------------------


def test_config_by_kafka_names_or_as_the_dataclass() -> None:
    by_name = CoordinatorTestContext({"group.consumer.heartbeat.interval.ms": 6000})
    assert by_name.config.group_consumer_heartbeat_interval_ms == 6000
    config = GroupCoordinatorConfig(group_max_size=3)
    assert CoordinatorTestContext(config).config is config
    assert CoordinatorTestContext().config == GroupCoordinatorConfig()
    with pytest.raises(InvalidConfigError):
        CoordinatorTestContext({"group.no.such.config": 1})


def test_topic_ids_are_derived_from_the_names_and_kept_when_topics_change() -> None:
    ctx = CoordinatorTestContext(topics={"foo": 3, "bar": 1})
    assert ctx.topic_id("foo") == Uuid.for_name("foo")
    assert ctx.metadata == MetadataImage.from_partition_counts({"foo": 3, "bar": 1})
    ctx.set_topics({"foo": 5, "baz": 2})
    foo = ctx.metadata.topic("foo")
    assert foo is not None and (foo.topic_id, foo.partitions) == (Uuid.for_name("foo"), 5)
    assert ctx.topic_id("baz") == Uuid.for_name("baz")
    ctx.delete_topics("bar")
    assert sorted(ctx.metadata.topics_by_name) == ["baz", "foo"]


def test_a_metadata_change_reaches_the_groups_and_is_logged() -> None:
    ctx = CoordinatorTestContext(topics={"foo": 2})
    join_consumer(ctx, "A")
    epoch = ctx.consumer_group("g").group_epoch
    result = ctx.set_topics({"foo": 4})
    assert ctx.consumer_group("g").group_epoch == epoch + 1
    assert result.records and ctx.records[-len(result.records) :] == result.records


# -- sending -----------------------------------------------------------------------------


def test_send_serves_at_the_current_time_and_logs_everything() -> None:
    ctx = CoordinatorTestContext(topics={"foo": 2})
    ctx.advance(1234)
    request = ConsumerGroupHeartbeatRequest(
        "g", "A", 0, rebalance_timeout_ms=1000, subscribed_topic_names=("foo",), topic_partitions=()
    )
    result = ctx.send(request, token="mine")
    assert ctx.reply("mine") is result.response_for("mine") is not None
    assert ctx.records == result.records and ctx.events == result.events
    assert {e.ts_ms for e in ctx.events} == {1234}
    assert ctx.events_of(MemberLeft) == [] and ctx.events_of("member_joined") != []


def test_a_parked_request_is_answered_later_through_its_call() -> None:
    ctx = CoordinatorTestContext()
    first = ctx.join_group("g", protocols=[("range", b"")], client_id="app")
    assert first.answered and first.response.error_code is ErrorCode.MEMBER_ID_REQUIRED
    join = ctx.join_group("g", first.response.member_id, protocols=[("range", b"")])
    assert not join.answered
    with pytest.raises(NotAnsweredError):
        join.response  # noqa: B018
    ctx.run_until_answered(join)  # the initial rebalance delay
    assert ctx.now_ms == 3000
    assert join.response.generation_id == 1 and join.response.leader == join.response.member_id


def test_run_until_answered_gives_up_when_nothing_would_answer() -> None:
    ctx = CoordinatorTestContext()
    with pytest.raises(NotAnsweredError):
        ctx.run_until_answered("never-sent")


def test_call_checks_the_response_type() -> None:
    ctx = CoordinatorTestContext()
    request = JoinGroupRequest(
        "g", 10000, 10000, "", "consumer", (JoinGroupRequestProtocol("r", b""),)
    )
    with pytest.raises(AssertionError):
        ctx.call(request, ConsumerGroupHeartbeatRequest)


# -- time ------------------------------------------------------------------------------------


def test_advance_fires_timers_in_deadline_order_each_at_its_own_deadline() -> None:
    ctx = CoordinatorTestContext(topics={"foo": 2})
    join_consumer(ctx, "A")  # session timeout 45 s: due at 45 000
    ctx.advance(10_000)
    join_consumer(ctx, "B")  # due at 55 000
    result = ctx.advance(60_000)
    left = [e for e in result.events if isinstance(e, MemberLeft)]
    assert [(e.member_id, e.ts_ms, e.reason) for e in left] == [
        ("A", 45_000, "session_timeout"),
        ("B", 55_000, "session_timeout"),
    ]
    assert [e.ts_ms for e in result.events] == sorted(e.ts_ms for e in result.events)
    assert ctx.now_ms == 70_000


def test_a_timer_armed_by_a_fired_timer_fires_in_the_same_advance() -> None:
    """The initial rebalance delay completes the join at 3000 and arms the member's
    deadline to sync (rebalance timeout 10 s, at 13 000): one ``advance`` past both
    fires both, the second at its own deadline."""
    ctx = CoordinatorTestContext()
    first = ctx.join_group("g", protocols=[("range", b"")], rebalance_timeout_ms=10000)
    member = first.response.member_id
    join = ctx.join_group(
        "g",
        member,
        protocols=[("range", b"")],
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
    )
    result = ctx.advance(13_000)
    assert join.response.generation_id == 1
    assert [(e.member_id, e.ts_ms) for e in result.events if isinstance(e, MemberLeft)] == [
        (member, 13_000)
    ]
    assert member not in ctx.classic_group("g").members


def test_advance_returns_exactly_what_the_timers_produced() -> None:
    """Against a bare coordinator driven by hand, firing at each deadline."""
    image = MetadataImage.from_partition_counts({"foo": 3})
    ctx = CoordinatorTestContext(topics=image)
    bare = GroupCoordinator(metadata=image)
    for now, member in ((0, "A"), (7_000, "B"), (20_000, "C")):
        ctx.advance(now - ctx.now_ms)
        request = ConsumerGroupHeartbeatRequest(
            "g",
            member,
            0,
            rebalance_timeout_ms=60000,
            subscribed_topic_names=("foo",),
            topic_partitions=(),
        )
        ctx.send(request)
        bare.handle("t", request, now)
    records_before, events_before = len(ctx.records), len(ctx.events)
    result = ctx.advance(100_000)

    expected = CoordinatorResult()
    while (deadline := bare.next_deadline()) is not None and deadline <= 120_000:
        expected.extend(bare.on_timer(deadline))
    assert result.records == expected.records and result.events == expected.events
    assert result.replies == expected.replies == []
    assert ctx.records[records_before:] == result.records
    assert ctx.events[events_before:] == result.events
    assert len([e for e in result.events if isinstance(e, MemberLeft)]) == 3


def test_advance_zero_fires_only_what_is_due_and_time_never_goes_back() -> None:
    ctx = CoordinatorTestContext(topics={"foo": 1})
    join_consumer(ctx, "A")
    assert ctx.advance(0).events == []
    assert ctx.advance(44_999).events == []
    assert [type(e) for e in ctx.advance(1).events][:1] == [MemberLeft]
    with pytest.raises(ValueError):
        ctx.advance(-1)


# -- records and replay -----------------------------------------------------------------------


def test_replay_matches_for_both_group_types_and_offsets() -> None:
    ctx = CoordinatorTestContext(topics={"foo": 3})
    join_consumer(ctx, "A")
    ctx.consumer_group_heartbeat("g", "A", 1, owned={"foo": [0, 1, 2]})
    first = ctx.join_group("c", protocols=[("range", b"sub")])
    join = ctx.join_group("c", first.response.member_id, protocols=[("range", b"sub")])
    ctx.run_until_answered(join)
    joined = join.response
    sync = ctx.sync_group(
        "c", joined.member_id, joined.generation_id, assignments={joined.member_id: b"all"}
    )
    assert sync.response.assignment == b"all"
    commit = ctx.offset_commit(
        "c", {("foo", 0): 42}, member_id=joined.member_id, generation_id_or_member_epoch=1
    )
    assert [p.error_code for t in commit.topics for p in t.partitions] == [ErrorCode.NONE]
    assert ctx.offset_fetch("c", {"foo": [0]}).topics[0].partitions[0].committed_offset == 42

    rebuilt = ctx.assert_replay_matches()
    assert sorted(rebuilt.groups) == ["c", "g"]
    assert rebuilt.now_ms == ctx.now_ms and rebuilt.records == ctx.records
    # The rebuilt coordinator serves: the classic member heartbeats against it.
    rebuilt.on_loaded()
    assert rebuilt.heartbeat("c", joined.member_id, 1).error_code is ErrorCode.NONE


def test_replay_mismatch_is_reported() -> None:
    ctx = CoordinatorTestContext(topics={"foo": 3})
    join_consumer(ctx, "A")
    join_consumer(ctx, "B")
    del ctx.records[-1]  # lose one record
    with pytest.raises(ReplayMismatchError):
        ctx.assert_replay_matches()


def test_replay_goes_through_the_json_text_form_unless_told_not_to() -> None:
    ctx = CoordinatorTestContext(topics={"foo": 1})
    join_consumer(ctx, "A")
    through_json = ctx.replay_into_new()
    assert through_json.records == ctx.records
    assert all(a is not b for a, b in zip(through_json.records, ctx.records, strict=True))
    direct = ctx.replay_into_new(through_json=False)
    assert all(a is b for a, b in zip(direct.records, ctx.records, strict=True))
    assert CoordinatorRecord.from_json(ctx.records[0].to_json()) == ctx.records[0]
