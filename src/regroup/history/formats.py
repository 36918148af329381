"""Kafka's group-coordinator log lines, by family and version: one table, rules as data.

Each row of ``FORMATS`` is one message Kafka writes about a consumer group: its *family*
(who writes it, which fixes the line's prefix and logger), its *kind* (what happened), the
Kafka versions whose sources hold that exact wording, the *template* with named fields, and
the Kafka class that writes it. From a template this module derives both a compiled regular
expression (``parse``) and a renderer (``render``, ``render_line``): one source of truth for
reading logs and for writing them in Kafka's wording.

Families and their prefixes (the ``logIdent`` / ``LogContext`` of the writer):

- ``scala-group-coordinator``: ``kafka.coordinator.group.GroupCoordinator`` of Kafka 1.x to
  3.9, prefix ``[GroupCoordinator 1]: `` (``logIdent`` set in the class). Its
  ``GroupMetadataManager`` (prefix ``[GroupMetadataManager brokerId=1] ``) writes the
  partition loading lines.
- ``java-group-coordinator``: ``org.apache.kafka.coordinator.group.GroupMetadataManager`` of
  Kafka 3.7 to 4.x (the new group coordinator of KIP-848, the only one from 4.0), for classic
  and consumer groups. Prefix ``[GroupCoordinator id=1 topic=__consumer_offsets partition=12] ``
  (``GroupCoordinatorService`` names the runtime ``GroupCoordinator id=N``;
  ``CoordinatorRuntime.CoordinatorContext`` adds ``topic=.. partition=..``). Consumer-group
  lines add ``[GroupId G] `` themselves.
- ``java-consumer-client``: the Java consumer's ``AbstractCoordinator`` /
  ``ConsumerCoordinator``, prefix ``[Consumer clientId=C, groupId=G] `` (``ConsumerUtils``);
  the client's own view, in the application's log, whatever layout it uses.

The log4j layout of Kafka's shipped ``config/log4j.properties`` (and ``log4j2.yaml`` from
4.0) is ``[%d] %p %m (%c)%n``: ``[2026-12-02 14:03:11,123] INFO <prefix><message>
(<logger>)``. Parsing that envelope, and the prefixes deployments put before it, is
``regroup.history.lines``' job; this module sees the text from the family prefix on.

Template syntax: ``{name}`` is a field, ``{{`` and ``}}`` are literal braces (Python's
``str.format``). A field's regular expression comes from its name (``FIELD_PATTERNS``);
fields named in ``INT_FIELDS`` parse to ``int``. Versions are the first and last Kafka
release whose sources were checked to hold the wording (``last`` ``None``: still written by
the newest release checked, ``NEWEST_CHECKED``). The version ranges come from reading the
sources at the release tags of apache/kafka (1.1.0 ... 3.8.0 and trunk) and the 4.0 to 4.3
branches of confluentinc/kafka (Apache Kafka with Confluent's packaging).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

__all__ = [
    "FAMILY_LOGGERS",
    "FAMILY_PREFIXES",
    "FIELD_PATTERNS",
    "FORMATS",
    "INT_FIELDS",
    "NEWEST_CHECKED",
    "Family",
    "Kind",
    "LogFormat",
    "Match",
    "family_of",
    "format_timestamp",
    "parse",
    "render",
    "render_line",
    "version_key",
]

#: The newest Kafka release whose sources were read for this table.
NEWEST_CHECKED = "4.3"


class Family(StrEnum):
    """Who writes a line: it fixes the prefix, the logger and the vocabulary."""

    SCALA = "scala-group-coordinator"
    JAVA = "java-group-coordinator"
    CLIENT = "java-consumer-client"


class Kind(StrEnum):
    """What a line says happened. Classic-group kinds first, then consumer groups, then clients."""

    # classic groups (both coordinators)
    REBALANCE_PREPARING = "rebalance_preparing"
    GROUP_STABILIZED = "group_stabilized"
    ASSIGNMENT_RECEIVED = "assignment_received"
    MEMBER_FAILED = "member_failed"  # heartbeat (session) expiration
    MEMBER_LEFT = "member_left"  # LeaveGroup
    PENDING_MEMBER_LEFT = "pending_member_left"
    PENDING_MEMBER_EXPIRED = "pending_member_expired"
    GROUP_EMPTY = "group_empty"
    STATIC_MEMBER_REPLACED = "static_member_replaced"
    STATIC_MEMBER_JOINED = "static_member_joined"
    DYNAMIC_MEMBER_PENDING = "dynamic_member_pending"  # new id handed out, member must rejoin
    DYNAMIC_MEMBER_JOINED = "dynamic_member_joined"
    PENDING_MEMBER_JOINED = "pending_member_joined"  # a KIP-394 pending member rejoined
    REBALANCE_STALLED = "rebalance_stalled"  # could not complete: no member rejoined
    UNJOINED_MEMBERS_REMOVED = "unjoined_members_removed"
    GROUP_LOADED = "group_loaded"
    GROUP_UNLOADED = "group_unloaded"
    COORDINATOR_ELECTED = "coordinator_elected"
    COORDINATOR_RESIGNED = "coordinator_resigned"
    PARTITION_LOADING = "partition_loading"
    PARTITION_LOADED = "partition_loaded"
    # consumer groups (KIP-848), java-group-coordinator only
    CONSUMER_MEMBER_JOINED = "consumer_member_joined"
    CONSUMER_STATIC_MEMBER_JOINED = "consumer_static_member_joined"
    CONSUMER_STATIC_MEMBER_REPLACED = "consumer_static_member_replaced"
    CONSUMER_MEMBER_LEFT = "consumer_member_left"
    CONSUMER_STATIC_MEMBER_LEFT = "consumer_static_member_left"
    CONSUMER_STATIC_MEMBER_LEFT_TEMPORARILY = "consumer_static_member_left_temporarily"
    CONSUMER_MEMBER_FENCED = "consumer_member_fenced"
    GROUP_EPOCH_BUMPED = "group_epoch_bumped"
    TARGET_ASSIGNMENT_COMPUTED = "target_assignment_computed"
    MEMBER_ASSIGNMENT_UPDATED = "member_assignment_updated"
    CONSUMER_GROUP_LOADED = "consumer_group_loaded"
    CONSUMER_GROUP_UNLOADED = "consumer_group_unloaded"
    # the Java consumer client
    CLIENT_JOINING = "client_joining"
    CLIENT_JOINED = "client_joined"
    CLIENT_SYNCED = "client_synced"
    CLIENT_REJOIN_REQUESTED = "client_rejoin_requested"
    CLIENT_LEAVING = "client_leaving"
    CLIENT_POLL_TIMEOUT = "client_poll_timeout"
    CLIENT_ASSIGNMENT = "client_assignment"


#: Each family's prefix, a template like the messages' (its fields parse and render too).
FAMILY_PREFIXES: Mapping[Family, str] = {
    Family.SCALA: "[GroupCoordinator {broker_id}]: ",
    Family.JAVA: (
        "[GroupCoordinator id={broker_id} topic=__consumer_offsets partition={offsets_partition}] "
    ),
    Family.CLIENT: "[Consumer clientId={client_id}, groupId={group_id}] ",
}

#: The logger (log4j ``%c``) each family writes under.
FAMILY_LOGGERS: Mapping[Family, str] = {
    Family.SCALA: "kafka.coordinator.group.GroupCoordinator",
    Family.JAVA: "org.apache.kafka.coordinator.group.GroupMetadataManager",
    Family.CLIENT: "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator",
}

_SCALA_GMM_PREFIX = "[GroupMetadataManager brokerId={broker_id}] "
_SCALA_GMM_LOGGER = "kafka.coordinator.group.GroupMetadataManager"

_INT = r"-?\d+"
#: Fields parsed to int.
INT_FIELDS = frozenset(
    {
        "broker_id",
        "offsets_partition",
        "generation",
        "epoch",
        "previous_epoch",
        "members",
        "static_members",
        "coordinator_epoch",
        "assignor_ms",
        "timeout_ms",
        "duration_ms",
        "metadata_hash",
        "session_timeout_ms",
        "rebalance_timeout_ms",
    }
)
#: The regular expression of each field name; a name not listed matches one word (``\S+``).
FIELD_PATTERNS: Mapping[str, str] = {
    **dict.fromkeys(INT_FIELDS, _INT),
    "group_id": r".+?",
    "client_id": r".*?",
    "reason": r".*",
    "state": r"\w+",
    "protocol": r"\w+",
    "assignor": r"[^']*",
    "assignment": r".*",
    "assigned": r".*",
    "revoked": r".*",
    "from_summary": r".*",
    "to_summary": r".*",
    "members_list": r".*",
    "groups": r".*",
    "topics": r".*",
    "client_host": r"\S*",
    "protocols": r".*?",
    "coordinator": r".*?",
    "generation_text": r"Generation\{.*?\}",
    "new_assignment": r".*",
    "partitions": r".*",
    "rest": r".*",
}
_WORD = r"\S+"

_FORMATTER = string.Formatter()


def version_key(version: str) -> tuple[int, ...]:
    """``"3.10"`` -> ``(3, 10)``: versions compare as numbers, part by part."""
    return tuple(int(part) for part in version.split("."))


def _pieces(template: str) -> list[tuple[str, str | None]]:
    return [(literal, name) for literal, name, _spec, _conv in _FORMATTER.parse(template)]


def _compile(template: str) -> tuple[re.Pattern[str], tuple[str, ...], str]:
    """A template's regex (named groups; a repeated name is a back-reference), fields, anchor."""
    parts: list[str] = []
    names: list[str] = []
    literals: list[str] = []
    for literal, name in _pieces(template):
        parts.append(re.escape(literal))
        literals.append(literal)
        if name is None:
            continue
        if not name.isidentifier():
            raise ValueError(f"template field {name!r} is not an identifier: {template!r}")
        if name in names:
            parts.append(f"(?P={name})")
        else:
            names.append(name)
            pattern = FIELD_PATTERNS.get(name, _WORD)
            parts.append(f"(?P<{name}>{pattern})")
    anchor = max(literals, key=len) if literals else ""
    return re.compile("".join(parts)), tuple(names), anchor


