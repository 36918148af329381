"""ConsumerGroup: derived states, subscription type, regexes, preferred assignor, target builder."""

from __future__ import annotations

import pytest

from regroup.assignors.consumer.api import SubscriptionType, TopicMetadata
from regroup.consumer.group.group import ConsumerGroup, IllegalGroupStateError
from regroup.consumer.group.group_member import ConsumerGroupMember, MemberState
from regroup.consumer.group.subscription import (
    InvalidRegexError,
    compile_regex,
    resolve_regex,
    subscription_type,
)
from regroup.consumer.group.target_assignment import (
    build_target_assignment,
    preferred_server_assignor,
)
from regroup.model.uuid import Uuid

FOO = Uuid.for_name("foo")


def test_derived_states() -> None:
    g = ConsumerGroup("g")
    assert g.state_name() == "Empty"
    g.put_member_metadata(ConsumerGroupMember("a"))
    g.set_group_epoch(1)
    assert g.state_name() == "Assigning"
    g.set_assignment_epoch(1)
    assert g.state_name() == "Reconciling"
    g.put_current_assignment(
        "a",
        member_epoch=1,
        previous_member_epoch=0,
        state=MemberState.STABLE,
        assigned={FOO: frozenset({0})},
        pending={},
    )
    assert g.state_name() == "Stable"
    assert g.current_partition_epoch(FOO, 0) == 1 and g.current_partition_epoch(FOO, 1) == -1
    g.mark_dead()
    assert g.state_name() == "Dead"


def test_two_owners_is_an_illegal_state() -> None:
    g = ConsumerGroup("g")
    g.put_current_assignment(
        "a",
        member_epoch=1,
        previous_member_epoch=0,
        state=MemberState.STABLE,
        assigned={FOO: frozenset({0})},
        pending={},
    )
    with pytest.raises(IllegalGroupStateError):
        g.put_current_assignment(
            "b",
            member_epoch=1,
            previous_member_epoch=0,
            state=MemberState.STABLE,
            assigned={FOO: frozenset({0})},
            pending={},
        )


def test_subscription_type() -> None:
    a = ConsumerGroupMember("a", subscribed_topic_names=frozenset({"x"}))
    b = ConsumerGroupMember("b", subscribed_topic_names=frozenset({"x"}))
    c = ConsumerGroupMember("c", subscribed_topic_names=frozenset({"y"}))
    r1 = ConsumerGroupMember("r1", subscribed_topic_regex="x.*")
    r2 = ConsumerGroupMember("r2", subscribed_topic_regex="x.*")
    assert subscription_type([]) is SubscriptionType.HOMOGENEOUS
    assert subscription_type([a, b]) is SubscriptionType.HOMOGENEOUS
    assert subscription_type([a, c]) is SubscriptionType.HETEROGENEOUS
    assert subscription_type([r1, r2]) is SubscriptionType.HOMOGENEOUS
    assert subscription_type([a, r1]) is SubscriptionType.HETEROGENEOUS


def test_regex_full_match_and_re2_restrictions() -> None:
    assert resolve_regex("foo.*", ["foo", "foo-1", "xfoo", "bar"]) == frozenset({"foo", "foo-1"})
    assert resolve_regex("oo", ["foo"]) == frozenset()
    for bad in ("(", "(?=a)", "(a)\\1", "(?<!a)b"):
        with pytest.raises(InvalidRegexError):
            compile_regex(bad)


def test_preferred_assignor() -> None:
    ms = {
        m: ConsumerGroupMember(m, server_assignor=s)
        for m, s in (("a", "range"), ("b", None), ("c", "range"), ("d", "uniform"))
    }
    assert preferred_server_assignor(ms, ("uniform", "range")) == "range"
    assert preferred_server_assignor({}, ("uniform", "range")) == "uniform"
    tie = {
        m: ConsumerGroupMember(m, server_assignor=s) for m, s in (("a", "range"), ("b", "uniform"))
    }
    assert preferred_server_assignor(tie, ("uniform", "range")) == "uniform"


def test_target_builder_drops_unknown_topics_and_reports_changes() -> None:
    from regroup.assignors.consumer.range_assignor import RangeAssignor

    g = ConsumerGroup("g")
    g.set_subscription_metadata({"foo": TopicMetadata(FOO, "foo", 4)})
    members = {
        "a": ConsumerGroupMember("a", subscribed_topic_names=frozenset({"foo", "missing"})),
        "b": ConsumerGroupMember("b", subscribed_topic_names=frozenset({"foo"})),
    }
    g.set_target("a", {FOO: frozenset({0, 1})})
    result = build_target_assignment(g, members, RangeAssignor())
    assert result.targets == {"a": {FOO: frozenset({0, 1})}, "b": {FOO: frozenset({2, 3})}}
    assert result.changed == {"b": {FOO: frozenset({2, 3})}}
