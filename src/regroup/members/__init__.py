"""What the two client-side members share, in one place and one vocabulary.

The classic member (``regroup.classic.member``, Kafka's ``ConsumerCoordinator``)
and the KIP-848 member (``regroup.consumer.member``, Kafka's
``ConsumerMembershipManager``) are two implementations of one client: Kafka's
``KafkaConsumer`` behind ``group.protocol``. What a user of either sees the same
way lives here: the errors a member raises (``errors``), how it calls the
rebalance listener (``listener``), and the driving API both satisfy
(``driving.Member``). Sans-IO like the rest of the core; it imports neither
member, and neither group package.
"""
