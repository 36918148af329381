"""The broker APIs beside the group coordinator (Kafka's ``KafkaApis``).

* ``cluster``: Metadata, FindCoordinator, CreateTopics, ListOffsets, InitProducerId,
  Produce and Fetch on a one-node cluster;
* ``fetch_waiters``: parked Fetches, woken by the partitions they read;
* ``offset_topics``: OffsetCommit for partitions that do not exist;
* ``large_requests``: a large OffsetFetch served in pieces, off the event loop.
"""
