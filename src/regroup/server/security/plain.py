"""SASL/PLAIN, the server side (RFC 4616; Kafka's ``PlainSaslServer``).

The client's one message is ``[authzid] NUL authcid NUL passwd``. As Kafka:
a message that does not split into three tokens, an empty user name or an
empty password fails with the generic text (``SaslError``); a wrong password
fails with "Authentication failed: Invalid username or password" and an
authorization id other than the user with its own text (both
``SaslAuthenticationError``, whose message the client gets). The password is
compared in constant time.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from regroup.server.security.scram import SaslAuthenticationError, SaslError

__all__ = ["PlainServer"]


class PlainServer:
    """One PLAIN exchange; ``lookup(username)`` gives the user's password or ``None``."""

    mechanism_name = "PLAIN"

    def __init__(self, lookup: Callable[[str], str | None]) -> None:
        self._lookup = lookup
        self.username: str | None = None
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise SaslError("Invalid SASL/PLAIN response: not UTF-8") from None
        tokens = text.split("\0", 2)
        if len(tokens) != 3:
            raise SaslError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
        authzid, username, password = tokens
        if not username:
            raise SaslError("Authentication failed: username not specified")
        if not password:
            raise SaslError("Authentication failed: password not specified")
        expected = self._lookup(username)
        # Compare against something even for an unknown user: the same work either way.
        known = expected if expected is not None else "\0" + password
        if not hmac.compare_digest(known.encode(), password.encode()) or expected is None:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.username = username
        self.complete = True
        return b""
