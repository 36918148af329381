"""One operation on one KIP-848 group: records written and replayed, or rolled back; its end.

Kafka's handlers compute records without touching the group and the runtime
replays them once written; a failed write rolls the whole batch back. regroup
replays each record as it is written (later steps of a heartbeat read the
state earlier records made - the bumped epoch, the new target), and has the
group keep an undo journal of what those replays changed
(``ConsumerGroup.start_journal``), to restore when the operation fails. Either
way the only path that changes a group is replay, and an operation costs what
it changes, not the size of the group.

Every operation ends with ``finish``: a ``group_state_changed`` event when the
group's derived state moved, and ``after_operation``, which keeps the EMPTY
group's expiration armed (Kafka expires an empty group's offsets after
``offsets.retention.minutes``; regroup deletes the group then) and forgets what
was kept for a group that is gone. ``delete_group`` writes the tombstones of an
empty group (Kafka ``createGroupTombstoneRecords``).
"""

from __future__ import annotations

from collections.abc import Callable

from regroup.consumer.group.group import ConsumerGroup
from regroup.coordinator.consumer import records
from regroup.coordinator.consumer.timers import client_assign_key, expire_key
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.events import Event
from regroup.events.schema import GroupStateChanged
from regroup.records import CoordinatorRecord

__all__ = ["ConsumerTxn", "after_operation", "delete_group"]


class ConsumerTxn:
    """Records and events of one operation on one group."""

    __slots__ = (
        "_configs",
        "_existed",
        "_journaling",
        "_original",
        "group_id",
        "may_describe_topic",
        "now_ms",
        "result",
        "state",
        "state_before",
    )

    def __init__(self, state: GroupCoordinatorState, group_id: str, now_ms: int) -> None:
        self.state = state
        self.group_id = group_id
        self.now_ms = now_ms
        self.result = CoordinatorResult()
        #: The request context of the heartbeat this operation serves (its
        #: ``may_describe_topic``), for the regexes it resolves; ``None`` otherwise.
        self.may_describe_topic: Callable[[str], bool] | None = None
        existing = state.groups.get(group_id)
        self._original = existing if isinstance(existing, ConsumerGroup) else None
        #: The group's undo journal is started by the first write: most heartbeats
        #: write nothing, and only replay changes a group.
        self._journaling = False
        self._existed = existing is not None
        # Replay replaces a group's config map whole, never edits it: keeping the
        # map itself is enough to put it back.
        self._configs = state.consumer.group_configs.get(group_id)
        self.state_before = existing.state_name() if isinstance(existing, ConsumerGroup) else None

    @property
    def group(self) -> ConsumerGroup | None:
        return self.state.consumer_group(self.group_id)

    def write(self, *written: CoordinatorRecord) -> None:
        if not self._journaling:
            self._journaling = True
            if self._original is not None:
                self._original.start_journal()
        for record in written:
            self.result.records.append(record)
            records.replay(self.state, record)

    def emit(self, event: Event) -> None:
        self.result.events.append(event)

    def rollback(self) -> None:
        groups = self.state.groups
        if self._original is not None:
            self._original.undo_journal()
            groups[self.group_id] = self._original
        elif not self._existed:
            groups.pop(self.group_id, None)
        configs = self.state.consumer.group_configs
        if self._configs is not None:
            configs[self.group_id] = self._configs
        else:
            configs.pop(self.group_id, None)
        self.result = CoordinatorResult()

    def finish(self) -> CoordinatorResult:
        """The result, with a ``group_state_changed`` event when the derived state moved."""
        if self._journaling and self._original is not None:
            self._original.end_journal()
        if (
            not self._journaling
            and not self.result.records
            and self.state_before not in (None, "Empty", "Dead")
            and self.state.groups.get(self.group_id) is self._original
        ):
            # Nothing written (a steady heartbeat): the group's state is the one this
            # operation found, neither EMPTY nor gone, so no event and no expiration.
            return self.result
        group = self.group
        # "Dead" only for a consumer group that is gone (not for a classic group left as is).
        gone = self._original is not None
        after = group.state_name() if group is not None else ("Dead" if gone else None)
        before = self.state_before if self.state_before is not None else "Empty"
        if after is not None and after != before and (self._existed or group is not None):
            self.emit(
                GroupStateChanged(
                    ts_ms=self.now_ms,
                    group_id=self.group_id,
                    group_protocol="consumer",
                    old_state=before,
                    new_state=after,
                )
            )
        after_operation(self.state, self.group_id, after, self.now_ms)
        return self.result


def after_operation(
    state: GroupCoordinatorState, group_id: str, state_name: str | None, now_ms: int
) -> None:
    """Arm or disarm the expiration of an EMPTY group; forget a group that is gone."""
    key = expire_key(group_id)
    if state_name == "Empty":
        if not state.timer.is_scheduled(key):
            retention = state.config.offsets_retention_minutes * 60_000
            state.timer.schedule(
                key,
                now_ms + retention,
                lambda now: _expire(state, group_id, now),
                owner=group_id,
            )
    else:
        state.timer.cancel(key)
    if state_name in (None, "Dead"):
        kept = state.consumer
        kept.names.forget(group_id)
        kept.spec_cache.pop(group_id, None)
        kept.effective_configs.pop(group_id, None)
        kept.in_flight.pop(group_id, None)
        state.timer.cancel(client_assign_key(group_id))


def _expire(state: GroupCoordinatorState, group_id: str, now_ms: int) -> CoordinatorResult:
    group = state.consumer_group(group_id)
    if group is None or not group.is_empty():
        return CoordinatorResult()
    txn = ConsumerTxn(state, group_id, now_ms)
    delete_group(txn)
    return txn.finish()


def delete_group(txn: ConsumerTxn) -> None:
    """Kafka ``createGroupTombstoneRecords`` for an empty group; the group becomes Dead."""
    group = txn.group
    assert group is not None and group.is_empty()
    gid = txn.group_id
    for member_id in list(group.target_assignment):
        txn.write(records.target_member_tombstone(gid, member_id))
    txn.write(records.target_metadata_tombstone(gid))
    for regex in sorted(group.resolved_regexes):
        txn.write(records.regex_tombstone(gid, regex))
    txn.write(records.partition_metadata_tombstone(gid))
    if gid in txn.state.consumer.group_configs:
        txn.write(records.config_record(gid, {}))
    txn.write(records.group_tombstone(gid))
