"""The coordinator's caches change nothing that anyone sees.

* ``target_assignment_computed`` lists every member's target by name exactly as
  converting each target afresh would (``TopicPartition`` order), across new
  topics, grown topics and topics the subscription metadata no longer lists;
* ``build_target_assignment`` with a spec cache carried from run to run gives
  the same targets as without one.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.consumer.registry import create_server_assignor
from regroup.consumer.group.group import ConsumerGroup
from regroup.consumer.group.group_member import Assignment
from regroup.consumer.group.target_assignment import SpecCache, build_target_assignment
from regroup.coordinator.service import GroupCoordinator
from regroup.events.schema import TargetAssignmentComputed
from regroup.model.requests.consumer import ConsumerGroupHeartbeatRequest, TopicPartitions
from regroup.model.topic_partition import TopicPartition
from regroup.testing import CoordinatorTestContext


def _by_name_afresh(coordinator: GroupCoordinator, group: ConsumerGroup, target: Assignment) -> Any:
    names = {t.topic_id: name for name, t in group.subscription_metadata.items()}
    result: list[TopicPartition] = []
    for topic_id, partitions in target.items():
        name = names.get(topic_id)
        if name is None:
            topic = coordinator.metadata.topic_by_id(topic_id)
            name = topic.name if topic is not None else str(topic_id)
        result.extend(TopicPartition(name, p) for p in partitions)
    return tuple(sorted(result))


_steps = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.sampled_from((("foo",), ("bar",), ("foo", "bar")))),
        st.tuples(st.just("hb"), st.integers(0, 5)),
        st.tuples(st.just("leave"), st.integers(0, 5)),
        st.tuples(st.just("grow"), st.sampled_from(("foo", "bar")), st.integers(1, 3)),
        st.tuples(st.just("drop_bar")),
    ),
    max_size=25,
)


@settings(max_examples=50, deadline=None)
@given(steps=_steps)
def test_target_event_equals_a_fresh_conversion(steps: list[tuple[Any, ...]]) -> None:
    ctx = CoordinatorTestContext(topics={"foo": 4})
    joined = 0
    for step in steps:
        ctx.advance(10)
        group = ctx.groups.get("g")
        members = sorted(group.members) if isinstance(group, ConsumerGroup) else []
        if step[0] == "join":
            joined += 1
            request = ConsumerGroupHeartbeatRequest(
                group_id="g",
                member_id=f"m{joined}",
                member_epoch=0,
                rebalance_timeout_ms=60000,
                subscribed_topic_names=step[1],
                topic_partitions=(),
            )
            result = ctx.send(request)
        elif step[0] in ("hb", "leave") and members:
            assert isinstance(group, ConsumerGroup)
            member = group.members[members[step[1] % len(members)]]
            if member.member_epoch < 0:
                continue
            owned = tuple(
                TopicPartitions(t, tuple(sorted(p))) for t, p in member.assigned_partitions.items()
            )
            request = ConsumerGroupHeartbeatRequest(
                group_id="g",
                member_id=member.member_id,
                member_epoch=member.member_epoch if step[0] == "hb" else -1,
                topic_partitions=owned if step[0] == "hb" else None,
            )
            result = ctx.send(request)
        elif step[0] == "grow":
            existing = ctx.metadata.topic(step[1])
            count = (existing.partitions if existing else 0) + step[2]
            result = ctx.set_topics({step[1]: count})
        elif step[0] == "drop_bar":
            result = ctx.delete_topics("bar")
        else:
            continue
        group = ctx.groups.get("g")
        for event in result.events:
            if isinstance(event, TargetAssignmentComputed):
                assert isinstance(group, ConsumerGroup)
                assert event.assignment == {
                    member_id: _by_name_afresh(ctx.coordinator, group, group.target_of(member_id))
                    for member_id in sorted(group.target_assignment)
                }


def test_spec_cache_gives_the_same_targets() -> None:
    ctx = CoordinatorTestContext(topics={"foo": 12, "bar": 5})
    cache: SpecCache = {}
    for index in range(8):
        topics = ("foo",) if index % 3 else ("foo", "bar")
        ctx.advance(index - ctx.now_ms)
        ctx.consumer_group_heartbeat(
            "g",
            f"m{index}",
            0,
            rebalance_timeout_ms=60000,
            subscribed_topic_names=topics,
            owned={},
        )
        group = ctx.consumer_group("g")
        for name in ("uniform", "range"):
            assignor = create_server_assignor(name)
            cached = build_target_assignment(group, group.members, assignor, cache)
            again = build_target_assignment(group, group.members, assignor, cache)
            plain = build_target_assignment(group, group.members, assignor)
            assert cached.targets == plain.targets == again.targets
            assert cached.changed == plain.changed == again.changed
