"""The metrics of every golden case, figure by figure, as stored in ``tests/golden/metrics.json``.

``tests/golden/hashes.json`` pins each case's event log and metrics as hashes; this
file pins the metrics readably, from runs that keep no event log (the path of
``regroup compare``, ``soak`` and the benchmarks). A change of how the simulator
publishes records (or of the event log's layout) must leave every figure here as it
is; only a change of behaviour that is meant rewrites them
(``python tools/golden.py --write-metrics``), saying why in its commit.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.sim.test_golden_logs import CASES, golden

STORED: dict[str, dict[str, Any]] = json.loads(golden.METRICS.read_text())


def test_every_case_has_its_metrics() -> None:
    assert sorted(STORED) == sorted(name for name, _, _ in CASES)


@pytest.mark.parametrize(("name", "source", "protocol"), CASES, ids=[c[0] for c in CASES])
def test_metrics_are_unchanged(name: str, source: str, protocol: str) -> None:
    measured = golden.metrics_of(source, protocol)
    changed = sorted(
        key
        for key in measured.keys() | STORED[name].keys()
        if measured.get(key) != STORED[name].get(key)
    )
    assert not changed, f"{name}: {changed} moved"
