"""``regroup demo`` end to end, in its ``--quick`` form: report, Parquet tables, grid, summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regroup.cli.demo import DEMO_DATA, DEMO_PROTOCOLS, DEMO_SCENARIOS, demo_grid
from regroup.cli.main import main
from regroup.pipeline.report import EXPLAIN, SECTIONS
from regroup.pipeline.sweep import expand, parse_grid

# One worker runs the Spark tests and the real-client interop tests, one after another.
pytestmark = pytest.mark.xdist_group("heavy")

TABLES = ("runs", "events", "metrics", "ownership", "idle", "violations", "labels")


def test_demo_grid_is_the_documented_one() -> None:
    grid = parse_grid(demo_grid())
    specs, skipped = expand(grid)
    assert skipped == []
    # 3 scenarios x 3 protocols x sizes 4, 8, 16 x 3 seeds, all on 32 partitions.
    assert len(specs) == 81
    assert {s.scenario for s in specs} == set(DEMO_SCENARIOS)
    assert {s.members for s in specs} == {4, 8, 16}
    assert {s.partitions for s in specs} == {32}
    settings = specs[0].settings()
    assert settings.scenario.data.restore_ms == DEMO_DATA["restore_ms"]
    assert settings.scenario.data.max_poll_records == 500


def test_demo_quick_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"report: {out / 'report.html'}" in printed
    # The summary fits a 100-column terminal and has a row per scenario, protocol and size.
    table = printed[: printed.index("report: ")]
    assert max(len(line) for line in table.splitlines()) <= 100
    for scenario in DEMO_SCENARIOS:
        assert scenario in table
    # every scenario, and the rolling bounce again with static members (KIP-345)
    assert "rolling-bounce@static" in table
    for protocol in DEMO_PROTOCOLS:
        assert table.count(f" {protocol} ") == len(DEMO_SCENARIOS) + 1
    assert "@restore-" not in table  # the restore study is the report's own section
    for name in TABLES:
        assert any((out / name).rglob("*.parquet")), name
    page = (out / "report.html").read_text(encoding="utf-8")
    for section in SECTIONS:
        assert f'<h2 id="{section}">' in page
        assert EXPLAIN[section] in page
    assert "max.poll.records" in page and "restore" in page  # the settings, explained
    assert "src=" not in page and "<script" not in page
    # the verdict first, then the restore study with its sentence and the upper-bound caveat
    assert page.index('id="headline"') < page.index('id="restore"') < page.index('id="summary"')
    assert "static members (KIP-345)" in page
    assert "restore per partition" in page and "upper bound" in page
    # one seed: a smoke run, said on the first screen, and no protocol crowned
    assert page.index("A smoke run:") < page.index("<svg")
    assert "idles least" not in page.split('id="restore"')[0]
    grid = json.loads((out / "grid.json").read_text(encoding="utf-8"))
    specs, _ = expand(parse_grid(grid))
    assert len(specs) == 9  # 3 scenarios x 3 protocols, one size, one seed


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--sizes", "0", "--out", "OUT"],
        ["demo", "--seeds", "0", "--quick", "--out", "OUT"],
    ],
)
def test_demo_usage_errors(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("regroup demo: error: ")
