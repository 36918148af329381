"""The garbage collector's settings for the length of one simulation run.

A large run allocates millions of short-lived objects (requests, responses,
events) while holding a large, long-lived object graph (the coordinator's
groups, every member, the metrics). CPython's default thresholds
(700/10/10) then trigger generation-2 collections that walk that long-lived
graph again and again: at 1,000 members this was about a quarter of an eager
rolling bounce's CPU time. The run therefore

* freezes what exists when it starts (``gc.freeze``: the scenario, the
  coordinator and the members built so far are never scanned again), and
* collects the young generation less often (``gc.set_threshold``).

Nothing observable depends on when the collector runs: the simulator holds no
weak references or finalizers that produce events, so event logs are the same
byte for byte (the golden-log check covers this). The previous settings are
restored when the run ends, also on error, and frozen objects are released back
to the collector.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

RUN_THRESHOLDS = (50_000, 50, 1_000)
"""Young generation every 50,000 net allocations instead of 700; older ones rarer too."""


@contextmanager
def tuned_collector() -> Iterator[None]:
    """Run the body with the long-lived graph frozen and collections rarer."""
    previous = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*RUN_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()
