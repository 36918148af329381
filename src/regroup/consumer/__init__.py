"""KIP-848's consumer group protocol (``group.protocol=consumer``), sans-IO.

Kafka's two sides, a package each: ``consumer.group``, the broker side (epochs,
target assignment, reconciliation), and ``consumer.member``, the client side (the
member that heartbeats and reconciles its assignment). No I/O; the coordinator
layer turns changes into records.
"""
