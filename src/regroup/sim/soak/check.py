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
not as a violation. So is an ``exclusive_ownership`` report whose *new* owner is
such a zombie: a removed member that has not noticed yet still finishes the
reconciliation it had begun, and takes the partitions its last heartbeat
response gave it, which the coordinator may have given to a live member since
(KIP-848 seed 5170: a member's session expired while it was stalled in a batch;
when the batch ended, its pending reconciliation took partitions a live member
held). So is a ``commit_by_owner`` report whose named owners are all such
zombies: the committing member owned the partition in the group the coordinator
knows and gave it up (the checker's own "nobody's partition" case, seen from the
coordinator). A zombie's own commits are still checked: Kafka fences them by
generation/epoch, and a stored one is a violation.

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

Rule 3: one gap is Kafka's too, counted as ``static_rejoin_gaps`` and not
reported: partitions a classic group leaves unowned after a static member
rejoined *without a rebalance*. When a known static member joins again with a
new member id while the group is Stable and its protocols are unchanged, the
coordinator replaces it and hands it the stored assignment (Kafka
``GroupCoordinator.updateStaticMemberAndRebalance``, "will not trigger
rebalance"); if it is the leader it is told to skip the assignment and
snapshots the metadata it sees now (KIP-814; ``ConsumerCoordinator``
``onLeaderElected``: ``assignmentSnapshot = metadataSnapshot``). Partitions the
stored assignment does not cover therefore stay unowned until the next
rebalance: partitions added while the static member was away (the new process
already sees them, so nothing looks changed), or partitions the assignor
withheld from it for revocation (KIP-429) in a rebalance it never heard the end
of. So from a ``member_left`` with reason ``replaced`` in a classic group until
the next ``rebalance_started``, an ``all_partitions_owned`` report is such a
gap, and so is an ``end_ownership`` report naming only unowned partitions while
one is open at the end. (Found by seeds cooperative 1154 and eager 6224.)

Rule 4: a seed has a step budget (``STEP_BUDGET``, about sixty times the steps
of the largest drawn group): a run that takes more, a livelock or a storm of
messages that never settles, stops there and is reported as ``step_budget``,
so one seed can never stall a soak.

Rule 5: ``extra_checks`` (tests only) adds checks of the finished run, so the
minimiser can be shown a failure on a known condition without weakening a real
invariant.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from regroup.events import (
    Event,
    InvariantViolated,
    MemberJoined,
    MemberLeft,
    PartitionsAssigned,
    RebalanceStarted,
)
from regroup.sim.consumer import SimConsumer
from regroup.sim.scenario import Scenario
from regroup.sim.settings import Settings
from regroup.sim.simulation import Simulation
from regroup.sim.soak.schedule import fault_counts
from regroup.sim.stability import StabilityWatch
from regroup.sim.world import StepBudgetExceeded

__all__ = [
    "END_CHECKS",
    "STEP_BUDGET",
    "Classified",
    "ExtraCheck",
    "SeedOutcome",
    "Violation",
    "classify_reports",
    "run_scenario",
]

END_CHECKS = ("group_settled", "end_ownership", "member_fatal")

#: Steps one seed may take (Rule 4). The largest groups the soak draws (50 members x
#: 500 partitions, 150 s of virtual time) take about 32,000.
STEP_BUDGET = 2_000_000


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
    #: Partitions left unowned after a static member rejoined without a rebalance (Rule 3).
    static_rejoin_gaps: int = 0
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


def _end_checks(
    sim: Simulation, outcome_fatal: list[str], gaps: list[str], *, static_gap_open: bool
) -> list[Violation]:
    """The end-of-run checks (Rule 1); fills ``outcome_fatal`` (expected fatal errors)
    and ``gaps`` (an end-of-run static rejoin gap, Rule 3)."""
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
    if missing and not doubled and static_gap_open:
        gaps.append(f"unowned at the end: {_names(missing)}")
    elif missing or doubled:
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


@dataclass(slots=True)
class Classified:
    """The invariant reports of one run, sorted by Rules 2 and 3."""

    violations: list[Violation] = field(default_factory=list)
    zombie_overlaps: int = 0
    static_rejoin_gaps: int = 0
    #: Whether a static member was replaced without a rebalance since the last one (Rule 3).
    static_gap_open: bool = False


def classify_reports(events: Iterable[Event], *, classic: bool) -> Classified:
    """Sort a run's ``invariant_violated`` reports into violations, zombie overlaps
    (Rule 2) and static rejoin gaps (Rule 3), reading the events before each report."""
    out = Classified()
    removed: set[str] = set()  # members the coordinator removed and that did not rejoin
    #: member -> the generation/epoch of its last assignment, as the member saw it.
    assigned: dict[str, int] = {}
    for event in events:
        if isinstance(event, MemberLeft):
            removed.add(event.member_id)
            if classic and event.reason == "replaced":
                out.static_gap_open = True
        elif isinstance(event, RebalanceStarted):
            out.static_gap_open = False
        elif isinstance(event, MemberJoined):
            removed.discard(event.member_id)
        elif isinstance(event, PartitionsAssigned):
            assigned[event.member_id] = event.generation_or_epoch
        elif isinstance(event, InvariantViolated):
            if out.static_gap_open and event.invariant == "all_partitions_owned":
                out.static_rejoin_gaps += 1
                continue
            if event.invariant == "exclusive_ownership" and event.member_id in removed:
                out.zombie_overlaps += 1  # a zombie finishing a reconciliation it had begun
                continue
            others = _others(event.invariant, event.detail)
            newer = assigned.get(event.member_id or "", -1)
            if others and all(
                o in removed or (classic and assigned.get(o, newer) < newer) for o in others
            ):
                out.zombie_overlaps += 1
                continue
            out.violations.append(Violation(event.invariant, event.ts_ms, event.detail))
    return out


def run_scenario(
    scenario: Scenario,
    protocol: str,
    seed: int,
    *,
    extra_checks: Sequence[ExtraCheck] = (),
    max_steps: int = STEP_BUDGET,
) -> SeedOutcome:
    """Run ``scenario`` under ``protocol`` with ``seed`` and check it (see the module rules)."""
    started = time.perf_counter()
    sim = Simulation(Settings(scenario, protocol=protocol, seed=seed), keep_events=True)
    try:
        result = sim.run(max_steps=max_steps)
    except StepBudgetExceeded as stopped:
        return SeedOutcome(
            protocol=protocol,
            seed=seed,
            violations=[Violation("step_budget", stopped.now_ms, f"the run took {stopped}")],
            faults=fault_counts(scenario),
            virtual_ms=stopped.now_ms,
            wall_s=time.perf_counter() - started,
            steps=sim.world.steps,
            members=sim.member_count,
            partitions=sum(scenario.topics.values()),
            invariants=["step_budget"],
        )
    classified = classify_reports(result.events, classic=protocol != "consumer")
    violations = classified.violations
    fatal: list[str] = []
    end_gap: list[str] = []
    violations.extend(_end_checks(sim, fatal, end_gap, static_gap_open=classified.static_gap_open))
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
        zombie_overlaps=classified.zombie_overlaps,
        static_rejoin_gaps=classified.static_rejoin_gaps + len(end_gap),
        duplicated=sim.network.duplicated,
        coordinator_restarts=sim.coordinator_restarts,
        members=sim.member_count,
        partitions=sum(scenario.topics.values()),
        consumer_errors=sum(len(v) for v in result.consumer_errors.values()),
        invariants=sorted({v.invariant for v in violations}),
        expected_fatal=fatal,
    )
