"""``regroup replay``: the case study gives its expected output; bad scripts fail in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from regroup.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


KIP_848 = ["--config", "regroup.consumer.semantics=kip-848"]


def test_case_study_example_matches_expected_output(capsys: pytest.CaptureFixture[str]) -> None:
    """Under the design document's semantics the KIP's case study replays exactly as before."""
    assert main(["replay", *KIP_848, str(EXAMPLES / "replay-case-study.json")]) == 0
    out = capsys.readouterr().out
    expected = (EXAMPLES / "replay-case-study.expected.jsonl").read_text()
    assert out.splitlines() == expected.splitlines()


def test_case_study_under_kafka_semantics_matches_its_own_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The default (Kafka 4.0): B and C wait at the target epoch, not at epoch 0."""
    assert main(["replay", str(EXAMPLES / "replay-case-study.json")]) == 0
    out = capsys.readouterr().out
    expected = (EXAMPLES / "replay-case-study.kafka.expected.jsonl").read_text()
    assert out.splitlines() == expected.splitlines()
    lines = [json.loads(line) for line in out.splitlines()]
    b_joins = next(line for line in lines if (line["response"] or {}).get("member_id") == "B")
    assert b_joins["response"]["member_epoch"] == 2


def test_replay_config_flag_overrides_the_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"config": {"regroup.consumer.semantics": "kafka"}, "steps": []}))
    assert main(["replay", "--config", "regroup.consumer.semantics=bogus", str(path)]) == 2
    assert "regroup.consumer.semantics must be kafka or kip-848" in capsys.readouterr().err
    assert main(["replay", "--config", "nonsense", str(path)]) == 2
    assert "--config expects NAME=VALUE" in capsys.readouterr().err


def test_case_study_example_shows_the_kip_epochs(capsys: pytest.CaptureFixture[str]) -> None:
    main(["replay", *KIP_848, str(EXAMPLES / "replay-case-study.json")])
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


# -- the format extensions: timers and member states ----------------------------------------------


def _join(member: str) -> dict[str, object]:
    return {
        "request": "ConsumerGroupHeartbeat",
        "data": {
            "group_id": "g",
            "member_id": member,
            "member_epoch": 0,
            "rebalance_timeout_ms": 300000,
            "subscribed_topic_names": ["foo"],
            "topic_partitions": [],
        },
    }


def _lines(tmp_path: Path, script: object, capsys: pytest.CaptureFixture[str]) -> list[Any]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    assert main(["replay", str(path)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_output_keys_are_the_contract_plus_timers_and_member_states(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["replay", str(EXAMPLES / "replay-case-study.json")])
    for line in capsys.readouterr().out.splitlines():
        assert list(json.loads(line)) == [
            "step",
            "now_ms",
            "kind",
            "response",
            "records",
            "groups",
            "timers",
            "member_states",
        ]


def test_timers_and_member_states_per_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _lines(tmp_path, {"topics": {"foo": 2}, "steps": [_join("A"), _join("B")]}, capsys)
    assert lines[0]["timers"] == [{"key": "consumer-session-g-A", "deadline_ms": 45000}]
    b = lines[1]["member_states"]["g"]["B"]
    assert (b["state"], b["member_epoch"], b["previous_member_epoch"]) == (
        "UNRELEASED_PARTITIONS",
        2,
        0,
    )
    a = lines[1]["member_states"]["g"]["A"]
    assert (a["assigned"], a["pending_revocation"]) == ({"foo": [0, 1]}, {})


def test_scripted_assignor_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = {
        "topics": {"foo": 2},
        "steps": [{"assignor_result": {"group_id": "g", "error": "boom"}}, _join("A")],
    }
    lines = _lines(tmp_path, script, capsys)
    response = lines[1]["response"]
    assert response["error_code"] == "UNKNOWN_SERVER_ERROR"
    # Kafka answers UNKNOWN_SERVER_ERROR without a message (handleOperationException)
    assert response["error_message"] is None
    assert lines[1]["records"] == []


def test_repeating_assignor_result_until_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = {
        "topics": {"foo": 4},
        "steps": [
            {"assignor_result": {"group_id": "g", "repeat": True, "members": {"A": {"foo": [0]}}}},
            _join("A"),
            _join("B"),  # the same result again: A keeps foo-0, B gets nothing
            {"assignor_result": {"group_id": "g", "members": {"A": {"foo": [1]}}}},
            _join("C"),  # the replacement, used once
            _join("D"),  # then the real assignor
        ],
    }
    lines = _lines(tmp_path, script, capsys)
    targets = [
        {
            m["member_id"]: m["target_assignment"]
            for m in line["groups"].get("g", {"members": []})["members"]
        }
        for line in lines
    ]
    assert _target_parts(targets[1]["A"]) == [0]
    assert _target_parts(targets[2]["A"]) == [0] and _target_parts(targets[2]["B"]) == []
    assert _target_parts(targets[4]["A"]) == [1]
    assert sorted(p for t in targets[5].values() for p in _target_parts(t)) == [0, 1, 2, 3]


def _target_parts(target: Any) -> list[int]:
    return sorted(p for tp in target["topic_partitions"] for p in tp["partitions"])


def test_records_loaded_in_the_middle_of_a_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = {
        "topics": {"foo": 2},
        "steps": [
            {"records": [{"type": 3, "key": {"group_id": "g"}, "value": {"epoch": 4}}]},
            _join("A"),
        ],
    }
    lines = _lines(tmp_path, script, capsys)
    assert lines[0]["kind"] == "records" and lines[0]["records"] == []
    assert lines[0]["groups"]["g"]["group_epoch"] == 4
    assert lines[1]["response"]["member_epoch"] == 5
