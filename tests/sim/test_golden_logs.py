"""The golden event logs: every built-in scenario × protocol, and every example scenario
file, must write the same event log and metrics, byte for byte, as when the hashes in
``tests/golden/hashes.json`` were written.

A refactor keeps them identical. A change of behaviour that an issue asks for regenerates
them on purpose with ``make golden`` (``python tools/golden.py --write``) and names the
moved cases and the reason in its commit.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("golden_tool", ROOT / "tools" / "golden.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


golden = _load_tool()
STORED: dict[str, dict[str, str]] = json.loads(golden.HASHES.read_text())
CASES = list(golden.cases())


def test_every_case_is_pinned_and_every_pin_is_a_case() -> None:
    assert sorted(STORED) == sorted(name for name, _, _ in CASES)


@pytest.mark.parametrize(("name", "source", "protocol"), CASES, ids=[c[0] for c in CASES])
def test_golden_log_is_unchanged(name: str, source: str, protocol: str) -> None:
    assert golden.digest(source, protocol) == STORED[name], (
        f"{name}: the event log or metrics changed; if the change is meant, run "
        "`make golden` and say why in the commit"
    )
