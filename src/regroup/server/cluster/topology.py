"""Who leads what in a cluster of N brokers that share one store (pure: no I/O, no clock).

A fully replicated cluster: every broker is a replica of every partition, so a
stopped broker loses nothing; only leadership moves. Rules (Kafka's, where it has
them; the classes named are Apache Kafka 4.x's):

1. Nodes are ``0..N-1``; each may carry a rack (``broker.rack``).
2. A partition's replicas are every broker, starting at its preferred leader and
   going round: partition ``p`` of a topic prefers broker ``(start + p) % N``, where
   ``start`` is ``abs(hashCode(topic)) % N`` (Kafka's ``AdminUtils`` draws a random
   start; a hash keeps it deterministic). ``__consumer_offsets`` starts at 0, so its
   partition ``p`` prefers broker ``p % N``.
3. A broker that stops gives up every leadership it holds: each goes to the first
   live replica in replica order, and the partition's leader epoch grows by one
   (Kafka's controlled shutdown; ``PartitionLeaderElectionAlgorithms.
   controlledShutdownPartitionLeaderElection``). A partition with no live replica
   is offline: leader ``-1`` (Metadata says LEADER_NOT_AVAILABLE, FindCoordinator
   COORDINATOR_NOT_AVAILABLE) until a broker starts again and takes it.
4. A broker that starts takes back only the offline partitions; the others keep
   their leader (Kafka moves them back only at its next preferred-leader election,
   ``leader.imbalance.check.interval.seconds`` later; ``elect_preferred`` does it now).
5. ``move`` gives one partition to a live broker (an explicit reassignment), epoch + 1.
6. A group's coordinator is the leader of ``__consumer_offsets`` partition
   ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``
   (``GroupCoordinatorService.partitionFor``; ``regroup.brokerlog.partition``).

Every change returns the ``__consumer_offsets`` partitions whose leader changed:
the server unloads their groups from the old coordinator and loads them into the
new one (``regroup.server.cluster.brokers``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from regroup.brokerlog.partition import OFFSETS_TOPIC, coordinator_partition, java_string_hash

__all__ = ["NO_LEADER", "Node", "Topology"]

#: The leader of a partition no live broker can lead.
NO_LEADER = -1

_INT_MIN = -(2**31)


@dataclass(frozen=True, slots=True)
class Node:
    """One broker: its id, address and rack."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


def _start(topic: str, brokers: int) -> int:
    if topic == OFFSETS_TOPIC:
        return 0
    h = java_string_hash(topic)
    return (0 if h == _INT_MIN else abs(h)) % brokers


