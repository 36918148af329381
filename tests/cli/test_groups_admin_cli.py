"""``regroup groups list / delete / reset-offsets`` as ``kafka-consumer-groups.sh`` does them.

Every test runs against a real ``regroup serve`` (``BackgroundServer``) over the wire; the
output and messages follow Kafka 4.x's ``org.apache.kafka.tools.consumer.group.
ConsumerGroupCommand`` (``listGroups``, ``printGroupInfo``, ``deleteGroups``,
``resetOffsets``, ``printOffsetsToReset``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from regroup.cli.main import main
from regroup.server.app import ServerOptions
from regroup.server.background import BackgroundServer
from regroup.server.clients.wire_client import WireClient
from tests.cli.groups_server import server_with_group


def _commit(client: WireClient, group: str, offsets: dict[int, int]) -> None:
    """An OffsetCommit from outside any group (a "simple" group that only stores offsets)."""
    response = client.request(
        8,
        8,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": p,
                            "committed_offset": o,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                        for p, o in offsets.items()
                    ],
                }
            ],
        },
    )
    assert all(p.error_code.value == 0 for t in response.topics for p in t.partitions)


def _committed(server: BackgroundServer, group: str) -> dict[int, int]:
    with WireClient("127.0.0.1", server.port) as client:
        fetched = client.request(
            9, 8, {"groups": [{"group_id": group, "topics": None}], "require_stable": False}
        )
    return {
        p.partition_index: p.committed_offset
        for g in fetched.groups
        for t in g.topics
        for p in t.partitions
    }


@pytest.fixture
def running() -> Iterator[BackgroundServer]:
    """Topic ``t`` (partition 0 holds 5 records, partition 1 holds 3); a Stable KIP-848
    group ``k`` with one member; an Empty group ``s`` that committed offset 1 of partition
    0 and 2 of partition 1."""
    with server_with_group(lambda client, beat: _commit(client, "s", {0: 1, 1: 2})) as server:
        yield server


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- list -------------------------------------------------------------------------------------


def test_list_prints_bare_group_names_as_kafkas_list(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """``kafka-consumer-groups.sh --list`` prints each group id alone on its line."""
    code, out, err = _run(capsys, "groups", "list", "--bootstrap-server", running.bootstrap)
    assert (code, out, err) == (0, "k\ns\n", "")
    # Kafka's spelling of the action, and a comma-separated bootstrap list whose first
    # server does not answer: the next one is used, as Kafka's bootstrap.servers.
    with BackgroundServer(ServerOptions(port=0)) as gone:
        dead = gone.bootstrap
    servers = f"{dead},{running.bootstrap}"
    code, out, err = _run(capsys, "groups", "--bootstrap-server", servers, "--list")
    assert (code, out, err) == (0, "k\ns\n", "")


def test_list_state_and_type_add_kafkas_columns_and_filter(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    b = ["groups", "list", "--bootstrap-server", running.bootstrap]
    code, out, _ = _run(capsys, *b, "--state", "--type")
    assert code == 0
    # printGroupInfo: GROUP padded to max(15, longest id) + 10, then %-20s columns
    assert out.splitlines() == [
        f"{'GROUP':<25} {'TYPE':<20} STATE",
        f"{'k':<25} {'Consumer':<20} Stable",
        f"{'s':<25} {'Classic':<20} Empty",
    ]
    code, out, _ = _run(capsys, *b, "--state", "empty")
    assert (code, out.split()) == (0, ["GROUP", "STATE", "s", "Empty"])
    code, out, err = _run(capsys, *b, "--state", "Sleeping")
    assert code == 2 and out == "" and "Invalid state list 'Sleeping'" in err


def test_bootstrap_list_refuses_a_malformed_entry(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "groups", "list", "--bootstrap-server", "127.0.0.1:9092,nohost")
    assert code == 2 and len(err.splitlines()) == 1 and "HOST:PORT" in err


# -- delete -----------------------------------------------------------------------------------


def test_delete_removes_an_empty_group_and_its_offsets(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    b = ["groups", "--bootstrap-server", running.bootstrap]
    code, out, err = _run(capsys, *b, "--delete", "--group", "s")
    assert (code, err) == (0, "")
    assert out == "Deletion of requested consumer groups ('s') was successful.\n"
    assert _run(capsys, *b, "list")[1] == "k\n"
    assert _committed(running, "s") == {}


def test_delete_refuses_a_group_with_members_in_kafkas_words(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    b = ["groups", "--bootstrap-server", running.bootstrap]
    code, out, err = _run(capsys, *b, "delete", "--all-groups")
    assert code == 0
    assert err.splitlines() == [
        "Error: Deletion of some consumer groups failed:",
        "* Group 'k' could not be deleted due to: "
        "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.",
    ]
    assert out == "These consumer groups were deleted successfully: 's'\n"
    assert _run(capsys, *b, "list")[1] == "k\n"
    code, out, err = _run(capsys, *b, "delete", "--group", "nobody")
    assert code == 0 and out == ""
    assert "'nobody' could not be deleted due to: " in err
    assert "GroupIdNotFoundException" in err


def test_delete_needs_a_group_or_all_groups(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "groups", "delete", "--bootstrap-server", running.bootstrap)
    assert code == 2 and out == "" and "--group, --all-groups" in err


# -- reset-offsets ----------------------------------------------------------------------------


def _table(out: str) -> list[list[str]]:
    """printOffsetsToReset's lines: a blank line, then the header and rows."""
    lines = out.split("\n")
    assert lines[0] == "" and lines[-1] == ""
    return [line.split() for line in lines[1:-1]]


