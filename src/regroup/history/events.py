"""A recognised log line -> regroup's own events (``regroup.events``).

So the event log of a real cluster reads like a simulated or served one (``regroup analyze
OUT/events`` takes it). Every event carries the observed ``broker_id`` and
``coordinator_partition`` (``OBSERVED_FIELDS`` in ``regroup.events.schema``). The mapping:

===================================  ==========================================================
line (``formats.Kind``)               event
===================================  ==========================================================
rebalance_preparing                   ``rebalance_started`` (the old generation, Kafka's reason
                                      and its class), after ``member_joined`` when the reason
                                      is ``Adding new member M``
group_stabilized                      ``generation_bumped`` (``member_count``; leader and member
                                      ids are not in the line: ``""`` and ``()``)
assignment_received                   ``rebalance_completed`` (``member_count``)
group_empty                           ``group_state_changed`` to ``Empty``
member_failed                         ``member_left`` reason ``session_timeout``
member_left                           ``member_left`` reason ``leave`` (``reason_text``: the
                                      client's reason)
static_member_replaced                ``member_left`` reason ``replaced`` and ``member_joined``
static/dynamic_member_joined          ``member_joined``
consumer_* joined / replaced / left   ``member_joined`` / ``member_left`` (``consumer``)
consumer_member_fenced                ``member_left``, reason ``session_timeout``,
                                      ``rebalance_timeout`` or ``fenced``
group_epoch_bumped                    ``group_epoch_bumped`` (reason ``""``: not in the line)
target_assignment_computed            ``target_assignment_computed`` (assignment not logged
                                      from 3.9: empty)
member_assignment_updated             ``member_assignment_changed`` (partitions as logged)
client_rejoin_requested/poll_timeout  ``rebalance_requested`` (member: the client id)
===================================  ==========================================================

Other lines (loading, unloading, pending members, client joins) make no event: they serve
the reconstruction (``regroup.history.rebalances``) only.
"""

from __future__ import annotations

import re
from typing import Any

from regroup.events import (
    Event,
    GenerationBumped,
    GroupEpochBumped,
    GroupStateChanged,
    MemberAssignmentChanged,
    MemberJoined,
    MemberLeft,
    RebalanceCompleted,
    RebalanceRequested,
    RebalanceStarted,
    TargetAssignmentComputed,
)
from regroup.history.formats import Kind
from regroup.history.lines import Record, instance_id
from regroup.history.reasons import ADDED_MEMBER, classify_leave, classify_rebalance
from regroup.model import TopicPartition

__all__ = ["record_events"]

_PARTITION = re.compile(r"([^\s,\[\]{}=()]+)-(\d+)")


def _partitions(text: str | None) -> tuple[TopicPartition, ...]:
    if not text:
        return ()
    return tuple(TopicPartition(topic, int(index)) for topic, index in _PARTITION.findall(text))


