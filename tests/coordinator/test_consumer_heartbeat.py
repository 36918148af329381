"""ConsumerGroupHeartbeat rules: validation, fencing, epochs, static members, timers, records."""

from __future__ import annotations

from typing import Any

import pytest

from regroup.assignors.consumer.api import (
    ConsumerGroupPartitionAssignor,
    GroupAssignment,
    GroupSpec,
    SubscribedTopicDescriber,
)
from regroup.assignors.errors import PartitionAssignorError
from regroup.consumer.group.group_member import MemberState
from regroup.events import TargetAssignmentComputed
from regroup.model.errors import ErrorCode
from regroup.model.requests.consumer import (
    ClientAssignor,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from regroup.records.consumer import (
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
)
from tests.coordinator.consumer_group_harness import Harness, response_parts

# -- validation (Kafka's order) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (dict(member_id="", member_epoch=0), "MemberId can't be empty."),
        (dict(member_id="", member_epoch=-1, client_generates_member_id=False), "MemberId can't"),
        (dict(group_id="  "), "GroupId can't be empty."),
        (dict(instance_id=" "), "InstanceId can't be empty."),
        (dict(rack_id=""), "RackId can't be empty."),
        (dict(rebalance_timeout_ms=-1), "RebalanceTimeoutMs must be provided"),
        (dict(topic_partitions=None), "TopicPartitions must be empty"),
        (
            dict(subscribed_topic_names=None),
            # Kafka's exact text (throwIfConsumerGroupHeartbeatRequestIsInvalid)
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
            "(re-)joining.",
        ),
        (dict(member_epoch=-2), "InstanceId can't be null."),
        (dict(member_epoch=-3), "MemberEpoch is invalid."),
        (
            dict(server_assignor="range", client_assignors=(ClientAssignor("x", 0, 1),)),
            "ServerAssignor and ClientAssignors",
        ),
        (dict(client_assignors=(ClientAssignor("", 0, 1),)), "Assignor.Name"),
        (dict(client_assignors=(ClientAssignor("x", -1, 1),)), "MinimumVersion"),
        (dict(client_assignors=(ClientAssignor("x", 2, 1, 2),)), "MaximumVersion"),
        (dict(client_assignors=(ClientAssignor("x", 1, 2, 3),)), "Assignor.Version"),
    ],
)
def test_invalid_requests(fields: dict[str, Any], message: str) -> None:
    h = Harness()
    base: dict[str, Any] = dict(
        group_id="g",
        member_id="m",
        member_epoch=0,
        rebalance_timeout_ms=1000,
        subscribed_topic_names=("foo",),
        topic_partitions=(),
    )
    base.update(fields)
    response = h.call(ConsumerGroupHeartbeatRequest(**base), ConsumerGroupHeartbeatResponse)
    assert response.error_code is ErrorCode.INVALID_REQUEST
    assert message in (response.error_message or "")
    assert h.records == []
    assert "g" not in h.coordinator.groups


def test_names_and_regex_together_only_under_the_kip() -> None:
    """The KIP refuses SubscribedTopicNames with SubscribedTopicRegex; Kafka 4.0 takes both."""
    join: dict[str, Any] = dict(
        group_id="g",
        member_id="m",
        member_epoch=0,
        rebalance_timeout_ms=1000,
        subscribed_topic_names=("foo",),
        subscribed_topic_regex="ba.*",
        topic_partitions=(),
    )
    kip = Harness(regroup_consumer_semantics="kip-848", topics={"foo": 3, "bar": 2})
    refused = kip.call(ConsumerGroupHeartbeatRequest(**join), ConsumerGroupHeartbeatResponse)
    assert refused.error_code is ErrorCode.INVALID_REQUEST
    assert "cannot be used together" in (refused.error_message or "")
    kafka = Harness(topics={"foo": 3, "bar": 2})
    accepted = kafka.call(ConsumerGroupHeartbeatRequest(**join), ConsumerGroupHeartbeatResponse)
    assert accepted.error_code is ErrorCode.NONE
    member = kafka.group().members["m"]
    assert (member.subscribed_topic_names, member.subscribed_topic_regex) == (
        frozenset({"foo"}),
        "ba.*",
    )


