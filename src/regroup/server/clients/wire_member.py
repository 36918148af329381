"""regroup's own KIP-848 member over a real socket: the sans-IO member plus a wire client.

``regroup.consumer.member.member.ConsumerMember`` decides what to send; this driver
sends it to a regroup server (or a Kafka broker) and hands the answers back,
with the clock it is given. It is the only client that uses regroup's private
wire extensions (``heartbeat_codec`` rule 2, ``assignor_rpc``):

* ConsumerGroupHeartbeat v1 goes out with the ``REGROUP_TAG`` tagged field, so
  the member's KIP-848 ``ClientAssignors`` reach the coordinator, and the
  response may carry COMPUTE_ASSIGNMENT (10000); it is read by
  ``heartbeat_codec.decode_response`` (kio has no enum member for 10000);
* ConsumerGroupPrepareAssignment / InstallAssignment go on the private keys
  (``versions.PREPARE_ASSIGNMENT_KEY``/``INSTALL_ASSIGNMENT_KEY``);
* OffsetCommit v9 (member id and epoch, KIP-848) is encoded by kio.

Blocking and one request at a time, like ``WireClient``: for tests, examples
and ``regroup`` tooling, not for throughput. Against a real Kafka broker the
tag is skipped (unknown tagged fields are ignored) and the private keys are
unsupported, so only server-side assignors work there.
"""

from __future__ import annotations

from typing import Any

from regroup.consumer.member.member import ConsumerMember, MemberRequest
from regroup.model.errors import ErrorCode
from regroup.model.metadata import MetadataImage, TopicImage, replica_racks
from regroup.model.requests.consumer import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentRequest,
)
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from regroup.server.clients.wire_client import WireClient, WireClientError
from regroup.server.wire import heartbeat_codec
from regroup.server.wire.kio_build import to_uuid
from regroup.server.wire.versions import INSTALL_ASSIGNMENT_KEY, PREPARE_ASSIGNMENT_KEY

__all__ = ["WireMember", "fetch_metadata"]

_HEARTBEAT_VERSION = 1
_COMMIT_VERSION = 9


def fetch_metadata(client: WireClient) -> MetadataImage:
    """Every topic with its id, partition count and replica racks (Metadata v12, all topics).

    A broker's rack is nullable; a replica on a broker without a rack (or on a
    broker the response does not list) adds no rack (``replica_racks``).
    """
    response = client.request(
        3,
        12,
        {
            "topics": None,
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    rack_of: dict[int, str | None] = {
        int(b.node_id): None if b.rack is None else str(b.rack) for b in response.brokers
    }
    topics: list[TopicImage] = []
    for t in response.topics:
        if int(t.error_code.value) != 0 or t.name is None:
            continue
        racks = replica_racks(
            [rack_of.get(int(node)) for node in p.replica_nodes]
            for p in sorted(t.partitions, key=lambda p: int(p.partition_index))
        )
        # No rack anywhere (regroup's own broker has none): "no racks known", as before.
        topics.append(
            TopicImage(
                to_uuid(t.topic_id), str(t.name), len(t.partitions), racks if any(racks) else ()
            )
        )
    return MetadataImage.of(topics)


class WireMember:
    """Drives one ``ConsumerMember`` over one ``WireClient`` connection."""

    def __init__(self, client: WireClient, member: ConsumerMember) -> None:
        self.client = client
        self.member = member
        #: Every heartbeat response received, in order (tests look at the error codes).
        self.heartbeat_errors: list[ErrorCode] = []

    def step(self, now_ms: int) -> int:
        """Send what the member wants to send now and feed it the answers; how many."""
        requests = self.member.poll(now_ms)
        for request in requests:
            self._exchange(request, now_ms)
        return len(requests)

    def _exchange(self, request: MemberRequest, now_ms: int) -> None:
        try:
            response = self._send(request)
        except (WireClientError, OSError):
            self.member.on_request_failed(request, now_ms)
            raise
        self.member.on_response(request, response, now_ms)

    def _send(self, request: MemberRequest) -> Any:
        client = self.client
        if isinstance(request, ConsumerGroupHeartbeatRequest):
            body = heartbeat_codec.encode_request_body(_HEARTBEAT_VERSION, request)
            cid, frame = client.encode_flexible_body(68, _HEARTBEAT_VERSION, body)
            client.send_raw(frame)
            got, response = heartbeat_codec.decode_response(client.read_frame())
            if got != cid:
                raise WireClientError(f"correlation id {got}, expected {cid}")
            self.heartbeat_errors.append(response.error_code)
            return response
        if isinstance(request, ConsumerGroupPrepareAssignmentRequest):
            return client.request(PREPARE_ASSIGNMENT_KEY, 0, request)
        if isinstance(request, ConsumerGroupInstallAssignmentRequest):
            return client.request(INSTALL_ASSIGNMENT_KEY, 0, request)
        return _commit(client, request)


def _commit(client: WireClient, request: OffsetCommitRequest) -> OffsetCommitResponse:
    response = client.request(
        8,
        _COMMIT_VERSION,
        {
            "group_id": request.group_id,
            "generation_id_or_member_epoch": request.generation_id_or_member_epoch,
            "member_id": request.member_id,
            "group_instance_id": request.group_instance_id,
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "committed_offset": p.committed_offset,
                            "committed_leader_epoch": p.committed_leader_epoch,
                            "committed_metadata": p.committed_metadata,
                        }
                        for p in t.partitions
                    ],
                }
                for t in request.topics
            ],
        },
    )
    return OffsetCommitResponse(
        tuple(
            OffsetCommitResponseTopic(
                str(t.name),
                tuple(
                    OffsetCommitResponsePartition(
                        int(p.partition_index), ErrorCode(int(p.error_code.value))
                    )
                    for p in t.partitions
                ),
            )
            for t in response.topics
        )
    )