def record_events(record: Record) -> list[Event]:
    """The events of one record (none for lines that only serve the reconstruction)."""
    group = record.group_id
    if group is None:
        return []
    common: dict[str, Any] = {
        "ts_ms": record.ts_ms,
        "group_id": group,
        "broker_id": record.get_int("broker_id"),
        "coordinator_partition": record.get_int("offsets_partition"),
    }
    kind = record.kind
    member = record.get_str("member_id") or ""
    instance = instance_id(record.get_str("instance_id"))
    generation = record.get_int("generation")
    if kind == Kind.REBALANCE_PREPARING:
        reason = record.get_str("reason") or ""
        started: list[Event] = []
        added = ADDED_MEMBER.match(reason)
        if added:
            # The coordinator admitted a new member (its JoinGroup accepted) and rebalances.
            started.append(
                MemberJoined(
                    **common,
                    member_id=added.group(1),
                    group_protocol="classic",
                    instance_id=instance_id(added.group(2)),
                )
            )
        started.append(
            RebalanceStarted(
                **common,
                generation=generation if generation is not None else -1,
                reason=reason,
                reason_class=classify_rebalance(reason or None),
            )
        )
        return started
    if kind == Kind.GROUP_STABILIZED:
        return [
            GenerationBumped(
                **common,
                generation=generation if generation is not None else -1,
                protocol_name=None,
                leader_id="",
                member_ids=(),
                member_count=record.get_int("members"),
            )
        ]
    if kind == Kind.ASSIGNMENT_RECEIVED:
        return [
            RebalanceCompleted(
                **common,
                generation=generation if generation is not None else -1,
                member_count=record.get_int("members"),
            )
        ]
    if kind == Kind.GROUP_EMPTY:
        return [
            GroupStateChanged(
                **common,
                group_protocol="classic",
                old_state="PreparingRebalance",
                new_state="Empty",
            )
        ]
    if kind == Kind.MEMBER_FAILED:
        return [
            MemberLeft(
                **common, member_id=member, group_protocol="classic", reason="session_timeout"
            )
        ]
    if kind == Kind.MEMBER_LEFT:
        text = record.get_str("reason")
        text = None if text in (None, "", "not provided") else text
        return [
            MemberLeft(
                **common,
                member_id=member,
                group_protocol="classic",
                reason="leave",
                instance_id=instance,
                reason_text=text,
            )
        ]
    if kind in (Kind.STATIC_MEMBER_REPLACED, Kind.CONSUMER_STATIC_MEMBER_REPLACED):
        protocol = "classic" if kind == Kind.STATIC_MEMBER_REPLACED else "consumer"
        events: list[Event] = []
        old = record.get_str("old_member_id")
        if old:
            events.append(
                MemberLeft(
                    **common,
                    member_id=old,
                    group_protocol=protocol,
                    reason="replaced",
                    instance_id=instance,
                )
            )
        if member:
            events.append(
                MemberJoined(
                    **common, member_id=member, group_protocol=protocol, instance_id=instance
                )
            )
        return events
    if kind in (Kind.STATIC_MEMBER_JOINED, Kind.DYNAMIC_MEMBER_JOINED):
        return [
            MemberJoined(**common, member_id=member, group_protocol="classic", instance_id=instance)
        ]
    if kind in (Kind.CONSUMER_MEMBER_JOINED, Kind.CONSUMER_STATIC_MEMBER_JOINED):
        return [
            MemberJoined(
                **common, member_id=member, group_protocol="consumer", instance_id=instance
            )
        ]
    if kind in (
        Kind.CONSUMER_MEMBER_LEFT,
        Kind.CONSUMER_STATIC_MEMBER_LEFT,
        Kind.CONSUMER_STATIC_MEMBER_LEFT_TEMPORARILY,
    ):
        temporary = kind == Kind.CONSUMER_STATIC_MEMBER_LEFT_TEMPORARILY
        return [
            MemberLeft(
                **common,
                member_id=member,
                group_protocol="consumer",
                reason="leave",
                instance_id=instance,
                reason_text="temporarily (static member)" if temporary else None,
            )
        ]
    if kind == Kind.CONSUMER_MEMBER_FENCED:
        text = record.get_str("reason")
        if text is None:
            text = "its session expired" if "session" in record.line else "revocation timeout"
        leave = classify_leave(text)
        reason = leave if leave in {"session_timeout", "rebalance_timeout"} else "fenced"
        return [
            MemberLeft(
                **common,
                member_id=member,
                group_protocol="consumer",
                reason=reason,
                reason_text=text,
            )
        ]
    if kind == Kind.GROUP_EPOCH_BUMPED:
        epoch = record.get_int("epoch")
        return [] if epoch is None else [GroupEpochBumped(**common, epoch=epoch, reason="")]
    if kind == Kind.TARGET_ASSIGNMENT_COMPUTED:
        epoch = record.get_int("epoch")
        if epoch is None:
            return []
        return [
            TargetAssignmentComputed(
                **common, epoch=epoch, assignor=record.get_str("assignor") or "", assignment={}
            )
        ]
    if kind == Kind.MEMBER_ASSIGNMENT_UPDATED:
        epoch = record.get_int("epoch")
        previous = record.get_int("previous_epoch")
        if epoch is None or previous is None:
            return []
        return [
            MemberAssignmentChanged(
                **common,
                member_id=member,
                epoch=epoch,
                previous_epoch=previous,
                member_state=record.get_str("state") or "",
                assigned=_partitions(record.get_str("assigned")),
                pending_revocation=_partitions(record.get_str("revoked")),
            )
        ]
    if kind in (Kind.CLIENT_REJOIN_REQUESTED, Kind.CLIENT_POLL_TIMEOUT):
        reason = record.get_str("reason") or "consumer poll timeout has expired"
        return [
            RebalanceRequested(**common, member_id=record.get_str("client_id") or "", reason=reason)
        ]
    return []