def test_joining_with_owned_partitions_is_invalid() -> None:
    h = Harness()
    response = h.hb("m", 0, [1], rebalance_timeout_ms=1, subscribed_topic_names=("foo",))
    assert response.error_code is ErrorCode.INVALID_REQUEST


def test_unsupported_server_assignor_comes_after_invalid_request() -> None:
    h = Harness()
    response = h.join("m", server_assignor="bar")
    assert response.error_code is ErrorCode.UNSUPPORTED_ASSIGNOR
    assert (
        response.error_message
        == "ServerAssignor bar is not supported. Supported assignors: uniform, range."
    )
    response = h.hb("m", 0, [], server_assignor="bar")  # also missing first-request fields
    assert response.error_code is ErrorCode.INVALID_REQUEST


def test_v0_coordinator_generates_member_id() -> None:
    h = Harness()
    response = h.join("", client_generates_member_id=False)
    assert response.error_code is ErrorCode.NONE
    assert response.member_id and len(response.member_id) == 22
    assert response.member_id in h.group().members


def test_group_id_not_found_and_unknown_member() -> None:
    h = Harness()
    assert h.hb("m", 1, [0]).error_code is ErrorCode.GROUP_ID_NOT_FOUND
    assert h.hb("m", -1).error_code is ErrorCode.GROUP_ID_NOT_FOUND
    h.join("a")
    assert h.hb("ghost", 1, []).error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.hb("ghost", -1).error_code is ErrorCode.UNKNOWN_MEMBER_ID


def test_group_of_another_type_is_not_found() -> None:
    h = Harness()
    h.coordinator.groups["classic"] = object()  # type: ignore[assignment]
    response = h.join("m", group="classic")
    assert response.error_code is ErrorCode.GROUP_ID_NOT_FOUND
    assert response.error_message == "Group classic is not a consumer group."


def test_group_max_size_never_rejects_existing_members() -> None:
    h = Harness(group_consumer_max_size=1)
    h.join("a")
    assert h.join("b").error_code is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert h.hb("a", 1, [0, 1, 2]).error_code is ErrorCode.NONE


# -- epochs and fencing --------------------------------------------------------------------


def test_fenced_member_epoch_greater_and_smaller() -> None:
    h = Harness(regroup_consumer_semantics="kip-848")
    h.join("a")
    response = h.hb("a", 2, [0, 1, 2])
    assert response.error_code is ErrorCode.FENCED_MEMBER_EPOCH
    h.join("b")
    h.hb("a", 1, [0, 1, 2])
    h.hb("a", 1, [0, 1])  # a -> epoch 2 (previous 1)
    assert h.group().members["a"].member_epoch == 2
    # previous epoch with a subset of the current partitions: the lost-response case.
    response = h.hb("a", 1, [0, 1])
    assert response.error_code is ErrorCode.NONE
    assert response.member_epoch == 2
    # previous epoch without owned partitions, or with partitions it no longer has: fenced.
    assert h.hb("a", 1).error_code is ErrorCode.FENCED_MEMBER_EPOCH
    assert h.hb("a", 1, [0, 1, 2]).error_code is ErrorCode.FENCED_MEMBER_EPOCH
    # a bare epoch-0 heartbeat from a member at another epoch: fenced, it must rejoin.
    assert h.hb("a", 0, [0]).error_code is ErrorCode.FENCED_MEMBER_EPOCH
    # a join with owned partitions is still invalid. The member stays in the group.
    assert h.hb(
        "a", 0, [0], rebalance_timeout_ms=1, subscribed_topic_names=("foo",)
    ).error_code is (ErrorCode.INVALID_REQUEST)
    assert "a" in h.group().members


def test_bare_epoch_zero_from_a_dropped_member_is_unknown() -> None:
    h = Harness(regroup_consumer_semantics="kip-848")
    h.join("a")
    h.join("b")  # blocked at epoch 0 (Rule 5), then silent
    assert h.hb("b", 0).member_epoch == 0
    for _ in range(10):
        h.advance(5000)
        h.hb("a", h.group().members["a"].member_epoch, h.parts("a"))
    assert "b" not in h.group().members
    assert h.hb("b", 0).error_code is ErrorCode.UNKNOWN_MEMBER_ID


