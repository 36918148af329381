"""One connection's SASL exchange (Kafka's ``SaslServerAuthenticator``); no I/O.

Theory of operation. On a SASL listener a connection starts unauthenticated
and moves through Kafka's states:

``HANDSHAKE_OR_VERSIONS`` -> (ApiVersions) ``HANDSHAKE`` -> (SaslHandshake)
``AUTHENTICATE`` -> (SaslAuthenticate ..., until the mechanism completes) ``COMPLETE``.

The rules are Kafka's:

1. Before the handshake only ApiVersions (once) and SaslHandshake are
   accepted; any other request closes the connection without an answer
   (``handleKafkaRequest`` throws ``InvalidRequestException``).
2. A SaslHandshake naming a mechanism the listener does not enable is answered
   UNSUPPORTED_SASL_MECHANISM with the enabled list, then the connection closes.
3. After a v1 handshake every token travels in a SaslAuthenticate request; any
   other request is answered with ILLEGAL_SASL_STATE where the answer has an
   error code of its own (SaslHandshake) and closes the connection. After a v0
   handshake the tokens travel as bare size-prefixed frames (KIP-43's original
   form), answered the same way.
4. A failed exchange is answered SASL_AUTHENTICATION_FAILED, then the
   connection closes. The message is the mechanism's own for a
   ``SaslAuthenticationError`` ("Authentication failed: Invalid username or
   password") and otherwise Kafka's generic "Authentication failed during
   authentication due to invalid credentials with SASL mechanism M", which
   does not say whether the user exists.
5. On success the principal is ``User:<name>`` (Kafka's
   ``DefaultKafkaPrincipalBuilder``) and every later request goes to the
   server's APIs, where SaslHandshake and SaslAuthenticate get ILLEGAL_SASL_STATE
   (``after_authentication``), exactly as on a PLAINTEXT listener.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from regroup.model.errors import ErrorCode
from regroup.server.security.credentials import Credentials
from regroup.server.security.plain import PlainServer
from regroup.server.security.scram import (
    SaslAuthenticationError,
    SaslError,
    ScramMechanism,
    ScramServer,
)
from regroup.server.wire.api_keys import ApiKey
from regroup.server.wire.kio_build import build

__all__ = [
    "SASL_AUTHENTICATE_KEY",
    "SASL_HANDSHAKE_KEY",
    "SUPPORTED_MECHANISMS",
    "AuthState",
    "Authenticator",
    "Step",
    "after_authentication",
]

SASL_HANDSHAKE_KEY = ApiKey.SASL_HANDSHAKE
SASL_AUTHENTICATE_KEY = ApiKey.SASL_AUTHENTICATE
API_VERSIONS_KEY = ApiKey.API_VERSIONS
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"


class AuthState(Enum):
    HANDSHAKE_OR_VERSIONS = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


@dataclass(frozen=True, slots=True)
class Step:
    """What to do with one request: answer it (``response``: a kio object, or raw token
    bytes after a v0 handshake, or ``None`` for no answer), then close if ``close``."""

    response: Any
    close: bool = False
    #: ApiVersions: the server builds the answer (it knows the API table).
    api_versions: bool = False


def _response(api_key: int, version: int, values: dict[str, Any]) -> Any:
    from regroup.server.wire.codec import response_class

    return build(response_class(api_key, version), values)


def after_authentication(api_key: int, version: int) -> Any:
    """Kafka's ``KafkaApis`` answer to a SASL request once authenticated, or on a PLAINTEXT
    listener: ILLEGAL_SASL_STATE."""
    if api_key == SASL_HANDSHAKE_KEY:
        return _response(api_key, version, {"error_code": ErrorCode.ILLEGAL_SASL_STATE})
    return _response(
        api_key,
        version,
        {
            "error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": AFTER_AUTHENTICATION,
            "auth_bytes": b"",
        },
    )


class Authenticator:
    """Rules 1-5 for one connection."""

    def __init__(self, enabled_mechanisms: tuple[str, ...], credentials: Credentials) -> None:
        self.enabled_mechanisms = enabled_mechanisms
        self._credentials = credentials
        self.state = AuthState.HANDSHAKE_OR_VERSIONS
        self.mechanism: str | None = None
        #: Tokens as bare frames (a v0 handshake) rather than SaslAuthenticate requests.
        self.raw_tokens = False
        self._server: PlainServer | ScramServer | None = None
        self.principal: str | None = None

    @property
    def complete(self) -> bool:
        return self.state is AuthState.COMPLETE

    def on_request(self, api_key: int, version: int, body: Any) -> Step:
        """A decoded request before authentication completed."""
        state = self.state
        if state in (AuthState.HANDSHAKE_OR_VERSIONS, AuthState.HANDSHAKE):
            if api_key == API_VERSIONS_KEY and state is AuthState.HANDSHAKE_OR_VERSIONS:
                self.state = AuthState.HANDSHAKE
                return Step(None, api_versions=True)
            if api_key == SASL_HANDSHAKE_KEY:
                return self._handshake(version, body.mechanism)
            self.state = AuthState.FAILED
            return Step(None, close=True)  # rule 1
        if state is AuthState.AUTHENTICATE and not self.raw_tokens:
            if api_key == SASL_AUTHENTICATE_KEY:
                return self._authenticate(version, bytes(body.auth_bytes))
            self.state = AuthState.FAILED
            if api_key == SASL_HANDSHAKE_KEY:  # rule 3
                return Step(after_authentication(api_key, version), close=True)
            return Step(None, close=True)
        self.state = AuthState.FAILED
        return Step(None, close=True)

    def on_raw_token(self, token: bytes) -> Step:
        """A bare token after a v0 handshake (rule 3): the answer is a bare token too."""
        try:
            answer = self._evaluate(token)
        except SaslError:
            self.state = AuthState.FAILED
            return Step(None, close=True)
        return Step(answer)

    def _handshake(self, version: int, mechanism: str) -> Step:
        enabled = list(self.enabled_mechanisms)
        if mechanism not in self.enabled_mechanisms:  # rule 2
            self.state = AuthState.FAILED
            answer = {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled}
            return Step(_response(SASL_HANDSHAKE_KEY, version, answer), close=True)
        self.mechanism = mechanism
        self.raw_tokens = version == 0
        credentials = self._credentials
        scram = ScramMechanism.for_name(mechanism)
        if scram is None:
            self._server = PlainServer(credentials.plain_password)
        else:
            self._server = ScramServer(
                scram, lambda user: credentials.scram_credential(scram, user)
            )
        self.state = AuthState.AUTHENTICATE
        answer = {"error_code": ErrorCode.NONE, "mechanisms": enabled}
        return Step(_response(SASL_HANDSHAKE_KEY, version, answer))

    def _evaluate(self, token: bytes) -> bytes:
        server = self._server
        assert server is not None
        answer = server.evaluate(token)
        if server.complete:
            assert server.username is not None
            self.principal = f"User:{server.username}"
            self.state = AuthState.COMPLETE
        return answer

    def _authenticate(self, version: int, token: bytes) -> Step:
        try:
            answer = self._evaluate(token)
        except SaslAuthenticationError as exc:  # rule 4: the mechanism's own text
            return self._failed(version, str(exc))
        except SaslError:
            return self._failed(
                version,
                "Authentication failed during authentication due to invalid credentials "
                f"with SASL mechanism {self.mechanism}",
            )
        values = {"error_code": ErrorCode.NONE, "error_message": None, "auth_bytes": answer}
        return Step(_response(SASL_AUTHENTICATE_KEY, version, values))

    def _failed(self, version: int, message: str) -> Step:
        self.state = AuthState.FAILED
        values = {
            "error_code": ErrorCode.SASL_AUTHENTICATION_FAILED,
            "error_message": message,
            "auth_bytes": b"",
        }
        return Step(_response(SASL_AUTHENTICATE_KEY, version, values), close=True)
