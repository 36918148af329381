"""Every minimised soak failure kept in ``soak_regressions/`` runs with no violation.

A file there is a scenario file written by ``regroup soak --keep DIR`` (see
docs/soak.md): its name is ``<protocol>-seed<N>-<invariant>.json``; it runs
under each protocol it lists with seed ``N``, and the soak's checks (every
invariant, and the end of the run) must find nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from regroup.sim.scenario import load_scenario
from regroup.sim.soak.check import run_scenario

FOLDER = Path(__file__).parent / "soak_regressions"
FILES = sorted(p for p in FOLDER.iterdir() if p.suffix in (".json", ".toml"))


def test_the_folder_exists() -> None:
    assert FOLDER.is_dir()


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_a_kept_soak_failure_no_longer_fails(path: Path) -> None:
    scenario = load_scenario(str(path))
    match = re.search(r"seed(\d+)", path.name)
    seed = int(match.group(1)) if match else 0
    for protocol in scenario.protocols:
        outcome = run_scenario(scenario, protocol, seed)
        assert outcome.violations == [], (path.name, protocol, outcome.violations)
