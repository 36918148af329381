"""The assignors of both group protocols, as pure functions behind Kafka's interfaces.

* ``regroup.assignors.classic``: the client-side assignors of the classic protocol
  (``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``) behind the
  ``ConsumerPartitionAssignor`` interface of KIP-429.
* ``regroup.assignors.consumer``: the server-side assignors of KIP-848
  (``uniform``, ``range``) behind an interface shaped like Kafka's
  group-coordinator assignor SPI (``GroupSpec``, ``SubscribedTopicDescriber``).

Assignors are pure: same input, same output; no clock, no I/O, no globals.
"""

from regroup.assignors.errors import PartitionAssignorError, UnknownAssignorError

__all__ = ["PartitionAssignorError", "UnknownAssignorError"]
