"""What the user sees on the console: Spark's start-up noise filtered, the summary's width."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from regroup.cli.analyze import SUMMARY_WIDTH, print_summary
from regroup.pipeline.spark import _forward, is_noise

JVM_STDERR = (
    "WARNING: Using incubator modules: jdk.incubator.vector\n"
    'Setting default log level to "WARN".\n'
    "To adjust logging level use sc.setLogLevel(newLevel). For SparkR, use setLogLevel(n).\n"
    "spark ERROR Executor: Exception in task 0.0 in stage 1.0\n"
    "Traceback (most recent call last):\n"
    '  File "worker.py", line 1, in <module>\n'
)


def test_pipeline_jvm_noise_is_dropped_and_errors_are_kept(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _forward(io.BytesIO(JVM_STDERR.encode()))
    err = capsys.readouterr().err
    assert err == "".join(JVM_STDERR.splitlines(keepends=True)[3:])
    assert not is_noise("spark ERROR SparkContext: Setting default log level to")


def _row(scenario: str, protocol: str, assignor: str, members: int) -> dict[str, Any]:
    return {
        "scenario": scenario,
        "protocol": protocol,
        "assignor": assignor,
        "members": members,
        "runs": 3,
        "idle_partition_s_mean": 1566.433,
        "longest_pause_ms": 50512,
        "rebalances_mean": 18.33,
        "moved_mean": 162.0,
        "duplicates_mean": 1866.7,
        "time_to_stable_max_ms": None,
        "violations": 0,
    }


def test_pipeline_summary_fits_an_80_column_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    protocols = (("eager", "range"), ("cooperative", "cooperative-sticky"), ("consumer", "uniform"))
    rows = [
        _row(scenario, protocol, assignor, members)
        for scenario in ("rolling-bounce", "scale-out")
        for members in (4, 16)
        for protocol, assignor in protocols
    ]
    print_summary(rows, Path("out/demo"))
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= SUMMARY_WIDTH
    # The scenario once per group, seconds for times, the assignors named once.
    assert sum(line.strip() == "rolling-bounce" for line in lines) == 1
    assert any(" 1566.4 " in line and " 50.5 " in line for line in lines)
    assert any("cooperative=cooperative-sticky" in line for line in lines)
    # Two assignors for one protocol: the column names both.
    print_summary([*rows, _row("scale-out", "eager", "roundrobin", 4)], Path("o"))
    out = capsys.readouterr().out
    assert "eager / roundrobin" in out and "Assignors:" not in out
