"""The users file: who may authenticate, with which mechanism (``regroup.sasl.credentials.file``).

Kafka keeps PLAIN passwords in the broker's JAAS file (``user_NAME="password"``
of ``PlainLoginModule``) and SCRAM credentials in the cluster metadata,
salted (``kafka-configs --alter --add-config 'SCRAM-SHA-256=[...]'``). regroup
reads both from one text file, one credential a line::

    # user  mechanism      credential
    alice   PLAIN          password=alice-secret
    alice   SCRAM-SHA-256  salt=...,stored_key=...,server_key=...,iterations=4096
    bob     SCRAM-SHA-512  password=bob-secret,iterations=8192

A SCRAM line holds the salted credential exactly as Kafka stores it
(``ScramCredentialUtils.credentialToString``), or ``password=..`` (and
optionally ``iterations=..``, default 4096), which is salted when the file is
loaded, as ``kafka-configs`` salts ``[password=..]``. ``#`` starts a comment.
``format_scram_line`` writes the salted form. A bad line is an error that
names the file and line (``CredentialsError``), never a partial load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from regroup.server.security.scram import (
    ScramCredential,
    ScramMechanism,
    credential_from_password,
    parse_fields,
)

__all__ = [
    "Credentials",
    "CredentialsError",
    "format_scram_line",
    "load_credentials",
    "main",
    "parse_credentials",
]


class CredentialsError(ValueError):
    """A users file that cannot be read; the message names the file and the line."""


@dataclass(slots=True)
class Credentials:
    """PLAIN passwords and SCRAM credentials by user name."""

    plain: dict[str, str] = field(default_factory=dict)
    scram: dict[tuple[ScramMechanism, str], ScramCredential] = field(default_factory=dict)

    def plain_password(self, username: str) -> str | None:
        return self.plain.get(username)

    def scram_credential(self, mechanism: ScramMechanism, username: str) -> ScramCredential | None:
        return self.scram.get((mechanism, username))


def parse_credentials(text: str, source: str = "<credentials>") -> Credentials:
    """Parse a users file's text (see the module docstring)."""
    credentials = Credentials()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        where = f"{source}:{number}"
        if len(parts) != 3:
            raise CredentialsError(f"{where}: expected USER MECHANISM CREDENTIAL")
        user, mechanism_name, credential = parts
        try:
            if mechanism_name == "PLAIN":
                password = parse_fields(credential).get("password")
                if not password:
                    raise ValueError("a PLAIN credential is password=...")
                credentials.plain[user] = password
                continue
            mechanism = ScramMechanism.for_name(mechanism_name)
            if mechanism is None:
                raise ValueError(
                    f"unknown mechanism {mechanism_name!r} (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"
                )
            values = parse_fields(credential)
            if "password" in values:
                iterations = int(values.get("iterations", "4096"))
                salted = credential_from_password(
                    mechanism, values["password"], iterations=iterations
                )
            else:
                salted = ScramCredential.from_kafka_string(credential)
                if salted.iterations < mechanism.min_iterations:
                    raise ValueError(
                        f"iterations {salted.iterations} is less than the minimum "
                        f"{mechanism.min_iterations}"
                    )
            credentials.scram[(mechanism, user)] = salted
        except ValueError as exc:
            raise CredentialsError(f"{where}: {exc}") from None
    return credentials


def load_credentials(path: Path) -> Credentials:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CredentialsError(f"cannot read {path}: {exc}") from None
    return parse_credentials(text, str(path))


def format_scram_line(
    user: str, mechanism: ScramMechanism, password: str, iterations: int = 4096
) -> str:
    """A users-file line holding ``password`` salted as Kafka stores it."""
    credential = credential_from_password(mechanism, password, iterations=iterations)
    return f"{user} {mechanism.mechanism_name} {credential.to_kafka_string()}"


def main(argv: list[str] | None = None) -> int:
    """``python -m regroup.server.security.credentials USER MECHANISM [ITERATIONS]``: read
    a password from stdin, print its users-file line salted as Kafka stores it."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    mechanism = ScramMechanism.for_name(args[1]) if len(args) in (2, 3) else None
    if mechanism is None or (len(args) == 3 and not args[2].isdigit()):
        print(
            "usage: python -m regroup.server.security.credentials USER "
            "SCRAM-SHA-256|SCRAM-SHA-512 [ITERATIONS] < password",
            file=sys.stderr,
        )
        return 2
    password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        print("no password on stdin", file=sys.stderr)
        return 2
    iterations = int(args[2]) if len(args) == 3 else 4096
    try:
        print(format_scram_line(args[0], mechanism, password, iterations))
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
