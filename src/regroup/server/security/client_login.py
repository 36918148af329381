"""The client side of SASL for regroup's own wire client (``regroup groups --command-config``).

``login(client, mechanism, username, password)`` runs SaslHandshake v1 and the
SaslAuthenticate v2 exchange of PLAIN (RFC 4616) or SCRAM-SHA-256/512 (RFC 5802:
client-first, then the proof, then the server's signature is checked, so a server
that does not hold the credential is not believed). A refusal raises
``LoginError`` with the server's error code and message, Kafka's text.

``client_properties`` reads Kafka's client configs for this: ``security.protocol``,
``sasl.mechanism``, ``sasl.username``/``sasl.password`` (librdkafka's names) or the
``username=".." password=".."`` of ``sasl.jaas.config`` (the Java client's), and
``ssl.ca.location``/``ssl.truststore.location`` (PEM) for TLS.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from regroup.server.security.scram import ScramMechanism, parse_fields

__all__ = [
    "ClientSecurity",
    "LoginError",
    "Salt",
    "check_answer",
    "client_properties",
    "login",
    "salted_password",
    "scram_client_final",
]


class LoginError(ConnectionError):
    """The server refused the login (``SASL_AUTHENTICATION_FAILED`` and its message...)."""


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    mechanism: str = "PLAIN"
    username: str | None = None
    password: str | None = None
    ca_location: str | None = None

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.protocol not in ("SSL", "SASL_SSL"):
            return None
        return ssl.create_default_context(cafile=self.ca_location)


_JAAS = re.compile(r'(username|password)\s*=\s*"([^"]*)"')


def client_properties(props: Mapping[str, str]) -> ClientSecurity:
    """``ValueError`` names the property that is wrong."""
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL"):
        raise ValueError(f"security.protocol: unknown protocol {protocol!r}")
    mechanism = props.get("sasl.mechanism", "PLAIN").strip().upper()
    if mechanism != "PLAIN" and ScramMechanism.for_name(mechanism) is None:
        raise ValueError(f"sasl.mechanism: {mechanism} is not supported")
    jaas = dict(_JAAS.findall(props.get("sasl.jaas.config", "")))
    username = props.get("sasl.username", jaas.get("username"))
    password = props.get("sasl.password", jaas.get("password"))
    if protocol.startswith("SASL") and (not username or password is None):
        raise ValueError("a SASL protocol needs sasl.username and sasl.password")
    ca = props.get("ssl.ca.location") or props.get("ssl.truststore.location") or None
    return ClientSecurity(protocol, mechanism, username, password, ca)


#: ``salt(mechanism, password, salt, iterations)``: the salted password (RFC 5802 Hi()).
Salt = Callable[[ScramMechanism, str, bytes, int], bytes]


def salted_password(
    mechanism: ScramMechanism, password: str, salt: bytes, iterations: int
) -> bytes:
    """RFC 5802's ``SaltedPassword := Hi(Normalize(password), salt, i)``: PBKDF2 with the
    mechanism's HMAC (the costly step of a login, by design)."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


def scram_client_final(
    mechanism: ScramMechanism,
    password: str,
    client_first_bare: str,
    server_first: bytes,
    salt: Salt = salted_password,
) -> tuple[bytes, bytes]:
    """(client-final message, the server signature to expect) for ``server_first``."""
    fields = parse_fields(server_first.decode())
    salted = salt(mechanism, password, base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", mechanism.hash_name).digest()
    stored_key = hashlib.new(mechanism.hash_name, client_key).digest()
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{client_first_bare},{server_first.decode()},{without_proof}".encode()
    signature = hmac.new(stored_key, auth_message, mechanism.hash_name).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_key = hmac.new(salted, b"Server Key", mechanism.hash_name).digest()
    expected = hmac.new(server_key, auth_message, mechanism.hash_name).digest()
    return f"{without_proof},p={base64.b64encode(proof).decode()}".encode(), expected


def check_answer(answer: Any) -> bytes:
    """A SaslAuthenticate answer's bytes; ``LoginError`` when it carries an error."""
    code = int(answer.error_code.value)
    if code:
        raise LoginError(f"SASL error {code}: {answer.error_message}")
    return bytes(answer.auth_bytes)


def login(client: Any, mechanism: str, username: str, password: str) -> None:
    """Authenticate ``client`` (a ``WireClient``) or raise ``LoginError``."""
    handshake = client.request(17, 1, {"mechanism": mechanism})
    if int(handshake.error_code.value):
        raise LoginError(
            f"SASL mechanism {mechanism} refused (error {handshake.error_code.value}); "
            f"the server offers {', '.join(handshake.mechanisms) or 'none'}"
        )
    scram = ScramMechanism.for_name(mechanism)
    if scram is None:
        check_answer(client.request(36, 2, {"auth_bytes": f"\0{username}\0{password}".encode()}))
        return
    name = username.replace("=", "=3D").replace(",", "=2C")
    bare = f"n={name},r={secrets.token_urlsafe(18)}"
    server_first = check_answer(client.request(36, 2, {"auth_bytes": f"n,,{bare}".encode()}))
    final, expected = scram_client_final(scram, password, bare, server_first)
    server_final = check_answer(client.request(36, 2, {"auth_bytes": final}))
    if server_final != b"v=" + base64.b64encode(expected):
        raise LoginError("the server's SCRAM signature is wrong: it does not hold the credential")
