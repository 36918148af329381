"""``regroup history`` end to end on Spark: a multi-broker log set, --json, --out, exit 2."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from regroup.cli.main import main
from regroup.history.synth import TruthRebalance, write_cluster_logs

pytestmark = pytest.mark.slow  # Spark: a JVM and four commands

START = 1_795_000_000_000
DOCS = Path(__file__).parents[2] / "docs" / "formats" / "history-json.md"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from regroup.pipeline.spark import build_session

    # Shared with the command (getOrCreate); the pipeline tests' session fixture stops it.
    yield build_session("local[1]", app_name="regroup-tests", shuffle_partitions=1)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[TruthRebalance]]:
    root = tmp_path_factory.mktemp("cluster")
    truth = write_cluster_logs(root, brokers=3, groups=3, version="3.6", move_at=START + 3_000_000)
    # one broker's log rotated and compressed, one behind docker-compose's prefix
    rotated = root / "broker-1" / "server.log"
    (root / "broker-1" / "server.log.2026-11-18-11.gz").write_bytes(
        gzip.compress(rotated.read_bytes())
    )
    rotated.unlink()
    prefixed = root / "broker-2" / "server.log"
    lines = prefixed.read_text(encoding="utf-8").splitlines()
    prefixed.write_text("".join(f"kafka-2  | {line}\n" for line in lines), encoding="utf-8")
    return root, truth


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["history", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _ms(text: str | None) -> int | None:
    from regroup.history.lines import timestamp_ms

    parsed = timestamp_ms(text) if text else None
    return None if parsed is None else parsed[0]


def test_json_recovers_every_rebalance_of_a_multi_broker_cluster(
    spark: Any, cluster: tuple[Path, list[TruthRebalance]], capsys: pytest.CaptureFixture[str]
) -> None:
    root, truth = cluster
    code, out, err = _run(capsys, str(root), "--json")
    assert code == 0, err
    result = json.loads(out)
    total = sum(
        len(gzip.decompress(f.read_bytes()).splitlines())
        if f.suffix == ".gz"
        else len(f.read_bytes().splitlines())
        for f in root.rglob("server.log*")
    )
    assert result["lines_read"] == total
    assert result["lines_unrecognized"] == 0
    (family,) = result["formats"]
    assert family["family"] == "scala-group-coordinator" and family["kafka_versions"] == "3.2-3.9"
    assert result["lines_recognized"] == family["lines"]
    groups = {g["group_id"]: g for g in result["groups"]}
    assert set(groups) == {t.group_id for t in truth}
    for group_id, group in groups.items():
        expected = [t for t in truth if t.group_id == group_id]
        got = [
            (
                r["generation"],
                _ms(r["started_at"]),
                _ms(r["stabilized_at"]),
                r["members"],
                r["reason_class"],
            )
            for r in group["rebalances"]
        ]
        assert got == [
            (t.generation, t.started_ms, t.stabilized_ms, t.members, t.reason_class)
            for t in expected
        ]
        assert all(
            r["duration_ms"] == _ms(r["stabilized_at"]) - _ms(r["started_at"])  # type: ignore[operator]
            for r in group["rebalances"]
        )
        assert len(group["coordinator_moves"]) == 1
        assert group["rebalance_protocol"] == "eager"
    kinds = {f["kind"] for f in result["findings"]}
    assert "rolling_deploy_without_static" in kinds
    assert all(f["evidence"] for f in result["findings"])


def test_json_fields_are_the_documented_ones(
    spark: Any, cluster: tuple[Path, list[TruthRebalance]], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = cluster
    code, out, _ = _run(capsys, str(root), "--json", "--group", "group-001")
    assert code == 0
    result = json.loads(out)
    assert [g["group_id"] for g in result["groups"]] == ["group-001"]
    documented = set(re.findall(r"^\| `([a-z_]+)`", DOCS.read_text(encoding="utf-8"), re.M))
    seen: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                seen.add(key)
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(result)
    assert seen <= documented, sorted(seen - documented)


def test_out_writes_tables_events_and_the_report(
    spark: Any,
    cluster: tuple[Path, list[TruthRebalance]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root, truth = cluster
    out = tmp_path / "out"
    incident = tmp_path / "incident.toml"
    code, _, err = _run(
        capsys,
        str(root),
        "--out",
        str(out),
        "--group",
        "group-002",
        "--scenario-out",
        str(incident),
        "--partitions",
        "12",
    )
    assert code == 0, err
    rebalances = spark.read.parquet(str(out / "rebalances")).collect()
    assert len(rebalances) == len([t for t in truth if t.group_id == "group-002"])
    from regroup.pipeline.logs import read_events

    events = read_events(spark, out / "events")
    kinds = {row.kind for row in events.select("kind").distinct().collect()}
    assert {"rebalance_started", "generation_bumped", "member_left", "member_joined"} <= kinds
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "group-002" in page and "<svg" in page and "regroup compare --scenario" in page
    from regroup.sim.scenario import load_scenario

    scenario = load_scenario(str(incident))
    assert scenario.topics == {"events": 12} and scenario.members == 6
    assert "regroup compare --scenario" in err


def test_a_damaged_gzip_is_named_and_the_rest_is_read(
    spark: Any,
    cluster: tuple[Path, list[TruthRebalance]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root, _ = cluster
    packed = (root / "broker-1" / "server.log.2026-11-18-11.gz").read_bytes()
    damaged = tmp_path / "server.log.1.gz"
    damaged.write_bytes(packed[: len(packed) // 2])
    code, out, err = _run(capsys, str(damaged), str(root / "broker-0"), "--json")
    assert code == 0
    assert f"{damaged}: damaged gzip" in err
    files = {f["path"]: f for f in json.loads(out)["files"]}
    assert files[str(damaged)]["error"] and files[str(damaged)]["lines_recognized"] > 0


def test_logs_with_no_coordinator_line_exit_2(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    noise = tmp_path / "app.log"
    noise.write_text(
        "[2026-12-02 14:03:11,123] INFO started (x.Y)\nnot a log line\n", encoding="utf-8"
    )
    code, out, err = _run(capsys, str(noise))
    assert code == 2 and out == ""
    assert str(noise) in err and "formats tried: scala-group-coordinator 1.1-4.3" in err
    assert "Traceback" not in err


def test_bad_paths_and_options_exit_2_before_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, str(tmp_path / "missing.log"))
    assert code == 2 and "no such file or directory" in err
    code, _, err = _run(capsys, str(tmp_path), "--from", "yesterday")
    assert code == 2 and "cannot read the time" in err
    code, _, err = _run(capsys, str(tmp_path), "--scenario-out", str(tmp_path / "x.yaml"))
    assert code == 2 and ".toml or .json" in err
    code, _, err = _run(capsys, str(tmp_path), "--partitions", "3")
    assert code == 2 and "go with --scenario-out" in err
