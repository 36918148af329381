"""Both members satisfy the one driving API (``regroup.members.driving.Member``).

mypy checks it statically where the drivers (``regroup.sim.consumer``,
``regroup.testing.group``) hold a member as a ``Member``; this checks it at run time,
and that every request either member sends is a ``MemberRequest``.
"""

from __future__ import annotations

import typing

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
