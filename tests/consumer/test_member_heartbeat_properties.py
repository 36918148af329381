"""Properties of the member's heartbeat building ("send only what changed") and of its
reconciliation plan (revoke first, never both owned and revoked)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.consumer.member.heartbeat import (
    HeartbeatFields,
    HeartbeatRequestBuilder,
    HeartbeatSchedule,
    LocalAssignment,
    topic_partitions_of,
)
from regroup.consumer.member.reconciler import plan_reconciliation, resolve_target
from regroup.members.listener import ListenerInvoker
from regroup.model import TopicPartition, Uuid
from regroup.model.listener import NoOpRebalanceListener
from regroup.model.metadata import MetadataImage

FOO, BAR, BAZ = Uuid.for_name("foo"), Uuid.for_name("bar"), Uuid.for_name("baz")
IMAGE = MetadataImage.from_partition_counts({"foo": 4, "bar": 4})

owned_maps = st.dictionaries(
    st.sampled_from([FOO, BAR]), st.frozensets(st.integers(0, 3), min_size=1), max_size=2
)
fields_strategy = st.builds(
    lambda timeout, topics, regex, server, epoch, local, owned: HeartbeatFields(
        group_id="g",
        member_id="m",
        member_epoch=epoch,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=timeout,
        subscribed_topic_names=None if regex else tuple(sorted(topics)),
        subscribed_topic_regex="fo.*" if regex else None,
        server_assignor=server,
        client_assignors=None,
        owned=LocalAssignment(local, owned),
    ),
    st.sampled_from([1000, 2000]),
    st.frozensets(st.sampled_from(["foo", "bar"]), max_size=2),
    st.booleans(),
    st.sampled_from([None, "uniform", "range"]),
    st.integers(0, 3),
    st.integers(0, 2),
    owned_maps,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(fields_strategy, st.booleans(), st.booleans()), min_size=1, max_size=12))
def test_a_request_carries_exactly_the_fields_that_changed(
    steps: list[tuple[HeartbeatFields, bool, bool]],
) -> None:
    builder = HeartbeatRequestBuilder()
    last: HeartbeatFields | None = None
    for fields, full, reset in steps:
        if reset:
            builder.reset()
            last = None
        request = builder.build(fields, full=full)
        everything = full or last is None
        assert request.member_epoch == fields.member_epoch and request.member_id == "m"
        timeout_changed = (
            everything or last is None or last.rebalance_timeout_ms != fields.rebalance_timeout_ms
        )
        assert (request.rebalance_timeout_ms != -1) == timeout_changed
        owned_changed = everything or last is None or last.owned != fields.owned
        assert (request.topic_partitions is not None) == owned_changed
        if request.topic_partitions is not None:
            assert request.topic_partitions == topic_partitions_of(fields.owned.partitions)
        server_changed = (
            everything or last is None or last.server_assignor != fields.server_assignor
        )
        assert request.server_assignor == (fields.server_assignor if server_changed else None)
        if fields.subscribed_topic_regex is None:
            names_changed = (
                everything
                or last is None
                or last.subscribed_topic_names != fields.subscribed_topic_names
            )
            assert (request.subscribed_topic_names is not None) == names_changed
            # A regular expression sent before is cleared with "" exactly once.
            cleared = last is not None and last.subscribed_topic_regex is not None
            assert (request.subscribed_topic_regex == "") == cleared
        else:
            assert request.subscribed_topic_names is None
            regex_changed = (
                everything
                or last is None
                or last.subscribed_topic_regex != fields.subscribed_topic_regex
            )
            assert (request.subscribed_topic_regex is not None) == regex_changed
        last = fields


@settings(max_examples=200, deadline=None)
@given(
    owned=st.frozensets(
        st.builds(TopicPartition, st.sampled_from(["foo", "bar"]), st.integers(0, 3)), max_size=8
    ),
    target=st.dictionaries(
        st.sampled_from([FOO, BAR, BAZ]), st.frozensets(st.integers(0, 3)), max_size=3
    ),
)
def test_the_plan_moves_owned_to_the_resolved_target(
    owned: frozenset[TopicPartition], target: dict[Uuid, frozenset[int]]
) -> None:
    resolved = resolve_target(target, IMAGE, {})
    assert resolved.unresolved == ({BAZ} if target.get(BAZ) else set())
    plan = plan_reconciliation(owned, resolved)
    assert not set(plan.revoked) & set(plan.added)
    assert (owned - set(plan.revoked)) | set(plan.added) == resolved.partitions
    assert set(plan.revoked) <= owned and not set(plan.added) & owned
    assert list(plan.revoked) == sorted(plan.revoked) and list(plan.added) == sorted(plan.added)


def test_known_names_resolve_topics_missing_from_metadata() -> None:
    resolved = resolve_target({BAZ: frozenset({1})}, IMAGE, {BAZ: "baz"})
    assert resolved.partitions == {TopicPartition("baz", 1)} and not resolved.unresolved


class _FailingListener(NoOpRebalanceListener):
    """Fails the n-th ``on_partitions_assigned`` call when ``fails[n]``."""

    def __init__(self, fails: list[bool]) -> None:
        self.fails = fails
        self.ran: list[int] = []

    def on_partitions_assigned(self, partitions: Sequence[TopicPartition]) -> None:
        index = len(self.ran)
        self.ran.append(index)
        if self.fails[index]:
            raise RuntimeError(str(index))


@given(st.lists(st.booleans(), min_size=1, max_size=6))
def test_the_listener_invoker_runs_everything_and_keeps_the_first_error(fails: list[bool]) -> None:
    listener = _FailingListener(fails)
    invoker = ListenerInvoker(listener)
    returned = [invoker.invoke("assigned", []).error is None for _ in fails]
    assert listener.ran == list(range(len(fails)))
    assert returned == [not fail for fail in fails]
    assert invoker.error_pending is any(fails)
    first = invoker.take_error()
    if any(fails):
        assert isinstance(first, RuntimeError) and str(first) == str(fails.index(True))
    else:
        assert first is None
    assert invoker.take_error() is None


def test_schedule_interval_backoff_and_in_flight() -> None:
    schedule = HeartbeatSchedule(backoff_ms=100, backoff_max_ms=250)
    assert schedule.can_send(0, urgent=False)
    schedule.on_sent(0)
    assert not schedule.can_send(10_000, urgent=True) and schedule.next_due_ms() is None
    schedule.on_response(10, 3000)
    assert schedule.next_due_ms() == 3010 and not schedule.can_send(3009, urgent=False)
    assert schedule.can_send(3009, urgent=True)
    schedule.on_sent(3010)
    schedule.on_failure(3020)
    schedule.on_sent(3120)
    schedule.on_failure(3130)
    schedule.on_sent(3330)
    schedule.on_failure(3340)
    assert schedule.next_due_ms() == 3340 + 250  # capped
