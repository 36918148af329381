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
* the console progress bar and the web UI are off, and local runs use few
  shuffle partitions (Spark's default of 200 is meant for clusters).

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

import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_MASTER", "NOISE", "build_session", "is_noise"]

DEFAULT_MASTER = "local[*]"
#: Shuffle partitions for ``local[...]`` masters (cluster runs keep Spark's setting).
LOCAL_SHUFFLE_PARTITIONS = 4

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
    driver_memory: str | None = None,
) -> SparkSession:
    """A SparkSession for the pipeline (``master`` None: ``local[*]`` unless spark-submit set one).

    The Python workers run this interpreter (``PYSPARK_PYTHON``), so they can
    import ``regroup`` and pyarrow from the same environment as the driver; on
    a cluster, ship ``regroup`` with ``--py-files`` or install it on the nodes.
    ``driver_memory`` (e.g. ``"2g"``) only applies when we launch the JVM.
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
    if effective is not None and effective.startswith("local"):
        settings["spark.sql.shuffle.partitions"] = str(
            shuffle_partitions or LOCAL_SHUFFLE_PARTITIONS
        )
        settings["spark.driver.extraJavaOptions"] = (
            f"-Dlog4j2.configurationFile={_quiet_log4j2_file(log_level)}"
        )
    elif shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
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
