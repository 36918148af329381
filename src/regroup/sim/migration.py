"""Migrating a classic group to KIP-848 online, against staying classic (``compare --from``).

A classic group (``eager`` or ``cooperative``) moves to KIP-848 online by a
rolling restart of its members with ``group.protocol=consumer``: the first
member's ConsumerGroupHeartbeat converts the classic group into a consumer
group that keeps the others as classic members, and each later restart turns
one more of them into a KIP-848 member (Kafka 3.8+, ``group.consumer.migration.policy``;
``regroup.coordinator.consumer.upgrade``). Kafka's
``GroupMetadataManager.validateOnlineUpgrade`` allows the conversion when the
policy allows upgrades (``BIDIRECTIONAL``, the default, or ``UPGRADE``), the
group uses the ``consumer`` embedded protocol and it has no more members than
``group.consumer.max.size``. It does not look at the rebalance protocol: an
eager group migrates too, its classic members giving up every partition at
each rejoin as eager members do (``classicGroupJoinToConsumerGroup`` takes a
classic member's owned partitions from its subscription, which an eager member
sends empty). A combination the coordinator would refuse is refused here
(``MigrationError``), before anything runs.

Two runs per seed, on one timeline (``plan_migration``):

* *migrate*: the group starts on the classic protocol ``from``; at
  ``MIGRATION_AT_MS`` every member is restarted in turn (``MIGRATION_GAP_MS``
  apart, ``MIGRATION_DOWNTIME_MS`` down) with ``group.protocol=consumer``;
  ``SETTLE_MS`` after the last restart the scenario's own actions begin (its
  times counted from there; members it starts use ``group.protocol=consumer``);
* *stay*: the same rolling restart without the protocol switch (the deploy
  that a migration is, staying classic), then the same scenario.

A scenario whose own actions switch members to ``group.protocol=consumer``
(the built-in ``upgrade-to-consumer``) *is* the migration: it runs as written,
and the stay run is the same scenario with that switch taken out.

Each run is measured in two *phases*, with the metrics' own definitions
(``regroup.sim.metrics``): the *migration* phase from the migration's first
step to the *cut* (``SETTLE_MS`` after the last restart ends), and the *after*
phase from the scenario's first step to the end (the window ``compare`` measures
for the scenario alone; from the cut, as if a step opened the window there, when
the scenario has no step of its own after the migration). The whole-run counts
(``duplicates``, ``records_produced``, ``records_processed``) of the after phase
are the run's minus the migration phase's. The decision is about the after
phase (what the group costs from then on), by ``regroup.sim.decision``'s rule;
for a scenario that is the migration itself, about the migration phase.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from regroup.coordinator.config import GroupCoordinatorConfig, InvalidConfigError
from regroup.events import Event, ScenarioStep, SimulationEnded
from regroup.sim.assumptions import assumptions
from regroup.sim.comparison import (
    HEADLINE,
    Comparison,
    Decision,
    ProtocolRuns,
    Sensitivity,
    cell,
    configs_for,
    decide,
    headline_ranking,
    heartbeat_intervals,
    mechanism,
    sensitivity_settings,
)
from regroup.sim.metrics import MetricsAccumulator, RunMetrics
from regroup.sim.scenario import Action, Scenario, ScenarioError
from regroup.sim.simulation import Settings, Simulation

__all__ = [
    "CLASSIC_PROTOCOLS",
    "MIGRATION_AT_MS",
    "MIGRATION_DOWNTIME_MS",
    "MIGRATION_GAP_MS",
    "SETTLE_MS",
    "MigrationComparison",
    "MigrationError",
    "MigrationPlan",
    "compare_migration",
    "migrates_itself",
    "plan_migration",
]

CLASSIC_PROTOCOLS = ("eager", "cooperative")
#: The migration's rolling restart: when it starts, the gap between members, the downtime
#: of each (those of the built-in ``upgrade-to-consumer``).
MIGRATION_AT_MS = 30000
MIGRATION_GAP_MS = 10000
MIGRATION_DOWNTIME_MS = 2000
#: From the end of the last restart to the cut between the two phases.
SETTLE_MS = 30000
_SWITCH: Mapping[str, str] = {"group.protocol": "consumer"}
#: ``group.consumer.migration.policy`` values that allow an upgrade (Kafka
#: ``ConsumerGroupMigrationPolicy.isUpgradeEnabled``).
_UPGRADE_POLICIES = frozenset({"BIDIRECTIONAL", "UPGRADE"})
#: The migrating option's key (the protocol it ends on); the staying option's is ``from``.
MIGRATE = "consumer"


class MigrationError(ScenarioError):
    """A migration the coordinator would refuse, or a scenario that cannot frame one."""


def _protocol_of(action: Action) -> str | None:
    value = action.config.get("group.protocol")
    return None if value is None else str(value).strip().lower()


def migrates_itself(scenario: Scenario) -> bool:
    """Whether some action of ``scenario`` restarts members with ``group.protocol=consumer``."""
    return any(_protocol_of(action) == "consumer" for action in scenario.actions)


@dataclass(frozen=True, slots=True)
class MigrationPlan:
    """The two scenarios of a migration comparison and the phases' boundaries."""

    from_protocol: str
    #: Run under ``from_protocol``: the migration, then the scenario.
    migrate: Scenario
    #: Run under ``from_protocol``: the same restart staying classic, then the scenario.
    stay: Scenario
    #: The migration's first step and the cut between the phases (virtual ms).
    start_ms: int
    cut_ms: int
    #: The scenario is the migration itself (``migrates_itself``).
    own: bool

    @property
    def has_after(self) -> bool:
        return self.cut_ms < self.migrate.total_duration_ms()


