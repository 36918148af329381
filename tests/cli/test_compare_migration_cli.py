"""``regroup compare --from``: migrating a classic group to KIP-848 against staying on it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from regroup.cli.main import main

SMALL = ["--members", "3", "--partitions", "6"]
PHASE_KEYS = {"idle_partition_seconds", "max_partition_pause_ms", "rebalances", "duplicates",
              "window_start_ms", "window_end_ms", "summary", "ratio_to_best"}  # fmt: skip


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["compare", *argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, dict)
    return data


def test_from_cooperative_json_extends_the_comparison_object(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--scenario", "rolling-bounce", "--from", "cooperative", *SMALL, "--seeds", "2"]
    data: dict[str, object] = _json([*argv, "--no-sensitivity"], capsys)
    assert list(data) == [
        "scenario", "members", "partitions", "from", "assumptions", "protocols", "verdict",
        "decision", "migration",
    ]  # fmt: skip
    assert data["from"] == "cooperative" and data["members"] == 3 and data["partitions"] == 6
    protocols = data["protocols"]
    migration = data["migration"]
    decision = data["decision"]
    assert isinstance(protocols, dict) and isinstance(migration, dict)
    assert isinstance(decision, dict)
    assert list(protocols) == ["cooperative", "consumer"]
    assert list(migration["protocols"]) == ["cooperative", "consumer"]
    assert list(decision) == [
        "winner", "tie", "by", "ratio", "mechanism", "sensitive_to", "phase",
    ]  # fmt: skip
    assert decision["phase"] == "after" and decision["by"] == "idle_partition_seconds"
    assert decision["winner"] in ("cooperative", "consumer", None)
    cut = migration["cut_ms"]
    for phase, start, end in (
        (migration["protocols"], migration["start_ms"], cut),
        (protocols, cut + 30000, migration["end_ms"]),
    ):
        for option, metrics in phase.items():
            assert metrics.keys() >= PHASE_KEYS and metrics["protocol"] == option
            assert (metrics["window_start_ms"], metrics["window_end_ms"]) == (start, end)
            idle = metrics["summary"]["idle_partition_seconds"]
            assert idle["min"] <= idle["median"] <= idle["max"]
            assert idle["min"] <= metrics["idle_partition_seconds"] <= idle["max"]
    # The verdict's figures are the table's: the migration's idle time and the after phase's.
    verdict = str(data["verdict"])
    medians = {
        f"{m['summary']['idle_partition_seconds']['median']:,.1f}"
        for m in [*protocols.values(), *migration["protocols"].values()]
    }
    named = set(re.findall(r"(\d[\d,]*\.\d) (?:idle )?partition-s", verdict))
    assert named and named <= medians
    assert migration["whole_run"]["consumer"]["violations"] == 0


def test_upgrade_to_consumer_is_no_longer_refused(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(["--scenario", "upgrade-to-consumer", "--seeds", "1", "--no-sensitivity"], capsys)
    assert data["from"] == "cooperative"  # the scenario's own group.protocol
    decision = data["decision"]
    assert isinstance(decision, dict) and decision["phase"] == "migration"


def test_from_eager_text_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "migration.html"
    argv = ["compare", "--scenario", "scale-out", "--from", "eager", *SMALL, "--seeds", "1"]
    assert main([*argv, "--no-sensitivity", "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "migrating from eager to KIP-848 against staying eager" in out
    assert "the migration, 30-" in out and "afterwards, " in out
    verdict = [line for line in out.splitlines() if line.startswith("verdict: ")]
    assert len(verdict) == 1
    assert "the migration itself (rolling restart to group.protocol=consumer)" in verdict[0]
    text = page.read_text(encoding="utf-8")
    assert text.count("<svg") == 2
    assert "staying eager (range), seed 0" in text
    assert "migrating to KIP-848 (range -&gt; uniform), seed 0" in text
    data = _json([*argv[1:], "--no-sensitivity"], capsys)
    assert data["from"] == "eager"
    assert list(data["protocols"]) == ["eager", "consumer"]  # type: ignore[call-overload]


def test_sensitive_to_tries_both_heartbeat_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--scenario", "scale-out", "--from", "cooperative", *SMALL, "--seeds", "1"]
    decision = _json(argv, capsys)["decision"]
    assert isinstance(decision, dict)
    tried = [(e["setting"], e["value"]) for e in decision["sensitive_to"]]
    assert ("heartbeat.interval.ms", 3000) in tried and ("heartbeat.interval.ms", 5000) in tried
    assert ("static_membership", True) in tried
    for entry in decision["sensitive_to"]:
        assert entry["winner"] in ("cooperative", "consumer", None)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scenario", "rolling-bounce", "--from", "consumer"], "--from must be eager or"),
        (["--scenario", "downgrade", "--from", "eager"], "cannot run after a migration to KIP-848"),
        (
            ["--scenario", "rolling-bounce", "--from", "eager", "--config",
             "group.consumer.migration.policy=DISABLED"],
            "refuses the online upgrade (Kafka GroupMetadataManager.validateOnlineUpgrade)",
        ),
        (
            ["--scenario", "rolling-bounce", "--from", "cooperative", *SMALL, "--config",
             "group.consumer.max.size=2"],
            "3 members exceed group.consumer.max.size=2",
        ),
        (["--scenario", "rolling-bounce", "--from", "eager", "--members", "0"], "needs members"),
    ],
)  # fmt: skip
def test_impossible_migrations_are_one_line_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("scenario", "source"),
    [("rolling-bounce", "cooperative"), ("scale-out", "eager"), ("upgrade-to-consumer", "eager")],
)
def test_every_number_of_the_mechanism_and_the_migration_cost_is_a_table_cell(
    scenario: str, source: str
) -> None:
    from regroup.cli.compare import migration_rows
    from regroup.sim.migration import compare_migration
    from regroup.sim.scenario import builtin_scenario

    comparison = compare_migration(
        builtin_scenario(scenario), source, members=3, partitions=6, seeds=2, sensitivity=False
    )
    cells = {n for row in migration_rows(comparison) for c in row for n in _numbers(c)}
    decision = comparison.decision
    assert decision is not None
    assert set(_numbers(decision.mechanism)) <= cells
    # The verdict's figures up to the break-even and the configs: the mechanism's and the
    # migration's cost, after the size and the seeds.
    text = re.split(rf"; it (?:pays|costs)|; {source} ran at", comparison.verdict)[0]
    assert set(_numbers(text.split("): ", 1)[1])) <= cells | {"848"}
    if decision.winner is not None:
        phase = comparison.deciding
        best = phase.protocols[decision.winner].summary("idle_partition_seconds").median
        assert all(
            (runs.summary("idle_partition_seconds").median or 0) > (best or 0)
            for name, runs in phase.protocols.items()
            if name != decision.winner
        )


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d[\d,]*(?:\.\d+)?", text)
