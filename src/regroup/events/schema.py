"""The event schema: what every observer of a group sees, one dataclass per kind.

The simulator, the wire server and the members write the same events; the
Spark pipeline reads them (docs/architecture.md, "Contracts between the parts"). An
event is a fact with a time (``ts_ms``, the injected clock in milliseconds), a
group, and the fields of its kind. On disk an event is one JSON object per
line (``to_json_line``), with ``"schema"`` (the version below) and ``"kind"``
first, then the kind's fields; partitions are written ``"topic-3"``.

Versioning: ``SCHEMA_VERSION`` is bumped when a field changes meaning or is
removed. New kinds and new optional fields are added without a bump, and
readers ignore kinds they do not know.

Observed fields: events read back from Kafka's own logs (``regroup history``) carry what
real logs say and a simulation does not: ``broker_id`` (the coordinator's broker) and
``coordinator_partition`` (its ``__consumer_offsets`` partition) on every kind,
``reason_class`` on ``rebalance_started``, ``reason_text`` (Kafka's words, e.g. the client's
KIP-800 reason) on ``member_left``, ``member_count`` on ``generation_bumped`` and
``rebalance_completed``. They are optional, default to ``None`` and are left out of the JSON
form when ``None`` (``OBSERVED_FIELDS``), so the simulator's and the server's logs are
unchanged byte for byte. From a log, ``generation_bumped.leader_id`` is ``""`` and
``member_ids`` empty: Kafka's ``Stabilized`` line names neither. The coordinator sets
some of them too, where Kafka's own log line names the value: ``reason_text`` (a
LeaveGroup's client reason), and on ``member_left`` by a KIP-848 rebalance timeout
``member_epoch`` and ``rebalance_timeout_ms``; a line that does not set one keeps its
bytes.

Vocabulary: ``generation`` is a classic group's generation id; ``epoch`` is a
KIP-848 epoch (member epoch for member events, group epoch for group events).
``group_protocol`` is ``"classic"`` or ``"consumer"`` (the values of the
client config ``group.protocol``).

Kinds, by who emits them:

coordinator: member_pending, member_joined, member_left, group_state_changed,
  rebalance_started, rebalance_completed, generation_bumped,
  group_epoch_bumped, target_assignment_computed, member_assignment_changed,
  offsets_committed, offset_commit_rejected
member: member_state_changed, rebalance_requested, partitions_revoked,
  partitions_assigned, partitions_lost
data plane (simulator, server): records_produced, records_fetched,
  records_processed
checks (simulator, pipeline): invariant_violated
simulator (regroup.sim): simulation_started, simulation_ended, scenario_step,
  consumer_started, consumer_stopped, partitions_restored, group_stabilized
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from regroup.model import TopicPartition
from regroup.model.codec import CodecError, from_jsonable, to_jsonable

__all__ = [
    "EVENT_KINDS",
    "OBSERVED_FIELDS",
    "SCHEMA_VERSION",
    "ConsumerStarted",
    "ConsumerStopped",
    "Event",
    "GenerationBumped",
    "GroupEpochBumped",
    "GroupStabilized",
    "GroupStateChanged",
    "InvariantViolated",
    "MemberAssignmentChanged",
    "MemberJoined",
    "MemberLeft",
    "MemberPending",
    "MemberStateChanged",
    "OffsetCommitRejected",
    "OffsetsCommitted",
    "PartitionsAssigned",
    "PartitionsLost",
    "PartitionsRestored",
    "PartitionsRevoked",
    "RebalanceCompleted",
    "RebalanceRequested",
    "RebalanceStarted",
    "RecordsFetched",
    "RecordsProcessed",
    "RecordsProduced",
    "ScenarioStep",
    "SimulationEnded",
    "SimulationStarted",
    "TargetAssignmentComputed",
    "UnknownEventKind",
    "event_from_dict",
    "event_from_json_line",
]

SCHEMA_VERSION = 1

Partitions = tuple[TopicPartition, ...]

#: Optional fields of events read from real logs (and the few the coordinator sets where
#: Kafka's log names the value), left out of the JSON form when ``None``.
OBSERVED_FIELDS = frozenset(
    {
        "broker_id",
        "coordinator_partition",
        "reason_class",
        "reason_text",
        "member_count",
        "member_epoch",
        "rebalance_timeout_ms",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Common to every event: when, and in which group."""

    #: The name of the kind, as its JSON lines carry it; each event class sets its own.
    kind: ClassVar[str] = ""

    ts_ms: int
    group_id: str
    #: Observed (``OBSERVED_FIELDS``): the coordinator's broker and ``__consumer_offsets``
    #: partition, as a Kafka log names them.
    broker_id: int | None = None
    coordinator_partition: int | None = None

    def to_dict(self) -> dict[str, Any]:
        body = to_jsonable(self)
        for name in OBSERVED_FIELDS:
            if body.get(name, 0) is None:
                del body[name]
        return {"schema": SCHEMA_VERSION, "kind": self.kind, **body}

    def to_json_line(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), sort_keys=False)


