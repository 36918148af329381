"""Log files -> splits -> recognised records and per-split counts (no Spark here).

``expand(paths)`` turns the command line's paths into ``Split``s: a file, every file under a
directory (hidden files skipped), a glob; ``file://`` URIs are local paths. A plain file
larger than ``SPLIT_BYTES`` is cut into byte ranges, each read by its own task: a range
owns the lines that *start* inside it (the reader of a range that starts mid-line skips to
the next line; the line is its neighbour's). A ``.gz`` file is one split (gzip cannot be
entered mid-stream). Other URIs (``hdfs://``, ``s3a://`` ...) are returned apart, for
Spark's own reader.

``read_split(split, window)`` yields a ``Record`` per recognised line inside the window
(``regroup.history.lines``) and, last, the split's ``SplitStats``: lines read, recognised,
unrecognised (coordinator lines no format matches), the formats seen, and the error that
stopped it early. A damaged ``.gz`` is read up to the damage: the error names the file,
the exception and the last whole line read; nothing read before it is lost.
"""

from __future__ import annotations

import glob
import gzip
import os
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from regroup.history.lines import OTHER, UNRECOGNISED, Record, parse_line

__all__ = [
    "SPLIT_BYTES",
    "InputError",
    "Split",
    "SplitStats",
    "Window",
    "expand",
    "read_lines",
    "read_split",
]

#: Plain files are read in ranges of this many bytes, one Spark task each.
SPLIT_BYTES = 64 * 1024 * 1024

_MARKER = re.compile(rb"Group(?:Coordinator|MetadataManager)|\[Consumer clientId=")
#: The same markers as literals: ``bytes.find`` over a block is far faster than a regex.
_MARKER_BYTES = (b"GroupCoordinator", b"GroupMetadataManager", b"[Consumer clientId=")


class InputError(ValueError):
    """A path that names no readable log file (one-line message)."""


@dataclass(frozen=True, slots=True)
class Window:
    """Which records to keep: one group (or all), from/to in ms (inclusive; None: open)."""

    group_id: str | None = None
    from_ms: int | None = None
    to_ms: int | None = None

    def keeps(self, record: Record) -> bool:
        if self.group_id is not None and record.group_id != self.group_id:
            return False
        if self.from_ms is not None and record.ts_ms < self.from_ms:
            return False
        return self.to_ms is None or record.ts_ms <= self.to_ms


@dataclass(frozen=True, slots=True)
class Split:
    path: str
    start: int = 0
    end: int | None = None  # None: to the end of the file
    compressed: bool = False


@dataclass(slots=True)
class SplitStats:
    path: str
    start: int = 0
    lines_read: int = 0
    lines_recognized: int = 0
    lines_unrecognized: int = 0
    bytes_read: int = 0
    #: ``(family, first, last-or-"")`` of each recognised row -> lines.
    formats: Counter[tuple[str, str]] = field(default_factory=Counter)
    error: str | None = None


def _local(path: str) -> str | None:
    parsed = urlparse(path)
    if parsed.scheme == "file":
        return parsed.path
    if parsed.scheme and len(parsed.scheme) > 1:
        return None  # a URI for Spark
    return path


