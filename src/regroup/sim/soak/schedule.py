"""Random fault schedules for the soak: one scenario per seed, drawn from the seed alone.

Rule 1: ``draw_scenario(protocol, seed, limits)`` depends on nothing but its
arguments (``random.Random(f"soak/{protocol}/{seed}")``): the same seed gives
the same scenario, on any machine.

Rule 2: sizes are skewed toward small (``_skewed``: the fourth power of a
uniform draw), so most seeds are fast and a few reach ``limits``: up to
``max_members`` consumers and ``max_partitions`` partitions in total, counting
the partitions added by the schedule.

Rule 3: every fault the simulator has may be drawn: member ``crash``, clean
``stop``, ``restart`` (clean or crashed, with downtime), ``start``,
``rolling_bounce``, ``slow`` (a stall, sometimes past ``max.poll.interval.ms``),
``cut`` (a network partition of one member), ``add_partitions``,
``enforce_rebalance``, ``coordinator_restart`` (failover with replay), and the
network's ``loss``, ``jitter`` and ``duplicate``. Faults start inside
``FAULT_WINDOW_MS``; the network is flaky until the last fault ends
(``[network] until_ms``), then ``SETTLE_MS`` of calm lets the group settle.

Rule 4: with ``Limits.zero_timeouts`` (``regroup soak --zero-timeouts``) a
classic schedule also restarts one to three members as clients that send a
JoinGroup rebalance timeout of 0 or -1 (``regroup.join.rebalance.timeout.ms``, a
value Kafka's broker takes from the wire; only the session timeout is checked),
and restarts them again with Kafka's value 5 to 20 s later: a bad client
deployed, then rolled back. A KIP-848 schedule does the same with the
heartbeat's ``RebalanceTimeoutMs`` (``regroup.heartbeat.rebalance.timeout.ms``):
-1 on the joining heartbeat is refused with INVALID_REQUEST, a fatal error for
the member until the roll-back restarts it; 0 is accepted and leaves the member
no time to revoke, so each revocation asked of it fences it at once
(``GroupMetadataManager.scheduleConsumerGroupRebalanceTimeout``) and it rejoins
at epoch 0. While such classic members are in the group its rebalance
timeout (the largest of its members') may be 0 or less: with static members it
is a replacement in Stable whose join phase then waits on members that never
rejoin, the schedule in which a join timer once re-armed itself at one instant
forever; when every member sends it, each SyncGroup comes after its deadline
and the group churns, in Kafka as here, until the roll-back. The network then
takes at least 1 ms each way: at 0 ms a churning member and the coordinator
would answer each other at one virtual instant forever, a loop no real network
has. These actions are drawn from a stream of their own
(``soak/{protocol}/{seed}/zero-timeouts``), so the knob leaves the rest of a
seed's scenario as it was.

Rule 5: the group runs with short timeouts (session 10 s, heartbeat 3 s,
``max.poll.interval.ms`` 30 s, KIP-848 the same through the ``group.consumer.*``
broker configs) and a small data plane (a few records per partition per
second), so commits and ownership matter and a seed costs little.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from regroup.sim.network import NetworkConfig
from regroup.sim.scenario import ACTIONS, PROTOCOLS, Action, DataConfig, Scenario

__all__ = [
    "CONSUMER_ZERO_TIMEOUT_CONFIG",
    "FAULT_KINDS",
    "FAULT_WINDOW_MS",
    "SETTLE_MS",
    "ZERO_TIMEOUT_CONFIG",
    "Limits",
    "draw_scenario",
    "fault_counts",
]

#: Faults start in [FIRST_FAULT_MS, FAULT_WINDOW_MS).
FIRST_FAULT_MS = 5000
FAULT_WINDOW_MS = 60000
#: Calm after the last fault ends: sessions (10 s) expire and rebalances finish.
SETTLE_MS = 90000
#: The kinds of fault a schedule may hold (actions, then network features).
FAULT_KINDS = (*ACTIONS, "loss", "jitter", "duplicate")
_SLOW_MS = (1000, 5000, 20000, 40000)
#: Rule 5's ``max.poll.interval.ms``: the rebalance timeout a Kafka client sends.
_MAX_POLL_INTERVAL_MS = 30000
#: The member config that plays a client sending another rebalance timeout (Rule 4).
ZERO_TIMEOUT_CONFIG = "regroup.join.rebalance.timeout.ms"
#: The same for a KIP-848 member (its heartbeat's ``RebalanceTimeoutMs``).
CONSUMER_ZERO_TIMEOUT_CONFIG = "regroup.heartbeat.rebalance.timeout.ms"
_CUT_MS = (1000, 5000, 15000, 30000)
_ACTION_WEIGHTS = {
    "crash": 3,
    "stop": 2,
    "restart": 3,
    "start": 2,
    "rolling_bounce": 1,
    "slow": 2,
    "cut": 2,
    "add_partitions": 1,
    "enforce_rebalance": 1,
    "coordinator_restart": 2,
}


@dataclass(frozen=True, slots=True)
class Limits:
    """The largest group a schedule may draw."""

    max_members: int = 50
    max_partitions: int = 500
    max_actions: int = 8
    #: Rule 4: also draw restarts as clients that send a rebalance timeout of 0 or -1.
    zero_timeouts: bool = False

    def __post_init__(self) -> None:
        if self.max_members < 1 or self.max_partitions < 1 or self.max_actions < 0:
            raise ValueError("max members and partitions must be >= 1, max actions >= 0")


def _skewed(rng: random.Random, low: int, high: int) -> int:
    """An integer in [low, high], most often near ``low`` (Rule 2)."""
    return low + int((high - low + 1) * rng.random() ** 4) if high > low else low


def _members(rng: random.Random, slots: int) -> tuple[int, ...]:
    count = 1 if slots == 1 or rng.random() < 0.7 else rng.randint(1, min(3, slots))
    return tuple(sorted(rng.sample(range(slots), count)))


def _zero_timeout_restarts(protocol: str, seed: int, members: int) -> list[Action]:
    """Rule 4: restarts as clients sending a rebalance timeout of 0 or -1, then back."""
    rng = random.Random(f"soak/{protocol}/{seed}/zero-timeouts")
    key = CONSUMER_ZERO_TIMEOUT_CONFIG if protocol == "consumer" else ZERO_TIMEOUT_CONFIG
    actions: list[Action] = []
    for _ in range(rng.randint(1, 2)):
        at = rng.randrange(FIRST_FAULT_MS, FAULT_WINDOW_MS)
        chosen = _members(rng, members)  # of the first members: they exist from the start
        bad = {key: rng.choice((0, -1))}
        actions.append(Action("restart", at_ms=at, members=chosen, config=bad))
        back = {key: _MAX_POLL_INTERVAL_MS}
        at_back = at + rng.choice((5000, 10000, 20000))
        actions.append(Action("restart", at_ms=at_back, members=chosen, config=back))
    return actions


def draw_scenario(protocol: str, seed: int, limits: Limits = Limits()) -> Scenario:
    """The scenario of ``seed`` (see the module rules)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}")
    rng = random.Random(f"soak/{protocol}/{seed}")
    members = _skewed(rng, 1, limits.max_members)
    partitions = _skewed(rng, 1, limits.max_partitions)
    if partitions >= 2 and rng.random() < 0.3:
        first = rng.randint(1, partitions - 1)
        topics = {"events": first, "orders": partitions - first}
    else:
        topics = {"events": partitions}
    total = partitions
    slots = members  # consumer slots that exist (start adds some)
    actions: list[Action] = []
    kinds = list(_ACTION_WEIGHTS)
    weights = [_ACTION_WEIGHTS[k] for k in kinds]
    for _ in range(rng.randint(0, limits.max_actions)):
        kind = rng.choices(kinds, weights)[0]
        at = rng.randrange(FIRST_FAULT_MS, FAULT_WINDOW_MS)
        if kind == "start":
            count = rng.randint(1, 3)
            if slots + count > limits.max_members:
                continue
            slots += count
            actions.append(Action("start", at_ms=at, count=count))
        elif kind == "add_partitions":
            room = limits.max_partitions - total
            if room < 1:
                continue
            count = rng.randint(1, min(room, 20))
            total += count
            actions.append(
                Action("add_partitions", at_ms=at, count=count, topic=rng.choice(sorted(topics)))
            )
        elif kind == "coordinator_restart":
            actions.append(Action(kind, at_ms=at, downtime_ms=rng.choice((0, 500, 2000, 8000))))
        elif kind in ("crash", "stop", "enforce_rebalance"):
            actions.append(Action(kind, at_ms=at, members=_members(rng, slots)))
        elif kind == "restart":
            actions.append(
                Action(
                    kind,
                    at_ms=at,
                    members=_members(rng, slots),
                    crash=rng.random() < 0.5,
                    downtime_ms=rng.choice((0, 1000, 5000, 15000)),
                )
            )
        elif kind == "rolling_bounce":
            actions.append(
                Action(
                    kind,
                    at_ms=at,
                    members=_members(rng, slots),
                    crash=rng.random() < 0.3,
                    gap_ms=rng.choice((1000, 3000, 5000)),
                    downtime_ms=rng.choice((0, 1000, 3000)),
                )
            )
        else:  # slow (a stall) or cut (a network partition of the members)
            durations = _SLOW_MS if kind == "slow" else _CUT_MS
            actions.append(
                Action(
                    kind,
                    at_ms=at,
                    members=_members(rng, slots),
                    duration_ms=rng.choice(durations),
                )
            )
    if limits.zero_timeouts:
        actions.extend(_zero_timeout_restarts(protocol, seed, members))
    actions.sort(key=lambda a: a.at_ms or 0)
    faults_end = max([FIRST_FAULT_MS] + [(a.at_ms or 0) + a.span_ms(slots) for a in actions])
    latency_ms = rng.randint(0, 5)
    if limits.zero_timeouts:
        latency_ms = max(latency_ms, 1)  # Rule 4
    network = NetworkConfig(
        latency_ms=latency_ms,
        jitter_ms=rng.choice((0, 0, 5, 20)),
        loss=rng.choice((0.0, 0.0, 0.0, 0.01, 0.03)),
        duplicate=rng.choice((0.0, 0.0, 0.0, 0.01, 0.05)),
        until_ms=faults_end,
    )
    data = DataConfig(
        records_per_second=rng.choice((1, 2, 5)),
        produce_interval_ms=rng.choice((1000, 2000)),
        processing_us_per_record=rng.choice((100, 1000, 5000)),
        max_poll_records=rng.choice((50, 500)),
        restore_ms=rng.choice((0, 0, 0, 2000)),
    )
    consumer: dict[str, Any] = {
        "max.poll.interval.ms": _MAX_POLL_INTERVAL_MS,
        "enable.auto.commit": rng.random() < 0.5,
    }
    broker: dict[str, Any] = {"group.initial.rebalance.delay.ms": rng.choice((0, 3000))}
    if protocol == "consumer":
        broker.update(
            {
                "group.consumer.min.session.timeout.ms": 10000,
                "group.consumer.session.timeout.ms": 10000,
                "group.consumer.min.heartbeat.interval.ms": 3000,
                "group.consumer.heartbeat.interval.ms": 3000,
            }
        )
    else:
        consumer.update({"session.timeout.ms": 10000, "heartbeat.interval.ms": 3000})
    return fit_to_group(
        Scenario(
            name=f"soak-{protocol}-{seed}",
            description=f"regroup soak --protocol {protocol} --first-seed {seed} --seeds 1",
            duration_ms=faults_end + SETTLE_MS,
            protocols=(protocol,),
            members=members,
            protocol=protocol,
            static=rng.random() < 0.2,
            start_spread_ms=rng.choice((0, 3000)),
            topics=topics,
            data=data,
            network=network,
            consumer=consumer,
            broker=broker,
            actions=tuple(actions),
        )
    )


