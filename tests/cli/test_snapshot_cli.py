"""``regroup snapshot`` against a real ``regroup serve`` (``BackgroundServer``) with groups
of real clients: a classic group (static members on cooperative-sticky) and a KIP-848
consumer group, both of confluent-kafka consumers, and a confluent-kafka producer at a
known rate. The scenario file must hold the group's members, partitions and rate, and
``regroup compare`` must run it as it is.

The real clients poll on a thread of their own; every wait is bounded and ends as soon
as its condition holds. The rate is checked within a tolerance: a producer paced on the
wall clock, sampled over a short window, is not exact to the record.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shutil
import socket
import subprocess
import threading
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from regroup.cli.main import main
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.server.app import ServerOptions
from regroup.server.background import BackgroundServer
from regroup.sim.scenario import load_scenario
from regroup.snapshot.model import GroupView, MemberView, Sample, Snapshot, SnapshotError
from regroup.snapshot.scenario import snapshot_scenario

pytestmark = [pytest.mark.xdist_group("heavy")]

TOPIC = "orders"
PARTITIONS = 6
#: Records per second per partition the producer sends.
RATE = 20

FAST = dataclasses.replace(
    GroupCoordinatorConfig(),
    group_initial_rebalance_delay_ms=0,
    group_min_session_timeout_ms=500,
    group_consumer_heartbeat_interval_ms=300,
    group_consumer_min_heartbeat_interval_ms=100,
    group_consumer_session_timeout_ms=4000,
    group_consumer_min_session_timeout_ms=1000,
)


def wait_until(what: str, predicate: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting until {what}")


class Clients:
    """Real confluent-kafka consumers and a paced producer, polled on background threads."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.consumers: list[Any] = []
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.lock = threading.Lock()

    def consumer(self, group: str, client_id: str, **config: Any) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": group,
                "client.id": client_id,
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 200,
                "auto.offset.reset": "earliest",
                "log_level": 0,
                **config,
            }
        )
        consumer.subscribe([TOPIC])
        with self.lock:
            self.consumers.append(consumer)

    def start(self) -> None:
        self.threads = [
            threading.Thread(target=self._poll, daemon=True),
            threading.Thread(target=self._produce, daemon=True),
        ]
        for thread in self.threads:
            thread.start()

    def _poll(self) -> None:
        while not self.stopping.is_set():
            with self.lock:
                consumers = list(self.consumers)
            for consumer in consumers:
                consumer.poll(0.02)

    def _produce(self) -> None:
        """One record to each partition every 1/RATE s, on an absolute schedule."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0, "log_level": 0})
        start = time.monotonic()
        sent = 0
        while not self.stopping.is_set():
            for partition in range(PARTITIONS):
                producer.produce(TOPIC, b"r", partition=partition)
            sent += 1
            producer.poll(0)
            time.sleep(max(0.0, start + sent / RATE - time.monotonic()))
        producer.flush(5)

    def close(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=10)
        for consumer in self.consumers:
            with contextlib.suppress(Exception):
                consumer.close()


def described(bootstrap: str, group: str) -> Any:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    return admin.describe_consumer_groups([group], request_timeout=5)[group].result(timeout=10)


def settled(bootstrap: str, group: str, members: int) -> bool:
    """``members`` members whose assignments split every partition of the topic."""
    d = described(bootstrap, group)
    owned = [{tp.partition for tp in m.assignment.topic_partitions} for m in d.members]
    union: set[int] = set().union(*owned) if owned else set()
    return (
        len(d.members) == members
        and getattr(d.state, "name", "") == "STABLE"
        and union == set(range(PARTITIONS))
        and sum(map(len, owned)) == PARTITIONS
    )


@pytest.fixture(scope="module")
def live() -> Iterator[BackgroundServer]:
    """A server with a classic group ``shop`` (two static members, cooperative-sticky) and
    a KIP-848 group ``kip848`` (two members), both reading ``orders`` while a producer
    writes RATE records/s to each of its partitions."""
    options = ServerOptions(host="127.0.0.1", port=0, config=FAST, default_partitions=3)
    with BackgroundServer(options) as server:
        assert server.server is not None
        server.call(server.server.create_topic, TOPIC, PARTITIONS)
        clients = Clients(server.bootstrap)
        try:
            for n in range(2):
                clients.consumer(
                    "shop",
                    f"shop-{n}",
                    **{
                        "group.instance.id": f"shop-instance-{n}",
                        "session.timeout.ms": 6000,
                        "partition.assignment.strategy": "cooperative-sticky",
                    },
                )
                clients.consumer("kip848", f"kip848-{n}", **{"group.protocol": "consumer"})
            clients.start()
            wait_until("shop is stable", lambda: settled(server.bootstrap, "shop", 2))
            wait_until("kip848 is stable", lambda: settled(server.bootstrap, "kip848", 2))
            yield server
        finally:
            clients.close()


def _snapshot(server: BackgroundServer, group: str, out: Path, *extra: str) -> int:
    return main(
        [
            "snapshot",
            "--bootstrap-server",
            server.bootstrap,
            "--group",
            group,
            "--sample-seconds",
            "2",
            "--out",
            str(out),
            *extra,
        ]
    )


@pytest.mark.parametrize(
    ("group", "kind", "protocol", "static"),
    [("shop", "classic", "cooperative", True), ("kip848", "consumer", "consumer", False)],
)
def test_a_snapshot_holds_the_groups_members_partitions_and_rate(
    live: BackgroundServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    group: str,
    kind: str,
    protocol: str,
    static: bool,
) -> None:
    out = tmp_path / f"{group}.toml"
    assert _snapshot(live, group, out) == 0
    captured = capsys.readouterr()
    assert "sampling the end offsets" in captured.err  # progress during the wait
    assert f"next: regroup compare --scenario {out}" in captured.err
    scenario = load_scenario(str(out))
    assert scenario.members == 2
    assert scenario.protocol == protocol
    assert scenario.static is static
    assert dict(scenario.topics) == {TOPIC: PARTITIONS}
    assert abs(scenario.data.records_per_second - RATE) <= 0.2 * RATE
    assert scenario.protocols == ("eager", "cooperative", "consumer")
    assert [a.action for a in scenario.actions] == ["rolling_bounce"]
    # The header says where each value came from, and names every member.
    text = out.read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert header[0].startswith(f"# regroup snapshot of {kind} group '{group}' on 127.0.0.1:")
    assert "# observed: [group] members = 2" in header
    assert any(line.startswith("# observed: [data] records_per_second = ") for line in header)
    assert any(line.startswith("# assumed: [broker] Kafka's defaults") for line in header)
    assert any(line.startswith("# assumed: [[actions]]") for line in header)
    for n in range(2):
        assert any(f"client {group}-{n}," in line for line in header)
    if static:
        assert sum("instance shop-instance-" in line for line in header) == 2
    # The epochs librdkafka does not surface, read on the coordinator by regroup's wire
    # client: KIP-848's from ConsumerGroupDescribe. (A classic member's generation is the
    # one its Subscription reported when it last joined: -1, unknown, for a member that
    # joined the first generation and never rejoined, as here.)
    assert not any("epochs unknown" in line for line in header), header
    members = [line for line in header if f", client {group}-" in line]
    if kind == "consumer":
        assert any(line.startswith("# observed: group epoch ") for line in header)
        assert all(re.search(r", epoch [1-9][0-9]*$", line) for line in members), members
    per_partition = re.search(r"# {3}per partition: (.*)", text)
    assert per_partition is not None
    rates = [float(x.split()[1]) for x in per_partition.group(1).split(", ")]
    assert len(rates) == PARTITIONS and all(abs(r - RATE) <= 0.25 * RATE for r in rates)
    # compare takes the file as it is.
    assert main(["compare", "--scenario", str(out), "--seeds", "1", "--json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    assert sorted(compared["protocols"]) == ["consumer", "cooperative", "eager"]
    assert compared["scenario"] == f"snapshot-{group}-rolling-bounce"


def test_json_out_and_stdout_carry_the_same_scenario(
    live: BackgroundServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "kip848.json"
    assert _snapshot(live, "kip848", out, "--what-if", "crash") == 0
    from_json = load_scenario(str(out))
    assert [a.action for a in from_json.actions] == ["crash"]
    capsys.readouterr()
    code = main(
        [
            *("snapshot", "--bootstrap-server", live.bootstrap, "--group", "kip848"),
            *("--sample-seconds", "0.5", "--what-if", "crash"),
        ]
    )
    assert code == 0
    printed = tomllib.loads(capsys.readouterr().out)
    assert printed["group"]["members"] == from_json.members == 2
    assert printed["topics"] == dict(from_json.topics)


def test_an_unknown_group_is_kafkas_error_and_exit_2(
    live: BackgroundServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _snapshot(live, "nobody", tmp_path / "x.toml") == 2
    err = capsys.readouterr().err
    assert err == (
        "regroup snapshot: error: GroupIdNotFoundException: "
        "Consumer group 'nobody' does not exist.\n"
    )
    assert not (tmp_path / "x.toml").exists()


def test_an_empty_group_is_kafkas_message_and_exit_2(
    live: BackgroundServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A group with committed offsets and no member (an admin's commit, generation -1)."""
    from regroup.server.clients.wire_client import WireClient

    with WireClient("127.0.0.1", live.port) as client:
        committed = client.request(
            8,
            8,
            {
                "group_id": "idle",
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": [
                    {
                        "name": TOPIC,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 1,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                ],
            },
        )
        assert committed.topics[0].partitions[0].error_code.value == 0
    assert _snapshot(live, "idle", tmp_path / "idle.toml") == 2
    assert capsys.readouterr().err == (
        "regroup snapshot: error: Consumer group 'idle' has no active members.\n"
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_bootstrap_fails_in_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing listens: one line and exit 2 once the --timeout has passed, never a hang
    (the bound only guards against hanging; it is not a performance figure)."""
    started = time.monotonic()
    bootstrap = f"127.0.0.1:{_closed_port()}"
    code = main(["snapshot", "--bootstrap-server", bootstrap, "--group", "g", "--timeout", "1"])
    assert code == 2
    assert time.monotonic() - started < 15
    err = capsys.readouterr().err
    assert err.startswith("regroup snapshot: error: TimeoutException: no answer from 127.0.0.1:")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--bootstrap-server", "nohost"], "--bootstrap-server must be HOST:PORT"),
        (["--sample-seconds", "0"], "--sample-seconds must be a number of seconds >= 0.1"),
        (["--sample-seconds", "nan"], "--sample-seconds must be a number of seconds"),
        (["--timeout", "-1"], "--timeout must be a number of seconds >= 0.1"),
        (["--out", "x.yaml"], "--out must end in .toml or .json"),
    ],
)
def test_user_mistakes_are_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = {"--bootstrap-server": "127.0.0.1:9", "--group": "g"}
    for key, value in zip(argv[::2], argv[1::2], strict=True):
        base[key] = value
    words = [w for pair in base.items() for w in pair]
    assert main(["snapshot", *words]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"regroup snapshot: error: {message}")
    assert err.count("\n") == 1


def test_a_missing_command_config_is_a_user_mistake(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    absent = str(tmp_path / "absent.properties")
    code = main(
        [
            "snapshot",
            "--bootstrap-server",
            "127.0.0.1:9",
            "--group",
            "g",
            "--command-config",
            absent,
        ]
    )
    assert code == 2
    assert "cannot read --command-config" in capsys.readouterr().err


# -- the scenario rules, on a snapshot built by hand ------------------------------------------


def _view(members: list[MemberView], kind: str = "classic", assignor: str = "range") -> GroupView:
    return GroupView("g", kind, "Stable", assignor, tuple(members), "h:1 (0)", "DescribeGroups")


def _member(n: int, instance: bool, parts: list[int]) -> MemberView:
    return MemberView(
        f"m{n}", f"i{n}" if instance else None, f"c{n}", "h", tuple(("t", p) for p in parts)
    )


def _made(group: GroupView, per_partition: list[int], **kw: Any) -> Snapshot:
    first = {("t", p): 100 for p in range(len(per_partition))}
    second = {("t", p): 100 + n * 10 for p, n in enumerate(per_partition)}
    return Snapshot(
        bootstrap="h:1",
        taken_at="2026-12-03T00:00:00+00:00",
        library="confluent-kafka 2.16.1, librdkafka 2.16.0",
        group=group,
        partitions={"t": len(per_partition)},
        committed={("t", 0): 90},
        first=Sample(0.0, first),
        second=Sample(10.0, second),
        **kw,
    )


def test_the_rate_is_the_mean_per_partition_rounded_and_never_zero_when_records_flow() -> None:
    group = _view([_member(0, False, [0, 1])])
    scenario, header = snapshot_scenario(_made(group, [3, 1]))
    assert scenario.data.records_per_second == 2  # (3 + 1) / 2 records/s
    assert scenario.protocol == "eager"
    assert any("lag 40 records over 1 committed partitions" in line for line in header)
    trickle, _ = snapshot_scenario(_made(group, [0, 0]), "steady")
    assert trickle.data.records_per_second == 0
    slow = _made(group, [0, 0])
    slow = dataclasses.replace(slow, second=Sample(100.0, {("t", 0): 101, ("t", 1): 100}))
    assert snapshot_scenario(slow)[0].data.records_per_second == 1  # 0.005/s: not idle


def test_mostly_static_groups_are_written_static_and_the_header_says_so() -> None:
    group = _view([_member(0, True, [0]), _member(1, True, [1]), _member(2, False, [])])
    scenario, header = snapshot_scenario(_made(group, [1, 1]))
    assert scenario.static is True
    assert any("2 of 3 members have a group.instance.id: written static" in h for h in header)


def test_epochs_and_generations_are_in_the_member_lines() -> None:
    member = dataclasses.replace(_member(0, False, [0]), epoch=7)
    _, classic = snapshot_scenario(_made(_view([member]), [1]))
    assert any(line.endswith("owns t-0, generation 7") for line in classic)
    consumer = dataclasses.replace(
        _view([member], kind="consumer", assignor="uniform"), group_epoch=9, assignment_epoch=8
    )
    _, header = snapshot_scenario(_made(consumer, [1]))
    assert any(line.endswith("owns t-0, epoch 7") for line in header)
    assert header[4].startswith("observed: group epoch 9, target assignment epoch 8 ")


def test_broker_and_group_configs_the_broker_tells_are_written_as_observed() -> None:
    from regroup.snapshot.model import ConfigValue

    group = _view([_member(0, False, [0])], kind="consumer", assignor="uniform")
    snapshot = _made(
        group,
        [1],
        broker_configs={
            "group.consumer.heartbeat.interval.ms": ConfigValue("6000", "STATIC_BROKER_CONFIG"),
            "group.consumer.assignors": ConfigValue(
                "org.apache.kafka.coordinator.group.assignor.UniformAssignor,"
                "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
                "DEFAULT_CONFIG",
            ),
            "log.retention.ms": ConfigValue("1", "DEFAULT_CONFIG"),
        },
        group_configs={
            "consumer.session.timeout.ms": ConfigValue("50000", "DYNAMIC_GROUP_CONFIG"),
            "consumer.heartbeat.interval.ms": ConfigValue("5000", "DEFAULT_CONFIG"),
        },
    )
    scenario, header = snapshot_scenario(snapshot)
    assert dict(scenario.broker) == {
        "group.consumer.assignors": "uniform,range",
        "group.consumer.heartbeat.interval.ms": 6000,
        "group.consumer.session.timeout.ms": 50000,
    }
    assert scenario.protocol == "consumer"
    assert (
        "observed: [broker] group.consumer.session.timeout.ms = 50000 "
        "(group config consumer.session.timeout.ms)"
    ) in header


def test_configs_regroup_would_refuse_fall_back_to_kafkas_defaults() -> None:
    from regroup.snapshot.model import ConfigValue

    group = _view([_member(0, False, [0])])
    # A heartbeat interval longer than the session timeout: regroup's coordinator refuses it.
    bad = {"group.consumer.heartbeat.interval.ms": ConfigValue("90000", "STATIC_BROKER_CONFIG")}
    scenario, header = snapshot_scenario(_made(group, [1], broker_configs=bad))
    assert dict(scenario.broker) == {}
    assert any(line.startswith("not written: the broker's group configs (") for line in header)


def test_a_group_with_no_members_or_no_topics_has_no_scenario() -> None:
    with pytest.raises(SnapshotError, match="has no active members"):
        snapshot_scenario(_made(_view([]), [1]))
    empty = dataclasses.replace(_made(_view([_member(0, False, [])]), [1]), partitions={})
    with pytest.raises(SnapshotError, match="no topic to simulate"):
        snapshot_scenario(empty)


# -- TLS, SASL and ACLs through --command-config -----------------------------------------------

PASSWORDS = {"alice": "alice-secret", "mallory": "mallory-secret"}


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """(key+certificate PEM, certificate PEM) for 127.0.0.1, by the openssl command line."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command line is not installed")
    key, cert = directory / "broker.key", directory / "broker.crt"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/O=regroup/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    both = directory / "broker.pem"
    both.write_text(key.read_text() + cert.read_text())
    return both, cert


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A SASL_SSL listener (self-signed certificate) with an authorizer: alice may read
    group ``shop`` and topic ``orders``; mallory only the topic. ``shop`` has one KIP-848
    member (alice's). Yields the bootstrap and the CA certificate."""
    import ssl

    from regroup.server.clients.wire_client import WireClient, consumer_join_values
    from regroup.server.security.client_login import login
    from regroup.server.security.config import SecurityConfig

    keystore, cert = _self_signed(tmp_path)
    users = tmp_path / "users.txt"
    users.write_text("".join(f"{u} SCRAM-SHA-256 password={p}\n" for u, p in PASSWORDS.items()))
    acls = tmp_path / "acls.txt"
    acls.write_text(
        "ALLOW User:alice READ GROUP LITERAL shop\n"
        "ALLOW User:alice READ TOPIC LITERAL orders\n"
        "ALLOW User:mallory READ TOPIC LITERAL orders\n"
    )
    security = SecurityConfig.from_properties(
        {
            "listeners": "SASL_SSL://127.0.0.1:0",
            "ssl.keystore.location": str(keystore),
            "regroup.sasl.credentials.file": str(users),
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "regroup.acls.file": str(acls),
        }
    )
    options = ServerOptions(host="127.0.0.1", port=0, config=FAST, security=security)
    with BackgroundServer(options) as server:
        assert server.server is not None and server.server.security is not None
        server.call(server.server.create_topic, TOPIC, 2)
        ((_, port),) = server.server.security.bound.values()
        context = ssl.create_default_context(cafile=str(cert))
        with WireClient("127.0.0.1", port, ssl_context=context) as client:
            login(client, "SCRAM-SHA-256", "alice", PASSWORDS["alice"])
            beat = client.request(
                68, 1, consumer_join_values("shop", "AAAAAAAAAAAAAAAAAAAAAA", (TOPIC,))
            )
            assert beat.error_code.value == 0
        yield f"127.0.0.1:{port}", cert


def _as(tmp_path: Path, cert: Path, user: str, password: str) -> str:
    """A command config by Kafka's names: the Java client's sasl.jaas.config and a PEM
    truststore."""
    config = tmp_path / f"{user}-{password}.properties"
    config.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password}";\n'
        f"ssl.truststore.location={cert}\n"
    )
    return str(config)


