"""Durable coordinator state: the coordinator's records in SQLite (DESIGN.md, "Contracts").

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

``MemoryStore`` has the same interface and keeps nothing (no ``--data-dir``).
"""

from __future__ import annotations

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


class StoreError(Exception):
    """The durable store cannot be used (rule 5); the message is one line for the operator."""


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

    def close(self) -> None: ...


def _key_text(data: dict[str, Any]) -> str:
    """The row key of a record, from its ``to_dict`` form."""
    return json.dumps([data["type"], data["key"]], separators=(",", ":"), sort_keys=True)


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
