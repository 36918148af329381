"""Eager, cooperative and KIP-848 on the same scenario and seeds: the table and the verdict.

``compare(...)`` runs the scenario under each of the three protocols with the
same seeds (``seed 0 .. N-1``), the same sizes, data model and Kafka configs,
and summarises each metric by its median and its range across the seeds
(``Summary``). The decision is about the headline cost, idle
partition-seconds (``regroup.sim.metrics``), by the one rule of
``regroup.sim.decision``: the protocol with the lowest median wins only when
the seeds separate it from every other and the difference is more than
``TIE_WITHIN``; otherwise it is a *tie*. ``Decision`` holds the outcome as data
(winner, tie, the metric, the ratio), a ``mechanism`` sentence whose every
number is a cell of the table and which names only a metric by which the
winner is best, and ``sensitive_to``: the settings that change the answer,
found by running the comparison again with them (each protocol's default
heartbeat interval, restore times, static membership). The ``verdict`` is the
same decision as one line for people, with the group's size.

KIP-848 takes no ``session.timeout.ms`` / ``heartbeat.interval.ms`` consumer
config (the coordinator owns them); a comparison given one passes it to the
KIP-848 run as the broker's ``group.consumer.session.timeout.ms`` /
``group.consumer.heartbeat.interval.ms``, as ``simulate``'s shortcuts do, and
says so in the KIP-848 run's assumptions.
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from regroup.classic.member.config import ClassicMemberConfig
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.sim.assumptions import assumptions
from regroup.sim.decision import TIE_WITHIN, Ranking, Spread, rank
from regroup.sim.scenario import PROTOCOLS, Scenario, ScenarioError, with_data
from regroup.sim.simulation import Settings, Simulation
from regroup.sim.timeline import COMPARE_WIDTH, build_timeline, to_svg

__all__ = [
    "DECIMAL_METRICS",
    "LABELS",
    "METRICS",
    "Comparison",
    "Decision",
    "ProtocolRuns",
    "Sensitivity",
    "Summary",
    "cell",
    "compare",
    "comparison_html",
    "configs_for",
    "decide",
    "headline_ranking",
    "heartbeat_intervals",
    "mechanism",
    "sensitivity_settings",
]

#: How each protocol is named, everywhere (one name per protocol, in
#: every table, verdict and page).
LABELS: Mapping[str, str] = {
    "eager": "eager",
    "cooperative": "cooperative",
    "consumer": "KIP-848 (consumer)",
}
#: The metrics compared: (key of ``simulate --json``, label with its unit).
METRICS: tuple[tuple[str, str], ...] = (
    ("idle_partition_seconds", "idle partition-s"),
    ("max_partition_pause_ms", "longest pause, ms"),
    ("paused_partitions", "partitions paused"),
    ("partitions_moved", "partitions moved"),
    ("rebalances", "rebalances"),
    ("duplicates", "records twice"),
    ("pause_p50_ms", "pause p50, ms"),
    ("pause_p99_ms", "pause p99, ms"),
    ("unstable_ms", "not Stable, ms"),
    ("peak_lag", "peak lag, records"),
    ("catch_up_s", "catch-up, s"),
    ("time_to_stable_ms", "time to stable, ms"),
)
HEADLINE = "idle_partition_seconds"
#: The metrics shown with one decimal (the others are whole numbers).
DECIMAL_METRICS = frozenset({HEADLINE, "catch_up_s"})
#: Consumer configs KIP-848 moved to the coordinator (simulate's shortcuts do the same).
_TO_BROKER = {
    "session.timeout.ms": "group.consumer.session.timeout.ms",
    "heartbeat.interval.ms": "group.consumer.heartbeat.interval.ms",
}


@dataclass(frozen=True, slots=True)
class Summary:
    """One metric over the seeds: median and range (``None`` values left out)."""

    median: float | None
    low: float | None
    high: float | None

    @classmethod
    def of(cls, values: Sequence[float | None]) -> Summary:
        known = [v for v in values if v is not None]
        if not known:
            return cls(None, None, None)
        return cls(statistics.median(known), min(known), max(known))

    def to_json(self) -> dict[str, float | None]:
        return {"median": self.median, "min": self.low, "max": self.high}


@dataclass(frozen=True, slots=True)
class Sensitivity:
    """One setting tried again: its value and the winner there (``None``: a tie)."""

    setting: str
    value: int | bool
    winner: str | None

    def to_json(self) -> dict[str, Any]:
        return {"setting": self.setting, "value": self.value, "winner": self.winner}


@dataclass(frozen=True, slots=True)
class Decision:
    """The comparison's outcome as data (``compare --json``'s ``decision``)."""

    #: ``eager``, ``cooperative`` or ``consumer``; ``None`` for a tie.
    winner: str | None
    tie: bool
    #: The metric decided by (a key of ``simulate --json``).
    by: str
    #: The runner-up's median over the best's (``None`` when the best's is 0).
    ratio: float | None
    #: One sentence; every number in it is a cell of the table.
    mechanism: str
    sensitive_to: tuple[Sensitivity, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "winner": self.winner,
            "tie": self.tie,
            "by": self.by,
            "ratio": None if self.ratio is None else round(self.ratio, 2),
            "mechanism": self.mechanism,
            "sensitive_to": [entry.to_json() for entry in self.sensitive_to],
        }


@dataclass(slots=True)
class ProtocolRuns:
    """One protocol's runs: the metrics of each seed, their summaries, its assumptions."""

    protocol: str
    assignor: str
    runs: list[dict[str, Any]] = field(default_factory=list)
    assumptions: dict[str, Any] = field(default_factory=dict)
    #: The seed-0 run's events (only when a timeline is wanted).
    events: list[Any] = field(default_factory=list)

    def summary(self, key: str) -> Summary:
        return Summary.of([run[key] for run in self.runs])

    def to_json(self, ratios: Mapping[str, float | None]) -> dict[str, Any]:
        """The seed-0 metrics as ``simulate --json`` prints them, plus the summaries."""
        first = dict(self.runs[0])
        return {
            **first,
            "assumptions": self.assumptions,
            "protocol": self.protocol,
            "assignor": self.assignor,
            "seeds": len(self.runs),
            "summary": {key: self.summary(key).to_json() for key, _ in METRICS},
            "ratio_to_best": dict(ratios),
        }


