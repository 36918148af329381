"""A data dir damaged around the partitions: one line on stderr and exit 2, nothing lost.

A truncated ``topics.json``, a directory where ``events.jsonl`` belongs, and a
deleted ``topics.json`` beside partition files each stop ``regroup serve`` with
one line naming the file and what to do (no traceback, no silent start).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import regroup
from regroup.server.app import RegroupServer, ServerOptions


def _data_dir(tmp_path: Path) -> Path:
    """What a server leaves: coordinator.db, events.jsonl, topics.json and a partition."""
    data = tmp_path / "data"
    server = RegroupServer(ServerOptions(port=0, seed=1, data_dir=data))
    server.create_topic("orders", 2)
    server.append_local("orders", 1, [b"kept"])
    server.store.close()
    server.events.close()
    return data


def _serve(data_dir: Path) -> subprocess.CompletedProcess[str]:
    src = Path(regroup.__file__).resolve().parents[1]
    argv = ["serve", "--port", "0", "--data-dir", str(data_dir)]
    return subprocess.run(
        [sys.executable, "-m", "regroup.cli.main", *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(src)},
    )


def _one_line_exit_2(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("regroup serve: error: ")
    return result.stderr


def test_a_truncated_topic_list_is_one_line_naming_it(tmp_path: Path) -> None:
    data = _data_dir(tmp_path)
    catalog = data / "log" / "topics.json"
    catalog.write_bytes(catalog.read_bytes()[:20])
    err = _one_line_exit_2(_serve(data))
    assert f"{catalog} is not a readable topic list" in err
    assert "restore it from a backup" in err


def test_a_directory_where_the_event_log_belongs_is_one_line_naming_it(tmp_path: Path) -> None:
    data = _data_dir(tmp_path)
    events = data / "events.jsonl"
    events.unlink()
    events.mkdir()
    err = _one_line_exit_2(_serve(data))
    assert f"cannot open {events}: Is a directory" in err
    assert "--events" in err


def test_a_deleted_topic_list_beside_partition_files_is_refused_not_hidden(
    tmp_path: Path,
) -> None:
    data = _data_dir(tmp_path)
    catalog = data / "log" / "topics.json"
    saved = catalog.read_bytes()
    catalog.unlink()
    partition = next((data / "log").glob("*-1.log"))
    before = partition.read_bytes()
    err = _one_line_exit_2(_serve(data))
    topic_id = partition.name[:22]
    assert f"topic ids {topic_id} (1 partition files, the highest 1)" in err
    assert "restore topics.json" in err
    assert partition.read_bytes() == before  # nothing was touched
    # With the list back, the topic and its record are there again.
    catalog.write_bytes(saved)
    server = RegroupServer(ServerOptions(port=0, seed=1, data_dir=data))
    try:
        log = server.log.partition("orders", 1)
        assert log is not None and log.high_watermark == 1
    finally:
        server.store.close()
        server.events.close()
    shutil.rmtree(data)
