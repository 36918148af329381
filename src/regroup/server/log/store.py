"""Durable coordinator state: the coordinator's records in SQLite.

docs/architecture.md, "Contracts between the parts": records are the state.

Kafka keeps its group coordinator's records in the compacted
``__consumer_offsets`` topic and rebuilds every group by replaying them when
it becomes the coordinator. regroup does the same with an embedded SQLite
file (no server to run).

Rule 1: ``append`` commits before it returns, and the server calls it before
it sends the responses of the step that produced the records, so an
acknowledged commit or join is on disk ("written before a response is sent").
Rule 2: the table is compacted as Kafka's log compaction would leave it: one
row per record key, holding the key's latest value, ordered by the sequence
number of that latest write; a tombstone deletes the row (compaction removes
a tombstone and every earlier record of its key). Replaying the rows in
sequence order gives the state the full history gives.
Rule 3: ``load`` returns the records in that order for
``GroupCoordinator.replay``; ``replay`` applies them.
Rule 4: replay never stops a start. The records a server wrote replay cleanly
(the tests check it); a record that still cannot apply (a row that does not
decode, or a record the coordinator refuses) is skipped with one log line
(record type, group id, reason) and counted, so one bad record costs that
record, not every group of the data directory.

Rule 5: a store that cannot be read stops the start with one ``StoreError``
line (a corrupt file, or another SQLite database), never a traceback and never
an empty start over it (the server's check of a missing store is in ``app``).
Rule 6: an ``append`` that cannot be written (a full disk: SQLite's
``SQLITE_FULL``, an ``OSError``) changes nothing in the file (its transaction
is rolled back) and raises ``StoreWriteError``; the server answers the requests
of that step NOT_COORDINATOR and rebuilds their groups from what ``load`` still
returns (``coordinator.guard``, rule 5), and goes on serving.

Rule 7: a row's key is the record key's JSON text when it is at most
``MAX_KEY_TEXT`` (255) characters, else ``sha256:`` and the hex SHA-256 of
that text. The record itself (with its key) is kept whole in the row, so a
1 MiB group id costs its size once per row, not three times (the key column,
its index and the record); a store written before is converted once at open
(``PRAGMA user_version`` 1).

``MemoryStore`` has the same interface and keeps nothing (no ``--data-dir``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from regroup.model.codec import CodecError
from regroup.records import CoordinatorRecord

__all__ = [
    "MemoryStore",
    "RecordStore",
    "ReplaySummary",
    "SqliteRecordStore",
    "StoreError",
    "StoreWriteError",
    "replay",
]

logger = logging.getLogger("regroup.server.log.store")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    record_key TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_by_seq ON records (seq);
"""
#: ``PRAGMA user_version`` of a store whose long row keys are digests (rule 7).
_SCHEMA_VERSION = 1


class StoreError(Exception):
    """The durable store cannot be used (rule 5); the message is one line for the operator."""


class StoreWriteError(Exception):
    """An ``append`` that could not be written; the store is as before it (rule 6)."""


#: What an unreadable store's message tells the operator to do.
RECOVERY_HINT = (
    "restore it from a backup, or move it aside and pass --allow-empty-coordinator to start "
    "with no groups and no committed offsets (the topics are kept)"
)


class RecordStore(Protocol):
    #: Rows ``load`` skipped because they do not decode (rule 4).
    unreadable: int

    def append(self, records: Iterable[CoordinatorRecord]) -> None: ...

    def load(self) -> list[CoordinatorRecord]: ...

    def load_groups(self, records: Iterable[CoordinatorRecord]) -> list[CoordinatorRecord]: ...

    def close(self) -> None: ...


#: Row keys up to this many characters are the record key's JSON text (rule 7).
MAX_KEY_TEXT = 255


def _key_text(data: dict[str, Any]) -> str:
    """The row key of a record, from its ``to_dict`` form (rule 7)."""
    text = json.dumps([data["type"], data["key"]], separators=(",", ":"), sort_keys=True)
    if len(text) <= MAX_KEY_TEXT:
        return text
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _long_keys_to_digests(db: sqlite3.Connection) -> None:
    """Rule 7 for a store written before it: long row keys become digests, once."""
    if db.execute("PRAGMA user_version").fetchone()[0] >= _SCHEMA_VERSION:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        rows = db.execute(
            "SELECT rowid, record_key FROM records WHERE length(record_key) > ?",
            (MAX_KEY_TEXT,),
        ).fetchall()
        for rowid, text in rows:
            digest = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
            db.execute("UPDATE records SET record_key = ? WHERE rowid = ?", (digest, rowid))
        db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


