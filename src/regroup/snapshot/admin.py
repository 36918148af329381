"""Gather a live group through confluent-kafka's ``AdminClient`` (librdkafka).

Why confluent-kafka: of the Kafka clients for Python, only librdkafka's Admin API
describes KIP-848 consumer groups. ``AdminClient.describe_consumer_groups`` sends
ConsumerGroupDescribe (API 69) and falls back to DescribeGroups (API 15) for a classic
group, and reports the group's type, state, assignor and each member's id,
``group.instance.id``, client id, host, assignment and (KIP-848) target assignment.
kafka-python 3.0's ``KafkaAdminClient`` has no ConsumerGroupDescribe (it sends
DescribeGroups only, which describes no KIP-848 member) and aiokafka has no KIP-848 at
all. librdkafka also takes Kafka's client configs by their names, so the SASL and TLS
properties of ``--command-config`` pass through unchanged. What it leaves out: the
epochs: librdkafka 2.16 does not surface ConsumerGroupDescribe's group, assignment and
member epochs, nor the generation a classic member reports in its Subscription. Those
are read by a second describe on the coordinator through regroup's own wire client
(``wire_describe``), best effort: when it fails the snapshot says the epochs are
unknown. Neither describe carries the classic members' session and rebalance timeouts.

The calls, each bounded by ``timeout`` seconds (a future that does not complete in
time is an unreachable cluster, never a hang): Metadata (``list_topics``), ListGroups
v5 with the group types (``list_consumer_groups``), the describe, OffsetFetch
(``list_consumer_group_offsets``), ListOffsets ``latest`` twice (``list_offsets``,
``sample_seconds`` apart) and DescribeConfigs of the coordinator broker and of the group
(``describe_configs``; a broker that has no DescribeConfigs leaves the configs to the
scenario's defaults, and the snapshot says so).

A broker that answers ConsumerGroupDescribe for a classic group as if it were a
consumer group, where Kafka answers GROUP_ID_NOT_FOUND (Tansu 0.6.0 does: no members
and the member id as the assignor), would give librdkafka nothing to fall back on. When
ListGroups says the group is classic and the describe says otherwise, the group is
described again with DescribeGroups v5 on its coordinator, through regroup's own wire
client, and the snapshot notes it.

Errors are ``SnapshotError`` with Kafka's words: ``GroupIdNotFoundException: Consumer
group 'G' does not exist.``, ``GroupAuthorizationException: Not authorized to access
group: G``, and librdkafka's own text for a transport or authentication failure.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

from regroup.snapshot.model import (
    ConfigValue,
    GroupView,
    MemberView,
    Sample,
    Snapshot,
    SnapshotError,
    TopicPartition,
)

__all__ = ["SnapshotError", "gather", "librdkafka_config"]

T = TypeVar("T")

#: Kafka's state names for librdkafka's ``ConsumerGroupState``.
_STATES = {
    "UNKNOWN": "Unknown",
    "PREPARING_REBALANCING": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance",
    "STABLE": "Stable",
    "DEAD": "Dead",
    "EMPTY": "Empty",
}

#: librdkafka error names that mean the cluster could not be reached.
_UNREACHABLE = {"_TRANSPORT", "_ALL_BROKERS_DOWN", "_TIMED_OUT", "_RESOLVE"}


def librdkafka_config(
    bootstrap: str, security: Mapping[str, str], timeout: float
) -> dict[str, Any]:
    """The AdminClient's configuration: the bootstrap, the security properties by their
    Kafka names, librdkafka's own log lines off (errors come back as exceptions), and
    every connection attempt bounded by ``timeout``."""
    millis = max(1000, int(timeout * 1000))
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "client.id": "regroup-snapshot",
        "log_level": 0,
        "socket.connection.setup.timeout.ms": millis,
        "socket.timeout.ms": millis,
    }
    config.update(security)
    return config


def _kafka_error(exc: BaseException) -> Any | None:
    """The ``KafkaError`` an exception of confluent-kafka carries, if any."""
    args = getattr(exc, "args", ())
    if args and hasattr(args[0], "name") and hasattr(args[0], "str"):
        return args[0]
    return None


class _Calls:
    """The AdminClient with each call bounded and its errors in Kafka's words."""

    def __init__(self, admin: Any, bootstrap: str, group_id: str, timeout: float) -> None:
        self.admin = admin
        self.bootstrap = bootstrap
        self.group_id = group_id
        self.timeout = timeout

    def wait(self, what: str, future: concurrent.futures.Future[T]) -> T:
        try:
            return future.result(timeout=self.timeout + 1)
        except concurrent.futures.TimeoutError:
            raise self.unreachable(what, None) from None
        except Exception as exc:
            raise self.error(what, exc) from None

    def unreachable(self, what: str, detail: str | None) -> SnapshotError:
        tail = f": {detail}" if detail else ""
        return SnapshotError(
            f"TimeoutException: no answer from {self.bootstrap} to {what} "
            f"within {self.timeout:g} s{tail}"
        )

    def error(self, what: str, exc: BaseException) -> SnapshotError:
        err = _kafka_error(exc)
        if err is None:
            return SnapshotError(f"{what}: {exc}")
        name = err.name()
        if name in _UNREACHABLE:
            return self.unreachable(what, err.str())
        if name == "GROUP_AUTHORIZATION_FAILED":
            return SnapshotError(
                f"GroupAuthorizationException: Not authorized to access group: {self.group_id}"
            )
        if name == "GROUP_ID_NOT_FOUND":
            return _not_found(self.group_id)
        if name == "TOPIC_AUTHORIZATION_FAILED":
            return SnapshotError(f"TopicAuthorizationException: {err.str()} ({what})")
        if name in ("_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED"):
            return SnapshotError(f"SaslAuthenticationException: {err.str()}")
        if name == "_SSL":
            return SnapshotError(f"SslAuthenticationException: {err.str()}")
        return SnapshotError(f"{what}: {name}: {err.str()}")


