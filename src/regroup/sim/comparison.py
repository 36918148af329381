"""Eager, cooperative and KIP-848 on the same scenario and seeds: the table and the verdict.

``compare(...)`` runs the scenario under each of the three protocols with the
same seeds (``seed 0 .. N-1``), the same sizes, data model and Kafka configs,
and summarises each metric by its median and its range across the seeds
(``Summary``). The verdict is about the headline cost, idle
partition-seconds (``regroup.sim.metrics``): the protocol with the lowest
median wins, unless its range over the seeds overlaps the runner-up's, which
is a *tie* (a difference the seeds do not separate is not a win). The verdict
names the mechanism with the run's own numbers: how many partitions the
two-step protocols moved where eager paused them all, and the restore that
eager's stop-the-world round pays for each of them.

KIP-848 takes no ``session.timeout.ms`` / ``heartbeat.interval.ms`` consumer
config (the coordinator owns them); a comparison given one passes it to the
KIP-848 run as the broker's ``group.consumer.session.timeout.ms`` /
``group.consumer.heartbeat.interval.ms``, as ``simulate``'s shortcuts do, and
says so in the KIP-848 run's assumptions.
"""

from __future__ import annotations

import html
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from regroup.sim.assumptions import assumptions
from regroup.sim.scenario import PROTOCOLS, Scenario, ScenarioError
from regroup.sim.simulation import Settings, Simulation
from regroup.sim.timeline import build_timeline, to_svg

__all__ = [
    "LABELS",
    "METRICS",
    "Comparison",
    "ProtocolRuns",
    "Summary",
    "compare",
    "comparison_html",
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
    ("peak_lag", "peak lag, records"),
    ("time_to_stable_ms", "time to stable, ms"),
)
HEADLINE = "idle_partition_seconds"
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
            "assumptions": self.assumptions,
            "protocols": {
                protocol: runs.to_json({key: self.ratios(key)[protocol] for key, _ in METRICS})
                for protocol, runs in self.protocols.items()
            },
            "verdict": self.verdict,
        }


def _configs_for(protocol: str, configs: Mapping[str, str]) -> dict[str, str]:
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
    progress: Callable[[str, int], None] | None = None,
) -> Comparison:
    """Run the three protocols on ``seeds`` seeds; ``ScenarioError`` if one cannot run.

    Every run is planned (and so checked) before the first one starts.
    ``progress(protocol, seed)`` is called after each run.
    """
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
                    configs=_configs_for(protocol, configs or {}),
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
    comparison = Comparison(scenario.name, seeds, results, shared)
    comparison.verdict = verdict(comparison)
    return comparison


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if isinstance(value, float) else f"{value:,}"


def verdict(comparison: Comparison) -> str:
    """One line: the winner and its mechanism, or a tie (see the module docstring)."""
    runs = comparison.protocols
    ranked = sorted(runs, key=lambda p: runs[p].summary(HEADLINE).median or 0.0)
    winner, runner_up = ranked[0], ranked[1]
    best, second = runs[winner].summary(HEADLINE), runs[runner_up].summary(HEADLINE)
    seeds = comparison.seeds
    over = f"median of {seeds} seeds" if seeds > 1 else "one seed"
    if best.high is not None and second.low is not None and best.high >= second.low:
        if best.high == 0 and second.high == 0:
            return f"tie: no partition was idle under {LABELS[winner]} nor {LABELS[runner_up]}"
        return (
            f"tie: the seeds' ranges of idle partition-seconds overlap "
            f"({LABELS[winner]} {_fmt(best.low)}-{_fmt(best.high)}, "
            f"{LABELS[runner_up]} {_fmt(second.low)}-{_fmt(second.high)})"
        )
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

    head = (
        f"{LABELS[winner]} wins: {_fmt(best.median)} idle partition-s ({over}), "
        f"{' and '.join(less(p) for p in ranked[1:])}; "
    )
    if winner == "eager":
        cost = "nothing restores" if restore == 0 else f"a partition restores in {restore} ms"
        return (
            head + f"when {cost}, eager's one stop-the-world round per change costs less "
            "than the extra rounds of the two-step protocols"
        )
    revoked = runs[winner].summary("partitions_revoked").median
    eager_revoked = runs["eager"].summary("partitions_revoked").median
    eager_rounds = runs["eager"].summary("rebalances").median
    pause = f", each then restoring for {restore / 1000:g} s" if restore else ""
    text = (
        head + f"{LABELS[winner]} revokes only {_fmt(revoked)} partitions in all, where eager "
        f"revokes every partition at each of its {_fmt(eager_rounds)} rebalances "
        f"({_fmt(eager_revoked)}){pause}"
    )
    if {winner, runner_up} == {"cooperative", "consumer"}:
        # Both move few partitions: what separates them is how long a moved one waits.
        mine = runs[winner].summary("max_partition_pause_ms").median
        theirs = runs[runner_up].summary("max_partition_pause_ms").median
        text += (
            f"; against {LABELS[runner_up]} the difference is how long a moved partition "
            f"waits for its new owner (longest pause {_fmt(mine)} ms vs {_fmt(theirs)} ms)"
        )
    return text


# -- the HTML page ---------------------------------------------------------------------------

_SIZE = re.compile(r'<svg ([^>]*?)width="(\d+)" height="(\d+)"')


def _scalable(svg: str) -> str:
    """The SVG with a viewBox, so that it shrinks to its column."""
    return _SIZE.sub(
        lambda m: (
            f'<svg viewBox="0 0 {m.group(2)} {m.group(3)}" {m.group(1)}'
            f'width="100%" preserveAspectRatio="xMinYMin meet"'
        ),
        svg,
        count=1,
    )


def comparison_html(comparison: Comparison, table_rows: Sequence[Sequence[str]]) -> str:
    """One self-contained page: the verdict, the table, the seed-0 timelines side by side."""
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in table_rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in table_rows[1:]
    )
    columns = []
    for protocol, runs in comparison.protocols.items():
        timeline = build_timeline(runs.events)
        timeline.title = f"{LABELS[protocol]} ({runs.assignor}), seed 0"
        columns.append(f"<div class='col'>{_scalable(to_svg(timeline))}</div>")
    assumed = ", ".join(
        f"{key}={value}" for key, value in comparison.assumptions.items() if key != "configs"
    )
    configs = comparison.assumptions.get("configs") or {}
    stated = ", ".join(f"{k}={v}" for k, v in configs.items()) or "Kafka's defaults"
    title = f"{comparison.scenario}: eager vs cooperative vs KIP-848 (consumer)"
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>"
        "body{font-family:sans-serif;margin:16px}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;"
        "text-align:right}td:first-child,th:first-child{text-align:left}"
        ".cols{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:8px}"
        ".verdict{font-size:1.2em;font-weight:bold}"
        "</style></head><body>\n"
        f"<h1>{html.escape(title)}</h1>\n"
        f"<p class='verdict'>{html.escape(comparison.verdict)}</p>\n"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n"
        f"<p>Assumptions: {html.escape(assumed)}; configs: {html.escape(stated)}.</p>\n"
        "<h2>Partition ownership over time (seed 0)</h2>\n"
        f"<div class='cols'>{''.join(columns)}</div>\n"
        "<p>Rows: consumers. One lane per partition: coloured while the consumer serves it, "
        "grey while it restores state. Red in 'unowned': partitions no one serves. "
        "Dashed: scenario steps.</p>\n</body></html>\n"
    )
