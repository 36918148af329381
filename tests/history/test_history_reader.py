"""Reading files: paths expanded, byte-range splits own each line once, damaged gzip."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from regroup.history.lines import Record
from regroup.history.reader import InputError, Split, SplitStats, Window, expand, read_split
from regroup.history.synth import write_cluster_logs

EVERYTHING = Window()


def _read(
    splits: list[Split], window: Window = EVERYTHING
) -> tuple[list[Record], list[SplitStats]]:
    records: list[Record] = []
    stats: list[SplitStats] = []
    for split in splits:
        for item in read_split(split, window):
            if isinstance(item, SplitStats):
                stats.append(item)
            else:
                records.append(item)
    return records, stats


def test_splits_of_any_size_read_every_line_exactly_once(tmp_path: Path) -> None:
    write_cluster_logs(tmp_path, brokers=1, groups=2, noise=3)
    log = tmp_path / "broker-0" / "server.log"
    whole, whole_stats = _read(expand([str(log)])[0])
    total_lines = len(log.read_bytes().splitlines())
    assert whole_stats[0].lines_read == total_lines
    for size in (97, 1000, 4096):
        splits, _ = expand([str(log)], split_bytes=size)
        assert len(splits) > 1
        parts, stats = _read(splits)
        assert sum(s.lines_read for s in stats) == total_lines
        assert [r.line for r in parts] == [r.line for r in whole]


def test_paths_dirs_globs_and_uris(tmp_path: Path) -> None:
    write_cluster_logs(tmp_path, brokers=2, groups=1)
    by_dir, uris = expand([str(tmp_path)])
    assert len(by_dir) == 2 and uris == []
    by_glob, _ = expand([str(tmp_path / "broker-*" / "server.log"), f"file://{tmp_path}"])
    assert len(by_glob) == 2  # the same files once
    _, uris = expand(["hdfs://namenode/logs/kafka"])
    assert uris == ["hdfs://namenode/logs/kafka"]
    with pytest.raises(InputError, match="no such file"):
        expand([str(tmp_path / "missing.log")])
    with pytest.raises(InputError, match="no file matches"):
        expand([str(tmp_path / "*.nothing")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="holds no file"):
        expand([str(tmp_path / "empty")])


def test_a_damaged_gzip_is_read_up_to_the_damage(tmp_path: Path) -> None:
    write_cluster_logs(tmp_path, brokers=1, groups=3, noise=20)
    log = tmp_path / "broker-0" / "server.log"
    packed = gzip.compress(log.read_bytes())
    damaged = tmp_path / "server.log.1.gz"
    damaged.write_bytes(packed[: len(packed) * 2 // 3])
    good, _ = _read(expand([str(log)])[0])
    records, (stats,) = _read(expand([str(damaged)])[0])
    assert stats.error is not None and "damaged gzip" in stats.error and str(damaged) in stats.error
    assert 0 < len(records) < len(good)
    assert [r.line for r in records] == [r.line for r in good[: len(records)]]
    garbage = tmp_path / "junk.gz"
    garbage.write_bytes(b"not gzip at all")
    records, (stats,) = _read(expand([str(garbage)])[0])
    assert records == [] and stats.error is not None


def test_the_window_keeps_one_group_and_a_time_range(tmp_path: Path) -> None:
    write_cluster_logs(tmp_path, brokers=1, groups=3)
    splits, _ = expand([str(tmp_path)])
    every, _ = _read(splits)
    first = min(r.ts_ms for r in every)
    window = Window("group-001", first + 1_000_000, None)
    kept, stats = _read(splits, window)
    assert kept and {r.group_id for r in kept} == {"group-001"}
    assert min(r.ts_ms for r in kept) >= first + 1_000_000
    assert stats[0].lines_recognized == len(every)  # counted before the window