def _not_found(group_id: str) -> SnapshotError:
    # Kafka's GroupIdNotFoundException, with ConsumerGroupCommand's sentence.
    return SnapshotError(f"GroupIdNotFoundException: Consumer group '{group_id}' does not exist.")


def _partitions(tps: Any) -> tuple[TopicPartition, ...]:
    return tuple(sorted((tp.topic, tp.partition) for tp in tps or ()))


def _listed_type(calls: _Calls) -> str | None:
    """The group's type as ListGroups (v5, every broker) lists it; ``None`` if absent."""
    result = calls.wait(
        "ListGroups", calls.admin.list_consumer_groups(request_timeout=calls.timeout)
    )
    for listing in result.valid:
        if listing.group_id == calls.group_id:
            kind = getattr(listing.type, "name", "UNKNOWN")
            return {"CONSUMER": "consumer", "CLASSIC": "classic"}.get(kind, "unknown")
    return None


def _describe(calls: _Calls) -> GroupView:
    futures = calls.admin.describe_consumer_groups([calls.group_id], request_timeout=calls.timeout)
    d = calls.wait("DescribeConsumerGroups", futures[calls.group_id])
    kind = {"CONSUMER": "consumer", "CLASSIC": "classic"}.get(
        getattr(d.type, "name", "UNKNOWN"), "unknown"
    )
    members = tuple(
        MemberView(
            member_id=m.member_id,
            instance_id=m.group_instance_id or None,
            client_id=m.client_id or "",
            host=m.host or "",
            assignment=_partitions(m.assignment.topic_partitions if m.assignment else ()),
            target_assignment=(
                _partitions(m.target_assignment.topic_partitions)
                if kind == "consumer" and m.target_assignment is not None
                else None
            ),
        )
        for m in d.members
    )
    coordinator = d.coordinator
    return GroupView(
        group_id=d.group_id,
        type=kind,
        state=_STATES.get(getattr(d.state, "name", "UNKNOWN"), "Unknown"),
        assignor=d.partition_assignor or "",
        members=members,
        coordinator=(
            f"{coordinator.host}:{coordinator.port} ({coordinator.id})" if coordinator else ""
        ),
        described_by="ConsumerGroupDescribe" if kind == "consumer" else "DescribeGroups",
    )


