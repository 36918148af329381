"""The partition log under corrupt files, bad batches and a full disk."""

from __future__ import annotations

import errno
import logging
import struct
from pathlib import Path
from typing import Any

import pytest
from crc32c import crc32c

from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.server.apis.cluster import ProduceCheck, check_produce, check_produce_records
from regroup.server.log import partitions as log_module
from regroup.server.log.partitions import Log, PartitionLog, encode_batch


def _offsets(partition: PartitionLog) -> list[int]:
    """Every record offset a consumer would see, batch by batch (base + position)."""
    data = partition.read(0, 1 << 30)
    seen: list[int] = []
    pos = 0
    while pos < len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        (count,) = struct.unpack_from(">i", data, pos + 57)
        seen.extend(range(base, base + count))
        pos += 12 + length
    return seen


def _ten_batches(tmp_path: Path) -> tuple[Path, list[int]]:
    log = Log(tmp_path)
    topic = log.create_topic("t", 1)
    part = topic.partitions[0]
    sizes = []
    for i in range(10):
        batch = encode_batch([b"v%d-%d" % (i, j) for j in range(10)], 1_000)
        sizes.append(len(batch))
        part.append(batch)
    log.close()
    return tmp_path / f"{topic.topic_id}-0.log", sizes


# -- defect 6: one flipped byte ------------------------------------------------------


def test_a_flipped_byte_cuts_only_its_batch_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, sizes = _ten_batches(tmp_path)
    data = bytearray(path.read_bytes())
    data[70] ^= 0xFF  # a record byte of batch 0 (its CRC no longer matches)
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, "regroup.server"):
        part = Log(tmp_path).partition("t", 0)
    assert part is not None
    assert _offsets(part) == list(range(10, 100))  # 90 of 100 records kept, not 0
    assert part.next_offset == 100
    (line,) = [r.getMessage() for r in caplog.records]
    assert f"cut bytes 0..{sizes[0] - 1} ({sizes[0]} bytes) at offset 0" in line
    assert "CRC-32C" in line and "offsets lost: 0..9" in line
    # The file now holds the valid batches only: a second start cuts nothing.
    caplog.clear()
    with caplog.at_level(logging.WARNING, "regroup.server"):
        again = Log(tmp_path).partition("t", 0)
    assert again is not None and _offsets(again) == list(range(10, 100))
    assert caplog.records == []


def test_a_corrupt_length_in_the_middle_keeps_the_batches_after_it(tmp_path: Path) -> None:
    path, sizes = _ten_batches(tmp_path)
    data = bytearray(path.read_bytes())
    at = sum(sizes[:4])
    data[at + 8 : at + 12] = struct.pack(">i", 1 << 30)  # batch 4 claims a gigabyte
    path.write_bytes(bytes(data))
    part = Log(tmp_path).partition("t", 0)
    assert part is not None
    assert _offsets(part) == [*range(40), *range(50, 100)]


def test_a_torn_tail_is_cut_with_a_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path, sizes = _ten_batches(tmp_path)
    path.write_bytes(path.read_bytes()[:-7])
    with caplog.at_level(logging.WARNING, "regroup.server"):
        part = Log(tmp_path).partition("t", 0)
    assert part is not None and _offsets(part) == list(range(90))
    assert "offsets lost: from 90" in caplog.records[0].getMessage()
    assert path.stat().st_size == sum(sizes[:9])


# -- defect 7: the broker checks what producers send --------------------------------


def _reseal(batch: bytearray) -> bytes:
    """Recompute the CRC after editing a batch's header (a well-formed lie)."""
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_a_batch_whose_count_disagrees_with_its_offsets_is_invalid_record() -> None:
    part = PartitionLog()
    batch = bytearray(encode_batch([b"a", b"b", b"c"], 1_000))
    struct.pack_into(">i", batch, 23, 2_147_483_646)  # last offset delta: hwm 2^31
    with pytest.raises(KafkaProtocolError) as info:
        part.append(_reseal(batch))
    assert info.value.code == ErrorCode.INVALID_RECORD
    assert part.next_offset == 0


def test_records_with_wrong_offset_deltas_are_invalid_record() -> None:
    part = PartitionLog()
    one = encode_batch([b"a"], 1_000)
    # Three records whose offset deltas read 0, 1, 0: served as 0, 1, 0 before the fix.
    three = bytearray(encode_batch([b"a", b"b", b"c"], 1_000))
    records_at = 61
    # record layout: length varint (1 byte), attributes, timestamp delta (1), offset delta.
    pos = records_at
    for _ in range(2):
        pos += 1 + three[pos] // 2  # skip a record: its zig-zag length byte, then the body
    three[pos + 3] = 0  # the third record's offset delta (zig-zag 0)
    with pytest.raises(KafkaProtocolError) as info:
        part.append(one + _reseal(three))
    assert info.value.code == ErrorCode.INVALID_RECORD
    assert part.next_offset == 0  # nothing of the request is appended


