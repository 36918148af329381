"""A clock that moves only when a test moves it (trio.testing's ``MockClock`` at rate 0).

The core takes time as an argument (docs/architecture.md, "The sans-IO contract"),
so a test needs no real clock at all: it needs one number of milliseconds that
it advances on purpose. ``ManualClock`` is that number, with the one rule a
clock must keep: it never goes backwards.
"""

from __future__ import annotations

__all__ = ["ManualClock"]


class ManualClock:
    """Virtual time in milliseconds; moves only through ``advance`` / ``advance_to``."""

    __slots__ = ("_now_ms",)

    def __init__(self, now_ms: int = 0) -> None:
        if now_ms < 0:
            raise ValueError(f"a clock starts at 0 ms or later, not {now_ms}")
        self._now_ms = now_ms

    def __repr__(self) -> str:
        return f"ManualClock(now_ms={self._now_ms})"

    @property
    def now_ms(self) -> int:
        """The current time (ms)."""
        return self._now_ms

    def advance(self, ms: int) -> int:
        """Move the clock ``ms`` forward (``ms >= 0``) and return the new time."""
        if ms < 0:
            raise ValueError(f"a clock does not go backwards (advance by {ms} ms)")
        self._now_ms += ms
        return self._now_ms

    def advance_to(self, now_ms: int) -> int:
        """Move the clock to ``now_ms``, which must not be earlier than now."""
        return self.advance(now_ms - self._now_ms)
