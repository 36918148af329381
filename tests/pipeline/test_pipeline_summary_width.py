"""The console summary fits an 80-column terminal (never "consum/er" wrapped).

Rendered with a rich ``Console`` of width 80, as an 80-column terminal shows it.
"""

from __future__ import annotations

import io
from typing import Any

import pytest

from regroup.cli.analyze import SUMMARY_WIDTH, summary_tables

PROTOCOLS = (("eager", "range"), ("cooperative", "cooperative-sticky"), ("consumer", "uniform"))


def _row(scenario: str, protocol: str, assignor: str, members: int, **over: Any) -> dict[str, Any]:
    row = {
        "scenario": scenario, "protocol": protocol, "assignor": assignor, "members": members,
        "runs": 3, "idle_partition_s_mean": 15664.433, "longest_pause_ms": 150512,
        "rebalances_mean": 118.33, "moved_mean": 1162.0, "duplicates_mean": 11866.7,
        "time_to_stable_max_ms": 1114500, "violations": 0,
    }  # fmt: skip
    row.update(over)
    return row


def _render(rows: list[dict[str, Any]]) -> list[str]:
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(width=80, file=buffer, color_system=None)
    groups, caption = summary_tables(rows)
    for scenario, table in groups:
        console.print(scenario, markup=False, highlight=False)
        console.print(table)
    for line in caption:
        console.print(line, markup=False, highlight=False)
    return buffer.getvalue().splitlines()


@pytest.mark.parametrize("violations", [0, 3])
def test_the_summary_fits_80_columns_without_folding_a_cell(violations: int) -> None:
    assert SUMMARY_WIDTH == 80
    rows = [
        _row(scenario, protocol, assignor, members, violations=violations)
        for scenario in ("misconfigured-eager-member", "scale-out")
        for members in (4, 1000)
        for protocol, assignor in PROTOCOLS
    ]
    lines = _render(rows)
    assert max(len(line) for line in lines) <= 80
    # Every protocol on one line, whole (today "consum/er" was folded).
    assert sum(" consumer " in line for line in lines) == 4
    assert sum(" cooperative " in line for line in lines) == 4
    assert any("15664.4" in line and "150.5" in line and "1114.5" in line for line in lines)
    assert lines[0] == "misconfigured-eager-member"
    assert ("viol" in lines[1]) == bool(violations)
    assert "…" not in "".join(lines)  # nothing cut short
    assert any("No invariant violations" in line for line in lines) != bool(violations)
