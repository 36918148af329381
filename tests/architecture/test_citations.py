"""Every document the code and the docs cite is in the repository, and no tracker item is cited.

A reader must be able to follow every citation: a ``.md`` file named in ``src/``,
``docs/``, ``tests/`` or ``pyproject.toml`` must exist in the repository (as a path
relative to the citing file, to the repository root or to ``docs/``, or, when only a
file name is given, as some ``.md`` file of that name), and a section cited as
``architecture.md, "Section"`` must be a heading of that file. Code and docs say what
they do and why, never which tracker item asked for it: "issue" followed by a number
fails.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

THIS_FILE = Path(__file__).resolve()
ROOT = THIS_FILE.parents[2]
SCANNED_DIRS = ("src", "docs", "tests")
SCANNED_FILES = ("pyproject.toml",)
SUFFIXES = {".py", ".md", ".toml", ".json", ".txt", ".cfg", ".ini", ".yaml", ".yml", ".html"}
SKIPPED_DIRS = {"__pycache__", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache"}

#: A file name ending in .md, possibly with a relative path and an anchor.
MD_CITATION = re.compile(r"(?<![\w/.-])((?:\.{1,2}/)*[\w][\w./-]*\.md)\b")
#: "issue 27", "Issue 7", "issue #3": a tracker item by number.
TRACKER_ITEM = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)
#: ``architecture.md, "Section"`` or ``architecture.md ("Section")``: a section by name.
SECTION_CITATION = re.compile(r"([\w./-]+\.md)\)?(?:, | \()\"([A-Z][^\"]{2,60})\"")


def scanned_files() -> Iterator[Path]:
    for name in SCANNED_FILES:
        yield ROOT / name
    for directory in SCANNED_DIRS:
        for path in sorted((ROOT / directory).rglob("*")):
            if (
                path.suffix in SUFFIXES
                and path.is_file()
                and not _skipped(path)
                and path != THIS_FILE
            ):
                yield path


def _skipped(path: Path) -> bool:
    return any(part in SKIPPED_DIRS for part in path.relative_to(ROOT).parts)


def repository_md_files() -> list[Path]:
    return [
        path
        for path in ROOT.rglob("*.md")
        if not any(
            part.startswith(".") or part in {"out", "node_modules"}
            for part in path.relative_to(ROOT).parts
        )
    ]


def resolve(citation: str, citing: Path, known: list[Path]) -> Path | None:
    for base in (citing.parent, ROOT, ROOT / "docs"):
        candidate = (base / citation).resolve()
        if candidate.is_file():
            return candidate
    if "/" not in citation:
        for path in known:
            if path.name == citation:
                return path
    return None


def test_every_cited_md_file_exists() -> None:
    known = repository_md_files()
    missing = [
        f"{path.relative_to(ROOT)}:{number}: {match.group(1)}"
        for path in scanned_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for match in MD_CITATION.finditer(line)
        if resolve(match.group(1), path, known) is None
    ]
    assert missing == [], "cited documents that the repository does not hold:\n" + "\n".join(
        missing
    )


def test_every_cited_section_exists() -> None:
    known = repository_md_files()
    broken = []
    for path in scanned_files():
        text = " ".join(path.read_text(encoding="utf-8").split())
        for match in SECTION_CITATION.finditer(text):
            target = resolve(match.group(1), path, known)
            if target is None:
                continue  # reported by test_every_cited_md_file_exists
            headings = {
                line.lstrip("#").strip()
                for line in target.read_text(encoding="utf-8").splitlines()
                if line.startswith("#")
            }
            if match.group(2) not in headings:
                broken.append(f"{path.relative_to(ROOT)}: {match.group(1)}, {match.group(2)!r}")
    assert broken == [], "cited sections that do not exist:\n" + "\n".join(broken)


def test_no_tracker_items_cited() -> None:
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in scanned_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if TRACKER_ITEM.search(line)
    ]
    assert cited == [], (
        "tracker items cited (say what the code does and why instead):\n" + "\n".join(cited)
    )


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """The patterns catch what they are for (a guard against a regex that matches nothing)."""
    known = repository_md_files()
    assert MD_CITATION.findall('see NOWHERE.md, "The one rule"') == ["NOWHERE.md"]
    assert resolve("NOWHERE.md", ROOT / "src" / "regroup" / "__init__.py", known) is None
    assert resolve("architecture.md", ROOT / "src" / "regroup" / "__init__.py", known) is not None
    assert resolve("../benchmarks/RESULTS.md", ROOT / "docs" / "architecture.md", known) is not None
    assert TRACKER_ITEM.search("asked by Issue 12, section 3")
    assert not TRACKER_ITEM.search("an issue of ordering, 3 times")
    cited = SECTION_CITATION.search('docs/architecture.md, "The sans-IO contract"')
    assert cited is not None and cited.groups() == ("docs/architecture.md", "The sans-IO contract")
