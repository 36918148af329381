"""The SparkSession: embedded ``local[*]`` by default, a cluster with ``master``.

Run the pipeline either through ``regroup sweep|analyze --master URL`` or with
standard ``spark-submit`` (then the session the launcher made is reused:
``getOrCreate`` returns it and ``master`` is left to the launcher).

Spark's log noise is kept away from the user, real errors are not:

* the JVM we launch reads a log4j2 configuration (``-Dlog4j2.configurationFile``
  in ``spark.driver.extraJavaOptions``) whose root level is ``ERROR``, and the
  log level is set to ``ERROR`` again once the context exists;
* the launcher's own start-up lines do not go through log4j: the JVM prints
  ``WARNING: Using incubator modules`` and Spark's ``Logging`` prints
  ``Setting default log level ...`` / ``To adjust logging level ...`` with
  ``System.err`` whenever it thinks it runs in a shell (pyspark's gateway is
  started as ``pyspark-shell``). So we start the gateway ourselves with
  ``pyspark.java_gateway.launch_gateway(conf, popen_kwargs=...)`` (its
  documented hook "for capturing stdout/stderr") with the JVM's stderr on a
  pipe; a thread forwards every line to our stderr except those start-up
  lines (``NOISE``): an exception, a log4j ``ERROR`` or a Python worker's
  traceback still reaches the user;
* the console progress bar and the web UI are off, and runs use few shuffle
  partitions: 4 locally, and on a cluster as many as the command asks
  (``regroup sweep``: one per run, at most 200) or ``CLUSTER_SHUFFLE_PARTITIONS``;
  Spark's default of 200 for a 12-run sweep is 200 near-empty tasks per shuffle.
  The driver's log4j configuration is the quiet one on a cluster too (the
  executors log to their workers' files, not to our terminal).

A mistake in ``--master`` fails before any JVM starts (``check_master``): a
URL Spark cannot parse is named with the forms it accepts, and a standalone
master (``spark://HOST:PORT``) that nobody answers on is one line at once
(Spark itself retries for about a minute and prints pages of Java).
A Spark or py4j failure later is turned into one line naming its root cause
(``failure_cause``) by the commands, and Ctrl-C ends the JVM we launched
(``stop_spark``), so neither a py4j traceback nor a JVM outlives the command.

Settings the analytics rely on (``regroup.pipeline.analytics``, "Plan"): no
broadcast joins (``spark.sql.autoBroadcastJoinThreshold=-1``),
``spark.sql.requireAllClusterKeysForCoPartition=false`` and adaptive query
execution off (``spark.sql.adaptive.enabled=false``), so that the per-run
tables, all hash-partitioned by ``run_id`` once and cached, are grouped and
joined where they are: no further shuffle, no broadcast job per join, one
Spark job per action. (With AQE on, every shuffle stage is a job of its own
and a cached AQE plan does not report its partitioning, so each use of the
cache shuffled again: 44 jobs for the 27-run demo's tables instead of 5.)
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_MASTER",
    "NOISE",
    "MasterError",
    "build_session",
    "check_master",
    "failure_cause",
    "is_noise",
    "stop_spark",
]

DEFAULT_MASTER = "local[*]"
#: Shuffle partitions for ``local[...]`` masters.
LOCAL_SHUFFLE_PARTITIONS = 4
#: Shuffle partitions on a cluster when the command does not say (Spark's default: 200).
CLUSTER_SHUFFLE_PARTITIONS = 16
#: How long ``check_master`` waits for a standalone master to accept a connection.
MASTER_CONNECT_TIMEOUT_S = 5.0

#: The master URLs ``SparkContext.createTaskScheduler`` accepts (Spark 3.5/4.0), and the
#: cluster managers it hands the rest to (``yarn``, ``k8s://``; ``mesos://`` before 4.0).
_LOCAL = re.compile(r"local(\[(\*|[1-9][0-9]*)(,[0-9]+)?\])?|local-cluster\[[0-9]+,[0-9]+,[0-9]+\]")
_STANDALONE = re.compile(r"spark://([^/,:\s]+:[0-9]{1,5})(,[^/,:\s]+:[0-9]{1,5})*")
_OTHER = re.compile(r"yarn|k8s://\S+|mesos://\S+")


class MasterError(ValueError):
    """``--master`` is not a Spark master URL, or its standalone master does not answer."""


def check_master(master: str | None) -> None:
    """Refuse a master URL Spark cannot parse, or a standalone master that does not answer.

    A ``spark://`` URL (one ``HOST:PORT`` or, for standby masters, several) is
    tried with a plain TCP connection (``MASTER_CONNECT_TIMEOUT_S``); one
    answering master is enough. ``yarn`` and ``k8s://`` are left to Spark.
    """
    if master is None:
        return
    text = master.strip()
    if _LOCAL.fullmatch(text) or _OTHER.fullmatch(text):
        return
    if not _STANDALONE.fullmatch(text):
        raise MasterError(
            f"--master {master!r} is not a Spark master URL (local, local[N], local[*], "
            "spark://HOST:PORT, yarn, k8s://HOST:PORT)"
        )
    causes = []
    for address in text.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        if not 0 < int(port) < 65536:
            raise MasterError(f"--master {master!r}: port {port} is out of range")
        try:
            with socket.create_connection((host, int(port)), timeout=MASTER_CONNECT_TIMEOUT_S):
                return
        except OSError as error:
            causes.append(f"{address}: {error.strerror or error}")
    raise MasterError(f"cannot reach the Spark master {master} ({'; '.join(causes)})")


def failure_cause(error: BaseException) -> str:
    """One line naming the root cause of a Spark/py4j failure (not its pages of Java).

    A ``Py4JJavaError`` carries the Java exception: its chain of causes is
    followed to the last one, whose class and message name what went wrong
    (``java.io.FileNotFoundException: ... (Permission denied)``). PySpark's own
    errors (``PySparkException``) have a one-line message already.
    """
    java = getattr(error, "java_exception", None)
    if java is not None:
        try:
            cause = java
            for _ in range(32):  # a cycle in the chain must not hang us
                nxt = cause.getCause()
                if nxt is None or nxt.equals(cause):
                    break
                cause = nxt
            text = str(cause.toString())
        except Exception:
            text = str(error)
    else:
        text = str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else type(error).__name__
    return first if len(first) <= 500 else first[:497] + "..."


#: Start-up lines of the JVM and of Spark's ``Logging`` that bypass log4j (prefixes).
NOISE = (
    "WARNING: Using incubator modules:",
    'Setting default log level to "',
    "To adjust logging level use sc.setLogLevel(",
)

#: SQL settings the analytics' plan relies on (see the module docstring).
ANALYTICS_CONF = {
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1",
    "spark.sql.requireAllClusterKeysForCoPartition": "false",
    "spark.sql.adaptive.enabled": "false",
}

#: A log4j2 configuration for the embedded JVM: only ``level`` and above, on stderr.
_LOG4J2 = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark %p %c{{1}}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = {level}
"""


