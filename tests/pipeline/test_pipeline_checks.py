"""Refusals on the Spark side: every mistake is one line and exit 2, found
before any work (no Spark, no simulation), and a Spark failure is one line naming its cause."""

from __future__ import annotations

import contextlib
import io
import json
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from regroup.cli.main import main
from regroup.pipeline.output import Output, OutputError
from regroup.pipeline.spark import MasterError, check_master, failure_cause

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

COMMANDS = {
    "sweep": ["sweep", "--scenario", "crash", "--members", "2", "--partitions", "2"],
    "demo": ["demo", "--quick"],
    "analyze": ["analyze", "LOG"],
}


def _one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    started = time.monotonic()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"regroup {argv[0]}: error: ") and err.count("\n") == 1, err
    # found up front: no JVM was started (that alone takes seconds); not a timing assertion
    # on the work itself, only that none of it happened
    assert time.monotonic() - started < 30
    return err


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """A real event log, from ``regroup simulate --events``."""
    path = tmp_path / "run.jsonl"
    argv = ["simulate", "--scenario", "crash", "--members", "2", "--partitions", "2"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*argv, "--json", "--events", str(path)]) == 0
    return path


def _argv(command: str, log: Path, *extra: str) -> list[str]:
    return [str(log) if a == "LOG" else a for a in COMMANDS[command]] + list(extra)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_out_that_is_an_existing_file_is_refused_up_front(
    command: str, tmp_path: Path, log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    existing = tmp_path / "taken"
    existing.write_text("mine")
    err = _one_line_exit_2(_argv(command, log, "--out", str(existing)), capsys)
    assert "is an existing file" in err
    assert existing.read_text() == "mine"  # nothing lost


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_out_below_a_file_is_refused_up_front(
    command: str, tmp_path: Path, log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    err = _one_line_exit_2(_argv(command, log, "--out", str(tmp_path / "file" / "out")), capsys)
    assert "is a file, not a directory" in err or "cannot be created" in err


@pytest.mark.skipif(
    not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() == 0,
    reason="root writes into read-only directories",
)
def test_out_unwritable_is_refused_up_front(
    tmp_path: Path, log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    err = _one_line_exit_2(_argv("sweep", log, "--out", str(locked)), capsys)
    assert "not writable" in err


def test_output_check_local_names_an_unwritable_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe write is what finds an unwritable directory (root cannot be locked out,
    so the refusal of the OS is simulated here)."""
    import tempfile

    def refuse(**_: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(OutputError, match="is not writable: Permission denied"):
        Output(tmp_path / "out").check_local()


@pytest.mark.parametrize(
    ("master", "message"),
    [
        ("spark//127.0.0.1:7077", "is not a Spark master URL"),
        ("spark://127.0.0.1", "is not a Spark master URL"),
        ("local[0]", "is not a Spark master URL"),
        ("yarn-client", "is not a Spark master URL"),
        ("spark://127.0.0.1:99999", "out of range"),
    ],
)
def test_bad_master_url_names_the_forms_spark_accepts(
    master: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*COMMANDS["sweep"], "--master", master, "--out", str(tmp_path / "o")]
    assert message in _one_line_exit_2(argv, capsys)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_unreachable_master_fails_at_once_in_one_line(
    command: str, tmp_path: Path, log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    master = f"spark://127.0.0.1:{_closed_port()}"
    argv = _argv(command, log, "--master", master, "--out", str(tmp_path / "o"))
    err = _one_line_exit_2(argv, capsys)
    assert f"cannot reach the Spark master {master}" in err and "refused" in err


def test_check_master_accepts_what_spark_parses() -> None:
    for master in ("local", "local[2]", "local[*]", "local[4,3]", "local-cluster[2,1,1024]",
                   "yarn", "k8s://https://h:6443", None):  # fmt: skip
        check_master(master)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        check_master(f"spark://127.0.0.1:{_closed_port()},127.0.0.1:{port}")  # one answers
    with pytest.raises(MasterError):
        check_master("mesos")


def test_analyze_a_directory_of_non_event_files_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "grid.json").write_text(json.dumps({"scenarios": ["crash"]}, indent=2))
    err = _one_line_exit_2(["analyze", str(logs), "--out", str(tmp_path / "o")], capsys)
    assert "grid.json is not an event log" in err
    (logs / "grid.json").write_text(json.dumps({"scenarios": ["crash"]}))  # one line, no kind
    err = _one_line_exit_2(["analyze", str(logs), "--out", str(tmp_path / "o")], capsys)
    assert "grid.json is not an event log (line 1 has no event kind)" in err
    (logs / "grid.json").unlink()
    (logs / "notes.txt").write_text("hello")
    err = _one_line_exit_2(["analyze", str(logs), "--out", str(tmp_path / "o")], capsys)
    assert "no event logs" in err
    assert not (tmp_path / "o").exists()  # refused before anything was written


def test_analyze_a_sweep_output_instead_of_its_events_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "sweep"
    (out / "events" / "scenario=crash").mkdir(parents=True)
    (out / "metrics").mkdir()
    from regroup.pipeline.schema import EVENT_SCHEMA

    columns = {f.name: pa.array([], pa.string()) for f in EVENT_SCHEMA.fields}
    columns.pop("scenario")
    pq.write_table(pa.table(columns), out / "events" / "scenario=crash" / "part-0.parquet")
    pq.write_table(pa.table({"run_id": ["r"], "rebalances": [1]}), out / "metrics" / "m.parquet")
    err = _one_line_exit_2(["analyze", str(out), "--out", str(tmp_path / "o")], capsys)
    assert "is not an event table (did you mean its events/ directory?)" in err


class _Java:
    """A stand-in for a py4j JavaObject: a Java exception and its chain of causes."""

    def __init__(self, text: str, cause: _Java | None = None) -> None:
        self.text, self.cause = text, cause

    def getCause(self) -> _Java | None:
        return self.cause

    def equals(self, other: object) -> bool:
        return other is self

    def toString(self) -> str:
        return self.text


def test_failure_cause_is_the_root_cause_in_one_line() -> None:
    error = Exception("An error occurred while calling o42.parquet.\n: org.apache...\n\tat ...")
    error.java_exception = _Java(  # type: ignore[attr-defined]
        "org.apache.spark.SparkException: Job aborted.",
        _Java("java.io.FileNotFoundException: /x/part-0 (Permission denied)\n\tat java.io..."),
    )
    assert failure_cause(error) == "java.io.FileNotFoundException: /x/part-0 (Permission denied)"
    assert failure_cause(ValueError("plain\nsecond line")) == "plain"


def test_out_uri_of_an_unknown_filesystem_is_one_line(
    spark: SparkSession, log: Path, tmp_path: Path, capfd: Any
) -> None:
    """A URI is checked through Hadoop's FileSystem once Spark is up, before the work."""
    assert main(["analyze", str(log), "--out", "nosuch://bucket/out"]) == 2
    err = capfd.readouterr().err
    assert err.startswith("regroup analyze: error: --out nosuch://bucket/out: ")
    assert 'No FileSystem for scheme "nosuch"' in err and err.count("\n") == 1, err


def test_spark_failures_become_one_line(spark: SparkSession, tmp_path: Path) -> None:
    from regroup.cli.analyze import spark_failures
    from regroup.cli.errors import UsageError

    with (
        pytest.raises(UsageError, match=r"^Spark failed: .*PATH_NOT_FOUND") as raised,
        spark_failures(),
    ):
        spark.read.parquet(str(tmp_path / "nothing-here")).collect()
    assert "\n" not in str(raised.value)


def test_output_locations_keep_uris_whole() -> None:
    """pathlib would mangle ``hdfs://nn/x`` into ``hdfs:/nn/x``; Output joins URIs as text."""
    remote = Output("hdfs://namenode:8020/regroup/demo/")
    assert (
        remote.local is None and remote.join("events") == "hdfs://namenode:8020/regroup/demo/events"
    )
    assert Output("s3a://bucket/out").join("report.html") == "s3a://bucket/out/report.html"
    assert Output("file:///tmp/x").local == Path("/tmp/x")
    assert Output("out/demo").join("metrics") == str(Path("out/demo") / "metrics")


def test_output_writes_through_hadoops_filesystem(spark: SparkSession, tmp_path: Path) -> None:
    """The driver's files of a URI output go through the JVM's Hadoop FileSystem (here the
    ``file://`` one, taken the remote way) and a URI that is a file is refused."""
    target = tmp_path / "remote"
    output = Output(target.as_uri())
    output.local = None  # the path a hdfs:// or s3a:// output takes
    output.root = target.as_uri()
    output.check_remote(spark)
    assert target.is_dir()
    written = output.write_text(spark, "report.html", "<p>caf\u00e9</p>")
    assert written == f"{target.as_uri()}/report.html"
    assert (target / "report.html").read_text(encoding="utf-8") == "<p>caf\u00e9</p>"
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    as_file = Output(blocker.as_uri())
    as_file.local = None
    as_file.root = blocker.as_uri()
    with pytest.raises(OutputError, match="is an existing file"):
        as_file.check_remote(spark)


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    ("foreign", "named"),
    [("events/notes.txt", "events/notes.txt"), ("notes.txt", "notes.txt"), ("mine/a.csv", "mine")],
)
def test_out_holding_files_regroup_did_not_write_is_refused_and_kept(
    command: str,
    foreign: str,
    named: str,
    tmp_path: Path,
    log: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Spark replaces a table's whole directory: a user's file in ``events/`` was lost."""
    out = tmp_path / "out"
    (out / foreign).parent.mkdir(parents=True)
    (out / foreign).write_text("mine")
    err = _one_line_exit_2(_argv(command, log, "--out", str(out)), capsys)
    assert f"is not a previous regroup output: it holds {named}," in err
    assert "give a new or empty directory" in err
    assert (out / foreign).read_text() == "mine"


def test_a_previous_regroup_output_is_accepted(tmp_path: Path) -> None:
    """What Spark's Parquet writer and the commands leave is regroup's: it may be replaced."""
    table = tmp_path / "events" / "scenario=crash" / "run_id=r1"
    table.mkdir(parents=True)
    for name in ("part-00000-abc.snappy.parquet", ".part-00000-abc.snappy.parquet.crc"):
        (table / name).write_text("")
    for name in ("_SUCCESS", "._SUCCESS.crc"):
        (tmp_path / "events" / name).write_text("")
    (tmp_path / "runs").mkdir()
    (tmp_path / "report.html").write_text("<html>")
    (tmp_path / "grid.json").write_text("{}")
    Output(tmp_path).check_local()


def test_the_output_names_cover_every_analytics_table() -> None:
    pytest.importorskip("pyspark")
    from regroup.pipeline.analytics import TABLES
    from regroup.pipeline.output import OUTPUT_NAMES

    assert set(TABLES) <= OUTPUT_NAMES


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("hdfs://regroup-no-such-namenode.invalid:8020/out", "cannot resolve"),
        ("hdfs://127.0.0.1:1/out", "cannot connect to 127.0.0.1:1"),
        ("webhdfs://127.0.0.1:99999/out", "the port is not a number"),
    ],
)
def test_out_on_an_unreachable_namenode_fails_before_spark_starts(
    command: str, uri: str, message: str, log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hadoop's client retries an unreachable namenode for minutes (an unresolvable one
    took 64 s, most of it starting Spark): the host and port are tried first."""
    err = _one_line_exit_2(_argv(command, log, "--out", uri), capsys)
    assert f"--out {uri}: {message}" in err
