"""The broker APIs that do not involve a group: one node that is the whole cluster.

ApiVersions, Metadata, FindCoordinator, CreateTopics, InitProducerId, Produce,
ListOffsets and Fetch, answered from the server's ``Log``. One node (id ``node_id``) leads every
partition, is every replica and every coordinator, as a single-broker Kafka
cluster would be; partition leader epochs are 0.

Rule 1: Metadata auto-creates a missing topic when the request allows it
(v4+ ``allow_auto_topic_creation``; always before v4) and the server's
``auto_create_topics`` is on, with ``default_partitions`` partitions, like
Kafka's ``auto.create.topics.enable`` / ``num.partitions``.
Rule 2: Metadata v10+ may name topics by id; an unknown id is
UNKNOWN_TOPIC_ID, an unknown name UNKNOWN_TOPIC_OR_PARTITION.
Rule 3: Produce with ``acks=0`` gets no response at all (Kafka sends none).
Rule 4: Fetch never returns null records (``b""``: kafka-python fails on
null), no fetch sessions (``session_id`` 0, KIP-227 "sessionless"), and an
offset outside ``[log start, high watermark]`` is OFFSET_OUT_OF_RANGE. A
partition listed more than once is read and answered once (``unique_partitions``).
Rule 5: ListOffsets: -2 earliest, -1 latest, -3 the max timestamp (KIP-734),
otherwise the first batch at or after the timestamp (batch grain).
Rule 6: Produce records that must be decompressed to be checked are checked in a
worker thread (``produce_checks``, then ``check_produce`` off the loop, then
``produce`` with its results on the loop), so a batch of a million small records
does not hold every other connection; the appends themselves happen on the loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.uuid import Uuid
from regroup.server.cluster.leader_epochs import ADVERTISED_RANGE as OFFSET_FOR_LEADER_EPOCH_RANGE
from regroup.server.cluster.topology import NO_LEADER, Node, Topology
from regroup.server.log.partitions import Log, TopicLog, check_client_batches
from regroup.server.log.record_batch import LOG_OVERHEAD, ClientBatch
from regroup.server.offsets_topic import DEFAULT_OFFSETS_PARTITIONS, is_internal
from regroup.server.wire.api_keys import ApiKey
from regroup.server.wire.codec import DecodedRequest, MalformedRequestError, response_class
from regroup.server.wire.kio_build import build, ms, to_uuid
from regroup.server.wire.versions import ADVERTISED

__all__ = [
    "Checked",
    "Cluster",
    "FetchPlan",
    "ProduceCheck",
    "check_produce",
    "check_produce_records",
]

#: One partition's records checked: its batches, or the error that refuses them all.
Checked = list[ClientBatch] | KafkaProtocolError


@dataclass(frozen=True, slots=True)
class ProduceCheck:
    """One partition's records of a Produce and what checking them depends on."""

    partition: tuple[str, int]
    records: bytes
    max_message_bytes: int
    #: The Produce request's version.
    version: int


def check_produce(jobs: Sequence[ProduceCheck]) -> dict[tuple[str, int], Checked]:
    """Rule 6: every partition's records checked; pure, so it may run in a worker thread."""
    out: dict[tuple[str, int], Checked] = {}
    for job in jobs:
        try:
            out[job.partition] = check_produce_records(
                job.records, job.max_message_bytes, job.version
            )
        except KafkaProtocolError as exc:
            out[job.partition] = exc
    return out


def check_produce_records(
    records: bytes, max_message_bytes: int, version: int
) -> list[ClientBatch]:
    """One partition's records in a Produce of ``version``, checked as Kafka checks them.

    First Kafka's ``ProduceRequest.validateRecords`` (from v3, which is every version
    regroup serves): walking the batch headers only, the records must hold exactly one
    batch, else ``INVALID_RECORD`` with Kafka's text (``KafkaApis.handleProduceRequest``
    answers it for that partition alone). A batch counts when its length field fits the
    bytes left, as Kafka's ``ByteBufferLogInputStream`` counts it; anything else is left to
    the batch checks. Then every batch as ``check_client_batches`` checks it (zstd only
    from v7).
    """
    if _whole_batches(records) > 1:
        raise KafkaProtocolError(
            ErrorCode.INVALID_RECORD,
            f"Produce requests with version {version} are only allowed to contain exactly "
            "one record batch per partition",
        )
    return check_client_batches(records, max_message_bytes, version >= 7)


