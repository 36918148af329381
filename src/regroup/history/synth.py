"""Synthetic Kafka broker logs of a cluster, with the rebalances they hold (tests, benchmarks).

``write_cluster_logs(directory, ...)`` writes one ``server.log`` per broker in Kafka's
log4j layout: the group coordinator's lines for ``groups`` consumer groups (rolling
deploys of dynamic members, crashes found at the session timeout, poll timeouts, all in
the wording of one Kafka version, rendered by ``regroup.history.formats``) among the
broker's other chatter (``noise`` lines per coordinator line: log segments, ISR changes,
fetcher and controller lines). Each group's coordinator is the broker leading its
``__consumer_offsets`` partition; ``move_at`` moves every coordinator to the next broker
once (unloading on one, loading on the other), as a leadership change does.

It returns the ground truth: each group's rebalances (generation, start and stabilization
times in ms, member count, reason class), which ``regroup history`` must recover.
Deterministic for a seed.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from regroup.history.formats import Family, Kind, format_timestamp, render_line

__all__ = ["TruthRebalance", "write_cluster_logs"]

_NOISE = (
    "[LocalLog partition={topic}-{p}, dir=/var/lib/kafka/data] Rolled new log segment at "
    "offset {n} in {d} ms. (kafka.log.LocalLog)",
    "[Partition {topic}-{p} broker={b}] ISR updated to {b},{o} and version updated to {n} "
    "(kafka.cluster.Partition)",
    "[ReplicaFetcher replicaId={b}, leaderId={o}, fetcherId=0] Truncating partition "
    "{topic}-{p} with TruncationState(offset={n}, completed=true) due to leader epoch and "
    "offset EpochEndOffset(errorCode=0, partition={p}, leaderEpoch={d}, endOffset={n}) "
    "(kafka.server.ReplicaFetcherThread)",
    "[ProducerStateManager partition={topic}-{p}] Wrote producer snapshot at offset {n} with "
    "0 producer ids in {d} ms. (org.apache.kafka.storage.internals.log.ProducerStateManager)",
    "[UnifiedLog partition={topic}-{p}, dir=/var/lib/kafka/data] Deleting segment "
    "LogSegment(baseOffset={n}, size={d}, lastModifiedTime={n}, largestRecordTimestamp={n}) "
    "due to log retention time 604800000ms breach based on the largest record timestamp in "
    "the segment (kafka.log.UnifiedLog)",
    "[BrokerToControllerChannelManager id={b} name=heartbeat] Recorded new KRaft controller, "
    "from now on will use node kafka-{o}:9093 (id: {o} rack: null) "
    "(kafka.server.NodeToControllerRequestThread)",
)
_TOPICS = ("orders", "payments", "clicks", "audit-log", "inventory")


@dataclass(frozen=True, slots=True)
class TruthRebalance:
    group_id: str
    generation: int
    started_ms: int
    stabilized_ms: int
    members: int
    reason_class: str


@dataclass(slots=True)
class _Group:
    group_id: str
    partition: int
    members: list[str]
    generation: int = 0
    truth: list[TruthRebalance] = field(default_factory=list)


class _Cluster:
    def __init__(self, brokers: int, version: str, seed: int) -> None:
        self.brokers = brokers
        self.version = version
        self.random = random.Random(seed)
        self.lines: dict[int, list[tuple[int, str]]] = {b: [] for b in range(brokers)}
        self.family = Family.JAVA if version.startswith("4") else Family.SCALA

    def leader(self, group: _Group, at: int, move_at: int | None) -> int:
        base = group.partition % self.brokers
        return (base + 1) % self.brokers if move_at is not None and at >= move_at else base

    def emit(self, broker: int, at: int, kind: Kind, **fields: object) -> None:
        prefix: dict[str, object] = {"broker_id": broker}
        if self.family == Family.JAVA:
            prefix["offsets_partition"] = fields.pop("offsets_partition")
        line = render_line(kind, self.family, at, version=self.version, **prefix, **fields)
        self.lines[broker].append((at, line))

    def member_id(self, group: _Group, index: int) -> str:
        token = uuid.UUID(int=self.random.getrandbits(128), version=4)
        return f"consumer-{group.group_id}-{index}-{token}"

    def rebalance(
        self, group: _Group, broker: int, start: int, reason: str, reason_class: str
    ) -> int:
        """Preparing at ``start``, stabilized a join phase later; returns its end time."""
        old = group.generation
        self.emit(
            broker,
            start,
            Kind.REBALANCE_PREPARING,
            group_id=group.group_id,
            state="PreparingRebalance" if old else "Empty",
            generation=old,
            offsets_partition=group.partition,
            reason=reason,
        )
        end = start + self.random.randint(50, 3000)
        group.generation = old + 1
        self.emit(
            broker,
            end,
            Kind.GROUP_STABILIZED,
            group_id=group.group_id,
            generation=group.generation,
            offsets_partition=group.partition,
            members=len(group.members),
        )
        group.truth.append(
            TruthRebalance(
                group.group_id, group.generation, start, end, len(group.members), reason_class
            )
        )
        return end


def _join_reason(member: str, version: str) -> str:
    if version.startswith("2"):
        return f"Adding new member {member} with group instance id None"
    return f"Adding new member {member} with group instance id None; client reason: not provided"


def _leave_reason(member: str, why: str, version: str) -> str:
    if version.startswith("2"):
        return f"removing member {member} on LeaveGroup"
    return f"Removing member {member} on LeaveGroup; client reason: {why}"


def _leave_line(
    cluster: _Cluster, group: _Group, broker: int, at: int, member: str, why: str
) -> None:
    fields: dict[str, object] = {"group_id": group.group_id, "member_id": member}
    if cluster.family == Family.JAVA:
        fields.update(offsets_partition=group.partition, reason=why)
        cluster.emit(broker, at, Kind.MEMBER_LEFT, **fields)
    elif cluster.version.startswith("2"):
        cluster.emit(broker, at, Kind.MEMBER_LEFT, instance_id="None", **fields)
    else:
        fields.update(
            instance_id="None",
            client_id=member.rsplit("-", 5)[0],
            client_host="/10.0.0.1",
            session_timeout_ms=45000,
            rebalance_timeout_ms=300000,
            protocols="List(range, cooperative-sticky)",
            reason=why,
        )
        cluster.emit(broker, at, Kind.MEMBER_LEFT, **fields)


def _move(cluster: _Cluster, group: _Group, at: int) -> None:
    """The coordinator moves at ``at``: unloaded by its old broker, loaded by the new one."""
    before = [t for t in group.truth if t.stabilized_ms < at]
    if not before:
        return
    generation, members = before[-1].generation, before[-1].members
    old = group.partition % cluster.brokers
    new = (old + 1) % cluster.brokers
    if cluster.family == Family.JAVA:
        cluster.emit(
            old,
            at,
            Kind.GROUP_UNLOADED,
            group_id=group.group_id,
            generation=generation,
            offsets_partition=group.partition,
        )
        cluster.emit(
            new,
            at + 40,
            Kind.GROUP_LOADED,
            group_id=group.group_id,
            members=members,
            offsets_partition=group.partition,
        )
    else:
        cluster.emit(old, at, Kind.GROUP_UNLOADED, group_id=group.group_id, generation=generation)
        cluster.emit(
            new, at + 40, Kind.GROUP_LOADED, group_id=group.group_id, generation=generation
        )


def _noise_line(cluster: _Cluster, broker: int, at: int) -> str:
    rnd = cluster.random
    template = _NOISE[rnd.randrange(len(_NOISE))]
    message = template.format(
        topic=_TOPICS[rnd.randrange(len(_TOPICS))],
        p=rnd.randrange(64),
        b=broker,
        o=(broker + 1) % cluster.brokers,
        n=rnd.randrange(10**9),
        d=rnd.randrange(1, 900),
    )
    return f"[{_second(at // 1000)},{at % 1000:03d}] INFO {message}"


@lru_cache(maxsize=65536)
def _second(second: int) -> str:
    return format_timestamp(second * 1000)[:-4]


def write_cluster_logs(
    directory: Path,
    *,
    brokers: int = 3,
    groups: int = 4,
    members: int = 6,
    deploys: int = 2,
    crashes: int = 1,
    poll_timeouts: int = 1,
    version: str = "3.6",
    noise: int = 5,
    seed: int = 0,
    start_ms: int = 1_795_000_000_000,
    move_at: int | None = None,
) -> list[TruthRebalance]:
    """Write ``directory/broker-N/server.log`` for each broker; return the true rebalances."""
    cluster = _Cluster(brokers, version, seed)
    truth: list[TruthRebalance] = []
    for index in range(groups):
        group = _Group(f"group-{index:03d}", (index * 7) % 50, [])
        at = start_ms + index * 997
        # the group forms: members join one by one, each join a rebalance (eager, dynamic)
        for slot in range(members):
            member = cluster.member_id(group, slot)
            group.members.append(member)
            broker = cluster.leader(group, at, move_at)
            at = cluster.rebalance(
                group, broker, at, _join_reason(member, version), "member_joined"
            )
            at += cluster.random.randint(200, 2000)
        at += 600_000
        for _ in range(deploys):
            for slot in range(members):
                broker = cluster.leader(group, at, move_at)
                old = group.members[slot]
                _leave_line(cluster, group, broker, at, old, "the consumer is being closed")
                group.members.remove(old)
                at = cluster.rebalance(
                    group,
                    broker,
                    at,
                    _leave_reason(old, "the consumer is being closed", version),
                    "member_left",
                )
                at += cluster.random.randint(5_000, 20_000)
                new = cluster.member_id(group, slot)
                group.members.insert(slot, new)
                broker = cluster.leader(group, at, move_at)
                at = cluster.rebalance(
                    group, broker, at, _join_reason(new, version), "member_joined"
                )
                at += cluster.random.randint(10_000, 30_000)
            at += 1_800_000
        for _ in range(crashes):
            broker = cluster.leader(group, at, move_at)
            victim = group.members[0]
            cluster.emit(
                broker,
                at,
                Kind.MEMBER_FAILED,
                group_id=group.group_id,
                member_id=victim,
                **({"offsets_partition": group.partition} if cluster.family == Family.JAVA else {}),
            )
            group.members.remove(victim)
            at = cluster.rebalance(
                group,
                broker,
                at,
                f"removing member {victim} on heartbeat expiration",
                "session_timeout",
            )
            at += 60_000
            new = cluster.member_id(group, 0)
            group.members.insert(0, new)
            at = cluster.rebalance(group, broker, at, _join_reason(new, version), "member_joined")
            at += 300_000
        if not version.startswith("2"):
            for _ in range(poll_timeouts):
                broker = cluster.leader(group, at, move_at)
                slow = group.members[-1]
                why = "consumer poll timeout has expired."
                _leave_line(cluster, group, broker, at, slow, why)
                group.members.remove(slow)
                at = cluster.rebalance(
                    group, broker, at, _leave_reason(slow, why, version), "member_left"
                )
                at += 2_000
                new = cluster.member_id(group, members - 1)
                group.members.append(new)
                at = cluster.rebalance(
                    group, broker, at, _join_reason(new, version), "member_joined"
                )
                at += 120_000
        truth.extend(group.truth)
        if move_at is not None:
            _move(cluster, group, move_at)
    directory.mkdir(parents=True, exist_ok=True)
    for broker, lines in cluster.lines.items():
        lines.sort(key=lambda item: item[0])
        folder = directory / f"broker-{broker}"
        folder.mkdir(exist_ok=True)
        with (folder / "server.log").open("w", encoding="utf-8") as out:
            for line in _interleave(cluster, broker, lines, noise):
                out.write(line)
                out.write("\n")
    return truth


def _interleave(
    cluster: _Cluster, broker: int, lines: list[tuple[int, str]], noise: int
) -> Iterator[str]:
    previous = lines[0][0] - 1000 if lines else 0
    for at, line in lines:
        for step in range(noise):
            moment = previous + (at - previous) * step // max(1, noise)
            yield _noise_line(cluster, broker, moment)
        yield line
        previous = at
