"""Where a pipeline command writes: ``--out`` as a local directory or any URI Spark writes.

``--out`` is either a local path (``out/demo``, ``/data/x``), a ``file://`` URI
(the same, spelled as a URI), or a URI of any filesystem Hadoop's
``FileSystem`` knows on the cluster (``hdfs://nn:8020/regroup/demo``,
``s3a://bucket/demo``, ``abfs://...``). The Parquet tables are always written
by Spark's writers (so on a cluster the executors write them where they run);
the two small text files (``report.html``, ``grid.json``) are written by the
driver: with Python's file API for a local directory, through the JVM's
Hadoop ``FileSystem`` (the layer Spark's writers use, with the session's
Hadoop configuration) for any other scheme.

The output is checked *before* any work, so a mistake costs a second, not a
sweep: a local directory must be creatable and writable and must not be an
existing file (``check_local``, before Spark starts); a URI's filesystem must
be reachable, the path must not be a file, and it is created (``check_remote``,
once the session exists). Each failure is one line (``OutputError``).

A URI naming its namenode by host and port (``hdfs://nn:8020/...``, also
``webhdfs``/``swebhdfs``) is checked before Spark starts as well
(``check_reachable``): the host must resolve and the port accept a connection
within seconds (Hadoop's client retries an unreachable namenode for minutes). A
URI without a port may name an HA nameservice that only the cluster's
``hdfs-site.xml`` resolves, and other schemes name buckets, not hosts: those are
left to ``check_remote``.

Spark's writers replace a table's whole directory (``mode("overwrite")``), so a
local ``--out`` that already holds files must be a previous regroup output:
every entry is a name in ``OUTPUT_NAMES``, and a table directory holds only
what Spark's Parquet writer puts there (``part-*`` files, ``_SUCCESS``, hidden
checksums, ``key=value`` partition folders). Anything else (a user's notes in
``events/``) is refused before any work, naming the file, rather than deleted.
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["OUTPUT_NAMES", "Output", "OutputError"]

#: Every file and table directory a pipeline command writes at the top of ``--out``:
#: ``sweep``/``demo`` (runs, events, grid.json), ``analyze`` (its tables, report.html),
#: ``history`` (events, its tables, history.json).
OUTPUT_NAMES = frozenset(
    {
        "runs",
        "events",
        "ownership",
        "idle",
        "metrics",
        "labels",
        "violations",
        "rebalances",
        "members_left",
        "findings",
        "report.html",
        "grid.json",
        "history.json",
    }
)


def _written_by_spark(name: str) -> bool:
    """A name Spark's Parquet writer puts in a table directory."""
    return (
        name.startswith(("part-", ".", "_SUCCESS", "_committed_", "_started_"))
        or name == "_temporary"
        or "=" in name
    )


def foreign_file(root: Path) -> Path | None:
    """The first file or folder under ``root`` that regroup did not write, else ``None``."""
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".regroup-write-check-"):
            continue
        if entry.name not in OUTPUT_NAMES:
            return entry
        if not entry.is_dir():
            continue
        for folder, dirs, files in os.walk(entry):
            for name in sorted([*dirs, *files]):
                if not _written_by_spark(name):
                    return Path(folder) / name
    return None


class OutputError(ValueError):
    """``--out`` cannot be written (one-line message naming the cause)."""


