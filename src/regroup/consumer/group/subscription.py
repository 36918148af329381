"""Subscriptions: regular expressions and the group's subscription type.

Regular expressions (KIP-848 ``SubscribedTopicRegex``; Kafka 4.0, KIP-848 v1 of
ConsumerGroupHeartbeat). Kafka compiles them with Google's RE2/J
(``com.google.re2j.Pattern.compile``) and a topic matches when the *whole* name
matches (``pattern.matcher(topic).matches()``). regroup uses RE2 itself (the
``google-re2`` package; RE2/J is its Java port, with the same syntax) and
``fullmatch``. Matching takes time linear in the topic name whatever the
pattern: there is no backtracking, so a pattern such as ``(a+)+$`` cannot stall
the coordinator.

An invalid regex is refused with Kafka's INVALID_REGULAR_EXPRESSION and Kafka's
message (``GroupMetadataManager.throwIfRegularExpressionIsInvalid``)::

    SubscribedTopicRegex `<regex>` is not a valid regular expression: <description>.

where the description is RE2/J's (``PatternSyntaxException.getDescription``);
RE2's own wording is translated to RE2/J's (``_RE2J_DESCRIPTIONS``), e.g.
"missing ]" becomes "missing closing ]". Known differences that remain: RE2/J
refuses a capture-group name used twice ("duplicate capture group name"), which
RE2 accepts.

Kafka resolves regexes asynchronously and filters topics by the member's
DESCRIBE ACLs; regroup resolves them synchronously against the metadata image
(there are no ACLs), when a member subscribes and on every metadata update.

Subscription type (Kafka ``ModernGroup.subscriptionType``): HOMOGENEOUS when
every member subscribes by names to exactly the same topics and nobody uses a
regex, or when every member uses the same one regex and no names; otherwise
HETEROGENEOUS. An empty group is HOMOGENEOUS.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Protocol, cast

import re2

from regroup.assignors.consumer.api import SubscriptionType
from regroup.consumer.group.group_member import ConsumerGroupMember

__all__ = [
    "InvalidRegexError",
    "TopicPattern",
    "compile_regex",
    "resolve_regex",
    "subscription_type",
]


class InvalidRegexError(ValueError):
    """A subscription regex that does not compile (Kafka: INVALID_REGULAR_EXPRESSION)."""


class TopicPattern(Protocol):
    """A compiled RE2 pattern, as far as subscriptions use it."""

    def fullmatch(self, text: str) -> object | None: ...


def _options() -> object:
    options = re2.Options()
    # RE2 writes every parse error to stderr by default; the error is reported here instead.
    options.log_errors = False
    return cast(object, options)


_OPTIONS = _options()

#: RE2's error texts (``RegexpStatus::CodeText``) -> RE2/J's (``Parser.ERR_*``).
_RE2J_DESCRIPTIONS = {
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    # RE2/J's parser meets a ')' with nothing open as a stack underflow.
    "unexpected )": "regexp/syntax: internal error",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
}


def _description(error: Exception) -> str:
    """RE2/J's description of the error RE2 reports as ``<code text>: <fragment>``."""
    raw = error.args[0] if error.args else ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    code = text.split(": ", 1)[0]
    return _RE2J_DESCRIPTIONS.get(code, code)


@lru_cache(maxsize=1024)
def _compile(regex: str) -> TopicPattern:
    try:
        return cast(TopicPattern, re2.compile(regex, _OPTIONS))
    except re2.error as exc:
        raise InvalidRegexError(
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: "
            f"{_description(exc)}."
        ) from None


def compile_regex(regex: str) -> TopicPattern:
    """Compile ``regex`` as Kafka's RE2/J does, or raise ``InvalidRegexError``."""
    return _compile(regex)


def resolve_regex(regex: str, topic_names: Iterable[str]) -> frozenset[str]:
    """The topic names the whole of which ``regex`` matches (linear time per name)."""
    pattern = compile_regex(regex)
    return frozenset(name for name in topic_names if pattern.fullmatch(name) is not None)


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