def test_lost_join_response_is_accepted_again() -> None:
    h = Harness()
    first = h.join("a")
    again = h.join("a")
    assert again.error_code is ErrorCode.NONE
    assert (again.member_epoch, response_parts(again)) == (first.member_epoch, [0, 1, 2])
    assert h.group().group_epoch == 1


def test_rejoin_with_epoch_zero_resets_the_member() -> None:
    h = Harness()
    h.join("a")
    h.hb("a", 1, [0, 1, 2])
    h.join("b")
    h.stabilize(["a", "b"])
    epoch_before = h.group().group_epoch
    # a was fenced client-side, lost its partitions and rejoins with the same id.
    response = h.join("a")
    assert response.error_code is ErrorCode.NONE
    assert response_parts(response) == h.parts("a")
    assert h.group().group_epoch == epoch_before
    assert h.rebuilt() == h.group()


def test_null_fields_mean_unchanged() -> None:
    h = Harness(topics={"foo": 3, "bar": 2})
    h.join("a", rack_id="r1", server_assignor="range")
    h.hb("a", 1, [0, 1, 2])
    member = h.group().members["a"]
    assert (member.rack_id, member.server_assignor, member.rebalance_timeout_ms) == (
        "r1",
        "range",
        300000,
    )
    assert member.subscribed_topic_names == frozenset({"foo"})
    records_before = len(h.records)
    h.hb("a", 1)
    assert len(h.records) == records_before
    # a subscription change bumps the group epoch and reassigns.
    response = h.hb("a", 1, subscribed_topic_names=("foo", "bar"))
    assert h.group().group_epoch == 2
    assert response.member_epoch == 2
    assert response.assignment is not None
    assert sorted(tp.topic_id for tp in response.assignment.topic_partitions) == sorted(
        [h.topic_id("foo"), h.topic_id("bar")]
    )


def test_rack_change_writes_member_record_without_bump() -> None:
    h = Harness()
    h.join("a")
    h.hb("a", 1, rack_id="r2")
    assert h.group().group_epoch == 1
    assert [r.key.record_name for r in h.last_records] == ["ConsumerGroupMemberMetadata"]


def test_response_carries_assignment_only_when_needed() -> None:
    h = Harness()
    assert response_parts(h.join("a")) == [0, 1, 2]
    assert h.hb("a", 1, [0, 1, 2]).assignment is None
    assert h.hb("a", 1).assignment is None
    # a full request (as after an error) gets the assignment again.
    full = h.hb("a", 1, [0, 1, 2], rebalance_timeout_ms=1000, subscribed_topic_names=("foo",))
    assert response_parts(full) == [0, 1, 2]


def test_partial_heartbeat_never_acknowledges_a_revocation() -> None:
    h = Harness(regroup_consumer_semantics="kip-848")
    h.join("a")
    h.hb("a", 1, [0, 1, 2])
    h.join("b")
    assert response_parts(h.hb("a", 1, [0, 1, 2])) == [0, 1]
    for _ in range(3):
        response = h.hb("a", 1)
        assert response.member_epoch == 1
    assert h.group().members["a"].state is MemberState.UNREVOKED_PARTITIONS
    # b is withheld foo-2 until a gives it up.
    assert response_parts(h.hb("b", 0)) == []
    assert h.hb("a", 1, [0, 1]).member_epoch == 2
    assert response_parts(h.hb("b", 0)) == [2]


def test_revocation_already_done_skips_unrevoked_state() -> None:
    h = Harness()
    h.join("a")
    h.hb("a", 1, [0, 1, 2])
    h.join("b")
    response = h.hb("a", 1, [0, 1])  # the member already reports foo-2 gone
    assert (response.member_epoch, response_parts(response)) == (2, [0, 1])


# -- leaving --------------------------------------------------------------------------------


