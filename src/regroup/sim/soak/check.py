"""One soak seed: run its scenario, check every invariant, and the end of the run.

Rule 1: the invariants are the simulator's own (``regroup.sim.invariants.INVARIANTS``,
checked online over the event log), plus two end-of-run checks made here:

* ``group_settled``: when the run ends (the faults stopped ``SETTLE_MS`` of
  virtual time earlier) a group with a live consumer is stable: the
  coordinator's group is ``Stable`` with exactly the live members, every one at
  the current generation/epoch and holding what it was given (the simulator's
  ``StabilityWatch``); no member is stuck rejoining, revoking or FATAL;
* ``member_fatal``: no running member is FATAL, except for the fatal errors a
  schedule causes by Kafka's design (``EXPECTED_FATAL``); such a member's
  application would exit, so it is left out of the two checks below and
  counted (``expected_fatal``);
* ``end_ownership``: then every partition of the topics is owned by exactly one
  live member (read from the members themselves, not from events).

Rule 2: one overlap is Kafka's on purpose and is not a violation: a *zombie*.
A member the coordinator has already removed (``member_left``: session or
rebalance timeout, fenced) may still hold and process its partitions until it
notices, in Kafka as in the simulator (see the invariants module, Rule 1), so an
``exclusive_ownership`` report whose earlier owners had all been removed by the
coordinator (and had not joined again since) is counted as ``zombie_overlaps``,
not as a violation. So is a ``commit_by_owner`` report whose named owners are
all such zombies: the committing member owned the partition in the group the
coordinator knows and gave it up (the checker's own "nobody's partition" case,
seen from the coordinator). A zombie's own commits are still checked: Kafka
fences them by generation/epoch, and a stored one is a violation.

Classic groups have a second kind of stale owner (eager and cooperative): a
member that did not rejoin before the rebalance timeout. The coordinator
completes the rebalance without it; a dynamic member is removed (above), but a
static one is kept in the new generation without having rejoined (KIP-345;
Kafka ``GroupCoordinator.onCompleteJoin`` removes only the dynamic members that
have not rejoined), and until it rejoins it still holds the partitions of its
older generation. An overlap whose other owners hold partitions from an older
generation than the new owner's is therefore counted as a zombie overlap too
(classic only: a KIP-848 coordinator assigns a partition only after its owner
acknowledged the revocation, so there every overlap with a member still in the
group is a violation).

Rule 3: ``extra_checks`` (tests only) adds checks of the finished run, so the
minimiser can be shown a failure on a known condition without weakening a real
invariant.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from regroup.events import InvariantViolated, MemberJoined, MemberLeft, PartitionsAssigned
from regroup.sim.consumer import SimConsumer
from regroup.sim.scenario import Scenario
from regroup.sim.settings import Settings
from regroup.sim.simulation import Simulation
from regroup.sim.soak.schedule import fault_counts
from regroup.sim.stability import StabilityWatch

__all__ = ["END_CHECKS", "ExtraCheck", "SeedOutcome", "Violation", "run_scenario"]

END_CHECKS = ("group_settled", "end_ownership", "member_fatal")


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
    #: Consumers that hit a fatal error the schedule causes by Kafka's design.
    expected_fatal: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.violations)


def _others(invariant: str, detail: str) -> list[str]:
    """The other owners an ``exclusive_ownership`` / ``commit_by_owner`` detail names."""
    if invariant == "exclusive_ownership":
        _, _, rest = detail.partition(" while ")
        owners, _, _ = rest.rpartition(" still owns it")
    elif invariant == "commit_by_owner" and " owned by " in detail:
        _, _, owners = detail.partition(" owned by ")
    else:
        return []
    return [o for o in owners.split(", ") if o]


#: Fatal errors a schedule can cause by Kafka's design (the application gets them from
#: ``poll`` and exits): a KIP-848 static member restarted before its previous instance's
#: session expired (UNRELEASED_INSTANCE_ID; Kafka ``ConsumerGroupHeartbeat``), a static
#: member replaced by a newer instance of itself (FENCED_INSTANCE_ID, KIP-345).
EXPECTED_FATAL = ("UNRELEASED_INSTANCE_ID", "FENCED_INSTANCE_ID")


def _fatal(consumer: SimConsumer) -> str | None:
    """The member's fatal error as its application saw it, or ``None`` if it is not FATAL."""
    state = getattr(consumer.member, "state", None)
    if getattr(state, "name", "") != "FATAL":
        return None
    for line in reversed(consumer.errors):  # "<ms>: MemberFatalError: <CODE>: <message>"
        _, _, error = line.partition(": MemberFatalError: ")
        if error:
            return error
    return "FATAL (no error raised to the application)"


def _end_checks(sim: Simulation, outcome_fatal: list[str]) -> list[Violation]:
    now = sim.world.now_ms
    found: list[Violation] = []
    live: list[SimConsumer] = []
    for consumer in sim.consumers:
        if not consumer.alive or consumer.member is None:
            continue
        fatal = _fatal(consumer)
        if fatal is None:
            live.append(consumer)
        elif any(fatal.startswith(code) for code in EXPECTED_FATAL):
            outcome_fatal.append(f"{consumer.client_id}: {fatal}")  # its application exits
        else:
            found.append(Violation("member_fatal", now, f"{consumer.client_id}: {fatal}"))
    if not live:
        return found  # nobody left: nothing can be stable or own anything
    # The simulator's own stability condition, over the consumers still running.
    watch = StabilityWatch(sim.group_id, sim.group_protocol, sim.coordinator)
    for consumer in live:
        watch.consumer_changed(consumer)
    if sim.transport.down or watch.check(now, sim.ctx.metadata) is None:
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
    removed: set[str] = set()  # members the coordinator removed and that did not rejoin
    #: member -> the generation/epoch of its last assignment, as the member saw it.
    assigned: dict[str, int] = {}
    classic = protocol != "consumer"
    violations: list[Violation] = []
    zombies = 0
    for event in result.events:
        if isinstance(event, MemberLeft):
            removed.add(event.member_id)
        elif isinstance(event, MemberJoined):
            removed.discard(event.member_id)
        elif isinstance(event, PartitionsAssigned):
            assigned[event.member_id] = event.generation_or_epoch
        elif isinstance(event, InvariantViolated):
            others = _others(event.invariant, event.detail)
            newer = assigned.get(event.member_id or "", -1)
            if others and all(
                o in removed or (classic and assigned.get(o, newer) < newer) for o in others
            ):
                zombies += 1
                continue
            violations.append(Violation(event.invariant, event.ts_ms, event.detail))
    fatal: list[str] = []
    violations.extend(_end_checks(sim, fatal))
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
        expected_fatal=fatal,
    )