def _whole_batches(records: bytes) -> int:
    """How many whole batches ``records`` holds, by their length fields alone."""
    count = pos = 0
    while len(records) - pos >= LOG_OVERHEAD:
        length = int.from_bytes(records[pos + 8 : pos + 12], "big", signed=True)
        size = length + LOG_OVERHEAD
        if length <= 0 or size > len(records) - pos:
            break
        count += 1
        pos += size
    return count


EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3


@dataclass(frozen=True, slots=True)
class FetchPlan:
    """How long a Fetch may wait, and how many bytes make it return early."""

    max_wait_ms: int
    min_bytes: int
    #: The (topic name, partition) pairs the Fetch reads, each with its
    #: ``partition_max_bytes``: what to wait for, and the most each may count
    #: towards ``min_bytes`` (Kafka's ``DelayedFetch.tryComplete``).
    partitions: Mapping[tuple[str, int], int] = field(default_factory=dict)


def unique_partitions(topics: Sequence[Any], by_id: bool) -> list[tuple[Any, list[Any]]]:
    """A Fetch's topics with each partition once: (request topic, its partitions).

    Kafka 4.x reads the request into one ``LinkedHashMap`` keyed by topic and
    partition (``FetchRequest.fetchData``; ``KafkaApis.handleFetchRequest``
    serves that map through a ``SessionlessFetchContext`` or ``FullFetchContext``,
    ``FetchSession.scala``): a partition listed again keeps the place of its
    first listing and takes the fetch offset and limits of its last one, and it
    is read and answered once. ``FetchResponse.toMessage`` then puts consecutive
    partitions of one topic under one topic entry. Topics are keyed by name
    before v13 and by id from v13.
    """
    latest: dict[tuple[Any, int], tuple[Any, Any]] = {}
    for topic in topics:
        key = topic.topic_id if by_id else topic.topic
        for partition in topic.partitions:
            # A dict keeps the first insertion's place and the last value: LinkedHashMap.put.
            latest[(key, partition.partition)] = (topic, partition)
    grouped: list[tuple[Any, list[Any]]] = []
    last_key: Any = None
    for (key, _), (topic, partition) in latest.items():
        if grouped and key == last_key:
            grouped[-1][1].append(partition)
        else:
            grouped.append((topic, [partition]))
            last_key = key
    return grouped