def test_leave_writes_tombstones_in_kafka_order_and_bumps() -> None:
    h = Harness()
    h.join("a")
    h.join("b")
    response = h.hb("b", -1)
    assert (response.error_code, response.member_epoch, response.member_id) == (
        ErrorCode.NONE,
        -1,
        "b",
    )
    names = [(r.key.record_name, r.value is None) for r in h.last_records]
    assert names == [
        ("ConsumerGroupCurrentMemberAssignment", True),
        ("ConsumerGroupTargetAssignmentMember", True),
        ("ConsumerGroupMemberMetadata", True),
        ("ConsumerGroupMetadata", False),
    ]
    assert h.group().group_epoch == 3
    assert h.group().state_name() == "Assigning"
    h.stabilize(["a"])
    assert h.parts("a") == [0, 1, 2]
    assert h.group().state_name() == "Stable"
    kinds = [e.kind for e in h.events]
    assert "member_left" in kinds and "group_epoch_bumped" in kinds


def test_last_member_leaving_empties_the_group_and_expiry_deletes_it() -> None:
    h = Harness()
    h.join("a")
    h.hb("a", -1)
    assert h.group().state_name() == "Empty"
    assert h.group().subscription_metadata == {}
    h.advance(7 * 24 * 3600 * 1000)
    assert "g" not in h.coordinator.groups
    assert h.rebuilt() is None
    assert any(
        e.kind == "group_state_changed" and getattr(e, "new_state", "") == "Dead" for e in h.events
    )


# -- static membership ----------------------------------------------------------------------


def test_static_member_leaves_temporarily_and_is_replaced() -> None:
    h = Harness()
    h.join("a1", instance_id="i-a")
    h.hb("a1", 1, [0, 1, 2])
    h.join("b", instance_id="i-b")
    h.stabilize(["a1", "b"])
    epoch = h.group().group_epoch
    kept = h.parts("a1")
    response = h.hb("a1", -2, instance_id="i-a")
    assert (response.error_code, response.member_epoch) == (ErrorCode.NONE, -2)
    assert h.group().group_epoch == epoch  # no bump
    assert h.group().members["a1"].member_epoch == -2
    # a new instance with another member id takes over a1's assignment at once.
    response = h.join("a2", instance_id="i-a")
    assert response.error_code is ErrorCode.NONE
    assert response.member_epoch == h.group().assignment_epoch
    assert response_parts(response) == kept
    assert "a1" not in h.group().members
    assert h.group().group_epoch == epoch
    assert h.rebuilt() == h.group()


def test_unreleased_and_fenced_instance_ids() -> None:
    h = Harness()
    h.join("a1", instance_id="i-a")
    assert h.join("a2", instance_id="i-a").error_code is ErrorCode.UNRELEASED_INSTANCE_ID
    assert h.hb("a2", 1, [], instance_id="i-a").error_code is ErrorCode.FENCED_INSTANCE_ID
    assert h.hb("a2", -1, instance_id="i-a").error_code is ErrorCode.FENCED_INSTANCE_ID
    assert h.hb("x", 1, [], instance_id="i-x").error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.hb("x", -2, instance_id="i-x").error_code is ErrorCode.UNKNOWN_MEMBER_ID
    # leaving for good with -1 removes the static member and frees the instance id.
    assert h.hb("a1", -1, instance_id="i-a").error_code is ErrorCode.NONE
    assert h.join("a2", instance_id="i-a").error_code is ErrorCode.NONE


def test_static_member_away_is_removed_by_session_timeout() -> None:
    h = Harness()
    h.join("a1", instance_id="i-a")
    h.hb("a1", -2, instance_id="i-a")
    h.advance(45000)
    assert h.group().members == {}
    assert any(getattr(e, "reason", "") == "session_timeout" for e in h.events)


# -- timers ----------------------------------------------------------------------------------


def test_session_timeout_removes_a_silent_member() -> None:
    h = Harness()
    h.join("a")
    h.join("b")
    for _ in range(10):
        h.advance(5000)
        h.hb("a", h.group().members["a"].member_epoch, h.parts("a"))
    assert "b" not in h.group().members
    assert h.parts("a") == [0, 1, 2]
    assert h.rebuilt() == h.group()


