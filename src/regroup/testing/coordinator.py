"""One group coordinator on a manual clock, with everything it produced kept for the test.

Kafka tests its group coordinator through ``GroupMetadataManagerTestContext``:
a ``MockTime``, a ``MockCoordinatorTimer``, a ``sleep(ms)`` that returns what
the expired timers produced, and replay of every record. This is that context
for ``regroup.coordinator.service.GroupCoordinator``, built only on the
coordinator's façade (``handle``, ``next_deadline``, ``on_timer``, ``replay``,
``on_loaded``, ``update_metadata``) and the request dataclasses of
``regroup.model.requests``::

    ctx = CoordinatorTestContext(topics={"foo": 3})
    response = ctx.consumer_group_heartbeat(
        "g", "A", 0, subscribed_topic_names=["foo"], rebalance_timeout_ms=300000, owned={}
    )
    result = ctx.advance(45000)          # A's session expires: what the timer produced
    ctx.assert_replay_matches()          # the records rebuild the live groups

Theory of operation
-------------------

* **Time** is a ``ManualClock``: it moves only through ``advance``. A request
  is served at the current time. ``advance(ms)`` fires every timer that expires
  within the ``ms``, in deadline order, each at its own deadline (the clock
  stands at that deadline while the timer runs, so a timer armed by an earlier
  one fires too if it falls within the ``ms``), then leaves the clock at the end.
* **Tokens.** The coordinator answers a request by its token, now or later (a
  classic JoinGroup or follower SyncGroup is parked). The context gives every
  request a fresh token unless the test names one, keeps every reply by token
  in ``replies`` (and fails if a token is answered twice), and hands back a
  ``Call`` for the requests that may park.
* **Logs.** Every record (``records``) and event (``events``), whether a
  request, a timer or a metadata change produced it, in order.
* **Replay.** ``replay_into_new`` rebuilds a coordinator from the records (as a
  broker restart does, through their JSON form); ``assert_replay_matches``
  compares it with the live one.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, Generic, Self, TypeVar, overload

from regroup.classic.group.group import ClassicGroup
from regroup.classic.group.group_state import ClassicGroupState
from regroup.consumer.group.group import ConsumerGroup
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.coordinator.group import Group
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.service import GroupCoordinator
from regroup.events import Event
from regroup.model import TopicPartition
from regroup.model.metadata import MetadataImage, TopicImage
from regroup.model.requests.classic import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from regroup.model.requests.consumer import (
    ClientAssignor,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from regroup.model.uuid import Uuid
from regroup.records import CoordinatorRecord
from regroup.testing.clock import ManualClock

__all__ = [
    "Call",
    "ConfigLike",
    "CoordinatorTestContext",
    "NotAnsweredError",
    "ReplayMismatchError",
    "TopicsLike",
]

R = TypeVar("R")
E = TypeVar("E", bound=Event)

#: A broker configuration: Kafka's names (``{"group.max.size": 2}``) or the dataclass.
ConfigLike = GroupCoordinatorConfig | Mapping[str, Any] | None
#: Topics: name -> partition count (ids derived from the names), or a whole image.
TopicsLike = Mapping[str, int] | MetadataImage | None


class NotAnsweredError(AssertionError):
    """A request the test expected an answer to has none (it is parked, or was never sent)."""


class ReplayMismatchError(AssertionError):
    """A coordinator rebuilt from the records differs from the live one."""


class Call(Generic[R]):
    """A request sent through a context, and its response once the coordinator answered.

    The classic protocol parks requests (a JoinGroup until the join phase
    completes, a follower's SyncGroup until the leader's), so a response may
    come with a later request or timer. ``answered`` says whether it came;
    ``response`` returns it, typed, and fails the test if it has not.
    """

    __slots__ = ("_context", "_kind", "request", "token")

    def __init__(
        self, context: CoordinatorTestContext, token: Hashable, request: object, kind: type[R]
    ) -> None:
        self._context = context
        self._kind = kind
        #: The request as sent.
        self.request = request
        #: The token the coordinator answers it by.
        self.token = token

    def __repr__(self) -> str:
        state = "answered" if self.answered else "parked"
        return f"Call({type(self.request).__name__}, token={self.token!r}, {state})"

    @property
    def answered(self) -> bool:
        """Whether the coordinator has answered this request (now or since)."""
        return self.token in self._context.replies

    @property
    def response(self) -> R:
        """The response; ``NotAnsweredError`` while the request is parked."""
        if not self.answered:
            raise NotAnsweredError(
                f"{type(self.request).__name__} {self.token!r} is not answered (parked)"
            )
        response = self._context.replies[self.token]
        if not isinstance(response, self._kind):
            raise AssertionError(
                f"{type(self.request).__name__} {self.token!r} was answered with "
                f"{type(response).__name__}, not {self._kind.__name__}"
            )
        return response


class CoordinatorTestContext:
    """One ``GroupCoordinator``, a manual clock, and logs of what it produced.

    ``config``: a ``GroupCoordinatorConfig`` or Kafka's broker config names
    (``{"group.consumer.heartbeat.interval.ms": 5000}``). ``topics``: the
    metadata image, as partition counts by name (topic ids derived from the
    names with ``Uuid.for_name``, as the rest of regroup derives them) or an
    image. ``rng`` (default ``random.Random(0)``) is the coordinator's injected
    randomness (classic member ids), so equal tests give equal ids.
    """

    def __init__(
        self,
        config: ConfigLike = None,
        *,
        topics: TopicsLike = None,
        rng: random.Random | None = None,
        clock: ManualClock | None = None,
    ) -> None:
        #: The clock every request and timer of this context is served at.
        self.clock = clock if clock is not None else ManualClock()
        #: The coordinator under test (its façade only; its insides are its own).
        self.coordinator = GroupCoordinator(
            _coordinator_config(config),
            metadata=_metadata_image(topics),
            rng=rng if rng is not None else random.Random(0),
        )
        #: Every record written, in order (requests, timers, metadata changes, replays).
        self.records: list[CoordinatorRecord] = []
        #: Every event published, in order.
        self.events: list[Event] = []
        #: Every reply by the token of the request it answers.
        self.replies: dict[Hashable, object] = {}
        #: The result of the last request sent (``call`` and the request methods return
        #: only the response; this holds the records and events it caused).
        self.last_result = CoordinatorResult()
        self._tokens = itertools.count(1)

    # -- what the test reads ---------------------------------------------------------------

    @property
    def now_ms(self) -> int:
        """The current time (ms)."""
        return self.clock.now_ms

    @property
    def config(self) -> GroupCoordinatorConfig:
        return self.coordinator.config

    @property
    def metadata(self) -> MetadataImage:
        """The coordinator's current topic metadata image."""
        return self.coordinator.metadata

    @property
    def groups(self) -> dict[str, Group]:
        """Every live group by id (the coordinator's own map)."""
        return self.coordinator.groups

    def group(self, group_id: str) -> Group:
        """The group ``group_id``, which must exist."""
        return self._existing_group(group_id)

    def classic_group(self, group_id: str) -> ClassicGroup:
        """The group ``group_id``, which must be a classic group."""
        group = self._existing_group(group_id)
        if not isinstance(group, ClassicGroup):
            raise AssertionError(f"group {group_id!r} is a {group.group_type} group")
        return group

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        """The group ``group_id``, which must be a KIP-848 consumer group."""
        group = self._existing_group(group_id)
        if not isinstance(group, ConsumerGroup):
            raise AssertionError(f"group {group_id!r} is a {group.group_type} group")
        return group

    def _existing_group(self, group_id: str) -> Group:
        group = self.coordinator.groups.get(group_id)
        if group is None:
            raise AssertionError(f"no group {group_id!r}")
        return group

    def topic_id(self, name: str) -> Uuid:
        """The id of topic ``name`` in the current image (derived from the name if absent)."""
        topic = self.coordinator.metadata.topic(name)
        return topic.topic_id if topic is not None else Uuid.for_name(name)

    @overload
    def events_of(self, kind: type[E]) -> list[E]: ...

    @overload
    def events_of(self, kind: str) -> list[Event]: ...

    def events_of(self, kind: type[E] | str) -> list[E] | list[Event]:
        """The events of one kind, named by class (``MemberLeft``) or name (``"member_left"``)."""
        if isinstance(kind, str):
            return [e for e in self.events if e.kind == kind]
        return [e for e in self.events if isinstance(e, kind)]

    def reply(self, token: Hashable) -> object | None:
        """The reply to ``token``, or ``None`` while there is none."""
        return self.replies.get(token)

    def next_token(self) -> str:
        """A token no request of this context has used (``"t1"``, ``"t2"`` ...)."""
        return f"t{next(self._tokens)}"

    # -- driving ---------------------------------------------------------------------------

    def absorb(self, result: CoordinatorResult) -> CoordinatorResult:
        """Log a result: its records, events and replies. Returns it.

        ``send``, ``advance`` and the metadata methods call this; a test calls it
        for a result it got from the coordinator some other way.
        """
        self.records.extend(result.records)
        self.events.extend(result.events)
        for reply in result.replies:
            if reply.token in self.replies:
                raise AssertionError(f"token {reply.token!r} answered twice")
            self.replies[reply.token] = reply.response
        return result

    def send(self, request: object, *, token: Hashable | None = None) -> CoordinatorResult:
        """Serve ``request`` at the current time; returns (and logs) the coordinator's result.

        The result holds the replies this request caused, which may answer earlier
        parked requests and not (yet) this one.
        """
        if token is None:
            token = self.next_token()
        self.last_result = self.absorb(self.coordinator.handle(token, request, self.now_ms))
        return self.last_result

    @overload
    def submit(self, request: object) -> Call[object]: ...

    @overload
    def submit(self, request: object, kind: type[R]) -> Call[R]: ...

    def submit(self, request: object, kind: type[Any] = object) -> Call[Any]:
        """Send ``request`` and return its ``Call`` (answered now, or later if parked)."""
        token = self.next_token()
        self.send(request, token=token)
        return Call(self, token, request, kind)

    @overload
    def call(self, request: object) -> object: ...

    @overload
    def call(self, request: object, kind: type[R]) -> R: ...

    def call(self, request: object, kind: type[Any] = object) -> Any:
        """Send ``request`` and return its response, which must come at once."""
        return self.submit(request, kind).response

    def next_deadline(self) -> int | None:
        """The coordinator's earliest timer deadline (``None``: no timer armed)."""
        return self.coordinator.next_deadline()

    def advance(self, ms: int) -> CoordinatorResult:
        """Move the clock ``ms`` forward, firing every timer that expires meanwhile.

        Timers fire in deadline order, each at its own deadline (the clock stands
        there while it runs), so a timer that an earlier one arms fires too if its
        deadline is within the ``ms``. A timer already due fires at the current
        time; ``advance(0)`` fires just those. Returns exactly what the fired
        timers produced, merged in firing order (also logged).
        """
        if ms < 0:
            raise ValueError(f"time does not go backwards (advance by {ms} ms)")
        end = self.clock.now_ms + ms
        fired = CoordinatorResult()
        while True:
            deadline = self.coordinator.next_deadline()
            if deadline is None or deadline > end:
                break
            if deadline > self.clock.now_ms:
                self.clock.advance_to(deadline)
            fired.extend(self.absorb(self.coordinator.on_timer(self.clock.now_ms)))
        self.clock.advance_to(end)
        return fired

    def run_until_answered(
        self, *calls: Call[Any] | Hashable, max_ms: int = 3_600_000
    ) -> CoordinatorResult:
        """Fire timers, one deadline at a time, until every call (or token) is answered.

        For parked classic requests: the initial rebalance delay, a join phase
        waiting for its rebalance timeout. ``NotAnsweredError`` when no timer is
        left, or the next one is more than ``max_ms`` away from the start.
        """
        tokens = [c.token if isinstance(c, Call) else c for c in calls]
        limit = self.now_ms + max_ms
        fired = CoordinatorResult()
        while not all(t in self.replies for t in tokens):
            deadline = self.coordinator.next_deadline()
            if deadline is None or deadline > limit:
                missing = [t for t in tokens if t not in self.replies]
                raise NotAnsweredError(f"never answered within {max_ms} ms: {missing}")
            fired.extend(self.advance(max(deadline - self.now_ms, 0)))
        return fired

    # -- the classic protocol's requests ------------------------------------------------------

    def join_group(
        self,
        group_id: str,
        member_id: str = "",
        *,
        protocols: Iterable[tuple[str, bytes] | JoinGroupRequestProtocol],
        protocol_type: str = "consumer",
        session_timeout_ms: int = 45000,
        rebalance_timeout_ms: int = 300000,
        group_instance_id: str | None = None,
        reason: str | None = None,
        client_id: str = "",
        client_host: str = "",
        require_known_member_id: bool = True,
        supports_skip_assignment: bool = True,
    ) -> Call[JoinGroupResponse]:
        """JoinGroup (Kafka's consumer defaults); answered at once or parked until the join
        phase completes. ``protocols``: (assignor name, Subscription bytes) pairs."""
        request = JoinGroupRequest(
            group_id=group_id,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            member_id=member_id,
            protocol_type=protocol_type,
            protocols=tuple(
                p if isinstance(p, JoinGroupRequestProtocol) else JoinGroupRequestProtocol(*p)
                for p in protocols
            ),
            group_instance_id=group_instance_id,
            reason=reason,
            client_id=client_id,
            client_host=client_host,
            require_known_member_id=require_known_member_id,
            supports_skip_assignment=supports_skip_assignment,
        )
        return self.submit(request, JoinGroupResponse)

    def sync_group(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        *,
        assignments: Mapping[str, bytes] | None = None,
        group_instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> Call[SyncGroupResponse]:
        """SyncGroup; the leader sends ``assignments`` (member id -> Assignment bytes)."""
        request = SyncGroupRequest(
            group_id=group_id,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=tuple(
                SyncGroupRequestAssignment(m, a) for m, a in (assignments or {}).items()
            ),
        )
        return self.submit(request, SyncGroupResponse)

    def heartbeat(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        *,
        group_instance_id: str | None = None,
    ) -> HeartbeatResponse:
        """A classic Heartbeat; its response comes at once."""
        return self.call(
            HeartbeatRequest(group_id, generation_id, member_id, group_instance_id),
            HeartbeatResponse,
        )

    def leave_group(self, group_id: str, *members: str | MemberIdentity) -> LeaveGroupResponse:
        """LeaveGroup for members given by id or as ``MemberIdentity`` (static ones)."""
        identities = tuple(
            m if isinstance(m, MemberIdentity) else MemberIdentity(m) for m in members
        )
        return self.call(LeaveGroupRequest(group_id, identities), LeaveGroupResponse)

    # -- offsets ------------------------------------------------------------------------------

    def offset_commit(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int] | Mapping[tuple[str, int], int],
        *,
        member_id: str = "",
        generation_id_or_member_epoch: int = -1,
        group_instance_id: str | None = None,
        committed_leader_epoch: int = -1,
        committed_metadata: str | None = None,
        supports_member_epoch: bool = True,
    ) -> OffsetCommitResponse:
        """OffsetCommit of ``offsets`` (by ``TopicPartition`` or ``(topic, partition)``);
        the defaults commit from outside any group (generation -1, no member)."""
        topics: dict[str, list[OffsetCommitRequestPartition]] = {}
        for key, offset in offsets.items():
            topic, partition = key
            topics.setdefault(topic, []).append(
                OffsetCommitRequestPartition(
                    partition,
                    offset,
                    committed_leader_epoch=committed_leader_epoch,
                    committed_metadata=committed_metadata,
                )
            )
        request = OffsetCommitRequest(
            group_id=group_id,
            generation_id_or_member_epoch=generation_id_or_member_epoch,
            member_id=member_id,
            topics=tuple(OffsetCommitRequestTopic(t, tuple(ps)) for t, ps in topics.items()),
            group_instance_id=group_instance_id,
            supports_member_epoch=supports_member_epoch,
        )
        return self.call(request, OffsetCommitResponse)

    def offset_fetch(
        self,
        group_id: str,
        topics: Mapping[str, Iterable[int]] | None = None,
        *,
        member_id: str | None = None,
        member_epoch: int = -1,
        require_stable: bool = False,
    ) -> OffsetFetchResponse:
        """OffsetFetch of ``topics`` (name -> partitions; ``None``: every committed one)."""
        request = OffsetFetchRequest(
            group_id,
            None
            if topics is None
            else tuple(OffsetFetchRequestTopic(t, tuple(ps)) for t, ps in topics.items()),
            member_id=member_id,
            member_epoch=member_epoch,
            require_stable=require_stable,
        )
        return self.call(request, OffsetFetchResponse)

    # -- the KIP-848 protocol's requests ----------------------------------------------------

    def consumer_group_heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        *,
        owned: Mapping[str, Iterable[int]] | None = None,
        subscribed_topic_names: Iterable[str] | None = None,
        subscribed_topic_regex: str | None = None,
        rebalance_timeout_ms: int = -1,
        instance_id: str | None = None,
        rack_id: str | None = None,
        server_assignor: str | None = None,
        client_assignors: Sequence[ClientAssignor] | None = None,
        client_id: str = "",
        client_host: str = "",
        client_generates_member_id: bool = True,
    ) -> ConsumerGroupHeartbeatResponse:
        """A ConsumerGroupHeartbeat; its response comes at once.

        ``owned``: the partitions the member owns, by topic *name* (converted to
        the topic ids of the current image); ``{}`` reports owning nothing,
        ``None`` leaves the field out (KIP-848: "unchanged"). The other fields are
        the request's, ``None`` / ``-1`` meaning "unchanged" as on the wire; a
        first heartbeat (epoch 0) must carry the subscription and the rebalance
        timeout.
        """
        request = ConsumerGroupHeartbeatRequest(
            group_id=group_id,
            member_id=member_id,
            member_epoch=member_epoch,
            instance_id=instance_id,
            rack_id=rack_id,
            rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=None
            if subscribed_topic_names is None
            else tuple(subscribed_topic_names),
            subscribed_topic_regex=subscribed_topic_regex,
            server_assignor=server_assignor,
            client_assignors=None if client_assignors is None else tuple(client_assignors),
            topic_partitions=None if owned is None else self.topic_partitions(owned),
            client_id=client_id,
            client_host=client_host,
            client_generates_member_id=client_generates_member_id,
        )
        return self.call(request, ConsumerGroupHeartbeatResponse)

    def topic_partitions(self, owned: Mapping[str, Iterable[int]]) -> tuple[TopicPartitions, ...]:
        """Partitions by topic name as the KIP-848 wire carries them (by topic id)."""
        return tuple(
            TopicPartitions(self.topic_id(name), tuple(partitions))
            for name, partitions in owned.items()
        )

    # -- topic metadata ---------------------------------------------------------------------

    def update_metadata(self, image: MetadataImage) -> CoordinatorResult:
        """Hand the coordinator a new metadata image now; returns (and logs) its result."""
        return self.absorb(self.coordinator.update_metadata(image, self.now_ms))

    def set_topics(self, topics: Mapping[str, int]) -> CoordinatorResult:
        """Create topics or change their partition counts (existing ids are kept)."""
        image = self.coordinator.metadata
        for name, partitions in topics.items():
            existing = image.topic(name)
            topic_id = existing.topic_id if existing is not None else Uuid.for_name(name)
            image = image.with_topic(TopicImage(topic_id, name, partitions))
        return self.update_metadata(image)

    def delete_topics(self, *names: str) -> CoordinatorResult:
        """Delete topics from the image."""
        image = self.coordinator.metadata
        for name in names:
            image = image.without_topic(name)
        return self.update_metadata(image)

    # -- records and replay -------------------------------------------------------------------

    def replay(self, records: Iterable[CoordinatorRecord], *, through_json: bool = True) -> None:
        """Apply ``records`` to this coordinator (as a broker loading its log) and log them.

        ``through_json``: replay each record's copy read back from its JSON text
        form, as the durable store does, so a field lost in the text form shows.
        Timers are not records: call ``on_loaded`` afterwards, as Kafka does.
        """
        for record in records:
            copy = CoordinatorRecord.from_json(record.to_json()) if through_json else record
            self.coordinator.replay(copy)
            self.records.append(copy)

    def on_loaded(self) -> CoordinatorResult:
        """The coordinator's ``on_loaded`` now (arms the timers of the replayed groups)."""
        return self.absorb(self.coordinator.on_loaded(self.now_ms))

    def replay_into_new(
        self,
        *,
        config: ConfigLike = None,
        rng: random.Random | None = None,
        through_json: bool = True,
    ) -> Self:
        """A new context whose coordinator is rebuilt from this one's records.

        Same configuration (unless ``config`` is given) and metadata image, a
        clock at the same time, the records replayed (and in its ``records``,
        as a restarted broker's log holds them); no timers until ``on_loaded``.
        The context is of this one's class, so a subclass keeps its helpers.
        """
        fresh = type(self)(
            config if config is not None else self.coordinator.config,
            topics=self.coordinator.metadata,
            rng=rng,
            clock=ManualClock(self.now_ms),
        )
        fresh.replay(self.records, through_json=through_json)
        return fresh

    def assert_replay_matches(self, *group_ids: str) -> Self:
        """Rebuild a coordinator from the records and check it against the live one.

        For each group (``group_ids``, or every group either side has): a KIP-848
        group must equal the live one exactly; a classic group must match it on
        everything its GroupMetadata record holds whenever the live group is
        Stable or Empty (in the middle of a rebalance its newest state is not
        persisted yet, as in Kafka); a group absent from one side must be absent
        from the other. The committed offsets (OffsetFetch of all) must be equal.
        Raises ``ReplayMismatchError``; returns the rebuilt context.
        """
        fresh = self.replay_into_new()
        self.assert_same_state(fresh, *group_ids)
        return fresh

    def assert_same_state(self, other: CoordinatorTestContext, *group_ids: str) -> None:
        """Check that ``other``'s coordinator holds what this one holds.

        The comparison of ``assert_replay_matches`` (this context is the live side,
        ``other`` the rebuilt one), for any two contexts: e.g. one rebuilt from what a
        store kept after a crash against one rebuilt from the records it acknowledged.
        Raises ``ReplayMismatchError``.
        """
        live_groups, rebuilt_groups = self.coordinator.groups, other.coordinator.groups
        ids = group_ids or tuple(sorted(live_groups.keys() | rebuilt_groups.keys()))
        for group_id in ids:
            live, rebuilt = live_groups.get(group_id), rebuilt_groups.get(group_id)
            problem = _group_mismatch(live, rebuilt)
            if problem is not None:
                raise ReplayMismatchError(f"group {group_id!r}: {problem}")
            live_offsets = self._fetch_all(group_id)
            rebuilt_offsets = other._fetch_all(group_id)
            if live_offsets != rebuilt_offsets:
                raise ReplayMismatchError(
                    f"group {group_id!r}: offsets {live_offsets!r} live, "
                    f"{rebuilt_offsets!r} replayed"
                )

    def _fetch_all(self, group_id: str) -> object:
        """Every committed offset of the group, read without logging anything."""
        request = OffsetFetchRequest(group_id, None)
        result = self.coordinator.handle("replay-check", request, self.now_ms)
        return result.response_for("replay-check")


