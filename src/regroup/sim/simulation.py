"""One simulation run: the world, the coordinator, the consumers and the scenario.

Theory of operation
-------------------

``Simulation(settings)`` builds a ``World`` (virtual clock), a ``Network``
(seeded from the scenario seed), a ``DataPlane``, the real
``GroupCoordinator`` and one ``SimConsumer`` per member, then ``run()``:

* every request a member sends travels the network to the coordinator
  (``send`` -> ``_deliver``): ``coordinator.handle(token, request, now)``; the
  replies, now or later (parked JoinGroup / SyncGroup), travel back by token
  (``_respond``); a request the network dropped fails after the consumer's
  ``request.timeout.ms`` (``_timeout``);
* the coordinator's timers fire at ``coordinator.next_deadline()``, each
  member's at ``member.next_deadline()`` (a wake-up is superseded, not
  cancelled: a stale one finds a different ``wake_at`` and returns);
* every event goes, in order, to the invariant checker (its violations are
  events too), the metrics accumulator, and the log (``keep_events``);
* ``group_stabilized`` is emitted when every live consumer's member is stable,
  the coordinator's group is ``Stable`` and its members are exactly the live
  consumers' members; checked only after something relevant changed.

Determinism: all randomness is ``random.Random`` seeded from the seed (the
network's, the coordinator's, each KIP-848 member's); every iteration over a
set is sorted; nothing reads a clock.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from regroup.assignors.classic.api import RebalanceProtocol
from regroup.coordinator.config import GroupCoordinatorConfig, InvalidConfigError
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.service import GroupCoordinator
from regroup.events import (
    Event,
    GenerationBumped,
    GroupEpochBumped,
    GroupStabilized,
    GroupStateChanged,
    InvariantViolated,
    MemberJoined,
    MemberLeft,
    RebalanceStarted,
    ScenarioStep,
    SimulationEnded,
    SimulationStarted,
)
from regroup.model.metadata import MetadataImage, TopicImage
from regroup.sim.consumer import SimConsumer
from regroup.sim.data_plane import DataPlane
from regroup.sim.invariants import InvariantChecker
from regroup.sim.metrics import MetricsAccumulator, RunMetrics
from regroup.sim.network import Network
from regroup.sim.scenario import Action, Scenario, ScenarioError
from regroup.sim.world import World

__all__ = ["COORDINATOR", "RunResult", "Settings", "Simulation", "run_simulation"]

COORDINATOR = "coordinator"
GROUP_ID = "sim-group"

_DIRTYING = (
    MemberJoined,
    MemberLeft,
    RebalanceStarted,
    GroupEpochBumped,
    GenerationBumped,
    GroupStateChanged,
)


@dataclass(frozen=True, slots=True)
class Settings:
    """A scenario plus the command line's choices (``None``: the scenario's)."""

    scenario: Scenario
    protocol: str | None = None
    assignor: str | None = None
    members: int | None = None
    partitions: int | None = None
    seed: int = 0
    static: bool | None = None
    duration_ms: int | None = None
    #: Kafka configs from the command line: consumer configs and ``group.*`` broker configs.
    configs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class RunResult:
    metrics: RunMetrics
    events: list[Event]
    duration_ms: int
    steps: int
    consumer_errors: dict[str, list[str]]


def _classic_strategy(protocol: str, assignor: str | None) -> tuple[str, str]:
    """``(partition.assignment.strategy, rebalance.protocol.selection)`` for --protocol."""
    from regroup.assignors.classic.registry import create_classic_assignor

    name = assignor or ("range" if protocol == "eager" else "cooperative-sticky")
    try:
        supported = create_classic_assignor(name).supported_protocols()
    except Exception as error:
        raise ScenarioError(str(error)) from None
    if protocol == "eager" and RebalanceProtocol.COOPERATIVE in supported:
        raise ScenarioError(
            f"assignor {name!r} runs the COOPERATIVE protocol; use --protocol cooperative"
        )
    if protocol == "cooperative" and RebalanceProtocol.COOPERATIVE not in supported:
        raise ScenarioError(f"assignor {name!r} does not support the COOPERATIVE protocol")
    return name, "static"


class Simulation:
    """See the module docstring."""

    def __init__(self, settings: Settings, *, keep_events: bool = True) -> None:
        scenario = settings.scenario
        protocol = settings.protocol or scenario.protocol
        if protocol not in scenario.protocols:
            raise ScenarioError(
                f"scenario {scenario.name!r} runs under {', '.join(scenario.protocols)}, "
                f"not {protocol}"
            )
        self.scenario = scenario
        self.protocol = protocol
        self.group_protocol = "consumer" if protocol == "consumer" else "classic"
        self.group_id = GROUP_ID
        self.seed = settings.seed
        self.keep_events = keep_events
        members = settings.members if settings.members is not None else scenario.members
        if members < 0:
            raise ScenarioError("members must be >= 0")
        self.member_count = members
        topics = dict(scenario.topics)
        if settings.partitions is not None:
            if settings.partitions < 1:
                raise ScenarioError("partitions must be >= 1")
            topics = {t: settings.partitions for t in topics}
        self.topics: dict[str, int] = topics
        self.metadata = MetadataImage.from_partition_counts(topics)
        self.data = scenario.data
        static = settings.static if settings.static is not None else scenario.static

        consumer_props, broker_props = self._split_configs(scenario, settings)
        if "group.consumer.session.timeout.ms" in broker_props:
            value = int(broker_props["group.consumer.session.timeout.ms"])
            broker_props.setdefault("group.consumer.min.session.timeout.ms", min(value, 45000))
            broker_props.setdefault("group.consumer.max.session.timeout.ms", max(value, 60000))
        if "group.consumer.heartbeat.interval.ms" in broker_props:
            value = int(broker_props["group.consumer.heartbeat.interval.ms"])
            broker_props.setdefault("group.consumer.min.heartbeat.interval.ms", min(value, 5000))
            broker_props.setdefault("group.consumer.max.heartbeat.interval.ms", max(value, 15000))
        if "group.min.session.timeout.ms" not in broker_props and "session.timeout.ms" in (
            consumer_props
        ):
            broker_props["group.min.session.timeout.ms"] = min(
                6000, int(consumer_props["session.timeout.ms"])
            )
        try:
            broker = GroupCoordinatorConfig.from_properties(broker_props)
        except InvalidConfigError as error:
            raise ScenarioError(str(error)) from None

        assignor = settings.assignor or scenario.assignor
        if self.group_protocol == "classic":
            if "partition.assignment.strategy" in consumer_props:
                if settings.assignor is not None:
                    raise ScenarioError(
                        f"scenario {scenario.name!r} sets partition.assignment.strategy itself"
                    )
                self.assignor = str(consumer_props["partition.assignment.strategy"])
            else:
                name, selection = _classic_strategy(protocol, assignor)
                consumer_props["partition.assignment.strategy"] = name
                consumer_props.setdefault("rebalance.protocol.selection", selection)
                self.assignor = name
        else:
            name = assignor or broker.group_consumer_assignors[0]
            if name not in broker.group_consumer_assignors:
                raise ScenarioError(
                    f"unknown server assignor {name!r}; the coordinator has "
                    f"{', '.join(broker.group_consumer_assignors)}"
                )
            consumer_props["group.remote.assignor"] = name
            self.assignor = name
        self.consumer_props = consumer_props

        self.world = World()
        self.network = Network(scenario.network, random.Random(f"{self.seed}/network"))
        self.coordinator = GroupCoordinator(
            broker, metadata=self.metadata, rng=random.Random(f"{self.seed}/coordinator")
        )
        self.plane = DataPlane(scenario.data.plane, self.group_id, self.emit)
        self.plane.set_topics(topics, 0)
        self.checker = InvariantChecker()
        self.metrics = MetricsAccumulator()
        self.events: list[Event] = []
        self.consumers: list[SimConsumer] = []
        self._static = static
        self._inflight: dict[int, tuple[SimConsumer, int, Any]] = {}
        self._token = 0
        self._coordinator_wake: int | None = None
        self._timeouts = scenario.network.loss > 0 or any(
            a.action == "cut" for a in scenario.actions
        )
        self._stable = False
        self._dirty = True
        self._acting = False
        #: Live consumers whose member is not stable (client ids).
        self._unstable: set[str] = set()
        self._duration = (
            settings.duration_ms
            if settings.duration_ms is not None
            else scenario.total_duration_ms()
        )
        # Validate the consumer configs once, before anything runs.
        probe = self._new_consumer()
        self.consumers.pop()
        try:
            probe.props = dict(probe.props)
            self._validate_props(probe.props)
        except ValueError as error:
            raise ScenarioError(str(error)) from None

    # -- configuration ---------------------------------------------------------------------------

    def _split_configs(
        self, scenario: Scenario, settings: Settings
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        broker_names = GroupCoordinatorConfig.kafka_names()
        consumer: dict[str, Any] = {}
        broker: dict[str, Any] = dict(scenario.broker)
        for key, value in [*scenario.consumer.items(), *settings.configs.items()]:
            if key in broker_names:
                broker[key] = value
            else:
                consumer[key] = value
        return consumer, broker

    def _validate_props(self, props: Mapping[str, Any]) -> None:
        from regroup.classic.member_config import ClassicMemberConfig
        from regroup.sim.consumer import PROCESS_CONFIGS, consumer_member_config

        if self.group_protocol == "classic":
            ClassicMemberConfig.from_properties(
                {k: v for k, v in props.items() if k not in PROCESS_CONFIGS}
            )
        else:
            consumer_member_config(self.group_id, "probe", props)

    def _new_consumer(self) -> SimConsumer:
        index = len(self.consumers)
        consumer = SimConsumer(self, index, self.consumer_props)
        if self._static:
            consumer.props["group.instance.id"] = f"instance-{consumer.client_id}"
        self.consumers.append(consumer)
        return consumer

    # -- running ---------------------------------------------------------------------------------

    def run(self, progress: Callable[[int, int], None] | None = None) -> RunResult:
        end = self._duration
        self.emit(
            SimulationStarted(
                ts_ms=0,
                group_id=self.group_id,
                scenario=self.scenario.name,
                group_protocol=self.group_protocol,
                rebalance_protocol=self.protocol,
                assignor=self.assignor,
                seed=self.seed,
                topics=dict(self.topics),
            )
        )
        if self.plane.active:
            self.world.at(self.plane.next_tick(0), self._produce)
        for start, action in self.scenario.timed_actions():
            self.world.at(start, self._act, action)
        spread = self.scenario.start_spread_ms
        starts = random.Random(f"{self.seed}/start")
        for _ in range(self.member_count):
            consumer = self._new_consumer()
            offset = starts.randrange(spread) if spread > 0 else 0
            self.world.at(offset, self._start_initial, consumer)
        on_advance = None
        if progress is not None:
            last = [0]

            def on_advance(now: int) -> None:
                if now - last[0] >= 1000:
                    last[0] = now
                    progress(now, end)

        self.world.run_until(end, on_advance=on_advance)
        self.emit(SimulationEnded(ts_ms=end, group_id=self.group_id))
        for violation in self.checker.finish(end):
            self._record(violation)
        if progress is not None:
            progress(end, end)
        return RunResult(
            metrics=self.metrics.result(),
            events=self.events,
            duration_ms=end,
            steps=self.world.steps,
            consumer_errors={c.client_id: list(c.errors) for c in self.consumers if c.errors},
        )

    def _start_initial(self, consumer: SimConsumer) -> None:
        consumer.start(self.world.now_ms)
        self._check_stable()

    def _produce(self) -> None:
        now = self.world.now_ms
        self.plane.tick(now)
        self.world.at(self.plane.next_tick(now), self._produce)

    # -- events ------------------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        self._record(event)
        for violation in self.checker.observe(event):
            self._record(violation)
        if isinstance(event, _DIRTYING):
            self._stable = False
            self._dirty = True

    def _record(self, event: Event) -> None:
        self.metrics.observe(event)
        if self.keep_events:
            self.events.append(event)

    def consumer_changed(self, consumer: SimConsumer) -> None:
        if consumer.stable or not consumer.alive:
            self._unstable.discard(consumer.client_id)
        else:
            self._unstable.add(consumer.client_id)
            self._stable = False
        self._dirty = True

    def _check_stable(self) -> None:
        if not self._dirty or self._stable or self._acting or self._unstable:
            return
        self._dirty = False
        live = [c for c in self.consumers if c.alive]
        if not live or any(not c.stable for c in live):
            return
        group: Any = self.coordinator.group(self.group_id)
        if group is None or group.state_name() != "Stable":
            return
        members = set(getattr(group, "members", {}))
        if members != {c.member_id for c in live}:
            return
        if self.group_protocol == "classic":
            epoch = int(group.generation_id)
            current = [getattr(c.member, "generation_id", None) for c in live]
        else:
            epoch = int(group.group_epoch)
            current = [getattr(c.member, "member_epoch", None) for c in live]
        if any(value != epoch for value in current):
            return  # stable at an older generation/epoch: the news has not reached it yet
        if self.group_protocol == "consumer" and not all(
            self._holds_coordinator_assignment(c, group.members[c.member_id]) for c in live
        ):
            return  # the coordinator sent partitions that have not arrived yet
        self._stable = True
        self.emit(
            GroupStabilized(
                ts_ms=self.world.now_ms,
                group_id=self.group_id,
                group_protocol=self.group_protocol,
                generation_or_epoch=epoch,
                members=len(live),
            )
        )
        self._stable = True

    def _holds_coordinator_assignment(self, consumer: SimConsumer, record: Any) -> bool:
        """KIP-848: the member owns what the coordinator assigned it, nothing pending."""
        member = consumer.member
        if member is None or any(record.partitions_pending_revocation.values()):
            return False
        held: dict[Any, set[int]] = {}
        for tp in member.assignment:
            image = self.metadata.topic(tp.topic)
            if image is not None:
                held.setdefault(image.topic_id, set()).add(tp.partition)
        wanted = {t: set(p) for t, p in record.assigned_partitions.items() if p}
        return held == wanted

    # -- the network between the consumers and the coordinator -----------------------------------

    def send(self, consumer: SimConsumer, request: Any) -> None:
        now = self.world.now_ms
        self._token += 1
        token = self._token
        self._inflight[token] = (consumer, consumer.incarnation, request)
        if self._timeouts:
            self.world.at(now + consumer.request_timeout_ms, self._timeout, token)
        arrival = self.network.transit(consumer.client_id, COORDINATOR, now)
        if arrival is None:
            if not self._timeouts:
                del self._inflight[token]
            return
        self.world.at(arrival, self._deliver, token)

    def _deliver(self, token: int) -> None:
        entry = self._inflight.get(token)
        if entry is None:
            return
        consumer, _, request = entry
        if not self.network.delivers(consumer.client_id, COORDINATOR):
            return
        result = self.coordinator.handle(token, request, self.world.now_ms)
        self._apply(result)

    def _apply(self, result: CoordinatorResult) -> None:
        now = self.world.now_ms
        for event in result.events:
            self.emit(event)
        for reply in result.replies:
            token = reply.token
            if not isinstance(token, int):
                continue
            entry = self._inflight.get(token)
            if entry is None:
                continue
            consumer = entry[0]
            arrival = self.network.transit(COORDINATOR, consumer.client_id, now)
            if arrival is None:
                if not self._timeouts:
                    del self._inflight[token]
                continue
            self.world.at(arrival, self._respond, token, reply.response)
        self._arm_coordinator()
        self._check_stable()

    def _respond(self, token: int, response: Any) -> None:
        entry = self._inflight.pop(token, None)
        if entry is None:
            return
        consumer, incarnation, request = entry
        if not self.network.delivers(COORDINATOR, consumer.client_id):
            if self._timeouts:
                self._inflight[token] = entry  # lost: the timeout will report it
            return
        if consumer.alive and consumer.incarnation == incarnation:
            consumer.on_response(request, response, self.world.now_ms)
            self._check_stable()

    def _timeout(self, token: int) -> None:
        entry = self._inflight.pop(token, None)
        if entry is None:
            return
        consumer, incarnation, request = entry
        if consumer.alive and consumer.incarnation == incarnation:
            consumer.on_request_failed(request, self.world.now_ms)
            self._check_stable()

    # -- timers -----------------------------------------------------------------------------------

    def _arm_coordinator(self) -> None:
        deadline = self.coordinator.next_deadline()
        if deadline is None:
            return
        if self._coordinator_wake is None or deadline < self._coordinator_wake:
            self._coordinator_wake = deadline
            self.world.at(deadline, self._fire_coordinator, deadline)

    def _fire_coordinator(self, deadline: int) -> None:
        if self._coordinator_wake != deadline:
            return
        self._coordinator_wake = None
        self._apply(self.coordinator.on_timer(self.world.now_ms))

    def arm_consumer(self, consumer: SimConsumer) -> None:
        member = consumer.member
        if member is None:
            return
        deadline = member.next_deadline()
        if deadline is None:
            return
        if consumer.wake_at is None or deadline < consumer.wake_at:
            consumer.wake_at = deadline
            self.world.at(deadline, self._fire_consumer, consumer, consumer.incarnation, deadline)

    def _fire_consumer(self, consumer: SimConsumer, incarnation: int, deadline: int) -> None:
        if consumer.incarnation != incarnation or consumer.wake_at != deadline:
            return
        consumer.wake_at = None
        consumer.drive(self.world.now_ms)
        self._check_stable()

    # -- the scenario -----------------------------------------------------------------------------

    def _targets(self, action: Action) -> list[SimConsumer]:
        if isinstance(action.members, str):
            return [c for c in self.consumers if c.alive]
        out: list[SimConsumer] = []
        for index in action.members:
            if -len(self.consumers) <= index < len(self.consumers):
                out.append(self.consumers[index])
        return out

    def _step(self, action: str, client_id: str = "", detail: str = "", **kw: Any) -> None:
        self.emit(
            ScenarioStep(
                ts_ms=self.world.now_ms,
                group_id=self.group_id,
                action=action,
                client_id=client_id,
                detail=detail,
                **kw,
            )
        )
        self._dirty = True

    def _act(self, action: Action) -> None:
        self._acting = True
        try:
            self._act_now(action)
        finally:
            self._acting = False
        self._check_stable()

    def _act_now(self, action: Action) -> None:
        now = self.world.now_ms
        kind = action.action
        if kind == "start":
            for _ in range(action.count):
                consumer = self._new_consumer()
                self._step("start", consumer.client_id)
                consumer.start(now)
        elif kind in ("stop", "crash"):
            for consumer in self._targets(action):
                self._step(kind, consumer.client_id)
                if kind == "crash":
                    consumer.crash(now)
                else:
                    consumer.stop(now)
        elif kind == "restart":
            for consumer in self._targets(action):
                self._restart(consumer, action)
        elif kind == "rolling_bounce":
            for i, consumer in enumerate(self._targets(action)):
                self.world.at(now + i * action.gap_ms, self._restart, consumer, action)
        elif kind == "slow":
            for consumer in self._targets(action):
                self._step("slow", consumer.client_id, f"stall {action.duration_ms} ms")
                consumer.stall_ms += action.duration_ms
        elif kind == "cut":
            for consumer in self._targets(action):
                self._step("cut", consumer.client_id, f"for {action.duration_ms} ms")
                self.network.cut(consumer.client_id)
                self.world.at(now + action.duration_ms, self._heal, consumer)
        elif kind == "add_partitions":
            self._add_partitions(action)
        elif kind == "enforce_rebalance":
            for consumer in self._targets(action):
                self._enforce(consumer)

    def _restart(self, consumer: SimConsumer, action: Action) -> None:
        now = self.world.now_ms
        self._step("crash" if action.crash else "stop", consumer.client_id, "restart")
        if action.crash:
            consumer.crash(now)
        else:
            consumer.stop(now)
        self.world.at(now + action.downtime_ms, self._restart_start, consumer, action)

    def _restart_start(self, consumer: SimConsumer, action: Action) -> None:
        now = self.world.now_ms
        if consumer.alive:  # still closing: give up waiting
            consumer.crash(now)
        consumer.props.update(action.config)
        detail = ", ".join(f"{k}={v}" for k, v in sorted(action.config.items()))
        self._step("start", consumer.client_id, detail)
        consumer.start(now)
        self._check_stable()

    def _heal(self, consumer: SimConsumer) -> None:
        self._step("heal", consumer.client_id)
        self.network.heal(consumer.client_id)
        consumer.drive(self.world.now_ms)
        self._check_stable()

    def _enforce(self, consumer: SimConsumer) -> None:
        member = consumer.member
        if member is None:
            return
        try:
            member.enforce_rebalance("enforced by the scenario")
        except Exception as error:
            self._step("enforce_rebalance", consumer.client_id, f"refused: {error}")
            return
        self._step("enforce_rebalance", consumer.client_id)
        consumer.drive(self.world.now_ms)

    def _add_partitions(self, action: Action) -> None:
        now = self.world.now_ms
        topic = action.topic or sorted(self.topics)[0]
        if topic not in self.topics:
            raise ScenarioError(f"add_partitions: unknown topic {topic!r}")
        current = self.topics[topic]
        new = current + (action.count or current)
        self.topics[topic] = new
        image = self.metadata.topic(topic)
        assert image is not None
        self.metadata = self.metadata.with_topic(TopicImage(image.topic_id, topic, new))
        self._step("add_partitions", detail=f"{topic}: {current} -> {new}", topics={topic: new})
        self.plane.set_topics(self.topics, now)
        self._apply(self.coordinator.update_metadata(self.metadata, now))
        for consumer in self.consumers:
            if consumer.member is not None:
                consumer.member.update_metadata(self.metadata)
                consumer.drive(now)


def run_simulation(
    settings: Settings,
    *,
    keep_events: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    return Simulation(settings, keep_events=keep_events).run(progress)


def violations_of(result: RunResult) -> list[InvariantViolated]:
    return [e for e in result.events if isinstance(e, InvariantViolated)]
