"""The report's first screen: what to use for each scenario and why, and no winner from a
smoke run (``regroup demo --quick``: one seed per protocol)."""

from __future__ import annotations

import re
from typing import Any

from regroup.pipeline.report import recommend, render_report, verdict_sentence


def _run(scenario: str, protocol: str, seed: int, idle: float, **metrics: Any) -> dict[str, Any]:
    return {
        "run_id": f"{scenario}.{protocol}.s{seed}",
        "scenario": scenario,
        "protocol": protocol,
        "assignor": {"eager": "range", "cooperative": "cooperative-sticky"}.get(
            protocol, "uniform"
        ),
        "members": 8,
        "seed": seed,
        "idle_partition_seconds": idle,
        "window_end_ms": 10000,
        **metrics,
    }


def _runs(seeds: int) -> list[dict[str, Any]]:
    """scale-out: cooperative clearly best (pauses fewer partitions); crash: a tie."""
    runs = []
    for seed in range(seeds):
        runs += [
            _run("scale-out", "eager", seed, 600.0 + seed, paused_partitions=32, rebalances=2),
            _run("scale-out", "cooperative", seed, 150.0 + seed, paused_partitions=4,
                 rebalances=4),
            _run("scale-out", "consumer", seed, 200.0 + seed, paused_partitions=8, rebalances=1),
            _run("crash", "eager", seed, 300.0 + 10 * seed, paused_partitions=32),
            _run("crash", "cooperative", seed, 305.0 + 10 * seed, paused_partitions=8),
        ]  # fmt: skip
    return runs


def _first_screen(page: str) -> str:
    """From the title to the first chart: what a reader sees before scrolling."""
    return page[: page.index("<svg")]


def test_first_screen_says_what_to_use_for_each_scenario_and_why() -> None:
    page = render_report(summary=[], runs=_runs(3), ownership={}, violations=[], intro="<p>I</p>")
    first = _first_screen(page)
    assert first.index('id="headline"') < first.index('class="recommend"')
    assert "INTRO" not in first and "<p>I</p>" not in first  # the intro comes after it
    rows = re.findall(r"<tr><td>(.*?)</td><td class='use'>(.*?)</td><td>(.*?)</td></tr>", first)
    assert [(title, use) for title, use, _ in rows] == [
        ("crash, 8 members", "no winner"),
        ("scale-out, 8 members", "cooperative"),
    ]
    # why: the measured difference, and the cost by which the recommendation is best
    assert rows[1][2] == (
        "cooperative idles 151 partition-s against 201 for KIP-848 (consumer): "
        "it pauses fewer partitions (4 against 8)"
    )
    assert "seeds do not separate them" in rows[0][2]
    assert "A smoke run:" not in first


def test_recommendation_names_a_cost_only_where_the_winner_is_best_by_it() -> None:
    series = {
        "eager": [_run("s", "eager", s, 600.0 + s, paused_partitions=32, rebalances=1)
                  for s in range(2)],
        "cooperative": [_run("s", "cooperative", s, 150.0 + s, paused_partitions=4,
                             rebalances=4) for s in range(2)],
    }  # fmt: skip
    chosen = recommend("s, 8 members", series)
    assert chosen.protocol == "cooperative"
    assert chosen.reason == (
        "cooperative idles 150 partition-s against 600 for eager: "
        "it pauses fewer partitions (4 against 32)"
    )
    # eager needs fewer rebalances: never named as cooperative's reason
    assert "rebalances" not in chosen.reason


def test_a_smoke_run_says_so_and_declares_no_winner() -> None:
    """``demo --quick`` runs one seed per protocol: its report names no winner anywhere."""
    page = render_report(summary=[], runs=_runs(1), ownership={}, violations=[])
    first = _first_screen(page)
    assert "A smoke run:" in first and "--quick" in first
    uses = re.findall(r"<td class='use'>(.*?)</td>", first)
    assert uses == ["no winner", "no winner"]
    assert "idles least" not in page and "a tie between" not in page
    assert page.count("a smoke run: no winner declared") == 2
    assert verdict_sentence("x", {"eager": [600.0], "cooperative": [150.0]}) == (
        "x: one seed per protocol, a smoke run: no winner declared "
        "(idle partition-s: cooperative 150, eager 600)."
    )
