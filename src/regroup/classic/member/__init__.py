"""A classic consumer's group membership (Kafka's client ``ConsumerCoordinator``), sans-IO.

``member.ClassicMember`` is the façade a driver uses; the other modules are its
parts: ``config`` (the client configs), ``state`` (Kafka's ``MemberState`` and its
transitions), ``session`` (heartbeats and the poll timer), ``requests`` (the
requests it sends), ``rebalance_protocol`` (KIP-726's EAGER or COOPERATIVE
choice), ``steps`` (what a join prepares and completes), ``leader`` (the leader's
assignment), ``offsets`` (its commits), ``listener`` (the rebalance callbacks),
``errors`` (what each error code does to it) and ``metrics``. No module here
imports the broker side (``regroup.classic.group``).
"""
