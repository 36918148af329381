"""Long work off the event loop: large read-only group requests served in slices.

One asyncio loop serves every connection, so a request that takes seconds to
decode, answer and encode stalls every client for that long (an OffsetFetch of
1,000,000 partitions: 6.5 s; a DescribeGroups naming 100,000 groups: 2.9 s). A
frame above ``LARGE_FRAME_BYTES`` of an API in ``SLICED`` is served this way
instead:

1. decoding (kio, then the version-neutral requests) runs in a worker thread:
   pure functions of the frame's bytes;
2. the coordinator, which is not thread-safe, answers on the loop one slice at
   a time (at most ``Sliced.size`` partitions or groups), and the loop runs
   whatever else is ready between two slices. These requests only read, so
   slices answered between other requests are each a consistent read, as
   Kafka's are per partition (OffsetFetch) and per group (DescribeGroups:
   ``GroupCoordinatorService.describeGroups`` reads each group on its own
   shard, so one answer never was one snapshot of every group);
3. the slices' answers are merged in the request's order, and the response is
   built and encoded in a worker thread.

A worker thread still holds the GIL while it runs Python, but the interpreter
hands the GIL to the loop every few milliseconds, so other connections keep
being served. An OffsetFetch of every partition of a group (no topics named)
is answered in one slice.

4. A ConsumerGroupHeartbeat frame above ``LARGE_FRAME_BYTES`` (a subscription
   of about 1,000 topics or more: its target assignment can take seconds)
   cannot be cut: one heartbeat is one coordinator operation. The coordinator
   answers it in a worker thread instead, behind a gate
   (``RegroupServer._large_heartbeat``): while the gate is shut, every request
   that reaches the coordinator (the group APIs, and Metadata and CreateTopics,
   which may create topics) waits for it in the order it came, and so do the
   coordinator's timers, offset expiry and metadata updates; the data plane
   (Produce, Fetch, ListOffsets, FindCoordinator, ApiVersions ...) is served
   meanwhile. The operation's records are written and its replies sent on the
   loop, before the gate opens. Kafka 4.0 computes a target assignment inside
   the heartbeat on a coordinator thread, beside the network threads that keep
   serving; 4.3 moves the assignor itself off that thread (KIP-1263,
   ``group.consumer.assignor.offload.enable``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from regroup.model.errors import ErrorCode
from regroup.model.requests.admin import DescribeGroupsRequest, DescribeGroupsResponse
from regroup.model.requests.consumer import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from regroup.model.requests.offsets import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from regroup.server.wire.api_keys import ApiKey

__all__ = [
    "CHUNK_GROUPS",
    "CHUNK_PARTITIONS",
    "LARGE_FRAME_BYTES",
    "SLICED",
    "Sliced",
    "merge_consumer_group_describe",
    "merge_describe_groups",
    "merge_offset_fetch",
    "split_consumer_group_describe",
    "split_describe_groups",
    "split_offset_fetch",
]

#: Frames of a ``SLICED`` API above this size are served in slices (an OffsetFetch of
#: about 4,000 partitions, a DescribeGroups of about 1,000 group ids).
LARGE_FRAME_BYTES = 16 * 1024
#: Partitions the coordinator answers in one go before the loop runs again.
CHUNK_PARTITIONS = 2_000
#: Groups the coordinator describes in one go before the loop runs again.
CHUNK_GROUPS = 1_000
OFFSET_FETCH_KEY = ApiKey.OFFSET_FETCH
DESCRIBE_GROUPS_KEY = ApiKey.DESCRIBE_GROUPS
CONSUMER_GROUP_DESCRIBE_KEY = ApiKey.CONSUMER_GROUP_DESCRIBE


@dataclass(frozen=True, slots=True)
class Sliced:
    """How one API is cut into slices and put together again."""

    #: ``split(request, size)``: the request as requests of at most ``size`` items, in order.
    split: Callable[[Any, int], Iterator[Any]]
    #: ``merge(answers)``: one response from the slices' responses, in order.
    merge: Callable[[list[Any]], Any]
    size: int


def split_offset_fetch(request: OffsetFetchRequest, size: int) -> Iterator[OffsetFetchRequest]:
    """``request`` as requests of at most ``size`` partitions each, in order."""
    if not request.topics:
        yield request
        return
    piece: list[OffsetFetchRequestTopic] = []
    count = 0
    for topic in request.topics:
        indexes = topic.partition_indexes
        if not indexes:
            piece.append(topic)
            continue
        pos = 0
        while pos < len(indexes):
            take = indexes[pos : pos + size - count]
            piece.append(OffsetFetchRequestTopic(topic.name, take))
            count += len(take)
            pos += len(take)
            if count >= size:
                yield _with_topics(request, piece)
                piece, count = [], 0
    if piece:
        yield _with_topics(request, piece)


def _with_topics(
    request: OffsetFetchRequest, topics: list[OffsetFetchRequestTopic]
) -> OffsetFetchRequest:
    return OffsetFetchRequest(
        request.group_id,
        tuple(topics),
        request.member_id,
        request.member_epoch,
        request.require_stable,
    )


def merge_offset_fetch(pieces: list[OffsetFetchResponse]) -> OffsetFetchResponse:
    """One response from the pieces' (a group-level error in any piece answers all)."""
    if len(pieces) == 1:
        return pieces[0]
    for piece in pieces:
        if piece.error_code != ErrorCode.NONE:
            return piece
    by_topic: dict[str, list[OffsetFetchResponsePartition]] = {}
    for piece in pieces:
        for topic in piece.topics:
            by_topic.setdefault(topic.name, []).extend(topic.partitions)
    return OffsetFetchResponse(
        ErrorCode.NONE,
        tuple(OffsetFetchResponseTopic(name, tuple(parts)) for name, parts in by_topic.items()),
        max((p.throttle_time_ms for p in pieces), default=0),
    )


