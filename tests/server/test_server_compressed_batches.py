"""Compressed record batches are decompressed and their records checked (Kafka ``LogValidator``).

Batches are made from ``encode_batch``'s uncompressed ones: the records after the
61-byte header are compressed with an implementation other than the server's
where one exists (the standard library's ``gzip`` module), the codec is set in
the attributes and the CRC resealed. The interop test at the end has
confluent-kafka (librdkafka's own codecs) produce and consume with each codec.
"""

from __future__ import annotations

import asyncio
import gzip
import inspect
import struct
from collections.abc import Callable
from typing import Any

import cramjam
import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.server.background import BackgroundServer
from regroup.server.log import compression
from regroup.server.log.partitions import PartitionLog, encode_batch
from regroup.server.log.record_batch import (
    HEADER_SIZE,
    check_batch,
    check_client_batch,
    write_varint,
)

VALUES = [f"value-{i}".encode() * 3 for i in range(5)]


def _xerial(records: bytes) -> bytes:
    """snappy-java's framing, written here rather than by the server's codec."""
    block = bytes(cramjam.snappy.compress_raw(records))
    return b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, len(block)) + block


COMPRESSORS: dict[int, Callable[[bytes], bytes]] = {
    compression.GZIP: gzip.compress,
    compression.SNAPPY: _xerial,
    compression.LZ4: lambda b: bytes(cramjam.lz4.compress(b)),
    compression.ZSTD: lambda b: bytes(cramjam.zstd.compress(b)),
}
CODECS = sorted(COMPRESSORS)


def _seal(header: bytes, payload: bytes, codec: int, count: int | None = None) -> bytes:
    """A batch of ``header``'s fields with ``payload`` as records, ``codec`` in the
    attributes, the length and CRC recomputed."""
    batch = bytearray(header[:HEADER_SIZE] + payload)
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    attributes = struct.unpack_from(">h", batch, 21)[0]
    struct.pack_into(">h", batch, 21, (attributes & ~0x07) | codec)
    if count is not None:
        struct.pack_into(">i", batch, 23, count - 1)
        struct.pack_into(">i", batch, 57, count)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def _plain() -> bytes:
    return encode_batch(VALUES, 1_000)


def compressed(codec: int, records: bytes | None = None, count: int | None = None) -> bytes:
    plain = _plain()
    body = plain[HEADER_SIZE:] if records is None else records
    return _seal(plain, COMPRESSORS[codec](body), codec, count)


def _record(delta: int, value: bytes) -> bytes:
    body = (
        b"\x00"
        + write_varint(0)
        + write_varint(delta)
        + write_varint(-1)
        + write_varint(len(value))
        + value
    )
    body += write_varint(0)
    return write_varint(len(body)) + body


def _code(batch: bytes, **kwargs: Any) -> ErrorCode:
    with pytest.raises(KafkaProtocolError) as caught:
        check_client_batch(batch, **kwargs)
    return caught.value.code


# -- valid batches are kept as sent ------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_a_valid_compressed_batch_is_kept_byte_for_byte(codec: int) -> None:
    batch = compressed(codec)
    checked = check_client_batch(batch)
    assert checked.data == batch and checked.header.record_count == len(VALUES)
    log = PartitionLog()
    log.append(batch)
    log.append(batch)
    assert log.next_offset == 2 * len(VALUES)


# -- the records are checked -------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_fewer_records_than_the_header_counts_are_invalid_record(codec: int) -> None:
    records = b"".join(_record(i, v) for i, v in enumerate(VALUES[:3]))
    assert _code(compressed(codec, records)) == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("codec", CODECS)
def test_bytes_after_the_counted_records_are_invalid_record(codec: int) -> None:
    records = b"".join(_record(i, v) for i, v in enumerate(VALUES)) + b"\x00\x01"
    with pytest.raises(KafkaProtocolError) as caught:
        check_client_batch(compressed(codec, records))
    assert caught.value.code == ErrorCode.INVALID_RECORD
    assert "records still remaining" in (caught.value.message or "")