@dataclass(slots=True)
class Comparison:
    scenario: str
    seeds: int
    protocols: dict[str, ProtocolRuns]
    assumptions: dict[str, Any]
    verdict: str = ""
    decision: Decision | None = None

    @property
    def members(self) -> int:
        return int(self.assumptions.get("members", 0))

    @property
    def partitions(self) -> int:
        """Partitions of all topics together."""
        return sum(int(n) for n in (self.assumptions.get("topics") or {}).values())

    @property
    def size(self) -> str:
        """``3 members x 6 partitions``: the group the comparison simulated."""
        members, partitions = self.members, self.partitions
        return (
            f"{members} member{'s' if members != 1 else ''} x "
            f"{partitions} partition{'s' if partitions != 1 else ''}"
        )

    def ratios(self, key: str) -> dict[str, float | None]:
        """Each protocol's median over the best median (``None`` when the best is 0)."""
        medians = {p: runs.summary(key).median for p, runs in self.protocols.items()}
        known = [m for m in medians.values() if m is not None]
        best = min(known) if known else None
        return {
            p: None if m is None or not best else round(m / best, 2) for p, m in medians.items()
        }

    def to_json(self) -> dict[str, Any]:
        """``compare --json``: scenario, assumptions, the three protocols, the verdict."""
        return {
            "scenario": self.scenario,
            "members": self.members,
            "partitions": self.partitions,
            "assumptions": self.assumptions,
            "protocols": {
                protocol: runs.to_json({key: self.ratios(key)[protocol] for key, _ in METRICS})
                for protocol, runs in self.protocols.items()
            },
            "verdict": self.verdict,
            "decision": (self.decision or decide(self)).to_json(),
        }


def configs_for(protocol: str, configs: Mapping[str, str]) -> dict[str, str]:
    """The configs of a ``protocol`` run: KIP-848's consumer timeouts go to the coordinator."""
    if protocol != "consumer":
        return dict(configs)
    return {_TO_BROKER.get(key, key): value for key, value in configs.items()}


