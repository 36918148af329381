"""Asynchronous resolution of regular expressions (Kafka 4.0's; semantics ``kafka``).

Kafka (``GroupMetadataManager.maybeUpdateRegularExpressions`` and
``handleRegularExpressionsResult``) does not resolve a member's new regular
expression inside the heartbeat that brings it: the heartbeat checks that it
compiles, and asks for a refresh of every regex the group subscribes to, which
runs on an executor (at most one per group, key ``<group>-regex``; not within
10 s of the previous one). When the refresh lands, each regex's record is
written, and the group epoch is bumped if a regex now resolves to other topics
than before or the subscription metadata changed. Until then the member
subscribes to nothing through its regex.

regroup is sans-IO: the executor is a timer (``consumer-regex-<group>``) due at
once, so the resolution lands at the next ``on_timer`` of the driver (the
simulator's next event, ``advance_ms: 0`` in a replay script), in its own
operation with its own records, as in Kafka. Under ``kip-848`` semantics the
regex is resolved inside the heartbeat instead (``heartbeat``), and none of
this runs.

Under an authorizer (``topic_authorization``) a regex resolves only to the topics
the principal of the heartbeat that asked for the refresh may DESCRIBE (Kafka's
``refreshRegularExpressions`` with that heartbeat's ``AuthorizableRequestContext``,
``filterTopicDescribeAuthorizedTopics``): one principal's view for the whole group,
as in Kafka. So a refresh is asked for by heartbeats only (none at load time), and
a metadata update does not re-resolve in place: the next heartbeat refreshes every
regex resolved before the update (Kafka's condition 4, "the metadata image has new
topics").
"""

from __future__ import annotations

from collections.abc import Callable

from regroup.consumer.group.group import ConsumerGroup
from regroup.coordinator.consumer import records
from regroup.coordinator.consumer.rebalance import (
    bump_epoch,
    resolve,
    subscription_metadata_changed,
)
from regroup.coordinator.consumer.txn import ConsumerTxn
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState

__all__ = ["REGEX_BATCH_REFRESH_INTERVAL_MS", "maybe_schedule_refresh", "regex_key"]

#: Kafka ``REGEX_BATCH_REFRESH_INTERVAL_MS``: no refresh within 10 s of the last one.
REGEX_BATCH_REFRESH_INTERVAL_MS = 10_000


def regex_key(group_id: str) -> str:
    return f"consumer-regex-{group_id}"


def _subscribed_regexes(group: ConsumerGroup) -> set[str]:
    return set(group.regex_subscriber_counts)


def maybe_schedule_refresh(
    state: GroupCoordinatorState,
    group_id: str,
    now_ms: int,
    *,
    required: bool = False,
    context: Callable[[str], bool] | None = None,
) -> None:
    """Ask for a refresh when the group has a regex not resolved yet (or ``required``:
    a member just brought a new one), none is under way and the last one is over 10 s
    old (Kafka's conditions 0-3; condition 4, new topics, is the metadata update's, or
    under an authorizer this one's). ``context``: the heartbeat's ``may_describe_topic``,
    which the refresh resolves under (none under an authorizer: no refresh)."""
    group = state.consumer_group(group_id)
    # Every heartbeat asks; a group that subscribes by no regex answers at once.
    if group is None or not group.regex_subscriber_counts:
        return
    authorized = state.consumer.topic_authorization
    if authorized and context is None:
        return
    if state.timer.is_scheduled(regex_key(group_id)):
        return
    resolved = group.resolved_regexes
    if resolved:
        last_refresh_ms = max(r.timestamp for r in resolved.values())
        if now_ms <= last_refresh_ms + REGEX_BATCH_REFRESH_INTERVAL_MS:
            return
    if authorized:
        version = state.consumer.metadata_version
        required = required or any(r.version < version for r in resolved.values())
    if not required and group.regex_subscriber_counts.keys() <= resolved.keys():
        return
    state.timer.schedule(
        regex_key(group_id), now_ms, lambda now: _refresh_landed(state, group_id, now, context)
    )


def _refresh_landed(
    state: GroupCoordinatorState,
    group_id: str,
    now_ms: int,
    context: Callable[[str], bool] | None = None,
) -> CoordinatorResult:
    """Kafka ``handleRegularExpressionsResult``: one record per subscribed regex; a bump
    if any resolves to other topics or the subscription metadata changed."""
    group = state.consumer_group(group_id)
    if group is None or group.dead:
        return CoordinatorResult()
    txn = ConsumerTxn(state, group_id, now_ms)
    changed = False
    for regex in sorted(_subscribed_regexes(group)):
        fresh = resolve(state, regex, now_ms, context)
        old = group.resolved_regexes.get(regex)
        if old is None or old.topics != fresh.topics:
            changed = True
        txn.write(records.regex_record(group_id, regex, fresh))
    if changed or subscription_metadata_changed(state, group):
        bump_epoch(txn, "regex_resolved")
    return txn.finish()
