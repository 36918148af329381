"""A KIP-848 regex under an authorizer: it resolves to the topics the principal of the
heartbeat that asked may DESCRIBE (Kafka's ``GroupMetadataManager.
refreshRegularExpressions`` and ``filterTopicDescribeAuthorizedTopics``)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.coordinator.consumer.regex_refresh import regex_key
from regroup.model.requests.consumer import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from tests.coordinator.consumer_group_harness import Harness

KAFKA, KIP = "kafka", "kip-848"
#: The principal may describe the ``open-`` topics only.
OPEN: Callable[[str], bool] = lambda name: name.startswith("open-")  # noqa: E731


def _authorized(semantics: str, **topics: int) -> Harness:
    h = Harness(regroup_consumer_semantics=semantics, topics=topics)
    h.coordinator.state.consumer.topic_authorization = True
    return h


def _hb(
    h: Harness,
    member: str,
    epoch: int,
    context: Callable[[str], bool] | None = OPEN,
    **fields: object,
) -> ConsumerGroupHeartbeatResponse:
    request = ConsumerGroupHeartbeatRequest(
        "g",
        member,
        epoch,
        rebalance_timeout_ms=300_000 if epoch == 0 else -1,
        topic_partitions=() if epoch == 0 else None,
        may_describe_topic=context,
        **fields,  # type: ignore[arg-type]
    )
    return h.call(request, ConsumerGroupHeartbeatResponse)


def _names(h: Harness, member: str = "a") -> set[str]:
    image = h.coordinator.metadata
    ids = h.group().target_assignment.get(member)
    assert ids is not None
    return {image.topic_by_id(t).name for t in ids}  # type: ignore[union-attr]


@pytest.mark.parametrize("semantics", [KAFKA, KIP])
def test_a_regex_resolves_to_the_describable_topics_only(semantics: str) -> None:
    h = _authorized(semantics, **{"open-a": 2, "closed-b": 2})
    joined = _hb(h, "a", 0, subscribed_topic_regex=".*-.")
    h.advance(0)  # Kafka's semantics: the refresh lands on the next timer
    (resolved,) = h.group().resolved_regexes.values()
    assert resolved.topics == {"open-a"}
    _hb(h, "a", joined.member_epoch)
    assert _names(h) == {"open-a"}


@pytest.mark.parametrize("semantics", [KAFKA, KIP])
def test_without_authorization_the_context_changes_nothing(semantics: str) -> None:
    h = Harness(regroup_consumer_semantics=semantics, topics={"open-a": 2, "closed-b": 2})
    _hb(h, "a", 0, subscribed_topic_regex=".*-.")
    h.advance(0)
    (resolved,) = h.group().resolved_regexes.values()
    assert resolved.topics == {"open-a", "closed-b"}


def test_no_request_context_no_resolution() -> None:
    """Under an authorizer a refresh runs only under a heartbeat's context."""
    h = _authorized(KAFKA, **{"open-a": 2})
    _hb(h, "a", 0, context=None, subscribed_topic_regex=".*")
    h.advance(0)
    assert h.group().resolved_regexes == {}
    assert not h.coordinator.state.timer.is_scheduled(regex_key("g"))


@pytest.mark.parametrize("semantics", [KAFKA, KIP])
def test_new_topics_wait_for_the_next_heartbeat_and_its_context(semantics: str) -> None:
    h = _authorized(semantics, **{"open-a": 2})
    joined = _hb(h, "a", 0, subscribed_topic_regex="open-.*|closed-.*")
    h.advance(0)
    epoch = _hb(h, "a", joined.member_epoch).member_epoch
    result = h.set_topics({"open-c": 1, "closed-d": 1})
    # The metadata update does not resolve the regex itself: no context to resolve under.
    assert not [r for r in result.records if "Regular" in type(r.key).__name__]
    (before,) = h.group().resolved_regexes.values()
    assert before.topics == {"open-a"}
    h.advance(10_001)  # past Kafka's REGEX_BATCH_REFRESH_INTERVAL_MS
    _hb(h, "a", epoch)
    h.advance(0)
    (after,) = h.group().resolved_regexes.values()
    assert after.topics == {"open-a", "open-c"}
    _hb(h, "a", h.group().members["a"].member_epoch)
    assert _names(h) == {"open-a", "open-c"}


_NAMES = st.lists(
    st.text(alphabet="abc-", min_size=1, max_size=4), min_size=1, max_size=6, unique=True
)


@settings(max_examples=60, deadline=None)
@given(_NAMES, st.data())
def test_a_resolved_regex_is_the_matched_topics_the_principal_may_describe(
    names: list[str], data: st.DataObject
) -> None:
    """Whatever the topics and ACLs: resolved = matched ∩ describable, and the target
    assignment names no other topic."""
    allowed = set(data.draw(st.sets(st.sampled_from(names)), label="describable"))
    regex = data.draw(st.sampled_from(["a.*", ".*-.*", "[ab]+", ".*"]), label="regex")
    h = _authorized(KAFKA, **dict.fromkeys(names, 1))
    joined = _hb(h, "a", 0, context=allowed.__contains__, subscribed_topic_regex=regex)
    h.advance(0)
    matched = {n for n in names if re.fullmatch(regex, n)}
    (resolved,) = h.group().resolved_regexes.values()
    assert resolved.topics == matched & allowed
    _hb(h, "a", joined.member_epoch, context=allowed.__contains__)
    assert _names(h) <= matched & allowed