def compare(
    scenario: Scenario,
    *,
    members: int | None = None,
    partitions: int | None = None,
    seeds: int = 3,
    static: bool | None = None,
    configs: Mapping[str, str] | None = None,
    keep_timelines: bool = False,
    sensitivity: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
) -> Comparison:
    """Run the three protocols on ``seeds`` seeds; ``ScenarioError`` if one cannot run.

    Every run is planned (and so checked) before the first one starts. With
    ``sensitivity`` the comparison is run again for each setting of
    ``sensitivity_settings`` to fill ``Decision.sensitive_to``.
    ``progress(label, runs done, runs planned)`` is called after each run (the
    runs planned grow once the settings to try are known).
    """
    per_comparison = len(PROTOCOLS) * seeds
    done = [0, per_comparison]

    def step(label: str) -> Callable[[str, int], None] | None:
        if progress is None:
            return None
        report = progress

        def advance(protocol: str, seed: int) -> None:
            done[0] += 1
            report(f"{protocol}{label}", done[0], done[1])

        return advance

    comparison = _compare_once(
        scenario, members, partitions, seeds, static, configs or {}, keep_timelines, step("")
    )
    found: list[Sensitivity] = []
    if sensitivity:
        variants = sensitivity_settings(comparison, scenario, static, configs or {})
        done[1] += per_comparison * len(variants)
        for setting, value, variant, variant_static, variant_configs in variants:
            again = _compare_once(
                variant,
                members,
                partitions,
                seeds,
                variant_static,
                variant_configs,
                False,
                step(f", {setting}={_value(value)}"),
            )
            found.append(Sensitivity(setting, value, headline_ranking(again).winner))
    comparison.decision = decide(comparison, tuple(found))
    comparison.verdict = verdict(comparison)
    return comparison


def _compare_once(
    scenario: Scenario,
    members: int | None,
    partitions: int | None,
    seeds: int,
    static: bool | None,
    configs: Mapping[str, str],
    keep_timelines: bool,
    progress: Callable[[str, int], None] | None,
) -> Comparison:
    missing = [p for p in PROTOCOLS if p not in scenario.protocols]
    if missing:
        raise ScenarioError(
            f"scenario {scenario.name!r} is not written for {', '.join(missing)}: "
            "compare runs all three protocols"
        )
    if seeds < 1:
        raise ScenarioError("seeds must be >= 1")
    simulations: dict[str, list[Simulation]] = {}
    for protocol in PROTOCOLS:
        simulations[protocol] = [
            Simulation(
                Settings(
                    scenario=scenario,
                    protocol=protocol,
                    members=members,
                    partitions=partitions,
                    seed=seed,
                    static=static,
                    configs=configs_for(protocol, configs),
                ),
                keep_events=keep_timelines and seed == 0,
            )
            for seed in range(seeds)
        ]
    results: dict[str, ProtocolRuns] = {}
    for protocol, sims in simulations.items():
        first = sims[0]
        runs = ProtocolRuns(protocol, first.assignor, assumptions=assumptions(first.plan))
        for seed, simulation in enumerate(sims):
            result = simulation.run()
            runs.runs.append(result.metrics.to_json())
            if simulation.keep_events:
                runs.events = result.events
            if progress is not None:
                progress(protocol, seed)
        results[protocol] = runs
    shared = dict(results["eager"].assumptions)
    return Comparison(scenario.name, seeds, results, shared)


# -- the decision ----------------------------------------------------------------------------

#: Restore times tried for ``sensitive_to`` (ms), the run's own left out.
SENSITIVITY_RESTORES_MS = (0, 5000, 30000)


def heartbeat_intervals(comparison: Comparison) -> tuple[int, int]:
    """(classic ``heartbeat.interval.ms``, KIP-848 ``group.consumer.heartbeat.interval.ms``)
    the runs used: the configs given, else each protocol's Kafka default."""
    classic_name = next(p for p in comparison.protocols if p != "consumer")
    classic_configs = comparison.protocols[classic_name].assumptions.get("configs") or {}
    consumer_configs = comparison.protocols["consumer"].assumptions.get("configs") or {}
    classic = classic_configs.get(
        "heartbeat.interval.ms", ClassicMemberConfig().heartbeat_interval_ms
    )
    consumer = consumer_configs.get(
        "group.consumer.heartbeat.interval.ms",
        GroupCoordinatorConfig().group_consumer_heartbeat_interval_ms,
    )
    return int(classic), int(consumer)


