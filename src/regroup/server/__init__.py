"""The Kafka wire-protocol server (``regroup serve``): see ``app``.

Its parts, each a sub-package (their import rules are contracts in ``pyproject.toml``):

* ``app``: ``RegroupServer``, which routes every request by the row of its API key in
  ``app.ROUTES`` (what a row says: ``routing``) and drives the sans-IO coordinator;
  ``background``: the server on a thread of its own; ``limits``: its resource limits;
  ``events``: its event log;
* ``net``: accepting connections and framing requests;
* ``wire``: Kafka's wire protocol, bytes to messages and back;
* ``apis``: the broker APIs that do not involve a group;
* ``log``: the partition log and the coordinator's record store;
* ``security``: listeners, SASL, TLS and the ACL authorizer;
* ``control``: the control channel, fault injection and the fuzzer (tests only);
* ``clients``: regroup's own wire clients.
"""
