"""``regroup compare``: the three protocols on one scenario, one table, one verdict."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from regroup.cli.main import main
from regroup.sim.comparison import Comparison, ProtocolRuns, decide, verdict

SMALL = ["--scenario", "rolling-bounce", "--members", "3", "--partitions", "6"]
#: What ``mechanism`` says for each metric it may name (``comparison._EXPLAINERS``).
MECHANISM_PHRASES = (
    ("paused_partitions", "pauses fewer partitions"),
    ("partitions_moved", "moves fewer partitions"),
    ("max_partition_pause_ms", "keeps its longest partition pause shorter"),
    ("rebalances", "needs fewer rebalances"),
    ("peak_lag", "lets less lag build up"),
)
METRIC_KEYS = {"idle_partition_seconds", "max_partition_pause_ms", "partitions_moved",
               "rebalances", "duplicates", "time_to_stable_ms", "violations"}  # fmt: skip


def test_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compare", *SMALL, "--seeds", "2", "--data", "restore_ms=5000", "--json"]
    assert main([*argv, "--no-sensitivity"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data) == [
        "scenario", "members", "partitions", "assumptions", "protocols", "verdict", "decision",
    ]  # fmt: skip
    assert data["members"] == 3 and data["partitions"] == 6
    assert list(data["decision"]) == ["winner", "tie", "by", "ratio", "mechanism", "sensitive_to"]
    assert data["decision"]["by"] == "idle_partition_seconds"
    assert data["decision"]["sensitive_to"] == []  # --no-sensitivity
    assert data["scenario"] == "rolling-bounce"
    assert data["assumptions"]["restore_ms"] == 5000
    assert data["assumptions"]["members"] == 3
    assert list(data["protocols"]) == ["eager", "cooperative", "consumer"]
    for protocol, metrics in data["protocols"].items():
        assert metrics.keys() >= METRIC_KEYS  # as simulate --json prints them
        assert metrics["protocol"] == protocol and metrics["seeds"] == 2
        idle = metrics["summary"]["idle_partition_seconds"]
        assert idle["min"] <= idle["median"] <= idle["max"]
    ratios = [m["ratio_to_best"]["idle_partition_seconds"] for m in data["protocols"].values()]
    assert min(ratios) == 1.0
    # With a 5 s restore, eager's stop-the-world rounds cost the most.
    assert max(ratios) == data["protocols"]["eager"]["ratio_to_best"]["idle_partition_seconds"]
    assert not data["verdict"].startswith("eager")


def test_table_assumptions_verdict_and_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "compare.html"
    assert main(["compare", *SMALL, "--seeds", "1", "--no-sensitivity", "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "KIP-848 (consumer)" in out and "idle partition-s" in out
    assert "rolling-bounce, 3 members x 6 partitions: medians" in out
    assert "assumptions" in out and "restore     none" in out
    verdicts = [line for line in out.splitlines() if line.startswith("verdict: ")]
    assert len(verdicts) == 1
    text = page.read_text()
    assert text.count("<svg") == 3 and "viewBox" not in text  # drawn at full size
    assert "eager (range), seed 0" in text and "KIP-848 (consumer) (uniform), seed 0" in text
    assert "http" not in text.replace("http://www.w3.org/2000/svg", "")


def _runs(protocol: str, idle: list[float], **other: float) -> ProtocolRuns:
    runs = ProtocolRuns(protocol, "a")
    for value in idle:
        metrics: dict[str, Any] = {
            "idle_partition_seconds": value, "max_partition_pause_ms": 100,
            "paused_partitions": 6, "partitions_moved": 2, "rebalances": 3,
            "duplicates": 0, "peak_lag": 10, "time_to_stable_ms": 1000,
            "partitions_revoked": 2, "pause_p50_ms": 50, "pause_p99_ms": 100,
            "unstable_ms": 200, "catch_up_s": 0.5,
        }  # fmt: skip
        metrics.update(other)
        runs.runs.append(metrics)
    return runs


def _comparison(eager: list[float], coop: list[float], kip848: list[float]) -> Comparison:
    return Comparison(
        "s",
        len(eager),
        {
            "eager": _runs("eager", eager, partitions_revoked=18),
            "cooperative": _runs("cooperative", coop),
            "consumer": _runs("consumer", kip848),
        },
        {"restore_ms": 5000, "topics": {"t": 6}},
    )


def test_overlapping_seed_ranges_are_a_tie_not_a_win() -> None:
    text = verdict(_comparison([50, 60, 70], [65, 75, 80], [90, 95, 99]))
    assert text.startswith("tie: the seeds' ranges of idle partition-seconds overlap")
    assert "eager 50-70" in text and "cooperative 65-80" in text


def test_a_separated_winner_is_named_with_its_mechanism() -> None:
    text = verdict(_comparison([300, 310, 320], [50, 55, 60], [70, 72, 75]))
    assert text.startswith("cooperative wins: 55 idle partition-s (median of 3 seeds)"), text
    assert "5.6x less than eager" in text and "1.31x less than KIP-848 (consumer)" in text
    assert "revokes only 2 partitions" in text and "for 5 s" in text
    eager_wins = verdict(_comparison([10, 11, 12], [50, 55, 60], [70, 72, 75]))
    assert eager_wins.startswith("eager wins") and "one stop-the-world round" in eager_wins


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scenario", "upgrade-double-bounce"], "compare runs all three protocols"),
        ([*SMALL, "--seeds", "0"], "--seeds must be >= 1"),
        ([*SMALL, "--html", "out.txt"], "--html must end in .html"),
        ([*SMALL, "--data", "restore=1"], "unknown [data] key 'restore'"),
        ([*SMALL, "--members", "100000000"], "at most 10,000"),
    ],
)
def test_bad_options_are_one_line_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_classic_session_timeout_reaches_kip848_through_the_coordinator(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["compare", *SMALL, "--seeds", "1", "--config", "session.timeout.ms=50000", "--json"]
    argv.append("--no-sensitivity")
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["assumptions"]["configs"]["session.timeout.ms"] == "50000"


# -- the decision as data -------------------------------------------------------------------


def _table_numbers(comparison: Comparison) -> set[str]:
    from regroup.cli.compare import table_rows

    return {number for row in table_rows(comparison) for c in row for number in _numbers(c)}


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d[\d,]*(?:\.\d+)?", text)


def test_seeds_that_agree_exactly_are_a_tie_not_a_win() -> None:
    # One seed each, 336.0 against 336.2: equal within the tolerance, no winner.
    same = _comparison([400.0], [336.2], [336.0])
    decision = decide(same)
    assert decision.winner is None and decision.tie
    assert verdict(same).startswith("tie: the medians of idle partition-seconds are within 5%")
    flat = _comparison([5.0, 5.0], [5.0, 5.0], [5.0, 5.0])  # ranges 5-5: a tie, not a win
    assert decide(flat).tie and decide(flat).ratio == 1.0


def test_a_static_rolling_bounce_with_a_restore_is_a_tie(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["compare", "--scenario", "rolling-bounce", "--members", "6", "--partitions", "24"]
    argv += ["--static", "--data", "restore_ms=5000", "--seeds", "1", "--no-sensitivity"]
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["decision"]["tie"] is True and data["decision"]["winner"] is None
    assert data["verdict"].startswith("tie")


def test_the_mechanism_names_only_table_numbers_and_a_metric_the_winner_is_best_by() -> None:
    cases = [
        _comparison([300, 310, 320], [50, 55, 60], [70, 72, 75]),
        _comparison([10, 11, 12], [50, 55, 60], [70, 72, 75]),
    ]
    # The winner has the longer pause: the sentence must not explain the win by it.
    longer = _comparison([300, 310, 320], [50, 55, 60], [70, 72, 75])
    for run in longer.protocols["cooperative"].runs:
        run["max_partition_pause_ms"] = 12500
    for run in longer.protocols["consumer"].runs:
        run["max_partition_pause_ms"] = 10000
    cases.append(longer)
    for comparison in cases:
        decision = decide(comparison)
        assert set(_numbers(decision.mechanism)) <= _table_numbers(comparison), decision
        for key, phrase in MECHANISM_PHRASES:
            if phrase in decision.mechanism:
                winner = decision.winner
                assert winner is not None
                mine = comparison.protocols[winner].summary(key).median
                assert all(
                    mine is not None and (runs.summary(key).median or 0) >= mine
                    for runs in comparison.protocols.values()
                ), (key, decision.mechanism)
    assert "longest partition pause" not in decide(longer).mechanism
    assert "how long a moved partition waits" not in verdict(longer)


def test_sensitive_to_names_both_heartbeat_defaults_and_is_found_by_running(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["compare", "--scenario", "scale-out", "--seeds", "1", "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    tried = {(entry["setting"], entry["value"]) for entry in data["decision"]["sensitive_to"]}
    assert {("heartbeat.interval.ms", 3000), ("heartbeat.interval.ms", 5000)} <= tried
    assert ("static_membership", True) in tried and ("restore_ms", 5000) in tried
    for entry in data["decision"]["sensitive_to"]:
        assert entry["winner"] in (None, "eager", "cooperative", "consumer")
    changed = [
        e for e in data["decision"]["sensitive_to"] if e["winner"] != data["decision"]["winner"]
    ]
    for entry in changed:  # the verdict says what the answer turns on
        assert f"{entry['setting']}=" in data["verdict"]
