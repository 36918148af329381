"""Who wins a comparison of protocols, or a tie: one rule for ``compare``, the report and ``demo``.

A cost (lower is better, e.g. idle partition-seconds) is measured for each
series (a protocol, or a protocol at one group size) over several seeds and
summarised as a ``Spread``: a centre (the median of the seeds for ``compare``,
the mean for the report's tables) and the seeds' range ``[low, high]``.

Rules:

1. The *best* series has the lowest centre (equal centres: the first name in
   alphabetical order, so the choice never depends on input order).
2. The best series *beats* another only when the seeds separate them and the
   difference is more than noise: its highest seed lies below the other's
   lowest seed, and the other's centre is more than ``TIE_WITHIN`` (5 %) above
   its own. Otherwise the two are *tied*. Equal values are always a tie (one
   seed each, ``[v, v]`` against ``[v, v]``), and so is 224.0 against 224.1.
3. There is a *winner* only when the best series beats every other series; the
   series it does not beat are tied with it.
4. The *ratio* is the runner-up's centre over the best's (the second-lowest
   centre), ``None`` when the best's centre is 0 (nothing to divide by).

The tolerance exists because a simulated run's small differences come from
its timings (when heartbeats fall, who joins first), not from the protocol.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Final

__all__ = ["TIE_WITHIN", "Ranking", "Spread", "beats", "rank"]

#: Rule 2: centres closer than this fraction of the lower one are a tie.
TIE_WITHIN: Final = 0.05


@dataclass(frozen=True, slots=True)
class Spread:
    """One series' cost over its seeds: a centre and the seeds' range."""

    centre: float
    low: float
    high: float

    @classmethod
    def of_seeds(cls, values: Sequence[float]) -> Spread:
        """The median of the seeds and their range (``values`` must not be empty)."""
        return cls(float(median(values)), float(min(values)), float(max(values)))


def beats(best: Spread, other: Spread) -> bool:
    """Rule 2: ``best`` is lower than ``other`` by more than the seeds and the tolerance."""
    return best.high < other.low and other.centre > best.centre * (1 + TIE_WITHIN)


@dataclass(frozen=True, slots=True)
class Ranking:
    """The outcome of ``rank``."""

    #: Rule 1: the series with the lowest centre.
    best: str
    #: The series with the second-lowest centre (``None`` with a single series).
    runner_up: str | None
    #: Rule 3: ``best`` when it beats every other series, else ``None`` (a tie).
    winner: str | None
    #: The series tied with ``best`` (empty when there is a winner).
    tied: tuple[str, ...]
    #: Rule 4: the runner-up's centre over the best's.
    ratio: float | None

    @property
    def tie(self) -> bool:
        return self.winner is None


def rank(spreads: Mapping[str, Spread]) -> Ranking:
    """Rules 1-4 over ``spreads`` (at least one series)."""
    if not spreads:
        raise ValueError("nothing to rank")
    order = sorted(spreads, key=lambda name: (spreads[name].centre, name))
    best = order[0]
    if len(order) == 1:
        return Ranking(best, None, best, (), None)
    runner_up = order[1]
    tied = tuple(name for name in order[1:] if not beats(spreads[best], spreads[name]))
    centre = spreads[best].centre
    ratio = spreads[runner_up].centre / centre if centre > 0 else None
    return Ranking(best, runner_up, None if tied else best, tied, ratio)
