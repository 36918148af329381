"""A classic group on the broker (Kafka's group-coordinator ``ClassicGroup``), sans-IO.

Modules: ``group`` (the group and its rebalance bookkeeping), ``group_member``
(one member as the broker sees it) and ``group_state`` (the five states and their
transitions). The coordinator (``regroup.coordinator.classic``) drives them; no
module here imports the client side (``regroup.classic.member``).
"""
