"""The errors a member raises to its application, whichever protocol it speaks.

Kafka's ``KafkaConsumer`` raises the same exception types under
``group.protocol=classic`` and ``group.protocol=consumer``; so do regroup's two
members:

* ``InvalidMemberConfigError``: a config value Kafka refuses when the consumer
  is built (Kafka: ``ConfigException``);
* ``IllegalStateError``: a call the member's state does not allow (Kafka:
  ``IllegalStateException``, e.g. ``enforceRebalance`` without a group, or any
  call after ``close``);
* ``MemberFatalError``: a group error the member cannot recover from. The member
  turns FATAL, loses its partitions and raises this from its next ``poll`` and
  from calls that need a live member (Kafka: the fatal error the consumer's
  ``poll`` rethrows, ``FencedInstanceIdException`` and friends).
"""

from __future__ import annotations

from regroup.model import ErrorCode

__all__ = ["IllegalStateError", "InvalidMemberConfigError", "MemberFatalError"]


class InvalidMemberConfigError(ValueError):
    """A client config value Kafka would refuse (Kafka: ``ConfigException``)."""


class IllegalStateError(RuntimeError):
    """Kafka's ``IllegalStateException`` for a call the member's state does not allow."""


class MemberFatalError(RuntimeError):
    """A group error the member cannot recover from; raised from every ``poll``.

    ``code`` is the Kafka error; ``message`` says where it came from (the broker's
    error message, or the request that failed), or is ``None``.
    """

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(f"{code.name}: {message}" if message else code.name)
        self.code = code
        self.message = message
