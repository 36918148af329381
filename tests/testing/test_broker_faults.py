"""Every fault of ``Broker``, each with a real client showing how it reacts.

kafka-python (classic protocol) runs in a thread of its own, confluent-kafka
(librdkafka, KIP-848 unless said otherwise) is polled by the test; aiokafka's
reaction to a coordinator move is ``examples/testing/test_async_pipeline.py``,
fencing's ``on_lost`` is ``examples/testing/test_order_totals.py``. Group
configs are the fast ``TEST_CONFIGS``; every wait is bounded and ends as soon
as its condition holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from regroup.testing import Broker
from tests.testing.real_clients import ConfluentMember, KafkaPythonMember, wait_until

TOPIC = "orders"


def _described(broker: Broker, group: str) -> dict[str, Any]:
    described = broker.describe_group(group)
    assert described is not None, f"no group {group!r}"
    return described


def _only_member(broker: Broker, group: str) -> str:
    members = broker.members(group)
    assert len(members) == 1, members
    return next(iter(members))


# -- request errors ------------------------------------------------------------------------


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_pushed_heartbeat_errors_make_a_classic_member_rejoin(regroup_broker: Broker) -> None:
    member = KafkaPythonMember(regroup_broker.bootstrap, "g", TOPIC, "kp")
    try:
        wait_until("assigned", lambda: "assigned" in member.kinds())
        generation = regroup_broker.wait_for_stable("g", members=1)["generation"]
        regroup_broker.start_request_tracking()
        seen = len(member.calls)
        regroup_broker.push_request_errors("Heartbeat", "REBALANCE_IN_PROGRESS")
        wait_until(
            "a heartbeat got the error",
            lambda: regroup_broker.pending_faults()["errors_injected"] == 1,
        )
        # The coordinator did not fail that heartbeat, the fault layer did: the group is
        # Stable until the member's JoinGroup, the rejoin the error asked for, arrives.
        wait_until(
            "the rejoin reaches the coordinator",
            lambda: _described(regroup_broker, "g")["generation"] > generation,
        )
        regroup_broker.wait_for_stable("g", members=1)
        # The eager member revoked everything and was assigned again.
        wait_until(
            "revoked and reassigned", lambda: member.kinds()[seen:][-2:] == ["revoked", "assigned"]
        )
        assert regroup_broker.requests("JoinGroup")
    finally:
        member.stop()


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_a_sticky_commit_error_fails_every_commit_until_cleared(regroup_broker: Broker) -> None:
    regroup_broker.produce(TOPIC, ["a", "b"])
    member = ConfluentMember(regroup_broker.bootstrap, "g", TOPIC, "ck")
    try:
        member.poll_until("assigned", lambda: member.kinds() == ["assigned"])
        regroup_broker.set_request_error("OffsetCommit", "GROUP_AUTHORIZATION_FAILED")
        for _ in range(2):
            with pytest.raises(KafkaException) as failed:
                member.consumer.commit(offsets=_offsets(1), asynchronous=False)
            assert failed.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED
        assert regroup_broker.committed("g") == {}
        regroup_broker.set_request_error("OffsetCommit", None)
        member.consumer.commit(offsets=_offsets(1), asynchronous=False)
        assert regroup_broker.committed("g") == {TOPIC: {0: 1, 1: 1}}
    finally:
        member.close()


def _offsets(offset: int) -> list[TopicPartition]:
    return [TopicPartition(TOPIC, p, offset) for p in (0, 1)]


@pytest.mark.regroup_broker(topics={TOPIC: 1})
def test_an_rtt_beyond_the_client_timeout_times_its_request_out(regroup_broker: Broker) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": regroup_broker.bootstrap})
    assert TOPIC in admin.list_topics(timeout=10).topics
    regroup_broker.set_rtt(3000, "Metadata")
    with pytest.raises(KafkaException) as timed_out:
        admin.list_topics(timeout=0.5)
    assert timed_out.value.args[0].code() == KafkaError._TIMED_OUT
    regroup_broker.set_rtt(0, "Metadata")
    assert TOPIC in admin.list_topics(timeout=10).topics


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_a_dropped_connection_is_reopened_and_the_member_stays(regroup_broker: Broker) -> None:
    member = KafkaPythonMember(regroup_broker.bootstrap, "g", TOPIC, "kp")
    try:
        wait_until("assigned", lambda: "assigned" in member.kinds())
        member_id = _only_member(regroup_broker, "g")
        regroup_broker.start_request_tracking()
        wait_until("a heartbeat", lambda: bool(regroup_broker.requests("Heartbeat")))
        before = {r.conn_id for r in regroup_broker.requests()}
        assert regroup_broker.drop_connections(client_id="kp") >= 1
        wait_until(
            "heartbeats on a new connection",
            lambda: any(r.conn_id not in before for r in regroup_broker.requests("Heartbeat")),
        )
        assert _only_member(regroup_broker, "g") == member_id  # the same member: no rejoin
        assert regroup_broker.drop_connections(client_id="nobody") == 0
    finally:
        member.stop()


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_a_coordinator_away_for_a_while_is_found_again(regroup_broker: Broker) -> None:
    member = ConfluentMember(regroup_broker.bootstrap, "g", TOPIC, "ck")
    try:
        member.poll_until("assigned", lambda: member.kinds() == ["assigned"])
        member_id = _only_member(regroup_broker, "g")
        epoch = regroup_broker.wait_for_stable("g")["epoch"]
        regroup_broker.start_request_tracking()
        regroup_broker.coordinator_unavailable(duration_ms=1000)
        member.poll_until(
            "FindCoordinator after NOT_COORDINATOR",
            lambda: bool(regroup_broker.requests("FindCoordinator")),
        )
        member.poll_until(
            "heartbeats answered again",
            lambda: (
                regroup_broker.pending_faults()["sticky"] == {}
                and len(regroup_broker.requests("ConsumerGroupHeartbeat")) >= 3
            ),
        )
        described = regroup_broker.wait_for_stable("g", members=1)
        assert list(described["members"]) == [member_id] and described["epoch"] == epoch
        assert member.kinds() == ["assigned"]  # nothing revoked or lost
    finally:
        member.close()


# -- group faults --------------------------------------------------------------------------


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_an_expired_classic_session_makes_the_member_rejoin_as_new(regroup_broker: Broker) -> None:
    member = KafkaPythonMember(regroup_broker.bootstrap, "g", TOPIC, "kp")
    try:
        wait_until("assigned", lambda: "assigned" in member.kinds())
        regroup_broker.wait_for_stable("g", members=1)
        old = _only_member(regroup_broker, "g")
        seen = len(member.calls)
        regroup_broker.expire_session("g", old)
        # Its next heartbeat gets UNKNOWN_MEMBER_ID: the partitions are lost, it rejoins.
        wait_until(
            "it rejoined as a new member",
            lambda: set(regroup_broker.members("g")) - {old} != set(),
        )
        regroup_broker.wait_for_stable("g", members=1)
        wait_until(
            "reassigned", lambda: member.kinds()[-1:] == ["assigned"] and len(member.calls) > seen
        )
        assert member.kinds()[seen] in ("lost", "revoked")
    finally:
        member.stop()


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_an_expired_kip848_session_loses_the_partitions(regroup_broker: Broker) -> None:
    member = ConfluentMember(regroup_broker.bootstrap, "g", TOPIC, "ck")
    try:
        member.poll_until("assigned", lambda: member.kinds() == ["assigned"])
        regroup_broker.expire_session("g", _only_member(regroup_broker, "g"))
        member.poll_until(
            "lost and reassigned", lambda: member.kinds() == ["assigned", "lost", "assigned"]
        )
        regroup_broker.wait_for_stable("g", members=1)
    finally:
        member.close()


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_a_forced_kip848_rebalance_bumps_the_epoch_and_moves_nothing(
    regroup_broker: Broker,
) -> None:
    member = ConfluentMember(regroup_broker.bootstrap, "g", TOPIC, "ck")
    try:
        member.poll_until("assigned", lambda: member.kinds() == ["assigned"])
        epoch = regroup_broker.wait_for_stable("g")["epoch"]
        regroup_broker.force_rebalance("g")
        member.poll_until(
            "the new epoch is reached",
            lambda: (
                _described(regroup_broker, "g")["members"][_only_member(regroup_broker, "g")][
                    "epoch"
                ]
                > epoch
            ),
        )
        assert member.kinds() == ["assigned"]
    finally:
        member.close()


@pytest.mark.regroup_broker(topics={TOPIC: 4})
def test_a_target_assignment_moves_partitions_between_kip848_members(
    regroup_broker: Broker,
) -> None:
    a = ConfluentMember(regroup_broker.bootstrap, "g", TOPIC, "a")
    b = ConfluentMember(regroup_broker.bootstrap, "g", TOPIC, "b")

    def owned() -> dict[str, list[int]]:
        members = regroup_broker.members("g").values()
        return {m["client_id"]: m["assignment"].get(TOPIC, []) for m in members}

    def poll_both_until(what: str, condition: Callable[[], bool]) -> None:
        def polled() -> bool:
            b.consumer.poll(0.02)
            return condition()

        a.poll_until(what, polled)

    try:
        # Two each, at the coordinator and in both clients' callbacks.
        poll_both_until(
            "two partitions each",
            lambda: (
                sorted(map(len, owned().values())) == [2, 2]
                and owned() == {"a": a.owned(), "b": b.owned()}
            ),
        )
        before = owned()
        ids = {m["client_id"]: mid for mid, m in regroup_broker.members("g").items()}
        seen = (len(a.calls), len(b.calls))
        # Swap them, as rd_kafka_mock_cgrp_consumer_target_assignment would.
        regroup_broker.set_target_assignment(
            "g", {ids["a"]: {TOPIC: before["b"]}, ids["b"]: {TOPIC: before["a"]}}
        )

        # Each revokes what it had (on_revoke) before it is given the other's (on_assign,
        # in one call or more).
        def swapped(member: ConfluentMember, start: int, had: list[int], gets: list[int]) -> bool:
            calls = member.calls[start:]
            assigned = sorted(p for kind, ps in calls[1:] if kind == "assigned" for p in ps)
            kinds = {kind for kind, _ in calls[1:]}
            return calls[:1] == [("revoked", had)] and kinds == {"assigned"} and assigned == gets

        try:
            poll_both_until(
                "the swap, in both clients' callbacks",
                lambda: (
                    swapped(a, seen[0], before["a"], before["b"])
                    and swapped(b, seen[1], before["b"], before["a"])
                ),
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}: a {a.calls}, b {b.calls}, owned {owned()}") from None
        assert owned() == {"a": before["b"], "b": before["a"]}
    finally:
        a.close()
        b.close()


@pytest.mark.regroup_broker(topics={TOPIC: 2}, configs={"group.initial.rebalance.delay.ms": 300})
def test_paused_timers_hold_a_classic_group_in_its_initial_delay(regroup_broker: Broker) -> None:
    regroup_broker.pause_timers()
    member = KafkaPythonMember(regroup_broker.bootstrap, "g", TOPIC, "kp")
    try:
        wait_until("the member joined", lambda: bool(regroup_broker.members("g")))
        # Only the coordinator's timer ends the initial delay: while it is paused, the
        # join stays parked, however long the test waits.
        time.sleep(1.0)  # > 3x the 300 ms delay: nothing may change, whatever the time
        assert _described(regroup_broker, "g")["state"] == "PreparingRebalance"
        assert regroup_broker.pending_faults()["timers_paused"] is True
        assert member.calls == []
        regroup_broker.resume_timers()
        wait_until("assigned", lambda: "assigned" in member.kinds())
        regroup_broker.wait_for_stable("g", members=1)
    finally:
        member.stop()


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_request_tracking_decodes_what_the_client_sent(regroup_broker: Broker) -> None:
    regroup_broker.start_request_tracking()
    member = ConfluentMember(regroup_broker.bootstrap, "g", TOPIC, "tracked")
    try:
        member.poll_until("assigned", lambda: member.kinds() == ["assigned"])
        heartbeats = regroup_broker.requests("ConsumerGroupHeartbeat")
        first = heartbeats[0]
        assert first.client_id == "tracked" and first.group_id == "g"
        assert first.api_version >= 0 and first.fields["member_epoch"] == 0
        assert first.fields["subscribed_topic_names"] == [TOPIC]
        assert first.member_id == _only_member(regroup_broker, "g")  # KIP-1082: client-made
        regroup_broker.stop_request_tracking()
        assert regroup_broker.requests() == []
    finally:
        member.close()


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_a_classic_librdkafka_member_rejoins_after_a_failed_sync(regroup_broker: Broker) -> None:
    regroup_broker.start_request_tracking()
    regroup_broker.push_request_errors("SyncGroup", "REBALANCE_IN_PROGRESS")
    member = ConfluentMember(
        regroup_broker.bootstrap,
        "g",
        TOPIC,
        "classic",
        **{"group.protocol": "classic", "session.timeout.ms": 3000, "heartbeat.interval.ms": 300},
    )
    try:
        # The first SyncGroup fails: librdkafka joins again, and is assigned at the second.
        member.poll_until("assigned", lambda: member.kinds() == ["assigned"])
        assert len(regroup_broker.requests("SyncGroup")) >= 2
        assert len(regroup_broker.requests("JoinGroup")) >= 2
        assert regroup_broker.wait_for_stable("g", members=1)["type"] == "classic"
    finally:
        member.close()
