"""The undo journal that rolls a failed KIP-848 operation back (``ConsumerGroup.start_journal``).

Properties:

* any sequence of mutator calls made under a journal, then undone, leaves the
  group equal to a copy taken before - every map, the derived indexes and the
  STABLE counts - and the order of the maps whose order is visible (members,
  targets, static members, regexes) unchanged;
* a heartbeat that fails after it has written records (the assignor raises)
  answers with no records and leaves the group exactly as it was; the group
  still equals the one rebuilt from the records written so far, and goes on
  working;
* the O(1) state (``stable_by_epoch``) agrees with a recount of the members.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.consumer.api import (
    ConsumerGroupPartitionAssignor,
    GroupAssignment,
    GroupSpec,
    SubscribedTopicDescriber,
)
from regroup.assignors.errors import PartitionAssignorError
from regroup.consumer.group.group import ConsumerGroup, ConsumerGroupState, ResolvedRegex
from regroup.consumer.group.group_member import ConsumerGroupMember, MemberState
from regroup.model.errors import ErrorCode
from regroup.model.requests.consumer import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from regroup.model.uuid import Uuid
from regroup.testing import CoordinatorTestContext

FOO = Uuid.for_name("foo")
BAR = Uuid.for_name("bar")
IDS = ("a", "b", "c", "d")


def _orders(group: ConsumerGroup) -> tuple[list[Any], ...]:
    return (
        list(group.members),
        list(group.target_assignment),
        list(group.static_members),
        list(group.resolved_regexes),
    )


def _recount(group: ConsumerGroup) -> dict[int, int]:
    counts: dict[int, int] = {}
    for member in group.members.values():
        if member.state is MemberState.STABLE:
            counts[member.member_epoch] = counts.get(member.member_epoch, 0) + 1
    return counts


# -- mutators straight on a group -------------------------------------------------------

_partitions = st.frozensets(st.integers(0, 5), max_size=3)
_assignment = st.dictionaries(st.sampled_from((FOO, BAR)), _partitions, max_size=2).map(
    lambda a: {t: p for t, p in a.items() if p}
)
_op = st.one_of(
    st.tuples(st.just("epoch"), st.integers(0, 5)),
    st.tuples(st.just("assignment_epoch"), st.integers(-1, 5)),
    st.tuples(st.just("metadata"), st.sampled_from(IDS), st.sampled_from((None, "i1", "i2"))),
    st.tuples(
        st.just("current"),
        st.sampled_from(IDS),
        st.integers(0, 5),
        st.sampled_from(list(MemberState)),
        _assignment,
    ),
    st.tuples(st.just("remove"), st.sampled_from(IDS)),
    st.tuples(st.just("target"), st.sampled_from(IDS), _assignment),
    st.tuples(st.just("untarget"), st.sampled_from(IDS)),
    st.tuples(st.just("regex"), st.sampled_from(("x.*", "y.*"))),
    st.tuples(st.just("unregex"), st.sampled_from(("x.*", "y.*"))),
    st.tuples(st.just("dead")),
)


def _apply(group: ConsumerGroup, op: tuple[Any, ...]) -> None:
    kind = op[0]
    if kind == "epoch":
        group.set_group_epoch(op[1])
    elif kind == "assignment_epoch":
        group.set_assignment_epoch(op[1])
    elif kind == "metadata":
        group.put_member_metadata(ConsumerGroupMember(op[1], instance_id=op[2]))
    elif kind == "current":
        # Only partitions nobody else owns (a record that breaks that is a bug, not a case).
        _, member_id, epoch, state, assigned = op
        owners = {
            (t, p)
            for m in group.members.values()
            if m.member_id != member_id
            for t, p in m.owned_partitions()
        }
        free = {t: frozenset(p for p in ps if (t, p) not in owners) for t, ps in assigned.items()}
        group.put_current_assignment(
            member_id,
            member_epoch=epoch,
            previous_member_epoch=epoch - 1,
            state=state,
            assigned={t: p for t, p in free.items() if p},
            pending={},
        )
    elif kind == "remove":
        group.remove_member(op[1])
    elif kind == "target":
        group.set_target(op[1], op[2])
    elif kind == "untarget":
        group.remove_target(op[1])
    elif kind == "regex":
        group.put_regex(op[1], ResolvedRegex(frozenset({"x"}), len(op[1]), 0))
    elif kind == "unregex":
        group.remove_regex(op[1])
    else:
        group.mark_dead()


@settings(max_examples=300, deadline=None)
@given(before=st.lists(_op, max_size=12), during=st.lists(_op, max_size=12))
def test_undo_restores_the_group_and_its_orders(
    before: list[tuple[Any, ...]], during: list[tuple[Any, ...]]
) -> None:
    group = ConsumerGroup("g")
    for op in before:
        _apply(group, op)
    saved, orders = group.copy(), _orders(group)
    group.start_journal()
    for op in during:
        _apply(group, op)
    assert group.stable_by_epoch == _recount(group)
    group.undo_journal()
    assert group == saved
    assert _orders(group) == orders
    assert group.stable_by_epoch == _recount(group)
    assert group.state() is saved.state()


@settings(max_examples=100, deadline=None)
@given(ops=st.lists(_op, max_size=20))
def test_kept_changes_match_a_group_without_journal(ops: list[tuple[Any, ...]]) -> None:
    journaled, plain = ConsumerGroup("g"), ConsumerGroup("g")
    journaled.start_journal()
    for op in ops:
        _apply(journaled, op)
        _apply(plain, op)
    journaled.end_journal()
    assert journaled == plain
    assert _orders(journaled) == _orders(plain)
    journaled.undo_journal()  # nothing to undo once ended
    assert journaled == plain


def test_state_counts_follow_members() -> None:
    group = ConsumerGroup("g")
    group.put_member_metadata(ConsumerGroupMember("a"))
    group.set_group_epoch(2)
    group.set_assignment_epoch(2)
    assert group.state() is ConsumerGroupState.RECONCILING
    group.put_current_assignment(
        "a",
        member_epoch=2,
        previous_member_epoch=1,
        state=MemberState.STABLE,
        assigned={},
        pending={},
    )
    assert group.state() is ConsumerGroupState.STABLE and group.stable_by_epoch == {2: 1}
    group.remove_member("a")
    assert group.stable_by_epoch == {} and group.state() is ConsumerGroupState.EMPTY


# -- failed heartbeats through the coordinator ---------------------------------------------


class _Failing(ConsumerGroupPartitionAssignor):
    name = "uniform"

    def assign(
        self, group_spec: GroupSpec, subscribed_topic_describer: SubscribedTopicDescriber
    ) -> GroupAssignment:
        raise PartitionAssignorError("injected")


class _World:
    """``regroup.testing``'s coordinator context; each heartbeat comes 10 ms after the last."""

    def __init__(self) -> None:
        self.ctx = CoordinatorTestContext(topics={"foo": 6, "bar": 4})
        self.coordinator = self.ctx.coordinator
        self.records = self.ctx.records
        self.instances = 0

    @property
    def group(self) -> ConsumerGroup:
        return self.ctx.consumer_group("g")

    def send(self, request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        self.ctx.advance(10)
        return self.ctx.call(request, ConsumerGroupHeartbeatResponse)

    def join(self, member_id: str, topics: tuple[str, ...], instance: str | None = None) -> Any:
        return self.send(
            ConsumerGroupHeartbeatRequest(
                group_id="g",
                member_id=member_id,
                member_epoch=0,
                instance_id=instance,
                rebalance_timeout_ms=60000,
                subscribed_topic_names=topics,
                topic_partitions=(),
            )
        )

    def heartbeat(self, member_id: str) -> Any:
        member = self.group.members[member_id]
        owned = tuple(
            TopicPartitions(t, tuple(sorted(p))) for t, p in member.assigned_partitions.items()
        )
        return self.send(
            ConsumerGroupHeartbeatRequest(
                group_id="g",
                member_id=member_id,
                member_epoch=member.member_epoch,
                instance_id=member.instance_id,
                topic_partitions=owned,
            )
        )

    def rebuilt(self) -> ConsumerGroup | None:
        group = self.ctx.replay_into_new().groups.get("g")
        assert group is None or isinstance(group, ConsumerGroup)
        return group


_steps = st.lists(
    st.tuples(
        st.sampled_from(("join", "hb", "leave", "static_leave", "fail_join", "fail_replace")),
        st.integers(0, 3),
        st.sampled_from((("foo",), ("bar",), ("foo", "bar"))),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(steps=_steps)
def test_failed_heartbeat_changes_nothing(steps: list[tuple[str, int, tuple[str, ...]]]) -> None:
    world = _World()
    world.join("m0", ("foo",), instance="i0")
    failures: list[str] = []
    for kind, index, topics in steps:
        group = world.group
        live = sorted(group.members)
        member_id = live[index % len(live)] if live else None
        if kind in ("fail_join", "fail_replace"):
            saved, orders = group.copy(), _orders(group)
            epoch_before = group.group_epoch
            resolver = world.coordinator.consumer.assignor_resolver
            world.coordinator.consumer.assignor_resolver = lambda name: _Failing()
            try:
                if kind == "fail_join":
                    response = world.join(f"new{len(world.records)}", topics)
                else:
                    away = [m for m in group.members.values() if m.member_epoch == -2]
                    if not away:
                        continue
                    response = world.join(
                        f"replacer{len(world.records)}", topics, instance=away[0].instance_id
                    )
            finally:
                world.coordinator.consumer.assignor_resolver = resolver
            if response.error_code is not ErrorCode.NONE:
                assert response.error_code is ErrorCode.UNKNOWN_SERVER_ERROR
                assert world.group is group
                assert group == saved and _orders(group) == orders
                assert group.group_epoch == epoch_before
                failures.append(kind)
        elif member_id is None:
            world.join(f"m{len(world.records)}", topics)
        elif kind == "join":
            world.instances += 1
            world.join(f"m{len(world.records)}", topics, instance=f"i{world.instances}")
        elif kind == "hb":
            if group.members[member_id].member_epoch >= 0:
                world.heartbeat(member_id)
        else:
            member = group.members[member_id]
            if member.member_epoch < 0:
                continue
            epoch = -2 if kind == "static_leave" and member.instance_id else -1
            world.send(
                ConsumerGroupHeartbeatRequest(
                    group_id="g",
                    member_id=member_id,
                    member_epoch=epoch,
                    instance_id=member.instance_id,
                )
            )
        if "g" in world.coordinator.groups:
            assert world.rebuilt() == world.group
            assert world.group.stable_by_epoch == _recount(world.group)


def _failing_join(world: _World, member_id: str, topics: tuple[str, ...], **kw: Any) -> Any:
    resolver = world.coordinator.consumer.assignor_resolver
    world.coordinator.consumer.assignor_resolver = lambda name: _Failing()
    try:
        return world.join(member_id, topics, **kw)
    finally:
        world.coordinator.consumer.assignor_resolver = resolver


def test_failed_static_replacement_restores_members_and_their_order() -> None:
    world = _World()
    for name, instance in (("a", "ia"), ("b", "ib"), ("c", None)):
        world.join(name, ("foo",), instance=instance)
    for _ in range(3):
        for name in ("a", "b", "c"):
            world.heartbeat(name)
    world.send(
        ConsumerGroupHeartbeatRequest(
            group_id="g", member_id="a", member_epoch=-2, instance_id="ia"
        )
    )
    group = world.group
    saved, orders = group.copy(), _orders(group)
    written = len(world.records)
    # "z" takes over instance "ia" with another subscription: tombstones for "a", a new
    # epoch, then the assignor fails.
    response = _failing_join(world, "z", ("bar",), instance="ia")
    assert response.error_code is ErrorCode.UNKNOWN_SERVER_ERROR
    assert len(world.records) == written
    assert world.group == saved and _orders(world.group) == orders
    assert world.rebuilt() == world.group
    # The group goes on: the same takeover succeeds with a working assignor.
    assert world.join("z", ("bar",), instance="ia").error_code is ErrorCode.NONE
    assert "a" not in world.group.members and world.group.static_members["ia"] == "z"
    assert world.rebuilt() == world.group


def test_failed_join_of_a_new_group_leaves_no_group() -> None:
    world = _World()
    response = _failing_join(world, "a", ("foo",))
    assert response.error_code is ErrorCode.UNKNOWN_SERVER_ERROR
    assert "g" not in world.coordinator.groups and not world.records
