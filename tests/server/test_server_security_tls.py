"""TLS listeners (SSL, SASL_SSL) with a self-signed certificate made by the test, several
listeners at once, and KIP-848 groups and heartbeats under ACLs."""

from __future__ import annotations

import dataclasses
import shutil
import socket
import ssl
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from regroup.server.background import BackgroundServer
from regroup.server.clients.wire_client import WireClient
from regroup.server.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from tests.server.security_support import PASSWORDS, plain_login, secure_options

pytestmark = pytest.mark.xdist_group("heavy")


def self_signed(directory: Path, cn: str = "localhost") -> tuple[Path, Path]:
    """(key+certificate PEM, certificate PEM), made with the openssl command line."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command line is not installed")
    key, cert = directory / f"{cn}.key", directory / f"{cn}.crt"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", f"/O=regroup/CN={cn}", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    both = directory / f"{cn}.pem"
    both.write_text(key.read_text() + cert.read_text())
    return both, cert


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BackgroundServer, Path]]:
    directory = tmp_path_factory.mktemp("tls")
    keystore, cert = self_signed(directory)
    options = secure_options(
        directory,
        "SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        **{"ssl.keystore.location": str(keystore)},
    )
    with BackgroundServer(options) as running:
        assert running.server is not None
        running.call(running.server.create_topic, "orders", 2)
        yield running, cert


def _port(server: BackgroundServer, name: str) -> int:
    assert server.server is not None and server.server.security is not None
    return next(p for lst, (_, p) in server.server.security.bound.items() if lst.name == name)


def test_confluent_over_sasl_ssl_with_a_self_signed_certificate(
    tls_server: tuple[BackgroundServer, Path],
) -> None:
    from confluent_kafka import Consumer, Producer

    server, cert = tls_server
    conf = {
        "bootstrap.servers": f"127.0.0.1:{_port(server, 'SASL_SSL')}",
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(cert),
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": PASSWORDS["alice"],
    }
    value = uuid.uuid4().bytes
    producer = Producer(conf)
    producer.produce("orders", value, partition=1)
    assert producer.flush(10) == 0
    consumer = Consumer({**conf, "group.id": "shop", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["orders"])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None and message.value() == value:
                break
        else:
            raise AssertionError("the record never came over TLS")
    finally:
        consumer.close()


def test_kafka_python_over_ssl_is_anonymous_and_needs_acls(
    tls_server: tuple[BackgroundServer, Path],
) -> None:
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError

    server, cert = tls_server
    consumer = KafkaConsumer(
        bootstrap_servers=f"127.0.0.1:{_port(server, 'SSL')}",
        security_protocol="SSL",
        ssl_cafile=str(cert),
        group_id="shop",
        consumer_timeout_ms=3000,
    )
    try:
        consumer.subscribe(["orders"])
        with pytest.raises(GroupAuthorizationFailedError):  # User:ANONYMOUS has no ACL
            list(consumer)
    finally:
        consumer.close()


def test_every_listener_advertises_its_own_address(
    tls_server: tuple[BackgroundServer, Path],
) -> None:
    server, cert = tls_server
    port = _port(server, "SASL_PLAINTEXT")
    with WireClient("127.0.0.1", port) as client:
        assert plain_login(client, "admin", PASSWORDS["admin"]).error_code.value == 0
        metadata = client.request(3, 1, {"topics": []})
        assert [(b.host, b.port) for b in metadata.brokers] == [("127.0.0.1", port)]
        found = client.request(10, 1, {"key": "shop", "key_type": 0})
        assert (found.host, found.port) == ("127.0.0.1", port)
    # The SSL listener speaks TLS with the certificate made above.
    context = ssl.create_default_context(cafile=str(cert))
    with (
        socket.create_connection(("127.0.0.1", _port(server, "SSL"))) as plain,
        context.wrap_socket(plain, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.version() is not None


def test_a_client_certificate_is_the_principal_on_ssl(tmp_path: Path) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    server_pem, server_cert = self_signed(tmp_path)
    _, client_cert = self_signed(tmp_path, "alice")
    options = secure_options(
        tmp_path,
        "SSL://127.0.0.1:0",
        **{
            "ssl.keystore.location": str(server_pem),
            "ssl.truststore.location": str(client_cert),
            "ssl.client.auth": "required",
        },
    )
    principal = "User:CN=alice,O=regroup"  # RFC 2253 order: most specific first
    acls = [
        AclBinding(ResourceType.GROUP, "tls-group", PatternType.LITERAL, principal, "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, principal, "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
    ]  # fmt: skip
    with BackgroundServer(options) as running:
        assert running.server is not None and running.server.security is not None
        running.call(running.server.create_topic, "orders", 2)
        authorizer = running.server.security.authorizer
        assert authorizer is not None
        running.call(authorizer.add, acls)
        consumer = KafkaConsumer(
            bootstrap_servers=f"127.0.0.1:{running.port}",
            security_protocol="SSL",
            ssl_cafile=str(server_cert),
            ssl_certfile=str(client_cert),
            ssl_keyfile=str(tmp_path / "alice.key"),
            group_id="tls-group",
        )
        try:
            # A commit needs READ on the group and on the topic: the certificate's principal.
            partition = TopicPartition("orders", 0)
            consumer.assign([partition])
            consumer.commit({partition: OffsetAndMetadata(0, "", -1)})
            assert consumer.committed(partition) == 0
        finally:
            consumer.close()


def test_a_certificate_subject_is_escaped_as_kafkas_default_mapping(tmp_path: Path) -> None:
    """A CN ``alice,O=shop`` is ``User:CN=alice\\,O\\=shop,O=regroup`` (the JDK's RFC 2253
    form): it does not get the ACLs of ``User:CN=alice,O=shop,O=regroup``."""
    server_pem, server_cert = self_signed(tmp_path)
    _, client_cert = self_signed(tmp_path, "alice,O=shop")
    options = secure_options(
        tmp_path,
        "SSL://127.0.0.1:0",
        **{
            "ssl.keystore.location": str(server_pem),
            "ssl.truststore.location": str(client_cert),
            "ssl.client.auth": "required",
        },
    )
    forged, escaped = "User:CN=alice,O=shop,O=regroup", "User:CN=alice\\,O\\=shop,O=regroup"
    acls = [
        AclBinding(ResourceType.GROUP, "forged", PatternType.LITERAL, forged, "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.GROUP, "escaped", PatternType.LITERAL, escaped, "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
    ]  # fmt: skip
    context = ssl.create_default_context(cafile=str(server_cert))
    context.load_cert_chain(str(client_cert), str(tmp_path / "alice,O=shop.key"))
    join = {
        "session_timeout": 6000,
        "rebalance_timeout": 6000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
        "reason": None,
    }
    with BackgroundServer(options) as running:
        assert running.server is not None and running.server.security is not None
        authorizer = running.server.security.authorizer
        assert authorizer is not None
        running.call(authorizer.add, acls)
        with WireClient("127.0.0.1", running.port, ssl_context=context) as client:
            codes = {
                group: client.request(11, 5, {**join, "group_id": group}).error_code.value
                for group in ("forged", "escaped")
            }
    assert codes == {"forged": 30, "escaped": 79}  # GROUP_AUTHORIZATION_FAILED; admitted


# -- KIP-848 under ACLs ------------------------------------------------------------------


@pytest.fixture
def sasl_server(tmp_path: Path) -> Iterator[BackgroundServer]:
    options = secure_options(tmp_path, "SASL_PLAINTEXT://127.0.0.1:0")
    options = dataclasses.replace(
        options,
        config=dataclasses.replace(
            options.config,
            group_consumer_heartbeat_interval_ms=300,
            group_consumer_min_heartbeat_interval_ms=100,
        ),
    )
    with BackgroundServer(options) as running:
        assert running.server is not None
        running.call(running.server.create_topic, "orders", 2)
        yield running


def test_a_kip_848_consumer_joins_under_acls_and_is_refused_without(
    sasl_server: BackgroundServer,
) -> None:
    from confluent_kafka import Consumer

    conf = {
        "bootstrap.servers": sasl_server.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "alice",
        "sasl.password": PASSWORDS["alice"],
        "group.protocol": "consumer",
    }
    for group, expected in (("shop", None), ("not-alices", "GROUP_AUTHORIZATION_FAILED")):
        consumer = Consumer({**conf, "group.id": group})
        errors: list[str] = []
        try:
            consumer.subscribe(["orders"])
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                message = consumer.poll(0.3)
                error = None if message is None else message.error()
                if error is not None:
                    errors.append(error.name())
                    break
                if expected is None and len(consumer.assignment()) == 2:
                    break
            if expected is None:
                assert len(consumer.assignment()) == 2, errors
            else:
                assert expected in errors
        finally:
            consumer.close()


def test_revoking_the_group_acl_stops_the_next_heartbeat(sasl_server: BackgroundServer) -> None:
    """The classic heartbeat's hot path is authorized too: a member whose ACL is deleted
    gets GROUP_AUTHORIZATION_FAILED on its next heartbeat."""
    join = {
        "group_id": "shop",
        "session_timeout": 10000,
        "rebalance_timeout": 10000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
        "reason": None,
    }
    with WireClient("127.0.0.1", sasl_server.port) as alice:
        assert plain_login(alice, "alice", PASSWORDS["alice"]).error_code.value == 0
        member = alice.request(11, 5, join).member_id
        joined = alice.request(11, 5, {**join, "member_id": member})
        assert joined.error_code.value == 0
        sync = {
            "group_id": "shop",
            "generation_id": joined.generation_id,
            "member_id": member,
            "group_instance_id": None,
            "assignments": [{"member_id": member, "assignment": b""}],
        }
        assert alice.request(14, 3, sync).error_code.value == 0
        beat = {"group_id": "shop", "generation_id": joined.generation_id, "member_id": member}
        beat = {**beat, "group_instance_id": None}
        assert alice.request(12, 4, beat).error_code.value == 0
        assert alice.request(12, 4, beat).error_code.value == 0  # the cached hot path
        server = sasl_server.server
        assert server is not None and server.security is not None
        authorizer = server.security.authorizer
        assert authorizer is not None
        sasl_server.call(
            authorizer.remove,
            AclBindingFilter(resource_type=ResourceType.GROUP, resource_name="shop"),
        )
        assert alice.request(12, 4, beat).error_code.value == 30


def test_regroup_groups_over_sasl_ssl(
    tls_server: tuple[BackgroundServer, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from regroup.cli.main import main

    server, cert = tls_server
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
        f"sasl.username=admin\nsasl.password={PASSWORDS['admin']}\nssl.ca.location={cert}\n"
    )
    bootstrap = f"127.0.0.1:{_port(server, 'SASL_SSL')}"
    argv = ["groups", "list", "--json", "--bootstrap-server", bootstrap]
    assert main([*argv, "--command-config", str(config)]) == 0
    assert capsys.readouterr().out.startswith("[")
