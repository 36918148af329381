"""One helper the example tests share: wait for a condition, with a bound."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(what: str, condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Call ``condition`` until it is true; fail saying ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting until {what}")
        time.sleep(0.02)
