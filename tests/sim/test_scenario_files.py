"""Scenario files written back by ``regroup.sim.soak.files``: JSON and TOML parse to the
same scenario, and a TOML header stays comments."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.sim.scenario import BUILTINS, PROTOCOLS, Action, builtin_scenario, parse_scenario
from regroup.sim.soak.files import scenario_to_data, scenario_to_toml, write_scenario
from regroup.sim.soak.schedule import Limits, draw_scenario


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_every_builtin_round_trips_through_toml(name: str) -> None:
    scenario = builtin_scenario(name)
    assert parse_scenario(tomllib.loads(scenario_to_toml(scenario))) == scenario


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(PROTOCOLS), st.integers(0, 10_000))
def test_drawn_schedules_round_trip_through_toml(protocol: str, seed: int) -> None:
    scenario = draw_scenario(protocol, seed, Limits(max_members=6, max_actions=6))
    assert parse_scenario(tomllib.loads(scenario_to_toml(scenario))) == scenario


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1),
        st.integers(1, 64),
        min_size=1,
        max_size=4,
    ),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"])),
    st.dictionaries(
        st.text(min_size=1, max_size=30),
        st.one_of(st.integers(-(2**40), 2**40), st.booleans(), st.text(max_size=20)),
        max_size=3,
    ),
)
def test_any_names_and_values_survive_toml(
    topics: dict[str, int], description: str, consumer: dict[str, object]
) -> None:
    """Topic names, descriptions and config values with quotes, backslashes, dots, newlines
    or non-ASCII characters are quoted and escaped, never left bare or broken."""
    consumer = {k: v for k, v in consumer.items() if not _has_surrogate(k + str(v))}
    scenario = replace(
        builtin_scenario("rolling-bounce"),
        topics=topics,
        description=description,
        consumer=consumer,
        actions=(Action("restart", at_ms=5, config={"a.b": 'x"y\\z'}),),
    )
    assert parse_scenario(tomllib.loads(scenario_to_toml(scenario))) == scenario


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def test_the_header_is_comments_and_the_suffix_picks_the_syntax(tmp_path: Path) -> None:
    scenario = builtin_scenario("crash")
    header = ["members: observed", "", "restore_ms: assumed\nsecond line"]
    toml_path = write_scenario(scenario, tmp_path / "a.toml", header)
    text = toml_path.read_text()
    assert text.startswith("# members: observed\n#\n# restore_ms: assumed\n# second line\n\n")
    assert parse_scenario(tomllib.loads(text)) == scenario
    json_path = write_scenario(scenario, tmp_path / "a.json", header)
    assert json.loads(json_path.read_text()) == scenario_to_data(scenario)
