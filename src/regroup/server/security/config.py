"""The security configs of ``regroup serve``, by Kafka's names (``KafkaConfig``).

The table of names, defaults and meanings is in docs/security.md ("Configuration");
``SecurityConfig.from_properties`` reads them and ``check`` refuses an incomplete set.

``SecurityError`` names the config that is wrong; the CLI prints it in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from regroup.server.security.authenticator import SUPPORTED_MECHANISMS

__all__ = [
    "AUTHORIZER_CLASSES",
    "DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE",
    "SECURITY_CONFIG_NAMES",
    "Listener",
    "SecurityConfig",
    "SecurityError",
    "SecurityProtocol",
]

AUTHORIZER_CLASSES = frozenset(
    {
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "kafka.security.authorizer.AclAuthorizer",
    }
)

SECURITY_CONFIG_NAMES = frozenset(
    {
        "listeners",
        "sasl.enabled.mechanisms",
        "sasl.server.max.receive.size",
        "regroup.sasl.credentials.file",
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.key.password",
        "ssl.truststore.location",
        "ssl.truststore.type",
        "ssl.client.auth",
        "ssl.principal.mapping.rules",
        "authorizer.class.name",
        "super.users",
        "allow.everyone.if.no.acl.found",
        "regroup.acls.file",
    }
)


#: Kafka's ``BrokerSecurityConfigs.DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE``: the largest frame
#: a SASL listener reads before the connection is authenticated (512 KiB).
DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE = 524288


class SecurityError(ValueError):
    """A security config that cannot be used; the message names it."""


class SecurityProtocol(Enum):
    PLAINTEXT = "PLAINTEXT"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SSL = "SSL"
    SASL_SSL = "SASL_SSL"

    @property
    def sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)

    @property
    def tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)


@dataclass(frozen=True, slots=True)
class Listener:
    protocol: SecurityProtocol
    host: str
    port: int

    @property
    def name(self) -> str:
        return self.protocol.value

    @classmethod
    def parse(cls, text: str) -> Listener:
        proto, sep, address = text.strip().partition("://")
        host, colon, port = address.rpartition(":")
        try:
            protocol = SecurityProtocol(proto.upper())
            number = int(port)
        except ValueError:
            raise SecurityError(
                f"listeners: expected PROTOCOL://HOST:PORT with PROTOCOL one of "
                f"{', '.join(p.value for p in SecurityProtocol)}, got {text.strip()!r}"
            ) from None
        if not sep or not colon or not 0 <= number <= 65535:
            raise SecurityError(f"listeners: expected PROTOCOL://HOST:PORT, got {text.strip()!r}")
        return cls(protocol, host.strip("[]") or "0.0.0.0", number)


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    listeners: tuple[Listener, ...] = ()
    sasl_enabled_mechanisms: tuple[str, ...] = SUPPORTED_MECHANISMS
    sasl_server_max_receive_size: int = DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE
    credentials_file: Path | None = None
    ssl_keystore_location: Path | None = None
    ssl_key_password: str | None = None
    ssl_truststore_location: Path | None = None
    ssl_client_auth: str = "none"
    authorizer_class_name: str = ""
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False
    acls_file: Path | None = None

    @property
    def authorizer_enabled(self) -> bool:
        return bool(self.authorizer_class_name)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> SecurityConfig:
        unknown = sorted(set(props) - SECURITY_CONFIG_NAMES)
        if unknown:
            raise SecurityError(f"unknown security config {unknown[0]!r}")

        def path(name: str) -> Path | None:
            value = props.get(name, "").strip()
            return Path(value) if value else None

        listeners = tuple(
            Listener.parse(item) for item in props.get("listeners", "").split(",") if item.strip()
        )
        if len({lst.protocol for lst in listeners}) != len(listeners):
            raise SecurityError("listeners: each protocol may appear once (it names the listener)")
        mechanisms = tuple(
            m.strip()
            for m in props.get("sasl.enabled.mechanisms", ",".join(SUPPORTED_MECHANISMS)).split(",")
            if m.strip()
        )
        for mechanism in mechanisms:
            if mechanism not in SUPPORTED_MECHANISMS:
                raise SecurityError(
                    f"sasl.enabled.mechanisms: {mechanism} is not supported "
                    f"({', '.join(SUPPORTED_MECHANISMS)})"
                )
        max_receive = props.get(
            "sasl.server.max.receive.size", str(DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE)
        ).strip()
        if not max_receive.isdigit() or not 8 <= int(max_receive) <= 2**31 - 1:
            raise SecurityError(
                "sasl.server.max.receive.size: a number of bytes from 8 (a request header) "
                f"to 2147483647, got {max_receive!r}"
            )
        for name in ("ssl.keystore.type", "ssl.truststore.type"):
            if props.get(name, "PEM").upper() != "PEM":
                raise SecurityError(f"{name}: only PEM is supported")
        client_auth = props.get("ssl.client.auth", "none").strip().lower()
        if client_auth not in ("none", "requested", "required"):
            raise SecurityError(
                f"ssl.client.auth: none, requested or required, got {client_auth!r}"
            )
        rules = props.get("ssl.principal.mapping.rules", "DEFAULT").strip()
        if rules != "DEFAULT":
            raise SecurityError(
                "ssl.principal.mapping.rules: only DEFAULT (the certificate subject in "
                f"RFC 2253 form) is supported, got {rules!r}"
            )
        authorizer = props.get("authorizer.class.name", "").strip()
        if authorizer and authorizer not in AUTHORIZER_CLASSES:
            raise SecurityError(
                f"authorizer.class.name: {authorizer!r} is not one of "
                + ", ".join(sorted(AUTHORIZER_CLASSES))
            )
        allow_everyone = props.get("allow.everyone.if.no.acl.found", "false").strip().lower()
        if allow_everyone not in ("true", "false"):
            raise SecurityError(
                f"allow.everyone.if.no.acl.found: true or false, got {allow_everyone!r}"
            )
        super_users = frozenset(
            u.strip() for u in props.get("super.users", "").split(";") if u.strip()
        )
        config = cls(
            listeners=listeners,
            sasl_enabled_mechanisms=mechanisms,
            sasl_server_max_receive_size=int(max_receive),
            credentials_file=path("regroup.sasl.credentials.file"),
            ssl_keystore_location=path("ssl.keystore.location"),
            ssl_key_password=props.get("ssl.key.password") or None,
            ssl_truststore_location=path("ssl.truststore.location"),
            ssl_client_auth=client_auth,
            authorizer_class_name=authorizer,
            super_users=super_users,
            allow_everyone_if_no_acl_found=allow_everyone == "true",
            acls_file=path("regroup.acls.file"),
        )
        config.check()
        return config

    def check(self) -> None:
        if any(lst.protocol.sasl for lst in self.listeners):
            if self.credentials_file is None:
                raise SecurityError("a SASL listener needs regroup.sasl.credentials.file")
            if not self.sasl_enabled_mechanisms:
                raise SecurityError("a SASL listener needs sasl.enabled.mechanisms")
        if any(lst.protocol.tls for lst in self.listeners) and self.ssl_keystore_location is None:
            raise SecurityError("an SSL listener needs ssl.keystore.location (a PEM file)")
        if self.acls_file is not None and not self.authorizer_enabled:
            raise SecurityError("regroup.acls.file needs authorizer.class.name")


def parse_properties(text: str) -> dict[str, str]:
    """A Java-style properties file (``name=value`` lines, ``#``/``!`` comments)."""
    props: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        name, sep, value = line.partition("=")
        if not sep:
            name, sep, value = line.partition(":")
        props[name.strip()] = value.strip()
    return props
