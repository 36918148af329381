"""``regroup assign``: the JSON contract, and one-line errors for bad input."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from regroup.cli.assign import AssignInputError, assign_document
from regroup.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stdin: str, *args: str
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["assign", "-", *args])
    out, err = capsys.readouterr()
    return code, out, err


CLASSIC = {
    "assignor": "range",
    "topics": {"t1": 3, "t2": 2},
    "members": [
        {"member_id": "c1", "topics": ["t1", "t2"]},
        {"member_id": "c2", "topics": ["t1"]},
    ],
}


def test_classic_range_output_contract(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(monkeypatch, capsys, json.dumps(CLASSIC))
    assert code == 0, err
    # Kafka's range: t1 split 2/1 in member order, t2 only to its one subscriber.
    assert json.loads(out) == {
        "assignment": {"c1": ["t1-0", "t1-1", "t2-0", "t2-1"], "c2": ["t1-2"]},
        "user_data": {"c1": None, "c2": None},
    }


def test_every_input_member_is_present(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {
        "assignor": "roundrobin",
        "topics": {"t1": 1},
        "members": [{"member_id": m, "topics": ["t1"]} for m in ("a", "b", "c")],
    }
    code, out, _ = run_cli(monkeypatch, capsys, json.dumps(doc))
    assert code == 0
    assert json.loads(out)["assignment"] == {"a": ["t1-0"], "b": [], "c": []}


def test_sticky_user_data_is_base64(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {
        "assignor": "sticky",
        "topics": {"t": 2},
        "members": [{"member_id": "a", "topics": ["t"]}],
    }
    code, out, _ = run_cli(monkeypatch, capsys, json.dumps(doc))
    assert code == 0
    result = json.loads(out)
    assert result["assignment"] == {"a": ["t-0", "t-1"]}
    # The sticky assignor's user data travels in the Subscription, not the Assignment.
    assert result["user_data"] == {"a": None}


def test_consumer_uniform_output_contract(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads((EXAMPLES / "assign-uniform.json").read_text())
    code, out, err = run_cli(monkeypatch, capsys, json.dumps(doc))
    assert code == 0, err
    assignment = json.loads(out)["assignment"]
    assert set(assignment) == {"A", "B"}
    owned = [(t, p) for member in assignment.values() for t, ps in member.items() for p in ps]
    assert sorted(owned) == sorted([("foo", 0), ("foo", 1), ("foo", 2), ("bar", 0), ("bar", 1)])
    sizes = sorted(sum(len(ps) for ps in member.values()) for member in assignment.values())
    assert sizes == [2, 3]


def test_examples_in_the_repository_run(capsys: pytest.CaptureFixture[str]) -> None:
    for example in sorted(EXAMPLES.glob("assign-*.json")):
        assert main(["assign", str(example)]) == 0, example
        assert "assignment" in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({**CLASSIC, "assignor": "nope"}, "unknown assignor 'nope'"),
        ({**CLASSIC, "colour": 1}, "unknown field 'colour'"),
        ({"topics": {}, "members": []}, "missing field 'assignor'"),
        (
            {
                **CLASSIC,
                "members": [{"member_id": "a", "topics": ["t1"], "owned_partitions": ["t1-x"]}],
            },
            "cannot parse partition 't1-x'",
        ),
        ({**CLASSIC, "topics": {"t1": -1}}, "must not be negative"),
        ({**CLASSIC, "group_protocol": "streams"}, "group_protocol must be"),
        (
            {**CLASSIC, "members": [{"member_id": "a", "topics": ["t1"], "user_data": "%%%"}]},
            "base64",
        ),
        (
            {
                "group_protocol": "consumer",
                "assignor": "uniform",
                "topics": {"f": {"id": "bad", "partitions": 1}},
                "members": [],
            },
            "topics.f.id",
        ),
        (
            {
                "group_protocol": "consumer",
                "assignor": "uniform",
                "topics": {"f": {"partitions": 1}},
                "members": [{"member_id": "a"}],
            },
            "missing field 'subscribed_topics'",
        ),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    document: object,
    message: str,
) -> None:
    code, out, err = run_cli(monkeypatch, capsys, json.dumps(document))
    assert code == 2
    assert out == ""
    assert message in err
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_not_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(monkeypatch, capsys, "{not json")
    assert code == 2
    assert "input is not JSON" in err


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["assign", str(tmp_path / "absent.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_batch_answers_every_line_in_order(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        json.dumps(CLASSIC),
        "{broken",
        json.dumps({**CLASSIC, "assignor": "nope"}),
        "",
        json.dumps(CLASSIC),
    ]
    code, out, _ = run_cli(monkeypatch, capsys, "\n".join(lines) + "\n", "--batch")
    assert code == 0
    answers = [json.loads(line) for line in out.splitlines()]
    assert len(answers) == 4
    assert answers[0] == answers[3]
    assert "assignment" in answers[0]
    assert answers[1]["error"].startswith("input is not JSON")
    assert "unknown assignor" in answers[2]["error"]


def test_console_script_prints_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**CLASSIC, "assignor": "nope"}))
    script = Path(sys.executable).with_name("regroup")
    result = subprocess.run(
        [str(script), "assign", str(bad)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert result.stderr.startswith("regroup assign: error: unknown assignor 'nope'")
    assert "Traceback" not in result.stderr


# -- null replica racks (Kafka: a replica on a broker without a rack) --------------------------


def _without_nulls(value: object) -> object:
    if isinstance(value, list):
        return [_without_nulls(v) for v in value if v is not None]
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_classic_null_replica_racks_are_no_rack(assignor: str) -> None:
    # Mixed: partition 1 has no rack at all, the others one rack beside a rackless broker;
    # Kafka's rack-aware rules run on the racks that are known (nulls are skipped).
    racks = {"t1": [["a", None], [None, None], ["b", None], [None, "a"]], "t2": [[None], [None]]}
    doc = {
        "assignor": assignor,
        "topics": {"t1": 4, "t2": 2},
        "partition_racks": racks,
        "members": [
            {"member_id": "c1", "topics": ["t1", "t2"], "rack": "b"},
            {"member_id": "c2", "topics": ["t1", "t2"], "rack": "a"},
        ],
    }
    with_nulls = assign_document(doc)
    assert with_nulls == assign_document({**doc, "partition_racks": _without_nulls(racks)})
    assert sorted(p for parts in with_nulls["assignment"].values() for p in parts) == [
        "t1-0", "t1-1", "t1-2", "t1-3", "t2-0", "t2-1"
    ]  # fmt: skip


def test_range_null_racks_only_turns_rack_awareness_off() -> None:
    # Kafka: RangeAssignorTest.testCoPartitionedAssignmentWithSameSubscription, nullRacks(3):
    # no broker has a rack, so the consumers' racks change nothing.
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    topic_list = ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"]
    doc = {
        "assignor": "range",
        "topics": topics,
        "partition_racks": {t: [[None] * 3] * n for t, n in topics.items()},
        "members": [
            {"member_id": f"consumer{i}", "topics": topic_list, "rack": rack}
            for i, rack in enumerate("abc")
        ],
    }
    assignment = assign_document(doc)["assignment"]
    assert {m: ", ".join(sorted(p)) for m, p in assignment.items()} == {
        "consumer0": "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1",
        "consumer1": "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2",
        "consumer2": "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3",
    }


def test_consumer_null_replica_racks_are_accepted() -> None:
    doc = {
        "group_protocol": "consumer",
        "assignor": "uniform",
        "topics": {"t": {"partitions": 2, "racks": [[None, "a"], [None]]}},
        "members": [{"member_id": "a", "subscribed_topics": ["t"], "rack": "a"}],
    }
    assert assign_document(doc) == {"assignment": {"a": {"t": [0, 1]}}}


def test_a_rack_that_is_neither_string_nor_null_is_refused() -> None:
    doc = {"assignor": "range", "topics": {"t": 1}, "partition_racks": {"t": [[5]]}, "members": []}
    with pytest.raises(AssignInputError, match=r"partition_racks.t\[0\] must be a string, got 5"):
        assign_document(doc)


# -- KIP-848 assignors and a subscribed topic that is not in the metadata ----------------------


def _consumer_doc(assignor: str, subscriptions: dict[str, list[str]]) -> dict[str, object]:
    return {
        "group_protocol": "consumer",
        "assignor": assignor,
        "topics": {"topic1": {"partitions": 3}},
        "members": [
            {"member_id": m, "subscribed_topics": names} for m, names in subscriptions.items()
        ],
    }


# Kafka: OptimizedUniformAssignmentBuilderTest / RangeAssignorTest
# .testOneMemberSubscribedToNonexistentTopic (one member, homogeneous) and
# UniformHeterogeneousAssignmentBuilderTest.testTwoMembersSubscribedToNonexistentTopics
# (heterogeneous); both of Kafka 4.0's assignors throw PartitionAssignorException for
# either subscription type.
NONEXISTENT_CASES = {
    "one_member": {"A": ["topic2"]},
    "two_members": {"A": ["topic3"], "B": ["topic2"]},
    "beside_an_existing_topic": {"A": ["topic1"], "B": ["topic1", "topic2"]},
}
KAFKA_MESSAGES = {
    "uniform": "which doesn't exist in the topic metadata.",
    "range": "Member is subscribed to a non-existent topic",
}


@pytest.mark.parametrize("assignor", ["uniform", "range"])
@pytest.mark.parametrize("case", list(NONEXISTENT_CASES))
def test_consumer_assignors_refuse_a_topic_without_metadata(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], assignor: str, case: str
) -> None:
    doc = _consumer_doc(assignor, NONEXISTENT_CASES[case])
    code, out, err = run_cli(monkeypatch, capsys, json.dumps(doc))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(f"regroup assign: error: the {assignor} ")
    assert KAFKA_MESSAGES[assignor] in err
    assert "names 'topic2', which is not in topics" in err


def test_batch_answers_a_topic_without_metadata_with_an_error_line_and_goes_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        _consumer_doc("uniform", {"A": ["topic1", "nope"]}),
        _consumer_doc("range", {"A": ["topic1"]}),
    ]
    code, out, _ = run_cli(monkeypatch, capsys, "\n".join(map(json.dumps, lines)), "--batch")
    assert code == 0
    first, second = (json.loads(line) for line in out.splitlines())
    assert set(first) == {"error"} and "names 'nope', which is not in topics" in first["error"]
    assert second == {"assignment": {"A": {"topic1": [0, 1, 2]}}}


def test_an_empty_consumer_group_has_nothing_to_refuse() -> None:
    assert assign_document(_consumer_doc("uniform", {})) == {"assignment": {}}
