"""Sweeps: the grid, its expansion, a tiny sweep end to end on local Spark, reading logs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from regroup.cli.main import main
from regroup.pipeline.logs import read_events
from regroup.pipeline.report import SECTIONS
from regroup.pipeline.schema import EVENT_SCHEMA, event_rows
from regroup.pipeline.sweep import Grid, GridError, expand, parse_grid, sized
from regroup.sim.scenario import builtin_scenario
from regroup.sim.simulation import run_simulation

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# One worker runs the Spark tests and the real-client interop tests, one after another.
pytestmark = pytest.mark.xdist_group("heavy")


def test_pipeline_grid_file_form() -> None:
    grid = parse_grid(
        {"scenarios": ["crash"], "protocols": ["eager"], "seeds": 3, "configs": [{"a": 1}]}
    )
    assert grid.seeds == (0, 1, 2)
    assert grid.configs == ({"a": "1"},)
    assert grid.members == (None,)
    with pytest.raises(GridError, match="unknown grid key"):
        parse_grid({"scenarios": ["crash"], "seed": 1})
    with pytest.raises(GridError, match="protocol"):
        parse_grid({"scenarios": ["crash"], "protocols": ["kip-848"]})
    with pytest.raises(GridError, match="unknown scenario"):
        expand(Grid(scenarios=("no-such-scenario",)))


def test_pipeline_expand_skips_what_the_simulator_refuses() -> None:
    grid = Grid(
        scenarios=("scale-out", "upgrade-double-bounce"),
        protocols=("eager", "consumer"),
        assignors=("range",),
        members=(2,),
        seeds=(0, 1),
    )
    specs, skipped = expand(grid)
    # scale-out runs with range under both protocols (classic range; KIP-848's server range).
    # The upgrade scenario sets partition.assignment.strategy itself (so no --assignor) and
    # is classic-only: both its combinations are skipped, with the simulator's reasons.
    assert [s.run_id for s in specs] == [
        "scale-out.eager.range.m2.pd.c0.s0",
        "scale-out.eager.range.m2.pd.c0.s1",
        "scale-out.consumer.range.m2.pd.c0.s0",
        "scale-out.consumer.range.m2.pd.c0.s1",
    ]
    assert len(skipped) == 2
    assert "upgrade-double-bounce eager" in skipped[0] and "strategy" in skipped[0]
    assert "upgrade-double-bounce consumer" in skipped[1] and "not for this protocol" in skipped[1]


def test_pipeline_tiny_sweep_end_to_end(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``regroup sweep``: grid -> runs in Spark tasks -> Parquet -> metrics -> report."""
    out = tmp_path / "sweep"
    argv = ["sweep", "--scenario", "scale-out", "--protocol", "cooperative,consumer"]
    argv += ["--members", "2", "--partitions", "2", "--seeds", "2", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"report: {out / 'report.html'}" in printed
    specs, _ = expand(
        Grid(
            scenarios=("scale-out",),
            protocols=("cooperative", "consumer"),
            members=(2,),
            partitions=(2,),
            seeds=(0, 1),
        )
    )
    assert len(specs) == 4
    page = (out / "report.html").read_text(encoding="utf-8")
    for section in SECTIONS:
        assert f'<h2 id="{section}">' in page
    # Self-contained: inline SVG, nothing fetched (no src=, no linked stylesheet or script).
    assert page.count("<svg") >= 4
    assert "src=" not in page and "<script" not in page and "<link" not in page
    metrics = spark.read.parquet(str(out / "metrics"))
    assert sorted(r["run_id"] for r in metrics.select("run_id").collect()) == sorted(
        s.run_id for s in specs
    )
    events_dir = out / "events"
    run = specs[1]
    run_dir = events_dir / "scenario=scale-out" / f"run_id={run.run_id}"
    assert run_dir.is_dir()
    # One run alone, read from its own directory: the simulator's log, event for event.
    one = read_events(spark, run_dir)
    # Parquet reads every column back as nullable; names, order and types are the schema's.
    assert one.schema.simpleString() == EVENT_SCHEMA.simpleString()
    got = [(r["run_id"], r["json"]) for r in one.orderBy("seq").select("run_id", "json").collect()]
    expected = run_simulation(run.settings()).events
    want = [
        (row["run_id"], row["json"])
        for row in event_rows(expected, scenario="scale-out", run_id=run.run_id)
    ]
    assert got == want
    assert spark.read.parquet(str(out / "runs")).count() == 4


def test_pipeline_reads_json_lines_logs(spark: SparkSession, tmp_path: Path) -> None:
    from regroup.sim.simulation import Settings

    result = run_simulation(Settings(scenario=builtin_scenario("crash"), members=2, partitions=2))
    path = tmp_path / "logs" / "my-run.jsonl"
    path.parent.mkdir()
    path.write_text("".join(e.to_json_line() + "\n" for e in result.events), encoding="utf-8")
    frame = read_events(spark, path.parent)
    rows = frame.orderBy("seq").select("scenario", "run_id", "kind").collect()
    assert [r["kind"] for r in rows] == [e.kind for e in result.events]
    assert {(r["scenario"], r["run_id"]) for r in rows} == {("crash", "my-run")}


@pytest.mark.parametrize(
    "argv",
    [
        ["sweep", "--out", "OUT"],
        ["sweep", "--scenario", "no-such", "--out", "OUT"],
        ["sweep", "--scenario", "crash", "--members", "0", "--out", "OUT"],
        ["sweep", "--scenario", "crash", "--config", "novalue", "--out", "OUT"],
        ["sweep", "--scenario", "crash", "--data", "restore_ms=5s", "--out", "OUT"],
        ["sweep", "--scenario", "crash", "--data", "restore=5", "--out", "OUT"],
        ["analyze", "/no/such/dir", "--out", "OUT"],
        ["demo", "--seeds", "0", "--out", "OUT"],
    ],
)
def test_pipeline_cli_usage_errors(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"regroup {argv[0]}: error: ") and err.count("\n") == 1


def test_pipeline_grid_data_axis_overrides_the_scenarios_data() -> None:
    grid = parse_grid(
        {
            "scenarios": ["scale-out"],
            "protocols": ["eager"],
            "members": [2],
            "data": [{"restore_ms": 0}, {"restore_ms": 5000, "max_poll_records": 100}],
        }
    )
    specs, skipped = expand(grid)
    assert skipped == []
    # Two data sets: the run ids say which.
    assert [s.run_id for s in specs] == [
        "scale-out.eager.range.m2.pd.c0.d0.s0",
        "scale-out.eager.range.m2.pd.c0.d1.s0",
    ]
    data = specs[1].settings().scenario.data
    assert (data.restore_ms, data.max_poll_records) == (5000, 100)
    assert data.records_per_second == builtin_scenario("scale-out").data.records_per_second
    with pytest.raises(GridError, match="unknown \\[data\\] key"):
        expand(Grid(scenarios=("crash",), data=({"restore": 1},)))
    with pytest.raises(GridError, match="max_poll_records"):
        expand(Grid(scenarios=("crash",), data=({"max_poll_records": 0},)))
    with pytest.raises(GridError, match="not an integer"):
        parse_grid({"scenarios": ["crash"], "data": [{"restore_ms": "5s"}]})


def test_pipeline_members_axis_times_the_actions_for_that_group() -> None:
    """A rolling bounce of 8 members runs until every member was bounced, and settles."""
    specs, _ = expand(Grid(scenarios=("rolling-bounce",), protocols=("cooperative",), members=(8,)))
    settings = specs[0].settings()
    assert settings.scenario.members == 8
    result = run_simulation(settings, keep_events=False)
    bounce = builtin_scenario("rolling-bounce").actions[0]
    last_restart = 30000 + 7 * bounce.gap_ms
    assert result.metrics.window_end_ms > last_restart + bounce.downtime_ms
    assert result.metrics.time_to_stable_ms is not None
    assert sized(builtin_scenario("crash"), None) == builtin_scenario("crash")


def test_pipeline_sweep_flags_keep_the_grid_files_data(tmp_path: Path) -> None:
    """``regroup sweep --grid FILE --seeds N`` keeps the file's ``data`` sets, flags add keys."""
    import argparse
    import json

    from regroup.cli.sweep import _grid

    path = tmp_path / "grid.json"
    path.write_text(json.dumps({"scenarios": ["crash"], "data": [{"restore_ms": 5000}]}))
    args = argparse.Namespace(
        grid=str(path),
        scenario=None,
        protocol=None,
        assignor=None,
        members=[4],
        partitions=None,
        seeds=2,
        config=[],
        data=["max_poll_records=100"],
    )
    grid = _grid(args)
    assert grid.data == ({"restore_ms": 5000, "max_poll_records": 100},)
    assert (grid.members, grid.seeds) == ((4,), (0, 1))