def _bounce(config: Mapping[str, str]) -> Action:
    return Action(
        "rolling_bounce",
        at_ms=MIGRATION_AT_MS,
        members="all",
        gap_ms=MIGRATION_GAP_MS,
        downtime_ms=MIGRATION_DOWNTIME_MS,
        config=dict(config),
    )


def _check_broker(scenario: Scenario, configs: Mapping[str, str], members: int) -> None:
    """Refuse what Kafka's ``validateOnlineUpgrade`` refuses (policy, group size)."""
    props = {**scenario.broker, **{k: v for k, v in configs.items() if k.startswith("group.")}}
    policy = str(props.get("group.consumer.migration.policy", "BIDIRECTIONAL")).strip().upper()
    if policy not in _UPGRADE_POLICIES:
        raise MigrationError(
            f"group.consumer.migration.policy={policy} refuses the online upgrade (Kafka "
            "GroupMetadataManager.validateOnlineUpgrade): use BIDIRECTIONAL or UPGRADE"
        )
    try:
        broker = GroupCoordinatorConfig.from_properties(
            {k: v for k, v in props.items() if k == "group.consumer.max.size"}
        )
    except InvalidConfigError as error:
        raise MigrationError(str(error)) from None
    if members > broker.group_consumer_max_size:
        raise MigrationError(
            f"{members} members exceed group.consumer.max.size={broker.group_consumer_max_size}: "
            "Kafka refuses the online upgrade (GroupMetadataManager.validateOnlineUpgrade)"
        )


