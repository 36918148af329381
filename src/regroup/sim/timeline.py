"""Partition ownership over time, per consumer: self-contained HTML (inline SVG) or PNG.

The picture a user looks at to see a stop-the-world rebalance (every lane
breaks at once) versus an incremental one (only moved lanes break). Built
from the event log alone, with the ownership rules of ``metrics``:

* one row per consumer (``client_id`` from ``member_joined``; a member id
  when it is unknown); a restarted dynamic member is a new member id of the
  same consumer, so it stays on its row;
* inside a row, one thin lane per partition: hatched grey while the member
  owns the partition but restores state (assigned, not yet restored), a
  colour per partition while it serves it;
* a last row, ``unowned``: red where a partition is idle;
* dashed vertical lines at the scenario steps;
* a time axis with a tick at every round number of seconds.

With more than ``MAX_LANES`` partitions the lanes are replaced by one line per
row: how many partitions the consumer serves.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from regroup.events import (
    ConsumerStopped,
    Event,
    MemberJoined,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRestored,
    PartitionsRevoked,
    ScenarioStep,
    SimulationEnded,
    SimulationStarted,
)
from regroup.model import TopicPartition

__all__ = [
    "MAX_LANES",
    "Segment",
    "Timeline",
    "build_timeline",
    "to_html",
    "to_svg",
    "write_timeline",
]

MAX_LANES = 256
#: Steps are labelled in the PNG up to this many (a 1,000-member bounce has thousands).
MAX_STEP_LABELS = 24


@dataclass(frozen=True, slots=True)
class Segment:
    row: str
    partition: TopicPartition
    start_ms: int
    end_ms: int
    serving: bool


@dataclass(slots=True)
class Timeline:
    rows: list[str] = field(default_factory=list)
    partitions: list[TopicPartition] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    idle: list[Segment] = field(default_factory=list)
    steps: list[tuple[int, str]] = field(default_factory=list)
    end_ms: int = 0
    title: str = ""


def build_timeline(events: Iterable[Event]) -> Timeline:
    """Ownership segments per consumer row, idle segments, steps (see the module docstring)."""
    timeline = Timeline()
    client_of: dict[str, str] = {}
    open_: dict[tuple[str, TopicPartition], tuple[int, bool]] = {}
    holders: dict[TopicPartition, set[str]] = {}
    idle_since: dict[TopicPartition, int] = {}
    rows: dict[str, None] = {}
    last = 0

    def row_of(member: str) -> str:
        return client_of.get(member, member[:12])

    def close(member: str, tp: TopicPartition, ts: int) -> None:
        opened = open_.pop((member, tp), None)
        if opened is None:
            return
        start, serving = opened
        timeline.segments.append(Segment(row_of(member), tp, start, ts, serving))
        if serving:
            servers = holders.setdefault(tp, set())
            servers.discard(member)
            if not servers:
                idle_since[tp] = ts

    def add_partitions(topics: dict[str, int], ts: int) -> None:
        for topic in sorted(topics):
            for p in range(topics[topic]):
                tp = TopicPartition(topic, p)
                if tp not in holders:
                    holders[tp] = set()
                    idle_since[tp] = ts
                    timeline.partitions.append(tp)

    for event in events:
        ts = event.ts_ms
        last = max(last, ts)
        if isinstance(event, SimulationStarted):
            timeline.title = " - ".join(
                (event.scenario, event.rebalance_protocol, event.assignor, f"seed {event.seed}")
            )
            add_partitions(dict(event.topics), ts)
        elif isinstance(event, MemberJoined):
            if event.client_id:
                client_of[event.member_id] = event.client_id
        elif isinstance(event, PartitionsAssigned):
            rows.setdefault(row_of(event.member_id))
            for tp in event.partitions:
                if (event.member_id, tp) not in open_:
                    open_[(event.member_id, tp)] = (ts, False)
        elif isinstance(event, PartitionsRestored):
            for tp in event.partitions:
                key = (event.member_id, tp)
                opened = open_.get(key)
                if opened is None or opened[1]:
                    continue
                if ts > opened[0]:
                    timeline.segments.append(
                        Segment(row_of(event.member_id), tp, opened[0], ts, False)
                    )
                open_[key] = (ts, True)
                servers = holders.setdefault(tp, set())
                if not servers and tp in idle_since:
                    start = idle_since.pop(tp)
                    if ts > start:
                        timeline.idle.append(Segment("unowned", tp, start, ts, False))
                servers.add(event.member_id)
        elif isinstance(event, PartitionsRevoked | PartitionsLost):
            for tp in event.partitions:
                close(event.member_id, tp, ts)
        elif isinstance(event, ConsumerStopped):
            for member, tp in sorted(k for k in open_ if k[0] == event.member_id):
                close(member, tp, ts)
        elif isinstance(event, ScenarioStep):
            label = f"{event.action} {event.client_id}".strip()
            timeline.steps.append((ts, label))
            if event.topics:
                add_partitions(dict(event.topics), ts)
        elif isinstance(event, SimulationEnded):
            last = ts
    for member, tp in sorted(open_):
        close(member, tp, last)
    for tp, start in sorted(idle_since.items()):
        if last > start:
            timeline.idle.append(Segment("unowned", tp, start, last, False))
    timeline.rows = sorted(rows, key=natural_order)
    timeline.end_ms = last
    return timeline


def natural_order(name: str) -> tuple[tuple[int, str | int], ...]:
    """A sort key that puts ``c2`` before ``c10`` and ``c99`` before ``c100``: runs of digits
    compare as numbers, the rest as text, so the rows come in natural order."""
    return tuple(
        (1, int(part)) if part.isdigit() else (0, part) for part in re.split(r"(\d+)", name) if part
    )


# -- drawing --------------------------------------------------------------------------------

_WIDTH = 1100
_LEFT = 90
_ROW = 36
_TOP = 40


def _colour(index: int, total: int) -> str:
    hue = (index * 360.0 / max(total, 1)) % 360
    return f"hsl({hue:.0f},65%,45%)"


def _x(ts: int, end: int) -> float:
    return _LEFT + (_WIDTH - _LEFT - 20) * (ts / end if end else 0.0)


def _svg(timeline: Timeline) -> str:
    rows = [*timeline.rows, "unowned"]
    end = max(timeline.end_ms, 1)
    height = _TOP + _ROW * len(rows) + 40
    lanes = len(timeline.partitions) <= MAX_LANES
    index = {tp: i for i, tp in enumerate(timeline.partitions)}
    lane_h = (_ROW - 8) / max(len(timeline.partitions), 1)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="{_LEFT}" y="20" font-size="14">{html.escape(timeline.title)}</text>',
    ]
    row_y = {row: _TOP + i * _ROW for i, row in enumerate(rows)}
    for row, y in row_y.items():
        out.append(f'<text x="4" y="{y + _ROW / 2 + 4:.1f}">{html.escape(row)}</text>')
        out.append(
            f'<rect x="{_LEFT}" y="{y + 4}" width="{_WIDTH - _LEFT - 20}" height="{_ROW - 8}" '
            'fill="#f4f4f4"/>'
        )
    if lanes:
        for seg in [*timeline.segments, *timeline.idle]:
            lane_y = row_y[seg.row] + 4 + index.get(seg.partition, 0) * lane_h
            x0, x1 = _x(seg.start_ms, end), _x(seg.end_ms, end)
            if seg.row == "unowned":
                colour = "#d62728"
            elif seg.serving:
                colour = _colour(index.get(seg.partition, 0), len(index))
            else:
                colour = "#bbbbbb"
            out.append(
                f'<rect x="{x0:.2f}" y="{lane_y:.2f}" width="{max(x1 - x0, 0.5):.2f}" '
                f'height="{max(lane_h, 0.5):.2f}" fill="{colour}">'
                f"<title>{html.escape(str(seg.partition))} {seg.start_ms}-{seg.end_ms} ms"
                "</title></rect>"
            )
    else:
        for row, points in _counts(timeline).items():
            y = row_y[row]
            top: float = max((c for _, c in points), default=1) or 1
            path = " ".join(
                f"{_x(t, end):.1f},{y + _ROW - 4 - (_ROW - 8) * c / top:.1f}" for t, c in points
            )
            out.append(f'<polyline points="{path}" fill="none" stroke="#1f77b4"/>')
    for ts, label in timeline.steps:
        x = _x(ts, end)
        out.append(
            f'<line x1="{x:.1f}" y1="{_TOP}" x2="{x:.1f}" y2="{height - 30}" '
            'stroke="#333" stroke-dasharray="4,3"/>'
        )
        out.append(f'<text x="{x + 2:.1f}" y="{height - 18}">{html.escape(label)}</text>')
    # A time axis: a tick and a label at every round number of seconds (at most ~10).
    axis_y = height - 30
    out.append(
        f'<line x1="{_LEFT}" y1="{axis_y}" x2="{_x(end, end):.1f}" y2="{axis_y}" stroke="#333"/>'
    )
    for tick in axis_ticks_ms(end):
        x = _x(tick, end)
        out.append(
            f'<line x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 4}" stroke="#333"/>'
            f'<text x="{x:.1f}" y="{height - 4}" text-anchor="middle">{tick / 1000:g} s</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def axis_ticks_ms(end_ms: int) -> list[int]:
    """Round tick times (1, 2 or 5 times a power of ten, in ms) from 0 to ``end_ms``:
    at most about ten of them."""
    if end_ms <= 0:
        return [0]
    step = 1
    while end_ms / step > 10:
        step = _next_step(step)
    return list(range(0, end_ms + 1, step))


def _next_step(step: int) -> int:
    """The next of 1, 2, 5, 10, 20, 50, ... after ``step``."""
    digits = str(step)
    lead, zeros = int(digits[0]), len(digits) - 1
    return {1: 2, 2: 5, 5: 10}[lead] * int("1" + "0" * zeros)


def _counts(timeline: Timeline) -> dict[str, list[tuple[int, int]]]:
    """Per row, the number of partitions served (or idle) as a step function."""
    deltas: dict[str, dict[int, int]] = {}
    for seg in [*timeline.segments, *timeline.idle]:
        if seg.row != "unowned" and not seg.serving:
            continue
        row = deltas.setdefault(seg.row, {})
        row[seg.start_ms] = row.get(seg.start_ms, 0) + 1
        row[seg.end_ms] = row.get(seg.end_ms, 0) - 1
    out: dict[str, list[tuple[int, int]]] = {}
    for name, changes in deltas.items():
        count = 0
        points: list[tuple[int, int]] = []
        for ts in sorted(changes):
            points.append((ts, count))
            count += changes[ts]
            points.append((ts, count))
        out[name] = points
    return out


def _caption(lanes: bool) -> str:
    """The key under the picture (lanes, or counts for large groups)."""
    if lanes:
        return (
            "Rows: consumers. One lane per partition: coloured while the consumer serves it, "
            "grey while it restores state. Red in 'unowned': partitions no one serves. "
            "Dashed: scenario steps."
        )
    return (
        "Rows: consumers. Line: how many partitions the consumer serves (of its row's "
        "maximum); 'unowned': how many partitions no one serves. Dashed: scenario steps."
    )


def to_svg(timeline: Timeline) -> str:
    """The picture alone, as an inline SVG element (``compare --html`` puts three side by side)."""
    return _svg(timeline)


def to_html(timeline: Timeline) -> str:
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{html.escape(timeline.title)}</title></head><body>\n"
        f"{_svg(timeline)}\n"
        f"<p style='font-family:sans-serif;font-size:12px'>"
        f"{html.escape(_caption(len(timeline.partitions) <= MAX_LANES))}</p></body></html>\n"
    )


def count_y(row: int, count: int, top: int) -> float:
    """The y of ``count`` (of at most ``top``) in row ``row`` of the PNG, whose y axis is
    inverted (row 0 on top): a row spans ``row - 0.4`` (its top on screen) to
    ``row + 0.4`` (its bottom), so 0 partitions sit on the bottom edge and ``top`` on the
    top edge, and more partitions draw higher, as in the HTML."""
    return row + 0.4 - 0.8 * count / max(top, 1)


def _png(timeline: Timeline, path: Path) -> None:
    import matplotlib.pyplot as plt

    figure = png_figure(timeline)
    # Fixed metadata: the same run draws the same bytes.
    figure.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(figure)


def png_figure(timeline: Timeline) -> Any:
    """The PNG's matplotlib figure (``write_timeline`` saves and closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [*timeline.rows, "unowned"]
    index = {tp: i for i, tp in enumerate(timeline.partitions)}
    label_steps = len(timeline.steps) <= MAX_STEP_LABELS
    extra = 0.8 if label_steps and timeline.steps else 0.0  # room for the step labels
    figure, axes = plt.subplots(figsize=(12, 1.4 + 0.45 * len(rows) + extra))
    lanes = len(index) <= MAX_LANES
    lane_h = 0.8 / max(len(index), 1)
    colours = plt.get_cmap("hsv")
    for seg in [*timeline.segments, *timeline.idle]:
        base = rows.index(seg.row) - 0.4
        if lanes:
            y = base + index.get(seg.partition, 0) * lane_h
            if seg.row == "unowned":
                colour: object = "#d62728"
            elif seg.serving:
                colour = colours(index.get(seg.partition, 0) / max(len(index), 1))
            else:
                colour = "#bbbbbb"
            axes.broken_barh(
                [(seg.start_ms / 1000, (seg.end_ms - seg.start_ms) / 1000)],
                (y, lane_h),
                facecolors=colour,
            )
    if not lanes:
        for row, points in _counts(timeline).items():
            top = max((c for _, c in points), default=1) or 1
            axes.plot(
                [t / 1000 for t, _ in points],
                [count_y(rows.index(row), c, top) for _, c in points],
                lw=0.8,
                label=row,
            )
    for ts, label in timeline.steps:
        axes.axvline(ts / 1000, color="#333", ls="--", lw=0.6)
        if label_steps:
            axes.annotate(
                label,
                (ts / 1000, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(2, 2),
                textcoords="offset points",
                rotation=90,
                fontsize=7,
                va="bottom",
            )
    axes.set_yticks(range(len(rows)), rows)
    axes.set_ylim(-0.6, len(rows) - 0.4)
    axes.invert_yaxis()
    axes.set_xlim(0, max(timeline.end_ms, 1) / 1000)
    axes.set_xlabel("virtual time (s)")
    axes.set_title(timeline.title, pad=60 if label_steps and timeline.steps else 6)
    figure.text(0.01, 0.005, _caption(lanes), fontsize=8, va="bottom")
    figure.tight_layout(rect=(0, 0.04, 1, 1))
    return figure


def write_timeline(events: Sequence[Event], path: str | Path) -> None:
    """Draw ``events`` to ``path``: ``.html`` (inline SVG) or ``.png`` (matplotlib)."""
    target = Path(path)
    timeline = build_timeline(events)
    if target.suffix == ".html":
        target.write_text(to_html(timeline), encoding="utf-8")
    elif target.suffix == ".png":
        _png(timeline, target)
    else:
        raise ValueError(f"a timeline is .html or .png, not {target.suffix or 'no extension'}")
