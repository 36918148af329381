"""The report: one self-contained HTML file (inline SVG, no scripts, no network).

Sections (``SECTIONS``, each an ``<h2 id=...>`` followed by a paragraph that
says what it shows and how to read it):

``headline``   the answer first, on the first screen: a table with, per
               scenario at its largest group size, the protocol to use and why
               (``recommend``: the measured difference and the cost that
               explains it; no winner for a tie, nor for a one-seed smoke run,
               which a banner names); then per scenario one chart of idle
               partition-seconds per protocol (median and the seeds' range) and
               one sentence naming the winner and the ratios, or a tie;
``restore``    where the ranking flips with the restore time: idle
               partition-seconds against the time to restore a partition's
               state (the demo's restore study, scenarios named
               ``NAME@restore-Nms``), the restore time below which eager's
               single round costs less than the two-step protocols, and why
               eager's figure is an upper bound;
``summary``    per scenario, protocol, assignor and group size: runs, mean idle
               partition-seconds, longest pause, rebalances, moves, duplicates,
               time to stable, violations;
``idle-vs-size``  idle partition-seconds (mean across seeds) against group size,
               one line per protocol and assignor, one chart per scenario, and
               the same means as a table with the lowest of each size marked;
``seeds``      the distribution across seeds (a box per protocol and assignor);
``timelines``  the ownership timeline of a representative run per protocol
               (its idle partition-seconds nearest the median of its runs):
               one row per partition, a bar per owner, solid while it serves,
               pale while it owns but has not restored yet;
``violations`` every invariant violation, or a line saying there was none.

An optional ``intro`` (HTML, e.g. the demo's settings and their sources)
goes under the title. Everything drawn is collected from the analytics' small
tables (per run, per partition interval) on the driver: the heavy lifting
stayed in Spark.
"""

from __future__ import annotations

import html
import io
import itertools
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from regroup.sim.decision import TIE_WITHIN, Spread, rank

__all__ = [
    "PROTOCOL_NAMES",
    "REASONS",
    "SECTIONS",
    "Recommendation",
    "build_report",
    "crossover_sentence",
    "idle_ranges",
    "is_smoke",
    "protocol_name",
    "recommend",
    "render_report",
    "restore_of",
    "restore_variant",
    "scenario_title",
    "split_variant",
    "static_variant",
    "timeline_title",
    "verdict_sentence",
    "write_report",
]

SECTIONS = ("headline", "restore", "summary", "idle-vs-size", "seeds", "timelines", "violations")

#: How the report names each protocol, everywhere (``group.protocol=consumer`` is KIP-848's).
PROTOCOL_NAMES = {
    "eager": "eager",
    "cooperative": "cooperative",
    "consumer": "KIP-848 (consumer)",
}

#: A variant of a scenario is named ``BASE@TAG`` (``rolling-bounce@static``,
#: ``crash@restore-100ms``): a scenario of its own in the tables, drawn with its base here.
VARIANT_SEPARATOR = "@"


def protocol_name(protocol: str) -> str:
    """``PROTOCOL_NAMES``' name of ``protocol`` (itself when unknown)."""
    return PROTOCOL_NAMES.get(protocol, protocol)


def static_variant(scenario: str) -> str:
    """The name of ``scenario`` run with static membership (KIP-345) for every member."""
    return f"{scenario}{VARIANT_SEPARATOR}static"


def restore_variant(scenario: str, restore_ms: int) -> str:
    """The name of ``scenario`` run with ``restore_ms`` to restore each assigned partition."""
    return f"{scenario}{VARIANT_SEPARATOR}restore-{restore_ms}ms"


def split_variant(scenario: str) -> tuple[str, str | None]:
    """``(base, tag)`` of a variant's name; ``(scenario, None)`` for a scenario itself."""
    base, sep, tag = scenario.partition(VARIANT_SEPARATOR)
    return (base, tag) if sep else (scenario, None)


def restore_of(scenario: str) -> int | None:
    """The restore time of a restore variant's name (the restore study), else ``None``."""
    _, tag = split_variant(scenario)
    if tag and tag.startswith("restore-") and tag.endswith("ms"):
        number = tag[len("restore-") : -len("ms")]
        return int(number) if number.isdigit() else None
    return None


def _duration(ms: float) -> str:
    """``0``, ``100 ms``, ``1 s``, ``2.5 s``: one unit per magnitude."""
    if ms == 0:
        return "0"
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.1f} s".replace(".0 s", " s")


def scenario_title(scenario: str) -> str:
    """A scenario's name for people: ``rolling-bounce, static members (KIP-345)``."""
    base, tag = split_variant(scenario)
    if tag is None:
        return base
    if tag == "static":
        return f"{base}, static members (KIP-345)"
    restore = restore_of(scenario)
    if restore is not None:
        return f"{base}, {_duration(restore)} restore"
    return f"{base} ({tag})"


