"""One simulation run: the world, the coordinator, the consumers and the scenario.

Theory of operation
-------------------

``Simulation(settings)`` resolves the settings (``settings.plan_run``) and
wires the run; ``run()`` plays the scenario until its end. This module is the
top of the simulator: it imports every part and no part imports it (an
import-linter contract keeps ``regroup.sim``'s modules a layered stack). The
parts, one module each:

* ``world``: the virtual clock and the loop, one *step* (one scheduled
  action, run to its end) at a time;
* ``context``: ``RunContext``, what the parts share (the clock, the group's
  names, the cluster's metadata, the data plane, ``emit``), built before
  them and handed to each;
* ``journal``: where ``emit`` goes: the metrics, the log, the ``taps`` given
  (``broker_log``, for one), the invariant checker, and the stability watch's
  hooks;
* ``consumer``: one consumer process slot each, its member and its poll loop;
* ``transport``: every request a member sends travels the network to the real
  ``GroupCoordinator`` and its replies travel back; the coordinator's timers;
* ``director``: the scenario's actions at their times;
* ``stability``: when the group is stable (``group_stabilized``).

Wiring: no part reaches another through the simulation. What one part does
to another is a callable injected into it: a consumer sends with the
transport's ``send`` and reports its changes to the watch's
``consumer_changed``; the director opens consumer slots with
``new_consumer`` (here: it wires each slot) and gives the coordinator new
metadata with the transport's ``update_metadata``.

The stability check has one place: after each step the loop calls
``_after_step``, which asks the watch whether the group has become stable and
publishes ``group_stabilized`` if so. No part calls the check, so where it
runs is a property of the loop (``world``, Rule 4; ``stability``, Rule 1).

Determinism: all randomness is ``random.Random`` seeded from the seed (the
network's, the coordinator's, each KIP-848 member's); every iteration over a
set is sorted; nothing reads a clock.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from regroup.coordinator.service import GroupCoordinator
from regroup.events import (
    Event,
    InvariantViolated,
    ScenarioStep,
    SimulationEnded,
    SimulationStarted,
)
from regroup.model.metadata import MetadataImage
from regroup.sim.collector import tuned_collector
from regroup.sim.consumer import SimConsumer
from regroup.sim.context import RunContext
from regroup.sim.data_plane import DataPlane
from regroup.sim.director import Director
from regroup.sim.invariants import InvariantChecker
from regroup.sim.journal import Journal
from regroup.sim.metrics import MetricsAccumulator
from regroup.sim.network import Network
from regroup.sim.partition_table import PartitionTable
from regroup.sim.settings import GROUP_ID, RunResult, Settings, plan_run
from regroup.sim.stability import StabilityWatch
from regroup.sim.transport import COORDINATOR, Transport
from regroup.sim.world import World

__all__ = ["COORDINATOR", "RunResult", "Settings", "Simulation", "run_simulation"]


class Simulation:
    """See the module docstring."""

    def __init__(
        self,
        settings: Settings,
        *,
        keep_events: bool = True,
        taps: Sequence[Callable[[Event], None]] = (),
    ) -> None:
        plan = plan_run(settings)
        #: What the run was resolved to (``assumptions`` reads it).
        self.plan = plan
        scenario = plan.scenario
        self.scenario = scenario
        self.protocol = plan.protocol
        self.group_protocol = plan.group_protocol
        self.group_id = GROUP_ID
        self.seed = settings.seed
        self.keep_events = keep_events
        self.member_count = plan.member_count
        self.data = scenario.data
        self.assignor = plan.assignor
        self.consumer_props = plan.consumer_props

        metadata = MetadataImage.from_partition_counts(plan.topics)
        self.world = World()
        self.network = Network(scenario.network, random.Random(f"{self.seed}/network"))
        self.coordinator = GroupCoordinator(
            plan.broker, metadata=metadata, rng=random.Random(f"{self.seed}/coordinator")
        )
        # The watch reads the coordinator, and the journal wakes it: both come before emit.
        self.watch = StabilityWatch(self.group_id, self.group_protocol, self.coordinator)
        # The two observers number partitions alike, and look up each event's once.
        observed = PartitionTable()
        self.journal = Journal(
            # Ordered: every event is at the world's time or earlier, and the run ends at ``end``.
            MetricsAccumulator(ordered=True, table=observed),
            InvariantChecker(observed),
            keep_events=keep_events,
            hooks=self.watch.event_hooks(),
            taps=taps,
        )
        emit = self.journal.emit
        self.plane = DataPlane(scenario.data.plane, self.group_id, self.journal)
        self.plane.set_topics(plan.topics, 0)
        # The context, then the parts that are handed it.
        self.ctx = RunContext(
            group_id=self.group_id,
            group_protocol=self.group_protocol,
            seed=self.seed,
            world=self.world,
            emit=emit,
            topics=plan.topics,
            metadata=metadata,
            data=scenario.data,
            plane=self.plane,
            records_processed=self.journal.records_processed,
        )
        self.consumers: list[SimConsumer] = []
        self._static = plan.static
        self._broker = plan.broker
        #: Coordinator failovers so far (``coordinator_restart``).
        self.coordinator_restarts = 0
        self.transport = Transport(
            self.ctx,
            self.network,
            self.coordinator,
            timeouts=scenario.network.loss > 0 or any(a.action == "cut" for a in scenario.actions),
            keep_records=any(a.action == "coordinator_restart" for a in scenario.actions),
        )
        self.director = Director(
            self.ctx,
            self.network,
            self.consumers,
            new_consumer=self.new_consumer,
            update_metadata=self.transport.update_metadata,
            restart_coordinator=self.restart_coordinator,
        )
        self._duration = plan.duration_ms

    def new_consumer(self) -> SimConsumer:
        """A new consumer slot (``c00``, ``c01`` ...), not started."""
        index = len(self.consumers)
        consumer = SimConsumer(
            self.ctx,
            index,
            self.consumer_props,
            send=self.transport.send,
            changed=self.watch.consumer_changed,
        )
        if self._static:
            consumer.props["group.instance.id"] = f"instance-{consumer.client_id}"
        self.consumers.append(consumer)
        return consumer

    def restart_coordinator(self, downtime_ms: int) -> None:
        """The coordinator fails over now; a new one loads its records ``downtime_ms`` later.

        As a broker failover: the new coordinator is built with the same configs
        and the old one's metadata image, replays the compacted records, arms its
        timers (``GroupCoordinator.replay`` then ``on_loaded``), then gets the
        cluster's current image (a change made during the failover). A second
        failover while one is under way supersedes it.
        """
        self.coordinator_restarts += 1
        self.transport.coordinator_down()
        self.watch.set_coordinator(None)
        self.world.at(
            self.world.now_ms + downtime_ms, self._coordinator_up, self.coordinator_restarts
        )

    def _coordinator_up(self, restart: int) -> None:
        if restart != self.coordinator_restarts:
            return
        # The records were written against the old coordinator's image; the new one loads
        # with it, then gets the cluster's image now, as a loaded Kafka coordinator shard is
        # handed the newest metadata image (``onNewMetadataImage``): a change made during
        # the failover (partitions added) reaches the groups as a metadata update.
        known = self.coordinator.metadata
        coordinator = GroupCoordinator(
            self._broker,
            metadata=known,
            rng=random.Random(f"{self.seed}/coordinator/{restart}"),
        )
        self.coordinator = coordinator
        replayed = self.transport.coordinator_up(coordinator)
        if self.ctx.metadata is not known:
            self.transport.update_metadata(self.ctx.metadata, self.world.now_ms)
        self.watch.set_coordinator(coordinator)
        self.journal.emit(
            ScenarioStep(
                ts_ms=self.world.now_ms,
                group_id=self.group_id,
                action="coordinator_loaded",
                detail=f"{replayed} records replayed",
            )
        )

    @property
    def topics(self) -> dict[str, int]:
        return self.ctx.topics

    @property
    def metadata(self) -> MetadataImage:
        return self.ctx.metadata

    # -- running ---------------------------------------------------------------------------------

    def run(
        self,
        progress: Callable[[int, int], None] | None = None,
        *,
        max_steps: int | None = None,
    ) -> RunResult:
        """Run the scenario to its end; ``max_steps`` bounds the steps (the world raises
        ``StepBudgetExceeded`` past it)."""
        end = self._duration
        self.journal.emit(
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
            self.world.at(start, self.director.act, action)
        spread = self.scenario.start_spread_ms
        starts = random.Random(f"{self.seed}/start")
        for _ in range(self.member_count):
            consumer = self.new_consumer()
            offset = starts.randrange(spread) if spread > 0 else 0
            self.world.at(offset, self._start_initial, consumer)
        on_advance = None
        if progress is not None:
            last = [0]

            def on_advance(now: int) -> None:
                if now - last[0] >= 1000:
                    last[0] = now
                    progress(now, end)

        with tuned_collector():
            self.world.run_until(
                end, on_advance=on_advance, after_step=self._after_step, max_steps=max_steps
            )
        journal = self.journal
        journal.emit(SimulationEnded(ts_ms=end, group_id=self.group_id))
        for violation in journal.checker.finish(end):
            journal.record(violation)
        if progress is not None:
            progress(end, end)
        return RunResult(
            metrics=journal.metrics.result(),
            events=journal.events,
            duration_ms=end,
            steps=self.world.steps,
            consumer_errors={c.client_id: list(c.errors) for c in self.consumers if c.errors},
        )

    def _after_step(self) -> None:
        """After each step of the loop, and only there: has the group become stable?"""
        stabilized = self.watch.check(self.world.now_ms, self.ctx.metadata)
        if stabilized is not None:
            self.journal.emit(stabilized)

    def _start_initial(self, consumer: SimConsumer) -> None:
        consumer.start(self.world.now_ms)

    def _produce(self) -> None:
        now = self.world.now_ms
        self.plane.tick(now)
        self.world.at(self.plane.next_tick(now), self._produce)


def run_simulation(
    settings: Settings,
    *,
    keep_events: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    return Simulation(settings, keep_events=keep_events).run(progress)


def violations_of(result: RunResult) -> list[InvariantViolated]:
    return [e for e in result.events if isinstance(e, InvariantViolated)]
