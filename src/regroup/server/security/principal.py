"""The principal of a TLS client certificate: Kafka's ``ssl.principal.mapping.rules=DEFAULT``.

Kafka's ``DefaultKafkaPrincipalBuilder`` names an SSL client ``User:`` and
``X500Principal.getName()`` of the certificate's subject, which is the subject in
RFC 2253 form as the JDK writes it (``sun.security.x509.X500Name.getRFC2253Name``,
``RDN.toRFC2253String``, ``AVA.toRFC2253String``), and the DEFAULT mapping rule
keeps that string as it is. The rules, read from the DER subject:

1. the RDNs in the reverse of their encoded order (most specific first), joined
   by ``,``; the attributes of a multi-valued RDN in their encoded order, joined
   by ``+``;
2. an attribute is ``KEYWORD=value`` for the nine keywords RFC 2253 defines (CN,
   C, L, ST, O, OU, STREET, DC, UID); any other type (emailAddress, serialNumber,
   ...) is its dotted OID;
3. a value is written as a string when its type has a keyword and its ASN.1 type
   is a string the JDK reads as one (UTF8String as UTF-8; PrintableString,
   TeletexString, IA5String and GeneralString as ISO-8859-1; BMPString as UTF-16);
   else
   (a dotted OID, or another ASN.1 type) as ``#`` and the hex of the value's whole
   DER encoding (RFC 2253 section 2.4);
4. in a string value each of ``, = + < > # ; " \\`` gets a backslash, a NUL is
   ``\\00``, and each leading or trailing space (or carriage return) gets a
   backslash, so ``alice,O=shop`` in one CN is ``CN=alice\\,O\\=shop`` and cannot
   pass for two attributes.

Only DEFAULT is served: the ``RULE:`` syntax of ``ssl.principal.mapping.rules``
(Kafka's ``SslPrincipalMapper``) is refused by the config. The DER is read by a
small parser of its own (the certificate was already verified by the TLS layer;
any malformed input still raises ``CertificateNameError`` and nothing else).
"""

from __future__ import annotations

__all__ = ["ANONYMOUS", "CertificateNameError", "certificate_principal", "rfc2253_name"]

ANONYMOUS = "User:ANONYMOUS"

#: The attribute types RFC 2253 (and the JDK's ``AVAKeyword`` table) gives a keyword.
_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}
#: The JDK's ``AVA.isDerString(value, false)`` and ``AVA.getCharset``: the ASN.1 string
#: types written as text, and how their content octets are read (UTF8String;
#: PrintableString, T61String, IA5String, GeneralString; BMPString).
_STRING_TAGS = {
    0x0C: "utf-8",
    0x13: "iso-8859-1",
    0x14: "iso-8859-1",
    0x16: "iso-8859-1",
    0x1B: "iso-8859-1",
    0x1E: "utf-16-be",
}
_ESCAPED = frozenset(',=+<>#;"\\')
_SEQUENCE, _SET, _OID = 0x30, 0x31, 0x06


class CertificateNameError(ValueError):
    """The certificate's DER cannot be read to its subject."""


