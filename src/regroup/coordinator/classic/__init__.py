"""Classic groups in the coordinator: the classic protocol's handlers and the barrier they share.

Kafka: the classic half of ``GroupMetadataManager``, over ``ClassicGroup``
(``regroup.classic.group.group``). Every handler takes the coordinator's
``GroupCoordinatorState`` and the request, and returns a ``CoordinatorResult``.

* ``join``: JoinGroup (admission, new and static members, the join phase);
* ``sync``: SyncGroup (the leader's assignment, parked followers);
* ``membership``: Heartbeat and LeaveGroup;
* ``describe``: DescribeGroups;
* ``rebalance``: the steps they share, the join and sync phases and the timers;
* ``records``: the GroupMetadata record, written and replayed.

This package knows nothing of KIP-848. The service routes a classic request
whose group id names a consumer group to ``consumer.classic_members``; the
KIP-848 side converts groups in both directions (online migration) with the
steps of ``rebalance`` and ``records``.
"""
