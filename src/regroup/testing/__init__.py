"""regroup's public test harness (docs/architecture.md, "The layers"), like ``trio.testing``.

Sans-IO as the core it tests: no real clock, no sockets, no threads; time is a
``ManualClock`` and randomness an injected ``random.Random``, so every test is
a pure function of its inputs. Three pieces, each built on the one below:

* ``ManualClock``: milliseconds that move only when the test moves them.
* ``CoordinatorTestContext``: one ``GroupCoordinator`` on a manual clock;
  ``send`` a request, ``advance`` time and get back what the expired timers
  produced, read every record and event, check that the records rebuild the
  live groups (``assert_replay_matches``).
* ``InProcessGroup``: real members (``ClassicMember``, ``ConsumerMember``)
  paired with a context by a zero-latency in-process network (h11's
  ``ConnectionPair`` idea), with ``run_until_stable``, members added, removed,
  crashed and paused, and group invariants checked at every step.

``RecordingListener`` writes down a member's rebalance callbacks. The guide
with examples is ``docs/testing-harness.md``.

``Broker`` is the exception, and lives apart in ``regroup.testing.broker``: a
real server on a socket for tests of real Kafka clients, with fault injection
(``docs/testing.md``). It is imported on first use of ``regroup.testing.Broker``
(or ``ControlError``) only, so importing the sans-IO harness never loads the server.
``GroupDriver`` (``regroup.testing.driver``), the other exception, runs a real
client's poll loop in a thread and records what the application saw; it too is
imported on first use.
"""

from typing import TYPE_CHECKING, Any

from regroup.testing.clock import ManualClock
from regroup.testing.coordinator import (
    Call,
    ConfigLike,
    CoordinatorTestContext,
    NotAnsweredError,
    ReplayMismatchError,
    TopicsLike,
)
from regroup.testing.group import (
    GroupNotStableError,
    InProcessGroup,
    InvariantViolation,
    LivelockError,
    Member,
    SentRequest,
)
from regroup.testing.listener import RecordingListener

if TYPE_CHECKING:
    from regroup.testing.broker import Broker, ControlError
    from regroup.testing.driver import AppView, GroupDriver

__all__ = [
    "AppView",
    "Broker",
    "Call",
    "ConfigLike",
    "ControlError",
    "CoordinatorTestContext",
    "GroupDriver",
    "GroupNotStableError",
    "InProcessGroup",
    "InvariantViolation",
    "LivelockError",
    "ManualClock",
    "Member",
    "NotAnsweredError",
    "RecordingListener",
    "ReplayMismatchError",
    "SentRequest",
    "TopicsLike",
]


def __getattr__(name: str) -> Any:
    """``Broker`` and ``ControlError`` on first use (PEP 562): the server loads only when a
    test asks for it."""
    if name == "Broker":
        from regroup.testing.broker import Broker

        return Broker
    if name == "ControlError":
        from regroup.testing.broker import ControlError

        return ControlError
    if name in ("GroupDriver", "AppView"):
        from regroup.testing import driver

        return getattr(driver, name)
    raise AttributeError(f"module 'regroup.testing' has no attribute {name!r}")