def is_noise(line: str) -> bool:
    """Whether a line of the JVM's stderr is start-up noise (``NOISE``)."""
    return line.startswith(NOISE)


def _quiet_log4j2_file(level: str) -> str:
    """A log4j2 properties file (in the temp dir) that keeps the JVM's start-up quiet."""
    path = Path(tempfile.gettempdir()) / f"regroup-log4j2-{level.lower()}.properties"
    text = _LOG4J2.format(level=level.lower())
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return str(path)


def _forward(stream: IO[bytes]) -> None:
    """Copy the JVM's stderr to ours, line by line, without the start-up noise."""
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace")
        if not is_noise(line):
            sys.stderr.write(line)
            sys.stderr.flush()
    stream.close()


def _launch_quiet_context(conf: Any) -> None:
    """Start the JVM with its stderr filtered (``_forward``) and a SparkContext on it."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})  # type: ignore[no-untyped-call]
    process = getattr(gateway, "proc", None)
    if process is not None and process.stderr is not None:
        threading.Thread(
            target=_forward, args=(process.stderr,), name="spark-stderr", daemon=True
        ).start()
    SparkContext(conf=conf, gateway=gateway)


def build_session(
    master: str | None = None,
    *,
    app_name: str = "regroup",
    log_level: str = "ERROR",
    shuffle_partitions: int | None = None,
    cluster_shuffle_partitions: int | None = None,
    driver_memory: str | None = None,
) -> SparkSession:
    """A SparkSession for the pipeline (``master`` None: ``local[*]`` unless spark-submit set one).

    The Python workers run this interpreter (``PYSPARK_PYTHON``), so they can
    import ``regroup`` and pyarrow from the same environment as the driver; on
    a cluster, ship ``regroup`` with ``--py-files`` or install it on the nodes.
    ``driver_memory`` (e.g. ``"2g"``) only applies when we launch the JVM.
    ``cluster_shuffle_partitions`` is the command's choice for a non-local master
    (``shuffle_partitions`` wins over it, for any master).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    # Under spark-submit the Python driver is started with a gateway to the launcher's JVM,
    # whose --master (or spark-defaults.conf) decides; otherwise we default to local[*].
    launched = bool(os.environ.get("PYSPARK_GATEWAY_PORT"))
    effective = master or (None if launched else DEFAULT_MASTER)
    settings = {
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        **ANALYTICS_CONF,
    }
    if effective is not None:
        settings["spark.master"] = effective
    local = effective is not None and effective.startswith("local")
    if local:
        settings["spark.sql.shuffle.partitions"] = str(
            shuffle_partitions or LOCAL_SHUFFLE_PARTITIONS
        )
    else:
        settings["spark.sql.shuffle.partitions"] = str(
            shuffle_partitions or cluster_shuffle_partitions or CLUSTER_SHUFFLE_PARTITIONS
        )
    if not launched:
        # Our driver JVM is as quiet on a cluster as locally.
        settings["spark.driver.extraJavaOptions"] = (
            f"-Dlog4j2.configurationFile={_quiet_log4j2_file(log_level)}"
        )
    if driver_memory is not None:
        settings["spark.driver.memory"] = driver_memory
    # Only the first JVM of this process is ours to launch; a later session reuses it.
    if not launched and SparkContext._gateway is None:
        conf = SparkConf()
        for key, value in settings.items():
            conf.set(key, value)
        _launch_quiet_context(conf)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    for key, value in ANALYTICS_CONF.items():
        session.conf.set(key, value)
    session.sparkContext.setLogLevel(log_level)
    return session


def stop_spark() -> None:
    """Ctrl-C: end the JVM this process launched, at once and quietly.

    The work under way (in ``outputs.run_with_progress``' thread) is blocked in a py4j
    call; once the JVM is gone that call fails, and py4j logs every broken call with
    a traceback, so its loggers are silenced first. The JVM is killed rather than
    stopped (``SparkContext.stop`` would wait for the running job and talk to it over
    the same gateway); nothing it was writing is complete anyway. A JVM that is not
    ours (``spark-submit`` launched us) only has its jobs cancelled. Interrupted while
    the JVM still starts, there is no gateway yet: PySpark's JVM exits by itself when
    our process ends and closes its stdin (``pyspark.java_gateway``).
    """
    import logging

    for name in ("py4j", "pyspark"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    if process is None:
        context = SparkContext._active_spark_context
        if context is not None:
            with contextlib.suppress(Exception):  # best effort on the way out
                context.cancelAllJobs()
        return
    process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
