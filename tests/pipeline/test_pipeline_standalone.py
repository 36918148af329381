"""A sweep on a real Spark standalone cluster gives the metrics of local mode.

The test starts a master and one worker (1 core, 512 MiB for the executor) from
the pip-installed PySpark, as the README tells a user to (``spark-class
org.apache.spark.deploy.master.Master`` / ``...worker.Worker``), runs a two-run
sweep against ``spark://127.0.0.1:PORT`` in a child process (one JVM per
process: the suite's own session is local), runs the same grid in local mode,
and compares every metric and every event. It also checks that the cluster run
is as quiet as a local one: nothing on stderr but the "N runs on ..." line.

Every wait is bounded; the master and the worker are stopped by their process
group (they were started in groups of their own), whatever happens.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import regroup
from regroup.cli.main import main

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.xdist_group("heavy"), pytest.mark.slow]

#: The bound on each daemon's start-up (they take seconds on an idle machine).
START_TIMEOUT_S = 300
#: The bound on the cluster sweep itself.
SWEEP_TIMEOUT_S = 1200

GRID = ["--scenario", "crash", "--protocol", "eager,consumer", "--members", "2"]
GRID += ["--partitions", "2", "--seeds", "1"]


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _wait_for(log: Path, pattern: str, process: subprocess.Popen[bytes]) -> re.Match[str]:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        found = re.search(pattern, text)
        if found:
            return found
        if process.poll() is not None:
            pytest.fail(f"{log.name} exited ({process.returncode}):\n{text[-3000:]}")
        time.sleep(0.5)
    pytest.fail(f"no {pattern!r} in {log} after {START_TIMEOUT_S} s")


def _daemon(argv: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(_spark_home() / "bin" / "spark-class"), *argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: stopped with everything it starts
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """A standalone master and one worker on 127.0.0.1; the master URL and the client's env."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java")
    root = tmp_path_factory.mktemp("standalone")
    conf = root / "conf"
    conf.mkdir()
    # What a user puts in $SPARK_CONF_DIR/spark-defaults.conf for a small cluster.
    (conf / "spark-defaults.conf").write_text("spark.executor.memory 512m\nspark.cores.max 1\n")
    src = str(Path(regroup.__file__).resolve().parent.parent)
    env = {
        **os.environ,
        "SPARK_HOME": str(_spark_home()),
        "SPARK_CONF_DIR": str(conf),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        # no REST submission server (it would take the fixed port 6066)
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        # the executors' Python workers import this checkout's regroup
        "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    master_log = root / "master.log"
    master = _daemon(
        ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0",
         "--webui-port", "0"],
        master_log,
        env,
    )  # fmt: skip
    worker = None
    try:
        url = _wait_for(master_log, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", master)
        master_url = url.group(1)
        _wait_for(master_log, r"New state: ALIVE", master)
        worker_log = root / "worker.log"
        worker = _daemon(
            ["org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1",
             "--cores", "1", "--memory", "512m", "--webui-port", "0",
             "--work-dir", str(root / "work")],
            worker_log,
            env,
        )  # fmt: skip
        _wait_for(worker_log, r"Successfully registered with master", worker)
        yield master_url, env
    finally:
        if worker is not None:
            _stop(worker)
        _stop(master)


def _table(path: Path, key: tuple[str, ...]) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return sorted(rows, key=lambda r: tuple(str(r[k]) for k in key))


def test_standalone_sweep_matches_local_mode(
    cluster: tuple[str, dict[str, str]],
    spark: SparkSession,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    master_url, env = cluster
    on_cluster = tmp_path / "cluster"
    done = subprocess.run(
        [sys.executable, "-m", "regroup.cli.main", "sweep", *GRID, "--master", master_url,
         "--out", str(on_cluster)],
        env=env,
        capture_output=True,
        text=True,
        timeout=SWEEP_TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    # as quiet as local mode: the one line the command itself prints, nothing from Spark
    assert done.stderr.splitlines() == [f"2 runs on {master_url}"], done.stderr[-3000:]
    assert "report: " in done.stdout

    local = tmp_path / "local"
    assert main(["sweep", *GRID, "--out", str(local)]) == 0
    capsys.readouterr()

    assert _table(on_cluster / "metrics", ("run_id",)) == _table(local / "metrics", ("run_id",))
    assert _table(on_cluster / "labels", ("run_id",)) == _table(local / "labels", ("run_id",))
    events_key = ("scenario", "run_id", "seq")
    assert _table(on_cluster / "events", events_key) == _table(local / "events", events_key)
    assert (on_cluster / "report.html").stat().st_size > 0