def fault_counts(scenario: Scenario) -> Counter[str]:
    """How many faults of each kind a schedule holds (network features count once)."""
    counts: Counter[str] = Counter(a.action for a in scenario.actions)
    network = scenario.network
    if network.loss:
        counts["loss"] += 1
    if network.jitter_ms:
        counts["jitter"] += 1
    if network.duplicate:
        counts["duplicate"] += 1
    return counts


def fit_to_group(scenario: Scenario) -> Scenario:
    """``scenario`` without the member indexes that do not exist at their action's time.

    The simulator refuses an action aimed at a consumer that has not been
    started by then (``Settings``: the initial members and the ``start`` actions
    before it, in time order). A schedule is drawn in one order and sorted by
    time, and the minimiser removes ``start`` actions and shrinks the group, so
    an index can outrun the group; it is dropped here, and an action left with
    no member is dropped with it. The simulator used to skip such an index, so
    a seed does what it did before; only the step event of an action that
    aimed at no existing member is gone from its log.
    """
    timed = sorted(
        ((start, index, action) for index, (start, action) in enumerate(scenario.timed_actions())),
        key=lambda item: (item[0], item[1]),
    )
    slots = scenario.members
    fitted: dict[int, Action | None] = {}
    for _, index, action in timed:
        if action.action == "start":
            slots += action.count
        elif not isinstance(action.members, str) and action.action not in _GROUP_ACTIONS:
            kept = tuple(m for m in action.members if -slots <= m < slots)
            if kept != action.members:
                fitted[index] = replace(action, members=kept) if kept else None
    if not fitted:
        return scenario
    actions = tuple(fitted.get(index, action) for index, action in enumerate(scenario.actions))
    return replace(scenario, actions=tuple(a for a in actions if a is not None))


#: Actions that name no member (``members`` is not read for them).
_GROUP_ACTIONS = frozenset({"add_partitions", "coordinator_restart"})