# -- coordinator ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberPending(Event):
    """Classic (KIP-394): a new dynamic member got its member id and must join again with it.

    The JoinGroup (v4+) without a member id is answered MEMBER_ID_REQUIRED with a new
    id; the member is *pending* (not in the group) until it joins with that id
    (``member_joined``) or its session timeout passes (Kafka
    ``classicGroupJoinNewDynamicMember``).
    """

    kind: ClassVar[str] = "member_pending"

    member_id: str
    client_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberJoined(Event):
    """The coordinator admitted a member (classic: JoinGroup accepted; KIP-848: epoch 0)."""

    kind: ClassVar[str] = "member_joined"

    member_id: str
    group_protocol: str
    instance_id: str | None = None
    client_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberLeft(Event):
    """The coordinator removed a member.

    ``reason``: ``leave`` (LeaveGroup / epoch -1), ``session_timeout``,
    ``rebalance_timeout``, ``join_timeout``, ``sync_timeout``,
    ``replaced`` (static member replaced by a new instance), ``fenced``.

    ``reason_text``: the reason in Kafka's words; the coordinator sets a LeaveGroup's
    client reason (KIP-800; Kafka logs "not provided" without one). ``member_epoch`` and
    ``rebalance_timeout_ms``: when its rebalance timeout removed a KIP-848 member, the
    epoch it failed to leave and that timeout (Kafka's log line names both). Each is
    written only when set (``OBSERVED_FIELDS``).
    """

    kind: ClassVar[str] = "member_left"

    member_id: str
    group_protocol: str
    reason: str
    instance_id: str | None = None
    #: Observed: the reason in Kafka's words (a KIP-800 client reason, a fencing reason).
    reason_text: str | None = None
    member_epoch: int | None = None
    rebalance_timeout_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupStateChanged(Event):
    """A group's state changed (classic: Empty/PreparingRebalance/...; KIP-848: derived)."""

    kind: ClassVar[str] = "group_state_changed"

    group_protocol: str
    old_state: str
    new_state: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RebalanceStarted(Event):
    """Classic: the group entered PreparingRebalance. ``generation`` is the current one."""

    kind: ClassVar[str] = "rebalance_started"

    generation: int
    reason: str
    #: Observed: ``reason`` sorted into a class (``regroup.history.reasons``).
    reason_class: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RebalanceCompleted(Event):
    """Classic: the leader's assignment was installed and the group is Stable."""

    kind: ClassVar[str] = "rebalance_completed"

    generation: int
    assignment: Mapping[str, Partitions] = field(default_factory=dict)
    #: Observed: the group's size as the log gives it.
    member_count: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GenerationBumped(Event):
    """Classic: the join phase completed with a new generation."""

    kind: ClassVar[str] = "generation_bumped"

    generation: int
    protocol_name: str | None
    leader_id: str
    member_ids: tuple[str, ...]
    #: Observed: the member count of Kafka's ``Stabilized`` line.
    member_count: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupEpochBumped(Event):
    """KIP-848: the group epoch advanced (``reason`` says which change caused it)."""

    kind: ClassVar[str] = "group_epoch_bumped"

    epoch: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetAssignmentComputed(Event):
    """KIP-848: a new target assignment at ``epoch`` (the assignment epoch)."""

    kind: ClassVar[str] = "target_assignment_computed"

    epoch: int
    assignor: str
    assignment: Mapping[str, Partitions]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberAssignmentChanged(Event):
    """KIP-848: one reconciliation step changed a member's current assignment or epoch."""

    kind: ClassVar[str] = "member_assignment_changed"

    member_id: str
    epoch: int
    previous_epoch: int
    member_state: str
    assigned: Partitions
    pending_revocation: Partitions = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetsCommitted(Event):
    """The coordinator stored offsets for a member (or an outside committer: ``member_id`` "")."""

    kind: ClassVar[str] = "offsets_committed"

    member_id: str
    generation_or_epoch: int
    offsets: Mapping[TopicPartition, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitRejected(Event):
    """The coordinator refused a commit (``error`` is the Kafka error name)."""

    kind: ClassVar[str] = "offset_commit_rejected"

    member_id: str
    generation_or_epoch: int
    error: str
    partitions: Partitions = ()


# -- member ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberStateChanged(Event):
    """A member's client-side state machine moved (KIP-848 MemberState or classic states)."""

    kind: ClassVar[str] = "member_state_changed"

    member_id: str
    group_protocol: str
    old_state: str
    new_state: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RebalanceRequested(Event):
    """A member asked to rejoin (KIP-568 ``enforceRebalance``, a revocation follow-up, ...)."""

    kind: ClassVar[str] = "rebalance_requested"

    member_id: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionsRevoked(Event):
    """``onPartitionsRevoked`` ran: the member gave these partitions up cleanly."""

    kind: ClassVar[str] = "partitions_revoked"

    member_id: str
    partitions: Partitions
    generation_or_epoch: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionsAssigned(Event):
    """``onPartitionsAssigned`` ran: the member may now process these partitions."""

    kind: ClassVar[str] = "partitions_assigned"

    member_id: str
    partitions: Partitions
    generation_or_epoch: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionsLost(Event):
    """``onPartitionsLost`` ran: the member lost these partitions without revoking them."""

    kind: ClassVar[str] = "partitions_lost"

    member_id: str
    partitions: Partitions
    generation_or_epoch: int = -1


# -- data plane -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordsProduced(Event):
    """Records were appended to a partition; ``end_offset`` is the new log end offset."""

    kind: ClassVar[str] = "records_produced"

    partition: TopicPartition
    count: int
    end_offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordsFetched(Event):
    """A member fetched ``[first_offset, last_offset]`` of a partition."""

    kind: ClassVar[str] = "records_fetched"

    member_id: str
    partition: TopicPartition
    first_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordsProcessed(Event):
    """A member finished processing ``[first_offset, last_offset]`` of a partition."""

    kind: ClassVar[str] = "records_processed"

    member_id: str
    partition: TopicPartition
    first_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class InvariantViolated(Event):
    """A check found a broken invariant (``invariant`` names it; ``detail`` explains)."""

    kind: ClassVar[str] = "invariant_violated"

    invariant: str
    detail: str
    member_id: str | None = None
    partition: TopicPartition | None = None


# -- simulator ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulationStarted(Event):
    """A simulation run began: what it runs and the topics' partition counts at the start.

    ``rebalance_protocol``: ``eager``, ``cooperative`` or ``consumer`` (KIP-848).
    """

    kind: ClassVar[str] = "simulation_started"

    scenario: str
    group_protocol: str
    rebalance_protocol: str
    assignor: str
    seed: int
    topics: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulationEnded(Event):
    """A simulation run ended at ``ts_ms`` (the end of every measured interval)."""

    kind: ClassVar[str] = "simulation_ended"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioStep(Event):
    """The scenario acted (the *trigger* of a disruption): ``action`` names it.

    Actions: ``start``, ``stop``, ``crash``, ``restart``, ``slow``, ``cut``,
    ``heal``, ``add_partitions``, ``enforce_rebalance``, ``reconfigure``,
    ``coordinator_restart``, ``coordinator_loaded``.
    ``client_id`` is the consumer acted on (``""``: none); ``topics`` holds
    the new partition counts of an ``add_partitions``.
    """

    kind: ClassVar[str] = "scenario_step"

    action: str
    client_id: str = ""
    detail: str = ""
    topics: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerStarted(Event):
    """A simulated consumer process started (``client_id`` names the process)."""

    kind: ClassVar[str] = "consumer_started"

    client_id: str
    group_protocol: str
    instance_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerStopped(Event):
    """A consumer process ended: ``crashed`` (no callbacks, no leave) or closed cleanly.

    ``member_id`` is the member it was at the end (``""``: it never joined);
    whatever that member still owned is no longer processed from ``ts_ms``.
    """

    kind: ClassVar[str] = "consumer_stopped"

    client_id: str
    member_id: str
    crashed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionsRestored(Event):
    """A member finished restoring state for newly assigned partitions and processes them.

    Emitted by the simulator after every non-empty ``partitions_assigned``,
    ``restore_ms`` later (0: at the same time).
    """

    kind: ClassVar[str] = "partitions_restored"

    member_id: str
    partitions: Partitions
    restore_ms: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupStabilized(Event):
    """Every live member is stable and the coordinator says the group is ``Stable``.

    ``generation_or_epoch``: the classic generation or the KIP-848 group epoch.
    """

    kind: ClassVar[str] = "group_stabilized"

    group_protocol: str
    generation_or_epoch: int
    members: int


#: Every event class by its kind (the ``kind`` of its JSON lines).
EVENT_KINDS: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        MemberPending,
        MemberJoined,
        MemberLeft,
        GroupStateChanged,
        RebalanceStarted,
        RebalanceCompleted,
        GenerationBumped,
        GroupEpochBumped,
        TargetAssignmentComputed,
        MemberAssignmentChanged,
        OffsetsCommitted,
        OffsetCommitRejected,
        MemberStateChanged,
        RebalanceRequested,
        PartitionsRevoked,
        PartitionsAssigned,
        PartitionsLost,
        RecordsProduced,
        RecordsFetched,
        RecordsProcessed,
        InvariantViolated,
        SimulationStarted,
        SimulationEnded,
        ScenarioStep,
        ConsumerStarted,
        ConsumerStopped,
        PartitionsRestored,
        GroupStabilized,
    )
}


class UnknownEventKind(ValueError):
    """An event line of a kind this version does not know (readers may skip it)."""


def event_from_dict(data: Mapping[str, Any]) -> Event:
    """The event a ``to_dict()`` produced; ``CodecError`` / ``UnknownEventKind`` otherwise."""
    body = dict(data)
    version = body.pop("schema", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise CodecError(f"event schema version {version} is not {SCHEMA_VERSION}")
    kind = body.pop("kind", None)
    cls = EVENT_KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise UnknownEventKind(f"unknown event kind {kind!r}")
    return from_jsonable(cls, body)


def event_from_json_line(line: str) -> Event:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CodecError(f"not a JSON event line: {exc.msg}") from None
    if not isinstance(data, dict):
        raise CodecError("an event line must be a JSON object")
    return event_from_dict(data)


def event_fields(cls: type[Event]) -> tuple[str, ...]:
    """The field names of an event kind, in order (for column schemas)."""
    return tuple(f.name for f in dataclasses.fields(cls))
