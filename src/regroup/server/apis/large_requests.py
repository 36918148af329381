"""Long work off the event loop: a large OffsetFetch in pieces (issue 20, defect 8).

One asyncio loop serves every connection, so a request that takes seconds to
decode, answer and encode stalls every client for that long (an OffsetFetch of
1,000,000 partitions: 6.5 s). A frame above ``LARGE_FRAME_BYTES`` of an
OffsetFetch is served this way instead:

1. decoding (kio, then the version-neutral requests) runs in a worker thread:
   pure functions of the frame's bytes;
2. the coordinator, which is not thread-safe, answers on the loop, at most
   ``CHUNK_PARTITIONS`` partitions at a time, yielding to the loop between
   pieces (an OffsetFetch only reads, so pieces answered between other
   requests are each a consistent read, as Kafka's are per partition);
3. the pieces' answers are merged in the request's order, and the response is
   built and encoded in a worker thread.

A worker thread still holds the GIL while it runs Python, but the interpreter
hands the GIL to the loop every few milliseconds, so other connections keep
being served. An OffsetFetch of every partition of a group (no topics named)
is answered in one piece.
"""

from __future__ import annotations

from collections.abc import Iterator

from regroup.model.errors import ErrorCode
from regroup.model.requests.offsets import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from regroup.server.wire.api_keys import ApiKey

__all__ = ["CHUNK_PARTITIONS", "LARGE_FRAME_BYTES", "merge_offset_fetch", "split_offset_fetch"]

#: OffsetFetch frames above this size (about 4,000 partitions) are served in pieces.
LARGE_FRAME_BYTES = 16 * 1024
#: Partitions the coordinator answers in one go before the loop runs again.
CHUNK_PARTITIONS = 2_000
OFFSET_FETCH_KEY = ApiKey.OFFSET_FETCH


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
