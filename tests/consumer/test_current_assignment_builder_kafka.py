"""Apache Kafka 4.0's ``CurrentAssignmentBuilderTest``, ported (regroup.consumer.semantics=kafka).

Each test keeps the Kafka test's name (snake_case) and its member, target and
partition epochs: two topics of 10 partitions, a member at epoch 10. Written
from reading Kafka's test, not copied. ``reconcile`` runs with both Kafka flags
(blocked members take the target epoch, the previous epoch shifts in every step).
Not ported: the tests of 4.2+ behaviour (``withHasSubscriptionChanged``, KAFKA-19431,
and the resolved-regex variants built on it).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from regroup.consumer.group.group_member import Assignment, ConsumerGroupMember, MemberState
from regroup.consumer.group.reconciliation import reconcile
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.consumer import TopicPartitions
from regroup.model.uuid import Uuid

T1 = Uuid.for_name("topic1")
T2 = Uuid.for_name("topic2")
S = MemberState


def a(t1: tuple[int, ...] = (), t2: tuple[int, ...] = ()) -> Assignment:
    """``mkAssignment`` over topic1 and topic2 (empty topics left out)."""
    result: dict[Uuid, frozenset[int]] = {}
    if t1:
        result[T1] = frozenset(t1)
    if t2:
        result[T2] = frozenset(t2)
    return result


def owned(t1: tuple[int, ...] = (), t2: tuple[int, ...] = ()) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(t, ps) for t, ps in ((T1, t1), (T2, t2)) if ps)


def m(
    state: S,
    epoch: int,
    previous: int,
    assigned: Assignment,
    pending: Assignment | None = None,
) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        "member",
        subscribed_topic_names=frozenset({"topic1", "topic2"}),
        state=state,
        member_epoch=epoch,
        previous_member_epoch=previous,
        assigned_partitions=assigned,
        partitions_pending_revocation=pending or {},
    )


def epochs(value: int) -> Callable[[Uuid, int], int]:
    return lambda topic, partition: value


def build(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Assignment,
    partition_epoch: Callable[[Uuid, int], int],
    owned_partitions: tuple[TopicPartitions, ...] | None = None,
) -> ConsumerGroupMember:
    return reconcile(
        member,
        target_epoch,
        target,
        partition_epoch,
        owned_partitions,
        blocked_takes_target_epoch=True,
        previous_epoch_always_shifts=True,
    )


def test_stable_to_stable() -> None:
    member = m(S.STABLE, 10, 10, a((1, 2, 3), (4, 5, 6)))
    got = build(member, 11, a((1, 2, 3), (4, 5, 6)), epochs(10))
    assert got == m(S.STABLE, 11, 10, a((1, 2, 3), (4, 5, 6)))


def test_stable_to_stable_with_new_partitions() -> None:
    member = m(S.STABLE, 10, 10, a((1, 2, 3), (4, 5, 6)))
    got = build(member, 11, a((1, 2, 3, 4), (4, 5, 6, 7)), epochs(-1))
    assert got == m(S.STABLE, 11, 10, a((1, 2, 3, 4), (4, 5, 6, 7)))


def test_stable_to_unrevoked_partitions() -> None:
    member = m(S.STABLE, 10, 10, a((1, 2, 3), (4, 5, 6)))
    got = build(member, 11, a((2, 3, 4), (5, 6, 7)), epochs(-1))
    assert got == m(S.UNREVOKED_PARTITIONS, 10, 10, a((2, 3), (5, 6)), a((1,), (4,)))


def test_stable_to_unreleased_partitions() -> None:
    """Everything new is still held: Kafka moves the member to epoch 11 anyway."""
    member = m(S.STABLE, 10, 10, a((1, 2, 3), (4, 5, 6)))
    got = build(member, 11, a((1, 2, 3, 4), (4, 5, 6, 7)), epochs(10))
    assert got == m(S.UNRELEASED_PARTITIONS, 11, 10, a((1, 2, 3), (4, 5, 6)))


def test_stable_to_unreleased_partitions_with_owned_partitions_not_having_revoked_partitions() -> (
    None
):
    """topic2-6 is revoked but the member reports owning nothing: no UNREVOKED step."""
    member = m(S.STABLE, 10, 10, a((1, 2, 3), (4, 5, 6)))

    def partition_epoch(topic: Uuid, partition: int) -> int:
        return 10 if topic == T2 else -1

    got = build(member, 11, a((1, 2, 3), (4, 5, 7)), partition_epoch, owned())
    assert got == m(S.UNRELEASED_PARTITIONS, 11, 10, a((1, 2, 3), (4, 5)))


def test_unrevoked_partitions_to_stable() -> None:
    member = m(S.UNREVOKED_PARTITIONS, 10, 10, a((2, 3), (5, 6)), a((1,), (4,)))
    got = build(member, 11, a((2, 3), (5, 6)), epochs(-1), owned((2, 3), (5, 6)))
    assert got == m(S.STABLE, 11, 10, a((2, 3), (5, 6)))


def test_remains_in_unrevoked_partitions() -> None:
    member = m(S.UNREVOKED_PARTITIONS, 10, 10, a((2, 3), (5, 6)), a((1,), (4,)))
    target = a((3,), (6,))
    assert build(member, 12, target, epochs(-1), None) == member
    assert build(member, 12, target, epochs(-1), owned((1, 2, 3), (5, 6))) == member
    assert build(member, 12, target, epochs(-1), owned((2, 3), (4, 5, 6))) == member


@pytest.mark.parametrize(
    ("member_epoch", "target_epoch", "expected_epoch"),
    [(10, 12, 11), (10, 10, 10)],  # never past the target epoch
)
def test_unrevoked_partitions_to_unrevoked_partitions(
    member_epoch: int, target_epoch: int, expected_epoch: int
) -> None:
    member = m(S.UNREVOKED_PARTITIONS, member_epoch, member_epoch, a((2, 3), (5, 6)), a((1,), (4,)))
    got = build(member, target_epoch, a((3,), (6,)), epochs(-1), owned((2, 3), (5, 6)))
    assert got == m(
        S.UNREVOKED_PARTITIONS, expected_epoch, member_epoch, a((3,), (6,)), a((2,), (5,))
    )


def test_unrevoked_partitions_to_unreleased_partitions() -> None:
    """An unreleased-only step at an unchanged epoch still shifts the
    previous epoch (10 -> 11)."""
    member = m(S.UNREVOKED_PARTITIONS, 11, 10, a((2, 3), (5, 6)))
    got = build(member, 11, a((2, 3, 4), (5, 6, 7)), epochs(10), owned((2, 3), (5, 6)))
    assert got == m(S.UNRELEASED_PARTITIONS, 11, 11, a((2, 3), (5, 6)))


def test_unrevoked_partitions_to_stable_with_returned_partitions_pending_revocation() -> None:
    """topic1-4 was being revoked by this member and is back in its target (KAFKA-19449)."""
    member = m(S.UNREVOKED_PARTITIONS, 10, 10, a((2, 3), (5, 6)), a((4,)))

    def partition_epoch(topic: Uuid, partition: int) -> int:
        held = {T1: {2, 3, 4}, T2: {5, 6}}
        return 10 if partition in held.get(topic, set()) else -1

    got = build(member, 12, a((2, 3, 4), (5, 6, 7)), partition_epoch, owned((2, 3), (5, 6)))
    assert got == m(S.STABLE, 12, 10, a((2, 3, 4), (5, 6, 7)))


def test_unreleased_partitions_to_stable() -> None:
    member = m(S.UNRELEASED_PARTITIONS, 11, 11, a((2, 3), (5, 6)))
    got = build(member, 12, a((2, 3), (5, 6)), epochs(10))
    assert got == m(S.STABLE, 12, 11, a((2, 3), (5, 6)))


def test_unreleased_partitions_to_stable_with_new_partitions() -> None:
    member = m(S.UNRELEASED_PARTITIONS, 11, 11, a((2, 3), (5, 6)))
    got = build(member, 11, a((2, 3, 4), (5, 6, 7)), epochs(-1))
    assert got == m(S.STABLE, 11, 11, a((2, 3, 4), (5, 6, 7)))


def test_unreleased_partitions_to_unreleased_partitions() -> None:
    member = m(S.UNRELEASED_PARTITIONS, 11, 11, a((2, 3), (5, 6)))
    assert build(member, 11, a((2, 3, 4), (5, 6, 7)), epochs(10)) == member


def test_unreleased_partitions_to_unrevoked_partitions() -> None:
    member = m(S.UNRELEASED_PARTITIONS, 11, 11, a((2, 3), (5, 6)))
    got = build(member, 12, a((3,), (6,)), epochs(10))
    assert got == m(S.UNREVOKED_PARTITIONS, 11, 11, a((3,), (6,)), a((2,), (5,)))


def test_unknown_state() -> None:
    member = m(S.UNKNOWN, 11, 11, a((3,), (6,)), a((2,), (5,)))
    with pytest.raises(KafkaProtocolError) as fenced:
        build(member, 12, a((3,), (6,)), epochs(10))
    assert fenced.value.code is ErrorCode.FENCED_MEMBER_EPOCH
    # then the member rejoins owning nothing.
    got = build(member, 12, a((3,), (6,)), epochs(11), owned())
    assert got == m(S.STABLE, 12, 11, a((3,), (6,)))