class Cluster:
    """Answers the non-group APIs for a one-node cluster."""

    #: ``offsets.topic.num.partitions``: the partitions ``__consumer_offsets`` is created
    #: with when a Metadata request names it first (``regroup.server.offsets_topic``).
    offsets_topic_num_partitions: int = DEFAULT_OFFSETS_PARTITIONS

    def __init__(
        self,
        log: Log,
        *,
        host: str,
        port: int,
        node_id: int = 0,
        cluster_id: str = "regroup-cluster",
        auto_create_topics: bool = True,
        default_partitions: int = 1,
        on_topics_changed: Callable[[], None] | None = None,
        fetch_max_bytes: int = 57_671_680,
    ) -> None:
        self.log = log
        self.host = host
        self.port = port
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.auto_create_topics = auto_create_topics
        self.default_partitions = default_partitions
        self.on_topics_changed = on_topics_changed or (lambda: None)
        #: Kafka's ``fetch.max.bytes``: the most record bytes in one Fetch response.
        self.fetch_max_bytes = fetch_max_bytes
        self._next_producer_id = int(time.time()) << 16
        #: Several brokers in one process (``regroup.server.cluster``): who leads what, and
        #: each node's address. ``None``: this node is the whole cluster.
        self.topology: Topology | None = None
        self.nodes: list[Node] = []

    # -- ApiVersions (18) ---------------------------------------------------------------

    def api_versions(self, req: DecodedRequest) -> Any:
        return build(
            response_class(18, req.api_version),
            {
                "error_code": ErrorCode.NONE,
                "api_keys": [
                    {"api_key": key, "min_version": low, "max_version": high}
                    for key, (low, high) in sorted(self._advertised().items())
                ],
                "throttle_time": 0,
                "supported_features": (),
                "finalized_features_epoch": -1,
                "finalized_features": (),
                "zk_migration_ready": False,
            },
        )

    def _advertised(self) -> dict[int, tuple[int, int]]:
        """``ADVERTISED``; several brokers add OffsetForLeaderEpoch, which their leader
        epochs need (``regroup.server.cluster.leader_epochs``)."""
        if self.topology is None:
            return dict(ADVERTISED)
        return {**ADVERTISED, ApiKey.OFFSET_FOR_LEADER_EPOCH: OFFSET_FOR_LEADER_EPOCH_RANGE}

    # -- Metadata (3) -------------------------------------------------------------------

    def _partitions(self, topic: TopicLog) -> list[dict[str, Any]]:
        if self.topology is not None:
            return self._cluster_partitions(topic, self.topology)
        node = self.node_id
        return [
            {
                "error_code": ErrorCode.NONE,
                "partition_index": index,
                "leader_id": node,
                "leader_epoch": 0,
                "replica_nodes": (node,),
                "isr_nodes": (node,),
                "offline_replicas": (),
            }
            for index in range(len(topic.partitions))
        ]

    @staticmethod
    def _cluster_partitions(topic: TopicLog, topology: Topology) -> list[dict[str, Any]]:
        """Each partition's leader and epoch, every broker a replica, the live ones in sync
        (``regroup.server.cluster.topology``); LEADER_NOT_AVAILABLE while none is live."""
        out = []
        for index in range(len(topic.partitions)):
            leader, epoch = topology.leader(topic.name, index)
            replicas = topology.replicas(topic.name, index)
            out.append(
                {
                    "error_code": ErrorCode.LEADER_NOT_AVAILABLE
                    if leader == NO_LEADER
                    else ErrorCode.NONE,
                    "partition_index": index,
                    "leader_id": leader,
                    "leader_epoch": epoch,
                    "replica_nodes": tuple(replicas),
                    "isr_nodes": tuple(r for r in replicas if r in topology.live),
                    "offline_replicas": tuple(r for r in replicas if r not in topology.live),
                }
            )
        return out

    def _brokers(self) -> tuple[list[dict[str, Any]], int]:
        """Metadata's brokers (the live ones, as Kafka lists them) and its controller."""
        topology = self.topology
        if topology is None:
            me = {"node_id": self.node_id, "host": self.host, "port": self.port, "rack": None}
            return [me], self.node_id
        live = [n for n in self.nodes if n.node_id in topology.live]
        brokers = [
            {"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack} for n in live
        ]
        return brokers, (live[0].node_id if live else -1)

    def _coordinator(self, key: str) -> dict[str, Any]:
        """FindCoordinator's answer for one group: its ``__consumer_offsets`` partition's
        leader, or COORDINATOR_NOT_AVAILABLE while that partition has none (Kafka's
        ``KafkaApis.getCoordinator``)."""
        topology = self.topology
        if topology is None:
            return {
                "node_id": self.node_id,
                "host": self.host,
                "port": self.port,
                "error_code": ErrorCode.NONE,
            }
        leader = topology.coordinator(key)
        if leader == NO_LEADER:
            return {
                "node_id": -1,
                "host": "",
                "port": -1,
                "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
            }
        found = self.nodes[leader]
        return {
            "node_id": found.node_id,
            "host": found.host,
            "port": found.port,
            "error_code": ErrorCode.NONE,
        }

    def _topic_entry(self, topic: TopicLog) -> dict[str, Any]:
        return {
            "error_code": ErrorCode.NONE,
            "name": topic.name,
            "topic_id": topic.topic_id,
            "is_internal": is_internal(topic.name),
            "partitions": self._partitions(topic),
            "topic_authorized_operations": -(2**31),
        }

    def metadata(self, req: DecodedRequest) -> Any:
        body, version = req.body, req.api_version
        allow_create = bool(getattr(body, "allow_auto_topic_creation", True))
        requested = body.topics
        if requested is None or (version == 0 and not requested):
            entries = [self._topic_entry(t) for t in self.log.topics.values()]
        else:
            entries = []
            created: set[str] = set()
            for wanted in requested:
                name = wanted.name
                topic_id = to_uuid(getattr(wanted, "topic_id", None))
                if name is None and version < 12:
                    # Kafka's KafkaApis: the response has no null name before v12.
                    raise MalformedRequestError(
                        f"Topic name can not be null for version {version}", 3, version
                    )
                if name is None:
                    topic = self.log.topic_by_id(topic_id)
                    if topic is None:
                        entries.append(self._missing(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID))
                        continue
                else:
                    topic = self.log.topic(name)
                    if topic is None and allow_create and self.auto_create_topics:
                        try:
                            partitions = (
                                self.offsets_topic_num_partitions
                                if is_internal(name)
                                else self.default_partitions
                            )
                            topic = self.log.create_topic(name, partitions, save=False)
                            created.add(name)
                        except KafkaProtocolError as exc:
                            entries.append(self._missing(name, Uuid.ZERO, exc.code))
                            continue
                    if topic is None:
                        entries.append(
                            self._missing(name, Uuid.ZERO, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                        )
                        continue
                entries.append(self._topic_entry(topic))
            if created:
                try:
                    self.log.save_catalog()
                except KafkaProtocolError as exc:  # a full disk: none of them was created
                    entries = [
                        self._missing(e["name"], Uuid.ZERO, exc.code) if e["name"] in created else e
                        for e in entries
                    ]
                else:
                    self.on_topics_changed()
        brokers, controller = self._brokers()
        return build(
            response_class(3, version),
            {
                "throttle_time": 0,
                "brokers": brokers,
                "cluster_id": self.cluster_id,
                "controller_id": controller,
                "topics": entries,
                "cluster_authorized_operations": -(2**31),
            },
        )

    @staticmethod
    def _missing(name: str | None, topic_id: Uuid, code: ErrorCode) -> dict[str, Any]:
        return {
            "error_code": code,
            "name": name,
            "topic_id": topic_id,
            "is_internal": False,
            "partitions": (),
            "topic_authorized_operations": -(2**31),
        }

    # -- FindCoordinator (10) -----------------------------------------------------------

    def find_coordinator(self, req: DecodedRequest) -> Any:
        body, version = req.body, req.api_version
        if version < 4:
            answer = self._coordinator(body.key)
            values: dict[str, Any] = {
                "throttle_time": 0,
                "error_code": answer.pop("error_code"),
                "error_message": None,
                **answer,
            }
        else:
            values = {
                "throttle_time": 0,
                "coordinators": [
                    {"key": key, **self._coordinator(key), "error_message": None}
                    for key in body.coordinator_keys
                ],
            }
        return build(response_class(10, version), values)

    # -- CreateTopics (19) --------------------------------------------------------------

    def create_topics(self, req: DecodedRequest) -> Any:
        body, version = req.body, req.api_version
        results = []
        created = False
        for wanted in body.topics:
            partitions = wanted.num_partitions
            if partitions == -1:
                partitions = len(wanted.assignments) or self.default_partitions
            code, message, topic_id = ErrorCode.NONE, None, Uuid.ZERO
            try:
                if wanted.replication_factor not in (-1, 1):
                    raise KafkaProtocolError(
                        ErrorCode.INVALID_REPLICATION_FACTOR,
                        f"replication factor {wanted.replication_factor} > 1 broker",
                    )
                if body.validate_only:
                    if wanted.name in self.log.topics:
                        raise KafkaProtocolError(ErrorCode.TOPIC_ALREADY_EXISTS)
                else:
                    created_topic = self.log.create_topic(wanted.name, partitions, save=False)
                    topic_id = created_topic.topic_id
                    created = True
            except KafkaProtocolError as exc:
                code, message = exc.code, exc.message
            results.append(
                {
                    "name": wanted.name,
                    "topic_id": topic_id,
                    "error_code": code,
                    "error_message": message,
                    "topic_config_error_code": ErrorCode.NONE,
                    "num_partitions": partitions if code == ErrorCode.NONE else -1,
                    "replication_factor": 1 if code == ErrorCode.NONE else -1,
                    "configs": (),
                }
            )
        if created:
            try:
                self.log.save_catalog()
            except KafkaProtocolError as exc:  # a full disk: none of them was created
                for result in results:
                    if result["error_code"] == ErrorCode.NONE and not body.validate_only:
                        result.update(
                            error_code=exc.code,
                            error_message=exc.message,
                            topic_id=Uuid.ZERO,
                            num_partitions=-1,
                            replication_factor=-1,
                        )
            else:
                self.on_topics_changed()
        return build(response_class(19, version), {"throttle_time": 0, "topics": results})

    # -- InitProducerId (22) -----------------------------------------------------------

    def init_producer_id(self, req: DecodedRequest) -> Any:
        """A fresh producer id, epoch 0 (KIP-98 idempotence; no transactions, no sequence checks).

        Ids count up from the current wall-clock second, so they differ across restarts.
        """
        self._next_producer_id += 1
        return build(
            response_class(22, req.api_version),
            {
                "throttle_time": 0,
                "error_code": ErrorCode.NONE,
                "producer_id": self._next_producer_id,
                "producer_epoch": 0,
            },
        )

    # -- Produce (0) --------------------------------------------------------------------

    def produce_checks(self, req: DecodedRequest) -> list[ProduceCheck]:
        """What ``check_produce`` needs of each existing partition's records (read on the loop)."""
        jobs = []
        for topic_data in req.body.topic_data:
            for pdata in topic_data.partition_data:
                partition = self.log.partition(topic_data.name, pdata.index)
                if partition is not None and pdata.records and not is_internal(topic_data.name):
                    jobs.append(
                        ProduceCheck(
                            (topic_data.name, pdata.index),
                            bytes(pdata.records),
                            partition.max_message_bytes,
                            req.api_version,
                        )
                    )
        return jobs

    def produce(
        self, req: DecodedRequest, checked: Mapping[tuple[str, int], Checked] | None = None
    ) -> tuple[Any | None, list[tuple[str, int, int, int, int]]]:
        """The response (``None`` for acks=0, rule 3) and, per partition appended to,
        (topic, partition, record count, end offset, bytes appended).

        ``checked``: ``check_produce``'s results for the request's partitions, when it ran
        in a worker thread; otherwise each partition's records are checked here.
        """
        body, version = req.body, req.api_version
        appended: list[tuple[str, int, int, int, int]] = []
        topics = []
        for topic_data in body.topic_data:
            partitions = []
            for pdata in topic_data.partition_data:
                partition = self.log.partition(topic_data.name, pdata.index)
                code, message, base = ErrorCode.NONE, None, -1
                if partition is None:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif is_internal(topic_data.name):  # ``regroup.server.offsets_topic`` rule 4
                    code = ErrorCode.INVALID_TOPIC_EXCEPTION
                    message = f"Cannot append to internal topic {topic_data.name}"
                elif pdata.records:
                    try:
                        before = partition.next_offset
                        records = bytes(pdata.records)
                        ready = (
                            check_produce_records(records, partition.max_message_bytes, version)
                            if checked is None
                            else checked[(topic_data.name, pdata.index)]
                        )
                        if isinstance(ready, KafkaProtocolError):
                            raise ready
                        base = partition.append(records, checked=ready)
                        count = partition.next_offset - before
                        size = sum(len(batch.data) for batch in ready)
                        appended.append(
                            (topic_data.name, pdata.index, count, partition.next_offset, size)
                        )
                    except KafkaProtocolError as exc:
                        code, message = exc.code, exc.message
                partitions.append(
                    {
                        "index": pdata.index,
                        "error_code": code,
                        "base_offset": base,
                        "log_append_time": -1,
                        "log_start_offset": 0 if partition is None else partition.start_offset,
                        "record_errors": (),
                        "error_message": message,
                    }
                )
            topics.append({"name": topic_data.name, "partition_responses": partitions})
        if body.acks == 0:
            return None, appended
        response = build(
            response_class(0, version),
            {"responses": topics, "throttle_time": 0, "node_endpoints": ()},
        )
        return response, appended

    # -- ListOffsets (2) ----------------------------------------------------------------

    def list_offsets(self, req: DecodedRequest) -> Any:
        body, version = req.body, req.api_version
        topics = []
        for topic in body.topics:
            partitions = []
            for p in topic.partitions:
                log = self.log.partition(topic.name, p.partition_index)
                code, timestamp, offset = ErrorCode.NONE, -1, -1
                if log is None:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif p.timestamp == EARLIEST_TIMESTAMP:
                    offset = log.start_offset
                elif p.timestamp == LATEST_TIMESTAMP:
                    offset = log.high_watermark
                elif p.timestamp == MAX_TIMESTAMP:
                    timestamp, offset = log.max_timestamp()
                else:
                    found = log.offset_for_timestamp(p.timestamp)
                    if found is not None:
                        timestamp, offset = p.timestamp, found
                partitions.append(
                    {
                        "partition_index": p.partition_index,
                        "error_code": code,
                        "timestamp": timestamp,
                        "offset": offset,
                        "leader_epoch": 0
                        if self.topology is None
                        else self.topology.leader(topic.name, p.partition_index)[1],
                    }
                )
            topics.append({"name": topic.name, "partitions": partitions})
        return build(response_class(2, version), {"throttle_time": 0, "topics": topics})

    # -- Fetch (1) ----------------------------------------------------------------------

    def fetch_plan(self, req: DecodedRequest) -> FetchPlan:
        body = req.body
        by_id = req.api_version >= 13
        wanted: dict[tuple[str, int], int] = {}
        for topic, partitions in unique_partitions(body.topics, by_id):
            found = (
                self.log.topic_by_id(to_uuid(topic.topic_id))
                if by_id
                else self.log.topic(topic.topic)
            )
            if found is not None:
                for p in partitions:
                    wanted[(found.name, p.partition)] = max(0, p.partition_max_bytes)
        return FetchPlan(max(0, ms(body.max_wait)), max(0, body.min_bytes), wanted)

    def fetch(self, req: DecodedRequest) -> tuple[Any, int]:
        """The response and the number of record bytes in it (rule 4)."""
        body, version = req.body, req.api_version
        by_id = version >= 13
        # KIP-74: at most min(max_bytes, fetch.max.bytes); the first batch of the first
        # partition with data even when larger, nothing above the limit after it.
        budget = max(0, min(body.max_bytes, self.fetch_max_bytes))
        total = 0
        responses = []
        for topic, topic_partitions in unique_partitions(body.topics, by_id):
            if by_id:
                topic_id = to_uuid(topic.topic_id)
                found = self.log.topic_by_id(topic_id)
                missing = ErrorCode.UNKNOWN_TOPIC_ID
            else:
                found = self.log.topic(topic.topic)
                missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            partitions = []
            for p in topic_partitions:
                code, records, hwm, start = ErrorCode.NONE, b"", -1, -1
                log = None
                if found is not None and 0 <= p.partition < len(found.partitions):
                    log = found.partitions[p.partition]
                if log is None:
                    code = missing if found is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    hwm, start = log.high_watermark, log.start_offset
                    if not start <= p.fetch_offset <= hwm:
                        code = ErrorCode.OFFSET_OUT_OF_RANGE
                    elif p.fetch_offset < hwm:
                        limit = max(0, min(p.partition_max_bytes, budget))
                        records = log.read(p.fetch_offset, limit, min_one=total == 0)
                        budget -= len(records)
                        total += len(records)
                partitions.append(
                    {
                        "partition_index": p.partition,
                        "error_code": code,
                        "high_watermark": hwm,
                        "last_stable_offset": hwm,
                        "log_start_offset": start,
                        "aborted_transactions": None,
                        "preferred_read_replica": -1,
                        "records": records,
                    }
                )
            key = {"topic_id": topic.topic_id} if by_id else {"topic": topic.topic}
            responses.append({**key, "partitions": partitions})
        response = build(
            response_class(1, version),
            {
                "throttle_time": 0,
                "error_code": ErrorCode.NONE,
                "session_id": 0,
                "responses": responses,
                "node_endpoints": (),
            },
        )
        return response, total
