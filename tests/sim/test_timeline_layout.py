"""The timelines are readable: at 1,400 px ``compare --html`` shows them at full size, and
no label overlaps another (row names, step labels, axis labels, the title).

The boxes are computed from the drawn SVG itself (each ``<text>``'s position, anchor and
length at ``timeline.CHAR_PX`` per character, a generous estimate of a sans-serif's
width), and from ``timeline.layout`` for crowded synthetic timelines.
"""

from __future__ import annotations

import html
import re
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.cli.main import main
from regroup.model import TopicPartition
from regroup.sim.timeline import (
    COMPARE_WIDTH,
    MAX_TIERS,
    Timeline,
    layout,
    text_width,
    to_svg,
)

#: The window the page must fit: 1,400 px less the page's 16 px margins.
WINDOW = 1400 - 2 * 16

_SVG = re.compile(r'<svg [^>]*width="(\d+)" height="(\d+)"[^>]*>(.*?)</svg>', re.S)
_TEXT = re.compile(r"<text ([^>]*)>([^<]*)")


def _text_boxes(svg_body: str) -> list[tuple[float, float, float, float, str]]:
    """(x0, y0, x1, y1, text) of every ``<text>``: 11 px glyphs around the baseline."""
    boxes = []
    for attrs, raw in _TEXT.findall(svg_body):
        text = html.unescape(raw)
        x = float(re.search(r'\bx="([-\d.]+)"', attrs).group(1))  # type: ignore[union-attr]
        y = float(re.search(r'\by="([-\d.]+)"', attrs).group(1))  # type: ignore[union-attr]
        w = text_width(text)
        x0 = x - w / 2 if 'text-anchor="middle"' in attrs else x
        boxes.append((x0, y - 10, x0 + w, y + 2, text))
    return boxes


def _assert_readable(svg: str) -> None:
    match = _SVG.search(svg)
    assert match is not None
    width = int(match.group(1))
    boxes = _text_boxes(match.group(3))
    assert boxes
    for x0, _, x1, _, text in boxes:
        assert x0 >= 0 and x1 <= width, f"{text!r} leaves the picture ({x0:.0f}-{x1:.0f})"
    for a, b in combinations(boxes, 2):
        apart = a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
        assert apart, f"{a[4]!r} overlaps {b[4]!r}"


def test_compare_html_timelines_fit_1400px_unscaled_and_no_label_overlaps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rolling bounce of 12 members: 24 step labels, 10 s apart, on a 250 s axis."""
    page = tmp_path / "compare.html"
    argv = ["compare", "--scenario", "rolling-bounce", "--members", "12", "--partitions", "24"]
    assert main([*argv, "--seeds", "1", "--no-sensitivity", "--html", str(page)]) == 0
    capsys.readouterr()
    text = page.read_text()
    svgs = _SVG.findall(text)
    assert len(svgs) == 3
    assert "viewBox" not in text and "grid-template-columns" not in text  # not shrunk
    for width, _, _ in svgs:
        assert int(width) == COMPARE_WIDTH <= WINDOW
    for svg in re.findall(r"<svg .*?</svg>", text, re.S):
        _assert_readable(svg)
        assert svg.count('stroke-dasharray="4,3"') == 24  # every step keeps its line


def _crowded(names: list[str], steps: list[int], end_ms: int) -> Timeline:
    return Timeline(
        rows=names,
        partitions=[TopicPartition("t", 0)],
        steps=[(ts, f"restart {names[i % len(names)]}") for i, ts in enumerate(steps)],
        end_ms=end_ms,
        title="rolling-bounce - cooperative - cooperative-sticky - seed 0",
    )


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(st.text("abcxyz-0123456789", min_size=1, max_size=60), min_size=1,
                   max_size=8, unique=True),
    steps=st.lists(st.integers(0, 300_000), max_size=60),
    end_ms=st.integers(1, 300_000),
    width=st.sampled_from([600, 1100, COMPARE_WIDTH]),
)  # fmt: skip
def test_layout_boxes_never_overlap_and_fit_the_width(
    names: list[str], steps: list[int], end_ms: int, width: int
) -> None:
    timeline = _crowded(names, [min(ts, end_ms) for ts in steps], end_ms)
    plan = layout(timeline, width)
    for box in plan.boxes:
        assert box.x0 >= 0 and box.x1 <= width, box
        if box.kind == "row":
            assert box.x1 <= plan.left, box  # a row name stays left of the plot
    for a, b in combinations(plan.boxes, 2):
        assert not a.overlaps(b), (a, b)
    shown = sum(1 for box in plan.boxes if box.kind == "step")
    assert shown + plan.dropped_steps == len(steps)
    _assert_readable(to_svg(timeline, width))


def test_steps_close_together_go_on_separate_lines() -> None:
    timeline = _crowded(["c1", "c2"], [10_000, 10_500, 11_000, 11_500, 12_000], 100_000)
    plan = layout(timeline, COMPARE_WIDTH)
    lines = sorted({box.y0 for box in plan.boxes if box.kind == "step"})
    assert len(lines) == MAX_TIERS and plan.dropped_steps == 1
