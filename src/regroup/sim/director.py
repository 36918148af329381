"""The scenario's actions, played at their times against the running group.

Each action is scheduled on the world at its ``at_ms`` (by the simulation);
``act`` plays it and records what it did as ``scenario_step`` events (one per
member it touched), so a log shows why the group moved. An action is one
step of the world, and the stability check runs after steps, never inside
one: an action that stops three members is one change, not three.

The director is given the run's context (it is the one writer of the
cluster's topics and metadata), the network (to cut and heal), the consumer
slots, and two callables: ``new_consumer`` (a new slot, wired by the
simulation) and ``update_metadata`` (the transport's: tell the coordinator).

The actions (see ``regroup.sim.scenario`` for their fields): ``start`` new
members; ``stop`` (Kafka ``close``) or ``crash`` (no leave); ``restart`` and
``rolling_bounce`` (stop or crash, then start again after ``downtime_ms``,
possibly with new configs: the upgrade paths; a ``start`` applies its
``config`` to the new consumers too); ``slow`` (the application
stalls); ``cut`` (the network drops everything to and from the member until
it heals); ``add_partitions`` (the coordinator and every member see the new
metadata); ``enforce_rebalance`` (the member's ``enforceRebalance``);
``coordinator_restart`` (the coordinator fails over: ``restart_coordinator``,
the simulation's, given the downtime).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from regroup.events import ScenarioStep
from regroup.model.metadata import MetadataImage, TopicImage
from regroup.sim.consumer import SimConsumer
from regroup.sim.context import RunContext
from regroup.sim.network import Network
from regroup.sim.scenario import Action, ScenarioError

__all__ = ["Director"]


class Director:
    """Plays scenario actions on a simulation (see the module docstring)."""

    __slots__ = (
        "_consumers",
        "_new_consumer",
        "_restart_coordinator",
        "_update_metadata",
        "ctx",
        "network",
    )

    def __init__(
        self,
        ctx: RunContext,
        network: Network,
        consumers: list[SimConsumer],
        *,
        new_consumer: Callable[[], SimConsumer],
        update_metadata: Callable[[MetadataImage, int], None],
        restart_coordinator: Callable[[int], None] | None = None,
    ) -> None:
        self.ctx = ctx
        self.network = network
        #: Every consumer slot of the run, in index order (read only: slots are added by
        #: ``new_consumer``, which appends to this list).
        self._consumers = consumers
        self._new_consumer = new_consumer
        #: Tells the coordinator the cluster's new metadata (the transport's).
        self._update_metadata = update_metadata
        #: Fails the coordinator over, back after the given downtime (the simulation's).
        self._restart_coordinator = restart_coordinator

    def _targets(self, action: Action) -> list[SimConsumer]:
        consumers = self._consumers
        if isinstance(action.members, str):
            return [c for c in consumers if c.alive]
        out: list[SimConsumer] = []
        for index in action.members:
            if -len(consumers) <= index < len(consumers):
                out.append(consumers[index])
        return out

    def _step(self, action: str, client_id: str = "", detail: str = "", **kw: Any) -> None:
        ctx = self.ctx
        ctx.emit(
            ScenarioStep(
                ts_ms=ctx.world.now_ms,
                group_id=ctx.group_id,
                action=action,
                client_id=client_id,
                detail=detail,
                **kw,
            )
        )

    def act(self, action: Action) -> None:
        """Play one action now (one step of the world)."""
        world = self.ctx.world
        now = world.now_ms
        kind = action.action
        if kind == "start":
            for _ in range(action.count):
                consumer = self._new_consumer()
                consumer.props.update(action.config)
                self._step("start", consumer.client_id, _detail(action.config))
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
                world.at(now + i * action.gap_ms, self._restart, consumer, action)
        elif kind == "slow":
            for consumer in self._targets(action):
                self._step("slow", consumer.client_id, f"stall {action.duration_ms} ms")
                consumer.stall_ms += action.duration_ms
        elif kind == "cut":
            for consumer in self._targets(action):
                self._step("cut", consumer.client_id, f"for {action.duration_ms} ms")
                self.network.cut(consumer.client_id)
                world.at(now + action.duration_ms, self._heal, consumer)
        elif kind == "add_partitions":
            self._add_partitions(action)
        elif kind == "enforce_rebalance":
            for consumer in self._targets(action):
                self._enforce(consumer)
        elif kind == "coordinator_restart":
            if self._restart_coordinator is None:
                raise ScenarioError("coordinator_restart: this run cannot restart its coordinator")
            self._step("coordinator_restart", detail=f"down {action.downtime_ms} ms")
            self._restart_coordinator(action.downtime_ms)

    def _restart(self, consumer: SimConsumer, action: Action) -> None:
        world = self.ctx.world
        now = world.now_ms
        self._step("crash" if action.crash else "stop", consumer.client_id, "restart")
        if action.crash:
            consumer.crash(now)
        else:
            consumer.stop(now)
        world.at(now + action.downtime_ms, self._restart_start, consumer, action)

    def _restart_start(self, consumer: SimConsumer, action: Action) -> None:
        now = self.ctx.world.now_ms
        if consumer.alive:  # still closing: give up waiting
            consumer.crash(now)
        consumer.props.update(action.config)
        self._step("start", consumer.client_id, _detail(action.config))
        consumer.start(now)

    def _heal(self, consumer: SimConsumer) -> None:
        self._step("heal", consumer.client_id)
        self.network.heal(consumer.client_id)
        consumer.drive(self.ctx.world.now_ms)

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
        consumer.drive(self.ctx.world.now_ms)

    def _add_partitions(self, action: Action) -> None:
        ctx = self.ctx
        now = ctx.world.now_ms
        topics = ctx.topics
        topic = action.topic or sorted(topics)[0]
        if topic not in topics:
            raise ScenarioError(f"add_partitions: unknown topic {topic!r}")
        current = topics[topic]
        new = current + (action.count or current)
        topics[topic] = new
        image = ctx.metadata.topic(topic)
        assert image is not None
        metadata = ctx.metadata = ctx.metadata.with_topic(TopicImage(image.topic_id, topic, new))
        self._step("add_partitions", detail=f"{topic}: {current} -> {new}", topics={topic: new})
        ctx.plane.set_topics(topics, now)
        self._update_metadata(metadata, now)
        for consumer in self._consumers:
            if consumer.member is not None:
                consumer.member.update_metadata(metadata)
                consumer.drive(now)


def _detail(config: Mapping[str, Any]) -> str:
    """A step's ``detail`` for a process started with ``config``: ``k=v, ...`` by key."""
    return ", ".join(f"{k}={v}" for k, v in sorted(config.items()))
