"""The partitioned log (v2 batches via kio.records) and the SQLite record store."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.records.readers import read_batch

from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.records import CoordinatorRecord
from regroup.records.offsets import OffsetCommitKey, OffsetCommitValue
from regroup.server.log.partitions import Log, encode_batch
from regroup.server.log.store import SqliteRecordStore


def _batch(values: list[bytes]) -> bytes:
    return encode_batch(values, 1_700_000_000_000)


def _read_all(data: bytes) -> list[tuple[int, bytes | None]]:
    out: list[tuple[int, bytes | None]] = []
    pos = 0
    while pos < len(data):
        batch, size = read_batch(data, pos)
        out.extend((r.offset, r.value) for r in batch.records)
        pos += size
    return out


def test_server_log_assigns_dense_offsets_and_reads_whole_batches() -> None:
    log = Log()
    topic = log.create_topic("t", 2)
    part = topic.partitions[0]
    assert part.append(_batch([b"a", b"b"])) == 0
    assert part.append(_batch([b"c"])) == 2
    assert part.high_watermark == 3
    assert _read_all(part.read(0, 1 << 20)) == [(0, b"a"), (1, b"b"), (2, b"c")]
    # From offset 1: the batch holding it, whole (the client skips offset 0).
    assert _read_all(part.read(1, 1 << 20))[0] == (0, b"a")
    assert _read_all(part.read(2, 1 << 20)) == [(2, b"c")]
    # At least one batch even above max_bytes (KIP-74).
    assert _read_all(part.read(0, 1)) == [(0, b"a"), (1, b"b")]
    assert part.read(3, 1 << 20) == b""


def test_server_log_rejects_corrupt_batches() -> None:
    part = Log().create_topic("t", 1).partitions[0]
    data = bytearray(_batch([b"hello"]))
    data[-1] ^= 0xFF
    with pytest.raises(KafkaProtocolError) as info:
        part.append(bytes(data))
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE
    with pytest.raises(KafkaProtocolError):
        part.append(b"\x00" * 20)
    assert part.high_watermark == 0


def test_server_log_topic_rules() -> None:
    log = Log()
    log.create_topic("t", 1)
    for name, partitions, code in [
        ("t", 1, ErrorCode.TOPIC_ALREADY_EXISTS),
        ("bad name", 1, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("u", 0, ErrorCode.INVALID_PARTITIONS),
    ]:
        with pytest.raises(KafkaProtocolError) as info:
            log.create_topic(name, partitions)
        assert info.value.code == code


def test_server_log_on_disk_survives_reopen_and_drops_a_torn_tail(tmp_path: Path) -> None:
    log = Log(tmp_path)
    topic = log.create_topic("t", 1)
    topic.partitions[0].append(_batch([b"a"]))
    topic.partitions[0].append(_batch([b"b", b"c"]))
    log.close()
    path = tmp_path / f"{topic.topic_id}-0.log"
    with path.open("ab") as handle:
        handle.write(_batch([b"torn"])[:30])
    again = Log(tmp_path)
    reopened = again.topic("t")
    assert reopened is not None and reopened.topic_id == topic.topic_id
    part = reopened.partitions[0]
    assert part.high_watermark == 3
    assert part.append(_batch([b"d"])) == 3
    assert [v for _, v in _read_all(part.read(0, 1 << 20))] == [b"a", b"b", b"c", b"d"]
    again.close()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.binary(max_size=20), min_size=1, max_size=5), max_size=8))
def test_server_log_offsets_are_dense_for_any_batches(batches: list[list[bytes]]) -> None:
    part = Log().create_topic("t", 1).partitions[0]
    for values in batches:
        part.append(_batch(values))
    everything = _read_all(part.read(0, 1 << 30))
    assert [o for o, _ in everything] == list(range(sum(map(len, batches))))
    assert [v for _, v in everything] == [v for b in batches for v in b]


def _commit(group: str, partition: int, offset: int | None) -> CoordinatorRecord:
    value = None if offset is None else OffsetCommitValue(offset=offset)
    return CoordinatorRecord(OffsetCommitKey(group, "t", partition), value)


def test_server_store_compacts_by_key_and_replays_in_order(tmp_path: Path) -> None:
    store = SqliteRecordStore(tmp_path / "c.db")
    store.append([_commit("g", 0, 1), _commit("g", 1, 5)])
    store.append([_commit("g", 0, 2)])
    store.append([_commit("g", 1, None)])
    store.close()
    again = SqliteRecordStore(tmp_path / "c.db")
    assert again.load() == [_commit("g", 0, 2)]
    again.append([_commit("h", 0, 9), _commit("g", 0, 3)])
    assert again.load() == [_commit("h", 0, 9), _commit("g", 0, 3)]
    again.close()


def test_server_store_rows_are_the_records_json_text(tmp_path: Path) -> None:
    """A row holds ``CoordinatorRecord.to_json`` exactly (the store builds it from one
    ``to_dict`` shared with the row key), so the format docs/formats describe is the file's."""
    import sqlite3

    records = [_commit("g", 0, 1), _commit("h", 3, 7)]
    store = SqliteRecordStore(tmp_path / "c.db")
    store.append(records)
    store.close()
    with sqlite3.connect(tmp_path / "c.db") as db:
        rows = [text for (text,) in db.execute("SELECT record FROM records ORDER BY seq")]
    assert rows == [r.to_json() for r in records]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 100))), max_size=30)
)
def test_server_store_load_equals_last_write_per_key(
    tmp_path_factory: pytest.TempPathFactory, writes: list[tuple[int, int | None]]
) -> None:
    store = SqliteRecordStore(tmp_path_factory.mktemp("s") / "c.db")
    latest: dict[int, int | None] = {}
    for partition, offset in writes:
        store.append([_commit("g", partition, offset)])
        latest.pop(partition, None)
        latest[partition] = offset
    expected = [_commit("g", p, o) for p, o in latest.items() if o is not None]
    assert store.load() == expected
    store.close()
