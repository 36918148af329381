"""A sweep grid refuses what ``simulate`` refuses; no Spark needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from regroup.cli.main import main
from regroup.pipeline.sweep import Grid, GridError, expand, parse_grid


@pytest.mark.parametrize("key", ["members", "partitions"])
def test_a_group_size_of_zero_in_a_grid_is_refused(key: str) -> None:
    with pytest.raises(GridError, match=f"{key}: 0 is not a group size >= 1"):
        parse_grid({"scenarios": ["steady"], key: [4, 0]})


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        (Grid(scenarios=("crash",), members=(0,)), "aims at member 0"),
        (Grid(scenarios=("steady",), members=(100_000_000,)), "at most 10,000"),
        (
            Grid(scenarios=("steady",), protocols=("eager",),
                 configs=({"group.protocol": "consumer"},)),
            "contradicts the protocol",
        ),
        (
            Grid(scenarios=("steady",), protocols=("cooperative",),
                 configs=({"session.timeout.ms": "2000000"},)),
            "INVALID_SESSION_TIMEOUT",
        ),
    ],
)  # fmt: skip
def test_a_grid_refuses_a_contradictory_combination(grid: Grid, message: str) -> None:
    with pytest.raises(GridError, match=message):
        expand(grid)


def test_a_grid_still_skips_a_protocol_the_scenario_is_not_for() -> None:
    specs, skipped = expand(Grid(scenarios=("downgrade",), protocols=("eager", "consumer")))
    assert specs and len(skipped) == 1


def test_sweep_cli_refuses_a_grid_with_an_empty_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text('scenarios = ["steady"]\nmembers = [0]\n')
    assert main(["sweep", "--grid", str(grid), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "members: 0 is not a group size" in err and err.count("\n") == 1