def test_session_timeout_follows_the_group_config() -> None:
    from regroup.model.requests.consumer import (
        AlterableGroupConfig,
        IncrementalAlterGroupConfigsRequest,
    )

    h = Harness(group_consumer_max_session_timeout_ms=90000)
    h.join("a")
    h.call(
        IncrementalAlterGroupConfigsRequest(
            "g", (AlterableGroupConfig("consumer.session.timeout.ms", value="90000"),)
        )
    )
    h.hb("a", 1)
    h.advance(60000)
    assert "a" in h.group().members
    h.advance(30000)
    assert "a" not in h.group().members


def test_rebalance_timeout_removes_a_member_that_does_not_revoke() -> None:
    h = Harness()
    h.join("a", rebalance_timeout_ms=10000)
    h.hb("a", 1, [0, 1, 2])
    h.join("b")
    h.hb("a", 1, [0, 1, 2])  # told to revoke; never acknowledges
    h.advance(5000)
    h.hb("a", 1)  # partial heartbeats keep the session alive
    h.hb("b", 0)
    h.advance(5000)
    assert "a" not in h.group().members
    assert any(getattr(e, "reason", "") == "rebalance_timeout" for e in h.events)


def test_a_rebalance_timeout_of_zero_is_accepted_and_leaves_no_time_to_revoke() -> None:
    """Kafka refuses only -1 on the joining heartbeat (``RebalanceTimeoutMs must be
    provided in first request.``); 0 is taken, and the revocation timer it arms
    (``scheduleConsumerGroupRebalanceTimeout``) is due at once: the member is fenced
    by the next timer run, at the same instant, unless it has revoked already."""
    h = Harness()
    joined = h.join("a", rebalance_timeout_ms=0)
    assert joined.error_code is ErrorCode.NONE
    assert h.group().members["a"].rebalance_timeout_ms == 0
    h.hb("a", 1, [0, 1, 2])
    h.join("b")
    h.hb("a", 1, [0, 1, 2])  # told to revoke; the timer is due now
    assert h.group().members["a"].state is MemberState.UNREVOKED_PARTITIONS
    h.advance(0)
    assert "a" not in h.group().members
    assert [getattr(e, "reason", "") for e in h.events].count("rebalance_timeout") == 1


def test_a_rebalance_timeout_of_minus_one_after_joining_keeps_the_one_given() -> None:
    """-1 is refused on the first heartbeat only; later it means "unchanged"."""
    h = Harness()
    h.join("a", rebalance_timeout_ms=10000)
    response = h.hb("a", 1, [0, 1, 2], rebalance_timeout_ms=-1, subscribed_topic_names=("foo",))
    assert response.error_code is ErrorCode.NONE
    assert h.group().members["a"].rebalance_timeout_ms == 10000


def test_stale_rebalance_timer_does_nothing() -> None:
    h = Harness()
    h.join("a", rebalance_timeout_ms=10000)
    h.hb("a", 1, [0, 1, 2])
    h.join("b")
    h.hb("a", 1, [0, 1, 2])
    h.hb("a", 1, [0, 1])  # acknowledged in time
    h.advance(10000)
    assert "a" in h.group().members


# -- metadata, regex, assignors ----------------------------------------------------------------


def test_partitions_added_bump_the_epoch() -> None:
    h = Harness()
    h.join("a")
    h.hb("a", 1, [0, 1, 2])
    h.set_topics({"foo": 4})
    assert h.group().group_epoch == 2
    response = h.hb("a", 1)
    assert (response.member_epoch, response_parts(response)) == (2, [0, 1, 2, 3])
    # a topic nobody subscribes to changes nothing.
    h.set_topics({"other": 5})
    assert h.group().group_epoch == 2


def test_unknown_topic_gets_nothing_until_created() -> None:
    h = Harness()
    response = h.join("a", topics=("later",))
    assert response_parts(response) == []
    h.set_topics({"later": 2})
    response = h.hb("a", 1)
    assert response_parts(response) == [0, 1]


