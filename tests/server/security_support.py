"""Shared by the security tests: users, ACLs, a SASL/ACL server on loopback, raw SASL."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.server.app import ServerOptions
from regroup.server.clients.wire_client import WireClient
from regroup.server.security.config import SecurityConfig

PASSWORDS = {"alice": "alice-secret", "mallory": "mallory-secret", "admin": "admin-secret"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

USERS = "\n".join(
    f"{user} {mechanism} password={password}"
    for user, password in PASSWORDS.items()
    for mechanism in MECHANISMS
)

#: alice may use the group "shop" and the topic "orders"; mallory has a group of her own
#: and may read "orders" too, but not alice's group.
ACLS = """
ALLOW User:alice READ GROUP LITERAL shop
ALLOW User:alice READ TOPIC LITERAL orders
ALLOW User:alice WRITE TOPIC LITERAL orders
ALLOW User:mallory READ GROUP LITERAL mallory-group
ALLOW User:mallory READ TOPIC LITERAL orders
ALLOW User:mallory WRITE TOPIC LITERAL orders
"""

FAST_CONFIG = dataclasses.replace(
    GroupCoordinatorConfig(),
    group_initial_rebalance_delay_ms=0,
    group_min_session_timeout_ms=500,
)


def secure_options(tmp_path: Path, listeners: str, **props: str) -> ServerOptions:
    users = tmp_path / "users.txt"
    users.write_text(USERS + "\n")
    acls = tmp_path / "acls.txt"
    acls.write_text(ACLS)
    properties = {
        "listeners": listeners,
        "regroup.sasl.credentials.file": str(users),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "regroup.acls.file": str(acls),
        "super.users": "User:admin",
        **props,
    }
    return ServerOptions(
        host="127.0.0.1",
        port=0,
        config=FAST_CONFIG,
        default_partitions=2,
        auto_create_topics=False,
        security=SecurityConfig.from_properties(properties),
    )


def plain_login(client: WireClient, user: str, password: str) -> Any:
    """SaslHandshake v1 + SaslAuthenticate v2 with PLAIN; the SaslAuthenticate answer."""
    handshake = client.request(17, 1, {"mechanism": "PLAIN"})
    assert handshake.error_code.value == 0
    return client.request(36, 2, {"auth_bytes": f"\0{user}\0{password}".encode()})