def _files_under(directory: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(Path(root) / name for name in sorted(names) if not name.startswith("."))
    return found


def expand(paths: Sequence[str], split_bytes: int = SPLIT_BYTES) -> tuple[list[Split], list[str]]:
    """The splits of local paths and the URIs left for Spark; ``InputError`` for a bad path."""
    splits: list[Split] = []
    uris: list[str] = []
    seen: set[str] = set()
    for given in paths:
        local = _local(given)
        if local is None:
            uris.append(given)
            continue
        if glob.has_magic(local):
            matches = sorted(glob.glob(local, recursive=True))
            if not matches:
                raise InputError(f"{given}: no file matches this pattern")
            candidates = [Path(m) for m in matches]
        else:
            candidates = [Path(local)]
        for candidate in candidates:
            if candidate.is_dir():
                files = _files_under(candidate)
                if not files:
                    raise InputError(f"{candidate}: directory holds no file")
            elif candidate.is_file():
                files = [candidate]
            elif candidate.exists():
                raise InputError(f"{candidate}: not a regular file")
            else:
                raise InputError(f"{candidate}: no such file or directory")
            for file in files:
                key = str(file.resolve())
                if key in seen:
                    continue
                seen.add(key)
                if not os.access(file, os.R_OK):
                    raise InputError(f"{file}: permission denied")
                splits.extend(_split(file, split_bytes))
    return splits, uris


def _split(file: Path, split_bytes: int) -> list[Split]:
    if file.name.endswith(".gz"):
        return [Split(str(file), compressed=True)]
    size = file.stat().st_size
    if size <= split_bytes:
        return [Split(str(file))]
    return [
        Split(str(file), start, min(start + split_bytes, size))
        for start in range(0, size, split_bytes)
    ]


def _tally(
    stats: SplitStats, raw: bytes, source: str, number: int, window: Window
) -> Record | None:
    """One line with a marker: parsed and counted (``lines_read`` is counted by the caller)."""
    outcome = parse_line(raw.decode("utf-8", "replace"), source, number)
    if outcome == OTHER:
        return None
    if outcome == UNRECOGNISED or not isinstance(outcome, Record):
        stats.lines_unrecognized += 1
        return None
    stats.lines_recognized += 1
    stats.formats[(outcome.family, outcome.versions)] += 1
    return outcome if window.keeps(outcome) else None


def _scan_block(
    body: bytes, offset: int, stats: SplitStats, source: str, window: Window
) -> Iterator[Record]:
    """The records of a block of whole lines starting at byte ``offset`` of the file.

    Lines are not split one by one: each marker is searched in the whole block and only the
    lines around its matches are cut out, so the bytes of other lines are only counted.
    """
    stats.lines_read += body.count(b"\n") + (0 if body.endswith(b"\n") else 1)
    stats.bytes_read += len(body)
    starts: set[int] = set()
    for marker in _MARKER_BYTES:
        at = body.find(marker)
        while at >= 0:
            begin = body.rfind(b"\n", 0, at) + 1
            finish = body.find(b"\n", at)
            if finish < 0:
                finish = len(body)
            starts.add(begin)
            at = body.find(marker, finish)
    for begin in sorted(starts):
        finish = body.find(b"\n", begin)
        if finish < 0:
            finish = len(body)
        record = _tally(stats, body[begin:finish], source, offset + begin, window)
        if record is not None:
            yield record


def _scan(
    chunks: Iterable[bytes], offset: int, stats: SplitStats, source: str, window: Window
) -> Iterator[Record]:
    """Records of a stream of chunks cut anywhere: each block handed on ends at a newline."""
    pending = b""
    for chunk in chunks:
        data = pending + chunk if pending else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            pending = data
            continue
        yield from _scan_block(data[: cut + 1], offset, stats, source, window)
        offset += cut + 1
        pending = data[cut + 1 :]
    if pending:
        yield from _scan_block(pending, offset, stats, source, window)


def read_lines(
    lines: Iterable[bytes | str], source: str, window: Window
) -> Iterator[Record | SplitStats]:
    """Records and stats of lines from elsewhere (Spark's reader of a URI)."""
    stats = SplitStats(source)
    for number, line in enumerate(lines, 1):
        raw = line.encode("utf-8", "replace") if isinstance(line, str) else line
        stats.lines_read += 1
        stats.bytes_read += len(raw) + 1
        if _MARKER.search(raw) is None:
            continue
        record = _tally(stats, raw, source, number, window)
        if record is not None:
            yield record
    yield stats


def read_split(split: Split, window: Window = Window()) -> Iterator[Record | SplitStats]:
    """The records of one split, then its ``SplitStats`` (see the module docstring)."""
    stats = SplitStats(split.path, split.start)
    try:
        if split.compressed:
            yield from _read_gzip(split, window, stats)
        else:
            yield from _read_range(split, window, stats)
    except OSError as error:
        stats.error = f"{split.path}: cannot be read ({error.strerror or error})"
    yield stats


_CHUNK = 4 * 1024 * 1024


def _read_gzip(split: Split, window: Window, stats: SplitStats) -> Iterator[Record]:
    def chunks(stream: gzip.GzipFile) -> Iterator[bytes]:
        # read1: what one step decompresses, so a damaged tail loses only the last step
        while block := stream.read1(_CHUNK):
            yield block

    try:
        with gzip.open(split.path, "rb") as stream:
            yield from _scan(chunks(stream), 0, stats, split.path, window)
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        stats.error = (
            f"{split.path}: damaged gzip ({error}); read up to line {stats.lines_read}, "
            "the rest of the file is lost"
        )


def _read_range(split: Split, window: Window, stats: SplitStats) -> Iterator[Record]:
    with open(split.path, "rb") as stream:
        position = split.start
        if position > 0:
            stream.seek(position - 1)
            if stream.read(1) != b"\n":
                position += len(stream.readline())
        if split.end is not None and position >= split.end:
            return  # the range holds no line's start: its neighbours read them
        stream.seek(position)

        def chunks() -> Iterator[bytes]:
            # Up to the newline that ends the line holding byte ``end - 1``: the last line
            # that starts inside the range is this range's, whole.
            read = position
            end = split.end
            while block := stream.read(_CHUNK):
                if end is not None and read + len(block) >= end:
                    stop = block.find(b"\n", max(0, end - 1 - read))
                    if stop >= 0:
                        yield block[: stop + 1]
                        return
                yield block
                read += len(block)

        yield from _scan(chunks(), position, stats, split.path, window)
