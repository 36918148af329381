"""Fixtures of the wire-server tests: a server on loopback, on a free port."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.server.app import ServerOptions
from regroup.server.background import BackgroundServer

#: Broker configs that keep real clients' rebalances short in tests.
FAST_CONFIG = dataclasses.replace(
    GroupCoordinatorConfig(),
    group_initial_rebalance_delay_ms=0,
    group_min_session_timeout_ms=500,
    group_consumer_heartbeat_interval_ms=300,
    group_consumer_min_heartbeat_interval_ms=100,
    group_consumer_session_timeout_ms=4000,
    group_consumer_min_session_timeout_ms=1000,
)


def fast_options(data_dir: Path | None = None, **changes: Any) -> ServerOptions:
    options = ServerOptions(
        host="127.0.0.1", port=0, data_dir=data_dir, config=FAST_CONFIG, default_partitions=3
    )
    return dataclasses.replace(options, **changes)


@pytest.fixture
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(fast_options()) as running:
        yield running


@pytest.fixture
def fast_options_factory() -> Callable[..., ServerOptions]:
    return fast_options