def test_regex_subscription() -> None:
    """The design document's semantics: the regex is resolved inside the heartbeat."""
    h = Harness(topics={"foo-1": 1, "foo-2": 1, "bar": 1}, regroup_consumer_semantics="kip-848")
    response = h.join("a", subscribed_topic_regex="foo-.*")
    assert response.error_code is ErrorCode.NONE
    assert response.assignment is not None
    assert sorted(tp.topic_id for tp in response.assignment.topic_partitions) == sorted(
        [h.topic_id("foo-1"), h.topic_id("foo-2")]
    )
    assert "foo-.*" in h.group().resolved_regexes
    h.set_topics({"foo-3": 1})
    assert h.group().resolved_regexes["foo-.*"].topics == frozenset({"foo-1", "foo-2", "foo-3"})
    response = h.hb("a", 1)
    assert response.assignment is not None
    assert len(response.assignment.topic_partitions) == 3
    # clearing the regex drops its record.
    h.hb("a", 2, subscribed_topic_regex="", subscribed_topic_names=("bar",))
    assert h.group().resolved_regexes == {}
    assert h.rebuilt() == h.group()


def test_regex_subscription_is_resolved_asynchronously_under_kafka() -> None:
    """Kafka 4.0 (``maybeUpdateRegularExpressions``, ``handleRegularExpressionsResult``):
    the joining heartbeat only asks for a refresh; the resolution lands later (the
    ``consumer-regex-<group>`` timer, due at once), writes the regex record and bumps
    the group epoch; the member's next heartbeat gets the partitions."""
    h = Harness(topics={"foo-1": 1, "foo-2": 1, "bar": 1})
    h.join("b")  # a member by name first: the group exists at epoch 1
    h.hb("b", 1, [])
    response = h.join("a", subscribed_topic_regex="foo-.*")
    assert response.error_code is ErrorCode.NONE
    # no bump for a member that subscribes by an unresolved regex only.
    assert h.group().group_epoch == 1
    assert (response.member_epoch, response_parts(response)) == (1, [])
    assert "foo-.*" not in h.group().resolved_regexes
    assert h.next_deadline() == h.now_ms
    landed = h.advance(0)
    kinds = [r.key.record_name for r in landed.records]
    assert kinds == [
        "ConsumerGroupRegularExpression",
        "ConsumerGroupPartitionMetadata",
        "ConsumerGroupMetadata",
    ]
    assert h.group().resolved_regexes["foo-.*"].topics == frozenset({"foo-1", "foo-2"})
    assert h.group().group_epoch == 2
    response = h.hb("a", 1, [])
    assert response.member_epoch == 2
    assert response.assignment is not None
    assert sorted(tp.topic_id for tp in response.assignment.topic_partitions) == sorted(
        [h.topic_id("foo-1"), h.topic_id("foo-2")]
    )
    # a second member with the same, resolved, regex: bumped at once, no refresh.
    h.join("c", subscribed_topic_regex="foo-.*")
    assert h.group().group_epoch == 3
    assert h.rebuilt() == h.group()


def test_unresolved_regex_after_loading_is_refreshed() -> None:
    """After a restart, a regex the group subscribes to but never resolved is resolved."""
    h = Harness(topics={"foo-1": 1})
    h.join("a", subscribed_topic_regex="foo-.*")
    fresh = h.replay_into_new()
    fresh.on_loaded()
    landed = fresh.advance(0)
    assert "ConsumerGroupRegularExpression" in [r.key.record_name for r in landed.records]
    assert fresh.group().resolved_regexes["foo-.*"].topics == frozenset({"foo-1"})


def test_invalid_regex() -> None:
    h = Harness()
    response = h.join("a", subscribed_topic_regex="foo(")
    assert response.error_code is ErrorCode.INVALID_REGULAR_EXPRESSION
    assert (
        h.join("b", subscribed_topic_regex="(?=x)").error_code
        is ErrorCode.INVALID_REGULAR_EXPRESSION
    )