def _element(data: bytes, offset: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER element at ``offset``."""
    if offset + 2 > len(data):
        raise CertificateNameError("truncated DER element")
    tag = data[offset]
    if tag & 0x1F == 0x1F:
        raise CertificateNameError("multi-byte DER tags are not used in a certificate name")
    first = data[offset + 1]
    start = offset + 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        if count == 0 or count > 4 or start + count > len(data):
            raise CertificateNameError("bad DER length")
        length = int.from_bytes(data[start : start + count], "big")
        start += count
    end = start + length
    if end > len(data):
        raise CertificateNameError("DER element runs past its container")
    return tag, start, end


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """(tag, element start, content start, content end) of each element in a content."""
    out = []
    offset = start
    while offset < end:
        tag, content, stop = _element(data, offset)
        if stop > end:
            raise CertificateNameError("DER element runs past its container")
        out.append((tag, offset, content, stop))
        offset = stop
    return out


def _oid(content: bytes) -> str:
    if not content or content[-1] & 0x80:
        raise CertificateNameError("bad OID")
    arcs: list[int] = []
    value = 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    first = arcs[0]
    head = [min(first // 40, 2), first - 40 * min(first // 40, 2)]
    return ".".join(str(arc) for arc in head + arcs[1:])


def _escape(text: str) -> str:
    chars: list[str] = []
    for ch in text:
        if ch in _ESCAPED:
            chars.append("\\" + ch)
        elif ch == "\0":
            chars.append("\\00")
        else:
            chars.append(ch)
    lead = 0
    while lead < len(chars) and chars[lead] in (" ", "\r"):
        lead += 1
    trail = len(chars) - 1
    while trail >= 0 and chars[trail] in (" ", "\r"):
        trail -= 1
    return "".join("\\" + ch if i < lead or i > trail else ch for i, ch in enumerate(chars))


def _attribute(data: bytes, start: int, end: int) -> str:
    parts = _children(data, start, end)
    if len(parts) != 2 or parts[0][0] != _OID:
        raise CertificateNameError("an attribute is a SEQUENCE of an OID and a value")
    _, _, oid_start, oid_end = parts[0]
    tag, value_start, content_start, content_end = parts[1]
    oid = _oid(data[oid_start:oid_end])
    keyword = _KEYWORDS.get(oid)
    charset = _STRING_TAGS.get(tag)
    if keyword is not None and charset is not None:
        text = data[content_start:content_end].decode(charset, errors="replace")
        return f"{keyword}={_escape(text)}"
    return f"{keyword or oid}=#{data[value_start:content_end].hex()}"


def rfc2253_name(data: bytes, start: int, end: int) -> str:
    """The RFC 2253 string (rules 1-4) of the DER ``Name`` whose content is
    ``data[start:end]``."""
    rdns = []
    for tag, _, set_start, set_end in _children(data, start, end):
        if tag != _SET:
            raise CertificateNameError("an RDN is a SET")
        attributes = []
        for atag, _, a_start, a_end in _children(data, set_start, set_end):
            if atag != _SEQUENCE:
                raise CertificateNameError("an attribute is a SEQUENCE")
            attributes.append(_attribute(data, a_start, a_end))
        if not attributes:
            raise CertificateNameError("an empty RDN")
        rdns.append("+".join(attributes))
    return ",".join(reversed(rdns))


def _subject(der: bytes) -> tuple[int, int]:
    """The content span of the subject ``Name`` of a DER certificate (RFC 5280:
    tbsCertificate = [0] version?, serialNumber, signature, issuer, validity, subject)."""
    tag, start, _ = _element(der, 0)
    if tag != _SEQUENCE:
        raise CertificateNameError("a certificate is a SEQUENCE")
    tag, tbs_start, tbs_end = _element(der, start)
    if tag != _SEQUENCE:
        raise CertificateNameError("a tbsCertificate is a SEQUENCE")
    fields = _children(der, tbs_start, tbs_end)
    if fields and fields[0][0] == 0xA0:  # the explicit version
        fields = fields[1:]
    if len(fields) < 5 or fields[4][0] != _SEQUENCE:
        raise CertificateNameError("no subject in the tbsCertificate")
    _, _, subject_start, subject_end = fields[4]
    return subject_start, subject_end


def certificate_principal(der: bytes | None) -> str:
    """``User:`` and the RFC 2253 subject of a DER client certificate (rules 1-4), or
    ANONYMOUS without one (Kafka's ``DefaultKafkaPrincipalBuilder``; an empty subject is
    ``User:`` and the empty name, as there). ``CertificateNameError`` on malformed DER."""
    if not der:
        return ANONYMOUS
    return "User:" + rfc2253_name(der, *_subject(der))
