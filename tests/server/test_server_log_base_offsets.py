"""A partition file whose base offsets lie: the load checks continuity and loses nothing.

The CRC-32C of a v2 batch starts at ``attributes``, so a flipped byte in the
base offset passes ``check_batch``. The load must neither trust such a base
(it made the high watermark 1,095,216,660,482 and cut 98 of 100 records) nor
delete what it cannot place: what it does not keep goes to a side file.
"""

from __future__ import annotations

import atexit
import functools
import json
import logging
import shutil
import struct
import tempfile
from pathlib import Path

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.server.log.partitions import Log, PartitionLog, encode_batch


def _records(partition: PartitionLog) -> list[tuple[int, bytes]]:
    """Every (offset, value) a consumer would read, from each batch's header and records."""
    data = partition.read(0, 1 << 30)
    seen: list[tuple[int, bytes]] = []
    pos = 0
    while pos < len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        (count,) = struct.unpack_from(">i", data, pos + 57)
        at = pos + 61
        for index in range(count):
            # Each value in these batches is b"v<batch>-<record>" of 4-5 bytes; the
            # record's value is its last len bytes (no headers, null key).
            size = data[at] // 2  # zig-zag varint of the record's length (< 64)
            body = data[at + 1 : at + 1 + size]
            value_len = body[4] // 2
            seen.append((base + index, bytes(body[5 : 5 + value_len])))
            at += 1 + size
        pos += 12 + length
    return seen


def _ten_batches(tmp_path: Path) -> tuple[Path, list[int], list[tuple[int, bytes]]]:
    log = Log(tmp_path)
    topic = log.create_topic("t", 1)
    part = topic.partitions[0]
    sizes = []
    for i in range(10):
        batch = encode_batch([b"v%d-%d" % (i, j) for j in range(10)], 1_000)
        sizes.append(len(batch))
        part.append(batch)
    expected = _records(part)
    log.close()
    return tmp_path / f"{topic.topic_id}-0.log", sizes, expected


@functools.cache
def _template() -> tuple[Path, list[int], list[tuple[int, bytes]]]:
    """One directory of ten batches, built once (appends fsync) and copied per example."""
    directory = Path(tempfile.mkdtemp(prefix="regroup-ten-batches-"))
    atexit.register(shutil.rmtree, directory, True)
    return _ten_batches(directory)


def _fresh(tmp_path: Path) -> tuple[Path, list[int], list[tuple[int, bytes]]]:
    """A copy of the template in ``tmp_path``: its partition file, batch sizes, records."""
    template, sizes, expected = _template()
    shutil.copytree(template.parent, tmp_path, dirs_exist_ok=True)
    return tmp_path / template.name, sizes, expected


def _side_files(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.cut-*"))


@pytest.mark.parametrize("batch", [0, 2, 9])
@pytest.mark.parametrize("byte", range(8))
def test_a_flipped_base_offset_byte_loses_no_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, batch: int, byte: int
) -> None:
    path, sizes, expected = _fresh(tmp_path)
    data = bytearray(path.read_bytes())
    data[sum(sizes[:batch]) + byte] ^= 0xFF  # outside the CRC: the batch still checks
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, "regroup.server"):
        part = Log(tmp_path).partition("t", 0)
    assert part is not None
    assert _records(part) == expected  # all 100 records, each at its offset
    assert part.high_watermark == 100
    (line,) = [r.getMessage() for r in caplog.records]
    assert f"re-based the batch at bytes {sum(sizes[:batch])}.." in line
    assert f"to offset {batch * 10}" in line
    assert _side_files(path) == []  # nothing had to be moved aside
    # The file was repaired: a second start changes nothing and says nothing.
    caplog.clear()
    with caplog.at_level(logging.WARNING, "regroup.server"):
        again = Log(tmp_path).partition("t", 0)
    assert again is not None and _records(again) == expected
    assert caplog.records == []
    assert again.append(encode_batch([b"next"], 1_000)) == 100


