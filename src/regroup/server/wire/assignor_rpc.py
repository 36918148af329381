"""A tiny codec for the KIP-848 client-side assignor RPCs (no Kafka API key).

KIP-848, "Client-Side Assignor", specifies ConsumerGroupPrepareAssignment and
leaves ConsumerGroupInstallAssignment as TODO; Apache Kafka removed both before
release, so kio has no classes for them. regroup serves them on private keys
(``versions.PREPARE_ASSIGNMENT_KEY`` / ``INSTALL_ASSIGNMENT_KEY``), version 0,
with request header v1 and response header v0, and the bodies below in Kafka's
non-flexible encoding (``regroup.model.wire``): int16/int32 big-endian,
STRING, NULLABLE_STRING, BYTES, ARRAY with an int32 count, a UUID as 16 bytes.

PrepareAssignment v0 request:  group_id STRING, member_id STRING, member_epoch INT32
PrepareAssignment v0 response: throttle_time_ms INT32, error_code INT16,
  error_message NULLABLE_STRING, group_epoch INT32, client_assignor_name STRING,
  members [member_id STRING, member_epoch INT32, instance_id NULLABLE_STRING,
           subscriptions [UUID], assignor_version INT32, assignor_reason INT8,
           assignor_metadata BYTES, topic_partitions [topic_id UUID, partitions [INT32]]],
  partition_metadata [topic_id UUID, num_partitions INT32]
InstallAssignment v0 request:  group_id STRING, member_id STRING, member_epoch INT32,
  group_epoch INT32, error_code INT16,
  members [member_id STRING, topic_partitions [topic_id UUID, partitions [INT32]]]
InstallAssignment v0 response: throttle_time_ms INT32, error_code INT16,
  error_message NULLABLE_STRING
"""

from __future__ import annotations

from typing import Any

from regroup.model.errors import ErrorCode
from regroup.model.requests.consumer import (
    ConsumerGroupInstallAssignmentMember,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentMember,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    PartitionMetadata,
    TopicPartitions,
)
from regroup.model.uuid import Uuid
from regroup.model.wire import ByteReader, ByteWriter, WireFormatError
from regroup.server.wire.versions import INSTALL_ASSIGNMENT_KEY, PREPARE_ASSIGNMENT_KEY

__all__ = ["decode_request", "decode_response", "encode_request", "encode_response"]


def _write_uuid(writer: ByteWriter, value: Uuid) -> None:
    writer.int64(value.most_significant_bits).int64(value.least_significant_bits)


def _read_uuid(reader: ByteReader) -> Uuid:
    return Uuid(reader.int64(), reader.int64())


def _write_tps(writer: ByteWriter, tps: tuple[TopicPartitions, ...]) -> None:
    def one(w: ByteWriter, tp: TopicPartitions) -> None:
        _write_uuid(w, tp.topic_id)
        w.int32_array(tp.partitions)

    writer.array(tps, one)


def _read_tps(reader: ByteReader) -> tuple[TopicPartitions, ...]:
    return tuple(reader.array(lambda r: TopicPartitions(_read_uuid(r), tuple(r.int32_array()))))


# -- requests -----------------------------------------------------------------------------


def encode_request(request: Any) -> bytes:
    """The body (no header) of a private-key request; used by regroup's own member and tests."""
    w = ByteWriter()
    if isinstance(request, ConsumerGroupPrepareAssignmentRequest):
        w.string(request.group_id).string(request.member_id).int32(request.member_epoch)
    elif isinstance(request, ConsumerGroupInstallAssignmentRequest):
        w.string(request.group_id).string(request.member_id).int32(request.member_epoch)
        w.int32(request.group_epoch).int16(request.error_code)

        def member(mw: ByteWriter, m: ConsumerGroupInstallAssignmentMember) -> None:
            mw.string(m.member_id)
            _write_tps(mw, m.topic_partitions)

        w.array(request.members, member)
    else:
        raise TypeError(f"not an assignor RPC request: {type(request).__name__}")
    return w.getvalue()


def decode_request(api_key: int, body: bytes, offset: int) -> Any:
    reader = ByteReader(memoryview(body)[offset:])
    if api_key == PREPARE_ASSIGNMENT_KEY:
        request: Any = ConsumerGroupPrepareAssignmentRequest(
            reader.string(), reader.string(), reader.int32()
        )
    elif api_key == INSTALL_ASSIGNMENT_KEY:
        group_id, member_id, member_epoch = reader.string(), reader.string(), reader.int32()
        group_epoch, error_code = reader.int32(), reader.int16()
        members = reader.array(
            lambda r: ConsumerGroupInstallAssignmentMember(r.string(), _read_tps(r))
        )
        request = ConsumerGroupInstallAssignmentRequest(
            group_id, member_id, member_epoch, group_epoch, error_code, tuple(members)
        )
    else:
        raise WireFormatError(f"API key {api_key} is not an assignor RPC")
    if reader.remaining:
        raise WireFormatError(f"{reader.remaining} trailing bytes")
    return request


# -- responses ----------------------------------------------------------------------------


def encode_response(response: Any) -> bytes:
    w = ByteWriter()
    w.int32(response.throttle_time_ms).int16(int(response.error_code))
    w.nullable_string(response.error_message)
    if isinstance(response, ConsumerGroupPrepareAssignmentResponse):
        w.int32(response.group_epoch).string(response.client_assignor_name)

        def member(mw: ByteWriter, m: ConsumerGroupPrepareAssignmentMember) -> None:
            mw.string(m.member_id).int32(m.member_epoch).nullable_string(m.instance_id)
            mw.array(m.subscriptions, _write_uuid)
            mw.int32(m.assignor_version).int8(m.assignor_reason).bytes_(m.assignor_metadata)
            _write_tps(mw, m.topic_partitions)

        def meta(mw: ByteWriter, p: PartitionMetadata) -> None:
            _write_uuid(mw, p.topic_id)
            mw.int32(p.num_partitions)

        w.array(response.members, member)
        w.array(response.partition_metadata, meta)
    elif not isinstance(response, ConsumerGroupInstallAssignmentResponse):
        raise TypeError(f"not an assignor RPC response: {type(response).__name__}")
    return w.getvalue()


def decode_response(api_key: int, body: bytes) -> Any:
    """The inverse of ``encode_response`` (for clients of the private keys)."""
    r = ByteReader(body)
    throttle, error = r.int32(), ErrorCode(r.int16())
    message = r.nullable_string()
    if api_key == INSTALL_ASSIGNMENT_KEY:
        return ConsumerGroupInstallAssignmentResponse(error, message, throttle)
    group_epoch, name = r.int32(), r.string()

    def member(mr: ByteReader) -> ConsumerGroupPrepareAssignmentMember:
        member_id, epoch, instance = mr.string(), mr.int32(), mr.nullable_string()
        subs = tuple(mr.array(_read_uuid))
        version, reason, metadata = mr.int32(), mr.int8(), mr.bytes_()
        return ConsumerGroupPrepareAssignmentMember(
            member_id, epoch, instance, subs, version, reason, metadata, _read_tps(mr)
        )

    members = tuple(r.array(member))
    metas = tuple(r.array(lambda mr: PartitionMetadata(_read_uuid(mr), mr.int32())))
    return ConsumerGroupPrepareAssignmentResponse(
        error, message, group_epoch, name, members, metas, throttle
    )