@dataclass(frozen=True, slots=True)
class LogFormat:
    """One row of the table: a message Kafka writes, in one family's wording, in some versions."""

    family: Family
    kind: Kind
    first: str
    last: str | None
    template: str
    source: str
    level: str = "INFO"
    #: Tells apart two rows of one kind and first version (``static`` / ``dynamic`` leave).
    variant: str = ""
    #: Overrides the family's prefix / logger (the Scala GroupMetadataManager's lines).
    prefix: str | None = None
    logger: str | None = None
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)
    fields: tuple[str, ...] = field(init=False, repr=False, compare=False)
    anchor: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        regex, names, _ = _compile(self.full_template)
        _, _, anchor = _compile(self.template)
        object.__setattr__(self, "regex", regex)
        object.__setattr__(self, "fields", names)
        object.__setattr__(self, "anchor", anchor)

    @property
    def full_template(self) -> str:
        return self.line_prefix + self.template

    @property
    def line_prefix(self) -> str:
        return FAMILY_PREFIXES[self.family] if self.prefix is None else self.prefix

    @property
    def logger_name(self) -> str:
        return FAMILY_LOGGERS[self.family] if self.logger is None else self.logger

    @property
    def versions(self) -> str:
        """``"2.8-3.9"``, or ``"3.7+"`` for a wording the newest release checked still writes."""
        return f"{self.first}+" if self.last is None else f"{self.first}-{self.last}"

    def holds(self, version: str) -> bool:
        """Whether Kafka ``version`` writes this wording."""
        key = version_key(version)
        if key < version_key(self.first):
            return False
        return self.last is None or key[: len(version_key(self.last))] <= version_key(self.last)

    def render(self, **fields: object) -> str:
        """The prefix and message with ``fields`` filled in (every field of the row is needed)."""
        missing = [name for name in self.fields if name not in fields]
        if missing:
            raise KeyError(f"{self.kind} ({self.family} {self.versions}) needs {missing}")
        return self.full_template.format(**{name: fields[name] for name in self.fields})

    def match(self, text: str) -> dict[str, str | int] | None:
        """The fields of ``text`` (prefix and message) if it is this row's wording."""
        found = self.regex.fullmatch(text)
        if found is None:
            return None
        values: dict[str, str | int] = {}
        for name, value in found.groupdict().items():
            values[name] = int(value) if name in INT_FIELDS else value
        return values


