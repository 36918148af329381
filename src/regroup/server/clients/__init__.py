"""regroup's own clients of a Kafka broker over a socket (the CLI, benchmarks, tests).

* ``wire_client``: a minimal blocking wire client, one request at a time;
* ``wire_member``: regroup's KIP-848 member driven over that client.
"""
