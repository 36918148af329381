"""What the user docs say about refusals and soak figures matches what the code does."""

from __future__ import annotations

from pathlib import Path

import pytest

from regroup.sim.scenario import ScenarioError, parse_scenario

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("table", ["group", "data", "network"])
def test_the_scenario_docs_say_an_unknown_key_is_an_error_as_it_is(table: str) -> None:
    """The docs said unknown keys in [group] and [network] were ignored; they are refused."""
    text = (DOCS / "formats" / "scenarios.md").read_text(encoding="utf-8")
    assert "ignored (not reported)" not in text
    with pytest.raises(ScenarioError, match=f"unknown key 'typo' in \\[{table}\\]"):
        parse_scenario({"name": "s", table: {"typo": 1}})


def test_the_soak_docs_explain_zombie_overlaps_beside_the_summary_that_shows_them() -> None:
    text = (DOCS / "soak.md").read_text(encoding="utf-8")
    first_section = text.split("\n## ", 1)[0]
    assert "zombie overlaps (Kafka's, not violations)" in first_section
    assert "a *zombie overlap* is" in first_section
