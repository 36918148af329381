"""The transport: accepting connections and framing requests (Kafka's ``SocketServer``).

* ``acceptor``: accept only while a ``max.connections`` slot is free;
* ``connection``: one connection's frames, served one at a time and in order;
* ``log_limit``: one warning line per bad request, rate-limited.
"""
