"""The classic consumer-group protocol (``group.protocol=classic``), sans-IO.

The JoinGroup / SyncGroup / Heartbeat / LeaveGroup protocol that Kafka's
consumers have spoken since 0.9, with the eager and the incremental
cooperative rebalance of KIP-429, static membership (KIP-345), the protocol
selection of KIP-726 and the ``enforceRebalance`` of KIP-568. It has three
parts, Kafka's two sides in a package each and what both read beside them:

* ``classic.group``, the broker side: one classic group's state machine (Empty,
  PreparingRebalance, CompletingRebalance, Stable, Dead), which the group
  coordinator drives with requests and the current time;
* ``classic.member``, the client side: the member, Kafka's
  ``ConsumerCoordinator``, which turns ``poll(now)`` and responses into requests
  and rebalance-listener callbacks;
* the embedded consumer protocol (``regroup.classic.protocol``): the
  ``Subscription`` and ``Assignment`` bytes, versions 0 to 3, that members put
  into JoinGroup metadata and SyncGroup assignments. The broker treats them
  as opaque; members and the leader's assignor read them.

No module here does I/O or reads a clock (docs/architecture.md, "The sans-IO contract").
This package deliberately re-exports nothing: import from its modules.
"""
