"""Crash consistency of the coordinator store at every record boundary.

A scripted session (a cooperative classic group, a KIP-848 group, a simple
group's offset commits, a crash, leaves, a partition increase) is run through a
real coordinator, keeping its records in the batches the server appends them in
(one ``SqliteRecordStore.append`` per coordinator result, written before any of
that result's responses is sent: store rule 1).

For every batch and every record boundary inside it -- before the first record,
between any two, after the last (and so after the commit) -- a forked process
writes the earlier batches into a fresh store, starts the batch, and is killed
(``os._exit``, no clean-up, no ``ROLLBACK``, SQLite's journal left as it is) at
that boundary. The parent then opens what the dead process left and checks:

* the store holds exactly the compaction of the batches that committed: every
  acknowledged batch whole, the killed batch either whole (killed after its
  commit, before the response: durable, not yet acknowledged) or not at all --
  never a part of it;
* a coordinator rebuilt from what the store holds equals one rebuilt from the
  full, uncompacted history of those batches: groups, members, assignments,
  epochs and committed offsets.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from regroup.coordinator.result import CoordinatorResult
from regroup.records import CoordinatorRecord
from regroup.server.log import store as store_module
from regroup.server.log.store import SqliteRecordStore
from regroup.testing import CoordinatorTestContext, InProcessGroup

TOPICS = {"orders": 6, "audit": 2}

#: The child's exit codes: killed at the boundary, or the batch committed first.
KILLED, COMMITTED, FAILED = 101, 102, 103


class BatchRecordingContext(CoordinatorTestContext):
    """A context that also keeps each result's records as one batch (one ``append``)."""

    def __init__(self) -> None:
        super().__init__(topics=TOPICS)
        self.batches: list[list[CoordinatorRecord]] = []

    def absorb(self, result: CoordinatorResult) -> CoordinatorResult:
        if result.records:
            self.batches.append(list(result.records))
        return super().absorb(result)


def scripted_session() -> list[list[CoordinatorRecord]]:
    """The session's record batches, in the order the server would append them."""
    context = BatchRecordingContext()
    classic = InProcessGroup(context=context, group_id="classic")
    for name in "abc":
        classic.add_member(
            name, {"group.id": "classic", "partition.assignment.strategy": "cooperative-sticky"}
        )
    classic.run_until_stable(60_000)
    kip848 = InProcessGroup(context=context, group_id="kip848", group_protocol="consumer")
    for name in "xyz":
        kip848.add_member(name, {"group.id": "kip848"})
    kip848.run_until_stable(60_000)
    context.offset_commit("simple", {("orders", 0): 10, ("orders", 1): 20, ("audit", 0): 5})
    classic.crash("c")  # its session expires: a rebalance without it
    classic.run_until_stable(120_000)
    kip848.remove_member("y")  # a KIP-848 leave: tombstones
    kip848.run_until_stable(60_000)
    context.set_topics({"orders": 8, "audit": 2})  # a new target assignment
    kip848.run_until_stable(60_000)
    classic.remove_member("b")
    classic.advance(60_000)
    context.offset_commit("simple", {("orders", 0): 11, ("audit", 1): 7})
    return context.batches


BATCHES = scripted_session()


def kill_points() -> Iterator[tuple[int, int]]:
    """(batch, records written before the kill) for every boundary of every batch."""
    for index, batch in enumerate(BATCHES):
        for written in range(len(batch) + 1):
            yield index, written


def compacted(batches: Sequence[Sequence[CoordinatorRecord]]) -> list[str]:
    """What log compaction leaves of ``batches``: each key's latest value, in the order of
    those latest writes; a tombstone removes its key (the store's rule 2, stated again)."""
    latest: dict[str, tuple[int, str]] = {}
    sequence = 0
    for batch in batches:
        for record in batch:
            data = record.to_dict()
            key = json.dumps([data["type"], data["key"]], sort_keys=True)
            if record.is_tombstone:
                latest.pop(key, None)
            else:
                sequence += 1
                latest[key] = (sequence, record.to_json())
    return [text for _, text in sorted(latest.values())]


@pytest.fixture(scope="module")
def acknowledged_stores(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """``[i]``: a closed store file holding ``BATCHES[:i]``, each batch appended in turn (so
    a kill point costs one batch's writes, not the whole session's)."""
    directory = tmp_path_factory.mktemp("acknowledged")
    paths = [directory / "0.db"]
    store = SqliteRecordStore(directory / "growing.db")
    try:
        store.close()
        shutil.copyfile(directory / "growing.db", paths[0])
        for index, batch in enumerate(BATCHES, start=1):
            store = SqliteRecordStore(directory / "growing.db")
            store.append(batch)
            store.close()  # the last connection: SQLite checkpoints its journal into the file
            paths.append(directory / f"{index}.db")
            shutil.copyfile(directory / "growing.db", paths[-1])
    finally:
        store.close()
    return paths


def crash_while_appending(acknowledged: Path, path: Path, index: int, written: int) -> int:
    """Fork a process that opens a copy of ``acknowledged`` (``BATCHES[:index]``) at ``path``,
    appends ``BATCHES[index]`` and dies after ``written`` of its records; returns its exit
    code (``KILLED``, or ``COMMITTED`` when the kill point is after the last record)."""
    shutil.copyfile(acknowledged, path)
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = FAILED
        try:
            store = SqliteRecordStore(path)
            seen = 0
            key_text = store_module._key_text

            def die_at_the_boundary(data: dict[str, Any]) -> str:
                nonlocal seen
                if seen == written:
                    os._exit(KILLED)  # mid-transaction: no COMMIT, no ROLLBACK, no close
                seen += 1
                return key_text(data)

            store_module._key_text = die_at_the_boundary
            store.append(BATCHES[index])
            code = COMMITTED  # the kill point was after the last record: the batch committed
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def rebuilt(records: Sequence[CoordinatorRecord]) -> CoordinatorTestContext:
    context = CoordinatorTestContext(topics=TOPICS)
    context.replay(records)
    return context


def test_the_session_writes_multi_record_batches_and_tombstones() -> None:
    """The script exercises what the check is about (else it would pass vacuously)."""
    sizes = [len(batch) for batch in BATCHES]
    assert max(sizes) >= 5
    assert sum(1 for batch in BATCHES for record in batch if record.is_tombstone) >= 3
    names = {record.key.record_name for batch in BATCHES for record in batch}
    assert {"GroupMetadata", "OffsetCommit", "ConsumerGroupTargetAssignmentMember"} <= names


@pytest.mark.parametrize(("index", "written"), list(kill_points()))
def test_a_kill_at_any_record_boundary_keeps_whole_batches(
    acknowledged_stores: list[Path], tmp_path: Path, index: int, written: int
) -> None:
    path = tmp_path / "coordinator.db"
    code = crash_while_appending(acknowledged_stores[index], path, index, written)
    last = len(BATCHES[index])
    assert code == (COMMITTED if written == last else KILLED)
    durable = BATCHES[: index + 1] if code == COMMITTED else BATCHES[:index]

    store = SqliteRecordStore(path)
    try:
        stored = store.load()
    finally:
        store.close()

    assert store.unreadable == 0
    assert [record.to_json() for record in stored] == compacted(durable)
    history = [record for batch in durable for record in batch]
    rebuilt(history).assert_same_state(rebuilt(stored))