def sensitivity_settings(
    comparison: Comparison,
    scenario: Scenario,
    static: bool | None,
    configs: Mapping[str, str],
) -> list[tuple[str, int | bool, Scenario, bool | None, dict[str, str]]]:
    """The variants ``sensitive_to`` tries: (setting, value, scenario, static, configs).

    * each protocol's default heartbeat interval for both, when they differ
      (``heartbeat.interval.ms`` reaches KIP-848 as the coordinator's
      ``group.consumer.heartbeat.interval.ms``);
    * each restore time of ``SENSITIVITY_RESTORES_MS`` but the run's own;
    * static membership the other way round.
    """
    out: list[tuple[str, int | bool, Scenario, bool | None, dict[str, str]]] = []
    classic, consumer = heartbeat_intervals(comparison)
    if classic != consumer:
        floor = GroupCoordinatorConfig().group_consumer_min_heartbeat_interval_ms
        for value in (classic, consumer):
            changed = {**configs, "heartbeat.interval.ms": str(value)}
            if value < floor:  # the broker's minimum must allow it, as on a real broker
                changed["group.consumer.min.heartbeat.interval.ms"] = str(value)
            out.append(("heartbeat.interval.ms", value, scenario, static, changed))
    restore = int(comparison.assumptions.get("restore_ms", 0))
    for value in SENSITIVITY_RESTORES_MS:
        if value != restore:
            variant = with_data(scenario, {"restore_ms": value})
            out.append(("restore_ms", value, variant, static, dict(configs)))
    is_static = bool(comparison.assumptions.get("static_membership", False))
    out.append(("static_membership", not is_static, scenario, not is_static, dict(configs)))
    return out


def headline_ranking(comparison: Comparison) -> Ranking:
    """The protocols ranked by idle partition-seconds (``regroup.sim.decision.rank``)."""
    spreads = {}
    for protocol, runs in comparison.protocols.items():
        summary = runs.summary(HEADLINE)
        centre = summary.median or 0.0
        spreads[protocol] = Spread(
            centre, summary.low if summary.low is not None else centre, summary.high or centre
        )
    return rank(spreads)


def cell(value: float | None, *, decimals: bool) -> str:
    """A table cell: ``84.2`` for the headline, ``3,004`` for the others, ``-`` for none."""
    if value is None:
        return "-"
    return f"{value:,.1f}" if decimals else f"{value:,.0f}"


#: The metrics a mechanism may name, in the order they explain a difference in idle time,
#: each with how the sentence says the winner is better by it.
_EXPLAINERS: tuple[tuple[str, str], ...] = (
    ("paused_partitions", "pauses fewer partitions"),
    ("partitions_moved", "moves fewer partitions"),
    ("max_partition_pause_ms", "keeps its longest partition pause shorter"),
    ("rebalances", "needs fewer rebalances"),
    ("peak_lag", "lets less lag build up"),
)


def _median(comparison: Comparison, protocol: str, key: str) -> float | None:
    return comparison.protocols[protocol].summary(key).median