# -- helpers ------------------------------------------------------------------------------------


def _coordinator_config(config: ConfigLike) -> GroupCoordinatorConfig:
    if config is None:
        return GroupCoordinatorConfig()
    if isinstance(config, GroupCoordinatorConfig):
        return config
    return GroupCoordinatorConfig.from_properties(config)


def _metadata_image(topics: TopicsLike) -> MetadataImage:
    if topics is None:
        return MetadataImage()
    if isinstance(topics, MetadataImage):
        return topics
    return MetadataImage.from_partition_counts(topics)


#: The classic group states whose whole persisted part is in the records.
_PERSISTED_STATES = (ClassicGroupState.STABLE, ClassicGroupState.EMPTY)


def _classic_persisted(group: ClassicGroup) -> tuple[object, ...]:
    """What a classic group's GroupMetadata record holds, plus the state it implies."""
    return (
        group.state,
        group.protocol_type,
        group.generation_id,
        group.protocol_name,
        group.leader_id,
        group.current_state_timestamp_ms,
        tuple(
            (
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.supported_protocols,
                m.assignment,
            )
            for m in group.members.values()
        ),
        dict(group.static_members),
    )


def _group_mismatch(live: Group | None, rebuilt: Group | None) -> str | None:
    """Why the rebuilt group does not match the live one, or ``None``."""
    if live is None or rebuilt is None:
        if live is rebuilt:
            return None
        side = "live only" if rebuilt is None else "replayed only"
        return f"exists {side}"
    if type(live) is not type(rebuilt):
        return f"{type(live).__name__} live, {type(rebuilt).__name__} replayed"
    if isinstance(live, ClassicGroup) and isinstance(rebuilt, ClassicGroup):
        if live.state not in _PERSISTED_STATES:
            return None
        expected, got = _classic_persisted(live), _classic_persisted(rebuilt)
        return None if expected == got else f"{expected!r} live, {got!r} replayed"
    return None if live == rebuilt else f"{live!r} live, {rebuilt!r} replayed"