_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px}
th{background:#f3f3f3}td.n{text-align:right}h2{margin-top:2em}svg{max-width:100%;height:auto}
td.best{font-weight:bold;background:#eaf5ea}p.how{color:#444;max-width:60em}
p.verdict{font-size:16px;max-width:60em}
table.recommend{font-size:15px;max-width:1100px}table.recommend td{vertical-align:top}
table.recommend td:first-child{white-space:nowrap}
td.use{font-weight:bold;white-space:nowrap}p.smoke{background:#fff3cd;padding:8px;max-width:60em}
"""

#: Column headings of the summary table (``analytics.summary``'s names otherwise).
SUMMARY_HEADINGS = {
    "members": "size",
    "idle_partition_s_mean": "idle p-s",
    "longest_pause_ms": "longest pause ms",
    "rebalances_mean": "rebalances",
    "moved_mean": "moved",
    "duplicates_mean": "duplicates",
    "time_to_stable_max_ms": "time to stable ms",
    "pause_p99_max_ms": "pause p99 ms",
    "unstable_ms_mean": "not Stable ms",
    "catch_up_max_s": "catch-up s",
}

#: What each section shows (the paragraph under its heading).
EXPLAIN = {
    "headline": (
        "The answer first: what to use for each scenario, at its largest group size, and "
        "why, by idle partition-seconds (how long partitions went unprocessed). A tie (the "
        "seeds do not separate the protocols, or they are within 5 %) or a one-seed smoke "
        "run names no winner. Under the table, each scenario's idle time per protocol (the "
        "bar: the median over its seeds; the line: the lowest to the highest seed)."
    ),
    "restore": (
        "The verdict depends on what a moved partition costs. A stateless consumer resumes "
        "a partition at once; a stateful one (a Kafka Streams task) first restores its "
        "state. Each chart runs one scenario at one group size with the restore time "
        "per assigned partition set to 0, 100 ms, 1 s, 5 s and 20 s, everything else as "
        "above, and the sentence says where eager's ranking flips (read off the chart "
        "between the two restore times around the flip, as a straight line)."
    ),
    "summary": (
        "One row per scenario, protocol, assignor and group size (<b>size</b>: members at the "
        "start), "
        "over its seeds. <b>idle p-s</b>: partition-seconds during which a partition had no "
        "consumer serving it (owned and its state restored), summed over partitions, mean "
        "across seeds; <b>longest pause</b>: the longest such gap of any partition (ms, worst "
        "seed); <b>rebalances</b>: generations (classic) or target assignments (KIP-848); "
        "<b>moved</b>: partitions that changed owner; <b>duplicates</b>: records processed "
        "again after a move; <b>time to stable</b>: from the scenario's first action until "
        "the group is stable after its last (ms, worst seed); <b>violations</b>: invariant "
        "violations (must be 0). Definitions: <code>regroup.sim.metrics</code>."
    ),
    "idle-vs-size": (
        "Each line is a protocol with its assignor; each point the mean idle "
        "partition-seconds of its seeds at that group size. Lower is better: it is the "
        "processing time the group lost to rebalancing. Below each chart, the same means "
        "as numbers, the lowest of each size in bold."
    ),
    "seeds": (
        "How much the runs vary with the seed alone: one box per protocol, assignor and "
        "group size over its seeds (the box spans the middle half of the runs, the line in "
        "it is the median, the whiskers the rest but outliers). A wide box means the "
        "outcome depends on timing (when heartbeats fall, which member joins first) "
        "rather than on the protocol; a line means every seed gave the same."
    ),
    "timelines": (
        "For each scenario and protocol, the run of the smallest group size whose idle "
        "partition-seconds is nearest their median: "
        "one row per partition, one colour per member (a member that restarts comes back "
        "under a new colour). A pale bar: the member owns the partition but is still "
        "restoring its state; a solid bar: it serves it. Wherever a row has no solid bar "
        "the partition is idle. Eager's stop-the-world shows as a gap across every "
        "partition at once; cooperative and KIP-848 leave the partitions that do not move "
        "served throughout."
    ),
    "violations": (
        "Every invariant violation the runs recorded (two owners of a partition, an "
        "epoch going back, ...). A correct implementation has none."
    ),
}


def _svg(figure: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _series_label(row: Mapping[str, Any]) -> str:
    return f"{protocol_name(str(row['protocol']))} / {row['assignor']}"


def _idle_by_series(
    runs: Sequence[Mapping[str, Any]], scenario: str
) -> dict[str, dict[int, list[float]]]:
    """Per protocol / assignor label: group size -> the idle partition-seconds of its seeds."""
    series: dict[str, dict[int, list[float]]] = {}
    for r in runs:
        if r["scenario"] == scenario and r["members"] is not None:
            by_size = series.setdefault(_series_label(r), {})
            by_size.setdefault(int(r["members"]), []).append(r["idle_partition_seconds"])
    return series


def idle_means(runs: Sequence[Mapping[str, Any]], scenario: str) -> dict[str, dict[int, float]]:
    """Per protocol / assignor label: group size -> mean idle partition-seconds (``scenario``)."""
    return {
        label: {size: statistics.fmean(values) for size, values in by_size.items()}
        for label, by_size in _idle_by_series(runs, scenario).items()
    }


def idle_ranges(
    runs: Sequence[Mapping[str, Any]], scenario: str
) -> dict[str, dict[int, tuple[float, float]]]:
    """Per series: group size -> (lowest, highest) idle partition-seconds of its seeds."""
    return {
        label: {size: (min(values), max(values)) for size, values in by_size.items()}
        for label, by_size in _idle_by_series(runs, scenario).items()
    }


def _clear_winner(
    size: int,
    means: Mapping[str, Mapping[int, float]],
    ranges: Mapping[str, Mapping[int, tuple[float, float]]] | None,
) -> str | None:
    """The series with the lowest mean at ``size`` if its seeds' range lies below every
    other's (no overlap); ``None`` for a tie, or when fewer than two series ran."""
    present = {label: by_size[size] for label, by_size in means.items() if size in by_size}
    if len(present) < 2:
        return None
    spreads = {}
    for label, value in present.items():
        low, high = (
            (value, value) if ranges is None else ranges.get(label, {}).get(size, (value, value))
        )
        spreads[label] = Spread(value, low, high)
    return rank(spreads).winner


def _means_table(
    means: Mapping[str, Mapping[int, float]],
    ranges: Mapping[str, Mapping[int, tuple[float, float]]] | None = None,
) -> str:
    """Sizes down, protocols across; the lowest mean of each size marked ``best`` when its
    seeds' range does not overlap another's (a difference within the seeds is no win)."""
    labels = sorted(means)
    sizes = sorted({size for by_size in means.values() for size in by_size})
    head = "<th>members</th>" + "".join(f"<th>{html.escape(label)}</th>" for label in labels)
    rows = []
    for size in sizes:
        winner = _clear_winner(size, means, ranges)
        cells = []
        for label in labels:
            value = means[label].get(size)
            if value is None:
                cells.append("<td>-</td>")
                continue
            kind = "n best" if label == winner else "n"
            cells.append(f'<td class="{kind}">{value:.1f}</td>')
        rows.append(f'<tr><td class="n">{size}</td>{"".join(cells)}</tr>')
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _idle_vs_size(runs: Sequence[Mapping[str, Any]]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullLocator

    parts = []
    for scenario in sorted({r["scenario"] for r in runs}):
        means = idle_means(runs, scenario)
        figure, axes = plt.subplots(figsize=(7, 3.2))
        all_sizes: set[int] = set()
        for label, by_size in sorted(means.items()):
            sizes = sorted(by_size)
            all_sizes.update(sizes)
            axes.plot(sizes, [by_size[s] for s in sizes], marker="o", label=label)
        # Group sizes are whole members: ticks at the sizes run, nothing in between.
        ticks = sorted(all_sizes)
        axes.xaxis.set_major_locator(FixedLocator(ticks))
        axes.xaxis.set_minor_locator(NullLocator())
        axes.set_xticklabels([str(t) for t in ticks])
        if len(ticks) == 1:
            axes.set_xlim(ticks[0] - 1, ticks[0] + 1)
        axes.set_ylim(bottom=0)
        axes.set_title(scenario)
        axes.set_xlabel("group size (members)")
        axes.set_ylabel("idle partition-seconds")
        axes.legend(fontsize=7)
        parts.append(_svg(figure))
        ranges = idle_ranges(runs, scenario)
        parts.append(_means_table(means, ranges))
        parts.append(f"<p>{html.escape(lowest_sentence(means, ranges))}</p>")
    return "\n".join(parts)


def lowest_sentence(
    means: Mapping[str, Mapping[int, float]],
    ranges: Mapping[str, Mapping[int, tuple[float, float]]] | None = None,
) -> str:
    """Which series had the lowest mean idle at which sizes, in words (from the numbers).

    With ``ranges`` (the seeds' lowest and highest), a size where the lowest mean's
    range overlaps another series' is a tie, not a win, and is named as such."""
    wins: dict[str, list[int]] = {}
    ties: list[int] = []
    sizes = sorted({size for by_size in means.values() for size in by_size})
    for size in sizes:
        present = {label: by_size[size] for label, by_size in means.items() if size in by_size}
        if len(present) < 2:
            continue
        if ranges is not None:
            winner = _clear_winner(size, means, ranges)
            if winner is None:
                ties.append(size)
            else:
                wins.setdefault(winner, []).append(size)
            continue
        best = min(present.values())
        for label, value in sorted(present.items()):
            if value == best:
                wins.setdefault(label, []).append(size)
    if not wins and not ties:
        return "Only one series: nothing to compare."
    compared = [s for s in sizes if sum(s in by_size for by_size in means.values()) > 1]
    parts = []
    for label, won in sorted(wins.items(), key=lambda item: (-len(item[1]), item[0])):
        where = (
            "at every size"
            if won == compared
            else "at " + ", ".join(str(size) for size in won) + " members"
        )
        parts.append(f"{label} {where}")
    if ties:
        parts.append(
            "a tie (the seeds' ranges overlap) at "
            + ", ".join(str(size) for size in ties)
            + " members"
        )
    return "Lowest mean idle partition-seconds: " + "; ".join(parts) + "."


# -- the headline -----------------------------------------------------------------------------


def _stats(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, lowest, highest) of a protocol's seeds."""
    return statistics.median(values), min(values), max(values)


def _by_protocol(
    runs: Sequence[Mapping[str, Any]], scenario: str, size: int | None
) -> dict[str, list[float]]:
    """Idle partition-seconds of each series of ``scenario`` at ``size``, over its seeds.

    A series is the protocol alone when each protocol ran with one assignor here
    (the demo), else ``protocol / assignor``."""
    return {
        label: [float(r["idle_partition_seconds"]) for r in mine]
        for label, mine in _series_runs(runs, scenario, size).items()
    }


def _series_runs(
    runs: Sequence[Mapping[str, Any]], scenario: str, size: int | None
) -> dict[str, list[Mapping[str, Any]]]:
    """The runs of each series of ``scenario`` at ``size`` (``_by_protocol``'s series)."""
    mine = [
        r
        for r in runs
        if r["scenario"] == scenario
        and (size is None or (r["members"] is not None and int(r["members"]) == size))
    ]
    assignors: dict[str, set[str]] = {}
    for r in mine:
        assignors.setdefault(str(r["protocol"]), set()).add(str(r["assignor"]))
    one_each = all(len(a) == 1 for a in assignors.values())
    out: dict[str, list[Mapping[str, Any]]] = {}
    for r in mine:
        label = protocol_name(str(r["protocol"])) if one_each else _series_label(r)
        out.setdefault(label, []).append(r)
    return out


#: The costs a recommendation's reason may name (the per-run metrics), in the order they
#: explain a difference in idle time, each with how the recommended protocol does better.
REASONS: tuple[tuple[str, str], ...] = (
    ("paused_partitions", "pauses fewer partitions"),
    ("partitions_moved", "moves fewer partitions"),
    ("max_partition_pause_ms", "keeps its longest partition pause shorter"),
    ("rebalances", "needs fewer rebalances"),
    ("peak_lag", "lets less lag build up"),
)


@dataclass(frozen=True, slots=True)
class Recommendation:
    """The first screen's line for one scenario: what to use (``None``: no winner) and why."""

    title: str
    protocol: str | None
    reason: str


def _median_of(mine: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [float(r[key]) for r in mine if r.get(key) is not None]
    return statistics.median(values) if values else None


def recommend(title: str, series: Mapping[str, Sequence[Mapping[str, Any]]]) -> Recommendation:
    """What to use for one scenario and size, by ``regroup.sim.decision``'s rule on idle
    partition-seconds, and why: the measured difference, then the first cost of
    ``REASONS`` by which the recommended protocol is best (lower than the runner-up and no
    higher than any other). A tie, and a smoke run (``is_smoke``), recommend nothing."""
    values = {
        label: [float(r["idle_partition_seconds"]) for r in runs]
        for label, runs in series.items()
        if runs
    }
    if not values:
        return Recommendation(title, None, "no runs")
    stats = {label: _stats(v) for label, v in values.items()}
    ranking = rank({label: Spread(*stat) for label, stat in stats.items()})
    best, other = ranking.best, ranking.runner_up
    mine = stats[best][0]
    if other is None:
        return Recommendation(title, best, f"only {best} ran ({mine:.0f} idle partition-s)")
    theirs = stats[other][0]
    if is_smoke(values):
        return Recommendation(
            title,
            None,
            f"one seed per protocol (a smoke run) cannot separate the protocols from one "
            f"run's timing; lowest here {best} ({mine:.0f} idle partition-s, {other} "
            f"{theirs:.0f}); run more seeds for a verdict",
        )
    if ranking.tie:
        names = " and ".join([best, *ranking.tied])
        return Recommendation(
            title,
            None,
            f"{names} idle about as long ({mine:.0f} and {theirs:.0f} idle partition-s for "
            f"the best two): the seeds do not separate them or they are within "
            f"{TIE_WITHIN:.0%}; choose by another cost (the summary below)",
        )
    text = f"{best} idles {mine:.0f} partition-s against {theirs:.0f} for {other}"
    for key, phrase in REASONS:
        medians = {label: _median_of(runs, key) for label, runs in series.items()}
        a, b = medians.get(best), medians.get(other)
        if a is None or b is None or any(v is not None and v < a for v in medians.values()):
            continue
        if a < b and f"{a:.0f}" != f"{b:.0f}":
            return Recommendation(title, best, f"{text}: it {phrase} ({a:.0f} against {b:.0f})")
    return Recommendation(title, best, f"{text}; no other measured cost separates them")


def _recommendations(runs: Sequence[Mapping[str, Any]]) -> str:
    """The first screen: one row per scenario (at its largest group size), what to use
    and why; a smoke run says so above it."""
    rows = []
    smoke = True
    for scenario in _base_scenarios(runs):
        size = _largest_size(runs, scenario)
        series = _series_runs(runs, scenario, size)
        smoke = smoke and is_smoke({k: [0.0] * len(v) for k, v in series.items()})
        title = scenario_title(scenario) + (f", {size} members" if size else "")
        chosen = recommend(title, series)
        use = chosen.protocol or "no winner"
        rows.append(
            f"<tr><td>{html.escape(chosen.title)}</td><td class='use'>{html.escape(use)}</td>"
            f"<td>{html.escape(chosen.reason)}</td></tr>"
        )
    banner = (
        '<p class="smoke"><b>A smoke run:</b> one seed per protocol. It shows that every '
        "scenario and protocol runs end to end; it declares no winner, since one run's "
        "timing (when heartbeats fall, who joins first) can decide a comparison. Run "
        "<code>regroup demo</code> without <code>--quick</code> for a verdict.</p>\n"
        if smoke and rows
        else ""
    )
    return (
        banner
        + '<table class="recommend"><thead><tr><th>scenario</th><th>use</th><th>why</th>'
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _largest_size(runs: Sequence[Mapping[str, Any]], scenario: str) -> int | None:
    sizes = [int(r["members"]) for r in runs if r["scenario"] == scenario and r["members"]]
    return max(sizes) if sizes else None


def is_smoke(values: Mapping[str, Sequence[float]]) -> bool:
    """Every series ran one seed: a smoke run (``demo --quick``), which declares no winner
    (one seed's timings, when heartbeats fall and who joins first, can decide it)."""
    return len(values) > 1 and all(len(v) == 1 for v in values.values())


def verdict_sentence(title: str, values: Mapping[str, Sequence[float]]) -> str:
    """One sentence: who idles least (median of the seeds) and by what factor, or a tie.

    A difference is only called a win when the best series' highest seed stays below
    the other's lowest and its median is more than ``TIE_WITHIN`` lower; otherwise the
    two are named as a tie with their ranges. One seed per series (``is_smoke``) names
    no winner at all."""
    if not values:
        return f"{title}: no runs."
    stats = {label: _stats(v) for label, v in values.items() if v}
    ranking = rank({label: Spread(*stat) for label, stat in stats.items()})
    best = ranking.best
    median, low, high = stats[best]
    if ranking.runner_up is None:
        return f"{title}: only {best} ran ({median:.0f} idle partition-s)."
    if is_smoke(values):
        order = sorted(stats, key=lambda label: (stats[label][0], label))
        measured = ", ".join(f"{label} {stats[label][0]:.0f}" for label in order)
        return (
            f"{title}: one seed per protocol, a smoke run: no winner declared "
            f"(idle partition-s: {measured})."
        )
    tied = list(ranking.tied)
    order = sorted(stats, key=lambda label: (stats[label][0], label))
    apart = [label for label in order[1:] if label not in tied]

    def versus(label: str) -> str:
        other = stats[label][0]
        if median <= 0:
            return f"{label} ({other:.0f})"
        return f"{other / median:.1f}\N{MULTIPLICATION SIGN} less than {label} ({other:.0f})"

    if tied:
        group = [best, *tied]
        names = ", ".join(group[:-1]) + " and " + group[-1]
        spans = ", ".join(f"{stats[x][1]:.0f}-{stats[x][2]:.0f}" for x in group)
        text = (
            f"{title}: a tie between {names} (their seeds' ranges overlap or their medians "
            f"are within {TIE_WITHIN:.0%}: {spans} idle partition-s)"
        )
        if apart:
            each = "both" if len(group) == 2 else "each"
            text += f"; {each} idle {', '.join(versus(x) for x in apart)}"
        return text + "."
    return (
        f"{title}: {best} idles least, {median:.0f} partition-s (seeds {low:.0f}-{high:.0f}); "
        + ", ".join(versus(label) for label in apart)
        + "."
    )


def _base_scenarios(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The scenarios of the headline and the summary: all but the restore study's, each
    base followed by its variants."""
    names = {str(r["scenario"]) for r in runs if restore_of(str(r["scenario"])) is None}
    return sorted(names, key=lambda n: (split_variant(n)[0], split_variant(n)[1] or ""))


def _bar_chart(title: str, values: Mapping[str, Sequence[float]]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = sorted(values, key=lambda label: statistics.median(values[label]))
    stats = [_stats(values[label]) for label in labels]
    figure, axes = plt.subplots(figsize=(7, 0.6 + 0.35 * len(labels)))
    ys = range(len(labels))
    axes.barh(ys, [m for m, _, _ in stats], color="#9ecae1", height=0.6)
    axes.hlines(ys, [lo for _, lo, _ in stats], [hi for _, _, hi in stats], color="#08519c")
    axes.set_yticks(ys, labels, fontsize=8)
    axes.invert_yaxis()  # the least idle on top
    axes.set_xlim(left=0)
    axes.set_xlabel("idle partition-seconds (bar: median; line: lowest to highest seed)")
    axes.set_title(title, fontsize=9)
    return _svg(figure)


def _headline(runs: Sequence[Mapping[str, Any]]) -> str:
    parts = [_recommendations(runs)]
    for scenario in _base_scenarios(runs):
        size = _largest_size(runs, scenario)
        values = _by_protocol(runs, scenario, size)
        title = scenario_title(scenario) + (f", {size} members" if size else "")
        parts.append(f'<p class="verdict">{html.escape(verdict_sentence(title, values))}</p>')
        parts.append(_bar_chart(title, values))
    return "\n".join(parts)


# -- the restore study -----------------------------------------------------------------------

#: Said under the restore study: the simulator's restore charge favours the other protocols.
UPPER_BOUND = (
    "Eager's restore cost here is an upper bound: the simulator charges a full restore on "
    "every assignment, also when eager hands a member back the very partition it revoked a "
    "moment earlier (Kafka Streams would resume such a suspended task without restoring "
    "it), so with real state stores eager fares better than shown and the flip comes at "
    "a longer restore time."
)


def crossover_sentence(title: str, curves: Mapping[str, Mapping[int, float]]) -> str:
    """Where eager's ranking flips as the restore time grows, in words.

    ``curves``: protocol name -> restore ms -> median idle partition-seconds. With
    ``d(r)`` = eager's idle minus the best two-step protocol's, the flip is where ``d``
    first turns from negative to non-negative, read off the straight line between the two
    restore times around it."""
    eager = curves.get(protocol_name("eager"))
    others = {label: c for label, c in curves.items() if label != protocol_name("eager")}
    if not eager or not others:
        return f"{title}: eager and a two-step protocol are needed to compare."
    restores = sorted(r for r in eager if all(r in c for c in others.values()))
    diff = {r: eager[r] - min(c[r] for c in others.values()) for r in restores}
    names = " and ".join(sorted(others))
    tried = f"{_duration(restores[0])} to {_duration(restores[-1])}"
    if all(d < 0 for d in diff.values()):
        return (
            f"{title}: eager's single round costs less than {names} at every restore time "
            f"tried ({tried} per partition)."
        )
    if all(d >= 0 for d in diff.values()):
        return (
            f"{title}: {names} cost no more than eager at every restore time tried "
            f"({tried} per partition), even with no restore at all."
        )
    for low, high in itertools.pairwise(restores):
        if diff[low] < 0 <= diff[high]:
            flip = low + (high - low) * (-diff[low]) / (diff[high] - diff[low])
            about = round(flip, -1) if flip < 1000 else round(flip, -2)
            text = (
                f"{title}: below about {_duration(about)} "
                f"of restore per partition, eager's single round costs less than the "
                f"two-step protocols ({names}); above it they cost less (eager wins at "
                f"{_duration(low)}, loses at {_duration(high)})"
            )
            later = [r for r in restores if r > high and diff[r] < 0]
            if later:
                text += f"; eager is ahead again at {_duration(later[0])}"
            return text + "."
    return (
        f"{title}: eager costs less only at the longest restore times tried ({tried}); "
        "the ranking does not follow the restore time simply."
    )


def _restore_study(runs: Sequence[Mapping[str, Any]]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    studies: dict[str, list[Mapping[str, Any]]] = {}
    for r in runs:
        if restore_of(str(r["scenario"])) is not None:
            studies.setdefault(split_variant(str(r["scenario"]))[0], []).append(r)
    if not studies:
        return (
            "<p>These runs hold no restore study (the demo's scenarios named "
            "<code>NAME@restore-Nms</code>).</p>"
        )
    parts = []
    for base, mine in sorted(studies.items()):
        sizes = sorted({int(r["members"]) for r in mine if r["members"] is not None})
        curves: dict[str, dict[int, float]] = {}
        for restore in sorted({restore_of(str(r["scenario"])) or 0 for r in mine}):
            values = _by_protocol(mine, restore_variant(base, restore), None)
            for label, idle in values.items():
                curves.setdefault(label, {})[restore] = statistics.median(idle)
        restores = sorted({r for c in curves.values() for r in c})
        title = base + (f", {', '.join(map(str, sizes))} members" if sizes else "")
        figure, axes = plt.subplots(figsize=(7, 3))
        for label, curve in sorted(curves.items()):
            axes.plot(
                [restores.index(r) for r in sorted(curve)],
                [curve[r] for r in sorted(curve)],
                marker="o",
                label=label,
            )
        axes.set_xticks(range(len(restores)), [_duration(r) for r in restores])
        axes.set_xlabel("restore time per assigned partition")
        axes.set_ylabel("idle partition-seconds (median)")
        axes.set_ylim(bottom=0)
        axes.set_title(title, fontsize=9)
        axes.legend(fontsize=7)
        parts.append(_svg(figure))
        head = "<th>restore</th>" + "".join(f"<th>{html.escape(x)}</th>" for x in sorted(curves))
        body = "".join(
            f'<tr><td class="n">{_duration(r)}</td>'
            + "".join(
                f'<td class="n">{curves[x][r]:.1f}</td>' if r in curves[x] else "<td>-</td>"
                for x in sorted(curves)
            )
            + "</tr>"
            for r in restores
        )
        parts.append(f"<table><tr>{head}</tr>{body}</table>")
        parts.append(f'<p class="verdict">{html.escape(crossover_sentence(title, curves))}</p>')
    parts.append(f"<p>{html.escape(UPPER_BOUND)}</p>")
    return "\n".join(parts)


def _seeds(runs: Sequence[Mapping[str, Any]]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parts = []
    for scenario in sorted({r["scenario"] for r in runs}):
        # One box per protocol and group size: the spread is the seeds', not the sizes'.
        groups: dict[tuple[int, str], list[float]] = {}
        for r in runs:
            if r["scenario"] == scenario:
                size = -1 if r["members"] is None else int(r["members"])
                groups.setdefault((size, _series_label(r)), []).append(r["idle_partition_seconds"])
        keys = sorted(groups, reverse=True)
        labels = [label if size < 0 else f"{label}, {size} members" for size, label in keys]
        figure, axes = plt.subplots(figsize=(7, 0.5 + 0.3 * len(keys)))
        axes.boxplot([groups[k] for k in keys], orientation="horizontal")
        axes.set_yticks(range(1, len(keys) + 1), labels, fontsize=7)
        axes.set_xlabel("idle partition-seconds per run (across seeds)")
        axes.set_title(scenario)
        parts.append(_svg(figure))
    return "\n".join(parts)


def timeline_title(run: Mapping[str, Any]) -> str:
    """A timeline's title for people (not its run id): scenario, protocol, size, seed, idle."""
    members = "" if run.get("members") is None else f", {run['members']} members"
    seed = "" if run.get("seed") is None else f", seed {run['seed']}"
    return (
        f"{scenario_title(str(run['scenario']))}: {protocol_name(str(run['protocol']))} "
        f"({run['assignor']}){members}{seed}: "
        f"{float(run['idle_partition_seconds']):.0f} idle partition-s"
    )


def _timeline(run: Mapping[str, Any], intervals: Sequence[Mapping[str, Any]], end_ms: int) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    partitions = sorted(
        {i["partition"] for i in intervals},
        key=lambda p: (p.rsplit("-", 1)[0], int(p.rsplit("-", 1)[1])),
    )
    members = sorted({i["member_id"] for i in intervals})
    colors = plt.get_cmap("tab10")
    figure, axes = plt.subplots(figsize=(9, 0.8 + 0.18 * max(1, len(partitions))))
    row = {p: n for n, p in enumerate(partitions)}
    # Owned (pale) first, served (solid) on top: overlapping owners never hide a server.
    for serving_pass in (False, True):
        for interval in intervals:
            color = colors(members.index(interval["member_id"]) % 10)
            start = interval["assigned_ms"] / 1000
            released = interval["released_ms"]
            until = (released if released is not None else end_ms) / 1000
            y = row[interval["partition"]]
            if not serving_pass:
                axes.barh(y, until - start, left=start, color=color, alpha=0.25, height=0.8)
            elif interval["serving_ms"] is not None and interval["serving_ms"] / 1000 < until:
                serving = interval["serving_ms"] / 1000
                axes.barh(y, until - serving, left=serving, color=color, height=0.5)
    axes.set_yticks(range(len(partitions)), partitions, fontsize=6)
    axes.set_xlabel("virtual time (s)")
    axes.set_xlim(0, end_ms / 1000)
    acts_ms = run.get("window_start_ms")
    if acts_ms is not None:
        # The scenario's first action (it opens the measurement window).
        axes.axvline(int(acts_ms) / 1000, color="#333", ls="--", lw=0.8)
        axes.annotate(
            "scenario acts",
            (int(acts_ms) / 1000, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(2, 2),
            textcoords="offset points",
            fontsize=7,
        )
    from matplotlib.patches import Patch

    # A member legend: members in the order they first got a partition, by a short id.
    first: dict[str, int] = {}
    for interval in intervals:
        at = int(interval["assigned_ms"])
        first[interval["member_id"]] = min(at, first.get(interval["member_id"], at))
    ordered = sorted(first, key=lambda m: (first[m], m))
    if ordered:
        axes.legend(
            handles=[
                Patch(color=colors(members.index(m) % 10), label=f"member {m[:8]}") for m in ordered
            ],
            fontsize=6,
            loc="upper left",
            bbox_to_anchor=(1.0, 1.0),
            title="owner",
            title_fontsize=6,
        )
    axes.set_title(timeline_title(run), fontsize=9, pad=12)
    return _svg(figure)


def _table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for r in rows:
        cells = []
        for c in columns:
            value = r[c]
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            text = "-" if value is None else str(value)
            cells.append(f"<td{' class=n' if numeric else ''}>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div style="overflow-x:auto"><table><tr>{head}</tr>{"".join(body)}</table></div>'


def render_report(
    *,
    summary: Sequence[Mapping[str, Any]],
    runs: Sequence[Mapping[str, Any]],
    ownership: Mapping[str, Sequence[Mapping[str, Any]]],
    violations: Sequence[Mapping[str, Any]],
    title: str = "regroup: rebalance protocols compared",
    intro: str = "",
) -> str:
    """The report's HTML from collected rows.

    ``summary``: ``analytics.summary`` rows; ``runs``: metrics joined with
    labels, one per run; ``ownership``: run_id -> its ownership intervals, for
    the representative runs (``representative_runs``); ``violations``: rows of
    the violations table; ``intro``: HTML put under the title (trusted: ours).
    """
    summary = [
        {**row, "protocol": protocol_name(str(row.get("protocol")))}
        for row in summary
        if restore_of(str(row.get("scenario"))) is None
    ]
    main_runs = [r for r in runs if restore_of(str(r["scenario"])) is None]
    sections = {
        "headline": _headline(main_runs) if main_runs else "<p>no runs</p>",
        "restore": _restore_study(runs),
        "summary": _table(
            [{SUMMARY_HEADINGS.get(k, k): v for k, v in row.items()} for row in summary],
            [SUMMARY_HEADINGS.get(k, k) for k in summary[0]] if summary else ["scenario"],
        ),
        "idle-vs-size": _idle_vs_size(main_runs) if main_runs else "<p>no runs</p>",
        "seeds": _seeds(main_runs) if main_runs else "<p>no runs</p>",
        "timelines": "\n".join(
            _timeline(run, ownership[run["run_id"]], int(run["window_end_ms"]))
            for run in representative_runs(main_runs)
            if run["run_id"] in ownership
        )
        or "<p>no ownership recorded</p>",
        "violations": _table(
            violations, ["run_id", "ts_ms", "invariant", "detail", "member_id", "partition"]
        )
        if violations
        else "<p>No invariant was violated in any run.</p>",
    }
    headings = {
        "headline": "The verdict, per scenario",
        "restore": "Where the ranking flips: the restore time",
        "summary": "Summary",
        "idle-vs-size": "Idle partition-seconds against group size",
        "seeds": "Distribution across seeds",
        "timelines": "Ownership timeline of a representative run per protocol",
        "violations": "Invariant violations",
    }
    shown = [
        f'<h2 id="{name}">{headings[name]}</h2>\n<p class="how">{EXPLAIN[name]}</p>\n'
        f"{sections[name]}"
        for name in SECTIONS
    ]
    # The verdict comes first, before any prose; the intro (settings, mechanisms) after it.
    body = shown[0] + f"\n{intro}\n" + "\n".join(shown[1:])
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n"
    )


def representative_runs(runs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Per scenario and protocol, the run whose idle partition-seconds is nearest their median.

    Among the runs of the smallest group size of that scenario and protocol,
    so the timelines stay readable (one row per partition) and compare like
    with like across protocols.
    """
    chosen = []
    keys = sorted({(str(r["scenario"]), str(r["protocol"])) for r in runs})
    for scenario, protocol in keys:
        mine = [r for r in runs if (str(r["scenario"]), str(r["protocol"])) == (scenario, protocol)]
        sizes = [int(r["members"]) for r in mine if r["members"] is not None]
        if sizes:
            mine = [r for r in mine if r["members"] is not None and int(r["members"]) == min(sizes)]
        mine.sort(key=lambda r: r["run_id"])
        median = statistics.median(r["idle_partition_seconds"] for r in mine)
        chosen.append(min(mine, key=lambda r: abs(r["idle_partition_seconds"] - median)))
    return chosen


def write_report(
    analysis: Any,
    out_file: str | Path,
    *,
    summary: Sequence[Mapping[str, Any]] | None = None,
    intro: str = "",
) -> Path:
    """``build_report`` written to the local file ``out_file``."""
    path = Path(out_file)
    path.write_text(build_report(analysis, summary=summary, intro=intro), encoding="utf-8")
    return path


def build_report(
    analysis: Any,
    *,
    summary: Sequence[Mapping[str, Any]] | None = None,
    intro: str = "",
) -> str:
    """Collect the small tables of ``analysis`` (an ``analytics.Analysis``); the HTML page.

    Three collects: the per-run rows (metrics joined with labels), the
    ownership intervals of the representative runs, and the violations;
    ``summary`` (``analytics.summary`` rows) is computed here unless given.
    """
    from pyspark.sql import functions as F

    from regroup.pipeline.analytics import summary as summarize

    runs = [r.asDict() for r in analysis.metrics.join(analysis.labels, "run_id", "left").collect()]
    chosen = [r["run_id"] for r in representative_runs(runs)]
    ownership: dict[str, list[dict[str, Any]]] = {}
    if chosen:
        intervals = analysis.ownership.where(F.col("run_id").isin(chosen))
        for row in intervals.collect():
            ownership.setdefault(row["run_id"], []).append(row.asDict())
    if summary is None:
        summary = [r.asDict() for r in summarize(analysis.metrics, analysis.labels).collect()]
    return render_report(
        summary=summary,
        runs=runs,
        ownership=ownership,
        violations=[r.asDict() for r in analysis.violations.collect()],
        intro=intro,
    )