def plan_migration(
    scenario: Scenario,
    from_protocol: str,
    *,
    members: int | None = None,
    configs: Mapping[str, str] | None = None,
) -> MigrationPlan:
    """The migrate and stay scenarios (see the module docstring); ``MigrationError`` if the
    combination cannot be run."""
    configs = configs or {}
    if from_protocol not in CLASSIC_PROTOCOLS:
        raise MigrationError(
            f"--from must be {' or '.join(CLASSIC_PROTOCOLS)} (a classic group migrates to "
            f"KIP-848), got {from_protocol!r}"
        )
    if from_protocol not in scenario.protocols:
        raise MigrationError(
            f"scenario {scenario.name!r} is not written for {from_protocol} "
            f"(it runs under {', '.join(scenario.protocols)})"
        )
    if any(_protocol_of(action) == "classic" for action in scenario.actions):
        raise MigrationError(
            f"scenario {scenario.name!r} switches members to group.protocol=classic: "
            "compare --from runs a migration to KIP-848"
        )
    if str(configs.get("group.protocol", "classic")).strip().lower() != "classic":
        raise MigrationError(
            "--config group.protocol=consumer contradicts --from: the group starts classic"
        )
    count = members if members is not None else scenario.members
    if count < 1:
        raise MigrationError("a migration needs members: --members must be >= 1")
    _check_broker(scenario, configs, count)
    scenario = replace(scenario, members=count)
    if migrates_itself(scenario):
        timed = scenario.timed_actions()
        switching = [(at, a) for at, a in timed if _protocol_of(a) == "consumer"]
        start = min(at for at, _ in timed)
        cut = max(at + a.span_ms(count) for at, a in switching) + SETTLE_MS
        if any(a.action == "add_partitions" and at < cut for at, a in timed):
            # The after phase leaves the migration's steps out, and with them the
            # partition counts an add_partitions step carries.
            raise MigrationError(
                f"scenario {scenario.name!r} adds partitions during its migration: "
                "compare measures the migration and what follows apart, so add them after"
            )
        stay_actions = tuple(
            replace(a, config={k: v for k, v in a.config.items() if k != "group.protocol"})
            for a in scenario.actions
        )
        return MigrationPlan(
            from_protocol,
            migrate=scenario,
            stay=replace(scenario, actions=stay_actions),
            start_ms=start,
            cut_ms=min(cut, scenario.total_duration_ms()),
            own=True,
        )
    if MIGRATE not in scenario.protocols:
        raise MigrationError(
            f"scenario {scenario.name!r} is written for {', '.join(scenario.protocols)} only: "
            "it cannot run after a migration to KIP-848"
        )
    migration = _bounce(_SWITCH)
    cut = MIGRATION_AT_MS + migration.span_ms(count) + SETTLE_MS
    duration = cut + scenario.total_duration_ms()

    def shifted(switch: bool) -> tuple[Action, ...]:
        out = []
        for at, action in scenario.timed_actions():
            config = dict(action.config)
            if switch and action.action == "start":
                config.update(_SWITCH)
            out.append(replace(action, at_ms=at + cut, after_ms=None, config=config))
        return tuple(out)

    def framed(first: Action, switch: bool) -> Scenario:
        return replace(
            scenario,
            protocols=(from_protocol,),
            duration_ms=duration,
            actions=(first, *shifted(switch)),
        )

    return MigrationPlan(
        from_protocol,
        migrate=framed(migration, True),
        stay=framed(_bounce({}), False),
        start_ms=MIGRATION_AT_MS,
        cut_ms=cut,
        own=False,
    )


class _Phases:
    """A tap that measures one run's two phases as it goes (see the module docstring)."""

    __slots__ = ("_cut", "_group", "_opened", "after", "during")

    def __init__(self, cut_ms: int, *, mark_cut: bool) -> None:
        self._cut = cut_ms
        #: Without a step of its own after the cut, the after phase opens at the cut.
        self._opened = not mark_cut
        self._group = ""
        self.during = MetricsAccumulator()
        self.after = MetricsAccumulator()

    def __call__(self, event: Event) -> None:
        self._group = event.group_id
        if event.ts_ms < self._cut:
            self.during.observe(event)
            if not isinstance(event, ScenarioStep):  # the migration's steps open no window
                self.after.observe(event)
            return
        if not self._opened:
            self._opened = True
            self.after.observe(
                ScenarioStep(ts_ms=self._cut, group_id=event.group_id, action="phase", detail="cut")
            )
        self.after.observe(event)

    def results(self) -> tuple[RunMetrics, RunMetrics]:
        self.during.observe(SimulationEnded(ts_ms=self._cut, group_id=self._group))
        during, after = self.during.result(), self.after.result()
        for key in ("duplicates", "records_produced", "records_processed"):
            setattr(after, key, getattr(after, key) - getattr(during, key))
        return during, after


