"""Single requests that must not stall every client of the one event loop.

A large DescribeGroups is answered in slices, other connections served between
them; a Produce re-runs only the parked Fetches it completes; a partition listed
several times in one Fetch is answered once, as Kafka answers it. Structure is
asserted (slices, the order of answers, counted wake-ups, sizes), never timings.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import threading
import uuid
from collections.abc import Coroutine
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.index import load_response_schema
from kio.serial import entity_reader

from regroup.model.requests.admin import DescribeGroupsRequest
from regroup.server.apis import large_requests
from regroup.server.apis.fetch_waiters import FetchWaiters
from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.background import BackgroundServer
from regroup.server.clients.wire_client import RequestEncoder, WireClient, fetch_values
from regroup.server.log.partitions import encode_batch
from regroup.server.net.connection import ConnectionState

ENC = RequestEncoder("test")


def _body(api_key: int, version: int, values: dict[str, Any]) -> bytes:
    return ENC.encode(api_key, version, values)[1][4:]


def _decode(api_key: int, version: int, frame: bytes) -> Any:
    cls: Any = load_response_schema(api_key, version)
    _, offset = entity_reader(cls.__header_schema__)(frame[4:], 0)
    body, _ = entity_reader(cls)(frame[4:], offset)
    return body


async def _serve(server: RegroupServer, body: bytes, conn_id: int = 1) -> bytes:
    served = server.serve_now(ConnectionState(conn_id, "t"), body)
    if isinstance(served, Coroutine):
        served = await served
    assert isinstance(served, bytes)
    return served


def _server() -> RegroupServer:
    return RegroupServer(ServerOptions(port=0, seed=1))


def _describe_groups(names: list[str]) -> dict[str, Any]:
    return {"groups": names, "include_authorized_operations": False}


# -- a Fetch that lists one partition several times ----------------------------------------


def _fetch_topics(
    topics: list[tuple[str, list[tuple[int, int]]]], max_bytes: int, *, min_bytes: int = 1
) -> dict[str, Any]:
    """Fetch v12 values of several topic entries, each (topic, [(partition, offset)])."""
    values = fetch_values("x", [], max_bytes=max_bytes)
    values["min_bytes"] = min_bytes
    values["topics"] = [
        {
            "topic": name,
            "partitions": [
                {
                    "partition": partition,
                    "current_leader_epoch": -1,
                    "fetch_offset": offset,
                    "last_fetched_epoch": -1,
                    "log_start_offset": -1,
                    "partition_max_bytes": 1 << 20,
                }
                for partition, offset in partitions
            ],
        }
        for name, partitions in topics
    ]
    return values


def test_a_fetch_listing_one_partition_ten_times_reads_and_answers_it_once() -> None:
    async def run() -> None:
        server = _server()
        await server.start()
        try:
            server.create_topic("big", 1)
            for _ in range(20):
                server.append_local("big", 0, [b"x" * 10_000])
            batch = len(encode_batch([b"x" * 10_000], 0))
            values = _fetch_topics([("big", [(0, 0)] * 10)], 50 << 20)
            frame = await _serve(server, _body(1, 12, values))
        finally:
            await server.stop()
        response = _decode(1, 12, frame)
        # Kafka's FetchRequest.fetchData: one entry per partition, so one answer of 20 batches
        # (it used to be ten answers of 20 batches each: 2 MB for 200 KB of data).
        assert [
            (t.topic, [p.partition_index for p in t.partitions]) for t in response.responses
        ] == [("big", [0])]
        assert len(response.responses[0].partitions[0].records) == 20 * batch
        assert len(frame) < 2 * 20 * batch

    asyncio.run(run())


def test_a_repeated_partition_keeps_its_first_place_and_its_last_fetch_offset() -> None:
    async def run() -> None:
        server = _server()
        await server.start()
        try:
            server.create_topic("big", 2)
            server.create_topic("small", 1)
            for _ in range(20):
                server.append_local("big", 0, [b"v"])
            server.append_local("big", 1, [b"w"])
            server.append_local("small", 0, [b"s"])
            values = _fetch_topics(
                [("big", [(0, 0)]), ("small", [(0, 0)]), ("big", [(0, 15), (1, 0)])], 1 << 20
            )
            frame = await _serve(server, _body(1, 12, values))
            # Consecutive partitions of one topic share its entry (FetchResponse.toMessage).
            joined = _fetch_topics([("big", [(0, 3)]), ("big", [(1, 0)])], 1 << 20)
            joined_frame = await _serve(server, _body(1, 12, joined))
        finally:
            await server.stop()
        response = _decode(1, 12, frame)
        layout = [(t.topic, [p.partition_index for p in t.partitions]) for t in response.responses]
        assert layout == [("big", [0]), ("small", [0]), ("big", [1])]
        records = response.responses[0].partitions[0].records
        assert struct.unpack_from(">q", records, 0)[0] == 15  # the last listing's offset
        assert len(records) == 5 * len(encode_batch([b"v"], 0))
        joined_response = _decode(1, 12, joined_frame)
        layout = [
            (t.topic, [p.partition_index for p in t.partitions]) for t in joined_response.responses
        ]
        assert layout == [("big", [0, 1])]

    asyncio.run(run())


def test_a_repeated_partition_by_topic_id_is_answered_once() -> None:
    async def run() -> None:
        server = _server()
        await server.start()
        try:
            server.create_topic("big", 1)
            for _ in range(3):
                server.append_local("big", 0, [b"v"])
            found = server.log.topic("big")
            assert found is not None
            topic_id = uuid.UUID(bytes=found.topic_id.to_bytes())
            values = _fetch_topics([("", [(0, 0)] * 4)] * 3, 1 << 20)
            for topic in values["topics"]:
                del topic["topic"]
                topic["topic_id"] = topic_id
            frame = await _serve(server, _body(1, 13, values))
        finally:
            await server.stop()
        response = _decode(1, 13, frame)
        assert [[p.partition_index for p in t.partitions] for t in response.responses] == [[0]]
        assert len(response.responses[0].partitions[0].records) == 3 * len(encode_batch([b"v"], 0))

    asyncio.run(run())


# -- parked Fetches: a Produce completes only those it satisfies ---------------------------


def test_a_produce_re_runs_only_the_parked_fetches_it_satisfies() -> None:
    """2,000 long-polls that one record cannot satisfy, 3 that it can, and 20 that need
    k batches each: every append re-runs exactly the Fetches it completes."""

    async def run() -> None:
        server = _server()
        await server.start()
        reruns = 0
        real_fetch = server.cluster.fetch

        def counted(req: Any) -> Any:
            nonlocal reruns
            reruns += 1
            return real_fetch(req)

        server.cluster.fetch = counted  # type: ignore[method-assign]
        try:
            server.create_topic("hot", 1)
            batch = len(encode_batch([b"r"], 0))

            def park(min_bytes: int, conn_id: int) -> asyncio.Task[bytes | None]:
                values = _fetch_topics([("hot", [(0, 0)])], 1 << 20, min_bytes=min_bytes)
                values["max_wait"] = 60_000
                served = server.serve_now(ConnectionState(conn_id, "t"), _body(1, 12, values))
                assert isinstance(served, Coroutine)
                return asyncio.ensure_future(served)

            idle = [park(1 << 20, 10_000 + i) for i in range(2_000)]
            eager = [park(1, 20_000 + i) for i in range(3)]
            stepped = [park(k * batch, 30_000 + k) for k in range(1, 21)]
            for _ in range(3):
                await asyncio.sleep(0)
            assert reruns == 2_023  # each ran once, found nothing, parked
            reruns = 0
            for k in range(1, 21):
                server.append_local("hot", 0, [b"r"])
                for _ in range(3):
                    await asyncio.sleep(0)
                expected = 1 + (3 if k == 1 else 0)  # the k-batch Fetch (and the 3 at first)
                assert reruns == expected, (k, reruns)
                reruns = 0
                assert [task.done() for task in stepped] == [i < k for i in range(20)]
            assert all(task.done() for task in eager)
            assert not any(task.done() for task in idle)
            assert server._fetch_waiters.woken == 23
        finally:
            await server.stop()

    asyncio.run(run())


_KEYS = [("t", 0), ("t", 1), ("u", 0)]


@settings(max_examples=60, deadline=None)
@given(
    waiters=st.lists(
        st.tuples(
            st.dictionaries(st.sampled_from(_KEYS), st.integers(0, 40), min_size=1),
            st.integers(1, 100),
        ),
        min_size=1,
        max_size=8,
    ),
    appends=st.lists(st.tuples(st.sampled_from(_KEYS), st.integers(1, 30)), max_size=30),
)
def test_fetch_waiters_complete_exactly_when_kafka_would(
    waiters: list[tuple[dict[tuple[str, int], int], int]],
    appends: list[tuple[tuple[str, int], int]],
) -> None:
    """A waiter completes at the first append after which its partitions' bytes, each
    counted up to its cap, reach ``need`` (``DelayedFetch.tryComplete``), never earlier."""

    async def run() -> None:
        index = FetchWaiters()
        tasks = [asyncio.ensure_future(index.wait(caps, need, 60)) for caps, need in waiters]
        await asyncio.sleep(0)
        added = dict.fromkeys(_KEYS, 0)
        for key, size in appends:
            index.appended(key, size)
            added[key] += size
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            for (caps, need), task in zip(waiters, tasks, strict=True):
                got = sum(min(added[key], cap) for key, cap in caps.items())
                assert task.done() == (got >= need), (caps, need, added)
        index.wake_all()
        await asyncio.gather(*tasks)
        assert len(index) == 0

    asyncio.run(run())


# -- a large DescribeGroups is answered in slices ------------------------------------------


def test_a_large_describe_groups_is_answered_in_slices_with_the_loop_running_between() -> None:
    names = [f"group-{i}" for i in range(20_000)]

    async def run() -> None:
        server = _server()
        await server.start()
        slices: list[int] = []
        turns_at_slice: list[int] = []
        turns = 0
        real_handle = server.coordinator.handle

        def handle(token: Any, request: Any, now_ms: int) -> Any:
            if isinstance(request, DescribeGroupsRequest):
                slices.append(len(request.groups))
                turns_at_slice.append(turns)
            return real_handle(token, request, now_ms)

        server.coordinator.handle = handle  # type: ignore[method-assign]
        stop = False

        async def ticker() -> None:
            nonlocal turns
            while not stop:
                turns += 1
                await asyncio.sleep(0)

        ticking = asyncio.ensure_future(ticker())
        try:
            body = _body(15, 5, _describe_groups(names))
            assert len(body) > large_requests.LARGE_FRAME_BYTES
            served = server.serve_now(ConnectionState(2, "t"), body)
            assert isinstance(served, Coroutine)  # not answered inside the socket callback
            frame = await served
            assert isinstance(frame, bytes)
        finally:
            stop = True
            await ticking
            await server.stop()
        chunk = large_requests.CHUNK_GROUPS
        assert slices == [chunk] * (len(names) // chunk)
        # Between two slices the loop ran other callbacks (here: the ticker).
        assert all(b > a for a, b in itertools.pairwise(turns_at_slice))
        response = _decode(15, 5, frame)
        assert [g.group_id for g in response.groups] == names
        assert {g.group_state for g in response.groups} == {"Dead"}

    asyncio.run(run())


def test_a_large_describe_groups_answers_as_the_one_shot_path_does() -> None:
    """Slicing changes when the answer is computed, not what it is."""
    names = [f"g{i}" for i in range(3_000)]

    async def run() -> None:
        server = _server()
        await server.start()
        try:
            # A classic group that exists among the names (JoinGroup v9 with no member id).
            join = {
                "group_id": "g7",
                "session_timeout": 45_000,
                "rebalance_timeout": 60_000,
                "member_id": "",
                "group_instance_id": None,
                "protocol_type": "consumer",
                "reason": None,
                "protocols": [{"name": "range", "metadata": b""}],
            }
            await _serve(server, _body(11, 9, join))
            body = _body(15, 5, _describe_groups(names))
            sliced = await _serve(server, body)
            small = [_body(15, 5, _describe_groups([name])) for name in ("g6", "g7", "g8")]
            singles = [_decode(15, 5, await _serve(server, b)).groups[0] for b in small]
        finally:
            await server.stop()
        groups = _decode(15, 5, sliced).groups
        assert [g.group_id for g in groups] == names
        assert list(groups[6:9]) == singles
        assert [g.group_state for g in singles] == ["Dead", "Empty", "Dead"]

    asyncio.run(run())


def test_another_client_is_answered_while_a_large_describe_groups_is_served() -> None:
    """Over sockets: client B's ApiVersions is answered while client A's DescribeGroups of
    20,000 groups is still being served (it used to be answered only after it)."""
    names = [f"group-{i}" for i in range(20_000)]
    with BackgroundServer(ServerOptions(port=0, seed=1)) as background:
        server = background.server
        assert server is not None
        with (
            WireClient("127.0.0.1", background.port) as big,
            WireClient("127.0.0.1", background.port) as small,
        ):
            cid, frame = big.encode(15, 5, _describe_groups(names))
            big.send_raw(frame)
            # Wait until the server has taken up A's request (a call on the server's loop:
            # it cannot run while a request holds the loop).
            for _ in range(10_000):
                if background.call(lambda: server.stats["requests"]) >= 1:
                    break
            versions = small.request(
                18, 3, {"client_software_name": "t", "client_software_version": "1"}
            )
            assert versions.error_code.value == 0
            still_serving = background.call(
                lambda: [p.inflight is not None for p in server.connections]
            )
            assert any(still_serving)  # A's DescribeGroups is not answered yet
            response = big.decode(15, 5, cid, big.read_frame())
        assert [g.group_id for g in response.groups] == names


# -- a heartbeat subscribing to thousands of topics is answered off the loop -------------


def _big_heartbeat(topics: int, group: str = "wide") -> dict[str, Any]:
    return {
        "group_id": group,
        "member_id": "",
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30_000,
        "subscribed_topic_names": [f"topic-{i}" for i in range(topics)],
        "server_assignor": None,
        "topic_partitions": [],
    }


def _create_topics(count: int) -> dict[str, Any]:
    """One CreateTopics v7 of ``count`` one-partition topics (one metadata update)."""
    return {
        "topics": [
            {
                "name": f"topic-{i}",
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
            for i in range(count)
        ],
        "timeout": 30_000,
        "validate_only": False,
    }


def test_a_large_heartbeat_is_answered_off_the_loop_and_group_requests_wait_for_it() -> None:
    """While the coordinator answers a heartbeat subscribing to 3,000 topics in a worker
    thread, an ApiVersions is answered at once and a DescribeGroups of its group waits
    for it, then sees the member it added."""

    async def run() -> None:
        server = _server()
        await server.start()
        try:
            await _serve(server, _body(19, 7, _create_topics(3_000)))
            body = _body(68, 0, _big_heartbeat(3_000))
            assert len(body) > large_requests.LARGE_FRAME_BYTES
            heartbeat = server.serve_now(ConnectionState(1, "t"), body)
            assert isinstance(heartbeat, Coroutine)  # not answered inside the callback
            big = asyncio.ensure_future(heartbeat)
            await asyncio.sleep(0)
            assert server.stats.get("offloaded", 0) == 0  # the worker thread is at it
            versions = server.serve_now(
                ConnectionState(2, "t"),
                _body(18, 3, {"client_software_name": "t", "client_software_version": "1"}),
            )
            assert isinstance(versions, bytes)  # the data plane is served meanwhile
            describe = server.serve_now(
                ConnectionState(3, "t"),
                _body(69, 0, {"group_ids": ["wide"], "include_authorized_operations": False}),
            )
            assert isinstance(describe, Coroutine)  # a group request waits for the gate
            waiting = asyncio.ensure_future(describe)
            for _ in range(3):
                await asyncio.sleep(0)
            assert not big.done() and not waiting.done()
            frame, described = await asyncio.gather(big, waiting)
            assert server.stats["offloaded"] == 1
        finally:
            await server.stop()
        assert isinstance(frame, bytes) and isinstance(described, bytes)
        response = _decode(68, 0, frame)
        assert response.error_code.value == 0
        assigned = sum(len(t.partitions) for t in response.assignment.topic_partitions)
        assert assigned == 3_000
        # The DescribeGroups was served after the heartbeat: it sees the member it added.
        (group,) = _decode(69, 0, described).groups
        assert [m.member_id for m in group.members] == [response.member_id]

    asyncio.run(run())


def test_another_client_is_answered_while_a_large_heartbeat_is_served() -> None:
    """Over sockets: client B's ApiVersions is answered while client A's heartbeat
    subscribing to 3,000 topics is still being answered."""
    with BackgroundServer(ServerOptions(port=0, seed=1)) as background:
        server = background.server
        assert server is not None

        with WireClient("127.0.0.1", background.port) as admin:
            admin.request(19, 7, _create_topics(3_000))
        with (
            WireClient("127.0.0.1", background.port) as big,
            WireClient("127.0.0.1", background.port) as small,
        ):
            cid, frame = big.encode(68, 0, _big_heartbeat(3_000))
            big.send_raw(frame)
            for _ in range(10_000):
                if background.call(lambda: server.stats["requests"]) >= 1:
                    break
            versions = small.request(
                18, 3, {"client_software_name": "t", "client_software_version": "1"}
            )
            assert versions.error_code.value == 0
            still_serving = background.call(
                lambda: [p.inflight is not None for p in server.connections]
            )
            assert any(still_serving)  # A's heartbeat is not answered yet
            response = big.decode(68, 0, cid, big.read_frame())
        assert response.error_code.value == 0
        assert sum(len(t.partitions) for t in response.assignment.topic_partitions) == 3_000


def test_no_slice_of_a_large_request_reaches_the_coordinator_while_it_is_off_the_loop() -> None:
    """A DescribeGroups served in slices and a large heartbeat at the same time: the
    coordinator is never called on the loop while the worker thread has it."""
    names = [f"group-{i}" for i in range(20_000)]

    async def run() -> None:
        server = _server()
        await server.start()
        loop_thread = threading.current_thread()
        overlaps: list[str] = []
        calls = 0
        real_handle = server.coordinator.handle

        def handle(token: Any, request: Any, now_ms: int) -> Any:
            nonlocal calls
            calls += 1
            if threading.current_thread() is loop_thread and server._coordinator_busy is not None:
                overlaps.append(type(request).__name__)
            return real_handle(token, request, now_ms)

        server.coordinator.handle = handle  # type: ignore[method-assign]
        try:
            await _serve(server, _body(19, 7, _create_topics(3_000)))
            describe = server.serve_now(
                ConnectionState(1, "t"), _body(15, 5, _describe_groups(names))
            )
            assert isinstance(describe, Coroutine)
            sliced = asyncio.ensure_future(describe)
            while calls == 0:  # the first slice is answered
                await asyncio.sleep(0.001)
            heartbeat = server.serve_now(
                ConnectionState(2, "t"), _body(68, 0, _big_heartbeat(3_000))
            )
            assert isinstance(heartbeat, Coroutine)
            await asyncio.gather(sliced, heartbeat)
        finally:
            await server.stop()
        assert overlaps == []
        assert server.stats["offloaded"] == 1

    asyncio.run(run())
