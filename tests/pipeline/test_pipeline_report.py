"""The HTML report: every section, self-contained, and rendered by a real browser when present."""

from __future__ import annotations

import shutil
import subprocess
from html import escape
from pathlib import Path
from typing import Any

import pytest

from regroup.pipeline.report import (
    EXPLAIN,
    SECTIONS,
    UPPER_BOUND,
    crossover_sentence,
    idle_means,
    idle_ranges,
    lowest_sentence,
    render_report,
    representative_runs,
    restore_variant,
    scenario_title,
    static_variant,
    timeline_title,
    verdict_sentence,
)

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
    "e1": [
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
    # Per scenario and protocol, among the smallest group size: eager's size-2 runs are
    # 4.0 and 6.0, both 1.0 from their median; the first by run id is taken.
    assert [r["run_id"] for r in representative_runs(RUNS)] == ["k1", "e1"]
    other = {**_run("s1", "eager", 8, 3.0), "scenario": "scale-out"}
    more = [*RUNS, _run("e4", "eager", 2, 5.5), other]
    assert [r["run_id"] for r in representative_runs(more)] == ["k1", "e4", "s1"]


def test_pipeline_report_has_every_section_and_fetches_nothing() -> None:
    html = page()
    for section in SECTIONS:
        assert f'<h2 id="{section}">' in html
    # headline chart, size chart, seeds chart, two timelines (no restore study here)
    assert html.count("<svg") == 1 + 1 + 1 + 2
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
    assert dom.count("<svg") == 5
    shot = tmp_path / "report.png"
    subprocess.run(
        [*base, f"--screenshot={shot}", report.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 10_000


def test_pipeline_idle_means_table_marks_the_lowest_per_size() -> None:
    runs = [*RUNS, _run("k2", "consumer", 4, 9.0)]
    means = idle_means(runs, "crash")
    assert means == {
        "eager / range": {2: 5.0, 4: 5.0},
        "KIP-848 (consumer) / range": {2: 1.0, 4: 9.0},
    }
    html = page()
    # Size 2: consumer's 1.0 is the lowest; size 4 has only eager's 5.0 (nothing to compare).
    assert '<td class="n best">1.0</td>' in html
    assert '<td class="n">5.0</td>' in html
    for section in SECTIONS:
        assert EXPLAIN[section] in html
    # Size 4 has eager alone: only size 2 is compared.
    assert "Lowest mean idle partition-seconds: KIP-848 (consumer) / range at every size." in html


def test_pipeline_lowest_sentence_says_who_wins_where() -> None:
    means = {"a": {4: 1.0, 8: 5.0, 16: 2.0}, "b": {4: 2.0, 8: 3.0, 16: 2.0}, "c": {4: 9.0}}
    assert lowest_sentence(means) == (
        "Lowest mean idle partition-seconds: a at 4, 16 members; b at 8, 16 members."
    )
    assert lowest_sentence({"a": {4: 1.0}, "b": {4: 2.0}}).endswith(": a at every size.")


def test_pipeline_a_difference_inside_the_seeds_range_is_a_tie_not_a_win() -> None:
    """379.0 vs 379.4 was bolded; ranges that overlap make a tie."""
    runs = [
        _run("a1", "eager", 4, 370.0),
        _run("a2", "eager", 4, 388.0),
        _run("b1", "cooperative", 4, 375.0),
        _run("b2", "cooperative", 4, 383.8),
    ]
    means = idle_means(runs, "crash")
    ranges = idle_ranges(runs, "crash")
    assert lowest_sentence(means, ranges) == (
        "Lowest mean idle partition-seconds: a tie (the seeds' ranges overlap) at 4 members."
    )
    html = render_report(summary=[], runs=runs, ownership={}, violations=[])
    assert "n best" not in html
    assert "crash, 4 members: a tie between eager and cooperative" in html


def test_pipeline_verdict_names_the_winner_and_the_ratios() -> None:
    values = {
        "eager": [600.0, 640.0],
        "cooperative": [150.0, 160.0],
        "KIP-848 (consumer)": [190.0, 200.0],
    }
    assert verdict_sentence("rolling-bounce, 16 members", values) == (
        "rolling-bounce, 16 members: cooperative idles least, 155 partition-s (seeds 150-160); "
        "1.3\N{MULTIPLICATION SIGN} less than KIP-848 (consumer) (195), "
        "4.0\N{MULTIPLICATION SIGN} less than eager (620)."
    )
    tie = verdict_sentence("x", {"eager": [10.0, 20.0], "cooperative": [15.0, 30.0], "c": [90.0]})
    assert tie.startswith("x: a tie between eager and cooperative (their seeds' ranges overlap")
    assert tie.endswith("both idle 6.0\N{MULTIPLICATION SIGN} less than c (90).")
    # 224.0 vs 224.1 with every seed equal: no overlap, but no win either (TIE_WITHIN)
    flat = verdict_sentence("s", {"a": [224.0, 224.0], "b": [224.1, 224.1], "c": [224.1]})
    assert flat.startswith("s: a tie between a, b and c (")


def test_pipeline_crossover_sentence_reads_the_flip_off_the_line() -> None:
    eager, coop, kip = "eager", "cooperative", "KIP-848 (consumer)"
    # eager: 50 + 32 * r ; cooperative: 150 + 4 * r ; KIP-848: 200 + 4 * r  (r in s)
    restores = [0, 100, 1000, 5000, 20000]
    curves = {
        eager: {r: 50 + 32 * r / 1000 for r in restores},
        coop: {r: 150 + 4 * r / 1000 for r in restores},
        kip: {r: 200 + 4 * r / 1000 for r in restores},
    }
    # eager - cooperative = -100 + 28 r: zero at r = 3.57 s, between 1 s and 5 s
    assert crossover_sentence("crash", curves) == (
        "crash: below about 3.6 s of restore per partition, eager's single round costs less "
        "than the two-step protocols (KIP-848 (consumer) and cooperative); above it they cost "
        "less (eager wins at 1 s, loses at 5 s)."
    )
    cheap = {eager: {0: 1.0, 100: 2.0}, coop: {0: 5.0, 100: 6.0}}
    assert "costs less than cooperative at every restore time tried" in crossover_sentence(
        "x", cheap
    )
    dear = {eager: {0: 9.0, 100: 20.0}, coop: {0: 5.0, 100: 6.0}}
    assert "even with no restore at all" in crossover_sentence("x", dear)


def test_pipeline_report_leads_with_the_verdict_and_has_the_studies() -> None:
    runs = []
    for scenario in ("rolling-bounce", static_variant("rolling-bounce")):
        for n, (protocol, idle) in enumerate([("eager", 600.0), ("consumer", 190.0)]):
            for seed in range(2):
                run = _run(f"{scenario}{n}{seed}", protocol, 8, idle + seed)
                runs.append({**run, "scenario": scenario})
    for restore, eager_idle in [(0, 50.0), (100, 60.0), (1000, 90.0), (5000, 500.0)]:
        for protocol, idle in [("eager", eager_idle), ("consumer", 150.0 + restore / 100)]:
            run = _run(f"r{restore}{protocol}", protocol, 8, idle)
            runs.append({**run, "scenario": restore_variant("rolling-bounce", restore)})
    summary = [{"scenario": r["scenario"], "protocol": r["protocol"], "runs": 1} for r in runs]
    html = render_report(
        summary=summary, runs=runs, ownership={}, violations=[], intro="<p>INTRO</p>"
    )
    # the verdict before any prose: the title, the headline, then the intro
    assert html.index('id="headline"') < html.index("INTRO") < html.index('id="summary"')
    assert "rolling-bounce, 8 members: KIP-848 (consumer) idles least" in html
    assert scenario_title(static_variant("rolling-bounce")) in html
    assert "rolling-bounce, static members (KIP-345), 8 members: KIP-848 (consumer)" in html
    assert "below about" in html and "of restore per partition, eager" in html
    assert escape(UPPER_BOUND) in html
    # the restore study stays in its section: not in the summary table, nor the headline
    assert "rolling-bounce@restore-100ms</td>" not in html
    assert "restore, 8 members: " not in html


def test_pipeline_timeline_titles_are_for_people_not_run_ids() -> None:
    run = _run("rolling-bounce@static.consumer.uniform.m4.p32.c0.s1", "consumer", 4, 12.4)
    run.update(scenario=static_variant("rolling-bounce"), seed=1, assignor="uniform")
    assert timeline_title(run) == (
        "rolling-bounce, static members (KIP-345): KIP-848 (consumer) (uniform), 4 members, "
        "seed 1: 12 idle partition-s"
    )