@pytest.mark.parametrize("codec", CODECS)
def test_a_record_whose_value_overruns_its_length_is_invalid_record(codec: int) -> None:
    good = _record(0, b"abc")
    bad = bytearray(good)
    bad[-5] = 0x7E  # the value length varint: 63 bytes, inside a 10-byte body
    records = bytes(bad) + b"".join(_record(i + 1, v) for i, v in enumerate(VALUES[1:]))
    assert _code(compressed(codec, records)) == ErrorCode.INVALID_RECORD


def test_an_uncompressed_record_with_a_bad_header_count_is_invalid_record() -> None:
    plain = _plain()
    records = bytearray(plain[HEADER_SIZE:])
    # The first record's last byte is its header count (0): make it -1.
    first_length = records[0] >> 1
    records[first_length] = 0x01
    assert _code(_seal(plain, bytes(records), 0)) == ErrorCode.INVALID_RECORD


# -- wrong inner offsets: rebuilt, as Kafka's non-in-place path does ----------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_wrong_inner_offset_deltas_are_rebuilt_not_refused(codec: int) -> None:
    records = b"".join(_record(7 * i + 3, v) for i, v in enumerate(VALUES))
    batch = compressed(codec, records)
    checked = check_client_batch(batch)
    assert checked.data != batch
    check_batch(checked.data)  # length and CRC valid
    assert checked.header.record_count == len(VALUES)
    assert checked.header.last_offset_delta == len(VALUES) - 1
    assert checked.data[21:23] == batch[21:23]  # same attributes: same codec
    plain = compression.decompress(codec, checked.data[HEADER_SIZE:])
    expected = b"".join(_record(i, v) for i, v in enumerate(VALUES))
    assert plain == expected
    log = PartitionLog()
    log.append(encode_batch([b"x"], 1))
    log.append(batch)
    served = log.read(1, 1 << 20)
    assert struct.unpack_from(">q", served, 0)[0] == 1
    assert served[8:] == checked.data[8:]  # the rebuilt batch is what is served


def test_a_rebuilt_batch_is_followed_by_the_next_batch_of_the_same_request() -> None:
    records = b"".join(_record(5 + i, v) for i, v in enumerate(VALUES))
    first = compressed(compression.GZIP, records)
    second = compressed(compression.LZ4)
    log = PartitionLog()
    assert log.append(first + second) == 0
    assert log.next_offset == 2 * len(VALUES)
    served = log.read(0, 1 << 20)
    rebuilt = check_client_batch(first).data
    assert served == rebuilt + struct.pack(">q", len(VALUES)) + second[8:]


# -- the payload itself ------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_a_payload_the_codec_cannot_read_is_unknown_server_error(codec: int) -> None:
    # Kafka wraps the stream's IOException in a KafkaException: UNKNOWN_SERVER_ERROR.
    plain = _plain()
    garbage = b"\x82SNAPPY\x00" + b"\x00" * 8 + b"\x00\x00\x00\x09garbage!!" if codec == 2 else b""
    batch = _seal(plain, garbage or b"\xff" * 40, codec)
    assert _code(batch) == ErrorCode.UNKNOWN_SERVER_ERROR