def mechanism(
    comparison: Comparison, ranking: Ranking, *, labels: Mapping[str, str] = LABELS
) -> str:
    """One sentence with the table's own numbers (``cell``); a metric is named only when
    the winner is best by it, as the table shows them: lower than the runner-up and no
    higher than any other protocol. ``labels`` names the columns (``LABELS``)."""
    best, other = ranking.best, ranking.runner_up
    mine = cell(_median(comparison, best, HEADLINE), decimals=True)
    if other is None:
        return f"only {labels[best]} ran ({mine} idle partition-s)"
    theirs = cell(_median(comparison, other, HEADLINE), decimals=True)
    if ranking.tie:
        names = " and ".join(labels[p] for p in (best, *ranking.tied))
        return (
            f"{names} idle about as long ({mine} and {theirs} idle partition-s for the best "
            "two): the seeds do not separate them, or the difference is within the tolerance"
        )
    text = f"{labels[best]} idles {mine} partition-s against {theirs} for {labels[other]}"
    for key, phrase in _EXPLAINERS:
        values = {p: _median(comparison, p, key) for p in comparison.protocols}
        a, b = values[best], values[other]
        if a is None or b is None or any(v is not None and v < a for v in values.values()):
            continue
        shown_a, shown_b = cell(a, decimals=False), cell(b, decimals=False)
        if a < b and shown_a != shown_b:
            return f"{text}: it {phrase} ({shown_a} against {shown_b})"
    return f"{text}; no other measured cost separates them"


def decide(comparison: Comparison, sensitive_to: tuple[Sensitivity, ...] = ()) -> Decision:
    """The decision by idle partition-seconds (``regroup.sim.decision``'s rule)."""
    ranking = headline_ranking(comparison)
    return Decision(
        winner=ranking.winner,
        tie=ranking.tie,
        by=HEADLINE,
        ratio=ranking.ratio,
        mechanism=mechanism(comparison, ranking),
        sensitive_to=sensitive_to,
    )


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if isinstance(value, float) else f"{value:,}"


def verdict(comparison: Comparison) -> str:
    """One line for people: the decision, its mechanism, the group's size and what would
    change it (see the module docstring)."""
    decision = comparison.decision or decide(comparison)
    runs = comparison.protocols
    ranking = headline_ranking(comparison)
    winner, runner_up = ranking.best, ranking.runner_up or ranking.best
    best, second = runs[winner].summary(HEADLINE), runs[runner_up].summary(HEADLINE)
    seeds = comparison.seeds
    over = f"median of {seeds} seeds" if seeds > 1 else "one seed"
    size = f" ({comparison.size})" if comparison.members else ""
    if ranking.tie:
        if not best.high and not second.high:
            text = f"tie: no partition was idle under {LABELS[winner]} nor {LABELS[runner_up]}"
        elif best.high is not None and second.low is not None and best.high >= second.low:
            text = (
                f"tie: the seeds' ranges of idle partition-seconds overlap "
                f"({LABELS[winner]} {_fmt(best.low)}-{_fmt(best.high)}, "
                f"{LABELS[runner_up]} {_fmt(second.low)}-{_fmt(second.high)})"
            )
        else:
            text = (
                f"tie: the medians of idle partition-seconds are within {TIE_WITHIN:.0%} "
                f"({LABELS[winner]} {_fmt(best.median)}, {LABELS[runner_up]} "
                f"{_fmt(second.median)})"
            )
        return text + size + _turns_on(comparison, decision)
    restore = comparison.assumptions.get("restore_ms", 0)

    def less(other: str) -> str:
        theirs = runs[other].summary(HEADLINE).median or 0.0
        if not best.median:
            return f"none where {LABELS[other]} has {_fmt(theirs)}"
        factor = theirs / best.median
        return (
            f"{factor:.2f}x less than {LABELS[other]}"
            if factor < 2
            else (f"{factor:.1f}x less than {LABELS[other]}")
        )

    ranked = sorted(runs, key=lambda p: (runs[p].summary(HEADLINE).median or 0.0, p))
    head = (
        f"{LABELS[winner]} wins{size}: {_fmt(best.median)} idle partition-s ({over}), "
        f"{' and '.join(less(p) for p in ranked[1:])}; "
    )
    if winner == "eager":
        cost = "nothing restores" if restore == 0 else f"a partition restores in {restore} ms"
        text = (
            head + f"when {cost}, eager's one stop-the-world round per change costs less "
            "than the extra rounds of the two-step protocols"
        )
        return text + _turns_on(comparison, decision)
    revoked = runs[winner].summary("partitions_revoked").median
    eager_revoked = runs["eager"].summary("partitions_revoked").median
    eager_rounds = runs["eager"].summary("rebalances").median
    if eager_rounds and revoked is not None and eager_revoked and revoked < eager_revoked:
        pause = f", each then restoring for {restore / 1000:g} s" if restore else ""
        text = (
            head + f"{LABELS[winner]} revokes only {_fmt(revoked)} partitions in all, where "
            f"eager revokes every partition at each of its {_fmt(eager_rounds)} rebalances "
            f"({_fmt(eager_revoked)}){pause}"
        )
    else:
        text = head + decision.mechanism
    if {winner, runner_up} == {"cooperative", "consumer"}:
        # Both move few partitions: how long a moved one waits may separate them.
        mine = runs[winner].summary("max_partition_pause_ms").median
        theirs = runs[runner_up].summary("max_partition_pause_ms").median
        if mine is not None and theirs is not None and mine < theirs:
            text += (
                f"; against {LABELS[runner_up]} the difference is how long a moved partition "
                f"waits for its new owner (longest pause {_fmt(mine)} ms vs {_fmt(theirs)} ms)"
            )
        classic_hb, consumer_hb = heartbeat_intervals(comparison)
        if classic_hb != consumer_hb:
            text += (
                f"; each protocol ran at its own heartbeat interval (classic "
                f"heartbeat.interval.ms {classic_hb} ms, KIP-848 "
                f"group.consumer.heartbeat.interval.ms {consumer_hb} ms)"
            )
    return text + _turns_on(comparison, decision)


