"""The HTML report: every section, self-contained, and rendered by a real browser when present."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from regroup.pipeline.report import SECTIONS, render_report, representative_runs

# One worker runs the Spark tests and the real-client interop tests, one after another.
pytestmark = pytest.mark.xdist_group("heavy")


def _run(run_id: str, protocol: str, members: int, idle: float) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "scenario": "crash",
        "protocol": protocol,
        "assignor": "range",
        "members": members,
        "idle_partition_seconds": idle,
        "window_end_ms": 10000,
    }


RUNS = [
    _run("e1", "eager", 2, 4.0),
    _run("e2", "eager", 2, 6.0),
    _run("e3", "eager", 4, 5.0),
    _run("k1", "consumer", 2, 1.0),
]
OWNERSHIP = {
    "e3": [
        {
            "partition": "t-0",
            "member_id": "a",
            "assigned_ms": 0,
            "serving_ms": 100,
            "released_ms": 3000,
            "released_by": "stopped",
        },
        {
            "partition": "t-0",
            "member_id": "b",
            "assigned_ms": 8000,
            "serving_ms": 8000,
            "released_ms": None,
            "released_by": None,
        },
        {
            "partition": "t-1",
            "member_id": "b",
            "assigned_ms": 0,
            "serving_ms": None,
            "released_ms": None,
            "released_by": None,
        },
    ],
    "k1": [],
}


def page() -> str:
    summary = [{"scenario": "crash", "protocol": "eager", "runs": 3}]
    violations = [
        {
            "run_id": "e1",
            "ts_ms": 5,
            "invariant": "single_owner",
            "detail": "<t-0> twice",
            "member_id": "a",
            "partition": "t-0",
        }
    ]
    return render_report(summary=summary, runs=RUNS, ownership=OWNERSHIP, violations=violations)


def test_pipeline_representative_run_is_nearest_the_median() -> None:
    assert [r["run_id"] for r in representative_runs(RUNS)] == ["k1", "e3"]


def test_pipeline_report_has_every_section_and_fetches_nothing() -> None:
    html = page()
    for section in SECTIONS:
        assert f'<h2 id="{section}">' in html
    assert html.count("<svg") == 1 + 1 + 2  # size chart, seeds chart, two timelines
    assert "&lt;t-0&gt; twice" in html  # text is escaped
    assert "src=" not in html and "<script" not in html and "<link" not in html


@pytest.mark.skipif(shutil.which("chromium") is None, reason="headless Chromium not installed")
def test_pipeline_report_renders_in_chromium(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    report.write_text(page(), encoding="utf-8")
    base = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,2400"]
    dom = subprocess.run(
        [*base, "--dump-dom", report.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    for section in SECTIONS:
        assert f'id="{section}"' in dom
    assert dom.count("<svg") == 4
    shot = tmp_path / "report.png"
    subprocess.run(
        [*base, f"--screenshot={shot}", report.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 10_000
