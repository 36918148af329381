"""The report: one self-contained HTML file (inline SVG, no scripts, no network).

Sections (``SECTIONS``, each an ``<h2 id=...>`` followed by a paragraph that
says what it shows and how to read it):

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
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["SECTIONS", "build_report", "render_report", "write_report"]

SECTIONS = ("summary", "idle-vs-size", "seeds", "timelines", "violations")

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px}
th{background:#f3f3f3}td.n{text-align:right}h2{margin-top:2em}svg{max-width:100%;height:auto}
td.best{font-weight:bold;background:#eaf5ea}p.how{color:#444;max-width:60em}
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
}

#: What each section shows (the paragraph under its heading).
EXPLAIN = {
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
    return f"{row['protocol']} / {row['assignor']}"


def idle_means(runs: Sequence[Mapping[str, Any]], scenario: str) -> dict[str, dict[int, float]]:
    """Per protocol / assignor label: group size -> mean idle partition-seconds (``scenario``)."""
    series: dict[str, dict[int, list[float]]] = {}
    for r in runs:
        if r["scenario"] == scenario and r["members"] is not None:
            by_size = series.setdefault(_series_label(r), {})
            by_size.setdefault(int(r["members"]), []).append(r["idle_partition_seconds"])
    return {
        label: {size: statistics.fmean(values) for size, values in by_size.items()}
        for label, by_size in series.items()
    }


def _means_table(means: Mapping[str, Mapping[int, float]]) -> str:
    """Sizes down, protocols across; the lowest mean of each size marked ``best``."""
    labels = sorted(means)
    sizes = sorted({size for by_size in means.values() for size in by_size})
    head = "<th>members</th>" + "".join(f"<th>{html.escape(label)}</th>" for label in labels)
    rows = []
    for size in sizes:
        present = [means[label][size] for label in labels if size in means[label]]
        lowest = min(present) if present else None
        cells = []
        for label in labels:
            value = means[label].get(size)
            if value is None:
                cells.append("<td>-</td>")
                continue
            kind = "n best" if value == lowest and len(present) > 1 else "n"
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
        parts.append(_means_table(means))
        parts.append(f"<p>{html.escape(lowest_sentence(means))}</p>")
    return "\n".join(parts)


def lowest_sentence(means: Mapping[str, Mapping[int, float]]) -> str:
    """Which series had the lowest mean idle at which sizes, in words (from the numbers)."""
    wins: dict[str, list[int]] = {}
    sizes = sorted({size for by_size in means.values() for size in by_size})
    for size in sizes:
        present = {label: by_size[size] for label, by_size in means.items() if size in by_size}
        if len(present) < 2:
            continue
        best = min(present.values())
        for label, value in sorted(present.items()):
            if value == best:
                wins.setdefault(label, []).append(size)
    if not wins:
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
    return "Lowest mean idle partition-seconds: " + "; ".join(parts) + "."


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
    axes.set_title(
        f"{run['scenario']}, {run['protocol']} / {run['assignor']}: {run['run_id']} "
        f"(idle {run['idle_partition_seconds']} partition-s)",
        fontsize=9,
    )
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
    sections = {
        "summary": _table(
            [{SUMMARY_HEADINGS.get(k, k): v for k, v in row.items()} for row in summary],
            [SUMMARY_HEADINGS.get(k, k) for k in summary[0]] if summary else ["scenario"],
        ),
        "idle-vs-size": _idle_vs_size(runs) if runs else "<p>no runs</p>",
        "seeds": _seeds(runs) if runs else "<p>no runs</p>",
        "timelines": "\n".join(
            _timeline(run, ownership[run["run_id"]], int(run["window_end_ms"]))
            for run in representative_runs(runs)
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
        "summary": "Summary",
        "idle-vs-size": "Idle partition-seconds against group size",
        "seeds": "Distribution across seeds",
        "timelines": "Ownership timeline of a representative run per protocol",
        "violations": "Invariant violations",
    }
    body = "\n".join(
        f'<h2 id="{name}">{headings[name]}</h2>\n<p class="how">{EXPLAIN[name]}</p>\n'
        f"{sections[name]}"
        for name in SECTIONS
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>\n{intro}\n{body}\n</body></html>\n"
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
