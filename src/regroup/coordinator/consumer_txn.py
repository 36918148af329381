"""One KIP-848 group operation as a transaction: write records, replay them, or roll back.

Kafka's handlers compute records without touching the group and the runtime
replays them once written; a failed write rolls the whole batch back. regroup
replays each record as it is written (later steps of a heartbeat read the
state earlier records made - the bumped epoch, the new target), and has the
group keep an undo journal of what those replays changed
(``ConsumerGroup.start_journal``), to restore when the operation fails. Either
way the only path that changes a group is replay, and an operation costs what
it changes, not the size of the group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from regroup.consumer.group import ConsumerGroup
from regroup.coordinator.result import CoordinatorResult
from regroup.events import Event
from regroup.events.schema import GroupStateChanged
from regroup.records import CoordinatorRecord

if TYPE_CHECKING:
    from regroup.coordinator.consumer_manager import ConsumerGroupManager

__all__ = ["ConsumerTxn"]


class ConsumerTxn:
    """Records and events of one operation on one group."""

    def __init__(self, manager: ConsumerGroupManager, group_id: str, now_ms: int) -> None:
        self.manager = manager
        self.group_id = group_id
        self.now_ms = now_ms
        self.result = CoordinatorResult()
        existing = manager.state.groups.get(group_id)
        self._original = existing if isinstance(existing, ConsumerGroup) else None
        if self._original is not None:
            self._original.start_journal()
        self._existed = existing is not None
        self._configs = dict(manager.group_configs.get(group_id, {}))
        self._had_configs = group_id in manager.group_configs
        self.state_before = existing.state_name() if isinstance(existing, ConsumerGroup) else None

    @property
    def group(self) -> ConsumerGroup | None:
        group = self.manager.state.groups.get(self.group_id)
        return group if isinstance(group, ConsumerGroup) else None

    def write(self, *records: CoordinatorRecord) -> None:
        for record in records:
            self.result.records.append(record)
            self.manager.replay(record)

    def emit(self, event: Event) -> None:
        self.result.events.append(event)

    def rollback(self) -> None:
        groups = self.manager.state.groups
        if self._original is not None:
            self._original.undo_journal()
            groups[self.group_id] = self._original
        elif not self._existed:
            groups.pop(self.group_id, None)
        if self._had_configs:
            self.manager.group_configs[self.group_id] = self._configs
        else:
            self.manager.group_configs.pop(self.group_id, None)
        self.result = CoordinatorResult()

    def finish(self) -> CoordinatorResult:
        """The result, with a ``group_state_changed`` event when the derived state moved."""
        if self._original is not None:
            self._original.end_journal()
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
        self.manager.after_change(self.group_id, after, self.now_ms)
        return self.result
