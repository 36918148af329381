"""Classic members against the real classic group coordinator, in process, on a fake clock.

The harness is ``regroup.testing.InProcessGroup`` (h11's ``ConnectionPair`` idea
for a group): one coordinator, N ``ClassicMember``s, an in-memory network with
zero latency, and a clock that jumps to the next deadline of anyone. It checks
its invariants after every step: no partition has two owners among the live
members (KIP-429's goal under COOPERATIVE; on this lossless network it must hold
for EAGER and mixed groups too), and under EAGER a member owns nothing while it
is rebalancing. The scenarios are KIP-429's, KIP-726's and KIP-568's worked
examples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.classic.api import RebalanceProtocol
from regroup.classic.member.config import ClassicMemberConfig
from regroup.classic.member.member import ClassicMember
from regroup.classic.member.state import MemberState
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.members.errors import MemberFatalError
from regroup.model import ErrorCode, TopicPartition
from regroup.model.requests.classic import JoinGroupRequest
from regroup.testing import InProcessGroup, RecordingListener

GROUP = "g"


def group_of(topics: dict[str, int]) -> InProcessGroup:
    """A group on ``topics`` whose coordinator completes a first join without delay."""
    return InProcessGroup(
        topics, group_id=GROUP, config=GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)
    )


def add(
    h: InProcessGroup,
    name: str,
    strategy: Sequence[str] | None = ("cooperative-sticky",),
    *,
    selection: str = "dynamic",
    instance_id: str | None = None,
    listener: RecordingListener | None = None,
    topics: Sequence[str] | None = None,
    **config: Any,
) -> ClassicMember:
    """A classic member on ``strategy`` (``None``: the default list of ``selection``)."""
    cfg = ClassicMemberConfig(
        group_id=GROUP,
        client_id=name,
        group_instance_id=instance_id,
        partition_assignment_strategy=None if strategy is None else tuple(strategy),
        rebalance_protocol_selection=selection,
        **config,
    )
    return h.add_member(name, cfg, listener=listener or RecordingListener(), topics=topics)


def bounce(h: InProcessGroup, name: str, strategy: Sequence[str] | None, **kwargs: Any) -> None:
    """A rolling-bounce step: stop the member and start it again with a new config."""
    h.remove_member(name)
    add(h, name, strategy, **kwargs)


def generation_of(h: InProcessGroup) -> int:
    return -1 if GROUP not in h.context.groups else h.context.classic_group(GROUP).generation_id


def partitions(topic: str, *ns: int) -> set[TopicPartition]:
    return {TopicPartition(topic, n) for n in ns}


def callbacks(h: InProcessGroup, name: str) -> list[tuple[str, list[TopicPartition]]]:
    listener = h.listener(name)
    assert isinstance(listener, RecordingListener)
    return listener.calls


# -- the smoke test --------------------------------------------------------------------------


def test_two_members_settle_on_a_balanced_cooperative_assignment() -> None:
    h = group_of({"t": 4})
    add(h, "a")
    add(h, "b")
    h.advance(20_000)
    assert h.is_stable() and h.is_balanced(), h.assignments()
    assert not h.errors


# -- KIP-429: a new member joins (the a-0 / b-0 example) ----------------------------------


def test_new_member_joining_existing_member_revokes_only_b0() -> None:
    """KIP-429 / KIP-415 "new member joins": A owns {a-0, b-0}; B joins. In the first
    rebalance A keeps a-0, revokes only b-0 and B gets nothing; the follow-up rebalance
    hands b-0 to B. Nothing is owned twice at any step (checked by the harness)."""
    h = group_of({"a": 1, "b": 1})
    add(h, "A")
    h.advance(10_000)
    assert h.assignments() == {"A": partitions("a", 0) | partitions("b", 0)}
    generation = generation_of(h)
    add(h, "B")
    h.advance(20_000)
    assert h.assignments() == {"A": partitions("a", 0), "B": partitions("b", 0)}
    a0, b0 = TopicPartition("a", 0), TopicPartition("b", 0)
    assert callbacks(h, "A") == [
        ("assigned", [a0, b0]),
        ("revoked", [b0]),  # step 3.c: only b-0, then a follow-up rebalance
        ("assigned", []),  # step 3.d: always called
        ("assigned", []),  # the follow-up round: nothing new for A
    ]
    assert callbacks(h, "B") == [("assigned", []), ("assigned", [b0])]
    assert generation_of(h) == generation + 2  # the join round and the follow-up
    assert h.is_stable() and not h.errors


def test_callback_errors_in_a_real_rebalance_keep_the_assignment() -> None:
    """KIP-429 "Rebalance Callback Error Handling" end to end: A's revoke and assign
    callbacks both raise; the first exception surfaces from A's poll, the group still
    completes the revocation and the follow-up rebalance."""
    first, second = RuntimeError("revoked failed"), RuntimeError("assigned failed")
    h = group_of({"t": 4})
    a_listener = RecordingListener()
    add(h, "A", listener=a_listener)
    h.advance(10_000)
    a_listener.fail = {"revoked": first, "assigned": second}
    add(h, "B")
    h.advance(30_000)
    assert next(e for n, e in h.errors if n == "A") is first
    assert h.is_stable() and h.is_balanced()
    kinds = [name for name, _ in a_listener.calls]
    assert kinds[:3] == ["assigned", "revoked", "assigned"]


# -- upgrades and downgrades -----------------------------------------------------------------


def protocols(h: InProcessGroup) -> set[RebalanceProtocol]:
    return {h.classic_member(name).protocol for name in h.members}


def test_double_rolling_bounce_from_range_to_cooperative_sticky_kafka_static() -> None:
    """KIP-429 "Compatibility and Upgrade Path" / Consumer, with Kafka's static selection:
    bounce 1 adds cooperative-sticky ([cooperative-sticky, range]: still EAGER, and the group
    switches to the cooperative-sticky assignor once everyone lists it); bounce 2 removes
    range: bounced members turn COOPERATIVE while the others still revoke everything."""
    names = ["m1", "m2", "m3"]
    h = group_of({"t": 6})
    for name in names:
        add(h, name, ["range"], selection="static")
    h.advance(20_000)
    assert h.is_stable() and protocols(h) == {RebalanceProtocol.EAGER}
    for name in names:
        bounce(h, name, ["cooperative-sticky", "range"], selection="static")
        h.advance(20_000)
        assert h.is_stable(), (name, h.assignments())
    assert protocols(h) == {RebalanceProtocol.EAGER}
    assert h.classic_member("m1").protocol_name == "cooperative-sticky"
    for name in names:
        bounce(h, name, ["cooperative-sticky"], selection="static")
        h.advance(20_000)
        assert h.is_stable(), (name, h.assignments())
    assert protocols(h) == {RebalanceProtocol.COOPERATIVE}
    before = {n: set(a) for n, a in h.assignments().items()}
    add(h, "m4", ["cooperative-sticky"], selection="static")
    h.advance(30_000)
    assert h.is_stable() and h.is_balanced()
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
    h = group_of({"t": 6})
    for name in names:
        add(h, name, ["range"], selection="static")
    h.advance(20_000)
    for i, name in enumerate(names):
        bounce(h, name, None)  # the dynamic default list
        h.advance(20_000)
        assert h.is_stable(), (name, h.assignments())
        expected = "range" if i < len(names) - 1 else "cooperative-sticky"
        assert h.classic_member(name).protocol_name == expected
    assert protocols(h) == {RebalanceProtocol.COOPERATIVE}
    # cooperative from now on: a scale-out revokes only what moves
    add(h, "m4", None)
    h.advance(30_000)
    assert h.is_stable() and h.is_balanced()
    assert not any(kind == "lost" for n in names for kind, _ in callbacks(h, n))
    assert not h.errors


def test_kip_726_downgrade_a_member_back_to_range_is_safe() -> None:
    """KIP-726 "Applications can safely downgrade": members on the default list hold
    their partitions as COOPERATIVE; one member is bounced back to [range]; the group
    selects range, the cooperative members call onPartitionsLost (they did not revoke)
    and refuse commits until the rebalance completes; nothing is owned twice."""
    names = ["m1", "m2", "m3"]
    h = group_of({"t": 6})
    for name in names:
        add(h, name, None)
    h.advance(20_000)
    assert protocols(h) == {RebalanceProtocol.COOPERATIVE}
    bounce(h, "m3", ["range"], selection="static")
    h.advance(30_000)
    assert h.is_stable() and not h.errors
    assert h.classic_member("m1").protocol_name == "range"
    assert protocols(h) == {RebalanceProtocol.EAGER}
    for name in ("m1", "m2"):
        assert any(kind == "lost" for kind, _ in callbacks(h, name)), callbacks(h, name)


def test_kip_429_downgrade_by_two_rolling_bounces_kafka_static() -> None:
    """KIP-429 "Downgrading": first add range back ([cooperative-sticky, range] -> EAGER),
    then remove cooperative-sticky."""
    names = ["m1", "m2"]
    h = group_of({"t": 4})
    for name in names:
        add(h, name, ["cooperative-sticky"], selection="static")
    h.advance(20_000)
    for name in names:
        bounce(h, name, ["cooperative-sticky", "range"], selection="static")
        h.advance(20_000)
        assert h.is_stable()
    for name in names:
        bounce(h, name, ["range"], selection="static")
        h.advance(20_000)
        assert h.is_stable()
    assert h.classic_member("m1").protocol_name == "range"
    assert not h.errors


def test_misconfigured_eager_only_member_joining_a_cooperative_group_is_fenced_kafka_static() -> (
    None
):
    """KIP-429 "Edge Cases": no common protocol with the group: the newcomer gets
    INCONSISTENT_GROUP_PROTOCOL (fatal) and the group carries on undisturbed."""
    h = group_of({"t": 4})
    add(h, "m1", ["cooperative-sticky"], selection="static")
    add(h, "m2", ["cooperative-sticky"], selection="static")
    h.advance(20_000)
    before = h.assignments()
    add(h, "rogue", ["range"], selection="static")
    h.advance(20_000)
    (name, error), *_ = h.errors
    assert name == "rogue" and isinstance(error, MemberFatalError)
    assert error.code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.members["rogue"].state is MemberState.FATAL
    assert h.members["rogue"].assignment == frozenset()
    h.crash("rogue")
    assert h.assignments() == before and h.is_stable()


def test_misconfigured_eager_only_member_joining_a_dynamic_group_turns_it_eager() -> None:
    """With KIP-726's dynamic selection the default list still contains range, so a
    [range]-only newcomer is accepted: the group falls back to range and EAGER, the
    cooperative members treat what they held as lost."""
    h = group_of({"t": 4})
    add(h, "m1", None)
    add(h, "m2", None)
    h.advance(20_000)
    add(h, "old", ["range"], selection="static")
    h.advance(30_000)
    assert h.is_stable() and h.is_balanced() and not h.errors
    assert protocols(h) == {RebalanceProtocol.EAGER}


def test_downgraded_member_with_the_old_jar_is_fenced_kafka_static() -> None:
    """KIP-429 "Downgrading and Old-Versioned New Member": a member of a cooperative-sticky
    group bounced onto [range] leaves and rejoins as an EAGER-only member: no consensus,
    it is refused; the others rebalance among themselves."""
    h = group_of({"t": 4})
    for name in ("m1", "m2", "m3"):
        add(h, name, ["cooperative-sticky"], selection="static")
    h.advance(20_000)
    bounce(h, "m3", ["range"], selection="static")
    h.advance(30_000)
    assert [n for n, _ in h.errors] == ["m3"]
    h.crash("m3")
    h.advance(10_000)
    assert h.is_stable() and h.is_balanced()


# -- KIP-345 static membership ----------------------------------------------------------------


def test_static_member_bounced_within_its_session_timeout_causes_no_rebalance() -> None:
    h = group_of({"t": 6})
    for name in ("m1", "m2", "m3"):
        add(h, name, instance_id=f"instance-{name}")
    h.advance(20_000)
    assert h.is_stable()
    generation, before = generation_of(h), h.assignments()
    h.remove_member("m2")  # a static member sends no LeaveGroup
    h.advance(10_000)
    add(h, "m2", instance_id="instance-m2")
    h.advance(20_000)
    assert generation_of(h) == generation
    assert h.assignments() == before
    assert callbacks(h, "m2") == [("assigned", sorted(before["m2"]))]
    for name in ("m1", "m3"):
        assert [kind for kind, _ in callbacks(h, name)] == ["assigned"]
    assert h.is_stable() and not h.errors


def test_static_member_away_longer_than_its_session_timeout_causes_a_rebalance() -> None:
    h = group_of({"t": 6})
    for name in ("m1", "m2"):
        add(h, name, instance_id=f"instance-{name}", session_timeout_ms=10_000)
    h.advance(20_000)
    generation = generation_of(h)
    h.crash("m2")
    h.advance(30_000)
    assert generation_of(h) > generation
    assert h.assignments() == {"m1": h.subscribed_partitions()}


# -- KIP-568 enforceRebalance -------------------------------------------------------------------


def test_enforce_rebalance_while_idle_rebalances_without_revoking() -> None:
    h = group_of({"t": 4})
    add(h, "m1")
    add(h, "m2")
    h.advance(20_000)
    generation, before = generation_of(h), h.assignments()
    assert h.members["m1"].enforce_rebalance("standby caught up")
    h.advance(10_000)
    assert generation_of(h) == generation + 1
    assert h.assignments() == before
    for name in ("m1", "m2"):
        assert [kind for kind, _ in callbacks(h, name)] == ["assigned", "assigned"]
    joins = [r for _, n, r in h.sent if n == "m1" and isinstance(r, JoinGroupRequest)]
    assert joins[-1].reason == "standby caught up"


def test_enforce_rebalance_while_a_rebalance_is_in_progress_is_a_no_op() -> None:
    h = group_of({"t": 4})
    add(h, "m1")
    h.advance(10_000)
    add(h, "m2")
    # run until m1 is in the middle of the rebalance m2's arrival causes
    for _ in range(10_000):
        h.advance(1)
        if h.classic_member("m1").rebalance_in_progress:
            break
    assert h.classic_member("m1").rebalance_in_progress
    generation = generation_of(h)
    assert not h.members["m1"].enforce_rebalance("too late")
    h.advance(30_000)
    assert h.is_stable()
    reasons = [
        e
        for e in h.events
        if e.kind == "rebalance_requested" and getattr(e, "reason", "") == "too late"
    ]
    assert reasons == []
    # the join round and the cooperative follow-up, nothing more
    assert generation_of(h) == generation + 1 or generation_of(h) == generation + 2


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
    h: InProcessGroup, ops: list[tuple[str, int, int]], strategy: list[str], selection: str
) -> None:
    counter = 0
    for op, index, amount in ops:
        live = sorted(h.members)
        if op == "add" or not live:
            counter += 1
            add(h, f"m{counter}", strategy, selection=selection, **FAST)
        elif op == "stop":
            h.remove_member(live[index % len(live)])
        elif op == "crash":
            h.crash(live[index % len(live)])
        elif op == "slow":
            name = live[index % len(live)]
            h.stall_application(name)
            h.advance(amount)
            h.resume_application(name)
        else:
            h.advance(amount)


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
    (both checked at every step by the group's invariants), and once changes stop the group
    settles to a complete, balanced assignment."""
    h = group_of({"t": 6})
    _drive(h, ops, strategy, selection)
    if not h.members:
        add(h, "last", strategy, selection=selection, **FAST)
    h.advance(200_000)
    assert protocols(h) == {protocol}
    assert h.is_stable(), (h.now_ms, h.assignments(), {n: m.state for n, m in h.members.items()})
    assert h.is_balanced(), h.assignments()
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
    h = group_of({"t": 6})
    for i, (strategy, selection) in enumerate(configs):
        add(h, f"c{i}", strategy, selection=selection, **FAST)
        h.advance(2_000)
    _drive(h, ops, ["cooperative-sticky", "range"], "static")
    h.advance(100_000)
    for name, error in h.errors:
        assert isinstance(error, MemberFatalError), error
        assert error.code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if name in h.members:
            h.crash(name)
    h.advance(100_000)
    if h.members:
        assert h.is_stable(), (h.assignments(), {n: m.state for n, m in h.members.items()})


def test_member_events_are_valid_json_lines_of_the_schema() -> None:
    from regroup.events import event_from_json_line

    h = group_of({"a": 1, "b": 1})
    add(h, "A")
    h.advance(10_000)
    add(h, "B")
    h.advance(20_000)
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
