"""Kafka's ``Uuid``: the 128-bit topic id of KIP-516, with Kafka's semantics.

Kafka keeps a Uuid as two signed 64-bit halves (most and least significant
bits); its text form is the 16 big-endian bytes in URL-safe base64 without
padding (22 characters); and ``Uuid.compareTo`` orders by the signed most
significant half, then the signed least significant half. The KIP-848 uniform
assignor sorts topics by that order, so it must be reproduced exactly.

``Uuid.ZERO`` and ``Uuid.METADATA_TOPIC_ID`` (0, 1) are reserved; Kafka's
``randomUuid`` also never returns an id whose text starts with ``-``.
"""

from __future__ import annotations

import base64
import hashlib
import random
from dataclasses import dataclass
from typing import ClassVar

__all__ = ["Uuid"]

_MASK64 = (1 << 64) - 1


def _signed64(value: int) -> int:
    value &= _MASK64
    return value - (1 << 64) if value >= 1 << 63 else value


def _java_int(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


@dataclass(frozen=True, slots=True, order=False)
class Uuid:
    """A Kafka Uuid held as two signed 64-bit halves, like Kafka's own class."""

    most_significant_bits: int
    least_significant_bits: int

    ZERO: ClassVar[Uuid]
    METADATA_TOPIC_ID: ClassVar[Uuid]

    def __post_init__(self) -> None:
        for half in (self.most_significant_bits, self.least_significant_bits):
            if not -(1 << 63) <= half < (1 << 63):
                raise ValueError(f"a Uuid half must be a signed 64-bit integer, got {half}")

    # -- constructors -----------------------------------------------------------------

    @classmethod
    def from_bytes(cls, data: bytes) -> Uuid:
        if len(data) != 16:
            raise ValueError(f"a Uuid is 16 bytes, got {len(data)}")
        return cls(
            int.from_bytes(data[:8], "big", signed=True),
            int.from_bytes(data[8:], "big", signed=True),
        )

    @classmethod
    def from_string(cls, text: str) -> Uuid:
        """Parse Kafka's text form (22 characters of URL-safe base64)."""
        if not isinstance(text, str) or len(text) != 22:
            raise ValueError(f"not a Kafka Uuid (22 base64 characters): {text!r}")
        try:
            data = base64.urlsafe_b64decode(text + "==")
        except (ValueError, TypeError):
            raise ValueError(f"not a Kafka Uuid (bad base64): {text!r}") from None
        if len(data) != 16:
            raise ValueError(f"not a Kafka Uuid: {text!r}")
        return cls.from_bytes(data)

    @classmethod
    def random(cls, rng: random.Random) -> Uuid:
        """A random id drawn from an injected generator, never a reserved one.

        Like Kafka's ``Uuid.randomUuid``: reserved ids and ids whose text form
        starts with ``-`` (which command-line tools would read as a flag) are
        drawn again.
        """
        while True:
            candidate = cls.from_bytes(rng.getrandbits(128).to_bytes(16, "big"))
            if candidate._usable():
                return candidate

    @classmethod
    def for_name(cls, name: str) -> Uuid:
        """A deterministic topic id derived from a topic name.

        Used where an input names a topic without an id (``regroup assign``,
        scenarios): the same name always gets the same id, so outputs that
        depend on the id order are reproducible. SHA-256 of the name, re-hashed
        until the id is usable.
        """
        digest = hashlib.sha256(f"regroup-topic:{name}".encode()).digest()
        while True:
            candidate = cls.from_bytes(digest[:16])
            if candidate._usable():
                return candidate
            digest = hashlib.sha256(digest).digest()

    # -- views ------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        return self.most_significant_bits.to_bytes(
            8, "big", signed=True
        ) + self.least_significant_bits.to_bytes(8, "big", signed=True)

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(self.to_bytes()).decode("ascii").rstrip("=")

    def __repr__(self) -> str:
        return f"Uuid({str(self)!r})"

    def java_hash_code(self) -> int:
        """``Uuid.hashCode()`` in Java: the xor of the halves folded to a signed int.

        Needed to reproduce the iteration order of Java hash maps keyed by topic
        id, on which some of Kafka's assignor outputs depend.
        """
        folded = _signed64(self.most_significant_bits ^ self.least_significant_bits)
        return _java_int((folded >> 32) ^ folded)

    def _usable(self) -> bool:
        return self not in (ZERO, METADATA_TOPIC_ID) and not str(self).startswith("-")

    # -- Kafka's ordering (signed halves) ---------------------------------------------

    def _key(self) -> tuple[int, int]:
        return (self.most_significant_bits, self.least_significant_bits)

    def __lt__(self, other: Uuid) -> bool:
        return self._key() < other._key()

    def __le__(self, other: Uuid) -> bool:
        return self._key() <= other._key()

    def __gt__(self, other: Uuid) -> bool:
        return self._key() > other._key()

    def __ge__(self, other: Uuid) -> bool:
        return self._key() >= other._key()


ZERO = Uuid(0, 0)
METADATA_TOPIC_ID = Uuid(0, 1)
Uuid.ZERO = ZERO
Uuid.METADATA_TOPIC_ID = METADATA_TOPIC_ID