_S, _J, _C = Family.SCALA, Family.JAVA, Family.CLIENT
_GC_SCALA = "kafka.coordinator.group.GroupCoordinator"
_GMM_SCALA = "kafka.coordinator.group.GroupMetadataManager"
_GMM_JAVA = "org.apache.kafka.coordinator.group.GroupMetadataManager"
_AC = "org.apache.kafka.clients.consumer.internals.AbstractCoordinator"
_CC = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"
_OFFSETS = "(__consumer_offsets-{offsets_partition})"
_MEMBER_METADATA = (
    "MemberMetadata(memberId={member_id}, groupInstanceId={instance_id}, clientId={client_id}, "
    "clientHost={client_host}, sessionTimeoutMs={session_timeout_ms}, "
    "rebalanceTimeoutMs={rebalance_timeout_ms}, supportedProtocols={protocols})"
)
_LEAVE = "through explicit `LeaveGroup` request; client reason: {reason}"

#: The table. Within a family and kind, rows run newest first; a more specific wording comes
#: before a more general one that would also match it (``parse`` takes the first match).
FORMATS: tuple[LogFormat, ...] = (
    # -- Scala GroupCoordinator (Kafka 1.x-3.9) ------------------------------------------
    LogFormat(
        _S,
        Kind.REBALANCE_PREPARING,
        "2.1",
        "3.9",
        "Preparing to rebalance group {group_id} in state {state} with old generation "
        "{generation} " + _OFFSETS + " (reason: {reason})",
        f"{_GC_SCALA}.prepareRebalance",
    ),
    LogFormat(
        _S,
        Kind.REBALANCE_PREPARING,
        "1.1",
        "2.0",
        "Preparing to rebalance group {group_id} with old generation {generation} " + _OFFSETS,
        f"{_GC_SCALA}.prepareRebalance",
    ),
    LogFormat(
        _S,
        Kind.GROUP_STABILIZED,
        "2.8",
        "3.9",
        "Stabilized group {group_id} generation {generation} "
        + _OFFSETS
        + " with {members} members",
        f"{_GC_SCALA}.onCompleteJoin",
    ),
    LogFormat(
        _S,
        Kind.GROUP_STABILIZED,
        "1.1",
        "2.7",
        "Stabilized group {group_id} generation {generation} " + _OFFSETS,
        f"{_GC_SCALA}.onCompleteJoin",
    ),
    LogFormat(
        _S,
        Kind.ASSIGNMENT_RECEIVED,
        "3.0",
        "3.9",
        "Assignment received from leader {leader} for group {group_id} for generation "
        "{generation}. The group has {members} members, {static_members} of which are static.",
        f"{_GC_SCALA}.doSyncGroup",
    ),
    LogFormat(
        _S,
        Kind.ASSIGNMENT_RECEIVED,
        "2.8",
        "2.8",
        "Assignment received from leader for group {group_id} for generation {generation}. "
        "The group has {members} members, {static_members} of which are static.",
        f"{_GC_SCALA}.doSyncGroup",
    ),
    LogFormat(
        _S,
        Kind.ASSIGNMENT_RECEIVED,
        "1.1",
        "2.7",
        "Assignment received from leader for group {group_id} for generation {generation}",
        f"{_GC_SCALA}.doSyncGroup",
    ),
    LogFormat(
        _S,
        Kind.MEMBER_FAILED,
        "1.1",
        "3.9",
        "Member {member_id} in group {group_id} has failed, removing it from the group",
        f"{_GC_SCALA}.onExpireHeartbeat",
    ),
    LogFormat(
        _S,
        Kind.MEMBER_LEFT,
        "3.2",
        "3.9",
        "Member " + _MEMBER_METADATA + " has left group {group_id} through explicit "
        "`LeaveGroup`; client reason: {reason}",
        f"{_GC_SCALA}.handleLeaveGroup",
    ),
    LogFormat(
        _S,
        Kind.MEMBER_LEFT,
        "3.0",
        "3.1",
        "Member " + _MEMBER_METADATA + " has left group {group_id} through explicit "
        "`LeaveGroup` request",
        f"{_GC_SCALA}.handleLeaveGroup",
    ),
    LogFormat(
        _S,
        Kind.MEMBER_LEFT,
        "2.4",
        "2.8",
        "Member[group.instance.id {instance_id}, member.id {member_id}] in group {group_id} "
        "has left, removing it from the group",
        f"{_GC_SCALA}.handleLeaveGroup",
    ),
    LogFormat(
        _S,
        Kind.MEMBER_LEFT,
        "2.2",
        "2.3",
        "Member {member_id} in group {group_id} has left, removing it from the group",
        f"{_GC_SCALA}.handleLeaveGroup",
    ),
    LogFormat(
        _S,
        Kind.PENDING_MEMBER_LEFT,
        "3.0",
        "3.9",
        "Pending member with memberId={member_id} has left group {group_id} through explicit "
        "`LeaveGroup` request",
        f"{_GC_SCALA}.handleLeaveGroup",
    ),
    LogFormat(
        _S,
        Kind.PENDING_MEMBER_EXPIRED,
        "2.4",
        "3.9",
        "Pending member {member_id} in group {group_id} has been removed after session "
        "timeout expiration.",
        f"{_GC_SCALA}.onExpireHeartbeat",
    ),
    LogFormat(
        _S,
        Kind.GROUP_EMPTY,
        "1.1",
        "3.9",
        "Group {group_id} with generation {generation} is now empty " + _OFFSETS,
        f"{_GC_SCALA}.onCompleteJoin",
    ),
    LogFormat(
        _S,
        Kind.STATIC_MEMBER_REPLACED,
        "3.0",
        "3.9",
        "Static member with groupInstanceId={instance_id} and unknown member id joins group "
        "{group_id} in {state} state. Replacing previously mapped member {old_member_id} with "
        "this groupInstanceId.",
        f"{_GC_SCALA}.doStaticNewMemberJoinGroup",
    ),
    LogFormat(
        _S,
        Kind.STATIC_MEMBER_REPLACED,
        "2.4",
        "2.8",
        "Static member {instance_id} with unknown member id rejoins, assigning new member id "
        "{member_id}, while old member {old_member_id} will be removed.",
        f"{_GC_SCALA}.doUnknownJoinGroup",
    ),
    LogFormat(
        _S,
        Kind.STATIC_MEMBER_JOINED,
        "3.0",
        "3.9",
        "Static member with groupInstanceId={instance_id} and unknown member id joins group "
        "{group_id} in {state} state. Created a new member id {member_id} for this member and "
        "add to the group.",
        f"{_GC_SCALA}.doStaticNewMemberJoinGroup",
    ),
    LogFormat(
        _S,
        Kind.DYNAMIC_MEMBER_PENDING,
        "3.0",
        "3.9",
        "Dynamic member with unknown member id joins group {group_id} in {state} state. "
        "Created a new member id {member_id} and request the member to rejoin with this id.",
        f"{_GC_SCALA}.doDynamicNewMemberJoinGroup",
    ),
    LogFormat(
        _S,
        Kind.DYNAMIC_MEMBER_JOINED,
        "3.0",
        "3.9",
        "Dynamic Member with unknown member id joins group {group_id} in {state} state. "
        "Created a new member id {member_id} for this member and add to the group.",
        f"{_GC_SCALA}.doDynamicNewMemberJoinGroup",
    ),
    LogFormat(
        _S,
        Kind.REBALANCE_STALLED,
        "2.4",
        "3.9",
        "Group {group_id} could not complete rebalance because no members rejoined",
        f"{_GC_SCALA}.onCompleteJoin",
        level="ERROR",
    ),
    LogFormat(
        _S,
        Kind.UNJOINED_MEMBERS_REMOVED,
        "3.0",
        "3.9",
        "Group {group_id} removed dynamic members who haven't joined: {members_list}",
        f"{_GC_SCALA}.onCompleteJoin",
    ),
    LogFormat(
        _S,
        Kind.GROUP_LOADED,
        "1.1",
        "3.9",
        "Loading group metadata for {group_id} with generation {generation}",
        f"{_GC_SCALA}.onGroupLoaded",
    ),
    LogFormat(
        _S,
        Kind.GROUP_UNLOADED,
        "1.1",
        "3.9",
        "Unloading group metadata for {group_id} with generation {generation}",
        f"{_GC_SCALA}.onGroupUnloaded",
    ),
    LogFormat(
        _S,
        Kind.COORDINATOR_ELECTED,
        "2.8",
        "3.9",
        "Elected as the group coordinator for partition {offsets_partition} in epoch "
        "{coordinator_epoch}",
        f"{_GC_SCALA}.onElection",
    ),
    LogFormat(
        _S,
        Kind.COORDINATOR_RESIGNED,
        "2.8",
        "3.9",
        "Resigned as the group coordinator for partition {offsets_partition} in epoch "
        "{coordinator_epoch_text}",
        f"{_GC_SCALA}.onResignation",
    ),
    LogFormat(
        _S,
        Kind.PARTITION_LOADED,
        "2.0",
        "3.9",
        "Finished loading offsets and group metadata from __consumer_offsets-{offsets_partition} "
        "in {duration_ms} milliseconds{rest}",
        f"{_GMM_SCALA}.doLoadGroupsAndOffsets",
        prefix=_SCALA_GMM_PREFIX,
        logger=_SCALA_GMM_LOGGER,
    ),
    # -- Java GroupMetadataManager (Kafka 3.7-4.x): classic groups --------------------------
    LogFormat(
        _J,
        Kind.REBALANCE_PREPARING,
        "3.7",
        None,
        "Preparing to rebalance group {group_id} in state {state} with old generation "
        "{generation} (reason: {reason}).",
        f"{_GMM_JAVA}.prepareRebalance",
    ),
    LogFormat(
        _J,
        Kind.GROUP_STABILIZED,
        "3.7",
        None,
        "Stabilized group {group_id} generation {generation} with {members} members.",
        f"{_GMM_JAVA}.completeClassicGroupJoin",
    ),
    LogFormat(
        _J,
        Kind.ASSIGNMENT_RECEIVED,
        "3.7",
        None,
        "Assignment received from leader {leader} for group {group_id} for generation "
        "{generation}. The group has {members} members, {static_members} of which are static.",
        f"{_GMM_JAVA}.classicGroupSyncToClassicGroup",
    ),
    LogFormat(
        _J,
        Kind.MEMBER_FAILED,
        "3.7",
        None,
        "Member {member_id} in group {group_id} has failed, removing it from the group.",
        f"{_GMM_JAVA}.classicGroupHeartbeatExpiration",
    ),
    LogFormat(
        _J,
        Kind.MEMBER_LEFT,
        "4.0",
        None,
        "[GroupId {group_id}] Static member {member_id} with instance id {instance_id} has "
        "left group " + _LEAVE,
        f"{_GMM_JAVA}.classicGroupLeaveToClassicGroup",
        variant="static",
    ),
    LogFormat(
        _J,
        Kind.MEMBER_LEFT,
        "4.0",
        None,
        "[GroupId {group_id}] Dynamic member {member_id} has left group " + _LEAVE,
        f"{_GMM_JAVA}.classicGroupLeaveToClassicGroup",
        variant="dynamic",
    ),
    LogFormat(
        _J,
        Kind.MEMBER_LEFT,
        "3.8",
        "3.9",
        "[Group {group_id}] Static Member {member_id} with instance id {instance_id} has "
        "left group " + _LEAVE,
        f"{_GMM_JAVA}.classicGroupLeaveToClassicGroup",
        variant="static",
    ),
    LogFormat(
        _J,
        Kind.MEMBER_LEFT,
        "3.8",
        "3.9",
        "[Group {group_id}] Dynamic Member {member_id} has left group " + _LEAVE,
        f"{_GMM_JAVA}.classicGroupLeaveToClassicGroup",
        variant="dynamic",
    ),
    LogFormat(
        _J,
        Kind.MEMBER_LEFT,
        "3.7",
        None,
        "[Group {group_id}] Member {member_id} has left group " + _LEAVE,
        f"{_GMM_JAVA}.removeCurrentMemberFromClassicGroup",
    ),
    LogFormat(
        _J,
        Kind.PENDING_MEMBER_LEFT,
        "3.7",
        None,
        "[Group {group_id}] Pending member {member_id} has left group " + _LEAVE,
        f"{_GMM_JAVA}.classicGroupLeaveToClassicGroup",
    ),
    LogFormat(
        _J,
        Kind.PENDING_MEMBER_EXPIRED,
        "3.7",
        None,
        "Pending member {member_id} in group {group_id} has been removed after session "
        "timeout expiration.",
        f"{_GMM_JAVA}.classicGroupHeartbeatExpiration",
    ),
    LogFormat(
        _J,
        Kind.GROUP_EMPTY,
        "3.7",
        None,
        "Group {group_id} with generation {generation} is now empty.",
        f"{_GMM_JAVA}.completeClassicGroupJoin",
    ),
    LogFormat(
        _J,
        Kind.STATIC_MEMBER_REPLACED,
        "3.7",
        None,
        "Static member with groupInstanceId={instance_id} and unknown member id joins group "
        "{group_id} in {state} state. Replacing previously mapped member {old_member_id} with "
        "this groupInstanceId.",
        f"{_GMM_JAVA}.classicGroupJoinNewStaticMember",
    ),
    LogFormat(
        _J,
        Kind.STATIC_MEMBER_JOINED,
        "3.7",
        None,
        "Static member with groupInstanceId={instance_id} and unknown member id joins group "
        "{group_id} in {state} state. Created a new member id {member_id} for this member and "
        "added to the group.",
        f"{_GMM_JAVA}.classicGroupJoinNewStaticMember",
    ),
    LogFormat(
        _J,
        Kind.DYNAMIC_MEMBER_PENDING,
        "3.7",
        None,
        "Dynamic member with unknown member id joins group {group_id} in {state} state. "
        "Created a new member id {member_id} and requesting the member to rejoin with this id.",
        f"{_GMM_JAVA}.classicGroupJoinNewDynamicMember",
    ),
    LogFormat(
        _J,
        Kind.DYNAMIC_MEMBER_JOINED,
        "3.7",
        None,
        "Dynamic member with unknown member id joins group {group_id} in state {state}. "
        "Created a new member id {member_id} and added the member to the group.",
        f"{_GMM_JAVA}.classicGroupJoinNewDynamicMember",
    ),
    LogFormat(
        _J,
        Kind.PENDING_MEMBER_JOINED,
        "3.7",
        None,
        "Pending dynamic member with id {member_id} joins group {group_id} in {state} state. "
        "Adding to the group now.",
        f"{_GMM_JAVA}.classicGroupJoinExistingMember",
    ),
    LogFormat(
        _J,
        Kind.REBALANCE_STALLED,
        "3.7",
        None,
        "Group {group_id} could not complete rebalance because no members rejoined.",
        f"{_GMM_JAVA}.completeClassicGroupJoin",
        level="ERROR",
    ),
    LogFormat(
        _J,
        Kind.UNJOINED_MEMBERS_REMOVED,
        "3.7",
        None,
        "Group {group_id} removed dynamic members who haven't joined: {members_list}",
        f"{_GMM_JAVA}.completeClassicGroupJoin",
    ),
    LogFormat(
        _J,
        Kind.GROUP_LOADED,
        "3.7",
        None,
        "Loaded classic group {group_id} with {members} members.",
        f"{_GMM_JAVA}.onLoaded",
    ),
    LogFormat(
        _J,
        Kind.GROUP_UNLOADED,
        "3.8",
        None,
        "[GroupId={group_id}] Unloading group metadata for generation {generation}.",
        f"{_GMM_JAVA}.onUnloaded",
    ),
    # -- Java GroupMetadataManager (Kafka 3.7-4.x): consumer groups (KIP-848) --------------
    LogFormat(
        _J,
        Kind.CONSUMER_MEMBER_JOINED,
        "4.0",
        None,
        "[GroupId {group_id}] Member {member_id} joins the consumer group using the "
        "{protocol} protocol.",
        f"{_GMM_JAVA}.consumerGroupHeartbeat",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_MEMBER_JOINED,
        "3.7",
        "3.9",
        "[GroupId {group_id}] Member {member_id} joins the consumer group.",
        f"{_GMM_JAVA}.consumerGroupHeartbeat",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_STATIC_MEMBER_JOINED,
        "4.0",
        None,
        "[GroupId {group_id}] Static member {member_id} with instance id {instance_id} joins "
        "the consumer group using the {protocol} protocol.",
        f"{_GMM_JAVA}.consumerGroupHeartbeat",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_STATIC_MEMBER_JOINED,
        "3.7",
        "3.9",
        "[GroupId {group_id}] Static member {member_id} with instance id {instance_id} joins "
        "the consumer group.",
        f"{_GMM_JAVA}.consumerGroupHeartbeat",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_STATIC_MEMBER_REPLACED,
        "4.0",
        None,
        "[GroupId {group_id}] Static member with instance id {instance_id} re-joins the "
        "consumer group using the {protocol} protocol. Created a new member {member_id} to "
        "replace the existing member {old_member_id}.",
        f"{_GMM_JAVA}.consumerGroupHeartbeat",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_STATIC_MEMBER_REPLACED,
        "3.8",
        "3.9",
        "[GroupId {group_id}] Static member with unknown member id and instance id "
        "{instance_id} re-joins the consumer group. Created a new member {member_id} to "
        "replace the existing member {old_member_id}.",
        f"{_GMM_JAVA}.consumerGroupHeartbeat",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_STATIC_MEMBER_REPLACED,
        "3.7",
        "3.7",
        "[GroupId {group_id}] Static member {member_id} with instance id {instance_id} "
        "re-joins the consumer group.",
        f"{_GMM_JAVA}.consumerGroupHeartbeat",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_STATIC_MEMBER_LEFT_TEMPORARILY,
        "4.0",
        None,
        "[GroupId {group_id}] Static member {member_id} with instance id {instance_id} "
        "temporarily left the consumer group.",
        f"{_GMM_JAVA}.consumerGroupStaticMemberGroupLeave",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_STATIC_MEMBER_LEFT_TEMPORARILY,
        "3.7",
        "3.9",
        "[GroupId {group_id}] Static Member {member_id} with instance id {instance_id} "
        "temporarily left the consumer group.",
        f"{_GMM_JAVA}.consumerGroupStaticMemberGroupLeave",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_STATIC_MEMBER_LEFT,
        "4.0",
        None,
        "[GroupId {group_id}] Static member {member_id} with instance id {instance_id} left "
        "the consumer group.",
        f"{_GMM_JAVA}.consumerGroupLeave",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_STATIC_MEMBER_LEFT,
        "3.7",
        "3.9",
        "[GroupId {group_id}] Static Member {member_id} with instance id {instance_id} left "
        "the consumer group.",
        f"{_GMM_JAVA}.consumerGroupLeave",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_MEMBER_LEFT,
        "3.7",
        None,
        "[GroupId {group_id}] Member {member_id} left the consumer group.",
        f"{_GMM_JAVA}.consumerGroupLeave",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_MEMBER_FENCED,
        "3.7",
        "3.7",
        "[GroupId {group_id}] Member {member_id} fenced from the group because its session "
        "expired.",
        f"{_GMM_JAVA}.scheduleConsumerGroupSessionTimeout",
        variant="session",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_MEMBER_FENCED,
        "3.7",
        "3.7",
        "[GroupId {group_id}] Member {member_id} fenced from the group because it failed to "
        "revoke partitions within {timeout_ms}ms.",
        f"{_GMM_JAVA}.scheduleConsumerGroupRevocationTimeout",
        variant="revocation",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_MEMBER_FENCED,
        "3.8",
        None,
        "[GroupId {group_id}] Member {member_id} fenced from the group because {reason}.",
        f"{_GMM_JAVA}.consumerGroupFenceMemberOperation",
    ),
    LogFormat(
        _J,
        Kind.GROUP_EPOCH_BUMPED,
        "4.1",
        None,
        "[GroupId {group_id}] Bumped group epoch to {epoch} with metadata hash {metadata_hash}.",
        f"{_GMM_JAVA}.consumerGroupHeartbeat",
    ),
    LogFormat(
        _J,
        Kind.GROUP_EPOCH_BUMPED,
        "3.7",
        "4.0",
        "[GroupId {group_id}] Bumped group epoch to {epoch}.",
        f"{_GMM_JAVA}.consumerGroupHeartbeat",
    ),
    LogFormat(
        _J,
        Kind.TARGET_ASSIGNMENT_COMPUTED,
        "3.9",
        None,
        "[GroupId {group_id}] Computed a new target assignment for epoch {epoch} with "
        "'{assignor}' assignor in {assignor_ms}ms.",
        f"{_GMM_JAVA}.updateTargetAssignment",
    ),
    LogFormat(
        _J,
        Kind.TARGET_ASSIGNMENT_COMPUTED,
        "3.8",
        "3.8",
        "[GroupId {group_id}] Computed a new target assignment for epoch {epoch} with "
        "'{assignor}' assignor in {assignor_ms}ms: {assignment}.",
        f"{_GMM_JAVA}.updateTargetAssignment",
    ),
    LogFormat(
        _J,
        Kind.TARGET_ASSIGNMENT_COMPUTED,
        "3.7",
        "3.7",
        "[GroupId {group_id}] Computed a new target assignment for epoch {epoch} with "
        "'{assignor}' assignor: {assignment}.",
        f"{_GMM_JAVA}.updateTargetAssignment",
    ),
    LogFormat(
        _J,
        Kind.MEMBER_ASSIGNMENT_UPDATED,
        "3.8",
        "3.8",
        "[GroupId {group_id}] Member {member_id} new assignment state: epoch={epoch}, "
        "previousEpoch={previous_epoch}, state={state}, assignedPartitions={assigned} and "
        "revokedPartitions={revoked}.",
        f"{_GMM_JAVA}.maybeReconcile",
    ),
    LogFormat(
        _J,
        Kind.MEMBER_ASSIGNMENT_UPDATED,
        "3.9",
        None,
        "[GroupId {group_id}] Member {member_id} new assignment state: epoch={epoch}, "
        "previousEpoch={previous_epoch}, state={state}, assignedPartitions={assigned}.",
        f"{_GMM_JAVA}.maybeReconcile",
    ),
    LogFormat(
        _J,
        Kind.MEMBER_ASSIGNMENT_UPDATED,
        "3.7",
        "3.7",
        "[GroupId {group_id}] Member {member_id} transitioned from {from_summary} to {to_summary}.",
        f"{_GMM_JAVA}.maybeReconcile",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_GROUP_LOADED,
        "3.7",
        None,
        "Loaded consumer group {group_id} with {members} members.",
        f"{_GMM_JAVA}.onLoaded",
    ),
    LogFormat(
        _J,
        Kind.CONSUMER_GROUP_UNLOADED,
        "3.8",
        None,
        "[GroupId={group_id}] Unloaded group metadata for group epoch {epoch}.",
        f"{_GMM_JAVA}.onUnloaded",
    ),
    # -- the Java consumer client ------------------------------------------------------------
    LogFormat(
        _C,
        Kind.CLIENT_JOINING,
        "2.0",
        None,
        "(Re-)joining group",
        f"{_AC}.sendJoinGroupRequest",
    ),
    LogFormat(
        _C,
        Kind.CLIENT_JOINED,
        "2.8",
        None,
        "Successfully joined group with generation {generation_text}",
        f"{_AC}.JoinGroupResponseHandler",
    ),
    LogFormat(
        _C,
        Kind.CLIENT_JOINED,
        "2.0",
        "2.7",
        "Successfully joined group with generation {generation}",
        f"{_AC}.JoinGroupResponseHandler",
    ),
    LogFormat(
        _C,
        Kind.CLIENT_SYNCED,
        "2.8",
        None,
        "Successfully synced group in generation {generation_text}",
        f"{_AC}.SyncGroupResponseHandler",
    ),
    LogFormat(
        _C,
        Kind.CLIENT_REJOIN_REQUESTED,
        "3.0",
        None,
        "Request joining group due to: {reason}",
        f"{_AC}.requestRejoin",
    ),
    LogFormat(
        _C,
        Kind.CLIENT_LEAVING,
        "2.4",
        None,
        "Member {member_id} sending LeaveGroup request to coordinator {coordinator} due to "
        "{reason}",
        f"{_AC}.maybeLeaveGroup",
    ),
    LogFormat(
        _C,
        Kind.CLIENT_POLL_TIMEOUT,
        "3.0",
        None,
        "consumer poll timeout has expired. This means the time between subsequent calls to "
        "poll() was longer than the configured max.poll.interval.ms, which typically implies "
        "that the poll loop is spending too much time processing messages. You can address "
        "this either by increasing max.poll.interval.ms or by reducing the maximum size of "
        "batches returned in poll() with max.poll.records.",
        f"{_AC}.HeartbeatThread.run",
        level="WARN",
    ),
    LogFormat(
        _C,
        Kind.CLIENT_ASSIGNMENT,
        "2.4",
        None,
        "Notifying assignor about the new Assignment(partitions={partitions})",
        f"{_CC}.onJoinComplete",
    ),
)


