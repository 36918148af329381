"""The reconciliation table (CurrentAssignmentBuilder), rule by rule."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.consumer.group.group_member import ConsumerGroupMember, MemberState
from regroup.consumer.group.reconciliation import TRANSITIONS, reconcile
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.consumer import TopicPartitions
from regroup.model.uuid import Uuid

FOO = Uuid.for_name("foo")
S = MemberState


def parts(*ps: int) -> dict[Uuid, frozenset[int]]:
    return {FOO: frozenset(ps)} if ps else {}


def owned(*ps: int) -> tuple[TopicPartitions, ...]:
    return (TopicPartitions(FOO, ps),) if ps else ()


def member(
    epoch: int, *assigned: int, state: S = S.STABLE, pending: tuple[int, ...] = ()
) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        "m",
        member_epoch=epoch,
        previous_member_epoch=epoch - 1,
        state=state,
        assigned_partitions=parts(*assigned),
        partitions_pending_revocation=parts(*pending),
    )


def free(topic: Uuid, p: int) -> int:
    return -1


def held_by_other(*held: int) -> Callable[[Uuid, int], int]:
    return lambda topic, p: 1 if p in held else -1


def test_reconciled_member_is_unchanged() -> None:
    m = member(3, 0, 1)
    assert reconcile(m, 3, parts(0, 1), free, owned(0, 1)) is m


def test_rule1_and_2_revoke_first_keep_old_epoch() -> None:
    m = member(2, 0, 1)
    nxt = reconcile(m, 3, parts(0, 2), free, owned(0, 1))
    assert (nxt.state, nxt.member_epoch) == (S.UNREVOKED_PARTITIONS, 2)
    assert nxt.assigned_partitions == parts(0) and nxt.partitions_pending_revocation == parts(1)
    # not reported, or still reported: no acknowledgement.
    assert reconcile(nxt, 3, parts(0, 2), free, None) is nxt
    assert reconcile(nxt, 3, parts(0, 2), free, owned(0, 1)) is nxt
    # acknowledged: the new partition comes next, with the target epoch.
    done = reconcile(nxt, 3, parts(0, 2), free, owned(0))
    assert (done.state, done.member_epoch, done.previous_member_epoch) == (S.STABLE, 3, 2)
    assert done.assigned_partitions == parts(0, 2)


def test_already_revoked_skips_unrevoked() -> None:
    nxt = reconcile(member(2, 0, 1), 3, parts(0), free, owned(0))
    assert (nxt.state, nxt.member_epoch) == (S.STABLE, 3)


def test_rule3_withhold_partitions_held_by_others() -> None:
    nxt = reconcile(member(2, 0), 3, parts(0, 1, 2), held_by_other(2), owned(0))
    assert (nxt.state, nxt.member_epoch, nxt.assigned_partitions) == (
        S.UNRELEASED_PARTITIONS,
        3,
        parts(0, 1),
    )
    later = reconcile(nxt, 3, parts(0, 1, 2), free, owned(0, 1))
    assert (later.state, later.assigned_partitions) == (S.STABLE, parts(0, 1, 2))


def test_rule4_epoch_plus_one_after_ack_with_further_revocation() -> None:
    m = member(2, 1, state=S.UNREVOKED_PARTITIONS, pending=(0,))
    nxt = reconcile(m, 5, parts(), free, owned(1))
    assert (nxt.state, nxt.member_epoch) == (S.UNREVOKED_PARTITIONS, 3)


def test_rule5_blocked_member_keeps_its_epoch() -> None:
    nxt = reconcile(member(0), 2, parts(2), held_by_other(2), owned())
    assert (nxt.state, nxt.member_epoch, nxt.assigned_partitions) == (
        S.UNRELEASED_PARTITIONS,
        0,
        {},
    )


def test_rule5_as_kafka_4_moves_a_blocked_member_to_the_target_epoch() -> None:
    """``blocked_takes_target_epoch`` (classic members of a consumer group): Kafka 4.x."""
    m = member(1, 0)
    nxt = reconcile(m, 2, parts(0, 2), held_by_other(2), owned(0), blocked_takes_target_epoch=True)
    assert (nxt.state, nxt.member_epoch, nxt.previous_member_epoch) == (
        S.UNRELEASED_PARTITIONS,
        2,
        1,
    )
    assert nxt.assigned_partitions == parts(0)
    # Without the flag the same member keeps its epoch (Rule 5 of the KIP).
    assert reconcile(m, 2, parts(0, 2), held_by_other(2), owned(0)).member_epoch == 1


def test_own_pending_partition_is_not_unreleased() -> None:
    # KAFKA-19449: a partition the member itself is revoking is not held by another.
    m = member(2, 0, state=S.UNRELEASED_PARTITIONS, pending=())
    nxt = reconcile(m, 3, parts(0, 1), held_by_other(), owned(0))
    assert nxt.assigned_partitions == parts(0, 1)


def test_unknown_state_fences_unless_empty() -> None:
    m = member(2, 0, state=S.UNKNOWN)
    with pytest.raises(KafkaProtocolError) as err:
        reconcile(m, 3, parts(0), free, owned(0))
    assert err.value.code is ErrorCode.FENCED_MEMBER_EPOCH
    assert reconcile(m, 3, parts(0), free, owned()).state is S.STABLE


def test_no_transition_to_unknown() -> None:
    assert all(S.UNKNOWN not in successors for successors in TRANSITIONS.values())


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    st.frozensets(st.integers(0, 7)),
    st.frozensets(st.integers(0, 7)),
    st.frozensets(st.integers(0, 7)),
    st.integers(1, 5),
    st.booleans(),
)
def test_never_revokes_and_assigns_together(
    assigned: frozenset[int], target: frozenset[int], held: frozenset[int], lag: int, report: bool
) -> None:
    m = ConsumerGroupMember("m", member_epoch=3, assigned_partitions=parts(*assigned))
    nxt = reconcile(
        m,
        3 + lag,
        parts(*target),
        held_by_other(*held),
        owned(*sorted(assigned)) if report else None,
    )
    new = nxt.assigned_partitions.get(FOO, frozenset())
    if nxt.partitions_pending_revocation:
        assert new <= assigned  # nothing new while revoking
        assert nxt.member_epoch == 3
    assert not (new - assigned) & (held - assigned)  # withheld partitions never given
    assert nxt.member_epoch <= 3 + lag
