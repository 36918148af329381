"""A simulated consumer process: the application's poll loop around a real member.

Theory of operation
-------------------

A ``SimConsumer`` is one process slot (``client_id`` ``c00``, ``c01`` ...):
it can be started, stopped cleanly, crashed and started again; each start is
a new *incarnation* with a new member object (``ClassicMember`` for eager and
cooperative, ``ConsumerMember`` for KIP-848). Anything addressed to an older
incarnation (a response, a wake-up) is dropped.

The member is driven as its module says: ``poll(now)`` whenever its
``next_deadline()`` comes (``_arm``/``_wake``: a wake-up is superseded, not
cancelled) or an input arrives, responses through ``on_response``, lost
requests through ``on_request_failed``. That plays the client's background
(heartbeat) thread.

A consumer is given the run's context (``RunContext``: the clock, the group's
names, the metadata, the data plane, ``emit``) and two callables: ``send``
(the transport's: one request to the coordinator) and ``changed`` (the
stability watch's: this process started or stopped, or its member's state or
epoch moved). It knows nothing else of the run.

The application loop, as a Kafka application's ``while True: poll(); process()``:

* ``app poll``: ``member.on_application_poll`` (the ``max.poll.interval.ms``
  timer), classic auto-commit when ``auto.commit.interval.ms`` has passed
  (Kafka commits inside ``poll``), then a batch: up to ``max.poll.records``
  records from the partitions it may process (owned, restored, with a known
  position; not pending revocation), taken round-robin;
* ``batch done`` after ``records * processing_us_per_record`` (plus any
  stall of a ``slow`` action): each partition's chunk is processed
  (``records_processed``) if the partition is still owned, else dropped
  (the application checks ownership before its side effects); with
  ``enable.auto.commit=false`` the application commits after each batch;
* no records: poll again at the next produce tick or after ``idle_poll_ms``;
  meanwhile the application is *inside* ``poll()`` (``in_poll``), as a Kafka
  application blocked in ``poll(timeout)`` is.

The classic member is built with ``join_on_application_poll``: a rejoin its
heartbeat reports goes out at the application's next poll (Kafka sends
JoinGroup from ``KafkaConsumer.poll`` -> ``ConsumerCoordinator.poll``), so a
member busy with a batch (or stalled) joins after it; a member waiting inside
``poll()`` joins at once (every ``drive`` counts as a poll-loop iteration).
The KIP-848 member likewise reconciles and auto-commits only on the
application's poll (Kafka's ``maybeReconcile(canCommit=true)`` in the
application poll event): a revocation that arrives during a batch waits for
the batch to end, and its commit carries the batch's last offset + 1, so a
clean reassignment processes nothing twice.

New partitions: the committed offsets are fetched (OffsetFetch to the
coordinator, through the network; none: ``auto.offset.reset=earliest``, offset
0) and state is restored for ``restore_ms``; ``partitions_restored`` marks the
end of the restore. Revocation: the classic member calls the listener inside
its step, and the listener commits the positions of the revoked partitions
(Kafka's ``onPartitionsRevoked`` commit, and ``onJoinPrepare``'s auto-commit);
the KIP-848 member commits them itself through the ``positions`` provider.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from regroup.classic.member.config import ClassicMemberConfig
from regroup.classic.member.member import ClassicMember
from regroup.classic.member.state import MemberState as ClassicState
from regroup.consumer.member.member import ConsumerMember
from regroup.consumer.member.state import MemberState as ConsumerState
from regroup.events import (
    ConsumerStarted,
    ConsumerStopped,
    Event,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRestored,
    PartitionsRevoked,
)
from regroup.members.driving import Member, MemberRequest
from regroup.model import TopicPartition, sorted_partitions
from regroup.model.requests.offsets import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from regroup.sim.configs import (
    CLASSIC_ONLY_CONFIGS,
    CONSUMER_ONLY_CONFIGS,
    PROCESS_CONFIGS,
    as_bool,
    consumer_member_config,
)
from regroup.sim.context import RunContext

__all__ = ["SimConsumer", "SimRequest"]

#: What a simulated consumer sends: its member's requests and its own OffsetFetches.
SimRequest = MemberRequest | OffsetFetchRequest

#: No partitions (one object, so that ``_candidates`` can recognise it by identity).
_NONE: frozenset[TopicPartition] = frozenset()


class SimConsumer:
    """One consumer process slot (see the module docstring)."""

    def __init__(
        self,
        ctx: RunContext,
        index: int,
        props: Mapping[str, Any],
        *,
        send: Callable[[SimConsumer, SimRequest], None],
        changed: Callable[[SimConsumer], None],
    ) -> None:
        self.ctx = ctx
        self._world = ctx.world
        #: Sends one request to the coordinator (the transport's ``send``).
        self._send_one = send
        #: Told when the process starts or stops, or its member's state or epoch changes
        #: (the stability watch's ``consumer_changed``).
        self._changed = changed
        self.index = index
        self.client_id = f"c{index:02d}" if index < 100 else f"c{index}"
        self.props: dict[str, Any] = dict(props)
        self.member: ClassicMember | ConsumerMember | None = None
        self.alive = False
        self.closing = False
        self.incarnation = 0
        self.member_id = ""
        self.wake_at: int | None = None
        #: The application is inside ``poll()``, waiting for records (neither processing a
        #: batch nor stalled): a classic member's needed JoinGroup may go out at once.
        self.in_poll = False
        self.stable = False
        self.stall_ms = 0
        self.positions: dict[TopicPartition, int] = {}
        self.ready: set[TopicPartition] = set()
        #: Counts the changes to which partitions are in ``ready`` or have a position
        #: (not to the positions' values): the key of ``_candidates``' cache.
        self._partitions_version = 0
        #: ``_candidates``' last answer: (version, owned, pending revocation, candidates).
        self._candidate_cache: (
            tuple[
                int,
                frozenset[TopicPartition],
                frozenset[TopicPartition],
                tuple[TopicPartition, ...],
            ]
            | None
        ) = None
        self._committed: dict[TopicPartition, int] = {}
        #: The partitions an OffsetFetch asked for, by topic and number: the answer's
        #: positions are keyed by the member's own partition objects (found by identity
        #: in every later look-up), not by new ones built from the response.
        self._fetching: dict[str, dict[int, TopicPartition]] = {}
        self._app_token = 0
        self._batch: dict[TopicPartition, tuple[int, int]] | None = None
        self._rotate = 0
        #: ``(tick, candidates)``: every record the candidates had at that produce tick is
        #: processed (a poll then finds nothing without looking); ``_taking``: the same,
        #: once the batch in flight is done.
        self._drained: tuple[int, tuple[TopicPartition, ...]] | None = None
        self._taking: tuple[int, tuple[TopicPartition, ...]] | None = None
        self._next_auto_commit = 0
        #: This incarnation's ``enable.auto.commit`` and ``auto.commit.interval.ms`` (a
        #: consumer's configs are read when it starts, as Kafka's are).
        self._auto_commits = True
        self._auto_commit_ms = 5000
        self.errors: list[str] = []
        self._epoch = -1

    # -- configuration -------------------------------------------------------------------------

    @property
    def request_timeout_ms(self) -> int:
        return int(self.props.get("request.timeout.ms", 30000))

    @property
    def auto_commit(self) -> bool:
        return as_bool("enable.auto.commit", self.props.get("enable.auto.commit", True))

    @property
    def auto_commit_interval_ms(self) -> int:
        return int(self.props.get("auto.commit.interval.ms", 5000))

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self, now: int) -> None:
        """A new incarnation: a new member, subscribed, polling."""
        ctx = self.ctx
        self.incarnation += 1
        self.alive, self.closing, self.stable = True, False, False
        self.member_id = ""
        self.positions.clear()
        self.ready.clear()
        self._partitions_version += 1
        self._committed.clear()
        self._drained = self._taking = None
        self._fetching.clear()
        self._batch = None
        self.wake_at = None
        self.in_poll = False
        self._auto_commits = self.auto_commit
        self._auto_commit_ms = self.auto_commit_interval_ms
        self._next_auto_commit = now + self._auto_commit_ms
        instance = self.props.get("group.instance.id")
        protocol = str(self.props.get("group.protocol", ctx.group_protocol)).lower()
        if protocol == "classic":
            props = {k: v for k, v in self.props.items() if k not in PROCESS_CONFIGS}
            if ctx.group_protocol == "consumer":
                # Migrated back by the scenario: a classic consumer takes no KIP-848 configs.
                props = {k: v for k, v in props.items() if k not in CONSUMER_ONLY_CONFIGS}
            config = ClassicMemberConfig.from_properties(props)
            config = replace(config, group_id=ctx.group_id, client_id=self.client_id)
            member: ClassicMember | ConsumerMember = ClassicMember(
                config,
                listener=self,
                metadata=ctx.metadata,
                now_ms=now,
                join_on_application_poll=True,
            )
        else:
            rng = random.Random(f"{ctx.seed}/{self.client_id}/{self.incarnation}")
            props = dict(self.props)
            if ctx.group_protocol != "consumer":
                # Migrated by the scenario: the classic configs were removed, as Kafka requires.
                props = {k: v for k, v in props.items() if k not in CLASSIC_ONLY_CONFIGS}
            member = ConsumerMember(
                consumer_member_config(ctx.group_id, self.client_id, props),
                rng=rng,
                positions=self._positions_to_commit,
                metadata=ctx.metadata,
            )
            self.member_id = member.member_id
        self.member = member
        if isinstance(member, ClassicMember):
            member.subscribe(sorted(ctx.topics))  # subscribe(), then the first poll()
            member.on_application_poll(now)
        else:
            member.on_application_poll(now)
            member.subscribe(sorted(ctx.topics))
        ctx.emit(
            ConsumerStarted(
                ts_ms=now,
                group_id=ctx.group_id,
                client_id=self.client_id,
                group_protocol=protocol,
                instance_id=None if instance is None else str(instance),
            )
        )
        self._changed(self)
        self.drive(now)
        self._schedule_app_poll(now)

    def crash(self, now: int) -> None:
        """The process dies: no callbacks, no leave, nothing more sent."""
        if not self.alive:
            return
        self._finish(now, crashed=True)

    def stop(self, now: int) -> None:
        """Kafka ``close``: the member revokes, commits and leaves; then the process exits."""
        member = self.member
        if not self.alive or member is None or self.closing:
            return
        self.closing = True
        self._app_token += 1
        self._batch = None
        self.in_poll = False
        if isinstance(member, ClassicMember):
            requests = member.close(now)
            self._send(requests)
            self._absorb(now)
            self._finish(now, crashed=False)
            return
        member.close(now)
        self.drive(now)
        self._world.at(now + self.request_timeout_ms, self._close_timeout, self.incarnation)

    def _close_timeout(self, incarnation: int) -> None:
        if self.alive and self.closing and incarnation == self.incarnation:
            self._finish(self._world.now_ms, crashed=False)

    def _finish(self, now: int, *, crashed: bool) -> None:
        self.alive = False
        self.closing = False
        self.stable = False
        self.member = None
        self._app_token += 1
        self._batch = None
        self.in_poll = False
        self.ready.clear()
        self._partitions_version += 1
        self.wake_at = None
        self.ctx.emit(
            ConsumerStopped(
                ts_ms=now,
                group_id=self.ctx.group_id,
                client_id=self.client_id,
                member_id=self.member_id,
                crashed=crashed,
            )
        )
        self._changed(self)

    # -- driving the member (the client's background thread) ----------------------------------

    def drive(self, now: int, *, polled: bool = False) -> None:
        """Poll the member (``polled``: the application's poll at ``now`` was already
        reported to it, by the application loop)."""
        member: Member | None = self.member
        if member is None or not self.alive:
            return
        if self.in_poll and not polled:
            # Kafka's poll() loop runs the group's work while it waits for records:
            # ConsumerCoordinator.poll (classic), the application poll event (KIP-848).
            member.on_application_poll(now)
        if member.is_idle(now):
            # Nothing due (``Member.is_idle``): the poll would send, raise and report
            # nothing, so it is skipped; what the driver reads of the member is still read.
            self._absorb(now)
            return
        try:
            requests: Sequence[MemberRequest] = member.poll(now)
        except Exception as error:  # a listener error or a fatal error, raised from poll
            self.errors.append(f"{now}: {type(error).__name__}: {error}")
            requests = []
        self._send(requests)
        self._absorb(now)

    def on_response(self, request: SimRequest, response: object, now: int) -> None:
        member: Member | None = self.member
        if member is None:
            return
        if isinstance(request, OffsetFetchRequest):
            self._on_offsets(cast(OffsetFetchResponse, response))
            return
        member.on_response(request, response, now)
        self.drive(now)

    def retry_of(self, request: SimRequest) -> SimRequest:
        """The request this consumer's client sends when it retries ``request`` (the
        network delivered it twice, see ``regroup.sim.transport``): a KIP-848 member's
        heartbeat is retried full (``ConsumerMember.retry_request``); anything else as is."""
        member = self.member
        if isinstance(member, ConsumerMember):
            return cast(SimRequest, member.retry_request(request))
        return request

    def on_request_failed(self, request: SimRequest, now: int) -> None:
        member: Member | None = self.member
        if member is None:
            return
        if isinstance(request, OffsetFetchRequest):
            self._fetch_offsets(sorted(tp for tp in member.assignment if tp not in self.positions))
            return
        member.on_request_failed(request, now)
        self.drive(now)

    def _send(self, requests: Sequence[SimRequest]) -> None:
        if requests:
            send = self._send_one
            for request in requests:
                send(self, request)

    def _absorb(self, now: int) -> None:
        """Publish the member's events and react to assignment changes."""
        member = self.member
        if member is None:
            return
        member_id = member.member_id
        if member_id:
            self.member_id = member_id
        events: list[Event] = member.take_events()
        if events:
            emit = self.ctx.emit
            for event in events:
                if isinstance(event, PartitionsAssigned):
                    emit(event)
                    if event.partitions:
                        self._on_assigned(event.partitions, now)
                    continue
                if isinstance(event, PartitionsRevoked | PartitionsLost):
                    partitions = event.partitions
                    self.ready.difference_update(partitions)
                    self._partitions_version += 1
                    positions, committed = self.positions, self._committed
                    for tp in partitions:
                        positions.pop(tp, None)
                        committed.pop(tp, None)
                emit(event)
        if isinstance(member, ClassicMember):
            # A member that must rejoin (a partition count changed, a rebalance was
            # enforced) is not stable, though its state stays STABLE until the
            # application's next poll sends the JoinGroup (Kafka ``rejoinNeededOrPending``).
            stable = member.state is ClassicState.STABLE and not member.rejoin_pending
            epoch = member.generation_id
        else:
            stable = member.state is ConsumerState.STABLE
            epoch = member.member_epoch
            if self.closing and member.state in (ConsumerState.UNSUBSCRIBED, ConsumerState.FATAL):
                self._finish(now, crashed=False)
                return
        stable = stable and not self.closing
        if stable != self.stable or epoch != self._epoch or events:
            self.stable = stable
            self._epoch = epoch
            self._changed(self)
        self._arm()

    def _arm(self) -> None:
        """Wake the member at its next deadline (if earlier than the wake-up armed).

        A wake-up is superseded, not cancelled: a stale one finds a different
        ``wake_at`` (or a newer incarnation) and returns.
        """
        member = self.member
        if member is None:
            return
        deadline = member.next_deadline()
        if deadline is None:
            return
        wake_at = self.wake_at
        if wake_at is None or deadline < wake_at:
            self.wake_at = deadline
            self._world.at(deadline, self._wake, self.incarnation, deadline)

    def _wake(self, incarnation: int, deadline: int) -> None:
        if self.incarnation != incarnation or self.wake_at != deadline:
            return
        self.wake_at = None
        self.drive(self._world.now_ms)

    def _on_assigned(self, partitions: Sequence[TopicPartition], now: int) -> None:
        self._fetch_offsets(partitions)
        restore = self.ctx.data.restore_ms
        self._world.at(now + restore, self._restored, self.incarnation, tuple(partitions))

    def _restored(self, incarnation: int, partitions: tuple[TopicPartition, ...]) -> None:
        member = self.member
        if not self.alive or incarnation != self.incarnation or member is None:
            return
        owned = member.assignment
        if owned.issuperset(partitions):
            done = partitions
        else:
            done = tuple(tp for tp in partitions if tp in owned)
        if not done:
            return
        self.ready.update(done)
        self._partitions_version += 1
        ctx = self.ctx
        ctx.emit(
            PartitionsRestored(
                ts_ms=self._world.now_ms,
                group_id=ctx.group_id,
                member_id=self.member_id,
                partitions=done,
                restore_ms=ctx.data.restore_ms,
            )
        )

    def _fetch_offsets(self, partitions: Sequence[TopicPartition]) -> None:
        if not partitions:
            return
        by_topic: dict[str, list[int]] = {}
        fetching = self._fetching
        for tp in sorted_partitions(partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
            wanted = fetching.get(tp.topic)
            if wanted is None:
                wanted = fetching[tp.topic] = {}
            wanted[tp.partition] = tp
        request = OffsetFetchRequest(
            group_id=self.ctx.group_id,
            topics=tuple(OffsetFetchRequestTopic(t, tuple(p)) for t, p in by_topic.items()),
        )
        self._send_one(self, request)

    def _on_offsets(self, response: OffsetFetchResponse) -> None:
        member = self.member
        if member is None:
            return
        owned = member.assignment
        fetching = self._fetching
        for topic in response.topics:
            wanted = fetching.get(topic.name)
            if not wanted:
                continue
            for p in topic.partitions:
                tp = wanted.pop(p.partition_index, None)
                if tp is not None and tp in owned and tp not in self.positions:
                    # auto.offset.reset=earliest when nothing is committed.
                    offset = max(p.committed_offset, 0)
                    self.positions[tp] = offset
                    self._partitions_version += 1
                    self._committed[tp] = offset

    # -- the classic member's listener (called inside the member's step) -----------------------

    def on_partitions_revoked(self, partitions: Sequence[TopicPartition]) -> None:
        member = self.member
        if member is None or not isinstance(member, ClassicMember):
            return
        offsets = self._changed_positions(partitions)
        if offsets:
            try:
                member.commit(offsets, member.clock_ms)
            except Exception as error:  # refused outside a stable generation
                self.errors.append(f"revocation commit: {type(error).__name__}")
            for tp, offset in offsets.items():
                self._committed[tp] = offset

    def on_partitions_assigned(self, partitions: Sequence[TopicPartition]) -> None:
        return None

    def on_partitions_lost(self, partitions: Sequence[TopicPartition]) -> None:
        return None

    # -- positions and commits ------------------------------------------------------------------

    def _changed_positions(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        committed, positions = self._committed, self.positions
        changed: list[tuple[TopicPartition, int]] = []
        for tp in partitions:
            position = positions.get(tp)
            if position is not None and committed.get(tp) != position:
                changed.append((tp, position))
        # By partition (a revocation usually changes none: no sort then).
        if len(changed) > 1:
            changed.sort()
        return dict(changed)

    def _positions_to_commit(self) -> Mapping[TopicPartition, int]:
        """The KIP-848 member's ``positions`` provider (``allConsumed``)."""
        member = self.member
        if member is None:
            return {}
        owned = member.assignment
        positions = self.positions
        return {tp: positions[tp] for tp in sorted_partitions(positions) if tp in owned}

    def _commit_owned(self, now: int) -> None:
        member = self.member
        if member is None:
            return
        offsets = self._changed_positions(member.assignment)
        if not offsets:
            return
        try:
            member.commit(offsets, now)
        except Exception as error:  # rebalancing: Kafka's RebalanceInProgressException
            self.errors.append(f"{now}: commit: {type(error).__name__}")
            return
        self._committed.update(offsets)
        self.drive(now)

    # -- the application loop -------------------------------------------------------------------

    def _schedule_app_poll(self, when: int) -> None:
        self._app_token += 1
        self._world.at(when, self._app_poll, self._app_token)

    def _app_poll(self, token: int) -> None:
        member = self.member
        if token != self._app_token or member is None or not self.alive or self.closing:
            return
        ctx = self.ctx
        now = self._world.now_ms
        member.on_application_poll(now)
        if (
            now >= self._next_auto_commit
            and self._auto_commits
            and isinstance(member, ClassicMember)
        ):
            self._next_auto_commit = now + self._auto_commit_ms
            if member.state is ClassicState.STABLE:
                self._commit_owned(now)
        self.drive(now, polled=True)
        if self.member is None:
            return
        batch = self._take_batch()
        data = ctx.data
        if batch:
            count = sum(last - first + 1 for first, last in batch.values())
            duration = (count * data.processing_us_per_record + 999) // 1000 + self.stall_ms
            self.stall_ms = 0
            self._batch = batch
            self.in_poll = False
            self._app_token += 1
            self._world.at(now + duration, self._batch_done, self._app_token)
            return
        if self.stall_ms:
            stall, self.stall_ms = self.stall_ms, 0
            self.in_poll = False
            self._schedule_app_poll(now + stall)
            return
        self.in_poll = True
        wait = data.idle_poll_ms
        plane = ctx.plane
        if plane.active:
            wait = min(wait, plane.next_tick(now) - now)
        self._schedule_app_poll(now + max(1, wait))

    def _candidates(self, member: ClassicMember | ConsumerMember) -> tuple[TopicPartition, ...]:
        """The partitions the application may fetch from, in partition order: restored,
        owned, with a known position, not pending revocation (KIP-848).

        Kept until one of those sets changes (the member's sets are replaced, never
        changed in place; this consumer's are counted in ``_partitions_version``).
        """
        owned = member.assignment
        pending = member.pending_revocation if isinstance(member, ConsumerMember) else _NONE
        version = self._partitions_version
        cached = self._candidate_cache
        if (
            cached is not None
            and cached[0] == version
            and cached[1] is owned
            and cached[2] is pending
        ):
            return cached[3]
        positions = self.positions
        candidates = tuple(
            sorted(tp for tp in self.ready if tp in owned and tp not in pending and tp in positions)
        )
        self._candidate_cache = (version, owned, pending, candidates)
        return candidates

    def _take_batch(self) -> dict[TopicPartition, tuple[int, int]]:
        """Up to ``max.poll.records`` records, round-robin over the candidates from a
        starting point that moves by one at every poll that has candidates."""
        member = self.member
        if member is None or not self.ready:
            return {}
        ordered = self._candidates(member)
        candidates = len(ordered)
        if not candidates:
            return {}
        start = self._rotate % candidates
        self._rotate += 1
        batch: dict[TopicPartition, tuple[int, int]] = {}
        plane = self.ctx.plane
        # The log end offsets as of the last tick, in closed form (``DataPlane.end_offset``).
        tick, rate, born = plane.last_tick, plane.rate, plane.born
        if tick is None:
            return batch
        drained = self._drained
        if drained is not None and drained[0] == tick and drained[1] is ordered:
            return batch  # nothing produced since everything was processed
        positions = self.positions
        budget = self.ctx.data.max_poll_records
        for i in range(candidates):
            tp = ordered[(start + i) % candidates]
            birth = born.get(tp)
            if birth is None or birth > tick:
                continue
            position = positions[tp]
            left = rate * (tick - birth) // 1000 - position
            if left <= 0:
                continue
            take = min(left, budget)
            batch[tp] = (position, position + take - 1)
            budget -= take
            if budget <= 0:
                self._taking = None
                return batch
        # Every record available is in the batch: once it is done, nothing is left.
        if batch:
            self._taking = (tick, ordered)
        else:
            self._drained = (tick, ordered)
        return batch

    def _batch_done(self, token: int) -> None:
        member = self.member
        batch = self._batch
        if token != self._app_token or member is None or batch is None:
            return
        self._batch = None
        ctx = self.ctx
        now = self._world.now_ms
        owned = member.assignment
        ready, positions = self.ready, self.positions
        chunks: list[tuple[TopicPartition, int, int]] = []
        for tp in sorted_partitions(batch):
            first, last = batch[tp]
            if tp not in owned or tp not in ready or positions.get(tp) != first:
                continue  # revoked or lost meanwhile: the application drops the chunk
            positions[tp] = last + 1
            chunks.append((tp, first, last))
        self._drained = self._taking if len(chunks) == len(batch) else None
        self._taking = None
        if chunks:
            # One ``records_processed`` per chunk, published together (``Journal``).
            ctx.records_processed(now, ctx.group_id, self.member_id, chunks)
        if not self._auto_commits:
            self._commit_owned(now)
        self._schedule_app_poll(now)
