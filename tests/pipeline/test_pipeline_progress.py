"""The Spark commands are never silent for long, and Ctrl-C ends them in one line.

Every step of ``analyze`` (and of ``sweep``/``demo``, which share it) is a named phase
of the one progress bar (``regroup.cli.outputs.run_phases``), and every Spark job it
runs belongs to the job group of the phase that ran it: no Spark work happens outside a
phase the user sees. Ctrl-C prints one line, exits 130 and leaves no JVM behind.
Nothing here measures time.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from regroup.cli import outputs
from regroup.cli.main import main
from regroup.pipeline.analytics import TABLES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The phases of ``regroup analyze``, in order.
ANALYZE_PHASES = [
    "starting Spark",
    "reading the event logs",
    *(f"writing {name}" for name in TABLES),
    "summarizing",
    "writing the report",
]


def _event_log(path: Path, members: int = 2) -> Path:
    """A real event log, from ``regroup simulate --events``."""
    argv = ["simulate", "--scenario", "crash", "--members", str(members), "--partitions", "4"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*argv, "--json", "--events", str(path)]) == 0
    return path


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_run_phases_draws_each_phase_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal the bar names the phase under way (read from the stream itself)."""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("TERM", "xterm")
    seen: list[str] = []

    def phase(name: str) -> Any:
        def work() -> str:
            # the bar is refreshed while a phase runs: wait until it names this one
            for _ in range(200):
                if name in terminal.getvalue():
                    break
                time.sleep(0.01)
            seen.append(name)
            return name.upper()

        return work

    names = ["starting Spark", "writing metrics"]
    assert outputs.run_phases("analyzing", [(n, phase(n)) for n in names]) == [
        "STARTING SPARK",
        "WRITING METRICS",
    ]
    drawn = terminal.getvalue()
    assert seen == names
    assert all(name in drawn for name in names) and "analyzing" in drawn


def test_run_phases_raises_the_phase_error_and_stops() -> None:
    ran: list[str] = []

    def fail() -> None:
        ran.append("fail")
        raise ValueError("bad log")

    with pytest.raises(ValueError, match="bad log"):
        outputs.run_phases("x", [("one", fail), ("two", lambda: ran.append("two"))])
    assert ran == ["fail"]


def test_analyze_runs_every_spark_job_inside_a_named_phase(
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The phases are reported in order, and the status tracker finds no job of the
    command outside the job group of a reported phase."""
    log = _event_log(tmp_path / "run.jsonl")
    reported: list[list[str]] = []
    real = outputs.run_with_progress

    def recording(total: int, done: Any, work: Any, *, label: str, unit: str) -> None:
        real(total, done, work, label=label, unit=unit)
        if isinstance(done, outputs.PhaseCounter):
            assert done.value == total
            reported.append(done.started)

    monkeypatch.setattr(outputs, "run_with_progress", recording)
    tracker = spark.sparkContext.statusTracker()
    ungrouped_before = set(tracker.getJobIdsForGroup(None))
    assert main(["analyze", str(log), "--out", str(tmp_path / "out")]) == 0
    assert reported == [ANALYZE_PHASES]
    assert set(tracker.getJobIdsForGroup(None)) == ungrouped_before
    grouped = {name: tracker.getJobIdsForGroup(name) for name in ANALYZE_PHASES}
    assert all(grouped[f"writing {name}"] for name in TABLES)  # each write is Spark work
    assert "report: " in capsys.readouterr().out


def _java_descendants(pid: int) -> list[int]:
    """The java processes below ``pid`` (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
        names[int(entry.name)] = name
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            if names.get(child) == "java":
                found.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ctrl_c_is_one_line_exit_130_and_no_jvm_left(tmp_path: Path) -> None:
    """SIGINT while ``analyze`` writes its tables (Spark up, a job running or next)."""
    log = _event_log(tmp_path / "run.jsonl", members=4)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "regroup.cli.main", "analyze", str(log), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    try:
        # the first table's directory appears once Spark is up and the writes have begun
        deadline = time.monotonic() + 600  # a loaded machine starts Spark slowly
        while not (out / "ownership").exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "analyze never began writing"
            time.sleep(0.05)
        jvms = _java_descendants(proc.pid)
        assert jvms, "no JVM below the command"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert stderr == "interrupted\n"
    assert "report: " not in stdout
    assert not [pid for pid in jvms if _alive(pid)]
