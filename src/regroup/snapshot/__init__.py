"""``regroup snapshot``: a live group of any Kafka cluster, turned into a scenario file.

``admin`` gathers the group through confluent-kafka's AdminClient (the group's type,
state, assignor and members, its topics, committed and end offsets sampled twice, the
coordinator's configs); ``model`` holds what was gathered; ``scenario`` turns it into a
scenario (docs/formats/scenarios.md) and the header that says where each value came
from. The package does I/O (the admin client, a clock for the sampling); it sits above
``regroup.sim`` and ``regroup.server``, beside ``regroup.pipeline``.
"""
