"""Subscriptions: regular expressions and the group's subscription type.

Regular expressions (KIP-848 ``SubscribedTopicRegex``; Kafka 4.0, KIP-848 v1 of
ConsumerGroupHeartbeat). Kafka compiles them with Google's RE2/J and matches a
topic when the whole name matches (``Pattern.matcher(topic).matches()``).
regroup uses Python's ``re`` with ``fullmatch`` in its place. Differences a
user may meet:

* RE2 has no backreferences and no lookaround; ``re`` accepts them, so a regex
  Kafka rejects with INVALID_REGULAR_EXPRESSION may be accepted here. regroup
  rejects the constructs it can see cheaply: ``(?=``, ``(?!``, ``(?<=``,
  ``(?<!`` and ``\\1``..``\\9``.
* RE2 accepts ``\\pN``-style classes and ``(?P<name>)`` the same way; ``re`` has
  no ``\\p{..}`` classes (rejected here as invalid, accepted by Kafka).
* Matching time is linear in RE2; ``re`` may backtrack.

Kafka resolves regexes asynchronously and filters topics by the member's
DESCRIBE ACLs; regroup resolves them synchronously against the metadata image
(there are no ACLs), when a member subscribes and on every metadata update.

Subscription type (Kafka ``ModernGroup.subscriptionType``): HOMOGENEOUS when
every member subscribes by names to exactly the same topics and nobody uses a
regex, or when every member uses the same one regex and no names; otherwise
HETEROGENEOUS. An empty group is HOMOGENEOUS.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from regroup.assignors.consumer.api import SubscriptionType
from regroup.consumer.group_member import ConsumerGroupMember

__all__ = ["InvalidRegexError", "compile_regex", "resolve_regex", "subscription_type"]

_RE2_UNSUPPORTED = re.compile(r"\(\?<?[=!]|\\[1-9]")


class InvalidRegexError(ValueError):
    """A subscription regex that does not compile (Kafka: INVALID_REGULAR_EXPRESSION)."""


def compile_regex(regex: str) -> re.Pattern[str]:
    """Compile ``regex`` as Kafka's RE2/J would accept it, or raise ``InvalidRegexError``."""
    if _RE2_UNSUPPORTED.search(regex):
        raise InvalidRegexError(f"SubscribedTopicRegex `{regex}` is not a valid regular expression")
    try:
        return re.compile(regex)
    except re.error as exc:
        raise InvalidRegexError(
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {exc}"
        ) from None


def resolve_regex(regex: str, topic_names: Iterable[str]) -> frozenset[str]:
    """The topic names the whole of which ``regex`` matches."""
    pattern = compile_regex(regex)
    return frozenset(name for name in topic_names if pattern.fullmatch(name))


def subscription_type(
    members: Mapping[str, ConsumerGroupMember] | Iterable[ConsumerGroupMember],
) -> SubscriptionType:
    """The group's subscription type from its members' subscriptions."""
    values = members.values() if isinstance(members, Mapping) else members
    names: set[frozenset[str]] = set()
    regexes: set[str] = set()
    for member in values:
        if member.subscribed_topic_names or not member.subscribed_topic_regex:
            names.add(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            regexes.add(member.subscribed_topic_regex)
    if not regexes:
        return SubscriptionType.HOMOGENEOUS if len(names) <= 1 else SubscriptionType.HETEROGENEOUS
    if not names and len(regexes) == 1:
        return SubscriptionType.HOMOGENEOUS
    return SubscriptionType.HETEROGENEOUS
