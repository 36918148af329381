"""SCRAM-SHA-256 and SCRAM-SHA-512, the server side (RFC 5802, RFC 7677; Kafka's KIP-84).

Theory of operation. A user's credential is stored as Kafka stores it
(``ScramCredential``, written by ``ScramCredentialUtils.credentialToString``):
the salt, the iteration count, ``StoredKey = H(HMAC(SaltedPassword, "Client
Key"))`` and ``ServerKey = HMAC(SaltedPassword, "Server Key")`` with
``SaltedPassword = PBKDF2-HMAC(password, salt, iterations)``; the password
itself is never kept. ``ScramServer`` runs one exchange as Kafka's
``ScramSaslServer`` does:

1. client-first ``n,[a=authzid],n=name,r=cnonce[,ext...]``: the user's
   credential is looked up; the answer is server-first ``r=cnonce+snonce,s=salt,i=n``;
2. client-final ``c=binding,r=nonce,p=proof``: the nonce must be the combined
   one, ``H(proof XOR HMAC(StoredKey, AuthMessage))`` must equal StoredKey; the
   answer is server-final ``v=HMAC(ServerKey, AuthMessage)``.

Failures raise ``SaslError`` (the client gets Kafka's generic "invalid
credentials" text) or ``SaslAuthenticationError`` (the client gets the
message, as Kafka does for an authorization id that differs from the user).
Rule: an unknown user fails at step 1 (the client gets no server-first
message), a wrong password at step 2 (after the salt and iteration count came
back). The failure text is the same, but the step tells them apart, so a client
can learn which user names exist: Kafka's ``ScramSaslServer`` does the same
(it throws at the client-first message when the user has no credential). What
slows a client that tries names or passwords is the delay of every failed
login (``connection.failed.authentication.delay.ms``, ``connection``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "SaslAuthenticationError",
    "SaslError",
    "ScramCredential",
    "ScramMechanism",
    "ScramServer",
    "credential_from_password",
    "parse_fields",
]


class SaslError(Exception):
    """A failed exchange whose reason the client must not learn (Kafka's ``SaslException``)."""


class SaslAuthenticationError(SaslError):
    """A failed exchange whose message the client gets (Kafka's ``SaslAuthenticationException``)."""


class ScramMechanism(Enum):
    """Kafka's ``ScramMechanism``: the name, the hash, the minimum iterations (4096)."""

    SCRAM_SHA_256 = ("SCRAM-SHA-256", "sha256")
    SCRAM_SHA_512 = ("SCRAM-SHA-512", "sha512")

    @property
    def mechanism_name(self) -> str:
        return self.value[0]

    @property
    def hash_name(self) -> str:
        return self.value[1]

    @property
    def min_iterations(self) -> int:
        return 4096

    @classmethod
    def for_name(cls, name: str) -> ScramMechanism | None:
        return next((m for m in cls if m.mechanism_name == name), None)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the broker keeps of a SCRAM password (Kafka's ``ScramCredential``)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_kafka_string(self) -> str:
        """``salt=..,stored_key=..,server_key=..,iterations=..`` (``credentialToString``)."""
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )

    @classmethod
    def from_kafka_string(cls, text: str) -> ScramCredential:
        """Parse ``to_kafka_string``'s form; ``ValueError`` names what is wrong."""
        fields = parse_fields(text)
        missing = {"salt", "stored_key", "server_key", "iterations"} - fields.keys()
        if missing:
            raise ValueError(f"missing {', '.join(sorted(missing))}")
        try:
            return cls(
                salt=base64.b64decode(fields["salt"], validate=True),
                stored_key=base64.b64decode(fields["stored_key"], validate=True),
                server_key=base64.b64decode(fields["server_key"], validate=True),
                iterations=int(fields["iterations"]),
            )
        except ValueError as exc:  # binascii.Error is a ValueError
            raise ValueError(f"bad SCRAM credential: {exc}") from None


def parse_fields(text: str) -> dict[str, str]:
    """``a=1,b=2`` as a dict (Kafka's ``ScramCredentialUtils`` form); ``ValueError`` if not."""
    fields: dict[str, str] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"expected NAME=VALUE, got {part!r}")
        fields[name.strip()] = value.strip()
    return fields


def _hmac(mechanism: ScramMechanism, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, mechanism.hash_name).digest()


def _hash(mechanism: ScramMechanism, data: bytes) -> bytes:
    return hashlib.new(mechanism.hash_name, data).digest()