def test_most_voted_assignor_runs() -> None:
    h = Harness(topics={"foo": 4})
    h.join("a", server_assignor="range")
    h.join("b", server_assignor="range")
    h.join("c", server_assignor="uniform")
    computed = h.events_of(TargetAssignmentComputed)
    assert [e.assignor for e in computed] == ["range", "range", "range"]
    h2 = Harness()
    h2.join("a")
    (first,) = h2.events_of(TargetAssignmentComputed)
    assert first.assignor == "uniform"


class _Failing(ConsumerGroupPartitionAssignor):
    name = "uniform"

    def assign(
        self, group_spec: GroupSpec, subscribed_topic_describer: SubscribedTopicDescriber
    ) -> GroupAssignment:
        raise PartitionAssignorError("boom")


def test_assignor_failure_is_unknown_server_error_and_writes_nothing() -> None:
    h = Harness()
    h.join("a")
    before = h.group().copy()
    h.coordinator.consumer.assignor_resolver = lambda name: _Failing()
    response = h.join("b")
    assert response.error_code is ErrorCode.UNKNOWN_SERVER_ERROR
    # Kafka's handleOperationException sends UNKNOWN_SERVER_ERROR without a message.
    assert response.error_message is None
    assert h.last_records == []
    assert h.group() == before


def test_partition_assignor_exception_on_regular_heartbeat() -> None:
    # Kafka: GroupMetadataManagerTest.testPartitionAssignorExceptionOnRegularHeartbeat --
    # the first member of a new group, the assignor ("range") throws: the heartbeat fails
    # with UNKNOWN_SERVER_ERROR and no group, no record is left behind.
    h = Harness(topics={"foo": 6, "bar": 3})
    h.coordinator.consumer.assignor_resolver = lambda name: _Failing()
    response = h.join("m1", server_assignor="range", subscribed_topic_names=("foo", "bar"))
    assert response.error_code is ErrorCode.UNKNOWN_SERVER_ERROR
    assert response.error_message is None
    assert h.records == []
    assert "g" not in h.coordinator.groups


def test_a_subscribed_topic_without_metadata_is_not_an_assignor_error() -> None:
    # Kafka's TargetAssignmentBuilder maps subscribed names to ids through the metadata
    # image (TopicIds) and leaves unknown names out, so the assignors never see a topic
    # they would refuse: the member joins and gets the topics that exist.
    for assignor in ("uniform", "range"):
        h = Harness(topics={"foo": 2})
        response = h.join("a", server_assignor=assignor, subscribed_topic_names=("foo", "nope"))
        assert response.error_code is ErrorCode.NONE
        assert response_parts(response) == [0, 1]


def test_events_name_topics() -> None:
    h = Harness()
    h.join("a")
    computed = h.events_of(TargetAssignmentComputed)[0]
    assert [str(p) for p in computed.assignment["a"]] == ["foo-0", "foo-1", "foo-2"]
    kinds = [e.kind for e in h.events]
    for kind in (
        "member_joined",
        "group_epoch_bumped",
        "target_assignment_computed",
        "member_assignment_changed",
        "group_state_changed",
    ):
        assert kind in kinds


# -- the previous member epoch shifts in every reconciliation step ---------


def _member_revoking_at_epoch_2(h: Harness) -> None:
    """a: epoch 1 -> 2 (foo grown), then b joins and a must revoke at epoch 2."""
    h.join("a")
    h.hb("a", 1, [0, 1, 2])
    h.set_topics({"foo": 4})
    assert h.hb("a", 1, [0, 1, 2]).member_epoch == 2
    h.hb("a", 2, [0, 1, 2, 3])
    h.join("b")
    assert h.hb("a", 2, [0, 1, 2, 3]).member_epoch == 2
    assert h.group().members["a"].state is MemberState.UNREVOKED_PARTITIONS


def test_a_revocation_at_the_same_epoch_shifts_the_previous_epoch_and_fences_stale() -> None:
    """Kafka ``updateMemberEpoch`` in every branch of ``computeNextAssignment``: after the
    revocation step at epoch 2 the previous epoch is 2, so a heartbeat at epoch 1 (even
    with owned partitions within the assignment) is FENCED_MEMBER_EPOCH, not a lost
    response."""
    h = Harness()
    _member_revoking_at_epoch_2(h)
    a = h.group().members["a"]
    assert (a.member_epoch, a.previous_member_epoch) == (2, 2)
    kept = h.parts("a")
    assert h.hb("a", 1, kept[:1]).error_code is ErrorCode.FENCED_MEMBER_EPOCH


