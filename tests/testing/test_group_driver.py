"""``GroupDriver``: the three clients' poll loops run for the test, waits on the application.

First, why: ``Broker.wait_for_assignment`` watches the coordinator, so it returns
before the application's ``on_assign`` has run, and it blocks the test's thread,
so a kafka-python application the test polls never joins while the test waits
on it. Then the driver with each client: callbacks with partitions and times,
records with keys and headers, work on the consumer's thread, the
application's hooks, a second member, kafka-python's empty first assignment, a
fenced KIP-848 member's ``on_lost``, and a heartbeat answer held past the
session timeout (``push_request_errors(..., rtt_ms=)``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kafka import KafkaConsumer

from regroup.testing import Broker, ControlError, GroupDriver
from regroup.testing.driver import CLIENTS, AppView, DriverError, DriverTimeout

TOPIC = "orders"
BOTH = {TOPIC: {0, 1}}

#: Each client's settings for a fast, deterministic test (no auto-commit).
CONFIGS: dict[str, dict[str, Any]] = {
    "confluent-kafka": {"enable.auto.commit": False},
    "kafka-python": {
        "enable_auto_commit": False,
        "session_timeout_ms": 3000,
        "heartbeat_interval_ms": 200,
        "retry_backoff_ms": 100,
    },
    "aiokafka": {
        "enable_auto_commit": False,
        "session_timeout_ms": 3000,
        "heartbeat_interval_ms": 200,
        "retry_backoff_ms": 100,
    },
}


def _driver(broker: Broker, client: str, client_id: str = "app", **options: Any) -> GroupDriver:
    config = {**CONFIGS[client], **options.pop("config", {})}
    return GroupDriver(
        client,  # type: ignore[arg-type]  # one of CLIENTS
        broker.bootstrap,
        "g",
        [TOPIC],
        config=config,
        client_id=client_id,
        **options,
    )


# -- why: the coordinator's wait is not the application's -----------------------------------


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_a_kafka_python_app_the_test_polls_does_not_join_while_the_test_waits(
    regroup_broker: Broker,
) -> None:
    # The README's old pattern: build the app, then wait on the coordinator. kafka-python
    # joins inside poll(), which nobody calls while the test thread is blocked here.
    app = KafkaConsumer(
        bootstrap_servers=regroup_broker.bootstrap, group_id="g", client_id="my-app"
    )
    try:
        app.subscribe([TOPIC])
        with pytest.raises(ControlError, match="timed out after 1500 ms"):
            regroup_broker.wait_for_assignment("g", client_id="my-app", timeout=1.5)
        assert regroup_broker.members("g") == {}
        assert app.assignment() == set()  # and kafka-python's assignment is empty until polled
    finally:
        app.close()
    # The same application polled by a driver: the wait is on what it saw.
    with _driver(regroup_broker, "kafka-python", client_id="my-app") as driver:
        seen = driver.wait_for(lambda app: app.assigned == BOTH, timeout=20)
        assert [c.kind for c in seen.callbacks if c.partitions] == ["assigned"]
        assert regroup_broker.wait_for_assignment("g", client_id="my-app", timeout=5)


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_the_coordinator_s_wait_returns_before_on_assign_ran(regroup_broker: Broker) -> None:
    # The SyncGroup answer, which carries the assignment to the client, is held 1.5 s.
    regroup_broker.set_rtt(1500, "SyncGroup")
    with _driver(regroup_broker, "confluent-kafka") as driver:
        regroup_broker.wait_for_assignment("g", {TOPIC: [0, 1]}, client_id="app", timeout=20)
        returned = time.monotonic()
        assert driver.view().assigned == {}  # the coordinator has assigned; the app has not
        seen = driver.wait_for(lambda app: app.assigned == BOTH, timeout=20)
        (assigned,) = seen.calls("assigned")
        assert assigned.at > returned - driver_start(driver)


def driver_start(driver: GroupDriver) -> float:
    """The monotonic time the driver counts ``at`` from."""
    return driver._state.start


# -- the driver with each client ------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_each_client_s_callbacks_and_records_are_recorded(
    regroup_broker: Broker, client: str
) -> None:
    regroup_broker.produce(
        TOPIC, ["a", "b", "c"], keys=["k1", "k2", "k3"], headers=[{"trace": "t"}] * 3
    )
    with _driver(regroup_broker, client) as driver:
        seen = driver.wait_for(lambda app: app.assigned == BOTH and len(app.records) == 3)
        assert sorted(v or b"" for v in seen.values()) == [b"a", b"b", b"c"]
        assert {(r.key, r.headers) for r in seen.records} == {
            (k, (("trace", b"t"),)) for k in (b"k1", b"k2", b"k3")
        }
        # Each callback with its partitions and time; the records came after the assignment.
        first = next(c for c in seen.calls("assigned") if c.partitions)
        assert first.partitions == ((TOPIC, 0), (TOPIC, 1))
        assert 0 < first.at <= min(r.at for r in seen.records)
        assert seen.running and seen.polls > 0 and seen.errors == ()
        # Work on the consumer's own thread: a commit (awaited there for aiokafka).
        # confluent-kafka's commit() is asynchronous unless asked: wait for its answer.
        if client == "confluent-kafka":
            driver.call(lambda consumer: consumer.commit(asynchronous=False))
        else:
            driver.call(lambda consumer: consumer.commit())
        ends: dict[int, int] = {}
        for record in seen.records:
            ends[record.partition] = max(ends.get(record.partition, 0), record.offset + 1)
        assert regroup_broker.committed("g") == {TOPIC: dict(sorted(ends.items()))}
    assert driver.view().running is False
    assert regroup_broker.members("g") == {}  # close() left the group


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_a_second_member_takes_a_partition_and_the_first_sees_it_go(
    regroup_broker: Broker, client: str
) -> None:
    with _driver(regroup_broker, client, client_id="first") as first:
        first.wait_for(lambda app: app.assigned == BOTH, timeout=20)
        with _driver(regroup_broker, client, client_id="second") as second:
            moved = second.wait_for(lambda app: len(app.owned(TOPIC)) == 1, timeout=20)
            kept = first.wait_for(lambda app: app.owned(TOPIC) == {0, 1} - moved.owned(TOPIC))
            # What moved was revoked from the first before the second got it.
            revoked = [
                c for c in kept.calls("revoked") if (TOPIC, *moved.owned(TOPIC)) in c.partitions
            ]
            gained = [c for c in moved.calls("assigned") if c.partitions]
            assert revoked and gained and revoked[0].at < first_seen(first, second, gained[-1].at)


def first_seen(first: GroupDriver, second: GroupDriver, at: float) -> float:
    """``at`` of ``second``'s clock on ``first``'s clock."""
    return at + second._state.start - first._state.start


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_kafka_python_s_empty_first_assignment(regroup_broker: Broker) -> None:
    # Every Metadata answer is held 0.8 s: kafka-python joins before its subscription's
    # arrives and is assigned nothing. (It rejoins when the metadata comes; kafka-python
    # 3.0.12 wedges in about half of those rejoins here, its session expiring with no
    # callback (see ``subscribe_kafka_python``), so the test does not wait for it.)
    regroup_broker.set_rtt(800, "Metadata")
    with _driver(regroup_broker, "kafka-python", metadata_first=False) as driver:
        seen = driver.wait_for(lambda app: bool(app.calls("assigned")), timeout=20)
    assert seen.calls("assigned")[0].partitions == ()
    # The driver's default asks for the metadata first: one assignment, the real one.
    with _driver(regroup_broker, "kafka-python") as driver:
        seen = driver.wait_for(lambda app: app.assigned == BOTH, timeout=20)
    assert [c.partitions for c in seen.calls("assigned")] == [((TOPIC, 0), (TOPIC, 1))]


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_the_application_s_hooks_run_inside_the_callbacks(regroup_broker: Broker) -> None:
    regroup_broker.produce(TOPIC, ["a", "b"])
    order: list[str] = []

    def on_assigned(consumer: Any, partitions: Any) -> None:
        order.append(f"hook {len(partitions)}")

    def on_record(consumer: Any, record: Any) -> None:
        order.append(f"record {record.value!r}")
        consumer.commit(asynchronous=False)  # librdkafka: commit what was consumed

    with _driver(
        regroup_broker, "confluent-kafka", on_assigned=on_assigned, on_record=on_record
    ) as driver:
        seen = driver.wait_for(lambda app: len(app.records) == 2)
    assert order[0] == "hook 2" and sorted(order[1:]) == ["record b'a'", "record b'b'"]
    assert [c.kind for c in seen.callbacks] == ["assigned"]
    assert regroup_broker.committed("g") == {TOPIC: {0: 1, 1: 1}}


@pytest.mark.regroup_broker(topics={"orders": 4})
def test_the_readme_s_fenced_kip848_member(regroup_broker: Broker) -> None:
    # README.md, "Testing your consumers", as printed there.
    lost: list[list[int]] = []

    class MyApp:
        def on_lost(self, consumer: Any, partitions: Any) -> None:
            lost.append(sorted(tp.partition for tp in partitions))

    my_app = MyApp()
    with GroupDriver(
        "confluent-kafka",
        regroup_broker.bootstrap,
        "my-group",
        ["orders"],
        config={"group.protocol": "consumer"},
        on_lost=my_app.on_lost,
    ) as app:
        app.wait_for(lambda seen: seen.owned("orders") == {0, 1, 2, 3})  # on_assign ran
        (member,) = regroup_broker.members("my-group")
        regroup_broker.fence_member("my-group", member)  # next heartbeat: FENCED_MEMBER_EPOCH
        app.wait_for(lambda seen: seen.calls("lost"))  # your on_lost ran
        assert lost == [[0, 1, 2, 3]]
        # librdkafka rejoins with epoch 0 and is assigned again.
        seen = app.wait_for(lambda seen: seen.owned("orders") == {0, 1, 2, 3})
    assert [c.kind for c in seen.callbacks if c.partitions][:2] == ["assigned", "lost"]


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_a_heartbeat_answer_held_past_the_session_timeout_takes_the_partitions(
    regroup_broker: Broker,
) -> None:
    # librdkafka's own test of this pairs NONE with an RTT beyond session.timeout.ms: the
    # heartbeat is served, but its answer comes after the session (3 s) ran out.
    with _driver(regroup_broker, "kafka-python") as driver:
        driver.wait_for(lambda app: app.assigned == BOTH, timeout=20)
        (before,) = regroup_broker.members("g")
        regroup_broker.push_request_errors("Heartbeat", "NONE", rtt_ms=4500)
        seen = driver.wait_for(
            lambda app: (
                len([c for c in app.callbacks if c.partitions]) == 3 and app.assigned == BOTH
            ),
            timeout=20,
        )
        (after,) = regroup_broker.members("g")
    # The coordinator expired the member. kafka-python reports its partitions lost when
    # the next heartbeat gets UNKNOWN_MEMBER_ID, or revokes them when its own session
    # timer ran out first and it rejoins: which one depends on which comes first.
    kinds = [c.kind for c in seen.callbacks if c.partitions]
    assert kinds in (["assigned", "lost", "assigned"], ["assigned", "revoked", "assigned"])
    assert after != before  # rejoined as a new member


def _seeded_member_ids(seed: int) -> list[str]:
    with (
        Broker(topics={TOPIC: 2}, seed=seed) as broker,
        _driver(broker, "kafka-python", client_id="a") as first,
    ):
        first.wait_for(lambda app: app.assigned == BOTH, timeout=20)
        with _driver(broker, "kafka-python", client_id="b") as second:  # joins second
            second.wait_for(lambda app: len(app.owned(TOPIC)) == 1, timeout=20)
            first.wait_for(lambda app: len(app.owned(TOPIC)) == 1, timeout=20)
            return sorted(broker.members("g"))


def test_a_seed_gives_real_clients_the_same_member_ids_every_run() -> None:
    # Classic member ids are drawn by the coordinator: the same joins in the same order
    # with the same seed get the same ids, so a test may write them down.
    first = _seeded_member_ids(11)
    assert first == _seeded_member_ids(11)
    assert [member.split("-", 1)[0] for member in first] == ["a", "b"]


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_the_plugin_s_driver_factory_stops_what_it_made(
    regroup_broker: Broker, regroup_driver: Callable[..., GroupDriver]
) -> None:
    app = regroup_driver("aiokafka", "g", [TOPIC], config=CONFIGS["aiokafka"])
    app.wait_for_assignment({TOPIC: [0, 1]}, timeout=20)
    assert list(regroup_broker.members("g"))


# -- failures say what happened -------------------------------------------------------------


@pytest.mark.regroup_broker(topics={TOPIC: 2})
def test_a_wait_that_runs_out_says_what_it_saw(regroup_broker: Broker) -> None:
    with _driver(regroup_broker, "confluent-kafka") as driver:
        driver.wait_for(lambda app: app.assigned == BOTH, timeout=20)
        with pytest.raises(DriverTimeout, match=r"assigned=\{'orders': \[0, 1\]\}"):
            driver.wait_for_assignment({TOPIC: [0]}, timeout=0.3)


@pytest.mark.regroup_broker(topics={TOPIC: 1})
def test_nothing_is_left_behind(regroup_broker: Broker) -> None:
    threads = threading.active_count()
    for client in CLIENTS:
        driver = _driver(regroup_broker, client).start()
        driver.wait_for(lambda app: app.assigned == {TOPIC: {0}}, timeout=20)
        driver.stop()
        assert driver.view().running is False
        with pytest.raises(DriverError, match="not running"):
            driver.call(lambda consumer: None)
    # The driver's thread and the clients' own (kafka-python's heartbeat thread) are gone.
    deadline = time.monotonic() + 5
    while threading.active_count() > threads and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == threads


def test_a_client_that_cannot_start_fails_the_wait_at_once() -> None:
    driver = GroupDriver(
        "confluent-kafka", "127.0.0.1:1", "g", [TOPIC], config={"no.such.setting": 1}
    )
    with driver:
        started = time.monotonic()
        with pytest.raises(DriverError, match=r"no\.such\.setting"):
            driver.wait_for(lambda app: bool(app.assigned), timeout=20)
        assert time.monotonic() - started < 10
    assert isinstance(driver.view(), AppView)
    with pytest.raises(ValueError, match="unknown client"):
        GroupDriver("kafka-go", "x:1", "g", [TOPIC])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not one name"):
        GroupDriver("aiokafka", "x:1", "g", TOPIC)
