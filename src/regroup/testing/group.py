"""A consumer group in one process: real members paired with a real coordinator.

h11 tests two ``Connection`` objects joined by an in-memory network
(``ConnectionPair``); this is that idea for a group. One
``CoordinatorTestContext`` and N members -- ``ClassicMember`` (the classic
protocol, eager or cooperative as the assignors decide) or ``ConsumerMember``
(KIP-848) -- on the context's manual clock, with a network of zero latency::

    group = InProcessGroup(topics={"orders": 4})
    group.add_member("a", {"partition.assignment.strategy": "cooperative-sticky"})
    group.add_member("b", {"partition.assignment.strategy": "cooperative-sticky"})
    group.run_until_stable(max_ms=60_000)
    assert group.is_balanced()

Theory of operation
-------------------

A member is sans-IO: ``poll(now)`` returns the requests it wants sent,
``on_response(request, response, now)`` takes an answer, ``next_deadline()``
says when ``poll`` has something to do. The group plays the rest of a client
and the network:

* **Delivery.** Every request a member's ``poll`` returns goes to the
  coordinator at once (one token per request); every reply the coordinator
  produces -- for this request, for a parked one (classic JoinGroup and
  SyncGroup), or from a timer -- goes back at once to the member that sent
  the request, if that member is still running (a crashed or removed member's
  replies are dropped; a paused one gets them when it resumes).
* **One instant.** At a given time the group polls every running member in
  name order (calling ``on_application_poll`` first unless its application is
  stalled, as a consumer application looping on ``poll()`` does), delivering
  as it goes, and repeats while anything was sent or a member is still due;
  then fires the coordinator's timers due by now, and polls again; until
  nothing is left to do at this instant.
* **Time** moves only in ``advance`` / ``run_until_stable`` / ``run_until``:
  to the earliest of the coordinator's next deadline and the members' next
  deadlines, where the context fires the coordinator's timers (each at its
  own deadline) before the members are polled, and so on.
* **Invariants**, checked after every member's turn and after every reply
  handed to another member: no partition is owned by two running members;
  under EAGER a member owns nothing while it rebalances (KIP-429); a KIP-848
  member's epoch only grows (or drops to 0 or below when it rejoins or
  leaves). A broken one raises ``InvariantViolation``; a test adds its own
  with ``add_invariant``.

Listener exceptions and fatal errors that a member's ``poll`` raises are the
application's to see: they are kept in ``errors`` (once each), not raised.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple, overload

from regroup.assignors.classic.api import ConsumerPartitionAssignor, RebalanceProtocol
from regroup.assignors.consumer.client_side import PartitionAssignor
from regroup.classic.member.config import ClassicMemberConfig
from regroup.classic.member.member import ClassicMember
from regroup.classic.member.state import MemberState as ClassicState
from regroup.consumer.member.config import ConsumerMemberConfig
from regroup.consumer.member.member import ConsumerMember
from regroup.consumer.member.state import MemberState as ConsumerState
from regroup.coordinator.result import CoordinatorResult
from regroup.events import Event
from regroup.members.driving import Member as DrivenMember
from regroup.members.driving import MemberRequest
from regroup.model import TopicPartition
from regroup.model.listener import ConsumerRebalanceListener
from regroup.testing.coordinator import ConfigLike, CoordinatorTestContext, TopicsLike
from regroup.testing.listener import RecordingListener

__all__ = [
    "GroupNotStableError",
    "InProcessGroup",
    "InvariantViolation",
    "LivelockError",
    "Member",
    "SentRequest",
]

#: A member of an in-process group: the classic protocol's or KIP-848's. The group drives
#: both through their common API (``regroup.members.driving.Member``, ``DrivenMember``
#: here); a test narrows to the class for what only one protocol has.
Member = ClassicMember | ConsumerMember

#: How many rounds one instant may take before the group is declared stuck.
_MAX_ROUNDS_PER_INSTANT: Final = 1000


class InvariantViolation(AssertionError):
    """A group invariant broke (two owners of a partition, an eager member owning while
    rebalancing, an epoch going back, or one the test added)."""


class LivelockError(AssertionError):
    """The members and the coordinator keep acting at one instant without end."""


class GroupNotStableError(AssertionError):
    """``run_until_stable`` ran out of time (or of things to do) before the group settled."""


class SentRequest(NamedTuple):
    """One request a member sent: when, by whom, what."""

    now_ms: int
    member: str
    request: object


class InProcessGroup:
    """N members and one coordinator on a manual clock, in process (see the module docstring).

    ``topics``, ``config`` (broker configs) and ``rng`` build the group's
    ``CoordinatorTestContext``, or ``context`` is an existing one.
    ``group_protocol`` (``classic`` or ``consumer``) is the default of
    ``add_member``. ``rng`` also seeds each KIP-848 member's own generator (its
    member id), so equal tests give equal ids.
    """

    def __init__(
        self,
        topics: TopicsLike = None,
        *,
        group_id: str = "g",
        group_protocol: str = "classic",
        config: ConfigLike = None,
        context: CoordinatorTestContext | None = None,
        rng: random.Random | None = None,
        check_invariants: bool = True,
    ) -> None:
        if context is None:
            context = CoordinatorTestContext(config, topics=topics, rng=rng)
        elif topics is not None or config is not None:
            raise ValueError("give either a context or the topics and config to build one")
        if group_protocol not in ("classic", "consumer"):
            raise ValueError(f"group.protocol must be classic or consumer, not {group_protocol!r}")
        #: The coordinator side: its records, events, clock and replay checks.
        self.context = context
        self.group_id = group_id
        self.group_protocol = group_protocol
        #: Every event seen through the group, the coordinator's and the members', in order.
        self.events: list[Event] = []
        #: The members' events by member name, in order.
        self.member_events: list[tuple[str, Event]] = []
        #: What the members' ``poll`` raised (listener errors, fatal errors), once each.
        self.errors: list[tuple[str, Exception]] = []
        #: Every request a member sent.
        self.sent: list[SentRequest] = []
        self._rng = rng if rng is not None else random.Random(0)
        self._check = check_invariants
        self._members: dict[str, Member] = {}
        self._listeners: dict[str, ConsumerRebalanceListener] = {}
        self._closing: set[str] = set()
        self._paused: set[str] = set()
        self._stalled: set[str] = set()
        self._held: dict[str, list[tuple[MemberRequest, object]]] = {}
        self._in_flight: dict[Hashable, tuple[str, DrivenMember, MemberRequest]] = {}
        self._last_epoch: dict[str, int] = {}
        self._invariants: list[Callable[[InProcessGroup], None]] = []
        self._turn: str | None = None

    # -- what the test reads ---------------------------------------------------------------

    @property
    def now_ms(self) -> int:
        return self.context.now_ms

    @property
    def members(self) -> Mapping[str, Member]:
        """The running members by name (paused ones too; crashed and removed ones not)."""
        return self._members

    def member(self, name: str) -> Member:
        return self._members[name]

    def classic_member(self, name: str) -> ClassicMember:
        """The member ``name``, which must be a classic one."""
        member = self._members[name]
        if not isinstance(member, ClassicMember):
            raise AssertionError(f"{name} is a KIP-848 member")
        return member

    def consumer_member(self, name: str) -> ConsumerMember:
        """The member ``name``, which must be a KIP-848 one."""
        member = self._members[name]
        if not isinstance(member, ConsumerMember):
            raise AssertionError(f"{name} is a classic member")
        return member

    def listener(self, name: str) -> ConsumerRebalanceListener:
        """The listener of member ``name`` (a ``RecordingListener`` unless the test gave one)."""
        return self._listeners[name]

    def assignment(self, name: str) -> frozenset[TopicPartition]:
        """The partitions member ``name`` owns now."""
        return self._members[name].assignment

    def assignments(self) -> dict[str, frozenset[TopicPartition]]:
        """What every running member owns now, by name."""
        return {name: member.assignment for name, member in self._members.items()}

    def owners(self) -> dict[TopicPartition, list[str]]:
        """Every owned partition and the running members that own it (more than one: a bug)."""
        owners: dict[TopicPartition, list[str]] = {}
        for name in sorted(self._members):
            for tp in self._members[name].assignment:
                owners.setdefault(tp, []).append(name)
        return owners

    def errors_of(self, name: str) -> list[Exception]:
        """What member ``name``'s ``poll`` raised, in order."""
        return [error for who, error in self.errors if who == name]

    def member_events_of(self, name: str, kind: type[Any] | None = None) -> list[Any]:
        """Member ``name``'s events, optionally of one event class."""
        return [
            e
            for who, e in self.member_events
            if who == name and (kind is None or isinstance(e, kind))
        ]

    def subscribed_partitions(self) -> set[TopicPartition]:
        """Every partition of the topics the running members subscribe to by name."""
        topics: set[str] = set()
        for member in self._members.values():
            topics.update(member.subscription or ())
        image = self.context.metadata
        partitions: set[TopicPartition] = set()
        for name in topics:
            topic = image.topic(name)
            if topic is not None:
                partitions.update(TopicPartition(name, p) for p in range(topic.partitions))
        return partitions

    def is_stable(self) -> bool:
        """The group has settled: the coordinator's group is Stable, every member is STABLE
        with no rejoin pending, and each subscribed partition has exactly one owner.

        A group with no members is stable. Topics a member subscribes to by pattern
        are not counted in "each subscribed partition" (the coordinator resolves them).
        """
        if not self._members:
            return True
        group = self.context.groups.get(self.group_id)
        if group is None or group.state_name() != "Stable":
            return False
        for member in self._members.values():
            if isinstance(member, ClassicMember):
                if member.state is not ClassicState.STABLE or member.rejoin_pending:
                    return False
            elif member.state is not ConsumerState.STABLE:
                return False
        owners = self.owners()
        if any(len(names) > 1 for names in owners.values()):
            return False
        return self.subscribed_partitions() <= owners.keys()

    def is_balanced(self) -> bool:
        """Every running member owns as many partitions as any other, give or take one."""
        sizes = [len(member.assignment) for member in self._members.values()]
        return not sizes or max(sizes) - min(sizes) <= 1

    # -- membership --------------------------------------------------------------------------

    @overload
    def add_member(
        self,
        name: str,
        config: ClassicMemberConfig,
        *,
        topics: Iterable[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
        assignors: Sequence[ConsumerPartitionAssignor] | None = None,
    ) -> ClassicMember: ...

    @overload
    def add_member(
        self,
        name: str,
        config: ConsumerMemberConfig,
        *,
        topics: Iterable[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
        client_assignors: Sequence[PartitionAssignor] = (),
        rng: random.Random | None = None,
    ) -> ConsumerMember: ...

    @overload
    def add_member(
        self,
        name: str,
        config: Mapping[str, Any] | None = None,
        *,
        topics: Iterable[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
        assignors: Sequence[ConsumerPartitionAssignor] | None = None,
        client_assignors: Sequence[PartitionAssignor] = (),
        rng: random.Random | None = None,
    ) -> Member: ...

    def add_member(
        self,
        name: str,
        config: Mapping[str, Any] | ClassicMemberConfig | ConsumerMemberConfig | None = None,
        *,
        topics: Iterable[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
        assignors: Sequence[ConsumerPartitionAssignor] | None = None,
        client_assignors: Sequence[PartitionAssignor] = (),
        rng: random.Random | None = None,
    ) -> Member:
        """Start a member called ``name`` and subscribe it; it joins at the next instant run.

        ``config``: a member config object, or Kafka's consumer config names
        (``{"partition.assignment.strategy": "range", "session.timeout.ms": 10000}``;
        ``group.protocol`` picks the member, by default the group's; ``group.id``
        defaults to the group's and ``client.id`` to ``name``). ``topics``: the
        subscription (default: every topic of the image; empty: subscribe later,
        e.g. by pattern). ``listener``: the application's rebalance listener
        (default: a ``RecordingListener``). ``assignors``: a classic member's
        assignor objects, instead of the names of ``partition.assignment.strategy``
        (a user's own ``ConsumerPartitionAssignor``). ``client_assignors``: a KIP-848
        member's client-side assignors (a server-side one is named by
        ``group.remote.assignor``). ``rng``: a KIP-848 member's generator (its id).
        """
        if name in self._members:
            raise ValueError(f"a member called {name!r} is already running")
        member_config = self._member_config(name, config)
        recorder: ConsumerRebalanceListener = (
            listener if listener is not None else RecordingListener()
        )
        now = self.now_ms
        image = self.context.metadata
        wanted = sorted(image.topics_by_name) if topics is None else list(topics)
        member: Member
        if isinstance(member_config, ClassicMemberConfig):
            if client_assignors:
                raise ValueError(
                    "client_assignors are KIP-848 assignors; a classic member takes assignors"
                )
            member = ClassicMember(
                member_config, listener=recorder, assignors=assignors, metadata=image, now_ms=now
            )
            if wanted:
                member.subscribe(wanted)
        else:
            if assignors is not None:
                raise ValueError(
                    "assignors are classic assignors; a KIP-848 member takes client_assignors"
                )
            member = ConsumerMember(
                member_config,
                rng=rng if rng is not None else random.Random(self._rng.getrandbits(64)),
                listener=recorder,
                client_assignors=client_assignors,
                metadata=image,
            )
            member.on_application_poll(now)
            if wanted:
                member.subscribe(wanted)
        self._members[name] = member
        self._listeners[name] = recorder
        self._last_epoch.pop(name, None)
        self._take_events(name, member)
        return member

    def remove_member(self, name: str) -> None:
        """Close member ``name`` cleanly, as Kafka's ``close()``.

        A classic member revokes and sends its LeaveGroup (a static one sends
        none) and is gone at once. A KIP-848 member revokes and leaves through its
        next heartbeats, so it keeps running until it has left (UNSUBSCRIBED),
        within the next instants the group runs.
        """
        member = self._members[name]
        if isinstance(member, ClassicMember):
            requests = member.close(self.now_ms)
            self._take_events(name, member)
            del self._members[name]
            self._forget(name)
            for request in requests:
                self._send(name, member, request)
            return
        member.close(self.now_ms)
        self._take_events(name, member)
        self._closing.add(name)

    def crash(self, name: str) -> None:
        """The process of member ``name`` dies: nothing more is sent, its replies are dropped."""
        del self._members[name]
        self._forget(name)

    def pause(self, name: str) -> None:
        """Freeze member ``name``'s process (a long GC pause, a partitioned host): it is not
        polled and replies to it wait, until ``resume``."""
        if name not in self._members:
            raise KeyError(name)
        self._paused.add(name)

    def resume(self, name: str) -> None:
        """Let a paused member run again; the replies it missed are handed over first."""
        self._paused.discard(name)
        member = self._members.get(name)
        for request, response in self._held.pop(name, []):
            if member is not None:
                member.on_response(request, response, self.now_ms)
                self._take_events(name, member)

    def stall_application(self, name: str) -> None:
        """Member ``name``'s application stops calling ``poll()`` (a slow batch): the
        member still heartbeats, and ``max.poll.interval.ms`` runs."""
        self._stalled.add(name)

    def resume_application(self, name: str) -> None:
        """Member ``name``'s application calls ``poll()`` again."""
        self._stalled.discard(name)

    def add_invariant(self, check: Callable[[InProcessGroup], None]) -> None:
        """Also run ``check(group)`` wherever the group checks its invariants; it raises
        (``InvariantViolation`` or any ``AssertionError``) when broken."""
        self._invariants.append(check)

    def set_topics(self, topics: Mapping[str, int]) -> CoordinatorResult:
        """Create topics or change partition counts: the coordinator and every member learn
        the new image now (a member notices at its next ``poll``)."""
        result = self._apply(self.context.set_topics(topics))
        for member in self._members.values():
            member.update_metadata(self.context.metadata)
        return result

    def delete_topics(self, *names: str) -> CoordinatorResult:
        """Delete topics; the coordinator and every member learn the new image now."""
        result = self._apply(self.context.delete_topics(*names))
        for member in self._members.values():
            member.update_metadata(self.context.metadata)
        return result

    # -- running -----------------------------------------------------------------------------

    def advance(self, ms: int) -> None:
        """Run the group for ``ms`` of virtual time, doing everything that falls due."""
        if ms < 0:
            raise ValueError(f"time does not go backwards (advance by {ms} ms)")
        end = self.now_ms + ms
        self._run_instant()
        while True:
            nxt = self._next_time()
            if nxt is None or nxt > end:
                break
            self._move_to(nxt)
            self._run_instant()
        self._move_to(end)
        self._run_instant()

    def run_until(self, condition: Callable[[], bool], *, max_ms: int) -> int:
        """Run, one instant at a time, until ``condition()`` holds; returns the ms it took.

        ``GroupNotStableError`` if it does not hold within ``max_ms`` (the clock then
        stands at the last instant run).
        """
        start = self.now_ms
        limit = start + max_ms
        self._run_instant()
        while not condition():
            nxt = self._next_time()
            if nxt is None or nxt > limit:
                raise GroupNotStableError(
                    f"condition not met within {max_ms} ms (at {self.now_ms} ms): {self.describe()}"
                )
            self._move_to(nxt)
            self._run_instant()
        return self.now_ms - start

    def run_until_stable(self, max_ms: int = 300_000) -> int:
        """Run until ``is_stable()``; returns the ms it took (``GroupNotStableError`` if more
        than ``max_ms``)."""
        return self.run_until(self.is_stable, max_ms=max_ms)

    def describe(self) -> str:
        """One line per member: its state, epoch or generation, and what it owns."""
        lines = []
        for name, member in sorted(self._members.items()):
            if isinstance(member, ClassicMember):
                epoch = f"generation {member.generation_id}"
            else:
                epoch = f"epoch {member.member_epoch}"
            owned = ", ".join(str(tp) for tp in sorted(member.assignment))
            lines.append(f"{name}: {member.state.name}, {epoch}, owns [{owned}]")
        return "; ".join(lines) or "no members"

    def check_invariants(self) -> None:
        """Check the group invariants now (the group does so after every step)."""
        owners: dict[TopicPartition, str] = {}
        for name in sorted(self._members):
            if name in self._paused:
                continue
            member = self._members[name]
            for tp in member.assignment:
                other = owners.setdefault(tp, name)
                if other != name:
                    raise InvariantViolation(
                        f"at {self.now_ms} ms: {tp} owned by {other} and {name}"
                    )
            if isinstance(member, ClassicMember):
                eager = member.protocol is RebalanceProtocol.EAGER
                if eager and member.rebalance_in_progress and member.assignment:
                    raise InvariantViolation(
                        f"at {self.now_ms} ms: eager {name} owns {sorted(member.assignment)} "
                        "while rebalancing"
                    )
            else:
                epoch = member.member_epoch
                last = self._last_epoch.get(name, 0)
                if epoch < last and epoch > 0:
                    raise InvariantViolation(
                        f"at {self.now_ms} ms: {name}'s epoch went from {last} to {epoch}"
                    )
                self._last_epoch[name] = epoch
        for check in self._invariants:
            check(self)

    # -- the network and the loop -------------------------------------------------------------

    def _member_config(
        self,
        name: str,
        config: Mapping[str, Any] | ClassicMemberConfig | ConsumerMemberConfig | None,
    ) -> ClassicMemberConfig | ConsumerMemberConfig:
        if isinstance(config, ClassicMemberConfig | ConsumerMemberConfig):
            return config
        properties = dict(config or {})
        protocol = str(properties.pop("group.protocol", self.group_protocol)).lower()
        properties.setdefault("group.id", self.group_id)
        properties.setdefault("client.id", name)
        if protocol == "classic":
            return ClassicMemberConfig.from_properties(properties)
        if protocol == "consumer":
            return ConsumerMemberConfig.from_properties(properties)
        raise ValueError(f"group.protocol must be classic or consumer, not {protocol!r}")

    def _forget(self, name: str) -> None:
        self._closing.discard(name)
        self._paused.discard(name)
        self._stalled.discard(name)
        self._held.pop(name, None)

    def _take_events(self, name: str, member: DrivenMember) -> bool:
        """Collect the member's new events; whether there were any."""
        events = member.take_events()
        for event in events:
            self.events.append(event)
            self.member_events.append((name, event))
        return bool(events)

    def _apply(self, result: CoordinatorResult) -> CoordinatorResult:
        """Publish a coordinator result's events and hand its replies to their members."""
        self.events.extend(result.events)
        for reply in result.replies:
            sent = self._in_flight.pop(reply.token, None)
            if sent is None:
                continue  # a request the test sent through the context itself
            name, member, request = sent
            if self._members.get(name) is not member:
                continue  # crashed or removed: the reply goes nowhere
            if name in self._paused:
                self._held.setdefault(name, []).append((request, reply.response))
                continue
            member.on_response(request, reply.response, self.now_ms)
            self._take_events(name, member)
            if self._check and name != self._turn:
                self.check_invariants()
        return result

    def _send(self, name: str, member: DrivenMember, request: MemberRequest) -> None:
        token = self.context.next_token()
        self._in_flight[token] = (name, member, request)
        self.sent.append(SentRequest(self.now_ms, name, request))
        self._apply(self.context.send(request, token=token))

    def _poll_members(self) -> bool:
        """Every running member's turn, in name order; whether anything happened."""
        progressed = False
        now = self.now_ms
        for name in sorted(self._members):
            member: DrivenMember | None = self._members.get(name)
            if member is None or name in self._paused:
                continue
            self._turn = name
            try:
                if name not in self._stalled:
                    member.on_application_poll(now)
                try:
                    requests: Sequence[MemberRequest] = member.poll(now)
                except Exception as error:  # the application's to see, as from KafkaConsumer.poll
                    if not any(seen is error for _, seen in self.errors):
                        self.errors.append((name, error))
                        progressed = True
                    requests = ()
                acted = self._take_events(name, member) or bool(requests)
                for request in requests:
                    self._send(name, member, request)
            finally:
                self._turn = None
            if name in self._closing and _has_left(member):
                del self._members[name]
                self._forget(name)
            # A turn that sent nothing and changed nothing visible leaves the invariants as
            # they were (they are checked after every change), so it is not checked again.
            if acted and self._check:
                self.check_invariants()
            progressed = progressed or acted
        return progressed

    def _due_members(self) -> bool:
        now = self.now_ms
        for name, member in self._members.items():
            if name in self._paused:
                continue
            deadline = member.next_deadline()
            if deadline is not None and deadline <= now:
                return True
        return False

    def _run_instant(self) -> None:
        """Everything due at the current instant, until nothing is left."""
        for _ in range(_MAX_ROUNDS_PER_INSTANT):
            if self._poll_members():
                continue
            deadline = self.context.next_deadline()
            if deadline is not None and deadline <= self.now_ms:
                self._apply(self.context.advance(0))
                continue
            if self._due_members():
                continue
            return
        raise LivelockError(f"still acting at {self.now_ms} ms: {self.describe()}")

    def _next_time(self) -> int | None:
        deadlines = [self.context.next_deadline()]
        for name, member in self._members.items():
            if name not in self._paused:
                deadlines.append(member.next_deadline())
        due = [d for d in deadlines if d is not None]
        return max(min(due), self.now_ms) if due else None

    def _move_to(self, when: int) -> None:
        """Move the clock to ``when``; the coordinator's timers due by then fire on the way."""
        self._apply(self.context.advance(when - self.now_ms))


def _has_left(member: DrivenMember) -> bool:
    """Whether a closing KIP-848 member is done leaving."""
    return isinstance(member, ConsumerMember) and member.state in (
        ConsumerState.UNSUBSCRIBED,
        ConsumerState.FATAL,
    )
