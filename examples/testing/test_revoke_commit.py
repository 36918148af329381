"""A kafka-python cooperative consumer commits in ``on_partitions_revoked``.

Two instances of the worker share a topic: when the second joins, the first
revokes the partitions that move (and only those, KIP-429), commits their
positions, and the second starts exactly there: no record is read twice, none
is skipped. A rebalance forced at the coordinator (``force_rebalance``) that
moves nothing revokes nothing: the workers keep their partitions and commit
nothing more.
"""

from __future__ import annotations

import pytest
from revoke_commit import PartitionWorker
from waiting import wait_until

from regroup.testing import Broker

RECORDS = 12


def _records(topic_partitions: int) -> list[tuple[int, int]]:
    return [(p, o) for p in range(topic_partitions) for o in range(RECORDS // topic_partitions)]


@pytest.mark.regroup_broker(topics={"orders": 4})
def test_revoked_partitions_are_committed_and_resumed_exactly_there(
    regroup_broker: Broker,
) -> None:
    regroup_broker.produce("orders", [f"r{i}" for i in range(RECORDS)])
    first = PartitionWorker(regroup_broker.bootstrap, "workers", "orders", "first").start()
    second = None
    try:
        wait_until("the first worker has read everything", lambda: len(first.seen()) == RECORDS)
        assert first.revoked == []

        second = PartitionWorker(regroup_broker.bootstrap, "workers", "orders", "second").start()
        regroup_broker.wait_for_assignment("workers", client_id="second")
        regroup_broker.wait_for_stable("workers", members=2)
        wait_until("the first worker revoked what moved", lambda: bool(first.revoked))
        moved = first.revoked[0]
        assert len(moved) == 2  # cooperative: only the partitions that move are revoked
        committed = regroup_broker.committed("workers")["orders"]
        assert {p: committed[p] for p in moved} == {p: RECORDS // 4 for p in moved}
        regroup_broker.produce("orders", ["late"] * 4)  # one more record on each partition
        wait_until(
            "the late records are read",
            lambda: len(first.seen()) + len(second.seen()) == RECORDS + 4,
        )
        # The second worker started at the committed positions: nothing read twice.
        assert sorted((p, o) for p, o, _ in second.seen()) == [(p, RECORDS // 4) for p in moved]

        # A forced rebalance that moves nothing revokes nothing (KIP-429).
        generation = regroup_broker.describe_group("workers")["generation"]
        commits = (list(first.commits), list(second.commits))
        regroup_broker.force_rebalance("workers")
        wait_until(
            "the forced rebalance completes",
            lambda: (
                regroup_broker.describe_group("workers")["generation"] > generation
                and regroup_broker.describe_group("workers")["state"] == "Stable"
            ),
        )
        assert first.revoked == [moved] and second.revoked == []
        assert (first.commits, second.commits) == commits
    finally:
        for worker in (first, second):
            if worker is not None:
                worker.stop()
                assert worker.errors == []
