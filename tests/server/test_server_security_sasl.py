"""SASL mechanisms, the users file and the connection's SASL states, without sockets."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.server.security.authenticator import Authenticator, AuthState
from regroup.server.security.client_login import scram_client_final
from regroup.server.security.config import SecurityConfig, SecurityError
from regroup.server.security.credentials import (
    CredentialsError,
    format_scram_line,
    parse_credentials,
)
from regroup.server.security.plain import PlainServer
from regroup.server.security.scram import (
    SaslAuthenticationError,
    SaslError,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    credential_from_password,
)
from regroup.server.wire.codec import DecodedRequest

SHA256 = ScramMechanism.SCRAM_SHA_256
#: SaslAuthenticate v2 (header v2, client id null) carrying PLAIN's \0alice\0pw.
_AUTHENTICATE = bytes.fromhex("0024000200000004ffff000a00616c6963650070770000")


def test_rfc_7677_exchange() -> None:
    """RFC 7677 section 3: user "user", password "pencil", byte for byte."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = credential_from_password(SHA256, "pencil", salt=salt)
    server = ScramServer(
        SHA256, {"user": credential}.get, server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    )
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = server.evaluate(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.username == "user"


def _client_final(
    mechanism: ScramMechanism, password: str, first_bare: str, server_first: bytes
) -> bytes:
    """What a SCRAM client sends second (regroup's own client, RFC 5802 section 3)."""
    return scram_client_final(mechanism, password, first_bare, server_first)[0]


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_scram_accepts_the_password_and_refuses_another(mechanism: ScramMechanism) -> None:
    credential = credential_from_password(mechanism, "s3cret")
    for password, ok in (("s3cret", True), ("wrong", False)):
        server = ScramServer(mechanism, {"bob": credential}.get)
        server_first = server.evaluate(b"n,,n=bob,r=abc")
        final = _client_final(mechanism, password, "n=bob,r=abc", server_first)
        if ok:
            assert server.evaluate(final).startswith(b"v=")
        else:
            with pytest.raises(SaslError) as failure:
                server.evaluate(final)
            assert not isinstance(failure.value, SaslAuthenticationError)  # generic text
            assert not server.complete


def test_scram_refusals() -> None:
    credential = credential_from_password(SHA256, "pw")
    lookup = {"bob": credential, "a,b": credential}.get
    with pytest.raises(SaslError, match="Invalid user credentials"):
        ScramServer(SHA256, lookup).evaluate(b"n,,n=nobody,r=abc")
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        ScramServer(SHA256, lookup).evaluate(b"n,a=alice,n=bob,r=abc")
    with pytest.raises(SaslError):
        ScramServer(SHA256, lookup).evaluate(b"y,,n=bob,r=abc")  # channel binding asked
    assert ScramServer(SHA256, lookup).evaluate(b"n,,n=a=2Cb,r=abc").startswith(b"r=abc")
    server = ScramServer(SHA256, lookup)
    server.evaluate(b"n,,n=bob,r=abc")
    with pytest.raises(SaslError, match="nonce"):
        server.evaluate(b"c=biws,r=abcX,p=AAAA")
    with pytest.raises(ValueError, match="minimum 4096"):
        credential_from_password(SHA256, "pw", iterations=1000)


_BOB = credential_from_password(SHA256, "pw", salt=b"s")


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200), st.binary(max_size=200))
def test_scram_never_raises_anything_but_sasl_errors(first: bytes, final: bytes) -> None:
    server = ScramServer(SHA256, {"bob": _BOB}.get)
    try:
        server.evaluate(first)
        server.evaluate(final)
    except SaslError:
        pass
    assert not server.complete or final.startswith(b"c=")


def test_plain() -> None:
    server = PlainServer({"alice": "pw"}.get)
    assert server.evaluate(b"\0alice\0pw") == b"" and server.username == "alice"
    for token, message in [
        (b"\0alice\0nope", "Invalid username or password"),
        (b"\0ghost\0pw", "Invalid username or password"),
        (b"bob\0alice\0pw", "authorization id"),
    ]:
        with pytest.raises(SaslAuthenticationError, match=message):
            PlainServer({"alice": "pw"}.get).evaluate(token)
    for token in (b"alice", b"\0\0pw", b"\0alice\0", b"\xff\0a\0b"):
        with pytest.raises(SaslError):
            PlainServer({"alice": "pw"}.get).evaluate(token)


