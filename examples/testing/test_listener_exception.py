"""A rebalance listener that raises after committing does not lose the commit.

The worker's ``on_partitions_revoked`` commits the positions of the revoked
partitions first, then runs its cleanup, which here fails (a local store that
cannot be closed). kafka-python, like Java's consumer, raises the listener's
exception from ``poll()`` (a ``KafkaError`` caused by it) before it sends its
JoinGroup; the group waits in PreparingRebalance until the application polls
again. The application logs it and polls on. (kafka-python 3.0 then calls
``on_partitions_revoked`` once more, where Java's ``AbstractCoordinator`` does
not: with a listener that always fails, it never rejoins; here the store's
failure is a hiccup.) The rebalance completes, and the commit made before the
failure stands: the member that owns the partitions next starts exactly after
the last processed record, nothing read twice or skipped. The rebalance is
forced at the coordinator (``force_rebalance``) on an eager group, where every
partition is revoked.
"""

from __future__ import annotations

import pytest
from revoke_commit import PartitionWorker
from waiting import wait_until

from regroup.testing import Broker


class FlakyStores:
    """Local stores whose first close fails (a disk hiccup), then works."""

    def __init__(self) -> None:
        self.closes = 0

    def close(self, partitions: list[int]) -> None:
        self.closes += 1
        if self.closes == 1:
            raise OSError(f"cannot close the local stores of {partitions}")


@pytest.mark.regroup_broker(topics={"orders": 2})
def test_a_failing_listener_keeps_the_commit_it_made(regroup_broker: Broker) -> None:
    broker = regroup_broker
    broker.produce("orders", [f"r{i}" for i in range(8)])
    stores = FlakyStores()
    worker = PartitionWorker(
        broker.bootstrap, "eager", "orders", "flaky", cooperative=False, cleanup=stores.close
    ).start()
    try:
        wait_until("the worker read everything", lambda: len(worker.seen()) == 8)
        assert broker.committed("eager") == {}  # it commits only when it must

        generation = broker.wait_for_stable("eager", members=1)["generation"]
        broker.force_rebalance("eager")
        wait_until("the eager worker revoked its partitions", lambda: bool(worker.revoked))
        described = broker.wait_for_stable("eager", members=1)
        assert described["generation"] > generation

        # The cleanup raised after the commit: the app saw it from poll(), the commit stands.
        assert worker.revoked[0] == [0, 1]
        assert [type(e) for e in worker.listener_errors] == [OSError]
        assert broker.committed("eager") == {"orders": {0: 4, 1: 4}}
        # The worker got its partitions back and resumes after the commit: no duplicates.
        broker.produce("orders", ["late-0", "late-1"])
        wait_until("the late records are read", lambda: len(worker.seen()) == 10)
        offsets = sorted((p, o) for p, o, _ in worker.seen())
        assert offsets == [(p, o) for p in (0, 1) for o in range(5)]
    finally:
        worker.stop()
    assert worker.errors == []
