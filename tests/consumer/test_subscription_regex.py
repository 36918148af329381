"""KIP-848 regex subscriptions evaluated with RE2, as Kafka evaluates them with RE2/J.

Kafka: ``GroupMetadataManager.throwIfRegularExpressionIsInvalid`` (compile with
``com.google.re2j.Pattern``; INVALID_REGULAR_EXPRESSION with the message
"SubscribedTopicRegex `<regex>` is not a valid regular expression: <RE2/J
description>.") and the regex resolution, which keeps the topics whose whole name
matches (``Matcher.matches``). Linear time: with Python's backtracking ``re``,
``(a+)+$`` against a 29-character name took seconds, doubling per character.
"""

from __future__ import annotations

import pytest

from regroup.consumer.group.subscription import InvalidRegexError, compile_regex, resolve_regex

# -- no backtracking ------------------------------------------------------------------------


@pytest.mark.parametrize("length", [29, 40, 64, 249])
def test_catastrophic_backtracking_pattern_is_evaluated_linearly(length: int) -> None:
    # A backtracking engine needs about 2**length steps to reject these names (hours at 40);
    # RE2 runs a DFA over the name once. No time is measured: the test simply finishes.
    almost = "a" * length + "!"
    names = [almost, "a" * length, "b" * length, "a!" * (length // 2)]
    assert resolve_regex("(a+)+$", names) == frozenset({"a" * length})
    assert resolve_regex("(a|aa)+", names) == frozenset({"a" * length})
    assert resolve_regex("(.*a){12}", [almost]) == frozenset()


# -- RE2/J syntax and matching ----------------------------------------------------------------


def test_whole_name_matches_only() -> None:
    # Kafka: pattern.matcher(topic).matches(), not find().
    assert resolve_regex("foo.*", ["foo", "foo-1", "xfoo", "bar"]) == frozenset({"foo", "foo-1"})
    assert resolve_regex("oo", ["foo"]) == frozenset()
    assert resolve_regex("foo|bar", ["foo", "bar", "foobar"]) == frozenset({"foo", "bar"})


def test_re2_syntax_python_re_lacks() -> None:
    # Unicode classes and \Q...\E quoting are RE2 (and RE2/J) syntax; Python's re refuses both.
    assert resolve_regex(r"orders-\pN+", ["orders-12", "orders-x"]) == frozenset({"orders-12"})
    assert resolve_regex(r"\Qa.b\E.*", ["a.b-1", "axb-1"]) == frozenset({"a.b-1"})
    assert resolve_regex(r"(?i)FOO", ["foo", "Foo", "fo"]) == frozenset({"foo", "Foo"})


# -- Kafka's error texts ----------------------------------------------------------------------

# Each: a regex RE2/J refuses, and RE2/J's description (Parser.ERR_* of re2j 1.7).
RE2J_ERRORS = [
    ("foo[", "missing closing ]"),
    ("[a", "missing closing ]"),
    ("foo(", "missing closing )"),
    ("a)", "regexp/syntax: internal error"),
    ("a\\", "trailing backslash at end of expression"),
    ("*a", "missing argument to repetition operator"),
    ("a{2,1}", "invalid repeat count"),
    ("a{1001}", "invalid repeat count"),
    ("a**", "invalid nested repetition operator"),
    ("(?=a)", "invalid or unsupported Perl syntax"),
    ("(?<!a)b", "invalid or unsupported Perl syntax"),
    ("(a)\\1", "invalid escape sequence"),
    ("[z-a]", "invalid character class range"),
    ("(?P<>a)", "invalid named capture"),
]


@pytest.mark.parametrize(("regex", "description"), RE2J_ERRORS)
def test_invalid_regex_has_kafkas_message(regex: str, description: str) -> None:
    with pytest.raises(InvalidRegexError) as error:
        compile_regex(regex)
    assert str(error.value) == (
        f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {description}."
    )


def test_an_invalid_regex_writes_nothing_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    # Sans-IO: RE2 logs parse errors to stderr unless told not to; the core must not.
    for regex, _ in RE2J_ERRORS:
        with pytest.raises(InvalidRegexError):
            compile_regex(regex)
    assert capfd.readouterr() == ("", "")