def test_the_users_file() -> None:
    line = format_scram_line("carol", ScramMechanism.SCRAM_SHA_512, "pw", iterations=4096)
    credentials = parse_credentials(
        f"# users\nalice PLAIN password=pw\nbob SCRAM-SHA-256 password=x,iterations=8192\n{line}\n"
    )
    assert credentials.plain_password("alice") == "pw"
    bob = credentials.scram_credential(SHA256, "bob")
    assert bob is not None and bob.iterations == 8192
    carol = credentials.scram_credential(ScramMechanism.SCRAM_SHA_512, "carol")
    assert carol is not None
    assert ScramCredential.from_kafka_string(carol.to_kafka_string()) == carol
    for bad in (
        "alice PLAIN",
        "alice GSSAPI password=x",
        "bob SCRAM-SHA-256 salt=AA==",
        "x PLAIN pw",
    ):
        with pytest.raises(CredentialsError, match="users:1:"):
            parse_credentials(bad, "users")


def test_the_sasl_states_of_a_connection() -> None:
    auth = Authenticator(("PLAIN",), parse_credentials("alice PLAIN password=pw"))
    assert auth.on_request(18, 3, None).api_versions
    assert auth.state is AuthState.HANDSHAKE
    assert auth.on_request(18, 3, None).close  # a second ApiVersions (Kafka closes)
    auth = Authenticator(("PLAIN",), parse_credentials("alice PLAIN password=pw"))
    assert auth.on_request(3, 1, None).close  # Metadata before the handshake

    class Body:
        mechanism = "PLAIN"
        auth_bytes = b"\0alice\0pw"

    auth = Authenticator(("PLAIN",), parse_credentials("alice PLAIN password=pw"))
    assert not auth.on_request(17, 1, Body()).close
    assert auth.on_request(3, 1, None).close  # not SaslAuthenticate: closed
    auth = Authenticator(("PLAIN",), parse_credentials("alice PLAIN password=pw"))
    auth.on_request(17, 0, Body())
    assert auth.raw_tokens  # v0: bare tokens (KIP-43's first form)
    assert auth.on_raw_token(b"\0alice\0pw").response == b""
    assert auth.complete and auth.principal == "User:alice"