def _secured_snapshot(bootstrap: str, config: str, out: Path) -> int:
    return main(
        [
            *("snapshot", "--bootstrap-server", bootstrap, "--group", "shop"),
            *("--command-config", config, "--sample-seconds", "0.2", "--timeout", "3"),
            *("--out", str(out)),
        ]
    )


def test_tls_sasl_and_acls_by_kafkas_names(
    secured: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap, cert = secured
    out = tmp_path / "shop.toml"
    assert _secured_snapshot(bootstrap, _as(tmp_path, cert, "alice", PASSWORDS["alice"]), out) == 0
    scenario = load_scenario(str(out))
    assert (scenario.members, scenario.protocol, dict(scenario.topics)) == (
        1,
        "consumer",
        {TOPIC: 2},
    )
    assert "# observed: group epoch 1," in out.read_text()  # the wire client over TLS too
    capsys.readouterr()
    mallory = _as(tmp_path, cert, "mallory", PASSWORDS["mallory"])
    assert _secured_snapshot(bootstrap, mallory, tmp_path / "m.toml") == 2
    assert capsys.readouterr().err == (
        "regroup snapshot: error: GroupAuthorizationException: "
        "Not authorized to access group: shop\n"
    )
    wrong = _as(tmp_path, cert, "alice", "not-her-password")
    assert _secured_snapshot(bootstrap, wrong, tmp_path / "w.toml") == 2
    err = capsys.readouterr().err
    assert err.startswith("regroup snapshot: error: SaslAuthenticationException: ")
    assert err.count("\n") == 1
