"""Test tooling the server hosts: the control channel, fault injection and the fuzzer.

* ``commands``: every fault and test action by name, in process and over the wire;
* ``faults``: request-level faults and request tracking, between a connection and the server;
* ``group_faults``: what only a coordinator can do to a group, done as it would do it;
* ``fuzz``: mutated requests of every API and version through a whole in-process server.

The server builds ``commands.Control`` only with ``ServerOptions(control=True)``.
"""
