"""regroup's pytest plugin: a ``Broker`` per test, or one for the whole session.

Installed with regroup (entry point ``pytest11``: ``regroup``), so the fixtures
are there in any project that depends on regroup; without the installed entry
point, load it with ``-p regroup.testing.pytest_plugin`` or
``pytest_plugins = ["regroup.testing.pytest_plugin"]`` in a conftest.

* ``regroup_broker``: a fresh ``Broker`` for one test, stopped after it. Its
  topics and group configs come from the ``regroup_broker`` mark:
  ``@pytest.mark.regroup_broker(topics={"orders": 3}, configs={...})``.
* ``regroup_broker_session``: one ``Broker`` shared by every test of the
  session (a faster start when tests are many; they must use their own group
  ids and topics). Faults set by a test are cleared after it
  (``reset_faults``: errors, RTTs, fenced members, tracking; timers resumed).

The plugin imports the server only when a fixture is used, so a project that
installs regroup pays nothing at pytest's start (importing the server also
imports kio, whose types build hypothesis strategies on import).

* ``regroup_driver``: a factory of started ``GroupDriver`` objects on the test's
  ``regroup_broker`` (``regroup_driver("kafka-python", "my-group", ["orders"])``),
  each stopped after the test.

Waiting for a group is a ``Broker`` method: ``wait_for_stable(group_id,
members=2)`` and ``wait_for_assignment(group_id, {"orders": [0, 1]},
client_id="app")`` block until it holds, or raise ``ControlError`` saying what
was last seen (docs/testing.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the server loads when a fixture is used, not when pytest starts
    from regroup.testing.broker import Broker
    from regroup.testing.driver import GroupDriver

__all__ = ["regroup_broker", "regroup_broker_session", "regroup_driver"]

_MARK = "regroup_broker"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_MARK}(topics=None, configs=None, **options): topics, group configs and options "
        "(default_partitions, auto_create_topics, seed) of the test's regroup_broker",
    )


def _options(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker(_MARK)
    if marker is None:
        return {}
    if marker.args:
        raise pytest.UsageError(f"@pytest.mark.{_MARK} takes keyword arguments only")
    return dict(marker.kwargs)


@pytest.fixture
def regroup_broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """A regroup broker on a free port for this test (``broker.bootstrap``)."""
    from regroup.testing.broker import Broker

    with Broker(**_options(request)) as broker:
        yield broker


@pytest.fixture(scope="session")
def _regroup_session_broker() -> Iterator[Broker]:
    from regroup.testing.broker import Broker

    with Broker() as broker:
        yield broker


@pytest.fixture
def regroup_broker_session(_regroup_session_broker: Broker) -> Iterator[Broker]:
    """The session's shared broker; the faults a test set are cleared after it."""
    broker = _regroup_session_broker
    yield broker
    broker.reset_faults()


@pytest.fixture
def regroup_driver(regroup_broker: Broker) -> Iterator[Callable[..., GroupDriver]]:
    """``make(client, group_id, topics, **options)``: a started ``GroupDriver`` on the test's
    broker (``GroupDriver``'s options); every one made is stopped after the test."""
    from regroup.testing.driver import GroupDriver

    made: list[GroupDriver] = []

    def make(client: Any, group_id: str, topics: Sequence[str], **options: Any) -> GroupDriver:
        driver = GroupDriver(client, regroup_broker.bootstrap, group_id, topics, **options)
        made.append(driver)
        return driver.start()

    yield make
    for driver in reversed(made):
        driver.stop()