@dataclass(slots=True)
class _Option:
    """One option's runs: the migration phase's and the after phase's, seed by seed."""

    during: ProtocolRuns
    after: ProtocolRuns
    whole: list[dict[str, Any]]


def _configs_for_migration(configs: Mapping[str, str]) -> dict[str, str]:
    """The configs of a run that starts classic and ends on KIP-848: the classic member's
    ``session.timeout.ms`` / ``heartbeat.interval.ms`` also become the coordinator's
    ``group.consumer.*`` (as ``compare`` passes them to its KIP-848 runs)."""
    return {**configs_for(MIGRATE, configs), **configs}


def _run_option(
    scenario: Scenario,
    plan: MigrationPlan,
    protocol: str,
    members: int | None,
    partitions: int | None,
    seeds: int,
    static: bool | None,
    configs: Mapping[str, str],
    keep_timelines: bool,
    progress: Callable[[str, int], None] | None,
) -> _Option:
    simulations = []
    taps = []
    for seed in range(seeds):
        tap = _Phases(plan.cut_ms, mark_cut=plan.own or not plan.migrate.actions[1:])
        taps.append(tap)
        simulations.append(
            Simulation(
                Settings(
                    scenario=scenario,
                    protocol=plan.from_protocol,
                    members=members,
                    partitions=partitions,
                    seed=seed,
                    static=static,
                    configs=configs,
                ),
                keep_events=keep_timelines and seed == 0,
                taps=(tap,),
            )
        )
    first = simulations[0]
    stated = assumptions(first.plan)
    assignor = first.assignor
    if protocol == MIGRATE:
        assignor = f"{assignor} -> {first.plan.broker.group_consumer_assignors[0]}"
    during = ProtocolRuns(protocol, assignor, assumptions=stated)
    after = ProtocolRuns(protocol, assignor, assumptions=stated)
    whole = []
    for seed, (simulation, tap) in enumerate(zip(simulations, taps, strict=True)):
        result = simulation.run()
        whole.append(result.metrics.to_json())
        phase_during, phase_after = tap.results()
        during.runs.append(phase_during.to_json())
        after.runs.append(phase_after.to_json())
        if simulation.keep_events:
            during.events = after.events = result.events
        if progress is not None:
            progress(protocol, seed)
    return _Option(during, after, whole)


@dataclass(slots=True)
class MigrationComparison:
    """Migrate against stay: both phases as ``Comparison``s, the decision, the verdict."""

    scenario: str
    plan: MigrationPlan
    seeds: int
    #: The migration phase: the stay run's rolling restart against the migration.
    during: Comparison
    #: The after phase: the scenario staying classic against after the migration.
    after: Comparison
    #: Each option's whole-run metrics, seed by seed (``from`` and ``consumer``).
    whole: dict[str, list[dict[str, Any]]]
    verdict: str = ""
    decision: Decision | None = None

    @property
    def from_protocol(self) -> str:
        return self.plan.from_protocol

    @property
    def deciding(self) -> Comparison:
        """The phase the decision is about: after, or the migration for ``own`` scenarios."""
        return self.during if self.plan.own else self.after

    @property
    def phase(self) -> str:
        return "migration" if self.plan.own else "after"

    def labels(self) -> dict[str, str]:
        return {
            self.from_protocol: f"staying {self.from_protocol}",
            MIGRATE: "migrating to KIP-848",
        }

    def break_even(self) -> int | None:
        """How many runs of the scenario the migration takes to pay for itself: its idle
        partition-seconds beyond the stay run's restart over what each run of the scenario
        saves afterwards (medians; 0 when it costs no more, ``None`` when nothing is saved
        or the scenario is the migration itself)."""
        if self.plan.own:
            return None
        extra = _median(self.during, MIGRATE) - _median(self.during, self.from_protocol)
        saved = _median(self.after, self.from_protocol) - _median(self.after, MIGRATE)
        if extra <= 0:
            return 0
        if saved <= 0:
            return None
        return math.ceil(round(extra / saved, 6))

    def to_json(self) -> dict[str, Any]:
        decision = self.decision or decide_migration(self)
        after = self.after
        return {
            "scenario": self.scenario,
            "members": after.members,
            "partitions": after.partitions,
            "from": self.from_protocol,
            "assumptions": after.assumptions,
            "protocols": _protocols_json(after),
            "verdict": self.verdict,
            "decision": {**decision.to_json(), "phase": self.phase},
            "migration": {
                "from": self.from_protocol,
                "to": MIGRATE,
                "start_ms": self.plan.start_ms,
                "cut_ms": self.plan.cut_ms,
                "end_ms": int(after.assumptions.get("duration_ms", 0)),
                "scenario_is_migration": self.plan.own,
                "protocols": _protocols_json(self.during),
                "break_even": self.break_even(),
                "whole_run": {
                    option: {
                        "idle_partition_seconds": runs[0]["idle_partition_seconds"],
                        "violations": len(runs[0]["violations"]),
                    }
                    for option, runs in self.whole.items()
                },
            },
        }


