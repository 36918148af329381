"""Client-side assignor rules of KIP-848: mode, assignor, member, overlap, validation."""

from __future__ import annotations

import pytest

from regroup.consumer.group import client_assignors as ca
from regroup.consumer.group.group_member import ConsumerGroupMember
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.consumer import ClientAssignor
from regroup.model.uuid import Uuid


def m(mid: str, *ranges: tuple[str, int, int], server: str | None = None) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        mid,
        server_assignor=server,
        client_assignors=tuple(ClientAssignor(n, lo, hi, hi) for n, lo, hi in ranges),
    )


def test_member_whose_range_covers_every_other_is_selected() -> None:
    members = [m("B", ("x", 3, 4)), m("C", ("x", 2, 4)), m("A", ("x", 1, 5))]
    assert ca.select_member(members, "x") == "A"
    assert ca.select_member(members, "x", excluded={"A"}) == "C"


def test_mode_and_assignor_choice() -> None:
    assert ca.is_client_side_mode([m("a", ("x", 0, 1)), m("b")])
    assert not ca.is_client_side_mode([m("a", ("x", 0, 1)), m("b", server="range")])
    assert not ca.is_client_side_mode([m("a")])
    members = [
        m("a", ("x", 0, 1), ("y", 0, 1)),
        m("b", ("y", 0, 1), ("x", 0, 1)),
        m("c", ("x", 0, 1), ("y", 0, 1)),
    ]
    assert ca.select_client_assignor(members) == "x"
    assert ca.select_client_assignor([m("a", ("x", 0, 1)), m("b", ("y", 0, 1))]) is None


def test_overlap() -> None:
    others = [m("a", ("x", 1, 2)), m("b", ("x", 4, 6))]
    ca.check_version_overlap("c", [ClientAssignor("x", 2, 3, 3)], others)
    ca.check_version_overlap("c", [ClientAssignor("z", 9, 9, 9)], others)
    with pytest.raises(KafkaProtocolError) as err:
        ca.check_version_overlap("c", [ClientAssignor("x", 3, 3, 3)], others)
    assert err.value.code is ErrorCode.UNSUPPORTED_ASSIGNOR


def test_validation() -> None:
    t = Uuid.for_name("foo")
    snap = ca.PreparedSnapshot(4, frozenset({"a", "b"}), {t: 3})
    ca.validate_installed_assignment({"a": {t: frozenset({0, 1})}, "b": {t: frozenset({2})}}, snap)
    for bad in (
        {"a": {t: frozenset({0, 1})}},
        {"a": {t: frozenset({0, 1})}, "b": {t: frozenset({1, 2})}},
        {"a": {t: frozenset({0, 1, 2})}, "z": {}},
        {"a": {Uuid.for_name("bar"): frozenset({0})}},
    ):
        with pytest.raises(KafkaProtocolError) as err:
            ca.validate_installed_assignment(bad, snap)
        assert err.value.code is ErrorCode.INVALID_ASSIGNMENT
