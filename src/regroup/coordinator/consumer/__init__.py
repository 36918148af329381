"""Consumer groups in the coordinator: KIP-848, and the classic members a consumer group serves.

Kafka: the consumer-group half of ``GroupMetadataManager``, over
``ConsumerGroup`` (``regroup.consumer.group.group``). Every handler takes the
coordinator's ``GroupCoordinatorState`` and the request, and returns a
``CoordinatorResult``; a consumer group changes only by replaying the records
an operation writes (``txn``).

Handlers:

* ``heartbeat``: ConsumerGroupHeartbeat (join, heartbeat, leave, fencing, static
  members, reconciliation), including the join that takes a classic group over;
* ``client_assignors``: COMPUTE_ASSIGNMENT, ConsumerGroupPrepareAssignment,
  ConsumerGroupInstallAssignment (KIP-848 client-side assignors);
* ``describe``: ConsumerGroupDescribe;
* ``group_configs``: IncrementalAlterGroupConfigs, DescribeGroupConfigs;
* ``classic_members``: JoinGroup, SyncGroup, Heartbeat and LeaveGroup of
  members that still speak the classic protocol (the service routes a classic
  request here when its group id names a consumer group).

The steps they share, each module using only those after it in this list
(``pyproject.toml`` holds the order as an import-linter contract):

* ``upgrade``: a classic group becomes a consumer group (online migration);
* ``fencing``: a member leaves, is fenced or replaced; the member timers;
* ``downgrade``: a group whose members all speak the classic protocol becomes
  a classic group (online migration); ``regex_refresh``: Kafka's asynchronous
  resolution of regular expressions (``regroup.consumer.semantics=kafka``);
* ``embedded``: the classic members' Subscription and Assignment bytes;
* ``rebalance``: the group epoch and the target assignment;
* ``txn``: one operation on one group, its rollback and its end;
* ``records``: the records of a consumer group, built and replayed;
* ``timers``: the timer keys (and what each timer does).

The online migration lives here because it is the consumer group's: Kafka
converts with ``ConsumerGroup.fromClassicGroup`` and serves classic members from
the consumer group, while the classic protocol never learns of KIP-848. So this
package may use ``coordinator.classic`` (its records and rebalance steps), and
``coordinator.classic`` never uses this one.
"""
