"""Property tests of the KIP-848 coordinator under random schedules.

Random schedules of joins, heartbeats (full and partial), lost responses, leaves,
crashes, clock advances and topic metadata changes. After every step:

* no partition is owned (assigned or pending revocation) by two members;
* no member epoch is above the group epoch, no response epoch above it either;
* the group rebuilt from its records equals the live group.

Once the changes stop and the live members heartbeat as the protocol says, the
group reaches STABLE with every subscribed partition assigned exactly once and,
for a homogeneous subscription, balanced (sizes differ by at most one).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regroup.consumer.group.group import ConsumerGroup
from regroup.model.errors import ErrorCode
from regroup.model.requests.consumer import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from regroup.model.uuid import Uuid
from regroup.testing import CoordinatorTestContext

MEMBERS = ("m0", "m1", "m2", "m3", "m4")


@dataclass
class Client:
    """What a well-behaved KIP-848 member knows: its epoch and the partitions it owns."""

    member_id: str
    topics: tuple[str, ...]
    epoch: int = 0
    owned: dict[Uuid, frozenset[int]] = field(default_factory=dict)
    joined: bool = False
    crashed: bool = False
    instance_id: str | None = None
    incarnation: int = 0
    #: The last response was lost: like Kafka's client after a failed request, the
    #: next heartbeat repeats every field (a full request, answered with the assignment).
    full_next: bool = False


class World:
    """Clients that model Kafka's members, around ``regroup.testing``'s coordinator context."""

    def __init__(self, topics: dict[str, int]) -> None:
        self.ctx = CoordinatorTestContext(topics=topics)
        self.clients: dict[str, Client] = {}

    @property
    def group(self) -> ConsumerGroup | None:
        group = self.ctx.groups.get("g")
        assert group is None or isinstance(group, ConsumerGroup)
        return group

    def _send(self, request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        response = self.ctx.call(request, ConsumerGroupHeartbeatResponse)
        group = self.group
        if group is not None and response.error_code is ErrorCode.NONE:
            assert response.member_epoch <= group.group_epoch
        return response

    def heartbeat(self, client: Client, *, partial: bool = False, lose: bool = False) -> None:
        if client.crashed:
            return
        if not client.joined:
            request = ConsumerGroupHeartbeatRequest(
                group_id="g",
                member_id=client.member_id,
                instance_id=client.instance_id,
                member_epoch=0,
                rebalance_timeout_ms=60000,
                subscribed_topic_names=client.topics,
                topic_partitions=(),
            )
        else:
            owned = tuple(TopicPartitions(t, tuple(sorted(p))) for t, p in client.owned.items())
            full = client.full_next and not partial
            request = ConsumerGroupHeartbeatRequest(
                group_id="g",
                member_id=client.member_id,
                instance_id=client.instance_id,
                member_epoch=client.epoch,
                rebalance_timeout_ms=60000 if full else -1,
                subscribed_topic_names=client.topics if full else None,
                topic_partitions=None if partial else owned,
            )
        response = self._send(request)
        if lose:
            client.full_next = True
            return
        if not partial:
            client.full_next = False
        if response.error_code is ErrorCode.UNRELEASED_INSTANCE_ID:
            return  # the previous incarnation still holds the instance id: retry later
        if response.error_code in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            client.joined, client.epoch, client.owned = False, 0, {}
            return
        assert response.error_code is ErrorCode.NONE, response
        client.joined = True
        client.epoch = response.member_epoch
        if response.assignment is not None:
            client.owned = {
                tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions
            }

    def leave(self, client: Client) -> None:
        if client.crashed or not client.joined:
            return
        response = self._send(
            ConsumerGroupHeartbeatRequest(
                group_id="g",
                member_id=client.member_id,
                instance_id=client.instance_id,
                member_epoch=-1,
            )
        )
        assert response.error_code in (ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID)
        client.joined, client.epoch, client.owned = False, 0, {}

    def bounce(self, client: Client) -> Client:
        """A static member restarts: leaves with -2, a new incarnation joins."""
        if client.crashed or not client.joined or client.instance_id is None:
            return client
        response = self._send(
            ConsumerGroupHeartbeatRequest(
                group_id="g",
                member_id=client.member_id,
                instance_id=client.instance_id,
                member_epoch=-2,
            )
        )
        if response.error_code is not ErrorCode.NONE:
            client.joined, client.epoch, client.owned = False, 0, {}
            return client
        incarnation = client.incarnation + 1
        base = client.member_id.split("~")[0]
        fresh = Client(
            f"{base}~{incarnation}",
            client.topics,
            instance_id=client.instance_id,
            incarnation=incarnation,
        )
        self.heartbeat(fresh)
        return fresh

    def advance(self, ms: int) -> None:
        self.ctx.advance(ms)

    def grow(self, name: str, count: int) -> None:
        existing = self.ctx.metadata.topic(name)
        if existing is not None and existing.partitions >= count:
            return
        self.ctx.set_topics({name: count})

    def check(self) -> None:
        group = self.group
        if group is None:
            return
        owners: dict[tuple[Uuid, int], str] = {}
        for member in group.members.values():
            assert member.member_epoch <= group.group_epoch
            assert member.member_epoch <= max(group.assignment_epoch, 0) or member.member_epoch <= 0
            for key in member.owned_partitions():
                assert key not in owners, f"{key} owned by {owners[key]} and {member.member_id}"
                owners[key] = member.member_id
        self.ctx.assert_replay_matches("g")

    def settle(self) -> None:
        """Changes stop: live clients heartbeat properly; crashed ones time out."""
        for _ in range(14):
            for client in self.clients.values():
                self.heartbeat(client)
            self.advance(5000)
            self.check()
        for _ in range(4):
            for client in self.clients.values():
                self.heartbeat(client)
            self.check()


operations = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.sampled_from(MEMBERS)),
        st.tuples(st.just("hb"), st.sampled_from(MEMBERS)),
        st.tuples(st.just("partial"), st.sampled_from(MEMBERS)),
        st.tuples(st.just("lost"), st.sampled_from(MEMBERS)),
        st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
        st.tuples(st.just("crash"), st.sampled_from(MEMBERS)),
        st.tuples(st.just("bounce"), st.sampled_from(MEMBERS)),
        st.tuples(st.just("tick"), st.integers(1000, 30000)),
        st.tuples(st.just("grow"), st.sampled_from(("foo:6", "bar:4", "baz:2"))),
    ),
    min_size=1,
    max_size=40,
)


def _run(
    world: World,
    ops: list[tuple[str, object]],
    topics_for: dict[str, tuple[str, ...]],
    static: bool = False,
) -> None:
    for op, arg in ops:
        if op == "tick":
            assert isinstance(arg, int)
            world.advance(arg)
        elif op == "grow":
            assert isinstance(arg, str)
            name, count = arg.split(":")
            world.grow(name, int(count))
        else:
            assert isinstance(arg, str)
            client = world.clients.get(arg)
            if op == "join":
                if client is None or client.crashed:
                    instance = f"i-{arg}" if static else None
                    world.clients[arg] = client = Client(arg, topics_for[arg], instance_id=instance)
                world.heartbeat(client)
            elif client is None:
                continue
            elif op == "hb":
                world.heartbeat(client)
            elif op == "partial":
                world.heartbeat(client, partial=True)
            elif op == "lost":
                world.heartbeat(client, lose=True)
            elif op == "leave":
                world.leave(client)
                del world.clients[arg]
            elif op == "crash":
                client.crashed = True
            elif op == "bounce":
                world.clients[arg] = world.bounce(client)
        world.check()


def _assert_converged(world: World, homogeneous: bool) -> None:
    group = world.group
    live = [c for c in world.clients.values() if not c.crashed]
    if group is None:
        assert not live
        return
    assert sorted(group.members) == sorted(c.member_id for c in live)
    if not live:
        return
    assert group.state_name() == "Stable"
    subscribed = group.subscribed_topic_names()
    expected = {
        (t.topic_id, p)
        for name, t in world.ctx.metadata.topics_by_name.items()
        if name in subscribed
        for p in range(t.partitions)
    }
    owned = [key for m in group.members.values() for key in m.owned_partitions()]
    assert sorted(owned) == sorted(expected)
    for client in live:
        member = group.members[client.member_id]
        assert client.epoch == member.member_epoch == group.assignment_epoch
        assert client.owned == dict(member.assigned_partitions)
    if homogeneous:
        sizes = [
            sum(len(p) for p in m.assigned_partitions.values()) for m in group.members.values()
        ]
        assert max(sizes) - min(sizes) <= 1


@settings(
    max_examples=60, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(operations)
def test_random_schedules_homogeneous(ops: list[tuple[str, object]]) -> None:
    world = World({"foo": 4, "bar": 3})
    topics: dict[str, tuple[str, ...]] = {m: ("foo", "bar", "baz") for m in MEMBERS}
    _run(world, ops, topics)
    world.settle()
    _assert_converged(world, homogeneous=True)


@settings(
    max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(operations)
def test_random_schedules_heterogeneous(ops: list[tuple[str, object]]) -> None:
    world = World({"foo": 4, "bar": 3})
    topics = {
        "m0": ("foo",),
        "m1": ("foo", "bar"),
        "m2": ("bar", "baz"),
        "m3": ("foo", "baz"),
        "m4": ("bar",),
    }
    _run(world, ops, topics)
    world.settle()
    _assert_converged(world, homogeneous=False)


@settings(
    max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(operations)
def test_random_schedules_static_members(ops: list[tuple[str, object]]) -> None:
    world = World({"foo": 4, "bar": 3})
    topics: dict[str, tuple[str, ...]] = {m: ("foo", "bar") for m in MEMBERS}
    _run(world, ops, topics, static=True)
    world.settle()
    _assert_converged(world, homogeneous=True)
