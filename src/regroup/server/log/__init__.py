"""What the server keeps on disk: the partitions' records and the coordinator's records.

* ``partitions``: the partitioned log Produce appends to and Fetch reads;
* ``record_batch`` / ``compression``: Kafka v2 record batches, checked and decompressed;
* ``store``: the coordinator's records (SQLite with ``--data-dir``), replayed on start.
"""