def _protocols_json(comparison: Comparison) -> dict[str, Any]:
    from regroup.sim.comparison import METRICS

    return {
        protocol: runs.to_json({key: comparison.ratios(key)[protocol] for key, _ in METRICS})
        for protocol, runs in comparison.protocols.items()
    }


def _median(comparison: Comparison, protocol: str, key: str = HEADLINE) -> float:
    return comparison.protocols[protocol].summary(key).median or 0.0


def _compare_once(
    scenario: Scenario,
    from_protocol: str,
    members: int | None,
    partitions: int | None,
    seeds: int,
    static: bool | None,
    configs: Mapping[str, str],
    keep_timelines: bool,
    progress: Callable[[str, int], None] | None,
) -> MigrationComparison:
    if seeds < 1:
        raise ScenarioError("seeds must be >= 1")
    plan = plan_migration(scenario, from_protocol, members=members, configs=configs)
    stay = _run_option(
        plan.stay,
        plan,
        from_protocol,
        members,
        partitions,
        seeds,
        static,
        dict(configs),
        keep_timelines,
        progress,
    )
    migrate = _run_option(
        plan.migrate,
        plan,
        MIGRATE,
        members,
        partitions,
        seeds,
        static,
        _configs_for_migration(configs),
        keep_timelines,
        progress,
    )
    shared = dict(stay.after.assumptions)

    def phase(pick: Callable[[_Option], ProtocolRuns]) -> Comparison:
        runs = {from_protocol: pick(stay), MIGRATE: pick(migrate)}
        return Comparison(scenario.name, seeds, runs, shared)

    return MigrationComparison(
        scenario.name,
        plan,
        seeds,
        during=phase(lambda o: o.during),
        after=phase(lambda o: o.after),
        whole={from_protocol: stay.whole, MIGRATE: migrate.whole},
    )


def compare_migration(
    scenario: Scenario,
    from_protocol: str,
    *,
    members: int | None = None,
    partitions: int | None = None,
    seeds: int = 3,
    static: bool | None = None,
    configs: Mapping[str, str] | None = None,
    keep_timelines: bool = False,
    sensitivity: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
) -> MigrationComparison:
    """Migrate against stay on ``seeds`` seeds (``ScenarioError`` if it cannot run).

    With ``sensitivity`` the comparison runs again for each setting of
    ``comparison.sensitivity_settings`` (heartbeat intervals, restore times,
    static membership) to fill ``Decision.sensitive_to``.
    """
    configs = dict(configs or {})
    per_comparison = 2 * seeds
    done = [0, per_comparison]

    def step(label: str) -> Callable[[str, int], None] | None:
        if progress is None:
            return None
        report = progress

        def advance(option: str, seed: int) -> None:
            done[0] += 1
            name = "migrating" if option == MIGRATE else f"staying {option}"
            report(f"{name}{label}", done[0], done[1])

        return advance

    comparison = _compare_once(
        scenario, from_protocol, members, partitions, seeds, static, configs, keep_timelines,
        step(""),
    )  # fmt: skip
    found: list[Sensitivity] = []
    if sensitivity:
        variants = sensitivity_settings(comparison.after, scenario, static, configs)
        done[1] += per_comparison * len(variants)
        for setting, value, variant, variant_static, variant_configs in variants:
            label = f", {setting}={str(value).lower() if isinstance(value, bool) else value}"
            again = _compare_once(
                variant, from_protocol, members, partitions, seeds, variant_static,
                variant_configs, False, step(label),
            )  # fmt: skip
            found.append(Sensitivity(setting, value, decide_migration(again).winner))
    comparison.decision = decide_migration(comparison, tuple(found))
    comparison.verdict = migration_verdict(comparison)
    return comparison