def _turns_on(comparison: Comparison, decision: Decision) -> str:
    """``; it turns on ...`` for each tried setting whose winner differs, else ``""``."""
    changed = [entry for entry in decision.sensitive_to if entry.winner != decision.winner]
    if not changed:
        return ""

    def outcome(entry: Sensitivity) -> str:
        who = "a tie" if entry.winner is None else f"{LABELS[entry.winner]} wins"
        return f"{entry.setting}={_value(entry.value)}: {who}"

    return "; the answer turns on " + ", ".join(outcome(entry) for entry in changed)


def _value(value: int | bool) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


# -- the HTML page ---------------------------------------------------------------------------


def comparison_html(
    comparison: Comparison,
    table_rows: Sequence[Sequence[str]],
    *,
    title: str | None = None,
    verdict: str | None = None,
    labels: Mapping[str, str] = LABELS,
) -> str:
    """One self-contained page: the verdict, the table, the seed-0 timelines one above the
    other (one per protocol of ``comparison``, named by ``labels``), each ``COMPARE_WIDTH``
    px at full size (a 1,400 px window shows them unscaled; side by side, three 1,100 px
    pictures shrank to a third and their text with them)."""
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in table_rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in table_rows[1:]
    )
    columns = []
    for protocol, runs in comparison.protocols.items():
        timeline = build_timeline(runs.events)
        timeline.title = f"{labels[protocol]} ({runs.assignor}), seed 0"
        columns.append(f"<div class='timeline'>{to_svg(timeline, COMPARE_WIDTH)}</div>")
    assumed = ", ".join(
        f"{key}={value}" for key, value in comparison.assumptions.items() if key != "configs"
    )
    configs = comparison.assumptions.get("configs") or {}
    stated = ", ".join(f"{k}={v}" for k, v in configs.items()) or "Kafka's defaults"
    if title is None:
        title = f"{comparison.scenario}: eager vs cooperative vs KIP-848 (consumer)"
    sentence = comparison.verdict if verdict is None else verdict
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>"
        "body{font-family:sans-serif;margin:16px}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;"
        "text-align:right}td:first-child,th:first-child{text-align:left}"
        ".timeline{margin-bottom:12px}"
        ".verdict{font-size:1.2em;font-weight:bold}"
        "</style></head><body>\n"
        f"<h1>{html.escape(title)}</h1>\n"
        f"<p class='verdict'>{html.escape(sentence)}</p>\n"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n"
        f"<p>Assumptions: {html.escape(assumed)}; configs: {html.escape(stated)}.</p>\n"
        "<h2>Partition ownership over time (seed 0)</h2>\n"
        f"{''.join(columns)}\n"
        "<p>Rows: consumers. One lane per partition: coloured while the consumer serves it, "
        "grey while it restores state. Red in 'unowned': partitions no one serves. "
        "Dashed: scenario steps.</p>\n</body></html>\n"
    )
