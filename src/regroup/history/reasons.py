"""Kafka's rebalance and leave reasons, as written, sorted into classes.

The coordinator writes why it prepares a rebalance (``(reason: ...)``, Kafka 2.1+) and,
from Kafka 3.2 (KIP-800), the reason the client gave in its JoinGroup or LeaveGroup
(``client reason: ...``). The wording comes from ``GroupCoordinator.scala`` /
``GroupMetadataManager.java`` (the coordinator's part) and ``AbstractCoordinator`` /
``ConsumerCoordinator`` (the client's part). Rules are data: the first pattern that
matches names the class.

Rebalance classes (``REASON_CLASSES``): ``member_joined``, ``member_left``,
``session_timeout``, ``static_member_replaced``, ``coordinator_moved``, ``metadata_change``,
``enforced`` (the application asked: ``enforceRebalance``), ``unknown``.

Reasons of a leave (``LEAVE_CLASSES``): ``leave`` (a LeaveGroup with no reason given),
``poll_timeout`` (``max.poll.interval.ms``
exceeded), ``close``, ``unsubscribe``, ``session_timeout``, ``fenced``, ``replaced``,
``rebalance_timeout``, ``unknown``.
"""

from __future__ import annotations

import re

__all__ = [
    "ADDED_MEMBER",
    "LEAVE_CLASSES",
    "REASON_CLASSES",
    "classify_leave",
    "classify_rebalance",
    "client_reason",
]

REASON_CLASSES = (
    "member_joined",
    "member_left",
    "session_timeout",
    "static_member_replaced",
    "coordinator_moved",
    "metadata_change",
    "enforced",
    "unknown",
)
LEAVE_CLASSES = (
    "leave",
    "poll_timeout",
    "close",
    "unsubscribe",
    "session_timeout",
    "rebalance_timeout",
    "fenced",
    "replaced",
    "unknown",
)

#: A reason that admits a new member: its id and (Kafka 2.2+) its instance id.
ADDED_MEMBER = re.compile(r"Adding new member (\S+?)(?: with group instance ?id (\S+?))?(?:;|$)")

# The client's reasons (KIP-800) that say the application or the client asked, checked first.
_CLIENT_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("poll_timeout", re.compile(r"poll timeout has expired", re.I)),
    ("close", re.compile(r"consumer is being closed|being closed", re.I)),
    ("unsubscribe", re.compile(r"unsubscribed", re.I)),
    ("enforced", re.compile(r"application[- ]requested|enforce", re.I)),
)

_REBALANCE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("session_timeout", re.compile(r"on heartbeat expiration", re.I)),
    ("coordinator_moved", re.compile(r"Freshly-loaded group", re.I)),
    ("static_member_replaced", re.compile(r"static member .*(instance id|rejoin|re-join)", re.I)),
    ("member_left", re.compile(r"on LeaveGroup|pending sync request expiration", re.I)),
    ("member_joined", re.compile(r"^Adding new member", re.I)),
    (
        "metadata_change",
        re.compile(r"Updating metadata|re-joining group|joining group during|metadata", re.I),
    ),
)


def client_reason(reason: str | None) -> str | None:
    """The ``client reason: ...`` part of a coordinator's reason (KIP-800), if any."""
    if not reason:
        return None
    marker = "client reason: "
    at = reason.find(marker)
    if at < 0:
        return None
    text = reason[at + len(marker) :].strip()
    return None if text in {"", "not provided"} else text


def classify_rebalance(reason: str | None) -> str:
    """The class of a ``Preparing to rebalance`` reason (``unknown`` for none or a new one)."""
    if not reason:
        return "unknown"
    client = client_reason(reason)
    if client is not None:
        for name, pattern in _CLIENT_RULES:
            if name == "enforced" and pattern.search(client):
                return "enforced"
    for name, pattern in _REBALANCE_RULES:
        if pattern.search(reason):
            return name
    return "unknown"


def classify_leave(reason: str | None) -> str:
    """The class of a leave's reason text (the client's reason, or the coordinator's)."""
    if not reason:
        return "unknown"
    for name, pattern in _CLIENT_RULES:
        if name != "enforced" and pattern.search(reason):
            return name
    lowered = reason.lower()
    if "session" in lowered or "heartbeat expiration" in lowered:
        return "session_timeout"
    if "failed to transition" in lowered or "failed to revoke" in lowered:
        return "rebalance_timeout"
    if "rebalance timeout" in lowered or "failed to join" in lowered:
        return "rebalance_timeout"
    if "replace" in lowered:
        return "replaced"
    if "fenced" in lowered:
        return "fenced"
    return "unknown"
