"""Every ``python`` example of docs/testing-harness.md runs, as printed.

Each fenced ``python`` block is a whole program with its own asserts; it runs in a
namespace of its own. The test is named after the heading the block sits under.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing-harness.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)
_HEADING = re.compile(r"^#+ (.*)$", re.MULTILINE)


def _examples() -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    examples = []
    for block in _BLOCK.finditer(text):
        headings = _HEADING.findall(text, 0, block.start())
        examples.append((headings[-1] if headings else "top", block.group(1)))
    return examples


EXAMPLES = _examples()


def test_the_guide_has_its_examples() -> None:
    titles = [title for title, _ in EXAMPLES]
    assert "Testing your own assignor" in titles
    assert "Testing your own rebalance listener" in titles
    assert "The coordinator alone: KIP-848 heartbeats by hand" in titles


@pytest.mark.parametrize(
    "code", [code for _, code in EXAMPLES], ids=[title for title, _ in EXAMPLES]
)
def test_example_runs(code: str) -> None:
    exec(compile(code, str(DOC), "exec"), {"__name__": "docs_example"})