class Topology:
    """Rules 1-6 for ``brokers`` nodes and ``offsets_partitions`` ``__consumer_offsets``
    partitions; every broker starts live."""

    def __init__(
        self,
        brokers: int,
        *,
        offsets_partitions: int = 50,
        racks: Sequence[str] = (),
    ) -> None:
        if brokers < 1:
            raise ValueError(f"a cluster needs at least 1 broker, got {brokers}")
        if offsets_partitions < 1:
            raise ValueError(
                f"offsets.topic.num.partitions must be at least 1, got {offsets_partitions}"
            )
        if racks and len(racks) != brokers:
            raise ValueError(f"{len(racks)} racks for {brokers} brokers: give one per broker")
        self.brokers = brokers
        self.offsets_partitions = offsets_partitions
        self.racks: tuple[str | None, ...] = tuple(racks) if racks else (None,) * brokers
        self.live: set[int] = set(range(brokers))
        #: (topic, partition) -> (leader, leader epoch), for partitions whose leader is
        #: not the preferred one or whose epoch moved; the rest are derived (rule 2).
        self._moved: dict[tuple[str, int], tuple[int, int]] = {}

    # -- reading ---------------------------------------------------------------------------

    def replicas(self, topic: str, partition: int) -> list[int]:
        """Rule 2: every broker, preferred leader first."""
        first = (_start(topic, self.brokers) + partition) % self.brokers
        return [(first + i) % self.brokers for i in range(self.brokers)]

    def leader(self, topic: str, partition: int) -> tuple[int, int]:
        """(leader node or ``NO_LEADER``, leader epoch) of a partition."""
        moved = self._moved.get((topic, partition))
        if moved is not None:
            return moved
        replicas = self.replicas(topic, partition)
        if replicas[0] in self.live:
            return replicas[0], 0
        # A partition first seen while its preferred leader is stopped (a topic created
        # meanwhile) is led by the first live replica from then on, as Kafka elects it.
        first = next((r for r in replicas if r in self.live), NO_LEADER)
        self._moved[(topic, partition)] = (first, 0)
        return first, 0

    def leader_id(self, topic: str, partition: int) -> int:
        return self.leader(topic, partition)[0]

    def offsets_partition(self, group_id: str) -> int:
        """Rule 6: the ``__consumer_offsets`` partition of ``group_id``."""
        return coordinator_partition(group_id, self.offsets_partitions)

    def coordinator(self, group_id: str) -> int:
        """The node coordinating ``group_id`` (``NO_LEADER`` when its partition is offline)."""
        return self.leader_id(OFFSETS_TOPIC, self.offsets_partition(group_id))

    def isr(self) -> list[int]:
        """In-sync replicas: the live brokers (they share one store), in id order."""
        return sorted(self.live)

    # -- changing ---------------------------------------------------------------------------

    def _set(self, key: tuple[str, int], leader: int) -> None:
        _, epoch = self.leader(*key)
        self._moved[key] = (leader, epoch + 1)

    def stop(self, node: int, partitions: Sequence[tuple[str, int]]) -> list[int]:
        """Rule 3 for ``node`` over ``partitions`` (every partition of every topic, the
        offsets topic's included); the offsets partitions whose leader changed."""
        self._check(node)
        if node not in self.live:
            raise ValueError(f"broker {node} is already stopped")
        led = [key for key in partitions if self.leader_id(*key) == node]
        self.live.discard(node)
        moved: list[int] = []
        for key in led:
            new = next((r for r in self.replicas(*key) if r in self.live), NO_LEADER)
            self._set(key, new)
            if key[0] == OFFSETS_TOPIC:
                moved.append(key[1])
        return moved

    def start(self, node: int, partitions: Sequence[tuple[str, int]]) -> list[int]:
        """Rule 4: ``node`` is live again and takes the offline partitions it is a replica of."""
        self._check(node)
        if node in self.live:
            raise ValueError(f"broker {node} is already running")
        self.live.add(node)
        moved: list[int] = []
        for key in partitions:
            if self.leader_id(*key) == NO_LEADER:
                self._set(key, node)
                if key[0] == OFFSETS_TOPIC:
                    moved.append(key[1])
        return moved

    def move(self, topic: str, partition: int, node: int) -> bool:
        """Rule 5; whether the leader changed."""
        self._check(node)
        if node not in self.live:
            raise ValueError(f"broker {node} is stopped: it cannot lead {topic}-{partition}")
        if self.leader_id(topic, partition) == node:
            return False
        self._set((topic, partition), node)
        return True

    def elect_preferred(self, partitions: Sequence[tuple[str, int]]) -> list[int]:
        """Every partition whose preferred leader is live goes back to it (Kafka's
        preferred-leader election); the offsets partitions whose leader changed."""
        moved: list[int] = []
        for key in partitions:
            preferred = self.replicas(*key)[0]
            if preferred in self.live and self.leader_id(*key) != preferred:
                self._set(key, preferred)
                if key[0] == OFFSETS_TOPIC:
                    moved.append(key[1])
        return moved

    def offsets_keys(self) -> list[tuple[str, int]]:
        return [(OFFSETS_TOPIC, p) for p in range(self.offsets_partitions)]

    def _check(self, node: int) -> None:
        if not 0 <= node < self.brokers:
            raise ValueError(f"no broker {node} (brokers are 0..{self.brokers - 1})")