def _end_offsets(calls: _Calls, partitions: list[TopicPartition]) -> Sample:
    """ListOffsets ``latest`` of ``partitions``, stamped with the middle of the call."""
    from confluent_kafka import TopicPartition as KafkaTopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    if not partitions:
        return Sample(time.monotonic(), {})
    latest: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    request = {KafkaTopicPartition(t, p): latest for t, p in partitions}
    before = time.monotonic()
    futures = calls.admin.list_offsets(request, request_timeout=calls.timeout)
    ends: dict[TopicPartition, int] = {}
    for tp, future in futures.items():
        info = calls.wait("ListOffsets", future)
        if info.offset >= 0:
            ends[(tp.topic, tp.partition)] = info.offset
    return Sample((before + time.monotonic()) / 2, ends)


def _committed(calls: _Calls) -> dict[TopicPartition, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    futures = calls.admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(calls.group_id)], request_timeout=calls.timeout
    )
    result = calls.wait("OffsetFetch", futures[calls.group_id])
    return {
        (tp.topic, tp.partition): tp.offset
        for tp in result.topic_partitions or ()
        if tp.error is None and tp.offset >= 0
    }


def _configs(
    calls: _Calls, kind: str, name: str
) -> tuple[dict[str, ConfigValue] | None, str | None]:
    """DescribeConfigs of one resource: (configs, None) or (None, why not)."""
    from confluent_kafka.admin import ConfigResource  # type: ignore[attr-defined]

    resource = ConfigResource(getattr(ConfigResource.Type, kind), name)
    try:
        futures = calls.admin.describe_configs([resource], request_timeout=calls.timeout)
        entries = futures[resource].result(timeout=calls.timeout + 1)
    except concurrent.futures.TimeoutError:
        return None, f"DescribeConfigs {kind} {name}: no answer within {calls.timeout:g} s"
    except Exception as exc:
        err = _kafka_error(exc)
        text = f"{err.name()}: {err.str()}" if err is not None else str(exc)
        return None, f"DescribeConfigs {kind} {name}: {text}"
    return {
        key: ConfigValue(
            "" if entry.value is None else str(entry.value),
            getattr(entry.source, "name", str(entry.source)),
        )
        for key, entry in entries.items()
    }, None


