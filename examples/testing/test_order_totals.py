"""The fenced KIP-848 member: ``on_lost`` drops what it had and commits nothing.

The broker fences the member (``fence_member``: removed from the group, its next
heartbeat answered FENCED_MEMBER_EPOCH, as a Kafka coordinator fences a member
whose session or rebalance timed out); librdkafka calls ``on_lost``, rejoins
with epoch 0 and gets its partitions back; the application reads them again from
the last commit, so its totals come out right, not doubled.
"""

from __future__ import annotations

import pytest
from order_totals import OrderTotals

from regroup.testing import Broker

AMOUNTS = [5, 10, 20, 40, 80, 160, 320, 640]


@pytest.mark.regroup_broker(topics={"orders": 4})
def test_a_fenced_member_loses_its_partitions_without_committing(regroup_broker: Broker) -> None:
    regroup_broker.produce("orders", [str(a) for a in AMOUNTS])
    app = OrderTotals(regroup_broker.bootstrap, "totals", "orders")
    try:
        while app.total() < sum(AMOUNTS):
            app.poll()
        assert app.assigned == [[0, 1, 2, 3]]
        (member_id,) = regroup_broker.members("totals")

        regroup_broker.fence_member("totals", member_id)
        while not app.lost:
            app.poll()
        assert app.lost == [[0, 1, 2, 3]]
        assert app.revoked == [] and app.committed == []  # lost, not revoked: no commit
        assert regroup_broker.committed("totals") == {}

        # librdkafka rejoins (epoch 0, same member id) and gets the partitions back; the
        # records are read again from the last commit (none), so the totals are not doubled.
        while len(app.assigned) < 2 or app.total() < sum(AMOUNTS):
            app.poll()
        assert app.assigned[-1] == [0, 1, 2, 3]
        assert app.total() == sum(AMOUNTS)
        described = regroup_broker.wait_for_stable("totals", members=1)
        assert described["members"][member_id]["epoch"] > 1  # a new epoch after the rejoin
    finally:
        app.close()
