"""``ManualClock``: time that moves only when the test moves it, and never backwards."""

from __future__ import annotations

import pytest

from regroup.testing import ManualClock


def test_starts_where_told_and_moves_only_when_advanced() -> None:
    clock = ManualClock()
    assert clock.now_ms == 0
    assert clock.advance(1500) == 1500
    assert clock.advance(0) == 1500
    assert clock.advance_to(4000) == 4000
    assert ManualClock(250).now_ms == 250


def test_never_goes_backwards() -> None:
    clock = ManualClock(100)
    with pytest.raises(ValueError):
        clock.advance(-1)
    with pytest.raises(ValueError):
        clock.advance_to(99)
    with pytest.raises(ValueError):
        ManualClock(-5)
    assert clock.now_ms == 100
