"""``sticky`` and ``cooperative-sticky`` give exactly the assignments recorded before the
engine's performance work (fingerprints of the whole assignment, ``sticky_fingerprints.json``).

A change to the engine that is meant to keep its output must keep these; one
that changes the output on purpose regenerates the file with
``python -m tests.assignors.classic.sticky_fingerprints --json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.assignors.classic.sticky_fingerprints import fingerprint, small_cases

RECORDED = Path(__file__).with_name("sticky_fingerprints.json")


def test_assignments_match_the_recorded_fingerprints() -> None:
    recorded: dict[str, str] = json.loads(RECORDED.read_text())
    actual = {case.name: fingerprint(case.run()) for case in small_cases()}
    assert actual.keys() == recorded.keys()
    changed = [name for name, digest in actual.items() if recorded[name] != digest]
    assert changed == []
