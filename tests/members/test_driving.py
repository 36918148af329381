"""Both members satisfy the one driving API (``regroup.members.driving.Member``).

mypy checks it statically where the drivers (``regroup.sim.consumer``,
``regroup.testing.group``) hold a member as a ``Member``; this checks it at run time,
and that every request either member sends is a ``MemberRequest``.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence

from regroup.classic.member.member import ClassicMember
from regroup.consumer.member.member import ConsumerMember
from regroup.members.driving import Member, MemberRequest
from regroup.testing import InProcessGroup

REQUEST_TYPES = typing.get_args(MemberRequest)


def _sent_by(group: InProcessGroup, name: str) -> list[object]:
    return [sent.request for sent in group.sent if sent.member == name]


def test_a_classic_member_is_a_member_and_sends_member_requests() -> None:
    group = InProcessGroup(topics={"t": 4}, config={"group.initial.rebalance.delay.ms": 0})
    member = group.add_member("a", {"partition.assignment.strategy": "cooperative-sticky"})
    assert isinstance(member, ClassicMember) and isinstance(member, Member)
    group.run_until_stable(max_ms=30_000)
    sent = _sent_by(group, "a")
    assert sent and all(isinstance(request, REQUEST_TYPES) for request in sent)


def test_a_consumer_member_is_a_member_and_sends_member_requests() -> None:
    group = InProcessGroup(topics={"t": 4}, group_protocol="consumer")
    member = group.add_member("k", {})
    assert isinstance(member, ConsumerMember) and isinstance(member, Member)
    group.run_until_stable(max_ms=30_000)
    sent = _sent_by(group, "k")
    assert sent and all(isinstance(request, REQUEST_TYPES) for request in sent)


def test_an_object_without_the_driving_api_is_not_a_member() -> None:
    assert not isinstance(object(), Member)


# -- is_idle: a poll it calls idle does nothing ----------------------------------------------


def _check_idle_polls(member: Member, checked: list[int]) -> None:
    """Wrap ``member.poll``: whenever ``is_idle(now)`` held before it, the poll must
    return no request, raise nothing, report no event and leave what a driver reads of
    the member (state, assignment, next deadline) as it was."""
    real_poll = member.poll

    def poll(now_ms: int) -> Sequence[MemberRequest]:
        if not member.is_idle(now_ms):
            return real_poll(now_ms)
        before = (member.state, member.assignment, member.next_deadline(), member.member_id)
        requests = real_poll(now_ms)
        assert list(requests) == []
        assert member.take_events() == []
        assert (member.state, member.assignment, member.next_deadline(), member.member_id) == (
            before
        )
        checked.append(now_ms)
        return requests

    setattr(member, "poll", poll)  # noqa: B010 (mypy refuses an assignment to a method)


def _bounce(group: InProcessGroup, names: list[str]) -> None:
    """Stable, then one member leaves and comes back, a minute of steady heartbeats."""
    group.run_until_stable(max_ms=60_000)
    group.advance(20_000)
    group.remove_member(names[0])
    group.run_until_stable(max_ms=60_000)
    group.advance(20_000)


def test_a_classic_member_that_is_idle_does_nothing_when_polled() -> None:
    group = InProcessGroup(topics={"t": 6}, config={"group.initial.rebalance.delay.ms": 0})
    checked: list[int] = []
    names = ["a", "b", "c"]
    for name in names:
        member = group.add_member(name, {"partition.assignment.strategy": "cooperative-sticky"})
        _check_idle_polls(member, checked)
    _bounce(group, names)
    assert checked  # the steady members were found idle between their heartbeats
    leader = next(m for m in group.members.values() if isinstance(m, ClassicMember) and m.is_leader)
    # The leader compares its assignment snapshot on every poll: never idle while stable.
    assert not leader.is_idle(group.now_ms)


def test_a_consumer_member_that_is_idle_does_nothing_when_polled() -> None:
    group = InProcessGroup(topics={"t": 6}, group_protocol="consumer")
    checked: list[int] = []
    names = ["a", "b", "c"]
    for name in names:
        _check_idle_polls(group.add_member(name, {}), checked)
    _bounce(group, names)
    assert checked


def test_a_member_with_a_request_due_is_not_idle() -> None:
    group = InProcessGroup(topics={"t": 2}, group_protocol="consumer")
    member = group.add_member("k", {})
    group.run_until_stable(max_ms=30_000)
    deadline = member.next_deadline()
    assert deadline is not None and deadline > group.now_ms
    assert member.is_idle(deadline - 1)
    assert not member.is_idle(deadline)  # the next heartbeat is due