@pytest.mark.parametrize("version", [3, 7, 11])
def test_a_produce_with_two_batches_for_one_partition_is_invalid_record(version: int) -> None:
    """Kafka ``ProduceRequest.validateRecords``: from v3, exactly one batch per partition,
    counted by the headers alone (so the rule wins over a bad second batch)."""
    one, two = encode_batch([b"a"], 1_000), encode_batch([b"b", b"c"], 1_000)
    broken = bytearray(two)
    broken[-1] ^= 0xFF  # its CRC no longer matches
    for records in (one + two, one + bytes(broken)):
        with pytest.raises(KafkaProtocolError) as info:
            check_produce_records(records, 1 << 20, version)
        assert info.value.code == ErrorCode.INVALID_RECORD
        assert info.value.message == (
            f"Produce requests with version {version} are only allowed to contain exactly "
            "one record batch per partition"
        )
    job = ProduceCheck(("t", 0), one + two, 1 << 20, version)
    assert isinstance(check_produce([job])[("t", 0)], KafkaProtocolError)
    # One batch, or one followed by bytes too short to be another, is the batch checks' call.
    assert len(check_produce_records(one, 1 << 20, version)) == 1
    with pytest.raises(KafkaProtocolError) as info:
        check_produce_records(one + two[:30], 1 << 20, version)
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE


def test_the_broker_assigns_offsets_whatever_base_offset_the_producer_sent() -> None:
    part = PartitionLog()
    batch = bytearray(encode_batch([b"a", b"b"], 1_000))
    struct.pack_into(">q", batch, 0, 1_000_000)  # the base offset is outside the CRC
    assert part.append(bytes(batch)) == 0
    assert part.append(bytes(batch)) == 2
    assert _offsets(part) == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        (lambda b: b.__setitem__(70, b[70] ^ 1), ErrorCode.CORRUPT_MESSAGE),  # CRC
        (lambda b: struct.pack_into(">i", b, 8, 10), ErrorCode.CORRUPT_MESSAGE),  # size
        (lambda b: struct.pack_into(">i", b, 57, 0), ErrorCode.INVALID_RECORD),  # count
        (lambda b: struct.pack_into(">h", b, 21, 0x20), ErrorCode.INVALID_RECORD),  # control
    ],
)
def test_bad_batches_get_kafkas_error_codes(edit: Any, code: ErrorCode) -> None:
    batch = bytearray(encode_batch([b"a", b"b"], 1_000))
    edit(batch)
    if code != ErrorCode.CORRUPT_MESSAGE:
        _reseal(batch)
    with pytest.raises(KafkaProtocolError) as info:
        PartitionLog().append(bytes(batch))
    assert info.value.code == code


def test_a_batch_above_max_message_bytes_is_message_too_large() -> None:
    part = PartitionLog(max_message_bytes=100)
    with pytest.raises(KafkaProtocolError) as info:
        part.append(encode_batch([b"x" * 200], 1_000))
    assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE


# -- defect 5: a full disk -----------------------------------------------------------


class _FullDisk:
    """A file that takes the first bytes of a write, then raises ENOSPC."""

    def __init__(self, path: Path) -> None:
        self._real = path.open("ab")

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._real.close()

    def write(self, data: bytes) -> int:
        self._real.write(data[:10])
        self._real.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self) -> None: ...

    def fileno(self) -> int:
        return self._real.fileno()


def test_a_failed_write_is_not_acknowledged_and_leaves_the_log_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = Log(tmp_path)
    topic = log.create_topic("t", 1)
    part = topic.partitions[0]
    part.append(encode_batch([b"kept"], 1_000))
    path = tmp_path / f"{topic.topic_id}-0.log"
    size = path.stat().st_size
    with monkeypatch.context() as patch:
        patch.setattr(log_module, "_open_for_append", _FullDisk)
        with pytest.raises(KafkaProtocolError) as info:
            part.append(encode_batch([b"lost"], 1_000))
    assert info.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    assert "ENOSPC" in (info.value.message or "")
    assert part.next_offset == 1 and _offsets(part) == [0]
    assert path.stat().st_size == size  # the partial write was cut off again
    # Space is back: the next append gets the next offset, and a restart sees the same.
    assert part.append(encode_batch([b"after"], 1_000)) == 1
    reopened = Log(tmp_path).partition("t", 0)
    assert reopened is not None and _offsets(reopened) == [0, 1]


def test_partitions_hold_no_open_file(tmp_path: Path) -> None:
    log = Log(tmp_path)
    topic = log.create_topic("t", 50)
    for part in topic.partitions:
        part.append(encode_batch([b"x"], 1_000))
    fd_dir = Path("/proc/self/fd")
    if not fd_dir.exists():
        pytest.skip("no /proc")
    open_logs = [p for p in fd_dir.iterdir() if str(tmp_path) in str(p.resolve())]
    assert open_logs == []


def test_a_produce_that_cannot_be_written_is_answered_kafka_storage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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
            {"name": "t", "partition_data": [{"index": 0, "records": encode_batch([b"v"], 1)}]}
        ],
    }
    body = RequestEncoder("test").encode(0, 9, produce)[1][4:]

    def codes(frame: Any) -> list[tuple[int, int]]:
        cls: Any = load_response_schema(0, 9)
        _, offset = entity_reader(cls.__header_schema__)(frame[4:], 0)
        response, _ = entity_reader(cls)(frame[4:], offset)
        return [
            (p.error_code.value, p.base_offset)
            for t in response.responses
            for p in t.partition_responses
        ]

    server = RegroupServer(ServerOptions(port=0, seed=1, data_dir=tmp_path))
    try:
        server.create_topic("t", 1)
        assert codes(server.serve_now(ConnectionState(1, "t"), body)) == [(0, 0)]
        with monkeypatch.context() as patch:
            patch.setattr(log_module, "_open_for_append", _FullDisk)
            assert codes(server.serve_now(ConnectionState(1, "t"), body)) == [(56, -1)]
        partition = server.log.partition("t", 0)
        assert partition is not None and partition.high_watermark == 1
        assert codes(server.serve_now(ConnectionState(1, "t"), body)) == [(0, 1)]
    finally:
        server.store.close()
        server.events.close()
