"""SASL and ACLs on the wire with regroup's raw client: Kafka's answers, codes and texts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from regroup.server.app import ServerOptions
from regroup.server.background import BackgroundServer
from regroup.server.clients.wire_client import WireClient, WireClientError
from tests.server.security_support import plain_login, secure_options

ILLEGAL_SASL_STATE = 34
UNSUPPORTED_SASL_MECHANISM = 33
SASL_AUTHENTICATION_FAILED = 58
GROUP_AUTHORIZATION_FAILED = 30
TOPIC_AUTHORIZATION_FAILED = 29
CLUSTER_AUTHORIZATION_FAILED = 31
SECURITY_DISABLED = 54
UNKNOWN_TOPIC_ID = 100


@pytest.fixture
def sasl_server(tmp_path: Path) -> Iterator[BackgroundServer]:
    with BackgroundServer(secure_options(tmp_path, "SASL_PLAINTEXT://127.0.0.1:0")) as running:
        assert running.server is not None
        running.call(running.server.create_topic, "orders", 2)
        yield running


def client_as(server: BackgroundServer, user: str) -> WireClient:
    from tests.server.security_support import PASSWORDS

    client = WireClient("127.0.0.1", server.port)
    answer = plain_login(client, user, PASSWORDS[user])
    assert answer.error_code.value == 0, answer.error_message
    return client


def closed(client: WireClient) -> bool:
    try:
        client.read_frame()
    except (WireClientError, OSError):
        return True
    return False


def closed_while_sending(client: WireClient, frame: bytes) -> bool:
    """True when the server closes the connection for ``frame``: a server that
    stops reading an over-sized frame may reset the socket before the client
    has written all of it, which is the same refusal seen earlier."""
    try:
        client.send_raw(frame)
    except OSError:
        return True
    return closed(client)


def test_a_plaintext_listener_answers_sasl_requests_with_illegal_sasl_state() -> None:
    with (
        BackgroundServer(ServerOptions(host="127.0.0.1", port=0)) as server,
        WireClient("127.0.0.1", server.port) as client,
    ):
        handshake = client.request(17, 1, {"mechanism": "PLAIN"})
        assert handshake.error_code.value == ILLEGAL_SASL_STATE
        auth = client.request(36, 2, {"auth_bytes": b"\0a\0b"})
        assert auth.error_code.value == ILLEGAL_SASL_STATE
        assert auth.error_message == (
            "SaslAuthenticate request received after successful authentication"
        )
        # The connection is still served (Kafka's KafkaApis answers; it does not close).
        assert client.request(3, 1, {"topics": []}).brokers
        acls = client.request(29, 3, _all_acls())
        assert acls.error_code.value == SECURITY_DISABLED
        assert acls.error_message == "No Authorizer is configured."


def _all_acls() -> dict[str, object]:
    return {
        "resource_type_filter": 1,
        "resource_name_filter": None,
        "pattern_type_filter": 1,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }


def test_a_request_before_authentication_closes_the_connection(
    sasl_server: BackgroundServer,
) -> None:
    with WireClient("127.0.0.1", sasl_server.port) as client:
        assert client.request(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        _, frame = client.encode(3, 1, {"topics": []})
        client.send_raw(frame)
        assert closed(client)


def test_an_unsupported_mechanism_is_answered_then_closed(sasl_server: BackgroundServer) -> None:
    with WireClient("127.0.0.1", sasl_server.port) as client:
        answer = client.request(17, 1, {"mechanism": "GSSAPI"})
        assert answer.error_code.value == UNSUPPORTED_SASL_MECHANISM
        assert list(answer.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert closed(client)


@pytest.mark.parametrize(
    ("user", "password"),
    [("alice", "wrong"), ("nobody", "whatever")],
    ids=["bad-password", "no-user"],
)
def test_a_failed_plain_login_gets_kafkas_text_then_closes(
    sasl_server: BackgroundServer, user: str, password: str
) -> None:
    with WireClient("127.0.0.1", sasl_server.port) as client:
        answer = plain_login(client, user, password)
        assert answer.error_code.value == SASL_AUTHENTICATION_FAILED
        assert answer.error_message == "Authentication failed: Invalid username or password"
        assert closed(client)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_a_failed_login_is_answered_only_after_the_failed_authentication_delay(
    tmp_path: Path, mechanism: str
) -> None:
    """Kafka's ``connection.failed.authentication.delay.ms``: the failure response and the
    close wait that long (a lower bound: the answer cannot come sooner)."""
    import dataclasses
    import time

    from regroup.server.limits import ServerLimits

    options = dataclasses.replace(
        secure_options(tmp_path, "SASL_PLAINTEXT://127.0.0.1:0"),
        limits=ServerLimits(connection_failed_authentication_delay_ms=400),
    )
    with BackgroundServer(options) as running, WireClient("127.0.0.1", running.port) as client:
        assert client.request(17, 1, {"mechanism": mechanism}).error_code.value == 0
        first = b"\0alice\0wrong" if mechanism == "PLAIN" else b"n,,n=ghost,r=abcdefgh"
        started = time.monotonic()
        answer = client.request(36, 2, {"auth_bytes": first})
        waited = time.monotonic() - started
        assert answer.error_code.value == SASL_AUTHENTICATION_FAILED
        assert waited >= 0.4
        assert closed(client)


def test_after_authentication_sasl_requests_get_illegal_sasl_state(
    sasl_server: BackgroundServer,
) -> None:
    with client_as(sasl_server, "alice") as client:
        assert client.request(17, 1, {"mechanism": "PLAIN"}).error_code.value == ILLEGAL_SASL_STATE


def _join(group: str, member_id: str = "") -> dict[str, object]:
    return {
        "group_id": group,
        "session_timeout": 6000,
        "rebalance_timeout": 6000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
        "reason": None,
    }


def test_a_stranger_cannot_act_on_another_principals_group(sasl_server: BackgroundServer) -> None:
    with client_as(sasl_server, "alice") as alice, client_as(sasl_server, "mallory") as mallory:
        first = alice.request(11, 5, _join("shop"))
        assert first.error_code.value == 79  # MEMBER_ID_REQUIRED: alice may join
        victim = first.member_id
        # mallory joins with the victim's member id, leaves for it, commits for its group.
        assert mallory.request(11, 5, _join("shop", victim)).error_code.value == (
            GROUP_AUTHORIZATION_FAILED
        )
        leave = mallory.request(13, 3, {"group_id": "shop", "members": [{"member_id": victim}]})
        assert leave.error_code.value == GROUP_AUTHORIZATION_FAILED
        commit = mallory.request(
            8,
            8,
            {
                "group_id": "shop",
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": [
                    {
                        "name": "orders",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 5,
                                "committed_leader_epoch": -1,
                                "committed_metadata": None,
                            }
                        ],
                    }
                ],
            },
        )
        assert [p.error_code.value for t in commit.topics for p in t.partitions] == [
            GROUP_AUTHORIZATION_FAILED
        ]
        described = mallory.request(
            15, 5, {"groups": ["shop"], "include_authorized_operations": False}
        )
        assert [g.error_code.value for g in described.groups] == [GROUP_AUTHORIZATION_FAILED]
        listed = mallory.request(16, 4, {"states_filter": []})
        assert "shop" not in [g.group_id for g in listed.groups]
        assert "shop" in [g.group_id for g in alice.request(16, 4, {"states_filter": []}).groups]
        # DeleteGroups needs DELETE on the GROUP: READ (alice's) is not enough
        for principal in (alice, mallory):
            deleted = principal.request(42, 2, {"groups_names": ["shop"]})
            assert [(r.group_id, r.error_code.value) for r in deleted.results] == [
                ("shop", GROUP_AUTHORIZATION_FAILED)
            ]
        assert "shop" in [g.group_id for g in alice.request(16, 4, {"states_filter": []}).groups]


def test_topic_acls_are_enforced_per_topic(sasl_server: BackgroundServer) -> None:
    assert sasl_server.server is not None
    sasl_server.call(sasl_server.server.create_topic, "secret", 1)
    with client_as(sasl_server, "alice") as alice:
        metadata = alice.request(
            3, 9, {"topics": None, "allow_auto_topic_creation": False, **_NO_OPS}
        )
        assert [t.name for t in metadata.topics] == ["orders"]
        asked = alice.request(
            3,
            9,
            {
                "topics": [{"name": "secret"}, {"name": "orders"}],
                "allow_auto_topic_creation": False,
                **_NO_OPS,
            },
        )
        codes = {t.name: t.error_code.value for t in asked.topics}
        assert codes == {"orders": 0, "secret": TOPIC_AUTHORIZATION_FAILED}
        offsets = alice.request(
            2,
            1,
            {
                "replica_id": -1,
                "topics": [
                    {"name": n, "partitions": [{"partition_index": 0, "timestamp": -1}]}
                    for n in ("orders", "secret")
                ],
            },
        )
        codes = {t.name: t.partitions[0].error_code.value for t in offsets.topics}
        assert codes == {"orders": 0, "secret": TOPIC_AUTHORIZATION_FAILED}


_NO_OPS = {
    "include_cluster_authorized_operations": False,
    "include_topic_authorized_operations": False,
}


def _acl(principal: str, operation: int = 8) -> dict[str, object]:
    return {
        "resource_type": 3,
        "resource_name": "shop",
        "resource_pattern_type": 3,
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission_type": 3,
    }


def test_acls_are_created_described_and_deleted_over_the_wire(
    sasl_server: BackgroundServer,
) -> None:
    describe_shop = {"groups": ["shop"], "include_authorized_operations": False}
    with client_as(sasl_server, "admin") as admin, client_as(sasl_server, "mallory") as mallory:
        refused = mallory.request(30, 3, {"creations": [_acl("User:mallory")]})
        assert [r.error_code.value for r in refused.results] == [CLUSTER_AUTHORIZATION_FAILED]
        assert mallory.request(15, 5, describe_shop).groups[0].error_code.value == 30
        created = admin.request(30, 3, {"creations": [_acl("User:mallory"), _acl("nobody")]})
        assert [r.error_code.value for r in created.results] == [0, 42]  # INVALID_REQUEST
        assert mallory.request(15, 5, describe_shop).groups[0].error_code.value == 0
        described = admin.request(
            29, 3, {**_all_acls(), "resource_type_filter": 3, "resource_name_filter": "shop"}
        )
        principals = sorted(a.principal for r in described.resources for a in r.acls)
        assert principals == ["User:alice", "User:mallory"]
        deleted = admin.request(
            31,
            3,
            {
                "filters": [
                    {**_all_acls(), "principal_filter": "User:mallory", "resource_type_filter": 3}
                ]
            },
        )
        gone = [
            (m.resource_name, m.operation) for f in deleted.filter_results for m in f.matching_acls
        ]
        assert gone == [("mallory-group", 3), ("shop", 8)]
        assert mallory.request(15, 5, describe_shop).groups[0].error_code.value == 30


def test_regroup_groups_logs_in_with_a_command_config(
    sasl_server: BackgroundServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``regroup groups --command-config`` (kafka-consumer-groups.sh's option) over SASL."""
    from regroup.cli.main import main
    from tests.server.security_support import PASSWORDS

    with client_as(sasl_server, "alice") as alice:
        assert alice.request(11, 5, _join("shop")).error_code.value == 79
    bootstrap = ["--bootstrap-server", f"127.0.0.1:{sasl_server.port}"]
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        config = tmp_path / f"{mechanism}.properties"
        config.write_text(
            "security.protocol=SASL_PLAINTEXT\n"
            f"sasl.mechanism={mechanism}\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="admin" password="{PASSWORDS["admin"]}";\n'
        )
        assert main(["groups", "list", "--json", "--command-config", str(config), *bootstrap]) == 0
        assert "shop" in capsys.readouterr().out
    wrong = tmp_path / "wrong.properties"
    wrong.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.username=admin\nsasl.password=nope\n"
    )
    assert main(["groups", "list", "--command-config", str(wrong), *bootstrap]) == 2
    err = capsys.readouterr().err
    assert "SASL error 58: Authentication failed during authentication due to invalid " in err
    # Without a login the SASL listener closes the connection: one line, exit 2.
    assert main(["groups", "list", *bootstrap]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_acls_changed_over_the_wire_survive_a_restart(tmp_path: Path) -> None:
    """With --data-dir, CreateAcls/DeleteAcls are kept (DIR/acls.json), any group name."""
    import dataclasses

    from regroup.server.app import RegroupServer
    from regroup.server.security.config import SecurityError

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    options = dataclasses.replace(
        secure_options(tmp_path, "SASL_PLAINTEXT://127.0.0.1:0"), data_dir=data_dir
    )
    odd = "my shop #1"
    grant = {**_acl("User:mallory"), "resource_name": odd}
    describe = {"groups": [odd], "include_authorized_operations": False}
    with BackgroundServer(options) as server, client_as(server, "admin") as admin:
        assert [
            r.error_code.value for r in admin.request(30, 3, {"creations": [grant]}).results
        ] == [0]
        gone = admin.request(
            31, 3, {"filters": [{**_all_acls(), "principal_filter": "User:alice"}]}
        )
        assert len(gone.filter_results[0].matching_acls) == 3
    with BackgroundServer(options) as server, client_as(server, "mallory") as mallory:
        assert mallory.request(15, 5, describe).groups[0].error_code.value == 0
    with BackgroundServer(options) as server, client_as(server, "alice") as alice:
        # alice's ACLs from regroup.acls.file were deleted over the wire: they stay deleted.
        assert (
            alice.request(15, 5, {**describe, "groups": ["shop"]}).groups[0].error_code.value == 30
        )
    (data_dir / "acls.json").write_text("{not json")
    with pytest.raises(SecurityError, match="not a valid ACL store"):
        RegroupServer(options)


def test_described_groups_carry_the_principals_authorized_operations(
    sasl_server: BackgroundServer,
) -> None:
    """DescribeGroups v3+ ``include_authorized_operations``: Kafka's bit field of the
    GROUP operations the principal may perform (bit = AclOperation code)."""
    describe = {"groups": ["shop"], "include_authorized_operations": True}
    with client_as(sasl_server, "alice") as alice, client_as(sasl_server, "admin") as admin:
        assert alice.request(11, 5, _join("shop")).error_code.value == 79
        (group,) = alice.request(15, 5, describe).groups
        assert group.authorized_operations == (1 << 3) | (1 << 8)  # READ, DESCRIBE (implied)
        (group,) = admin.request(15, 5, describe).groups
        assert group.authorized_operations == sum(1 << op for op in (3, 6, 8, 10, 11))
        without = {**describe, "include_authorized_operations": False}
        (group,) = alice.request(15, 5, without).groups
        assert group.authorized_operations == -(2**31)


def test_metadata_by_topic_id_checks_describe(sasl_server: BackgroundServer) -> None:
    """Metadata v12+ by id: a topic the principal may not DESCRIBE is answered
    TOPIC_AUTHORIZATION_FAILED with a null name (Kafka's KafkaApis), never its name or
    partitions; an id of no topic stays UNKNOWN_TOPIC_ID."""
    import uuid

    assert sasl_server.server is not None
    sasl_server.call(sasl_server.server.create_topic, "secret-topic", 3)
    request = {"allow_auto_topic_creation": False, **_NO_OPS}
    nowhere = uuid.UUID(int=12345)
    with client_as(sasl_server, "admin") as admin, client_as(sasl_server, "alice") as alice:
        ids = {t.name: t.topic_id for t in admin.request(3, 12, {**request, "topics": None}).topics}
        asked = alice.request(
            3,
            12,
            {
                **request,
                "topics": [
                    {"name": None, "topic_id": topic_id}
                    for topic_id in (ids["secret-topic"], ids["orders"], nowhere)
                ],
            },
        )
        answers = {t.topic_id: t for t in asked.topics}
        assert len(answers) == 3
        secret = answers[ids["secret-topic"]]
        assert (secret.error_code.value, secret.name) == (TOPIC_AUTHORIZATION_FAILED, None)
        assert list(secret.partitions) == []
        orders = answers[ids["orders"]]
        assert (orders.error_code.value, orders.name, len(orders.partitions)) == (0, "orders", 2)
        assert answers[nowhere].error_code.value == UNKNOWN_TOPIC_ID
        # By name she gets the same refusal, with the name she asked and the zero id.
        (named,) = alice.request(
            3, 12, {**request, "topics": [{"name": "secret-topic", "topic_id": None}]}
        ).topics
        assert named.error_code.value == TOPIC_AUTHORIZATION_FAILED
        assert named.topic_id is None  # kio decodes the zero id as None


def _api_versions(software_name: str) -> dict[str, object]:
    return {"client_software_name": software_name, "client_software_version": "1"}


def test_a_frame_over_sasl_server_max_receive_size_before_login_closes(
    sasl_server: BackgroundServer,
) -> None:
    """Kafka's SaslServerAuthenticator reads at most ``sasl.server.max.receive.size``
    (512 KiB) per frame until the login completes: the size prefix alone closes."""
    limit = 524288
    with WireClient("127.0.0.1", sasl_server.port) as client:
        # Only the size prefix of a 90 MB frame: closed before its body arrives.
        assert closed_while_sending(client, (90 * 1024 * 1024).to_bytes(4, "big"))
    with WireClient("127.0.0.1", sasl_server.port) as client:
        assert client.request(17, 1, {"mechanism": "SCRAM-SHA-256"}).error_code.value == 0
        # A SCRAM client-first message of 600 KB is not read, evaluated or echoed.
        nonce = "n" * (600 * 1024)
        _, frame = client.encode(36, 2, {"auth_bytes": f"n,,n=alice,r={nonce}".encode()})
        assert len(frame) - 4 > limit
        assert closed_while_sending(client, frame)
    with WireClient("127.0.0.1", sasl_server.port) as client:
        # Under the cap an unauthenticated frame is still served.
        _, frame = client.encode(18, 3, _api_versions("a" * (400 * 1024)))
        client.send_raw(frame)
        assert client.read_frame()
        assert plain_login(client, "alice", "alice-secret").error_code.value == 0
    with client_as(sasl_server, "alice") as alice:
        # Once authenticated, the cap is socket.request.max.bytes again.
        names = [f"{i:02d}" + "x" * 30000 for i in range(20)]
        _, frame = alice.encode(
            3,
            9,
            {
                "topics": [{"name": n} for n in names],
                "allow_auto_topic_creation": False,
                **_NO_OPS,
            },
        )
        assert len(frame) - 4 > limit
        alice.send_raw(frame)
        answer = alice.read_frame()
        assert len(answer) > 20 * 30000


def test_sasl_server_max_receive_size_is_a_config(tmp_path: Path) -> None:
    options = secure_options(
        tmp_path, "SASL_PLAINTEXT://127.0.0.1:0", **{"sasl.server.max.receive.size": "1024"}
    )
    with BackgroundServer(options) as server:
        with WireClient("127.0.0.1", server.port) as client:
            assert closed_while_sending(client, client.encode(18, 3, _api_versions("a" * 2000))[1])
        with WireClient("127.0.0.1", server.port) as client:
            assert plain_login(client, "alice", "alice-secret").error_code.value == 0
            client.send_raw(client.encode(18, 3, _api_versions("a" * 2000))[1])
            assert client.read_frame()


def _control(client: WireClient, command: str, **args: object) -> dict[str, object]:
    from regroup.server.control.commands import decode_answer, encode_command

    client.send_raw(encode_command(7, "t", command, args))
    return decode_answer(client.read_frame())[1]


@pytest.fixture
def controlled_sasl_server(tmp_path: Path) -> Iterator[BackgroundServer]:
    import dataclasses

    options = dataclasses.replace(
        secure_options(tmp_path, "SASL_PLAINTEXT://127.0.0.1:0"), control=True
    )
    with BackgroundServer(options) as running:
        yield running


def test_the_control_channel_is_behind_the_login_and_alter_on_the_cluster(
    controlled_sasl_server: BackgroundServer,
) -> None:
    """``--control`` on a SASL listener: before the login a control request closes the
    connection unanswered; a principal without ALTER on the CLUSTER is refused and
    nothing runs; a super user (or ALTER on the CLUSTER) is served."""
    server = controlled_sasl_server
    for command, args in (("list_groups", {}), ("fence_member", {"group_id": "shop"})):
        with WireClient("127.0.0.1", server.port) as stranger:
            from regroup.server.control.commands import encode_command

            stranger.send_raw(encode_command(1, "t", command, args))
            assert closed(stranger)
    with client_as(server, "alice") as alice:
        assert alice.request(11, 5, _join("shop")).error_code.value == 79
        refused = _control(alice, "drop_connections")
        assert refused["ok"] is False
        assert "CLUSTER_AUTHORIZATION_FAILED" in str(refused["error"])
        assert "User:alice" in str(refused["error"])
        # Nothing ran: her own connection is still served.
        assert alice.request(16, 4, {"states_filter": []}).groups is not None
    with client_as(server, "admin") as admin:
        assert _control(admin, "list_groups") == {"ok": True, "result": ["shop"]}
        alter = 7  # AclOperation.ALTER on resource type 4, the CLUSTER
        grant = {**_acl("User:alice", alter), "resource_type": 4, "resource_name": "kafka-cluster"}
        created = admin.request(30, 3, {"creations": [grant]}).results
        assert [r.error_code.value for r in created] == [0]
    with client_as(server, "alice") as alice:
        # ALTER on the CLUSTER opens the channel to her too.
        assert _control(alice, "list_groups") == {"ok": True, "result": ["shop"]}


def test_regroup_ctl_logs_in_with_a_command_config(
    controlled_sasl_server: BackgroundServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from regroup.cli.main import main
    from tests.server.security_support import PASSWORDS

    bootstrap = ["--bootstrap-server", f"127.0.0.1:{controlled_sasl_server.port}"]
    config = tmp_path / "admin.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        f"sasl.username=admin\nsasl.password={PASSWORDS['admin']}\n"
    )
    assert main(["ctl", *bootstrap, "--command-config", str(config), "faults"]) == 0
    assert json.loads(capsys.readouterr().out)["timers_paused"] is False
    assert main(["ctl", *bootstrap, "faults"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--command-config" in err
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        f"sasl.username=alice\nsasl.password={PASSWORDS['alice']}\n"
    )
    assert main(["ctl", *bootstrap, "--command-config", str(config), "faults"]) == 2
    assert "CLUSTER_AUTHORIZATION_FAILED" in capsys.readouterr().err


def _heartbeat_until_assigned(client: WireClient, values: dict[str, object]) -> Any:
    """ConsumerGroupHeartbeat v1 until the answer carries an assignment (the regex is
    resolved on the server's next timer); the last answer."""
    import time

    answer = client.request(68, 1, values)
    assert answer.error_code.value == 0, answer.error_message
    deadline = time.monotonic() + 5
    while answer.assignment is None or not answer.assignment.topic_partitions:
        assert time.monotonic() < deadline, "no assignment"
        time.sleep(0.05)
        steady = {
            "group_id": values["group_id"],
            "member_id": values["member_id"],
            "member_epoch": answer.member_epoch,
            "topic_partitions": None,
        }
        answer = client.request(68, 1, steady)
        assert answer.error_code.value == 0, answer.error_message
    return answer


def _join_848(group: str, member: str, **subscription: object) -> dict[str, object]:
    return {
        "group_id": group,
        "member_id": member,
        "member_epoch": 0,
        "rebalance_timeout": 30_000,
        "subscribed_topic_names": None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": (),
        **subscription,
    }


def test_a_regex_resolves_to_the_topics_the_member_may_describe(
    sasl_server: BackgroundServer,
) -> None:
    """KIP-848 regex under an authorizer (Kafka's refreshRegularExpressions with
    filterTopicDescribeAuthorizedTopics): alice's ``orders|secret-orders`` is assigned
    ``orders`` only, and nothing names ``secret-orders`` to her group."""
    assert sasl_server.server is not None
    sasl_server.call(sasl_server.server.create_topic, "secret-orders", 2)
    request = {"allow_auto_topic_creation": False, **_NO_OPS}
    with client_as(sasl_server, "alice") as alice, client_as(sasl_server, "admin") as admin:
        ids = {t.name: t.topic_id for t in admin.request(3, 12, {**request, "topics": None}).topics}
        answer = _heartbeat_until_assigned(
            alice,
            _join_848(
                "shop", "alice-member-00000001", subscribed_topic_regex="orders|secret-orders"
            ),
        )
        assigned = {tp.topic_id for tp in answer.assignment.topic_partitions}
        assert assigned == {ids["orders"]}
        (group,) = admin.request(
            69, 1, {"group_ids": ["shop"], "include_authorized_operations": False}
        ).groups
        named = {
            tp.topic_name
            for m in group.members
            for a in (m.assignment, m.target_assignment)
            for tp in a.topic_partitions
        }
        assert named == {"orders"}


def test_consumer_group_describe_hides_groups_naming_undescribable_topics(
    sasl_server: BackgroundServer,
) -> None:
    """Kafka's handleConsumerGroupDescribe: a group whose assignments name a topic the
    caller may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED with no members."""
    assert sasl_server.server is not None
    sasl_server.call(sasl_server.server.create_topic, "secret-orders", 2)
    describe = {"group_ids": ["ops", "shop"], "include_authorized_operations": False}
    with client_as(sasl_server, "admin") as admin, client_as(sasl_server, "alice") as alice:
        _heartbeat_until_assigned(
            admin,
            _join_848(
                "ops", "admin-member-00000001", subscribed_topic_names=("orders", "secret-orders")
            ),
        )
        _heartbeat_until_assigned(
            alice, _join_848("shop", "alice-member-00000001", subscribed_topic_names=("orders",))
        )
        describe_ops = {**_acl("User:alice", 8), "resource_name": "ops"}  # DESCRIBE GROUP ops
        assert [
            r.error_code.value for r in admin.request(30, 3, {"creations": [describe_ops]}).results
        ] == [0]
        ops, shop = alice.request(69, 1, describe).groups
        assert (ops.group_id, ops.error_code.value) == ("ops", TOPIC_AUTHORIZATION_FAILED)
        assert ops.error_message == (
            "The group has described topic(s) that the client is not authorized to describe."
        )
        assert list(ops.members) == []
        assert (shop.error_code.value, len(shop.members)) == (0, 1)
        # Seen by the super user, the group is whole.
        ops_whole = admin.request(69, 1, describe).groups[0]
        assert (ops_whole.error_code.value, len(ops_whole.members)) == (0, 1)


def test_find_coordinator_v0_under_acls_is_answered_as_the_group_coordinator(
    sasl_server: BackgroundServer,
) -> None:
    """v0 has no key_type (it finds a group's coordinator only); the ACL check read it
    and failed, which closed the connection. The wire fuzzing after a SASL login found it."""
    with client_as(sasl_server, "alice") as client:
        mine = client.request(10, 0, {"key": "shop"})
        assert mine.error_code.value == 0 and mine.port == sasl_server.port
        other = client.request(10, 0, {"key": "mallory-group"})
        assert other.error_code.value == GROUP_AUTHORIZATION_FAILED
        assert other.node_id == -1