class Output:
    """The output location of one command: ``join`` names a table, ``write_text`` a file."""

    def __init__(self, out: str | Path) -> None:
        text = str(out)
        if not text.strip():
            raise OutputError("--out is empty")
        parsed = urlparse(text)
        # A one-letter scheme is a Windows drive (C:\\...), not a URI.
        self.is_uri = len(parsed.scheme) > 1 and "://" in text
        if self.is_uri and parsed.scheme == "file":
            self.local: Path | None = Path(parsed.path)
        elif self.is_uri:
            self.local = None
        else:
            self.local = Path(text)
        #: What Spark's writers and readers are given: a URI, or the local path as text.
        self.root = text.rstrip("/") if self.local is None else str(self.local)

    def __str__(self) -> str:
        return self.root

    def join(self, name: str) -> str:
        """The location of ``name`` inside the output (a table directory or a file)."""
        if self.local is not None:
            return str(self.local / name)
        return f"{self.root}/{name}"

    # -- checks, before the work -----------------------------------------------------------

    def check_local(self) -> None:
        """A local output: an existing file, an unwritable directory or one that cannot be
        created is refused (``OutputError``); otherwise the directory now exists."""
        path = self.local
        if path is None:
            return
        if path.exists() and not path.is_dir():
            raise OutputError(f"--out {path} is an existing file, not a directory")
        if path.is_dir():
            foreign = foreign_file(path)
            if foreign is not None:
                raise OutputError(
                    f"--out {path} is not a previous regroup output: it holds "
                    f"{foreign.relative_to(path)}, which regroup did not write; give a new "
                    "or empty directory, or move that out"
                )
        try:
            path.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise OutputError(f"--out {path}: a parent of it is a file, not a directory") from None
        except OSError as error:
            raise OutputError(f"--out {path} cannot be created: {error.strerror}") from None
        try:
            # The writers create files and directories in it: try one of each.
            fd, probe = tempfile.mkstemp(prefix=".regroup-write-check-", dir=path)
            os.close(fd)
            os.unlink(probe)
        except OSError as error:
            raise OutputError(f"--out {path} is not writable: {error.strerror}") from None

    #: Schemes whose URI authority is the namenode's host and port.
    NAMENODE_SCHEMES = ("hdfs", "webhdfs", "swebhdfs")
    #: Seconds a namenode has to accept the connection of ``check_reachable``.
    CONNECT_TIMEOUT_S = 5.0

    def check_reachable(self) -> None:
        """A namenode URI with a port: its host resolves and accepts a TCP connection."""
        if self.local is not None:
            return
        parsed = urlparse(self.root)
        try:
            port = parsed.port
        except ValueError:
            raise OutputError(f"--out {self.root}: the port is not a number 0-65535") from None
        if parsed.scheme.lower() not in self.NAMENODE_SCHEMES or not parsed.hostname or not port:
            return
        try:
            addresses = socket.getaddrinfo(parsed.hostname, port, type=socket.SOCK_STREAM)
        except OSError as error:
            raise OutputError(
                f"--out {self.root}: cannot resolve {parsed.hostname}: {error.strerror or error}"
            ) from None
        family, kind, proto, _, address = addresses[0]
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.settimeout(self.CONNECT_TIMEOUT_S)
                probe.connect(address)
        except OSError as error:
            reason = error.strerror or "timed out"
            raise OutputError(
                f"--out {self.root}: cannot connect to {parsed.hostname}:{port}: {reason}"
            ) from None

    def check_remote(self, spark: SparkSession) -> None:
        """A URI output: its filesystem answers, the path is not a file; it is created."""
        if self.local is not None:
            return
        try:
            fs, path = self._filesystem(spark, self.root)
            if fs.exists(path) and not fs.getFileStatus(path).isDirectory():
                raise OutputError(f"--out {self.root} is an existing file, not a directory")
            fs.mkdirs(path)
        except OutputError:
            raise
        except Exception as error:  # a py4j error from Hadoop: its root cause, one line
            from regroup.pipeline.spark import failure_cause

            raise OutputError(f"--out {self.root}: {failure_cause(error)}") from None

    # -- the driver's files ---------------------------------------------------------------

    def write_text(self, spark: SparkSession | None, name: str, text: str) -> str:
        """Write ``name`` (UTF-8) inside the output; its location."""
        target = self.join(name)
        if self.local is not None:
            Path(target).write_text(text, encoding="utf-8")
            return target
        if spark is None:
            raise OutputError(f"--out {self.root}: writing a URI needs the Spark session")
        fs, path = self._filesystem(spark, target)
        stream = fs.create(path, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        return target

    @staticmethod
    def _filesystem(spark: SparkSession, location: str) -> tuple[Any, Any]:
        """Hadoop's ``FileSystem`` for ``location`` and its ``Path``, through the JVM."""
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        path = jvm.org.apache.hadoop.fs.Path(location)
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        return path.getFileSystem(conf), path
