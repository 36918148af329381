"""One soak seed: run its scenario, check every invariant, and the end of the run.

Rule 1: the invariants are the simulator's own (``regroup.sim.invariants.INVARIANTS``,
checked online over the event log), plus two end-of-run checks made here:

* ``group_settled``: when the run ends (the faults stopped ``SETTLE_MS`` of
  virtual time earlier) a group with a live consumer is stable: the
  coordinator's group is ``Stable`` with exactly the live members, every one at
  the current generation/epoch and holding what it was given (the simulator's
  ``StabilityWatch``); no member is stuck rejoining, revoking or FATAL;
* ``end_ownership``: then every partition of the topics is owned by exactly one
  live member (read from the members themselves, not from events).

Rule 2: one overlap is Kafka's on purpose and is not a violation: a *zombie*.
A member the coordinator has already removed (``member_left``: session or
rebalance timeout, fenced) may still hold and process its partitions until it
notices, in Kafka as in the simulator (see the invariants module, Rule 1), so an
``exclusive_ownership`` report whose earlier owners had all been removed by the
coordinator before it is counted as ``zombie_overlaps``, not as a violation.
Its commits are still checked (``commit_by_owner``): Kafka fences them.

Rule 3: ``extra_checks`` (tests only) adds checks of the finished run, so the
minimiser can be shown a failure on a known condition without weakening a real
invariant.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from regroup.events import InvariantViolated, MemberLeft
from regroup.sim.scenario import Scenario
from regroup.sim.settings import Settings
from regroup.sim.simulation import Simulation
from regroup.sim.soak.schedule import fault_counts

__all__ = ["END_CHECKS", "ExtraCheck", "SeedOutcome", "Violation", "run_scenario"]

END_CHECKS = ("group_settled", "end_ownership")


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: str
    ts_ms: int
    detail: str


#: A test-only check of a finished run: the simulation -> its violations.
ExtraCheck = Callable[[Simulation], list[Violation]]


@dataclass(slots=True)
class SeedOutcome:
    """What one seed did: its violations, faults, virtual and wall time."""

    protocol: str
    seed: int
    violations: list[Violation]
    faults: Counter[str]
    virtual_ms: int
    wall_s: float
    steps: int
    zombie_overlaps: int = 0
    duplicated: int = 0
    coordinator_restarts: int = 0
    members: int = 0
    partitions: int = 0
    consumer_errors: int = 0
    invariants: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.violations)


def _others(detail: str) -> list[str]:
    """The earlier owners named by an ``exclusive_ownership`` detail."""
    _, _, rest = detail.partition(" while ")
    owners, _, _ = rest.rpartition(" still owns it")
    return [o for o in owners.split(", ") if o]


def _end_checks(sim: Simulation) -> list[Violation]:
    now = sim.world.now_ms
    live = [c for c in sim.consumers if c.alive and c.member is not None]
    if not live:
        return []  # nobody left: nothing can be stable or own anything
    found: list[Violation] = []
    if not sim.watch.stable:
        unstable = sorted(c.client_id for c in live if not c.stable)
        found.append(
            Violation(
                "group_settled",
                now,
                f"not stable at the end; unstable consumers: {', '.join(unstable) or 'none'}",
            )
        )
    owners: Counter[tuple[str, int]] = Counter()
    for consumer in live:
        assert consumer.member is not None
        for tp in consumer.member.assignment:
            owners[(tp.topic, tp.partition)] += 1
    expected = {(t, p) for t, n in sim.ctx.topics.items() for p in range(n)}
    missing = sorted(expected - set(owners))
    doubled = sorted(k for k, n in owners.items() if n > 1)
    if missing or doubled:
        found.append(
            Violation(
                "end_ownership",
                now,
                f"unowned: {_names(missing)}; owned twice: {_names(doubled)}",
            )
        )
    return found


def _names(partitions: Sequence[tuple[str, int]]) -> str:
    shown = ", ".join(f"{t}-{p}" for t, p in partitions[:5])
    more = f" (+{len(partitions) - 5})" if len(partitions) > 5 else ""
    return (shown + more) or "none"


def run_scenario(
    scenario: Scenario,
    protocol: str,
    seed: int,
    *,
    extra_checks: Sequence[ExtraCheck] = (),
) -> SeedOutcome:
    """Run ``scenario`` under ``protocol`` with ``seed`` and check it (see the module rules)."""
    started = time.perf_counter()
    sim = Simulation(Settings(scenario, protocol=protocol, seed=seed), keep_events=True)
    result = sim.run()
    removed: dict[str, int] = {}
    violations: list[Violation] = []
    zombies = 0
    for event in result.events:
        if isinstance(event, MemberLeft):
            removed.setdefault(event.member_id, event.ts_ms)
        elif isinstance(event, InvariantViolated):
            if event.invariant == "exclusive_ownership":
                others = _others(event.detail)
                if others and all(removed.get(o, event.ts_ms + 1) <= event.ts_ms for o in others):
                    zombies += 1
                    continue
            violations.append(Violation(event.invariant, event.ts_ms, event.detail))
    violations.extend(_end_checks(sim))
    for check in extra_checks:
        violations.extend(check(sim))
    return SeedOutcome(
        protocol=protocol,
        seed=seed,
        violations=violations,
        faults=fault_counts(scenario),
        virtual_ms=result.duration_ms,
        wall_s=time.perf_counter() - started,
        steps=result.steps,
        zombie_overlaps=zombies,
        duplicated=sim.network.duplicated,
        coordinator_restarts=sim.coordinator_restarts,
        members=sim.member_count,
        partitions=sum(scenario.topics.values()),
        consumer_errors=sum(len(v) for v in result.consumer_errors.values()),
        invariants=sorted({v.invariant for v in violations}),
    )