def decide_migration(
    comparison: MigrationComparison, sensitive_to: tuple[Sensitivity, ...] = ()
) -> Decision:
    """The decision by idle partition-seconds over the deciding phase (the after phase, or
    the migration for a scenario that is one), by ``regroup.sim.decision``'s rule."""
    deciding = comparison.deciding
    base = decide(deciding, sensitive_to)
    ranking = headline_ranking(deciding)
    return replace(base, mechanism=mechanism(deciding, ranking, labels=comparison.labels()))


def migration_verdict(comparison: MigrationComparison) -> str:
    """One line for people: who wins and by what, what the migration itself cost against
    the same rolling restart staying classic, and when it pays for itself."""
    decision = comparison.decision or decide_migration(comparison)
    labels = comparison.labels()
    source = comparison.from_protocol
    after, during = comparison.after, comparison.during
    size = f" ({after.size})"
    seeds = comparison.seeds
    over = f"median of {seeds} seeds" if seeds > 1 else "one seed"
    head = f"tie{size}" if decision.winner is None else f"{labels[decision.winner]} wins{size}"
    if comparison.plan.own:
        head += f" during the rolling restart ({over}): {decision.mechanism}"
    else:
        head += f" on {comparison.scenario} afterwards ({over}): {decision.mechanism}"

    def figure(phase: Comparison, option: str, key: str) -> str:
        return cell(phase.protocols[option].summary(key).median, decimals=key == HEADLINE)

    if comparison.plan.own:
        cost = (
            f"; during it {figure(during, MIGRATE, 'rebalances')} rebalances and a longest "
            f"pause of {figure(during, MIGRATE, 'max_partition_pause_ms')} ms, against "
            f"{figure(during, source, 'rebalances')} and "
            f"{figure(during, source, 'max_partition_pause_ms')} ms for the same rolling "
            f"restart staying {source}"
        )
    else:
        cost = (
            f"; the migration itself (rolling restart to group.protocol=consumer) idles "
            f"{figure(during, MIGRATE, HEADLINE)} partition-s with "
            f"{figure(during, MIGRATE, 'rebalances')} rebalances and a longest pause of "
            f"{figure(during, MIGRATE, 'max_partition_pause_ms')} ms, against "
            f"{figure(during, source, HEADLINE)} partition-s for the same rolling restart "
            f"staying {source}"
        )
    text = head + cost
    if not comparison.plan.own:
        even = comparison.break_even()
        if even == 0:
            text += "; it costs no more than that restart"
        elif even is not None:
            text += (
                f"; it pays for itself after {even} {comparison.scenario} "
                f"event{'s' if even != 1 else ''}"
            )
    classic_hb, consumer_hb = heartbeat_intervals(after)
    if classic_hb != consumer_hb:
        text += (
            f"; {source} ran at heartbeat.interval.ms {classic_hb} ms, KIP-848 at "
            f"group.consumer.heartbeat.interval.ms {consumer_hb} ms"
        )
    changed = [e for e in decision.sensitive_to if e.winner != decision.winner]
    if changed:

        def outcome(entry: Sensitivity) -> str:
            who = "a tie" if entry.winner is None else f"{labels[entry.winner]} wins"
            value = str(entry.value).lower() if isinstance(entry.value, bool) else entry.value
            return f"{entry.setting}={value}: {who}"

        text += "; the answer turns on " + ", ".join(outcome(e) for e in changed)
    return text