def test_a_truncated_gzip_stream_is_invalid_record() -> None:
    payload = gzip.compress(_plain()[HEADER_SIZE:])
    batch = _seal(_plain(), payload[: len(payload) // 2], compression.GZIP)
    assert _code(batch) == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("codec", CODECS)
def test_a_decompression_bomb_is_message_too_large_without_allocating_it(codec: int) -> None:
    bomb = COMPRESSORS[codec](b"\x00" * (8 * 1024 * 1024))
    with pytest.raises(KafkaProtocolError) as caught:
        compression.decompress(codec, bomb, limit=1024 * 1024)
    assert caught.value.code == ErrorCode.MESSAGE_TOO_LARGE


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_an_unknown_codec_id_is_unknown_server_error(codec: int) -> None:
    plain = _plain()
    assert _code(_seal(plain, plain[HEADER_SIZE:], codec)) == ErrorCode.UNKNOWN_SERVER_ERROR


def test_zstd_below_produce_v7_is_unsupported_compression_type() -> None:
    batch = compressed(compression.ZSTD)
    assert _code(batch, allow_zstd=False) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    check_client_batch(compressed(compression.GZIP), allow_zstd=False)


# -- real clients ------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_confluent_kafka_produces_and_consumes_each_codec(
    codec: str, server: BackgroundServer
) -> None:
    from confluent_kafka import Consumer, Producer

    topic = f"compressed-{codec}"
    producer = Producer(
        {"bootstrap.servers": server.bootstrap, "compression.type": codec, "linger.ms": 50}
    )
    sent = [f"{codec}-{i}".encode() * 20 for i in range(50)]
    for value in sent:
        producer.produce(topic, value, partition=0)
    assert producer.flush(20) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": f"g-{codec}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        from confluent_kafka import TopicPartition

        consumer.assign([TopicPartition(topic, 0, 0)])
        received: list[tuple[int | None, bytes | None]] = []
        for _ in range(100):
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                received.append((message.offset(), message.value()))
            if len(received) == len(sent):
                break
    finally:
        consumer.close()
    assert [value for _, value in received] == sent
    assert [offset for offset, _ in received] == list(range(len(sent)))


@pytest.mark.parametrize(("version", "code"), [(6, 76), (7, 0)])
def test_zstd_over_the_wire_needs_produce_v7(version: int, code: int) -> None:
    # Kafka ProduceRequest.validateRecords: UNSUPPORTED_COMPRESSION_TYPE (76) below v7.
    from kio.index import load_response_schema
    from kio.serial import entity_reader

    from regroup.server.app import RegroupServer, ServerOptions
    from regroup.server.clients.wire_client import RequestEncoder
    from regroup.server.net.connection import ConnectionState

    produce = {
        "transactional_id": None,
        "acks": -1,
        "timeout": 1000,
        "topic_data": [
            {
                "name": "t",
                "partition_data": [{"index": 0, "records": compressed(compression.ZSTD)}],
            }
        ],
    }
    body = RequestEncoder("test").encode(0, version, produce)[1][4:]
    server = RegroupServer(ServerOptions(port=0, seed=1))
    try:
        server.create_topic("t", 1)
        served = server.serve_now(ConnectionState(1, "t"), body)
        # cluster rule 6: a compressed batch is checked in a worker thread, so the answer
        # is a coroutine that the connection awaits.
        assert inspect.iscoroutine(served)
        frame = asyncio.run(served)
        assert frame is not None
        cls: Any = load_response_schema(0, version)
        _, offset = entity_reader(cls.__header_schema__)(frame[4:], 0)
        response, _ = entity_reader(cls)(frame[4:], offset)
        (partition,) = [p for t in response.responses for p in t.partition_responses]
        assert partition.error_code.value == code
    finally:
        server.store.close()
        server.events.close()


@settings(max_examples=150, deadline=None)
@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=200), cut=st.integers(0, 200))
def test_any_payload_is_decoded_or_answered_with_a_kafka_error(
    codec: int, data: bytes, cut: int
) -> None:
    """Fuzz: a payload that starts as a valid stream and is then cut and extended."""
    payload = COMPRESSORS[codec](b"record" * 20)[:cut] + data
    try:
        compression.decompress(codec, payload, limit=1 << 16)
    except KafkaProtocolError as exc:
        assert exc.code in {
            ErrorCode.UNKNOWN_SERVER_ERROR,
            ErrorCode.INVALID_RECORD,
            ErrorCode.MESSAGE_TOO_LARGE,
        }
