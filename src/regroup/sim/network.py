"""The simulated network: latency, jitter, loss, and members cut off.

Rule 1: a link between two endpoints is FIFO, as a TCP connection is: a
message never overtakes an earlier one on the same link (its delivery time is
at least the previous one's). Messages are sent at the world's time, which
never goes back, so with a fixed delay (no jitter, no loss) FIFO holds by
itself and ``transit`` is one addition.

Rule 2: all randomness comes from the injected ``random.Random`` (seeded from
the scenario seed); nothing is drawn when jitter and loss are zero, so adding
a lossless network to a run does not shift any other random choice.

Rule 4: with ``duplicate`` > 0 a message may be delivered twice: ``copy``
draws, per message the network delivers, whether a second copy follows the
first on the same link (in the same millisecond, right after it, so the link
stays FIFO). Nothing is drawn when ``duplicate`` is 0. ``until_ms`` bounds the
flaky part of the network: a message sent at or after it has no jitter, loss
or copy (the network heals, so a soak's group can settle after its faults).

Rule 3: a cut-off endpoint neither sends nor receives: a message is dropped
when it is sent from or to a cut endpoint, and also when it arrives at (or
comes from) an endpoint that was cut while it was in flight (``delivers``).
A dropped request gets no response; the sender learns it from its request
timeout (``request.timeout.ms``), as a Kafka client does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Network", "NetworkConfig"]


@dataclass(frozen=True, slots=True)
class NetworkConfig:
    """One-way latency ``latency_ms`` + uniform jitter in ``[0, jitter_ms]``; ``loss`` in [0, 1).

    ``duplicate`` in [0, 1): the probability that a delivered message is delivered
    twice (Rule 4); ``until_ms``: jitter, loss and duplication apply to messages sent
    before it (``None``: the whole run).
    """

    latency_ms: int = 1
    jitter_ms: int = 0
    loss: float = 0.0
    duplicate: float = 0.0
    until_ms: int | None = None

    def __post_init__(self) -> None:
        if self.latency_ms < 0 or self.jitter_ms < 0:
            raise ValueError("network latency and jitter must be >= 0")
        if not 0.0 <= self.loss < 1.0:
            raise ValueError("network loss must be in [0, 1)")
        if not 0.0 <= self.duplicate < 1.0:
            raise ValueError("network duplicate must be in [0, 1)")
        if self.until_ms is not None and self.until_ms < 0:
            raise ValueError("network until_ms must be >= 0")


class Network:
    """Decides when (or whether) a message sent now arrives."""

    __slots__ = ("_cut", "_fixed_delay", "_last", "_rng", "config", "duplicated")

    def __init__(self, config: NetworkConfig, rng: random.Random) -> None:
        self.config = config
        self._rng = rng
        self._last: dict[tuple[str, str], int] = {}
        self._cut: set[str] = set()
        #: No jitter and no loss: every message takes ``latency_ms``, so a link is FIFO by
        #: itself (a later send never arrives earlier) and nothing needs remembering.
        self._fixed_delay = (
            config.latency_ms
            if config.jitter_ms == 0 and config.loss == 0.0 and config.duplicate == 0.0
            else None
        )
        #: How many messages were delivered twice (Rule 4).
        self.duplicated = 0

    @property
    def may_drop(self) -> bool:
        """Whether any message can be lost now (then senders need request timeouts)."""
        return self.config.loss > 0.0 or bool(self._cut)

    def cut(self, endpoint: str) -> None:
        self._cut.add(endpoint)

    def heal(self, endpoint: str) -> None:
        self._cut.discard(endpoint)

    def is_cut(self, endpoint: str) -> bool:
        return endpoint in self._cut

    def transit(self, source: str, destination: str, now_ms: int) -> int | None:
        """The delivery time of a message sent now, or ``None`` if it is lost."""
        if self._cut and (source in self._cut or destination in self._cut):
            return None
        if self._fixed_delay is not None:
            return now_ms + self._fixed_delay
        config = self.config
        flaky = config.until_ms is None or now_ms < config.until_ms
        if flaky and config.loss and self._rng.random() < config.loss:
            return None
        delay = config.latency_ms
        if flaky and config.jitter_ms:
            delay += self._rng.randint(0, config.jitter_ms)
        arrival = now_ms + delay
        key = (source, destination)
        previous = self._last.get(key)
        if previous is not None and previous > arrival:
            arrival = previous
        self._last[key] = arrival
        return arrival

    def copy(self, now_ms: int) -> bool:
        """Whether a message sent now (and not lost) is delivered a second time (Rule 4)."""
        config = self.config
        if not config.duplicate or (config.until_ms is not None and now_ms >= config.until_ms):
            return False
        if self._rng.random() < config.duplicate:
            self.duplicated += 1
            return True
        return False

    def delivers(self, source: str, destination: str) -> bool:
        """Checked at arrival: a message to or from an endpoint cut meanwhile is dropped."""
        return not (self._cut and (source in self._cut or destination in self._cut))
