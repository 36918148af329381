"""KIP-848's client-side assignors, broker side: which assignor, which member, what to accept.

Apache Kafka dropped client-side assignors before releasing KIP-848 (the
``ClientAssignors`` field and the PrepareAssignment/InstallAssignment RPCs were
removed in 2023); regroup builds them as the KIP describes ("Client Side Mode",
"Metadata Version Handling (KIP-268)", "Member Selection", "Assignment
Validation", "Assignment Error"). Where the KIP is silent, the choice made here
is stated.

Rule 1 (mode). The group uses a client-side assignor only when no member names a
    server-side assignor and some member advertises client-side assignors (KIP: "The
    server side assignor is used if any member specified one ... The client side
    assignor is used otherwise").

Rule 2 (which assignor). An assignor every advertising member supports; among
    several, the one with the best precedence summed over the members' lists (the
    KIP: "it will respect the precedence defined by the members"), then by name.

Rule 3 (which member). A member whose version range for that assignor covers
    every other member's range (A[1-5], B[3-4], C[2-4] picks A). Several: the lowest
    member id. None covers all: the member covering the most others, then the
    widest range, then the lowest id (regroup's choice; the KIP assumes one exists).
    Members that already timed out in this round are skipped.

Rule 4 (overlap). A member whose range for an assignor overlaps no range of another
    member advertising the same assignor is rejected with UNSUPPORTED_ASSIGNOR.

Rule 5 (one at a time). One assignment is in flight per group; the chosen member
    is told COMPUTE_ASSIGNMENT once, and has its rebalance timeout from that moment
    to install; then another member is chosen.

Rule 6 (validation). An installed assignment must assign every partition of the
    metadata it was prepared from, each once, to members that existed then;
    otherwise INVALID_ASSIGNMENT. It is installed even when the group epoch moved
    on meanwhile (members that left since are dropped from it).

Rule 7 (assignor error). An install carrying an error keeps the current target; the
    assignment epoch still moves to the prepared group epoch so the group is not
    asked again for the same epoch (regroup's choice).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from regroup.consumer.group.group_member import Assignment, ConsumerGroupMember
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.consumer import ClientAssignor
from regroup.model.uuid import Uuid

__all__ = [
    "ClientAssignmentInFlight",
    "PreparedSnapshot",
    "check_version_overlap",
    "is_client_side_mode",
    "select_client_assignor",
    "select_member",
    "validate_client_assignors",
    "validate_installed_assignment",
]


@dataclass(frozen=True, slots=True)
class PreparedSnapshot:
    """What PrepareAssignment handed out: the input the assignment must match."""

    group_epoch: int
    member_ids: frozenset[str]
    #: topic id -> partition count.
    partitions: Mapping[Uuid, int]


@dataclass(slots=True)
class ClientAssignmentInFlight:
    """The one client-side assignment a group waits for (transient, not a record)."""

    member_id: str
    assignor: str
    notified: bool = False
    deadline_ms: int | None = None
    snapshot: PreparedSnapshot | None = None
    timed_out: set[str] = field(default_factory=set)


def is_client_side_mode(members: Iterable[ConsumerGroupMember]) -> bool:
    """Rule 1."""
    advertised = False
    for member in members:
        if member.server_assignor:
            return False
        advertised = advertised or bool(member.client_assignors)
    return advertised


def _advertising(members: Iterable[ConsumerGroupMember]) -> list[ConsumerGroupMember]:
    return sorted((m for m in members if m.client_assignors), key=lambda m: m.member_id)


def select_client_assignor(members: Iterable[ConsumerGroupMember]) -> str | None:
    """Rule 2; ``None`` when no assignor is common to all advertising members."""
    advertising = _advertising(members)
    if not advertising:
        return None
    common = set.intersection(*({a.name for a in m.client_assignors} for m in advertising))
    if not common:
        return None

    def rank(name: str) -> tuple[int, str]:
        total = 0
        for member in advertising:
            total += [a.name for a in member.client_assignors].index(name)
        return total, name

    return min(common, key=rank)


def _range(member: ConsumerGroupMember, assignor: str) -> tuple[int, int] | None:
    for entry in member.client_assignors:
        if entry.name == assignor:
            return entry.minimum_version, entry.maximum_version
    return None


def select_member(
    members: Iterable[ConsumerGroupMember], assignor: str, excluded: Iterable[str] = ()
) -> str | None:
    """Rule 3: the member that runs ``assignor``; ``None`` when nobody can."""
    skip = set(excluded)
    ranges = {
        m.member_id: r
        for m in _advertising(members)
        if (r := _range(m, assignor)) is not None and m.member_id not in skip
    }
    if not ranges:
        return None

    def covered(candidate: str) -> int:
        low, high = ranges[candidate]
        return sum(1 for o_low, o_high in ranges.values() if low <= o_low and o_high <= high)

    return min(
        ranges,
        key=lambda mid: (-covered(mid), -(ranges[mid][1] - ranges[mid][0]), mid),
    )


def validate_client_assignors(assignors: Iterable[ClientAssignor]) -> None:
    """The KIP's request validation of ``ClientAssignors`` (INVALID_REQUEST)."""
    for entry in assignors:
        if not entry.name:
            raise KafkaProtocolError(ErrorCode.INVALID_REQUEST, "Assignor.Name must be non-empty.")
        if entry.minimum_version < 0:
            raise KafkaProtocolError(
                ErrorCode.INVALID_REQUEST, "Assignor.MinimumVersion must be >= 0."
            )
        if entry.maximum_version < entry.minimum_version:
            raise KafkaProtocolError(
                ErrorCode.INVALID_REQUEST,
                "Assignor.MaximumVersion must be >= 0 and >= Assignor.MinimumVersion.",
            )
        if not entry.minimum_version <= entry.version <= entry.maximum_version:
            raise KafkaProtocolError(
                ErrorCode.INVALID_REQUEST,
                "Assignor.Version must be within Assignor.MinimumVersion and "
                "Assignor.MaximumVersion.",
            )


