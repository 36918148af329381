"""What a row of the server's routing table says (``app.ROUTES``, one row per API key).

Rule 1: a request goes where the row of its API key says, and nowhere else: no
code in ``regroup.server`` compares an API key with a number
(``tests/architecture/test_server_routing.py``). A key without a row is not
served; ``wire.codec`` refuses it before routing (Kafka's ``SocketServer``
closes on an unknown API).
Rule 2: a row's ``kind`` says which part of the broker answers, and so which
authorizer rules apply once a listener has an authorizer (Kafka's
``KafkaApis``): ``CLUSTER``, the APIs without a group (``apis.cluster``,
``security.cluster_rules``); ``GROUP``, the group coordinator through
``wire.mapping`` (``security.group_rules``); ``ACL``, the ACL APIs
(``security.acl_apis``); ``SASL``, the SASL APIs of an authenticated
connection. ApiVersions is a ``CLUSTER`` row that ``cluster_rules`` leaves alone.
Rule 3: ``serve`` takes the decoded request and gives the response object (or a
coroutine for one that must wait); the server encodes it for the request's
version.
Rule 4: a row may carry a ``before_decode`` shortcut for the hot paths, marked
as such in the table: it gets the raw frame of the versions it lists before
any decoding and either answers it (the framed answer, or a coroutine) or gives
``DECODE`` to let the frame take the ordinary way through ``serve``. It must
answer exactly as ``serve`` would.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from regroup.server.net.connection import ConnectionState, Served
from regroup.server.wire.codec import DecodedRequest

__all__ = ["DECODE", "BeforeDecode", "Decode", "Route", "RouteKind", "Shortcut", "shortcuts"]

S = TypeVar("S")


class RouteKind(enum.Enum):
    """Rule 2: the part of the broker that answers."""

    CLUSTER = "cluster"
    GROUP = "group"
    ACL = "acl"
    SASL = "sasl"


class Decode(enum.Enum):
    DECODE = "decode"


#: What a ``before_decode`` shortcut gives back for a frame it leaves to ``serve``.
DECODE: Final = Decode.DECODE

#: ``(server, connection, frame)``: the framed answer, a coroutine, or ``DECODE``.
Shortcut = Callable[[S, ConnectionState, bytes], Served | Decode]


@dataclass(frozen=True, slots=True)
class BeforeDecode(Generic[S]):
    """Rule 4: a hot path on the raw frame of ``versions``, tried before decoding."""

    versions: tuple[int, ...]
    serve: Shortcut[S]


@dataclass(frozen=True, slots=True)
class Route(Generic[S]):
    """One row of the routing table: which part answers, and how."""

    kind: RouteKind
    #: ``(server, connection, decoded request)``: the response, or a coroutine (rule 3).
    serve: Callable[[S, ConnectionState, DecodedRequest], Any]
    before_decode: BeforeDecode[S] | None = None


def shortcuts(routes: Mapping[int, Route[S]]) -> dict[bytes, Shortcut[S]]:
    """The ``before_decode`` shortcuts by the first four bytes of a frame (key, version)."""
    found: dict[bytes, Shortcut[S]] = {}
    for key, route in routes.items():
        if route.before_decode is not None:
            for version in route.before_decode.versions:
                found[struct.pack(">hh", key, version)] = route.before_decode.serve
    return found
