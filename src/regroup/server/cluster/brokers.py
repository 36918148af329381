"""N brokers in one process: one server, one store and one coordinator, N listeners.

``regroup serve --brokers N`` (``ServerOptions.brokers``) runs nodes ``0..N-1`` in
one ``RegroupServer``: each node has its own listening port (``--port P`` gives
``P..P+N-1``, port 0 a free port each), and every connection belongs to the node
whose port it reached. The nodes share the partition log and the coordinator's
store, so they are a fully replicated cluster whose replicas never lag: a stopped
broker loses nothing. What is per node is leadership (``topology``): which node
leads each partition, hence which coordinates each group, and what a request sent
to another node gets (``routing``).

Stopping a broker (``stop_broker``), as Kafka's controlled shutdown does:

1. its listening sockets close (new connections are refused) and so does every
   connection to it; the requests it had parked end with their connections;
2. every partition it led goes to the first live replica (``topology`` rule 3);
3. the groups of every ``__consumer_offsets`` partition whose leader changed are
   unloaded and loaded again from their records (``GroupCoordinator.reload``):
   whatever waited on them (a JoinGroup, a SyncGroup) is answered NOT_COORDINATOR,
   and they come back as the new leader's coordinator loads them, timers armed afresh
   (Kafka's ``onLoaded``: a new session timeout for every member), classic members at
   their generation and KIP-848 members at their epochs. A rebalance that no record
   describes yet (a classic join under way) is lost with the old coordinator, as on
   Kafka: its members join again. The broker log gets Kafka's ``Loaded ... group``
   lines.

``start_broker`` listens again on the same port; the broker takes back only the
partitions no live broker could lead (``topology`` rule 4). ``move_coordinator``
and ``move_leader`` move one ``__consumer_offsets`` partition (with every group on
it) or one partition to a live broker, with step 3 for the former.

What one process cannot be: timers of a group whose ``__consumer_offsets``
partition has no live leader still run (there is one coordinator), and the
durability across a whole-process restart is one data directory's, as on one broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from regroup.brokerlog.partition import OFFSETS_TOPIC
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.service import GroupCoordinator
from regroup.model.errors import ErrorCode
from regroup.model.uuid import Uuid
from regroup.server.apis.cluster import Cluster
from regroup.server.cluster.routing import ClusterRouter
from regroup.server.cluster.topology import NO_LEADER, Node, Topology
from regroup.server.control.faults import RequestFaults
from regroup.server.coordinator_log import CoordinatorLogSink
from regroup.server.log.partitions import Log
from regroup.server.net.acceptor import Acceptor, bind_listening_sockets
from regroup.server.net.connection import ConnectionState, Interceptor

__all__ = ["Brokers", "ClusteredServer"]

logger = logging.getLogger("regroup.server")


class _Closable(Protocol):
    state: ConnectionState

    def close(self) -> None: ...


class ClusteredServer(Protocol):
    """What ``Brokers`` needs of ``app.RegroupServer`` (which it cannot import)."""

    coordinator: GroupCoordinator
    cluster: Cluster
    log: Log
    broker_log: CoordinatorLogSink
    faults: Interceptor | None

    def now_ms(self) -> int: ...
    def apply(self, result: CoordinatorResult) -> None: ...
    def listen_socket(self, sock: Any, factory: Callable[[], asyncio.Protocol]) -> Acceptor: ...
    async def close_acceptor(self, acceptor: Acceptor) -> None: ...
    def new_connection(self) -> _Closable: ...
    @property
    def connections(self) -> Iterable[_Closable]: ...


@dataclass(slots=True)
class _Listener:
    node: Node
    acceptors: list[Acceptor] = field(default_factory=list)


class Brokers:
    """The nodes of one server, their listeners and their leaderships (module docstring)."""

    def __init__(
        self,
        server: ClusteredServer,
        brokers: int,
        *,
        host: str,
        port: int,
        racks: Sequence[str] = (),
        offsets_partitions: int = 50,
    ) -> None:
        self.server = server
        self.topology = Topology(brokers, offsets_partitions=offsets_partitions, racks=racks)
        self.host = host
        self.first_port = port
        self._listeners: dict[int, _Listener] = {}
        #: The node of each connection, by connection id.
        self._node_of_conn: dict[int, int] = {}
        #: Restarts of timed outages under way (held so that they are not collected).
        self._restarts: set[asyncio.Task[None]] = set()
        self.router = ClusterRouter(
            self.topology,
            self.node_of,
            self._exists,
            self._name_of,
            self._log_end,
            inner=server.faults,
        )
        if isinstance(server.faults, RequestFaults):  # paired errors per broker
            server.faults.node_ids = frozenset(range(brokers))
            server.faults.node_of = self.node_of
        server.faults = self.router
        server.cluster.topology = self.topology
        server.broker_log.follow(self.topology.coordinator, offsets_partitions)

    # -- listeners and connections -------------------------------------------------------

    def listen(self) -> None:
        """Bind every node's port (rule of the module docstring) and start accepting."""
        nodes = []
        for node_id in range(self.topology.brokers):
            port = 0 if self.first_port == 0 else self.first_port + node_id
            sockets = bind_listening_sockets(self.host, port)
            port = int(sockets[0].getsockname()[1])
            node = Node(node_id, self.host, port, self.topology.racks[node_id])
            listener = self._listeners[node_id] = _Listener(node)
            self._accept(listener, sockets)
            nodes.append(node)
            logger.info("regroup broker %d serving on %s:%d", node_id, self.host, port)
        self.server.cluster.nodes = nodes
        self.server.cluster.port = nodes[0].port

    def _accept(self, listener: _Listener, sockets: list[Any]) -> None:
        node_id = listener.node.node_id
        for sock in sockets:
            listener.acceptors.append(
                self.server.listen_socket(sock, lambda: self._connection(node_id))
            )

    def _connection(self, node_id: int) -> asyncio.Protocol:
        protocol = self.server.new_connection()
        self._node_of_conn[protocol.state.conn_id] = node_id
        assert isinstance(protocol, asyncio.Protocol)
        return protocol

    def node_of(self, conn: ConnectionState) -> int:
        return self._node_of_conn.get(conn.conn_id, 0)

    @property
    def nodes(self) -> list[Node]:
        return [listener.node for listener in self._listeners.values()]

    def _exists(self, topic: str, partition: int) -> bool:
        return self.server.log.partition(topic, partition) is not None

    def _log_end(self, topic: str, partition: int) -> int | None:
        found = self.server.log.partition(topic, partition)
        return None if found is None else found.high_watermark

    def _name_of(self, topic_id: Uuid) -> str | None:
        found = self.server.log.topic_by_id(topic_id)
        return None if found is None else found.name

    def _partitions(self) -> list[tuple[str, int]]:
        keys = [
            (name, index)
            for name, topic in self.server.log.topics.items()
            if name != OFFSETS_TOPIC  # its partitions are the topology's own, listed first
            for index in range(len(topic.partitions))
        ]
        return [*self.topology.offsets_keys(), *keys]

    # -- stopping and starting ------------------------------------------------------------

    def _node(self, node_id: int) -> _Listener:
        listener = self._listeners.get(int(node_id))
        if listener is None:
            raise ValueError(f"no broker {node_id} (brokers are 0..{self.topology.brokers - 1})")
        return listener

    async def stop_broker(
        self, node_id: int, keep: ConnectionState | None = None
    ) -> dict[str, Any]:
        """Steps 1-3 of the module docstring; what moved. Every connection to the broker
        closes but ``keep``: the control connection that asked, kept for its answer
        (``regroup ctl`` then hangs up)."""
        listener = self._node(node_id)
        if node_id not in self.topology.live:
            raise ValueError(f"broker {node_id} is already stopped")
        if len(self.topology.live) == 1:
            raise ValueError(f"broker {node_id} is the last one running: stop the server instead")
        acceptors, listener.acceptors = listener.acceptors, []
        for acceptor in acceptors:
            await self.server.close_acceptor(acceptor)
        closed = 0
        for protocol in list(self.server.connections):
            if self.node_of(protocol.state) == node_id and protocol.state is not keep:
                protocol.close()
                closed += 1
        live = {p.state.conn_id for p in self.server.connections}
        self._node_of_conn = {c: n for c, n in self._node_of_conn.items() if c in live}
        moved = self.topology.stop(node_id, self._partitions())
        groups = self._failover(moved)
        logger.info(
            "broker %d stopped: %d connections closed, %d __consumer_offsets partitions and "
            "%d groups moved",
            node_id,
            closed,
            len(moved),
            len(groups),
        )
        return {"broker": node_id, "connections_closed": closed, "groups_moved": groups}

    async def start_broker(self, node_id: int) -> dict[str, Any]:
        """Listen again on the broker's port; it leads what no live broker could."""
        listener = self._node(node_id)
        if node_id in self.topology.live:
            raise ValueError(f"broker {node_id} is already running")
        sockets = bind_listening_sockets(listener.node.host, listener.node.port)
        self._accept(listener, sockets)
        moved = self.topology.start(node_id, self._partitions())
        groups = self._failover(moved)
        logger.info("broker %d started", node_id)
        return {"broker": node_id, "groups_moved": groups}

    async def broker_outage(
        self, node_id: int, seconds: float, keep: ConnectionState | None = None
    ) -> dict[str, Any]:
        """Stop the broker now and start it again ``seconds`` later (librdkafka's mock
        ``broker down`` then ``up``); returns once it is stopped, with what moved."""
        stopped = await self.stop_broker(node_id, keep)
        loop = asyncio.get_running_loop()

        def restart() -> None:
            task = loop.create_task(self._start_quietly(node_id))
            self._restarts.add(task)
            task.add_done_callback(self._restarts.discard)

        loop.call_later(max(0.0, float(seconds)), restart)
        return {**stopped, "restart_in_s": float(seconds)}

    async def _start_quietly(self, node_id: int) -> None:
        with contextlib.suppress(ValueError):  # started meanwhile by someone else
            await self.start_broker(node_id)

    # -- leaders and coordinators ----------------------------------------------------------

    def coordinator_of(self, group_id: str) -> int:
        """The node coordinating ``group_id`` (-1 while its partition has no live leader)."""
        return self.topology.coordinator(group_id)

    def move_coordinator(self, group_id: str, node_id: int) -> dict[str, Any]:
        """Move the ``__consumer_offsets`` partition of ``group_id``, with every group on it,
        to ``node_id``; the groups moved."""
        partition = self.topology.offsets_partition(group_id)
        self._node(node_id)
        changed = self.topology.move(OFFSETS_TOPIC, partition, int(node_id))
        groups = self._failover([partition] if changed else [])
        return {"partition": partition, "broker": int(node_id), "groups_moved": groups}

    def move_leader(self, topic: str, partition: int, node_id: int) -> dict[str, Any]:
        """Make ``node_id`` the leader of ``topic``-``partition``; its new leader epoch."""
        self._node(node_id)
        if topic != OFFSETS_TOPIC and not self._exists(topic, int(partition)):
            raise ValueError(f"no partition {topic}-{partition}")
        if topic == OFFSETS_TOPIC and not 0 <= int(partition) < self.topology.offsets_partitions:
            raise ValueError(f"no partition {topic}-{partition}")
        changed = self.topology.move(topic, int(partition), int(node_id))
        groups = self._failover([int(partition)] if changed and topic == OFFSETS_TOPIC else [])
        _, epoch = self.topology.leader(topic, int(partition))
        return {"leader": int(node_id), "leader_epoch": epoch, "groups_moved": groups}

    def describe(self) -> dict[str, Any]:
        """Every broker (address, rack, running) and the offsets partitions each leads."""
        led: dict[int, list[int]] = {}
        for partition in range(self.topology.offsets_partitions):
            leader = self.topology.leader_id(OFFSETS_TOPIC, partition)
            led.setdefault(leader, []).append(partition)
        return {
            "brokers": [
                {
                    "id": n.node_id,
                    "host": n.host,
                    "port": n.port,
                    "rack": n.rack,
                    "running": n.node_id in self.topology.live,
                    "offsets_partitions": led.get(n.node_id, []),
                }
                for n in self.nodes
            ],
            "offline_offsets_partitions": led.get(NO_LEADER, []),
        }

    def _failover(self, partitions: Sequence[int]) -> list[str]:
        """Step 3 for the groups of ``partitions``: unloaded, then loaded by the new leader."""
        if not partitions:
            return []
        wanted = set(partitions)
        coordinator = self.server.coordinator
        groups = sorted(
            g for g in coordinator.known_group_ids() if self.topology.offsets_partition(g) in wanted
        )
        if not groups:
            return []
        now = self.server.now_ms()
        result = coordinator.reload(groups, ErrorCode.NOT_COORDINATOR, now)
        loaded = [g for g in (coordinator.group(gid) for gid in groups) if g is not None]
        self.server.broker_log.loaded(now, loaded)
        self.server.apply(result)
        return groups
