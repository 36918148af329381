"""Client-certificate principals: the JDK's RFC 2253 form of the subject (Kafka's
``ssl.principal.mapping.rules=DEFAULT``), read from DER the test builds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.server.security.principal import (
    ANONYMOUS,
    CertificateNameError,
    certificate_principal,
)

CN, ORG, OU, EMAIL, SERIAL = "2.5.4.3", "2.5.4.10", "2.5.4.11", "1.2.840.113549.1.9.1", "2.5.4.5"
UTF8, PRINTABLE, IA5, UNIVERSAL = 0x0C, 0x13, 0x16, 0x1C


def _der(tag: int, content: bytes) -> bytes:
    n = len(content)
    if n < 0x80:
        return bytes([tag, n]) + content
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + content


def _oid(dotted: str) -> bytes:
    arcs = [int(a) for a in dotted.split(".")]
    out = bytearray()
    for arc in [arcs[0] * 40 + arcs[1], *arcs[2:]]:
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(0x80 | (arc & 0x7F))
            arc >>= 7
        out += bytes(reversed(chunk))
    return _der(0x06, bytes(out))


def _value(tag: int, text: str) -> bytes:
    return _der(tag, text.encode("utf-8"))


def certificate(*rdns: list[tuple[str, bytes]]) -> bytes:
    """A DER certificate whose subject has these RDNs (in encoded order); the other
    fields are placeholders of the right types."""
    name = b"".join(
        _der(0x31, b"".join(_der(0x30, _oid(oid) + value) for oid, value in rdn)) for rdn in rdns
    )
    algorithm = _der(0x30, _oid("1.2.840.113549.1.1.11"))
    tbs = (
        _der(0xA0, _der(0x02, b"\x02"))  # version v3
        + _der(0x02, b"\x01")  # serial number
        + algorithm
        + _der(0x30, b"")  # issuer
        + _der(0x30, b"")  # validity (not read)
        + _der(0x30, name)
        + _der(0x30, b"")  # subjectPublicKeyInfo (not read)
    )
    return _der(0x30, _der(0x30, tbs) + algorithm + _der(0x03, b"\x00"))


def test_the_subject_in_rfc_2253_order() -> None:
    der = certificate([(ORG, _value(UTF8, "regroup"))], [(CN, _value(UTF8, "alice"))])
    assert certificate_principal(der) == "User:CN=alice,O=regroup"
    assert certificate_principal(None) == ANONYMOUS


def test_a_comma_in_a_cn_is_escaped_and_cannot_pass_for_two_attributes() -> None:
    der = certificate([(ORG, _value(UTF8, "regroup"))], [(CN, _value(UTF8, "alice,O=shop"))])
    assert certificate_principal(der) == "User:CN=alice\\,O\\=shop,O=regroup"
    assert certificate_principal(der) != "User:CN=alice,O=shop,O=regroup"


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ('a+b;c"d\\e<f>g', 'a\\+b\\;c\\"d\\\\e\\<f\\>g'),
        ("#root", "\\#root"),
        ("a#b", "a\\#b"),  # the JDK escapes every '#', not only a leading one
        ("  two  ", "\\ \\ two\\ \\ "),
        ("nul\0here", "nul\\00here"),
        ("élan @ shop", "élan @ shop"),  # other characters as they are
    ],
)
def test_rfc_2253_escapes(value: str, written: str) -> None:
    assert certificate_principal(certificate([(CN, _value(UTF8, value))])) == f"User:CN={written}"


def test_multi_valued_rdns_oids_and_hex_values() -> None:
    der = certificate(
        [(ORG, _value(PRINTABLE, "shop"))],
        [(OU, _value(UTF8, "ops")), (CN, _value(UTF8, "bob"))],
        [(EMAIL, _value(IA5, "bob@shop"))],
        [(SERIAL, _value(PRINTABLE, "42"))],
        [(CN, _value(UNIVERSAL, "x"))],
    )
    email = _value(IA5, "bob@shop").hex()
    serial = _value(PRINTABLE, "42").hex()
    assert certificate_principal(der) == (
        f"User:CN=#{_value(UNIVERSAL, 'x').hex()},2.5.4.5=#{serial},"
        f"1.2.840.113549.1.9.1=#{email},OU=ops+CN=bob,O=shop"
    )


def test_string_types_are_read_in_the_jdks_charsets() -> None:
    bmp = _der(0x1E, "Zoë".encode("utf-16-be"))
    latin = _der(0x14, "Zoë".encode("iso-8859-1"))  # TeletexString
    der = certificate([(ORG, latin)], [(CN, bmp)])
    assert certificate_principal(der) == "User:CN=Zoë,O=Zoë"


def test_a_long_subject_uses_long_form_lengths() -> None:
    long_cn = "n" * 300
    der = certificate([(CN, _value(UTF8, long_cn))])
    assert certificate_principal(der) == f"User:CN={long_cn}"


def test_an_empty_subject_is_the_empty_name_as_in_kafka() -> None:
    assert certificate_principal(certificate()) == "User:"


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 299))
def test_malformed_der_only_raises_certificate_name_error(data: bytes, cut: int) -> None:
    good = certificate([(CN, _value(UTF8, "alice"))], [(OU, _value(UTF8, "x"))])
    for der in (data, good[:cut], good[:cut] + data, good[: max(cut, 4)] + b"\x84\xff\xff"):
        try:
            principal = certificate_principal(der)
        except CertificateNameError:
            continue
        assert principal == ANONYMOUS or principal.startswith("User:")


def test_an_unreadable_certificate_closes_the_connection() -> None:
    """A certificate the TLS layer verified but whose subject cannot be read gets no
    principal: the session is refused (the connection closes), never ANONYMOUS."""
    from regroup.server.net.connection import CloseConnection
    from regroup.server.security.config import Listener, SecurityConfig, SecurityProtocol
    from regroup.server.security.service import Security

    security = Security(SecurityConfig(), "127.0.0.1", 0)
    ssl_listener = Listener(SecurityProtocol.SSL, "127.0.0.1", 0)
    with pytest.raises(CloseConnection):
        security.new_session(ssl_listener, "127.0.0.1", b"\x30\x03\x02\x01")
    good = certificate([(CN, _value(UTF8, "alice"))])
    assert security.new_session(ssl_listener, "127.0.0.1", good).principal == "User:CN=alice"
    assert security.new_session(ssl_listener, "127.0.0.1", None).principal == ANONYMOUS
