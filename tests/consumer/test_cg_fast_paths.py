"""The shortcuts the KIP-848 core takes for speed give what the long way gives.

* ``reconcile`` answers an epoch-only step without ``_next_assignment``
  (``_only_epoch_moves``): the same member as the full computation;
* ``ConsumerGroupMember.with_current_assignment`` equals ``dataclasses.replace``;
* the group keeps partition -> owner and reads the partition epoch from the
  owner: the same epochs as Kafka's partition -> epoch map, through any
  sequence of record-8 replays;
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.consumer.group.group import ConsumerGroup, IllegalGroupStateError
from regroup.consumer.group.group_member import ConsumerGroupMember, MemberState
from regroup.consumer.group.reconciliation import _next_assignment, _Step, reconcile
from regroup.model.requests.consumer import TopicPartitions
from regroup.model.uuid import Uuid

FOO = Uuid.for_name("foo")
BAR = Uuid.for_name("bar")
S = MemberState

_partitions = st.frozensets(st.integers(0, 7), max_size=5)
_assignment = st.dictionaries(st.sampled_from([FOO, BAR]), _partitions, max_size=2)


def _free(topic_id: Uuid, partition: int) -> int:
    return -1


@settings(max_examples=300, deadline=None)
@given(
    assigned=_assignment,
    target=_assignment,
    epoch=st.integers(0, 5),
    target_epoch=st.integers(0, 6),
    same=st.booleans(),
)
def test_epoch_only_shortcut_matches_next_assignment(
    assigned: dict[Uuid, frozenset[int]],
    target: dict[Uuid, frozenset[int]],
    epoch: int,
    target_epoch: int,
    same: bool,
) -> None:
    if same:
        target = dict(assigned)  # the shortcut's case, empty sets included
    member = ConsumerGroupMember(
        "m", member_epoch=epoch, previous_member_epoch=epoch - 1, assigned_partitions=assigned
    )
    owned = tuple(TopicPartitions(t, tuple(sorted(p))) for t, p in assigned.items())
    fast = reconcile(member, target_epoch, target, _free, owned)
    if epoch == target_epoch:
        assert fast is member
        return
    step = _Step(member, target_epoch, target, _free, {t: p for t, p in assigned.items() if p})
    slow = _next_assignment(step, epoch)
    assert fast == slow


@given(
    member_epoch=st.integers(-2, 9),
    previous=st.integers(-1, 9),
    state=st.sampled_from(list(MemberState)),
    assigned=_assignment,
    pending=_assignment,
)
def test_with_current_assignment_is_replace(
    member_epoch: int,
    previous: int,
    state: MemberState,
    assigned: dict[Uuid, frozenset[int]],
    pending: dict[Uuid, frozenset[int]],
) -> None:
    member = ConsumerGroupMember(
        "m",
        instance_id="i",
        rack_id="r",
        rebalance_timeout_ms=5,
        client_id="c",
        client_host="h",
        subscribed_topic_names=frozenset({"foo"}),
        subscribed_topic_regex="b.*",
        server_assignor="uniform",
    )
    assert member.with_current_assignment(
        state, member_epoch, previous, assigned, pending
    ) == replace(
        member,
        state=state,
        member_epoch=member_epoch,
        previous_member_epoch=previous,
        assigned_partitions=assigned,
        partitions_pending_revocation=pending,
    )


_record = st.tuples(
    st.sampled_from(["a", "b", "c"]),
    st.integers(1, 9),
    st.frozensets(st.integers(0, 7), max_size=4),
    st.frozensets(st.integers(0, 7), max_size=2),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_record, max_size=25))
def test_partition_epochs_follow_the_owners(
    records: list[tuple[str, int, frozenset[int], frozenset[int]]],
) -> None:
    """Replay record 8s; the epochs are those of an explicit partition -> epoch map."""
    group = ConsumerGroup("g")
    epochs: dict[int, int] = {}  # Kafka's map, kept the long way
    owner: dict[int, str] = {}
    for member_id, epoch, assigned, pending in records:
        pending = pending - assigned
        mine = {p for p, m in owner.items() if m == member_id}
        claimed = (assigned | pending) - mine
        if any(p in owner for p in claimed):
            with pytest.raises(IllegalGroupStateError):
                group.start_journal()
                try:
                    group.put_current_assignment(
                        member_id,
                        member_epoch=epoch,
                        previous_member_epoch=0,
                        state=S.STABLE,
                        assigned={FOO: assigned} if assigned else {},
                        pending={FOO: pending} if pending else {},
                    )
                except IllegalGroupStateError:
                    group.undo_journal()
                    raise
            continue
        group.put_current_assignment(
            member_id,
            member_epoch=epoch,
            previous_member_epoch=0,
            state=S.STABLE,
            assigned={FOO: assigned} if assigned else {},
            pending={FOO: pending} if pending else {},
        )
        for p in mine - (assigned | pending):
            del epochs[p], owner[p]
        for p in assigned | pending:
            epochs[p], owner[p] = epoch, member_id
        for p in range(8):
            assert group.current_partition_epoch(FOO, p) == epochs.get(p, -1)
    rebuilt = ConsumerGroup("g")
    for member in group.members.values():
        rebuilt.put_current_assignment(
            member.member_id,
            member_epoch=member.member_epoch,
            previous_member_epoch=member.previous_member_epoch,
            state=member.state,
            assigned=member.assigned_partitions,
            pending=member.partitions_pending_revocation,
        )
    assert rebuilt == group


def test_auto_commit_asks_for_positions_only_when_due() -> None:
    from regroup.consumer.member.offsets import CommitTracker
    from regroup.model import TopicPartition

    asked: list[int] = []
    tp = TopicPartition("foo", 0)

    def positions() -> dict[TopicPartition, int]:
        asked.append(1)
        return {tp: 5}

    tracker = CommitTracker(1000)
    assert tracker.auto_commit_due(0, positions) == {}  # starts the clock
    assert tracker.auto_commit_due(999, positions) == {}
    assert asked == []
    assert tracker.auto_commit_due(1000, positions) == {tp: 5}
    assert asked == [1]
    assert tracker.auto_commit_due(2000, positions) == {}  # not moved
    assert asked == [1, 1]
