"""Four ordinary requests must not hang ``regroup serve``.

Two static members (rebalance timeout 10 s) form a Stable group; a JoinGroup for
instance ``i2`` with ``member_id ""`` and a rebalance timeout of 0 (or -1)
replaces ``i2`` in Stable (KIP-345: no rebalance); then ``i1`` leaves. The join
phase that follows waits on the new ``i2`` alone (static members that have not
rejoined are kept, Kafka ``completeClassicGroupJoin``), with a rebalance timeout
of 0: a join timer re-armed at ``now + 0`` ran again in the same timer sweep,
forever, and the whole server stopped answering. Here a fresh connection must
still be answered at once, and the group must end as Kafka's does: the absent
static member is removed when its session times out and the group completes its
join phase Empty.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from regroup.assignors.classic.api import Subscription
from regroup.classic.protocol import encode_subscription
from regroup.server.clients.wire_client import WireClient

JOIN_V, SYNC_V, LEAVE_V, DESCRIBE_V = 7, 5, 4, 5
SESSION_MS = 6_000  # group.min.session.timeout.ms, so the test's wait is short
GROUP = "runaway"


@pytest.fixture
def port() -> Iterator[int]:
    command = [sys.executable, "-m", "regroup.cli.main", "serve", "--port", "0"]
    command += ["--config", "group.initial.rebalance.delay.ms=1000", "--log-level", "ERROR"]
    proc = subprocess.Popen(
        command,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "serving on" in line, line
        yield int(line.rsplit(":", 1)[1])
    finally:
        proc.kill()
        proc.wait()


def _join(instance: str, member_id: str, rebalance_timeout: int) -> dict[str, Any]:
    metadata = encode_subscription(Subscription(topics=("t",)))
    return {
        "group_id": GROUP,
        "session_timeout": SESSION_MS,
        "rebalance_timeout": rebalance_timeout,
        "member_id": member_id,
        "group_instance_id": instance,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": metadata}],
    }


def _send(client: WireClient, api_key: int, version: int, values: Any) -> int:
    cid, frame = client.encode(api_key, version, values)
    client.send_raw(frame)
    return cid


def _stable_group_of_two_static_members(port: int) -> tuple[WireClient, WireClient, str]:
    c1, c2 = WireClient("127.0.0.1", port), WireClient("127.0.0.1", port)
    cid1 = _send(c1, 11, JOIN_V, _join("i1", "", 10_000))
    cid2 = _send(c2, 11, JOIN_V, _join("i2", "", 10_000))
    j1 = c1.decode(11, JOIN_V, cid1, c1.read_frame())
    j2 = c2.decode(11, JOIN_V, cid2, c2.read_frame())
    assert j1.error_code == j2.error_code == 0
    leader, follower = (c1, c2) if j1.leader == j1.member_id else (c2, c1)
    lj, fj = (j1, j2) if leader is c1 else (j2, j1)
    sync = {
        "group_id": GROUP,
        "generation_id": lj.generation_id,
        "protocol_type": "consumer",
        "protocol_name": "range",
    }
    assignments = [{"member_id": m.member_id, "assignment": b""} for m in lj.members]
    cid_l = _send(
        leader,
        14,
        SYNC_V,
        {
            **sync,
            "member_id": lj.member_id,
            "group_instance_id": "i1" if leader is c1 else "i2",
            "assignments": assignments,
        },
    )
    cid_f = _send(
        follower,
        14,
        SYNC_V,
        {
            **sync,
            "member_id": fj.member_id,
            "group_instance_id": "i2" if leader is c1 else "i1",
            "assignments": [],
        },
    )
    assert leader.decode(14, SYNC_V, cid_l, leader.read_frame()).error_code == 0
    assert follower.decode(14, SYNC_V, cid_f, follower.read_frame()).error_code == 0
    return c1, c2, j1.member_id


def _describe(port: int) -> Any:
    with WireClient("127.0.0.1", port, timeout=2.0) as probe:
        response = probe.request(
            15, DESCRIBE_V, {"groups": [GROUP], "include_authorized_operations": False}
        )
    return response.groups[0]


@pytest.mark.parametrize("rebalance_timeout", [0, -1])
def test_static_replacement_with_zero_rebalance_timeout_then_leave_does_not_hang(
    port: int, rebalance_timeout: int
) -> None:
    c1, c2, i1_member = _stable_group_of_two_static_members(port)
    with WireClient("127.0.0.1", port) as c3:
        replaced = c3.request(11, JOIN_V, _join("i2", "", rebalance_timeout))
        assert replaced.error_code == 0  # replaced in Stable, no rebalance (KIP-345)
        leave = c1.request(
            13,
            LEAVE_V,
            {"group_id": GROUP, "members": [{"member_id": i1_member, "group_instance_id": "i1"}]},
        )
        assert leave.error_code == 0
        # The server still answers a fresh connection at once (the socket times out in 2 s).
        assert _describe(port).group_state == "PreparingRebalance"
        # Kafka: the join phase waits until the session timeout removes the static member
        # that never rejoined; the group then completes its join phase Empty.
        deadline = time.monotonic() + SESSION_MS / 1000 + 5
        state = ""
        while time.monotonic() < deadline:
            state = _describe(port).group_state
            if state == "Empty":
                break
            time.sleep(0.2)
        assert state == "Empty"
    c1.close()
    c2.close()