def test_under_the_kip_the_previous_epoch_moves_only_with_the_epoch() -> None:
    """The design document's rule (kept under kip-848): the revocation step keeps the
    previous epoch, and the epoch-1 heartbeat is the lost-response case."""
    h = Harness(regroup_consumer_semantics="kip-848")
    _member_revoking_at_epoch_2(h)
    a = h.group().members["a"]
    assert (a.member_epoch, a.previous_member_epoch) == (2, 1)
    assert h.hb("a", 1, h.parts("a")[:1]).error_code is ErrorCode.NONE


# -- a static member rejoins with new topics
# (Kafka GroupMetadataManagerTest.testStaticMemberRejoinsWithNewSubscribedTopics)


def test_static_member_rejoins_with_new_subscribed_topics() -> None:
    """The replaced member is copied as it was (old subscription), then updated: 12 records."""
    h = Harness(topics={"foo": 6, "bar": 3})
    h.join("m1", instance_id="instance-id-1", server_assignor="range")
    h.join("m2", instance_id="instance-id-2", server_assignor="range")
    h.stabilize(["m1", "m2"])
    assert (h.parts("m1"), h.parts("m2")) == ([0, 1, 2], [3, 4, 5])
    epoch = h.group().group_epoch
    away = h.hb("m2", h.group().members["m2"].member_epoch, instance_id="instance-id-2")
    assert away.error_code is ErrorCode.NONE
    h.hb("m2", -2, instance_id="instance-id-2")
    assert len(h.last_records) == 1

    rejoin = h.join(
        "m2-rejoin",
        topics=("foo", "bar"),
        instance_id="instance-id-2",
        server_assignor="range",
        rebalance_timeout_ms=5000,
    )
    assert rejoin.error_code is ErrorCode.NONE
    assert rejoin.member_epoch == epoch + 1
    assert rejoin.assignment is not None
    by_topic = {tp.topic_id: sorted(tp.partitions) for tp in rejoin.assignment.topic_partitions}
    assert by_topic == {h.topic_id("foo"): [3, 4, 5], h.topic_id("bar"): [0, 1, 2]}
    records = h.last_records
    names = [
        (r.key.record_name, getattr(r.key, "member_id", None), r.value is None) for r in records
    ]
    assert names == [
        ("ConsumerGroupCurrentMemberAssignment", "m2", True),
        ("ConsumerGroupTargetAssignmentMember", "m2", True),
        ("ConsumerGroupMemberMetadata", "m2", True),
        ("ConsumerGroupMemberMetadata", "m2-rejoin", False),
        ("ConsumerGroupTargetAssignmentMember", "m2-rejoin", False),
        ("ConsumerGroupCurrentMemberAssignment", "m2-rejoin", False),
        ("ConsumerGroupMemberMetadata", "m2-rejoin", False),
        ("ConsumerGroupPartitionMetadata", None, False),
        ("ConsumerGroupMetadata", None, False),
        ("ConsumerGroupTargetAssignmentMember", "m2-rejoin", False),
        ("ConsumerGroupTargetAssignmentMetadata", None, False),
        ("ConsumerGroupCurrentMemberAssignment", "m2-rejoin", False),
    ]
    copied, updated = records[3].value, records[6].value
    assert isinstance(copied, ConsumerGroupMemberMetadataValue)
    assert isinstance(updated, ConsumerGroupMemberMetadataValue)
    assert copied.subscribed_topic_names == ("foo",)
    assert sorted(updated.subscribed_topic_names) == ["bar", "foo"]
    copy_state = records[5].value
    assert isinstance(copy_state, ConsumerGroupCurrentMemberAssignmentValue)
    assert (copy_state.member_epoch, copy_state.previous_member_epoch) == (0, 0)
    assert h.rebuilt() == h.group()
