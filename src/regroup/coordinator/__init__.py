"""The group coordinator (sans-IO): groups of both types, offsets, timers, records out.

``service.GroupCoordinator`` is what drivers use. Inside, one typed
``state.GroupCoordinatorState`` holds everything, and handlers organised by the
type of group they serve receive it:

* ``service``: the façade and the routing table (request type, then the type of
  the group the request's id names) and the replay table (record key type);
* ``consumer/``: KIP-848 consumer groups, including the classic members a
  consumer group serves and the online migration both ways;
* ``classic/``: classic groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
  DescribeGroups and the rebalance barrier);
* ``offsets``, ``list_groups``: the requests about groups of any type;
* ``state``: the groups, committed offsets, timers, configuration, metadata;
* ``config``, ``group``, ``partition_names``, ``result``, ``timer``: values and
  tools the others share.

Each line imports only lines below it (import-linter contracts in
``pyproject.toml``), so no handler imports what calls it.
"""
