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
* dashed vertical lines at the scenario steps, labelled above the rows;
* a time axis with a tick at every round number of seconds.

Every label's place is computed first (``layout``): row names in a margin as wide as
the longest (cut with an ellipsis past ``_MAX_LEFT``), step labels on up to
``MAX_TIERS`` lines above the rows so that none touches another (a label with no
room is left to its line's tooltip), axis labels centred on their ticks and thinned
where they would touch. No two label boxes overlap and all fit the width.

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
    "COMPARE_WIDTH",
    "MAX_LANES",
    "Box",
    "Layout",
    "Segment",
    "Timeline",
    "build_timeline",
    "layout",
    "text_width",
    "to_html",
    "to_svg",
    "write_timeline",
]

MAX_LANES = 256
#: ``compare --html``'s timelines: one above the other, each this wide, so that the page
#: fits a 1,400 px window at full size (16 px margins) and no text is scaled down.
COMPARE_WIDTH = 1360
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

#: The picture's default width (px); ``compare --html`` draws at ``COMPARE_WIDTH``.
_WIDTH = 1100
_ROW = 36
_FONT_PX = 11
#: The widest a text is per character at ``_FONT_PX`` (a sans-serif's widest letters and
#: digits run to about 0.6 em; a box estimated from it never undershoots the drawn text).
CHAR_PX = 0.65 * _FONT_PX
#: A step label's line height, and the most lines of step labels above the rows: a label
#: that fits on none of them is left out (its dashed line keeps it as a tooltip).
_TIER_PX = 14
MAX_TIERS = 4
#: The room for the row names: as wide as the longest, within these bounds.
_MIN_LEFT, _MAX_LEFT = 60, 200
_RIGHT = 20
_GAP = 4


@dataclass(frozen=True, slots=True)
class Box:
    """Where one label is drawn: its text's estimated extent (``text_width``), in px."""

    kind: str  # "title", "row", "step" or "tick"
    text: str
    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box) -> bool:
        return (
            self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1
        )


@dataclass(slots=True)
class Layout:
    """Every label's box and the plot's geometry, computed before anything is drawn, so
    that no two labels overlap and everything fits in ``width`` (tested as such)."""

    width: int
    height: int
    left: float
    top: float
    boxes: list[Box] = field(default_factory=list)
    #: Step labels that fit on no line (drawn only as their line's tooltip).
    dropped_steps: int = 0

    def x(self, ts: int, end: int) -> float:
        return self.left + (self.width - self.left - _RIGHT) * (ts / end if end else 0.0)


def text_width(text: str) -> float:
    return len(text) * CHAR_PX


def _fit(text: str, room: float) -> str:
    """``text``, cut with an ellipsis to fit ``room`` px."""
    if text_width(text) <= room:
        return text
    keep = max(int(room / CHAR_PX) - 1, 1)
    return text[:keep] + "\N{HORIZONTAL ELLIPSIS}"


def layout(timeline: Timeline, width: int = _WIDTH) -> Layout:
    """The boxes of the title, row names, step labels and axis labels.

    Row names get a left margin as wide as the longest (``_MIN_LEFT`` to ``_MAX_LEFT``;
    longer ones are cut with an ellipsis). Step labels go on lines above the rows, each
    on the first line where it clears the previous label by ``_GAP`` px (at most
    ``MAX_TIERS`` lines; a label ending past the right edge is moved left to end there).
    Axis labels are centred on their ticks, one left out where it would touch the one
    before."""
    rows = [*timeline.rows, "unowned"]
    longest = max(text_width(r) for r in rows)
    left = min(max(longest + 10, _MIN_LEFT), _MAX_LEFT)
    end = max(timeline.end_ms, 1)
    out = Layout(width=width, height=0, left=left, top=0.0)
    title = _fit(timeline.title, width - left - _RIGHT)
    out.boxes.append(Box("title", title, left, 6, left + text_width(title), 22))
    # Step labels: greedy lines above the rows.
    tiers: list[float] = []  # the right end of the last label on each line
    placed: list[tuple[int, float, str]] = []
    for ts, label in sorted(timeline.steps):
        w = text_width(label)
        x0 = out.x(ts, end) + 2
        x0 = min(x0, width - 2 - w)
        for tier, right in enumerate(tiers):
            if x0 >= right + _GAP:
                tiers[tier] = x0 + w
                placed.append((tier, x0, label))
                break
        else:
            if len(tiers) < MAX_TIERS:
                tiers.append(x0 + w)
                placed.append((len(tiers) - 1, x0, label))
            else:
                out.dropped_steps += 1
    first_tier = 28.0
    for tier, x0, label in placed:
        y0 = first_tier + tier * _TIER_PX
        out.boxes.append(Box("step", label, x0, y0, x0 + text_width(label), y0 + _TIER_PX - 2))
    out.top = first_tier + len(tiers) * _TIER_PX + 6
    for i, row in enumerate(rows):
        name = _fit(row, left - 8)
        y = out.top + i * _ROW + _ROW / 2 - 7
        out.boxes.append(Box("row", name, 4, y, 4 + text_width(name), y + 14))
    axis_y = out.top + _ROW * len(rows) + 4
    out.height = int(axis_y + 26)
    last_right = -1.0
    for tick in axis_ticks_ms(end):
        text = f"{tick / 1000:g} s"
        centre, w = out.x(tick, end), text_width(text)
        x0 = min(max(centre - w / 2, 1), width - 1 - w)
        if x0 < last_right + _GAP:
            continue
        out.boxes.append(Box("tick", text, x0, axis_y + 8, x0 + w, axis_y + 22))
        last_right = x0 + w
    return out