def gather(
    bootstrap: str,
    group_id: str,
    *,
    security: Mapping[str, str] | None = None,
    timeout: float = 5.0,
    sample_seconds: float = 10.0,
    wire_describe: Callable[[str, str, int], GroupView] | None = None,
    progress: Callable[[float, float], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Snapshot:
    """A snapshot of ``group_id``; ``SnapshotError`` when it cannot be taken.

    ``wire_describe(type, host, port)`` describes the group again on its coordinator,
    with DescribeGroups (``classic``) or ConsumerGroupDescribe (``consumer``), for the
    epochs and the fallback of the module docstring; ``progress(waited, total)`` is called about
    every half second while the second sample waits.
    """
    import confluent_kafka
    from confluent_kafka.admin import AdminClient

    # librdkafka reports a failed SASL login as an error event, and the request that
    # needed the connection only as a transport failure: keep the events to tell them apart.
    events: list[Any] = []
    config = librdkafka_config(bootstrap, security or {}, timeout)
    config["error_cb"] = events.append
    admin = AdminClient(config)
    calls = _Calls(admin, bootstrap, group_id, timeout)
    try:
        metadata = admin.list_topics(timeout=timeout)
    except Exception as exc:
        admin.poll(0)  # serve the error events
        refused = [e for e in events if e.name() in ("_AUTHENTICATION", "_SSL")]
        if refused:
            raise calls.error("Metadata", type(exc)(refused[0])) from None
        raise calls.error("Metadata", exc) from None
    listed = _listed_type(calls)
    group = _describe(calls)
    if group.state == "Dead" or (listed is None and not group.members):
        raise _not_found(group_id)
    if listed == "classic" and group.type != "classic":
        group = _classic_again(group, wire_describe)
    elif wire_describe is not None:
        group = _with_epochs(group, wire_describe)
    if not group.members:
        # Kafka's message for an empty group (ConsumerGroupCommand); nothing to sample.
        raise SnapshotError(f"Consumer group '{group_id}' has no active members.")
    committed = _committed(calls)
    topics = group.topics() or sorted({t for t, _ in committed})
    partitions: dict[str, int] = {}
    for topic in topics:
        described = metadata.topics.get(topic)
        if described is not None and described.error is None and described.partitions:
            partitions[topic] = len(described.partitions)
    wanted = [(t, p) for t in sorted(partitions) for p in range(partitions[t])]
    taken_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    first = _end_offsets(calls, wanted)
    _wait(first.at_s + sample_seconds, sample_seconds, progress, sleep)
    second = _end_offsets(calls, wanted)
    notes: list[str] = []
    broker_configs = group_configs = None
    node = group.coordinator.rpartition("(")[2].rstrip(")")
    if node:
        broker_configs, why = _configs(calls, "BROKER", node)
        notes += [why] if why else []
    if group.type == "consumer":
        group_configs, why = _configs(calls, "GROUP", group_id)
        notes += [why] if why else []
    return Snapshot(
        bootstrap=bootstrap,
        taken_at=taken_at,
        library=f"confluent-kafka {_first(confluent_kafka.version())}, "
        f"librdkafka {_first(confluent_kafka.libversion())}",
        group=group,
        partitions=partitions,
        committed=committed,
        first=first,
        second=second,
        broker_configs=broker_configs,
        group_configs=group_configs,
        configs_note=tuple(notes),
    )


def _first(version: Any) -> str:
    """``version()`` and ``libversion()`` give ``(text, number)`` or the text alone."""
    return str(version[0] if isinstance(version, tuple) else version)


def _address(group: GroupView) -> tuple[str, int] | None:
    host, _, port = group.coordinator.split(" ")[0].rpartition(":")
    return (host, int(port)) if host and port.isdigit() else None


def _with_epochs(
    group: GroupView, wire_describe: Callable[[str, str, int], GroupView]
) -> GroupView:
    """``group`` with the epochs of a second describe on its coordinator (best effort)."""
    address = _address(group)
    if address is None:
        return replace(group, notes=(*group.notes, "epochs unknown: no coordinator address"))
    try:
        wired = wire_describe(group.type, *address)
    except SnapshotError as error:
        return replace(group, notes=(*group.notes, f"epochs unknown: {error}"))
    epochs = {m.member_id: m.epoch for m in wired.members}
    return replace(
        group,
        members=tuple(replace(m, epoch=epochs.get(m.member_id)) for m in group.members),
        group_epoch=wired.group_epoch,
        assignment_epoch=wired.assignment_epoch,
    )


def _classic_again(
    group: GroupView, wire_describe: Callable[[str, str, int], GroupView] | None
) -> GroupView:
    """The group described again with DescribeGroups on its coordinator."""
    quirk = (
        "the broker answered ConsumerGroupDescribe for this classic group "
        f"({len(group.members)} members, assignor {group.assignor!r}) where Kafka answers "
        "GROUP_ID_NOT_FOUND"
    )
    address = _address(group)
    if wire_describe is None or address is None:
        raise SnapshotError(f"{quirk}; no DescribeGroups to fall back on")
    again = wire_describe("classic", *address)
    return replace(
        again,
        coordinator=group.coordinator,
        described_by="DescribeGroups (regroup's wire client)",
        notes=(*again.notes, f"{quirk}: described again with DescribeGroups v5"),
    )


def _wait(
    until: float,
    total: float,
    progress: Callable[[float, float], None] | None,
    sleep: Callable[[float], None],
) -> None:
    """Sleep until ``until`` (monotonic seconds), reporting about twice a second."""
    while True:
        left = until - time.monotonic()
        if progress is not None:
            progress(min(total, max(0.0, total - left)), total)
        if left <= 0:
            return
        sleep(min(0.5, left))