def _by_family() -> dict[Family, tuple[LogFormat, ...]]:
    grouped: dict[Family, list[LogFormat]] = {family: [] for family in Family}
    for row in FORMATS:
        grouped[row.family].append(row)
    return {family: tuple(rows) for family, rows in grouped.items()}


_ROWS_BY_FAMILY = _by_family()

_SCALA_PREFIX = re.compile(r"\[Group(?:Coordinator|MetadataManager brokerId=) ?-?\d+\]:? ")
_JAVA_PREFIX = "[GroupCoordinator id="
_CLIENT_PREFIX = "[Consumer clientId="


def family_of(text: str) -> Family | None:
    """The family whose prefix ``text`` starts with (``None``: no coordinator line)."""
    if text.startswith(_JAVA_PREFIX):
        return Family.JAVA
    if text.startswith(_CLIENT_PREFIX):
        return Family.CLIENT
    if _SCALA_PREFIX.match(text):
        return Family.SCALA
    return None


@dataclass(frozen=True, slots=True)
class Match:
    """A recognised line: the row that wrote it and its fields."""

    format: LogFormat
    fields: Mapping[str, str | int]


def parse(text: str, family: Family | None = None) -> Match | None:
    """Which row wrote ``text`` (the prefix and message, without the log4j envelope).

    Rows of the family are tried in table order, each only when its longest literal piece
    occurs in ``text``; the first whole-text match wins. ``None`` when no row matches.
    """
    family = family or family_of(text)
    if family is None:
        return None
    for row in _ROWS_BY_FAMILY[family]:
        if row.anchor not in text:
            continue
        fields = row.match(text)
        if fields is not None:
            return Match(row, fields)
    return None


