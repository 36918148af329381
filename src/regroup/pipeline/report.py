"""The report: one self-contained HTML file (inline SVG, no scripts, no network).

Sections (``SECTIONS``, each an ``<h2 id=...>``):

``summary``    per scenario, protocol and assignor: runs, mean idle
               partition-seconds, longest pause, rebalances, moves, duplicates,
               time to stable, violations;
``idle-vs-size``  idle partition-seconds (mean across seeds) against group size,
               one line per protocol and assignor, one chart per scenario;
``seeds``      the distribution across seeds (a box per protocol and assignor);
``timelines``  the ownership timeline of a representative run per protocol
               (its idle partition-seconds nearest the median of its runs):
               one row per partition, a bar per owner, solid while it serves,
               pale while it owns but has not restored yet;
``violations`` every invariant violation, or a line saying there was none.

Everything drawn is collected from the analytics' small tables (per run, per
partition interval) on the driver: the heavy lifting stayed in Spark.
"""

from __future__ import annotations

import html
import io
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["SECTIONS", "render_report", "write_report"]

SECTIONS = ("summary", "idle-vs-size", "seeds", "timelines", "violations")

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px}
th{background:#f3f3f3}td.n{text-align:right}h2{margin-top:2em}svg{max-width:100%;height:auto}
"""


def _svg(figure: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _series_label(row: Mapping[str, Any]) -> str:
    return f"{row['protocol']} / {row['assignor']}"


def _idle_vs_size(runs: Sequence[Mapping[str, Any]]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parts = []
    for scenario in sorted({r["scenario"] for r in runs}):
        figure, axes = plt.subplots(figsize=(7, 3.2))
        series: dict[str, dict[int, list[float]]] = {}
        for r in runs:
            if r["scenario"] == scenario and r["members"] is not None:
                by_size = series.setdefault(_series_label(r), {})
                by_size.setdefault(int(r["members"]), []).append(r["idle_partition_seconds"])
        for label, by_size in sorted(series.items()):
            sizes = sorted(by_size)
            axes.plot(sizes, [statistics.fmean(by_size[s]) for s in sizes], marker="o", label=label)
        axes.set_title(scenario)
        axes.set_xlabel("group size (members)")
        axes.set_ylabel("idle partition-seconds")
        axes.legend(fontsize=7)
        parts.append(_svg(figure))
    return "\n".join(parts)


def _seeds(runs: Sequence[Mapping[str, Any]]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parts = []
    for scenario in sorted({r["scenario"] for r in runs}):
        groups: dict[str, list[float]] = {}
        for r in runs:
            if r["scenario"] == scenario:
                groups.setdefault(_series_label(r), []).append(r["idle_partition_seconds"])
        labels = sorted(groups)
        figure, axes = plt.subplots(figsize=(7, 0.5 + 0.45 * len(labels)))
        axes.boxplot([groups[k] for k in labels], orientation="horizontal")
        axes.set_yticks(range(1, len(labels) + 1), labels, fontsize=8)
        axes.set_xlabel("idle partition-seconds per run (across seeds and sizes)")
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
    figure, axes = plt.subplots(figsize=(9, 0.6 + 0.3 * max(1, len(partitions))))
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
    axes.set_yticks(range(len(partitions)), partitions, fontsize=7)
    axes.set_xlabel("virtual time (s)")
    axes.set_xlim(0, end_ms / 1000)
    axes.set_title(
        f"{run['protocol']} / {run['assignor']}: {run['run_id']} "
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
) -> str:
    """The report's HTML from collected rows.

    ``summary``: ``analytics.summary`` rows; ``runs``: metrics joined with
    labels, one per run; ``ownership``: run_id -> its ownership intervals, for
    the representative runs (``representative_runs``); ``violations``: rows of
    the violations table.
    """
    sections = {
        "summary": _table(summary, list(summary[0].keys()) if summary else ["scenario"]),
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
        f'<h2 id="{name}">{headings[name]}</h2>\n{sections[name]}' for name in SECTIONS
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n"
    )


def representative_runs(runs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Per protocol, the run whose idle partition-seconds is nearest its protocol's median."""
    chosen = []
    for protocol in sorted({str(r["protocol"]) for r in runs}):
        mine = sorted(
            (r for r in runs if str(r["protocol"]) == protocol), key=lambda r: r["run_id"]
        )
        median = statistics.median(r["idle_partition_seconds"] for r in mine)
        chosen.append(min(mine, key=lambda r: abs(r["idle_partition_seconds"] - median)))
    return chosen


def write_report(analysis_paths: Mapping[str, str], spark: Any, out_file: str | Path) -> Path:
    """Collect the small tables written by ``write_analysis`` and write the HTML report."""
    from pyspark.sql import functions as F

    from regroup.pipeline.analytics import summary as summarize

    metrics = spark.read.parquet(analysis_paths["metrics"])
    labels = spark.read.parquet(analysis_paths["labels"])
    runs = [r.asDict() for r in metrics.join(labels, "run_id", "left").collect()]
    chosen = [r["run_id"] for r in representative_runs(runs)]
    ownership: dict[str, list[dict[str, Any]]] = {}
    if chosen:
        intervals = spark.read.parquet(analysis_paths["ownership"]).where(
            F.col("run_id").isin(chosen)
        )
        for row in intervals.collect():
            ownership.setdefault(row["run_id"], []).append(row.asDict())
    page = render_report(
        summary=[r.asDict() for r in summarize(metrics, labels).collect()],
        runs=runs,
        ownership=ownership,
        violations=[r.asDict() for r in spark.read.parquet(analysis_paths["violations"]).collect()],
    )
    path = Path(out_file)
    path.write_text(page, encoding="utf-8")
    return path
