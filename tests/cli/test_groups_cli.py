"""``regroup groups describe`` in the layout of Kafka's ``kafka-consumer-groups.sh --describe``.

Every test runs against a real ``regroup serve`` (``BackgroundServer``) over the wire; the
columns, messages and views follow ``org.apache.kafka.tools.consumer.group.ConsumerGroupCommand``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from regroup.cli.main import main
from regroup.server.background import BackgroundServer
from regroup.server.clients.wire_client import WireClient
from tests.cli.groups_server import MEMBER, server_with_group


@pytest.fixture
def running() -> Iterator[BackgroundServer]:
    """A server with topic ``t`` (2 partitions, 5 records in partition 0, 3 in 1) and a
    KIP-848 group ``k`` whose one member owns both partitions and committed offset 2 of
    partition 0 only."""
    with server_with_group(_commit_partition_0) as server:
        yield server


def _commit_partition_0(client: WireClient, beat: Any) -> None:
    committed = client.request(
        8,
        9,
        {
            "group_id": "k",
            "generation_id_or_member_epoch": beat.member_epoch,
            "member_id": MEMBER,
            "group_instance_id": None,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 2,
                            "committed_leader_epoch": 0,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        },
    )
    assert all(p.error_code.value == 0 for t in committed.topics for p in t.partitions)


def _describe(
    server: BackgroundServer, capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int, list[list[str]], str]:
    code = main(["groups", "describe", "--bootstrap-server", server.bootstrap, *argv])
    captured = capsys.readouterr()
    return code, [line.split() for line in captured.out.splitlines() if line], captured.err


def test_describe_default_is_one_row_per_partition(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, rows, err = _describe(running, capsys, "k")
    assert code == 0 and err == ""
    assert rows[0] == [
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
        "CONSUMER-ID", "HOST", "CLIENT-ID",
    ]  # fmt: skip
    # committed 2 of 5: lag 3; partition 1 has no commit: CURRENT-OFFSET and LAG are "-"
    assert rows[1:] == [
        ["k", "t", "0", "2", "5", "3", MEMBER, "127.0.0.1", "regroup-cli"],
        ["k", "t", "1", "-", "3", "-", MEMBER, "127.0.0.1", "regroup-cli"],
    ]
    code, same, _ = _describe(running, capsys, "--group", "k", "--offsets")
    assert code == 0 and same == rows


def test_describe_offsets_verbose_adds_the_leader_epoch(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, rows, _ = _describe(running, capsys, "k", "--offsets", "--verbose")
    assert code == 0
    assert rows[0][3] == "LEADER-EPOCH"
    assert rows[1][:5] == ["k", "t", "0", "0", "2"] and rows[2][3] == "-"


def test_describe_members_and_verbose_keep_the_kip848_epochs(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, rows, _ = _describe(running, capsys, "k", "--members")
    assert code == 0
    assert rows == [
        ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
        ["k", MEMBER, "127.0.0.1", "regroup-cli", "2"],
    ]
    code, rows, _ = _describe(running, capsys, "k", "--members", "--verbose")
    assert code == 0
    assert rows[0][5:] == [
        "CURRENT-EPOCH",
        "CURRENT-ASSIGNMENT",
        "TARGET-EPOCH",
        "TARGET-ASSIGNMENT",
    ]
    assert rows[1][5:] == ["1", "t:0,1", "1", "t:0,1"]


def test_describe_state_names_coordinator_strategy_and_epochs(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, rows, _ = _describe(running, capsys, "k", "--state")
    assert code == 0
    assert rows[0] == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    assert rows[1] == ["k", f"127.0.0.1:{running.port}", "(0)", "uniform", "Stable", "1"]
    code, rows, _ = _describe(running, capsys, "k", "--state", "--verbose")
    assert rows[0][5:7] == ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
    assert rows[1][5:] == ["1", "1", "1"]


@pytest.mark.parametrize(
    "view", [[], ["--offsets"], ["--members"], ["--members", "--verbose"], ["--state"]]
)
def test_describe_missing_group_is_kafkas_error_and_exit_status(
    view: list[str], running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kafka's tool prints ``Error: Consumer group 'X' does not exist.`` for every view
    (DescribeConsumerGroupTest.testDescribeNonExistingGroup); regroup prints it as one line
    on stderr and exits 0 as Kafka's tool does (the group that exists still prints)."""
    code, rows, err = _describe(running, capsys, "missing.group", *view)
    assert code == 0 and rows == []
    assert err == "Error: Consumer group 'missing.group' does not exist.\n"
    code, rows, err = _describe(running, capsys, "missing.group", "k", *view)
    assert code == 0 and rows[1][0] == "k"
    assert err == "Error: Consumer group 'missing.group' does not exist.\n"


def test_describe_empty_group_says_it_has_no_active_members(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    with WireClient("127.0.0.1", running.port) as client:
        left = client.request(
            68,
            1,
            {
                "group_id": "k",
                "member_id": MEMBER,
                "member_epoch": -1,
                "rebalance_timeout": -1,
                "subscribed_topic_names": None,
                "server_assignor": None,
                "topic_partitions": None,
            },
        )
        assert left.error_code.value == 0
    code, rows, err = _describe(running, capsys, "k")
    assert code == 0
    assert err == "Consumer group 'k' has no active members.\n"
    # the committed partition stays, with no consumer (Kafka's rowsWithoutConsumer)
    assert rows[1:] == [["k", "t", "0", "2", "5", "3", "-", "-", "-"]]


def test_describe_json_keeps_its_fields_and_adds_partitions(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["groups", "describe", "--bootstrap-server", running.bootstrap, "--json"]) == 0
    (group,) = json.loads(capsys.readouterr().out)
    assert group["group_id"] == "k" and group["exists"] is True
    assert group["members"][0]["target_assignment"] == "t:[0,1]"
    assert group["offsets"] == [
        {"topic": "t", "partition": 0, "committed": 2, "log_end": 5, "lag": 3}
    ]
    assert [(r["partition"], r["lag"]) for r in group["partitions"]] == [(0, 3), (1, None)]


def test_describe_views_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["groups", "describe", "--members", "--state"]) == 2
    err = capsys.readouterr().err
    assert "not allowed with argument" in err and err.count("\n") == 1
