"""KIP-848 regex subscriptions in the coordinator: RE2 evaluation, Kafka's error.

Kafka: ``GroupMetadataManager.throwIfRegularExpressionIsInvalid`` answers
INVALID_REGULAR_EXPRESSION with "SubscribedTopicRegex `<regex>` is not a valid
regular expression: <RE2/J description>."; regexes are matched with RE2/J, in
linear time. The syntax and texts themselves are tested in
``tests/consumer/test_subscription_regex.py``.
"""

from __future__ import annotations

import pytest

from regroup.model.errors import ErrorCode
from tests.coordinator.consumer_group_harness import Harness


@pytest.mark.parametrize("semantics", ["kafka", "kip-848"])
def test_coordinator_resolves_a_catastrophic_regex_against_the_metadata(semantics: str) -> None:
    # The heartbeat that subscribes with the regex, and the metadata image it is resolved
    # against, include a name that makes a backtracking engine stall for hours.
    stalls = "a" * 48 + "!"
    matches = "a" * 48
    h = Harness(regroup_consumer_semantics=semantics, topics={stalls: 2, matches: 3, "other": 1})
    response = h.join("m", subscribed_topic_regex="(a+)+$")
    assert response.error_code is ErrorCode.NONE
    if semantics == "kafka":  # resolved asynchronously: the refresh is due at once
        h.advance(0)
        response = h.hb("m", response.member_epoch, {})
        assert response.error_code is ErrorCode.NONE
    assert response.assignment is not None
    assert [(len(tp.partitions), tp.partitions) for tp in response.assignment.topic_partitions] == [
        (3, (0, 1, 2))
    ]


def test_coordinator_answers_an_invalid_regex_with_kafkas_code_and_message() -> None:
    h = Harness()
    response = h.join("m", subscribed_topic_regex="foo[")
    assert response.error_code is ErrorCode.INVALID_REGULAR_EXPRESSION
    assert response.error_message == (
        "SubscribedTopicRegex `foo[` is not a valid regular expression: missing closing ]."
    )
    assert h.records == []