def credential_from_password(
    mechanism: ScramMechanism, password: str, *, iterations: int = 4096, salt: bytes | None = None
) -> ScramCredential:
    """Salt a password as ``kafka-configs --add-config 'SCRAM-SHA-256=[password=..]'`` does."""
    if iterations < mechanism.min_iterations:
        raise ValueError(
            f"iterations {iterations} is less than the minimum {mechanism.min_iterations} "
            f"for {mechanism.mechanism_name}"
        )
    salt = secrets.token_bytes(32) if salt is None else salt
    salted = hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)
    client_key = _hmac(mechanism, salted, b"Client Key")
    return ScramCredential(
        salt=salt,
        stored_key=_hash(mechanism, client_key),
        server_key=_hmac(mechanism, salted, b"Server Key"),
        iterations=iterations,
    )


# RFC 5802 section 7: gs2-header, then client-first-message-bare.
_CLIENT_FIRST = re.compile(
    r"(?P<gs2>n,(?:a=(?P<authzid>[^,]*))?,)(?:m=[^,]*,)?n=(?P<name>[^,]*),r=(?P<nonce>[^,]+)"
    r"(?P<ext>(?:,[A-Za-z]+=[^,]*)*)",
    re.DOTALL,
)
_CLIENT_FINAL = re.compile(
    r"c=(?P<binding>[^,]*),r=(?P<nonce>[^,]+)(?:,[A-Za-z]+=[^,]*)*?,p=(?P<proof>[^,]+)",
    re.DOTALL,
)


def sasl_name_to_username(name: str) -> str:
    """RFC 5802 saslname: ``=2C`` is a comma and ``=3D`` an equals sign (``ScramFormatter``)."""
    if re.search(r"=(?!2C|3D)", name):
        raise SaslError("Invalid username: " + name)
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One SCRAM exchange, server side (Kafka's ``ScramSaslServer``); no I/O."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: Callable[[str], ScramCredential | None],
        *,
        server_nonce: str | None = None,
    ) -> None:
        self._lookup = lookup
        self.mechanism = mechanism
        self._server_nonce = server_nonce
        self._state = "first"
        self._credential: ScramCredential | None = None
        self._gs2 = ""
        self._first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self.username: str | None = None

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    def evaluate(self, token: bytes) -> bytes:
        try:
            if self._state == "first":
                return self._client_first(token)
            if self._state == "final":
                return self._client_final(token)
            raise SaslError(f"Unexpected challenge in Sasl server state {self._state}")
        except SaslError:
            self._state = "failed"
            self._credential = None
            raise

    def _client_first(self, token: bytes) -> bytes:
        text = _utf8(token)
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise SaslError("Invalid SCRAM client first message format")
        username = sasl_name_to_username(match["name"])
        credential = self._lookup(username)
        if credential is None:
            raise SaslError("Authentication failed: Invalid user credentials")
        authzid = match["authzid"] or ""
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        if credential.iterations < self.mechanism.min_iterations:
            raise SaslError(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{self.mechanism.min_iterations} for {self.mechanism.mechanism_name}"
            )
        server_nonce = self._server_nonce or secrets.token_urlsafe(24)
        self._credential = credential
        self.username = username
        self._gs2 = match["gs2"]
        self._first_bare = text[len(match["gs2"]) :]
        self._nonce = match["nonce"] + server_nonce
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        self._state = "final"
        return self._server_first.encode()

    def _client_final(self, token: bytes) -> bytes:
        credential = self._credential
        assert credential is not None
        text = _utf8(token)
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise SaslError("Invalid SCRAM client final message format")
        if match["nonce"] != self._nonce:
            raise SaslError("Invalid client nonce in the final client message.")
        try:
            binding = base64.b64decode(match["binding"], validate=True).decode()
            proof = base64.b64decode(match["proof"], validate=True)
        except (ValueError, UnicodeDecodeError):
            raise SaslError("Invalid SCRAM client final message encoding") from None
        if binding != self._gs2:
            raise SaslError("Invalid channel binding in the final client message.")
        without_proof = text[: text.rindex(",p=")]
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self.mechanism, credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise SaslError("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(_hash(self.mechanism, client_key), credential.stored_key):
            raise SaslError("Invalid client credentials")
        server_signature = _hmac(self.mechanism, credential.server_key, auth_message)
        self._state = "complete"
        self._credential = None
        return b"v=" + base64.b64encode(server_signature)


def _utf8(token: bytes) -> str:
    try:
        return token.decode()
    except UnicodeDecodeError:
        raise SaslError("Invalid SCRAM message: not UTF-8") from None
