"""OffsetCommit for partitions that do not exist: UNKNOWN_TOPIC_OR_PARTITION, nothing stored.

Kafka checks this in ``KafkaApis.handleOffsetCommitRequest``, before the group
coordinator sees the request: a partition the metadata cache does not know is
answered UNKNOWN_TOPIC_OR_PARTITION, the others go to the coordinator, and the
two answers make one response (in the request's order here). When no
partition exists, the coordinator is not asked at all. Without this check any
client could store offsets for any number of made-up topics and
grow the store without bound.
"""

from __future__ import annotations

from dataclasses import replace

from regroup.model.errors import ErrorCode
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from regroup.server.log.partitions import Log

__all__ = ["known_partitions", "with_unknown"]


def _exists(log: Log, topic: str, partition: int) -> bool:
    return log.partition(topic, partition) is not None


def known_partitions(log: Log, request: OffsetCommitRequest) -> OffsetCommitRequest | None:
    """``request`` without the partitions ``log`` does not have; ``None`` if none is left."""
    topics = []
    for topic in request.topics:
        kept = tuple(p for p in topic.partitions if _exists(log, topic.name, p.partition_index))
        if kept:
            topics.append(replace(topic, partitions=kept))
    if not topics:
        return None
    if len(topics) == len(request.topics) and all(
        len(a.partitions) == len(b.partitions) for a, b in zip(topics, request.topics, strict=True)
    ):
        return request
    return replace(request, topics=tuple(topics))


def with_unknown(
    log: Log, request: OffsetCommitRequest, answered: OffsetCommitResponse | None
) -> OffsetCommitResponse:
    """The response to all of ``request``: the coordinator's codes, UNKNOWN_TOPIC_OR_PARTITION
    for the partitions that do not exist."""
    codes: dict[tuple[str, int], ErrorCode] = {}
    if answered is not None:
        for topic in answered.topics:
            for p in topic.partitions:
                codes[(topic.name, p.partition_index)] = p.error_code
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return OffsetCommitResponse(
        tuple(
            OffsetCommitResponseTopic(
                topic.name,
                tuple(
                    OffsetCommitResponsePartition(
                        p.partition_index, codes.get((topic.name, p.partition_index), unknown)
                    )
                    for p in topic.partitions
                ),
            )
            for topic in request.topics
        ),
        0 if answered is None else answered.throttle_time_ms,
    )
