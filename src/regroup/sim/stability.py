"""When is the group stable? The simulator's ``group_stabilized`` event.

The group is *stable* when every live consumer's member is stable, the
coordinator's group is ``Stable``, its members are exactly the live
consumers' members, every live member is at the group's generation (classic)
or epoch (KIP-848), and (KIP-848) every member holds what the coordinator
assigned it, with nothing pending revocation. ``group_stabilized`` is emitted
once each time that becomes true.

Rule 1: the condition is evaluated at one point, after each step of the
world (one delivery, one timer, one scenario action, one application poll
...: the loop's ``after_step`` hook calls ``check``), so never while a step is
half done, and only if something that can change it happened since the last
evaluation (``dirty``: a consumer's state or epoch, a membership or epoch
event of the coordinator, a scenario step). ``group_stabilized`` therefore
carries the time of the step after which the condition first held and follows
that step's events in the log; the event log depends on this placement, so it
is part of the contract.

Rule 2: an evaluation costs O(1) until the group can be stable: the live and
not-stable consumers are kept up to date (``consumer_changed``), and the
cheap conditions (no unstable consumer, the coordinator's state, no more
coordinator members than live consumers) are tested before the scans over
the members. The scans therefore run only once the coordinator's group is
``Stable`` and every live member is stable, which happens about once or twice
per rebalance (``scans`` counts them), and a successful evaluation latches
(``stable``) until the next change. Every test is free of side effects, so
testing them in this order gives the answer of any other order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from regroup.coordinator.service import GroupCoordinator
from regroup.events import (
    GenerationBumped,
    GroupEpochBumped,
    GroupStabilized,
    GroupStateChanged,
    MemberJoined,
    MemberLeft,
    RebalanceStarted,
    ScenarioStep,
)
from regroup.model.metadata import MetadataImage
from regroup.sim.consumer import SimConsumer

__all__ = ["DIRTYING", "StabilityWatch"]

#: Coordinator events after which the group may have become (un)stable.
DIRTYING: Final = frozenset(
    {
        MemberJoined,
        MemberLeft,
        RebalanceStarted,
        GroupEpochBumped,
        GenerationBumped,
        GroupStateChanged,
    }
)


class StabilityWatch:
    """Decides when to emit ``group_stabilized`` (see the module docstring)."""

    __slots__ = (
        "_coordinator",
        "_group_id",
        "_group_protocol",
        "_live",
        "_unstable",
        "dirty",
        "scans",
        "stable",
    )

    def __init__(self, group_id: str, group_protocol: str, coordinator: GroupCoordinator) -> None:
        self._group_id = group_id
        self._group_protocol = group_protocol
        #: Read only: the group's state, members and epochs (``None`` while failing over).
        self._coordinator: GroupCoordinator | None = coordinator
        self.stable = False
        self.dirty = True
        #: Live consumers (client id -> consumer); every test below is order-free.
        self._live: dict[str, SimConsumer] = {}
        #: Live consumers whose member is not stable (client ids).
        self._unstable: set[str] = set()
        #: How many evaluations got as far as the scans over the members (see Rule 2).
        self.scans = 0

    def event_hooks(self) -> dict[type, Callable[[], None]]:
        """What the journal calls after an event of each kind that may change the answer."""
        hooks: dict[type, Callable[[], None]] = dict.fromkeys(DIRTYING, self.mark_dirty)
        hooks[ScenarioStep] = self.touch
        return hooks

    def set_coordinator(self, coordinator: GroupCoordinator | None) -> None:
        """The coordinator failed over (``None``: none is loaded, so the group is not stable)."""
        self._coordinator = coordinator
        self.mark_dirty()

    def mark_dirty(self) -> None:
        """A coordinator event that can make the group (un)stable: unlatch, evaluate."""
        self.stable = False
        self.dirty = True

    def touch(self) -> None:
        """A scenario step: evaluate after this step, though a latched answer stands."""
        self.dirty = True

    def consumer_changed(self, consumer: SimConsumer) -> None:
        """A consumer started, stopped, or its member's state or epoch changed."""
        client_id = consumer.client_id
        if consumer.alive:
            self._live[client_id] = consumer
        else:
            self._live.pop(client_id, None)
        if consumer.stable or not consumer.alive:
            self._unstable.discard(client_id)
        else:
            self._unstable.add(client_id)
            self.stable = False
        self.dirty = True

    def check(self, now: int, metadata: MetadataImage) -> GroupStabilized | None:
        """Evaluate the condition if something changed: ``group_stabilized`` if it holds.

        Called after each step (Rule 1); the caller publishes the event it returns.
        """
        if not self.dirty or self.stable or self._unstable:
            return None
        self.dirty = False
        if not self._live or self._coordinator is None:
            return None
        group: Any = self._coordinator.group(self._group_id)
        if group is None or group.state_name() != "Stable":
            return None
        members = getattr(group, "members", {})
        if len(members) > len(self._live):
            return None  # more members than live consumers: the sets differ
        self.scans += 1
        live = list(self._live.values())
        if set(members) != {c.member_id for c in live}:
            return None
        # By the group's type, not the run's protocol: a group may migrate (online
        # upgrade/downgrade); a classic member of a consumer group is at its member
        # epoch when its generation is.
        if group.group_type == "classic":
            epoch = int(group.generation_id)
            current = [getattr(c.member, "generation_id", None) for c in live]
        else:
            epoch = int(group.group_epoch)
            current = [
                getattr(c.member, "member_epoch", getattr(c.member, "generation_id", None))
                for c in live
            ]
        if any(value != epoch for value in current):
            return None  # stable at an older generation/epoch: the news has not reached it yet
        if group.group_type == "consumer" and not all(
            _holds_coordinator_assignment(c, group.members[c.member_id], metadata) for c in live
        ):
            return None  # the coordinator sent partitions that have not arrived yet
        self.stable = True
        return GroupStabilized(
            ts_ms=now,
            group_id=self._group_id,
            group_protocol=self._group_protocol,
            generation_or_epoch=epoch,
            members=len(live),
        )


def _holds_coordinator_assignment(
    consumer: SimConsumer, record: Any, metadata: MetadataImage
) -> bool:
    """KIP-848: the member owns what the coordinator assigned it, nothing pending."""
    member = consumer.member
    if member is None or any(record.partitions_pending_revocation.values()):
        return False
    held: dict[Any, set[int]] = {}
    for tp in member.assignment:
        image = metadata.topic(tp.topic)
        if image is not None:
            held.setdefault(image.topic_id, set()).add(tp.partition)
    wanted = {t: set(p) for t, p in record.assigned_partitions.items() if p}
    return held == wanted