class SqliteRecordStore:
    """Records in ``<directory>/coordinator.db`` (rules 1-3)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(str(path), isolation_level=None)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            _long_keys_to_digests(self._db)
            row = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM records").fetchone()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise self._unreadable(exc) from None
        self._seq = int(row[0])
        self.unreadable = 0

    def _unreadable(self, exc: sqlite3.DatabaseError) -> StoreError:
        return StoreError(
            f"{self.path} is not a readable coordinator store ({exc}): {RECOVERY_HINT}"
        )

    def append(self, records: Iterable[CoordinatorRecord]) -> None:
        batch = list(records)
        if not batch:
            return
        try:
            self._write(batch)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise StoreWriteError(f"cannot write {self.path.name}: {exc}") from exc

    def _write(self, batch: list[CoordinatorRecord]) -> None:
        """One transaction for ``batch``: all of it committed, or none of it (rule 6)."""
        cursor = self._db.cursor()
        cursor.execute("BEGIN IMMEDIATE")
        try:
            for record in batch:
                data = record.to_dict()  # once: the key and the row (``to_json``'s text)
                key = _key_text(data)
                if record.is_tombstone:
                    cursor.execute("DELETE FROM records WHERE record_key = ?", (key,))
                else:
                    self._seq += 1
                    cursor.execute(
                        "INSERT OR REPLACE INTO records (record_key, seq, record) VALUES (?, ?, ?)",
                        (key, self._seq, json.dumps(data, separators=(",", ":"))),
                    )
            cursor.execute("COMMIT")
        except BaseException:
            # SQLite may have rolled back already (SQLITE_FULL does): roll back only if not.
            if self._db.in_transaction:
                cursor.execute("ROLLBACK")
            raise

    def load(self) -> list[CoordinatorRecord]:
        """Every stored record in replay order; a row that does not decode is skipped (rule 4)."""
        try:
            rows = self._db.execute(
                "SELECT record_key, record FROM records ORDER BY seq"
            ).fetchall()
        except sqlite3.DatabaseError as exc:  # a page damaged past the header (rule 5)
            raise self._unreadable(exc) from None
        return self._decode(rows)

    def _decode(self, rows: list[tuple[str, str]]) -> list[CoordinatorRecord]:
        records: list[CoordinatorRecord] = []
        for key, text in rows:
            try:
                records.append(CoordinatorRecord.from_json(text))
            except CodecError as exc:
                self.unreadable += 1
                logger.error(
                    "skipped a stored coordinator record %s: does not decode: %s", key, exc
                )
        return records

    def load_groups(self, records: Iterable[CoordinatorRecord]) -> list[CoordinatorRecord]:
        """The stored records of the groups ``records`` name, in replay order (rule 6: what
        a write that failed leaves of them). SQLite reads the group of each row's record
        (JSON1), so only their rows are decoded."""
        groups = sorted({_group_of(record) for record in records})
        if not groups or len(groups) > 500:
            wanted = set(groups)
            return [r for r in self.load() if _group_of(r) in wanted]
        marks = ",".join("?" * len(groups))
        query = (
            "SELECT record_key, record FROM records WHERE CASE WHEN json_valid(record) THEN "
            "coalesce(json_extract(record, '$.key.group'), json_extract(record, '$.key.group_id'))"
            f" END IN ({marks}) ORDER BY seq"
        )
        try:
            rows = self._db.execute(query, groups).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._unreadable(exc) from None
        return self._decode(rows)

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM records").fetchone()[0])

    def close(self) -> None:
        self._db.close()


class MemoryStore:
    """Keeps nothing: a server without ``--data-dir`` forgets its groups on exit."""

    unreadable = 0

    def append(self, records: Iterable[CoordinatorRecord]) -> None:
        return None

    def load(self) -> list[CoordinatorRecord]:
        return []

    def load_groups(self, records: Iterable[CoordinatorRecord]) -> list[CoordinatorRecord]:
        return []

    def close(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class ReplaySummary:
    """What a start made of the stored records: how many applied, how many were skipped."""

    replayed: int
    skipped: int


def _group_of(record: CoordinatorRecord) -> str:
    key = record.key
    group = getattr(key, "group_id", None)
    if group is None:
        group = getattr(key, "group", None)
    return str(group)


def replay(
    records: Iterable[CoordinatorRecord], apply: Callable[[CoordinatorRecord], None]
) -> ReplaySummary:
    """Apply each record with ``apply`` (``GroupCoordinator.replay``); rule 4.

    A record ``apply`` refuses is logged (record type, group id, reason) and
    counted, and the replay goes on with the next one.
    """
    replayed = skipped = 0
    for record in records:
        try:
            apply(record)
        except Exception as exc:
            skipped += 1
            logger.error(
                "skipped a %s record of group %r on replay: %s: %s",
                record.key.record_name,
                _group_of(record),
                type(exc).__name__,
                exc,
            )
        else:
            replayed += 1
    return ReplaySummary(replayed, skipped)