def _colour(index: int, total: int) -> str:
    hue = (index * 360.0 / max(total, 1)) % 360
    return f"hsl({hue:.0f},65%,45%)"


def _svg(timeline: Timeline, width: int = _WIDTH) -> str:
    rows = [*timeline.rows, "unowned"]
    end = max(timeline.end_ms, 1)
    plan = layout(timeline, width)
    height, left, top = plan.height, plan.left, plan.top
    plot_w = width - left - _RIGHT
    lanes = len(timeline.partitions) <= MAX_LANES
    index = {tp: i for i, tp in enumerate(timeline.partitions)}
    lane_h = (_ROW - 8) / max(len(timeline.partitions), 1)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="{_FONT_PX}">',
    ]
    for box in plan.boxes:
        if box.kind == "title":
            out.append(
                f'<text x="{box.x0:.1f}" y="{box.y1 - 4:.1f}" font-size="{_FONT_PX}" '
                f'font-weight="bold">{html.escape(box.text)}<title>'
                f"{html.escape(timeline.title)}</title></text>"
            )
        elif box.kind in ("row", "step"):
            out.append(
                f'<text x="{box.x0:.1f}" y="{box.y1 - 3:.1f}">{html.escape(box.text)}</text>'
            )
        else:
            out.append(
                f'<text x="{(box.x0 + box.x1) / 2:.1f}" y="{box.y1 - 3:.1f}" '
                f'text-anchor="middle">{html.escape(box.text)}</text>'
            )
    row_y = {row: top + i * _ROW for i, row in enumerate(rows)}
    for y in row_y.values():
        out.append(
            f'<rect x="{left:.1f}" y="{y + 4:.1f}" width="{plot_w:.1f}" height="{_ROW - 8}" '
            'fill="#f4f4f4"/>'
        )
    if lanes:
        for seg in [*timeline.segments, *timeline.idle]:
            lane_y = row_y[seg.row] + 4 + index.get(seg.partition, 0) * lane_h
            x0, x1 = plan.x(seg.start_ms, end), plan.x(seg.end_ms, end)
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
            most: float = max((c for _, c in points), default=1) or 1
            path = " ".join(
                f"{plan.x(t, end):.1f},{y + _ROW - 4 - (_ROW - 8) * c / most:.1f}"
                for t, c in points
            )
            out.append(f'<polyline points="{path}" fill="none" stroke="#1f77b4"/>')
    axis_y = top + _ROW * len(rows) + 4
    for ts, label in timeline.steps:
        x = plan.x(ts, end)
        out.append(
            f'<line x1="{x:.1f}" y1="{top - 4:.1f}" x2="{x:.1f}" y2="{axis_y:.1f}" '
            f'stroke="#333" stroke-dasharray="4,3"><title>{html.escape(label)} at '
            f"{ts / 1000:g} s</title></line>"
        )
    out.append(
        f'<line x1="{left:.1f}" y1="{axis_y:.1f}" x2="{plan.x(end, end):.1f}" '
        f'y2="{axis_y:.1f}" stroke="#333"/>'
    )
    for tick in axis_ticks_ms(end):
        x = plan.x(tick, end)
        out.append(
            f'<line x1="{x:.1f}" y1="{axis_y:.1f}" x2="{x:.1f}" y2="{axis_y + 4:.1f}" '
            'stroke="#333"/>'
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


def to_svg(timeline: Timeline, width: int = _WIDTH) -> str:
    """The picture alone, as an inline SVG element ``width`` px wide (``compare --html``
    stacks three at ``COMPARE_WIDTH``)."""
    return _svg(timeline, width)


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
