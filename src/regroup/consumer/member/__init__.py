"""KIP-848's member, client side (Kafka's ``ConsumerMembershipManager``), sans-IO.

``member.ConsumerMember`` is the façade a driver uses; the other modules are its
parts: ``config`` (the client configs), ``state`` (Kafka's client ``MemberState``
and its transitions), ``heartbeat`` (the ConsumerGroupHeartbeat requests and their
schedule), ``reconciler`` (reconciling the assignment), ``client_assignor`` (a
client-side assignor's run), ``offsets`` (its commits) and ``leaving``. No module
here imports the broker side (``regroup.consumer.group``).
"""