def test_what_cannot_be_kept_goes_to_a_side_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, sizes, expected = _fresh(tmp_path)
    data = bytearray(path.read_bytes())
    at = sum(sizes[:4])
    original = bytes(data[at : at + sizes[4]])
    data[at + 70] ^= 0xFF  # a record byte of batch 4: its CRC fails
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, "regroup.server"):
        part = Log(tmp_path).partition("t", 0)
    assert part is not None
    assert _records(part) == [r for r in expected if not 40 <= r[0] < 50]
    (side,) = _side_files(path)
    assert side.read_bytes() == bytes(data[at : at + sizes[4]])  # byte for byte, as found
    assert side.read_bytes() != original
    (line,) = [r.getMessage() for r in caplog.records]
    assert "offsets lost: 40..49" in line and str(side) in line


def test_a_batch_whose_count_does_not_fit_its_offsets_is_moved_aside(tmp_path: Path) -> None:
    path, sizes, expected = _fresh(tmp_path)
    data = bytearray(path.read_bytes())
    at = sum(sizes[:3])
    # A well-formed lie: base offset wrong and a record count the offset range does not
    # hold, CRC recomputed. Such a batch cannot be re-based: it is skipped, kept aside.
    struct.pack_into(">q", data, at, 7_000_000)
    struct.pack_into(">i", data, at + 57, 11)
    end = at + sizes[3]
    struct.pack_into(">I", data, at + 17, crc32c(bytes(data[at + 21 : end])))
    path.write_bytes(bytes(data))
    part = Log(tmp_path).partition("t", 0)
    assert part is not None
    assert _records(part) == [r for r in expected if not 30 <= r[0] < 40]
    assert part.high_watermark == 100
    (side,) = _side_files(path)
    assert side.read_bytes() == bytes(data[at:end])


def test_offsets_lost_to_a_cut_stay_lost_across_restarts(tmp_path: Path) -> None:
    """A cut leaves a gap in the offsets; the next start must not close it by moving the
    batches after it (consumers' committed offsets point at them)."""
    path, sizes, expected = _fresh(tmp_path)
    data = bytearray(path.read_bytes())
    data[sum(sizes[:8]) + 70] ^= 0xFF  # batch 8 (offsets 80..89) fails its CRC
    path.write_bytes(bytes(data))
    kept = [r for r in expected if not 80 <= r[0] < 90]
    first = Log(tmp_path).partition("t", 0)
    assert first is not None and _records(first) == kept
    for _ in range(2):
        again = Log(tmp_path).partition("t", 0)
        assert again is not None and _records(again) == kept
        assert again.high_watermark == 100
    assert json.loads(path.with_name(path.stem + ".gaps").read_text()) == [[80, 89]]


def test_a_gap_confirmed_by_the_next_batch_is_kept_without_a_gap_file(tmp_path: Path) -> None:
    """A file cut before gap files existed: the batch after the gap and the one after it
    agree on their offsets, so neither is moved."""
    path, sizes, expected = _fresh(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: sum(sizes[:3])] + data[sum(sizes[:4]) :])  # 30..39 gone
    part = Log(tmp_path).partition("t", 0)
    assert part is not None
    assert _records(part) == [r for r in expected if not 30 <= r[0] < 40]


def test_a_torn_tail_is_moved_aside(tmp_path: Path) -> None:
    path, sizes, expected = _fresh(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:-7])
    part = Log(tmp_path).partition("t", 0)
    assert part is not None and _records(part) == expected[:90]
    (side,) = _side_files(path)
    assert side.read_bytes() == data[sum(sizes[:9]) : -7]


@settings(max_examples=100, deadline=None)
@given(at=st.integers(0, 10_000), mask=st.integers(1, 255))
def test_one_flipped_byte_anywhere_costs_at_most_its_batch_and_deletes_nothing(
    tmp_path_factory: pytest.TempPathFactory, at: int, mask: int
) -> None:
    tmp_path = tmp_path_factory.mktemp("flip")
    path, sizes, expected = _fresh(tmp_path)
    data = bytearray(path.read_bytes())
    at %= len(data)
    data[at] ^= mask
    path.write_bytes(bytes(data))
    part = Log(tmp_path).partition("t", 0)
    assert part is not None
    offsets = [offset for offset, _ in _records(part)]
    assert offsets == sorted(set(offsets))  # monotonic, no offset twice
    hit = next(i for i in range(10) if at < sum(sizes[: i + 1]))
    untouched = [r for r in expected if r[0] // 10 != hit]
    assert set(untouched) <= set(_records(part))  # every other batch, at its offset
    kept = path.stat().st_size
    aside = sum(side.stat().st_size for side in _side_files(path))
    assert kept + aside == len(data)  # every byte is in the file or beside it