def check_version_overlap(
    member_id: str, assignors: Iterable[ClientAssignor], others: Iterable[ConsumerGroupMember]
) -> None:
    """Rule 4: UNSUPPORTED_ASSIGNOR when a range overlaps no other member's range."""
    other_list = [m for m in others if m.member_id != member_id]
    for entry in assignors:
        ranges = [r for m in other_list if (r := _range(m, entry.name)) is not None]
        if not ranges:
            continue
        if not any(
            entry.minimum_version <= high and low <= entry.maximum_version for low, high in ranges
        ):
            raise KafkaProtocolError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ClientAssignor {entry.name} versions [{entry.minimum_version}-"
                f"{entry.maximum_version}] overlap with no other member of the group.",
            )


def validate_installed_assignment(
    assignment: Mapping[str, Assignment], snapshot: PreparedSnapshot
) -> None:
    """Rule 6: raise INVALID_ASSIGNMENT unless every partition is assigned once to a member."""
    seen: set[tuple[Uuid, int]] = set()
    for member_id, partitions in assignment.items():
        if member_id not in snapshot.member_ids:
            raise _invalid(f"member {member_id} does not exist")
        for topic_id, numbers in partitions.items():
            count = snapshot.partitions.get(topic_id)
            if count is None:
                raise _invalid(f"topic {topic_id} is not subscribed by the group")
            for partition in numbers:
                if not 0 <= partition < count:
                    raise _invalid(f"partition {topic_id}-{partition} does not exist")
                if (topic_id, partition) in seen:
                    raise _invalid(f"partition {topic_id}-{partition} is assigned twice")
                seen.add((topic_id, partition))
    total = sum(snapshot.partitions.values())
    if len(seen) != total:
        raise _invalid(f"{total - len(seen)} partitions are not assigned")


def _invalid(message: str) -> KafkaProtocolError:
    return KafkaProtocolError(ErrorCode.INVALID_ASSIGNMENT, message)
