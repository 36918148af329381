"""``regroup replay``: the case study gives its expected output; bad scripts fail in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regroup.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_case_study_example_matches_expected_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(EXAMPLES / "replay-case-study.json")]) == 0
    out = capsys.readouterr().out
    expected = (EXAMPLES / "replay-case-study.expected.jsonl").read_text()
    assert out.splitlines() == expected.splitlines()


def test_case_study_example_shows_the_kip_epochs(capsys: pytest.CaptureFixture[str]) -> None:
    main(["replay", str(EXAMPLES / "replay-case-study.json")])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    final = lines[-1]["groups"]["case-study"]
    assert (final["group_epoch"], final["assignment_epoch"], final["group_state"]) == (
        3,
        3,
        "Stable",
    )
    epochs = {m["member_id"]: m["member_epoch"] for m in final["members"]}
    assert epochs == {"A": 3, "B": 3, "C": 3}


def _run(tmp_path: Path, script: object, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    code = main(["replay", str(path)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ([], "must be a JSON object"),
        ({"steps": [{"request": "Nope", "data": {}}]}, "unknown request 'Nope'"),
        ({"steps": [{"request": "ConsumerGroupHeartbeat", "data": {"x": 1}}]}, "unknown field 'x'"),
        ({"steps": [{"advance_ms": -1}]}, "non-negative"),
        ({"steps": [{"dance": 1}]}, "unknown step kind"),
        ({"config": {"no.such.config": 1}, "steps": []}, "unknown broker config"),
        ({"topics": {"foo": "three"}, "steps": []}, "expected a partition count"),
        ({"steps": [{"metadata": {"delete": ["ghost"]}}]}, "no topic 'ghost'"),
        ({"bogus": 1, "steps": []}, "unknown script field"),
        ({"initial_records": [{"type": 999}], "steps": []}, "initial_records[0]"),
    ],
)
def test_bad_scripts_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], script: object, message: str
) -> None:
    code, err = _run(tmp_path, script, capsys)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_not_json_and_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{nope")
    assert main(["replay", str(path)]) == 2
    assert "not JSON" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_metadata_steps_timers_and_initial_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = {
        "topics": {"foo": 2},
        "initial_records": [
            {"type": 3, "key": {"group_id": "g"}, "value": {"epoch": 4}},
        ],
        "steps": [
            {
                "request": "ConsumerGroupHeartbeat",
                "data": {
                    "group_id": "g",
                    "member_id": "m",
                    "member_epoch": 0,
                    "rebalance_timeout_ms": 1000,
                    "subscribed_topic_names": ["foo"],
                    "topic_partitions": [],
                },
            },
            {"metadata": {"set": {"foo": 4}}},
            {"advance_ms": 45000},
        ],
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(script))
    assert main(["replay", str(path)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["response"]["member_epoch"] == 5
    assert lines[1]["groups"]["g"]["group_epoch"] == 6
    # the member never heartbeats again: the session timeout removes it.
    assert lines[2]["groups"]["g"]["members"] == []
    assert any(
        r["name"] == "ConsumerGroupMemberMetadata" and r["value"] is None
        for r in lines[2]["records"]
    )
