"""Classic members against the real classic group coordinator, in process, on a fake clock.

The harness is h11's ``ConnectionPair`` idea for a group: one coordinator, N
``ClassicMember``s, an in-memory network with zero latency, and a clock that
jumps to the next deadline of anyone. Every request a member sends is handed
to the coordinator at once; every reply the coordinator produces (now, or
later for parked JoinGroup / SyncGroup requests, or from a timer) is handed
back to the member that sent the request. Invariants are checked after every
step. The scenarios are KIP-429's, KIP-726's and KIP-568's worked examples.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.classic.api import RebalanceProtocol
from regroup.classic.member import ClassicMember, MemberRequest
from regroup.classic.member_config import ClassicMemberConfig
from regroup.classic.member_errors import MemberFatalError
from regroup.classic.member_state import MemberState
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.service import GroupCoordinator
from regroup.events import Event
from regroup.model import ErrorCode, TopicPartition
from regroup.model.metadata import MetadataImage

GROUP = "g"


def _coordinator(config: GroupCoordinatorConfig, metadata: MetadataImage) -> GroupCoordinator:
    return GroupCoordinator(config, metadata=metadata, rng=random.Random(0))


@dataclass
class Recorder:
    """A listener that records calls and may raise."""

    calls: list[tuple[str, list[TopicPartition]]] = field(default_factory=list)
    fail: dict[str, Exception] = field(default_factory=dict)

    def _call(self, name: str, partitions: Sequence[TopicPartition]) -> None:
        self.calls.append((name, list(partitions)))
        if name in self.fail:
            raise self.fail[name]

    def on_partitions_revoked(self, partitions: Sequence[TopicPartition]) -> None:
        self._call("revoked", partitions)

    def on_partitions_assigned(self, partitions: Sequence[TopicPartition]) -> None:
        self._call("assigned", partitions)

    def on_partitions_lost(self, partitions: Sequence[TopicPartition]) -> None:
        self._call("lost", partitions)


class InvariantBroken(AssertionError):
    pass


class Harness:
    """One coordinator, N members, a fake clock, an in-memory network."""

    def __init__(
        self,
        topics: Mapping[str, int],
        *,
        config: GroupCoordinatorConfig | None = None,
    ) -> None:
        self.now = 0
        self.topics = dict(topics)
        self.metadata = MetadataImage.from_partition_counts(topics)
        self.coordinator = _coordinator(
            config or GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0), self.metadata
        )
        self.members: dict[str, ClassicMember] = {}
        self.listeners: dict[str, Recorder] = {}
        self.slow: set[str] = set()
        self.errors: list[tuple[str, Exception]] = []
        self.events: list[Event] = []
        self.sent: list[tuple[int, str, MemberRequest]] = []
        self._tokens: dict[int, tuple[str, ClassicMember, MemberRequest]] = {}
        self._next_token = 0

    # -- membership ---------------------------------------------------------------------

    def add(
        self,
        name: str,
        strategy: Sequence[str] | None = ("cooperative-sticky",),
        *,
        selection: str = "dynamic",
        instance_id: str | None = None,
        listener: Recorder | None = None,
        topics: Sequence[str] | None = None,
        **config: Any,
    ) -> ClassicMember:
        cfg = ClassicMemberConfig(
            group_id=GROUP,
            client_id=name,
            group_instance_id=instance_id,
            partition_assignment_strategy=None if strategy is None else tuple(strategy),
            rebalance_protocol_selection=selection,
            **config,
        )
        recorder = listener or Recorder()
        member = ClassicMember(cfg, listener=recorder, metadata=self.metadata, now_ms=self.now)
        member.subscribe(topics or sorted(self.topics))
        self.members[name] = member
        self.listeners[name] = recorder
        return member

    def stop(self, name: str) -> None:
        """A clean shutdown: ``close()`` (revoke, LeaveGroup for a dynamic member)."""
        member = self.members.pop(name)
        for request in member.close(self.now):
            self._send(name, member, request)

    def crash(self, name: str) -> None:
        """The process dies: nothing is sent, its replies go nowhere."""
        del self.members[name]

    def bounce(self, name: str, strategy: Sequence[str] | None, **kwargs: Any) -> ClassicMember:
        """A rolling-bounce step: stop the member and start it again with a new config."""
        self.stop(name)
        return self.add(name, strategy, **kwargs)

    # -- the network ----------------------------------------------------------------------

    def _send(self, name: str, member: ClassicMember, request: MemberRequest) -> None:
        token = self._next_token
        self._next_token += 1
        self._tokens[token] = (name, member, request)
        self.sent.append((self.now, name, request))
        self._apply(self.coordinator.handle(token, request, self.now))

    def _apply(self, result: CoordinatorResult) -> None:
        self.events.extend(result.events)
        for reply in result.replies:
            token = reply.token
            if not isinstance(token, int) or token not in self._tokens:
                continue
            name, member, request = self._tokens.pop(token)
            if self.members.get(name) is member:
                member.on_response(request, reply.response, self.now)
                self.events.extend(member.take_events())
                self.check()

    def _poll_all(self) -> bool:
        progressed = False
        for name in sorted(self.members):
            member = self.members.get(name)
            if member is None:
                continue
            if name not in self.slow:
                member.on_application_poll(self.now)
            try:
                requests = member.poll(self.now)
            except Exception as error:
                if not any(e is error for _, e in self.errors):
                    self.errors.append((name, error))
                    progressed = True
                requests = []
            self.events.extend(member.take_events())
            self.check()
            for request in requests:
                progressed = True
                self._send(name, member, request)
        return progressed

    def run(self, duration_ms: int) -> None:
        """Advance the clock by ``duration_ms``, doing everything that falls due."""
        until = self.now + duration_ms
        spins = 0
        while True:
            while self._poll_all():
                pass
            deadline = self.coordinator.next_deadline()
            if deadline is not None and deadline <= self.now:
                self._apply(self.coordinator.on_timer(self.now))
                continue
            deadlines = [deadline] if deadline is not None else []
            for member in self.members.values():
                if member.state is not MemberState.FATAL:
                    d = member.next_deadline()
                    if d is not None:
                        deadlines.append(d)
            nxt = min(deadlines, default=until + 1)
            if nxt > until:
                self.now = until
                while self._poll_all():
                    pass
                return
            if nxt <= self.now:
                spins += 1
                if spins > 1000:
                    raise AssertionError("the harness is spinning at one instant")
                nxt = self.now + 1
            else:
                spins = 0
            self.now = nxt

    # -- invariants and views -------------------------------------------------------------

    def owners(self) -> dict[TopicPartition, list[str]]:
        owners: dict[TopicPartition, list[str]] = {}
        for name, member in self.members.items():
            for tp in member.assignment:
                owners.setdefault(tp, []).append(name)
        return owners

    def check(self) -> None:
        """Rule 1: no partition has two owners among the live members (KIP-429's goal under
        COOPERATIVE; on this lossless network it must hold for EAGER and mixed groups too).
        Rule 2: under EAGER a member owns nothing while it is rebalancing."""
        doubled = {tp: o for tp, o in self.owners().items() if len(o) > 1}
        if doubled:
            raise InvariantBroken(f"at {self.now}: owned twice: {doubled}")
        for name, member in self.members.items():
            eager = member.protocol is RebalanceProtocol.EAGER
            if eager and member.rebalance_in_progress and member.assignment:
                raise InvariantBroken(f"at {self.now}: eager {name} owns {member.assignment}")

    def all_partitions(self) -> set[TopicPartition]:
        return {TopicPartition(t, p) for t, n in self.topics.items() for p in range(n)}

    def assignment(self) -> dict[str, set[TopicPartition]]:
        return {name: set(m.assignment) for name, m in self.members.items()}

    def settled(self) -> bool:
        """Every live member stable with nothing pending, the partitions all owned once."""
        if not all(m.state is MemberState.STABLE for m in self.members.values()):
            return False
        if any(m._rejoin_needed for m in self.members.values()):
            return False
        owners = self.owners()
        return set(owners) == self.all_partitions() and all(len(o) == 1 for o in owners.values())

    def balanced(self) -> bool:
        sizes = [len(m.assignment) for m in self.members.values()]
        return not sizes or max(sizes) - min(sizes) <= 1

    def generation(self) -> int:
        group = self.coordinator.group(GROUP)
        return -1 if group is None else int(group.generation_id)

    def rebalances(self) -> int:
        return sum(1 for e in self.events if e.kind == "rebalance_completed")


def partitions(topic: str, *ns: int) -> set[TopicPartition]:
    return {TopicPartition(topic, n) for n in ns}


def callbacks(h: Harness, name: str) -> list[tuple[str, list[TopicPartition]]]:
    return h.listeners[name].calls


# -- the smoke test --------------------------------------------------------------------------


def test_two_members_settle_on_a_balanced_cooperative_assignment() -> None:
    h = Harness({"t": 4})
    h.add("a")
    h.add("b")
    h.run(20_000)
    assert h.settled() and h.balanced(), h.assignment()
    assert not h.errors


# -- KIP-429: a new member joins (the a-0 / b-0 example) ----------------------------------


def test_new_member_joining_existing_member_revokes_only_b0() -> None:
    """KIP-429 / KIP-415 "new member joins": A owns {a-0, b-0}; B joins. In the first
    rebalance A keeps a-0, revokes only b-0 and B gets nothing; the follow-up rebalance
    hands b-0 to B. Nothing is owned twice at any step (checked by the harness)."""
    h = Harness({"a": 1, "b": 1})
    h.add("A")
    h.run(10_000)
    assert h.assignment() == {"A": partitions("a", 0) | partitions("b", 0)}
    generation = h.generation()
    h.add("B")
    h.run(20_000)
    assert h.assignment() == {"A": partitions("a", 0), "B": partitions("b", 0)}
    a0, b0 = TopicPartition("a", 0), TopicPartition("b", 0)
    assert callbacks(h, "A") == [
        ("assigned", [a0, b0]),
        ("revoked", [b0]),  # step 3.c: only b-0, then a follow-up rebalance
        ("assigned", []),  # step 3.d: always called
        ("assigned", []),  # the follow-up round: nothing new for A
    ]
    assert callbacks(h, "B") == [("assigned", []), ("assigned", [b0])]
    assert h.generation() == generation + 2  # the join round and the follow-up
    assert h.settled() and not h.errors


def test_callback_errors_in_a_real_rebalance_keep_the_assignment() -> None:
    """KIP-429 "Rebalance Callback Error Handling" end to end: A's revoke and assign
    callbacks both raise; the first exception surfaces from A's poll, the group still
    completes the revocation and the follow-up rebalance."""
    first, second = RuntimeError("revoked failed"), RuntimeError("assigned failed")
    h = Harness({"t": 4})
    a_listener = Recorder()
    h.add("A", listener=a_listener)
    h.run(10_000)
    a_listener.fail = {"revoked": first, "assigned": second}
    h.add("B")
    h.run(30_000)
    assert next(e for n, e in h.errors if n == "A") is first
    assert h.settled() and h.balanced()
    kinds = [name for name, _ in a_listener.calls]
    assert kinds[:3] == ["assigned", "revoked", "assigned"]


# -- upgrades and downgrades -----------------------------------------------------------------


def protocols(h: Harness) -> set[RebalanceProtocol]:
    return {m.protocol for m in h.members.values()}


def test_double_rolling_bounce_from_range_to_cooperative_sticky_kafka_static() -> None:
    """KIP-429 "Compatibility and Upgrade Path" / Consumer, with Kafka's static selection:
    bounce 1 adds cooperative-sticky ([cooperative-sticky, range]: still EAGER, and the group
    switches to the cooperative-sticky assignor once everyone lists it); bounce 2 removes
    range: bounced members turn COOPERATIVE while the others still revoke everything."""
    names = ["m1", "m2", "m3"]
    h = Harness({"t": 6})
    for name in names:
        h.add(name, ["range"], selection="static")
    h.run(20_000)
    assert h.settled() and protocols(h) == {RebalanceProtocol.EAGER}
    for name in names:
        h.bounce(name, ["cooperative-sticky", "range"], selection="static")
        h.run(20_000)
        assert h.settled(), (name, h.assignment())
    assert protocols(h) == {RebalanceProtocol.EAGER}
    assert h.members["m1"].protocol_name == "cooperative-sticky"
    for name in names:
        h.bounce(name, ["cooperative-sticky"], selection="static")
        h.run(20_000)
        assert h.settled(), (name, h.assignment())
    assert protocols(h) == {RebalanceProtocol.COOPERATIVE}
    before = {n: set(a) for n, a in h.assignment().items()}
    h.add("m4", ["cooperative-sticky"], selection="static")
    h.run(30_000)
    assert h.settled() and h.balanced()
    revoked = [c for n in names for c in callbacks(h, n)[-3:] if c[0] == "revoked"]
    assert all(
        set(parts) <= before[n]
        for n in names
        for kind, parts in callbacks(h, n)
        if kind == "revoked"
    )
    assert sum(len(parts) for _, parts in revoked) <= 2  # only what m4 takes moves
    assert not h.errors


def test_kip_726_single_rolling_bounce_with_the_default_list() -> None:
    """KIP-726: old members run [range] (EAGER); bouncing each onto the default
    [cooperative-sticky, range] keeps the group on range/EAGER while an old member is
    left, and switches it to cooperative-sticky/COOPERATIVE after the last bounce."""
    names = ["m1", "m2", "m3"]
    h = Harness({"t": 6})
    for name in names:
        h.add(name, ["range"], selection="static")
    h.run(20_000)
    for i, name in enumerate(names):
        h.bounce(name, None)  # the dynamic default list
        h.run(20_000)
        assert h.settled(), (name, h.assignment())
        expected = "range" if i < len(names) - 1 else "cooperative-sticky"
        assert h.members[name].protocol_name == expected
    assert protocols(h) == {RebalanceProtocol.COOPERATIVE}
    # cooperative from now on: a scale-out revokes only what moves
    h.add("m4", None)
    h.run(30_000)
    assert h.settled() and h.balanced()
    assert not any(kind == "lost" for n in names for kind, _ in callbacks(h, n))
    assert not h.errors


def test_kip_726_downgrade_a_member_back_to_range_is_safe() -> None:
    """KIP-726 "Applications can safely downgrade": members on the default list hold
    their partitions as COOPERATIVE; one member is bounced back to [range]; the group
    selects range, the cooperative members call onPartitionsLost (they did not revoke)
    and refuse commits until the rebalance completes; nothing is owned twice."""
    names = ["m1", "m2", "m3"]
    h = Harness({"t": 6})
    for name in names:
        h.add(name, None)
    h.run(20_000)
    assert protocols(h) == {RebalanceProtocol.COOPERATIVE}
    h.bounce("m3", ["range"], selection="static")
    h.run(30_000)
    assert h.settled() and not h.errors
    assert h.members["m1"].protocol_name == "range"
    assert protocols(h) == {RebalanceProtocol.EAGER}
    for name in ("m1", "m2"):
        assert any(kind == "lost" for kind, _ in callbacks(h, name)), callbacks(h, name)


def test_kip_429_downgrade_by_two_rolling_bounces_kafka_static() -> None:
    """KIP-429 "Downgrading": first add range back ([cooperative-sticky, range] -> EAGER),
    then remove cooperative-sticky."""
    names = ["m1", "m2"]
    h = Harness({"t": 4})
    for name in names:
        h.add(name, ["cooperative-sticky"], selection="static")
    h.run(20_000)
    for name in names:
        h.bounce(name, ["cooperative-sticky", "range"], selection="static")
        h.run(20_000)
        assert h.settled()
    for name in names:
        h.bounce(name, ["range"], selection="static")
        h.run(20_000)
        assert h.settled()
    assert h.members["m1"].protocol_name == "range"
    assert not h.errors


def test_misconfigured_eager_only_member_joining_a_cooperative_group_is_fenced_kafka_static() -> (
    None
):
    """KIP-429 "Edge Cases": no common protocol with the group: the newcomer gets
    INCONSISTENT_GROUP_PROTOCOL (fatal) and the group carries on undisturbed."""
    h = Harness({"t": 4})
    h.add("m1", ["cooperative-sticky"], selection="static")
    h.add("m2", ["cooperative-sticky"], selection="static")
    h.run(20_000)
    before = h.assignment()
    h.add("rogue", ["range"], selection="static")
    h.run(20_000)
    (name, error), *_ = h.errors
    assert name == "rogue" and isinstance(error, MemberFatalError)
    assert error.code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.members["rogue"].state is MemberState.FATAL
    assert h.members["rogue"].assignment == frozenset()
    del h.members["rogue"]
    assert h.assignment() == before and h.settled()


def test_misconfigured_eager_only_member_joining_a_dynamic_group_turns_it_eager() -> None:
    """With KIP-726's dynamic selection the default list still contains range, so a
    [range]-only newcomer is accepted: the group falls back to range and EAGER, the
    cooperative members treat what they held as lost."""
    h = Harness({"t": 4})
    h.add("m1", None)
    h.add("m2", None)
    h.run(20_000)
    h.add("old", ["range"], selection="static")
    h.run(30_000)
    assert h.settled() and h.balanced() and not h.errors
    assert protocols(h) == {RebalanceProtocol.EAGER}


def test_downgraded_member_with_the_old_jar_is_fenced_kafka_static() -> None:
    """KIP-429 "Downgrading and Old-Versioned New Member": a member of a cooperative-sticky
    group bounced onto [range] leaves and rejoins as an EAGER-only member: no consensus,
    it is refused; the others rebalance among themselves."""
    h = Harness({"t": 4})
    for name in ("m1", "m2", "m3"):
        h.add(name, ["cooperative-sticky"], selection="static")
    h.run(20_000)
    h.bounce("m3", ["range"], selection="static")
    h.run(30_000)
    assert [n for n, _ in h.errors] == ["m3"]
    del h.members["m3"]
    h.run(10_000)
    assert h.settled() and h.balanced()


# -- KIP-345 static membership ----------------------------------------------------------------


def test_static_member_bounced_within_its_session_timeout_causes_no_rebalance() -> None:
    h = Harness({"t": 6})
    for name in ("m1", "m2", "m3"):
        h.add(name, instance_id=f"instance-{name}")
    h.run(20_000)
    assert h.settled()
    generation, before = h.generation(), h.assignment()
    h.stop("m2")  # a static member sends no LeaveGroup
    h.run(10_000)
    h.add("m2", instance_id="instance-m2")
    h.run(20_000)
    assert h.generation() == generation
    assert h.assignment() == before
    assert callbacks(h, "m2") == [("assigned", sorted(before["m2"]))]
    for name in ("m1", "m3"):
        assert [kind for kind, _ in callbacks(h, name)] == ["assigned"]
    assert h.settled() and not h.errors


def test_static_member_away_longer_than_its_session_timeout_causes_a_rebalance() -> None:
    h = Harness({"t": 6})
    for name in ("m1", "m2"):
        h.add(name, instance_id=f"instance-{name}", session_timeout_ms=10_000)
    h.run(20_000)
    generation = h.generation()
    h.crash("m2")
    h.run(30_000)
    assert h.generation() > generation
    assert h.assignment() == {"m1": h.all_partitions()}


# -- KIP-568 enforceRebalance -------------------------------------------------------------------


def test_enforce_rebalance_while_idle_rebalances_without_revoking() -> None:
    h = Harness({"t": 4})
    h.add("m1")
    h.add("m2")
    h.run(20_000)
    generation, before = h.generation(), h.assignment()
    assert h.members["m1"].enforce_rebalance("standby caught up")
    h.run(10_000)
    assert h.generation() == generation + 1
    assert h.assignment() == before
    for name in ("m1", "m2"):
        assert [kind for kind, _ in callbacks(h, name)] == ["assigned", "assigned"]
    joins = [r for _, n, r in h.sent if n == "m1" and type(r).__name__ == "JoinGroupRequest"]
    assert joins[-1].reason == "standby caught up"  # type: ignore[union-attr]


def test_enforce_rebalance_while_a_rebalance_is_in_progress_is_a_no_op() -> None:
    h = Harness({"t": 4})
    h.add("m1")
    h.run(10_000)
    h.add("m2")
    # run until m1 is in the middle of the rebalance m2's arrival causes
    for _ in range(10_000):
        h.run(1)
        if h.members["m1"].rebalance_in_progress:
            break
    assert h.members["m1"].rebalance_in_progress
    generation = h.generation()
    assert not h.members["m1"].enforce_rebalance("too late")
    h.run(30_000)
    assert h.settled()
    reasons = [
        e
        for e in h.events
        if e.kind == "rebalance_requested" and getattr(e, "reason", "") == "too late"
    ]
    assert reasons == []
    # the join round and the cooperative follow-up, nothing more
    assert h.generation() == generation + 1 or h.generation() == generation + 2


# -- properties over random membership changes ------------------------------------------------

FAST: dict[str, Any] = {
    "session_timeout_ms": 10_000,
    "heartbeat_interval_ms": 1_000,
    "max_poll_interval_ms": 20_000,
}

_ops = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 0), st.integers(0, 0)),
    st.tuples(st.just("stop"), st.integers(0, 9), st.integers(0, 0)),
    st.tuples(st.just("crash"), st.integers(0, 9), st.integers(0, 0)),
    st.tuples(st.just("slow"), st.integers(0, 9), st.integers(1_000, 40_000)),
    st.tuples(st.just("run"), st.integers(0, 0), st.integers(0, 15_000)),
)


def _drive(
    h: Harness, ops: list[tuple[str, int, int]], strategy: list[str], selection: str
) -> None:
    counter = 0
    for op, index, amount in ops:
        live = sorted(h.members)
        if op == "add" or not live:
            counter += 1
            h.add(f"m{counter}", strategy, selection=selection, **FAST)
        elif op == "stop":
            h.stop(live[index % len(live)])
        elif op == "crash":
            h.crash(live[index % len(live)])
        elif op == "slow":
            name = live[index % len(live)]
            h.slow.add(name)
            h.run(amount)
            h.slow.discard(name)
        else:
            h.run(amount)


@pytest.mark.parametrize(
    ("strategy", "selection", "protocol"),
    [
        (["cooperative-sticky"], "dynamic", RebalanceProtocol.COOPERATIVE),
        (["range"], "static", RebalanceProtocol.EAGER),
    ],
)
@settings(max_examples=60, deadline=None)
@given(ops=st.lists(_ops, min_size=1, max_size=14))
def test_random_membership_changes_keep_ownership_safe_and_settle(
    ops: list[tuple[str, int, int]],
    strategy: list[str],
    selection: str,
    protocol: RebalanceProtocol,
) -> None:
    """Over random join / leave / crash / slow-member sequences: no partition is ever owned
    by two live members (cooperative), no eager member owns anything while rebalancing
    (both checked at every step by ``Harness.check``), and once changes stop the group
    settles to a complete, balanced assignment."""
    h = Harness({"t": 6})
    _drive(h, ops, strategy, selection)
    if not h.members:
        h.add("last", strategy, selection=selection, **FAST)
    h.run(200_000)
    assert {m.protocol for m in h.members.values()} == {protocol}
    assert h.settled(), (h.now, h.assignment(), {n: m.state for n, m in h.members.items()})
    assert h.balanced(), h.assignment()
    assert not [e for _, e in h.errors if isinstance(e, MemberFatalError)]


_configs = st.sampled_from(
    [
        (["range"], "static"),  # an old member (Kafka before KIP-429)
        (["range", "cooperative-sticky"], "static"),  # Kafka 3.x default: EAGER
        (["cooperative-sticky", "range"], "static"),  # first bounce of KIP-429's upgrade
        (["cooperative-sticky"], "static"),  # second bounce: COOPERATIVE
        (None, "dynamic"),  # KIP-726's default list, dynamic selection
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    configs=st.lists(_configs, min_size=1, max_size=5),
    ops=st.lists(_ops, max_size=10),
)
def test_mixed_protocol_groups_never_double_own_a_partition(
    configs: list[tuple[list[str] | None, str]], ops: list[tuple[str, int, int]]
) -> None:
    """Members on every upgrade / downgrade stage mixed in one group: a member that finds
    no common protocol is refused (fatal), every other step keeps the two ownership
    rules, and the accepted members settle once changes stop."""
    h = Harness({"t": 6})
    for i, (strategy, selection) in enumerate(configs):
        h.add(f"c{i}", strategy, selection=selection, **FAST)
        h.run(2_000)
    _drive(h, ops, ["cooperative-sticky", "range"], "static")
    h.run(100_000)
    for name, error in h.errors:
        assert isinstance(error, MemberFatalError), error
        assert error.code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        h.members.pop(name, None)
    h.run(100_000)
    if h.members:
        assert h.settled(), (h.assignment(), {n: m.state for n, m in h.members.items()})


def test_member_events_are_valid_json_lines_of_the_schema() -> None:
    from regroup.events import event_from_json_line

    h = Harness({"a": 1, "b": 1})
    h.add("A")
    h.run(10_000)
    h.add("B")
    h.run(20_000)
    member_kinds = {
        "member_state_changed",
        "rebalance_requested",
        "partitions_revoked",
        "partitions_assigned",
    }
    seen = {e.kind for e in h.events}
    assert member_kinds <= seen
    for event in h.events:
        assert event_from_json_line(event.to_json_line()) == event