HEADER = ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]


def test_reset_offsets_dry_run_prints_kafkas_table_and_commits_nothing(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    b = ["groups", "--bootstrap-server", running.bootstrap, "--reset-offsets", "--group", "s"]
    code, out, err = _run(capsys, *b, "--all-topics", "--to-latest", "--dry-run")
    assert code == 0 and err == ""
    assert out.split("\n")[1] == f"{'GROUP':<30} {'TOPIC':<30} {'PARTITION':<10} NEW-OFFSET"
    assert _table(out) == [HEADER, ["s", "t", "0", "5"], ["s", "t", "1", "3"]]
    assert _committed(running, "s") == {0: 1, 1: 2}
    # neither --dry-run nor --execute: Kafka's warning, and a dry run
    code, out, err = _run(capsys, *b, "--all-topics", "--to-earliest")
    assert code == 0 and err.startswith("WARN: No action will be performed")
    assert _table(out)[1:] == [["s", "t", "0", "0"], ["s", "t", "1", "0"]]
    assert _committed(running, "s") == {0: 1, 1: 2}


@pytest.mark.parametrize(
    ("scenario", "scope", "expected", "warning"),
    [
        (["--to-earliest"], ["--topic", "t"], {0: 0, 1: 0}, ""),
        (["--to-latest"], ["--topic", "t:1"], {0: 1, 1: 3}, ""),
        (["--to-offset", "2"], ["--all-topics"], {0: 2, 1: 2}, ""),
        # checkOffsetsRange: beyond the log end is the log end, with Kafka's warning
        (["--to-offset", "4"], ["--all-topics"], {0: 4, 1: 3}, "is higher than latest"),
        (["--shift-by", "-1"], ["--all-topics"], {0: 0, 1: 1}, ""),
        (["--shift-by", "-5"], ["--topic", "t:0"], {0: 0, 1: 2}, "is lower than earliest"),
        (["--to-current"], ["--all-topics"], {0: 1, 1: 2}, ""),
        (["--to-datetime", "2000-01-01T00:00:00.000"], ["--all-topics"], {0: 0, 1: 0}, ""),
        # no record at or after the time: the log end, with Kafka's "is empty" warning
        (["--to-datetime", "2999-01-01T00:00:00.000+01:00"], ["--topic", "t"], {0: 5, 1: 3},
         "Warn: Partition 0 from topic t is empty. Falling back to latest known offset."),
    ],
)  # fmt: skip
def test_reset_offsets_execute_commits_each_scenario(
    scenario: list[str],
    scope: list[str],
    expected: dict[int, int],
    warning: str,
    running: BackgroundServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["groups", "reset-offsets", "s", "--bootstrap-server", running.bootstrap]
    code, out, err = _run(capsys, *argv, *scope, *scenario, "--execute")
    assert code == 0
    assert warning in err and (warning or err == "")
    printed = {int(row[2]): int(row[3]) for row in _table(out)[1:]}
    assert printed == {p: o for p, o in expected.items() if p in printed}
    assert _committed(running, "s") == expected


def test_reset_offsets_refuses_an_active_group(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["groups", "reset-offsets", "--bootstrap-server", running.bootstrap, "--all-groups"]
    code, out, err = _run(capsys, *argv, "--all-topics", "--to-earliest", "--execute")
    assert code == 0
    assert err == (
        "Error: Assignments can only be reset if the group 'k' is inactive, "
        "but the current state is Stable.\n"
    )
    assert _table(out) == [HEADER, ["s", "t", "0", "0"], ["s", "t", "1", "0"]]
    assert _committed(running, "k") == {}


def test_reset_offsets_of_a_missing_group_creates_its_offsets(
    running: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kafka resets a group that does not exist (state Dead): the commit creates it."""
    argv = ["groups", "reset-offsets", "new", "--bootstrap-server", running.bootstrap]
    code, out, _ = _run(capsys, *argv, "--topic", "t", "--to-latest", "--execute")
    assert code == 0 and _table(out)[1:] == [["new", "t", "0", "5"], ["new", "t", "1", "3"]]
    assert _committed(running, "new") == {0: 5, 1: 3}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--to-earliest"], "One of the reset scopes should be defined"),
        (["--all-topics"], "requires one of the scenarios"),
        (["--all-topics", "--to-earliest", "--dry-run", "--execute"], "not allowed with"),
        (["--all-topics", "--to-latest", "--to-earliest"], "not allowed with"),
        (["--topic", "t:x", "--to-earliest"], "Invalid partition 'x'"),
        (["--all-topics", "--to-datetime", "2026-12-02 10:00"], "YYYY-MM-DDTHH:mm:SS.sss"),
        (["--all-topics", "--to-datetime", "2026-02-30T10:00:00.000"], "--to-datetime"),
        (["--topic", "nope", "--to-earliest"], "topic 'nope'"),
        (["--topic", "t", "--shift-by", "1", "--group", "k2"], "no current committed"),
    ],
)
def test_reset_offsets_mistakes_are_one_line_and_exit_2(
    argv: list[str],
    message: str,
    running: BackgroundServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    group = [] if "--group" in argv else ["--group", "s"]
    base = ["groups", "reset-offsets", "--bootstrap-server", running.bootstrap, *group]
    try:
        code = main([*base, *argv])
    except SystemExit as exc:  # argparse's own refusals
        code = int(str(exc.code))
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert _committed(running, "s") == {0: 1, 1: 2}
