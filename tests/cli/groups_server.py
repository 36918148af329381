"""The server the ``regroup groups`` tests run against: one set-up, each test file's extras.

``server_with_group`` starts a real ``regroup serve`` (``BackgroundServer``, no initial
rebalance delay) with topic ``t`` (2 partitions: 5 records in partition 0, 3 in 1) and a
Stable KIP-848 group ``k`` whose one member (``MEMBER``) joined with a heartbeat over the
wire. ``then(client, heartbeat_response)`` runs on that connection before it closes, for
the commits a test file needs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.server.app import ServerOptions
from regroup.server.background import BackgroundServer
from regroup.server.clients.wire_client import WireClient, consumer_join_values

MEMBER = "AAAAAAAAAAAAAAAAAAAAAA"


@contextmanager
def server_with_group(then: Callable[[WireClient, Any], None]) -> Iterator[BackgroundServer]:
    config = dataclasses.replace(GroupCoordinatorConfig(), group_initial_rebalance_delay_ms=0)
    with BackgroundServer(ServerOptions(port=0, config=config)) as server:
        assert server.server is not None
        server.call(server.server.create_topic, "t", 2)
        server.call(server.server.append_local, "t", 0, [b"x"] * 5)
        server.call(server.server.append_local, "t", 1, [b"y"] * 3)
        with WireClient("127.0.0.1", server.port) as client:
            beat = client.request(68, 1, consumer_join_values("k", MEMBER, ("t",)))
            assert beat.error_code.value == 0
            then(client, beat)
        yield server
