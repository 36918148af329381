"""Errors raised by assignors and by the assignor registries."""

from __future__ import annotations

__all__ = ["PartitionAssignorError", "UnknownAssignorError"]


class PartitionAssignorError(Exception):
    """An assignor could not compute an assignment for its input.

    Kafka: ``PartitionAssignorException`` (server side) and the
    ``IllegalStateException`` the client-side assignors throw. The KIP-848
    coordinator answers UNKNOWN_SERVER_ERROR and keeps the current target.
    """


class UnknownAssignorError(ValueError):
    """No assignor of that name (or Kafka class name) exists."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"unknown assignor {name!r}; known: {', '.join(known)}")
        self.name = name