def test_security_configs_by_kafkas_names() -> None:
    config = SecurityConfig.from_properties(
        {
            "listeners": "SASL_SSL://0.0.0.0:9094,PLAINTEXT://127.0.0.1:9092",
            "regroup.sasl.credentials.file": "users.txt",
            "ssl.keystore.location": "server.pem",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "super.users": "User:admin;User:ops",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        }
    )
    assert [(lst.name, lst.port) for lst in config.listeners] == [
        ("SASL_SSL", 9094),
        ("PLAINTEXT", 9092),
    ]
    assert config.super_users == {"User:admin", "User:ops"}
    assert config.sasl_server_max_receive_size == 524288  # Kafka's default, 512 KiB
    assert SecurityConfig.from_properties({"ssl.principal.mapping.rules": "DEFAULT"})
    lowered = SecurityConfig.from_properties({"sasl.server.max.receive.size": "1024"})
    assert lowered.sasl_server_max_receive_size == 1024
    for props, message in [
        ({"listeners": "SASL_PLAINTEXT://h:1"}, "regroup.sasl.credentials.file"),
        ({"listeners": "SSL://h:1"}, "ssl.keystore.location"),
        ({"sasl.enabled.mechanisms": "GSSAPI"}, "not supported"),
        ({"authorizer.class.name": "x.Y"}, "authorizer.class.name"),
        ({"ssl.client.auth": "always"}, "ssl.client.auth"),
        ({"num.partitions": "3"}, "unknown security config"),
        ({"listeners": "PLAINTEXT://h:1,PLAINTEXT://h:2"}, "once"),
        ({"sasl.server.max.receive.size": "-1"}, "sasl.server.max.receive.size"),
        ({"ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/$1/,DEFAULT"}, "only DEFAULT"),
        ({"sasl.server.max.receive.size": "512k"}, "sasl.server.max.receive.size"),
    ]:
        with pytest.raises(SecurityError, match=message):
            SecurityConfig.from_properties(props)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=64),
            st.sampled_from(
                [
                    bytes.fromhex("0011000100000001ffff0005504c41494e"),  # SaslHandshake v1 PLAIN
                    bytes.fromhex("0011000000000001ffff0005504c41494e"),  # v0: bare tokens next
                    bytes.fromhex("0012000000000002ffff"),  # ApiVersions v0
                    bytes.fromhex("0024000200000003000000"),  # SaslAuthenticate v2, short
                    _AUTHENTICATE,  # SaslAuthenticate v2 with alice's password
                    b"\0alice\0pw",  # the same token, bare
                ]
            ),
        ),
        max_size=5,
    )
)
def test_unauthenticated_frames_only_answer_or_close(frames: list[bytes]) -> None:
    """Whatever an unauthenticated client sends, a frame is answered or closes the
    connection (CloseConnection); nothing else escapes and nobody gets authenticated."""
    from regroup.server.net.connection import CloseConnection
    from regroup.server.security.config import Listener, SecurityProtocol
    from regroup.server.security.service import Security

    security = _SECURITY
    session = security.new_session(
        Listener(SecurityProtocol.SASL_PLAINTEXT, "127.0.0.1", 0), "127.0.0.1", None
    )
    for frame in frames:
        try:
            answer = security.serve_unauthenticated(session, frame, lambda req: _versions(req))
        except CloseConnection:
            break
        assert isinstance(answer, bytes)
    assert session.principal == "User:ANONYMOUS" or session.principal == "User:alice"
    assert isinstance(security, Security)


def test_the_fuzzed_frames_can_authenticate() -> None:
    from regroup.server.security.config import Listener, SecurityProtocol

    session = _SECURITY.new_session(
        Listener(SecurityProtocol.SASL_PLAINTEXT, "127.0.0.1", 0), "127.0.0.1", None
    )
    handshake = bytes.fromhex("0011000100000001ffff0005504c41494e")
    for frame in (handshake, _AUTHENTICATE):
        assert _SECURITY.serve_unauthenticated(session, frame, _versions)
    assert session.authenticated and session.principal == "User:alice"


def _versions(req: DecodedRequest) -> object:
    from regroup.server.apis.cluster import Cluster
    from regroup.server.log.partitions import Log

    return Cluster(Log(None), host="h", port=1, node_id=0).api_versions(req)


def _security() -> object:
    from regroup.server.security.config import SecurityConfig
    from regroup.server.security.service import Security

    security = Security(SecurityConfig(), "127.0.0.1", 0)
    security.credentials = parse_credentials("alice PLAIN password=pw")
    return security


_SECURITY: Any = _security()


def test_the_salted_line_maker(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m regroup.server.security.credentials``: a password in, a salted line out."""
    import io

    from regroup.server.security.credentials import main

    monkeypatch.setattr("sys.stdin", io.StringIO("s3cret\n"))
    assert main(["carol", "SCRAM-SHA-512", "8192"]) == 0
    line = capsys.readouterr().out
    credential = parse_credentials(line).scram_credential(ScramMechanism.SCRAM_SHA_512, "carol")
    assert credential is not None and credential.iterations == 8192
    assert "s3cret" not in line
    server = ScramServer(ScramMechanism.SCRAM_SHA_512, {"carol": credential}.get)
    first = server.evaluate(b"n,,n=carol,r=x")
    server.evaluate(_client_final(ScramMechanism.SCRAM_SHA_512, "s3cret", "n=carol,r=x", first))
    assert server.complete
    assert main(["carol", "PLAIN"]) == 2
    monkeypatch.setattr("sys.stdin", io.StringIO("pw\n"))
    assert main(["carol", "SCRAM-SHA-256", "100"]) == 2  # below Kafka's 4096
