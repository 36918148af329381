"""Event handlers looked up by the event's class, once per class.

The metrics accumulator and the invariant checker both see every event of a
run and act on a few kinds. Each keeps a dict from event class to handler;
``memoised_handler`` fills in a class that has no entry yet with the handler of
its nearest base class that has one (``None``: nobody reads this kind), so the
per-event cost is one dict lookup.
"""

from __future__ import annotations

from typing import TypeVar

H = TypeVar("H")


def memoised_handler(handlers: dict[type, H | None], kind: type) -> H | None:
    """The handler for ``kind`` (its nearest registered base class's), stored for next time."""
    found: H | None = None
    for base in kind.__mro__[1:]:
        found = handlers.get(base)
        if found is not None:
            break
    handlers[kind] = found
    return found