def _candidates(kind: Kind | str, family: Family | str, version: str | None) -> list[LogFormat]:
    rows = [row for row in FORMATS if row.kind == kind and row.family == family]
    if version is not None:
        rows = [row for row in rows if row.holds(version)]
    return rows


def _choose(
    kind: Kind | str, family: Family | str, version: str | None, given: Iterable[str]
) -> LogFormat:
    rows = _candidates(kind, family, version)
    if not rows:
        raise KeyError(f"no format for {kind} in {family}" + (f" {version}" if version else ""))
    names = set(given)
    for row in rows:
        if set(row.fields) == names:
            return row
    wanted = sorted({tuple(sorted(row.fields)) for row in rows})
    raise KeyError(f"{kind} ({family}) takes one of the field sets {wanted}, not {sorted(names)}")


def render(
    kind: Kind | str, family: Family | str, *, version: str | None = None, **fields: object
) -> str:
    """The prefix and message Kafka writes for ``kind`` in ``family``'s wording.

    The row is the newest (or the one ``version`` holds) whose fields are exactly the
    ``fields`` given (prefix fields included: ``broker_id``, ``offsets_partition``, ...);
    so a static and a dynamic member's leave, two rows of one kind, are told apart by
    whether ``instance_id`` is given.
    """
    return _choose(kind, family, version, fields).render(**fields)


def format_timestamp(ts_ms: int) -> str:
    """log4j's default ``%d``: ``2026-12-02 14:03:11,123`` (UTC here; Kafka writes local time)."""
    moment = datetime.fromtimestamp(ts_ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + f",{ts_ms % 1000:03d}"


def render_line(
    kind: Kind | str,
    family: Family | str,
    ts_ms: int,
    *,
    version: str | None = None,
    **fields: object,
) -> str:
    """One whole line of Kafka's ``server.log``: ``[%d] %p %m (%c)`` around ``render``."""
    row = _choose(kind, family, version, fields)
    return f"[{format_timestamp(ts_ms)}] {row.level} {row.render(**fields)} ({row.logger_name})"


def table_rows() -> list[dict[str, str]]:
    """The table as plain rows (family, kind, versions, template, source) for docs and tests."""
    return [
        {
            "family": str(row.family),
            "kind": str(row.kind),
            "versions": row.versions,
            "template": row.full_template,
            "source": row.source,
        }
        for row in FORMATS
    ]
