"""SASL and ACLs on the wire with regroup's raw client: Kafka's answers, codes and texts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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
