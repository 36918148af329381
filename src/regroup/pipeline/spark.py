"""The SparkSession: embedded ``local[*]`` by default, a cluster with ``master``.

Run the pipeline either through ``regroup sweep|analyze --master URL`` or with
standard ``spark-submit`` (then the session the launcher made is reused:
``getOrCreate`` returns it and ``master`` is left to the launcher).

Spark's log noise is kept away from the user: the log level is set to
``ERROR`` as soon as the context exists, the console progress bar and the web
UI are off, and local runs use few shuffle partitions (Spark's default of 200
is meant for clusters; our tables are per run and small).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_MASTER", "build_session"]

DEFAULT_MASTER = "local[*]"
#: Shuffle partitions for ``local[...]`` masters (cluster runs keep Spark's setting).
LOCAL_SHUFFLE_PARTITIONS = 4


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


def _quiet_log4j2_file(level: str) -> str:
    """A log4j2 properties file (in the temp dir) that keeps the JVM's start-up quiet."""
    path = Path(tempfile.gettempdir()) / f"regroup-log4j2-{level.lower()}.properties"
    text = _LOG4J2.format(level=level.lower())
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return str(path)


def build_session(
    master: str | None = None,
    *,
    app_name: str = "regroup",
    log_level: str = "ERROR",
    shuffle_partitions: int | None = None,
) -> SparkSession:
    """A SparkSession for the pipeline (``master`` None: ``local[*]`` unless spark-submit set one).

    The Python workers run this interpreter (``PYSPARK_PYTHON``), so they can
    import ``regroup`` and pyarrow from the same environment as the driver; on
    a cluster, ship ``regroup`` with ``--py-files`` or install it on the nodes.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    # Under spark-submit the Python driver is started with a gateway to the launcher's JVM,
    # whose --master (or spark-defaults.conf) decides; otherwise we default to local[*].
    launched = bool(os.environ.get("PYSPARK_GATEWAY_PORT"))
    effective = master or (None if launched else DEFAULT_MASTER)
    if effective is not None:
        builder = builder.master(effective)
    builder = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    if effective is not None and effective.startswith("local"):
        builder = builder.config(
            "spark.sql.shuffle.partitions",
            str(shuffle_partitions or LOCAL_SHUFFLE_PARTITIONS),
        ).config(
            "spark.driver.extraJavaOptions",
            f"-Dlog4j2.configurationFile={_quiet_log4j2_file(log_level)}",
        )
    elif shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(log_level)
    return session