def split_describe_groups(
    request: DescribeGroupsRequest, size: int
) -> Iterator[DescribeGroupsRequest]:
    """A DescribeGroups as requests of at most ``size`` group ids each, in order."""
    ids = request.groups
    for pos in range(0, max(len(ids), 1), size):
        yield DescribeGroupsRequest(ids[pos : pos + size], request.include_authorized_operations)


def merge_describe_groups(pieces: list[DescribeGroupsResponse]) -> DescribeGroupsResponse:
    """The slices' groups, in order, in one response."""
    if len(pieces) == 1:
        return pieces[0]
    return DescribeGroupsResponse(
        tuple(group for piece in pieces for group in piece.groups),
        max(piece.throttle_time_ms for piece in pieces),
    )


def split_consumer_group_describe(
    request: ConsumerGroupDescribeRequest, size: int
) -> Iterator[ConsumerGroupDescribeRequest]:
    """A ConsumerGroupDescribe as requests of at most ``size`` group ids each, in order."""
    ids = request.group_ids
    for pos in range(0, max(len(ids), 1), size):
        yield ConsumerGroupDescribeRequest(
            ids[pos : pos + size], request.include_authorized_operations
        )


def merge_consumer_group_describe(
    pieces: list[ConsumerGroupDescribeResponse],
) -> ConsumerGroupDescribeResponse:
    """The slices' groups, in order, in one response."""
    if len(pieces) == 1:
        return pieces[0]
    return ConsumerGroupDescribeResponse(
        tuple(group for piece in pieces for group in piece.groups),
        max(piece.throttle_time_ms for piece in pieces),
    )


#: API key -> how a large frame of it is served in slices.
SLICED: dict[int, Sliced] = {
    OFFSET_FETCH_KEY: Sliced(split_offset_fetch, merge_offset_fetch, CHUNK_PARTITIONS),
    DESCRIBE_GROUPS_KEY: Sliced(split_describe_groups, merge_describe_groups, CHUNK_GROUPS),
    CONSUMER_GROUP_DESCRIBE_KEY: Sliced(
        split_consumer_group_describe, merge_consumer_group_describe, CHUNK_GROUPS
    ),
}
