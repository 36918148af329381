"""KIP-848 client-side assignors, coordinator side: COMPUTE_ASSIGNMENT, Prepare, Install."""

from __future__ import annotations

from typing import Any

from regroup.model.errors import ErrorCode
from regroup.model.requests.consumer import (
    ClientAssignor,
    ConsumerGroupInstallAssignmentMember,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    TopicPartitions,
)
from tests.coordinator.consumer_group_harness import Harness, response_parts


def assignors(low: int, high: int, name: str = "streams") -> dict[str, Any]:
    return {"client_assignors": (ClientAssignor(name, low, high, high, 0, b"meta"),)}


def prepare(h: Harness, member: str) -> ConsumerGroupPrepareAssignmentResponse:
    epoch = h.group().members[member].member_epoch
    response = h.call(ConsumerGroupPrepareAssignmentRequest("g", member, epoch))
    assert isinstance(response, ConsumerGroupPrepareAssignmentResponse)
    return response


def install(
    h: Harness, member: str, group_epoch: int, parts: dict[str, list[int]], error: int = 0
) -> Any:
    epoch = h.group().members[member].member_epoch
    return h.call(
        ConsumerGroupInstallAssignmentRequest(
            "g",
            member,
            epoch,
            group_epoch,
            error,
            tuple(
                ConsumerGroupInstallAssignmentMember(
                    m, (TopicPartitions(h.topic_id("foo"), tuple(p)),) if p else ()
                )
                for m, p in parts.items()
            ),
        )
    )


def test_selection_picks_the_member_covering_every_range_and_flow_installs() -> None:
    h = Harness()
    assert h.join("A", **assignors(1, 5)).error_code is ErrorCode.COMPUTE_ASSIGNMENT
    # A alone: it computes; install gives A everything.
    p = prepare(h, "A")
    assert (p.error_code, p.client_assignor_name, p.group_epoch) == (ErrorCode.NONE, "streams", 1)
    assert install(h, "A", 1, {"A": [0, 1, 2]}).error_code is ErrorCode.NONE
    assert h.group().assignment_epoch == 1
    assert response_parts(h.hb("A", 0)) == [0, 1, 2]
    # B [3-4] and C [2-4] join: A [1-5] covers both and is chosen again.
    assert h.join("B", **assignors(3, 4)).error_code is ErrorCode.NONE
    assert h.join("C", **assignors(2, 4)).error_code is ErrorCode.NONE
    assert h.group().state_name() == "Assigning"
    assert h.coordinator.consumer.in_flight["g"].member_id == "A"
    response = h.hb("A", 1)
    assert response.error_code is ErrorCode.COMPUTE_ASSIGNMENT
    assert response.member_epoch == 1
    # told once only
    assert h.hb("A", 1).error_code is ErrorCode.NONE
    p = prepare(h, "A")
    assert sorted(m.member_id for m in p.members) == ["A", "B", "C"]
    assert [m.assignor_metadata for m in p.members] == [b"meta"] * 3
    assert p.partition_metadata[0].num_partitions == 3
    assert (
        install(h, "A", p.group_epoch, {"A": [0], "B": [1], "C": [2]}).error_code is ErrorCode.NONE
    )
    assert h.group().assignment_epoch == p.group_epoch
    assert "g" not in h.coordinator.consumer.in_flight
    for _ in range(3):
        for m in ("A", "B", "C"):
            member = h.group().members[m]
            h.hb(m, member.member_epoch, h.parts(m))
    assert {m: h.parts(m) for m in "ABC"} == {"A": [0], "B": [1], "C": [2]}
    assert h.group().state_name() == "Stable"
    assert h.rebuilt() == h.group()


def test_version_range_overlapping_no_one_is_unsupported() -> None:
    h = Harness()
    h.join("A", **assignors(1, 2))
    response = h.join("B", **assignors(3, 4))
    assert response.error_code is ErrorCode.UNSUPPORTED_ASSIGNOR
    assert "B" not in h.group().members


def test_invalid_assignments_are_rejected_and_the_target_kept() -> None:
    h = Harness()
    h.join("A", **assignors(1, 1))
    p = prepare(h, "A")
    for bad in (
        {"A": [0, 1]},  # foo-2 unassigned
        {"A": [0, 1, 2], "Z": []},  # unknown member
        {"A": [0, 1, 2, 2]},  # twice
        {"A": [0, 1, 2], "B": [2]},  # twice, across members (B unknown too)
        {"A": [0, 1, 2, 7]},  # no such partition
    ):
        response = install(h, "A", p.group_epoch, bad)
        assert response.error_code is ErrorCode.INVALID_ASSIGNMENT, bad
        assert h.group().assignment_epoch == 0
    assert (
        install(h, "A", p.group_epoch + 1, {"A": [0, 1, 2]}).error_code is ErrorCode.INVALID_REQUEST
    )


def test_assignor_error_keeps_current_target() -> None:
    h = Harness()
    h.join("A", **assignors(1, 1))
    install(h, "A", prepare(h, "A").group_epoch, {"A": [0, 1, 2]})
    h.hb("A", 0)
    h.join("B", **assignors(1, 1))
    h.hb("A", 1)
    p = prepare(h, "A")
    assert install(h, "A", p.group_epoch, {}, error=1).error_code is ErrorCode.NONE
    assert h.group().assignment_epoch == p.group_epoch
    assert h.group().target_assignment == {"A": {h.topic_id("foo"): frozenset({0, 1, 2})}}


def test_only_the_chosen_member_may_prepare_and_install() -> None:
    h = Harness()
    h.join("A", **assignors(1, 5))
    h.join("B", **assignors(2, 3))
    assert prepare(h, "B").error_code is ErrorCode.INVALID_REQUEST
    assert install(h, "B", 2, {}).error_code is ErrorCode.INVALID_REQUEST
    wrong_epoch = h.call(
        ConsumerGroupPrepareAssignmentRequest("g", "A", 7), ConsumerGroupPrepareAssignmentResponse
    )
    assert wrong_epoch.error_code is ErrorCode.FENCED_MEMBER_EPOCH
    assert (
        h.call(
            ConsumerGroupPrepareAssignmentRequest("g", "Z", 0),
            ConsumerGroupPrepareAssignmentResponse,
        ).error_code
        is ErrorCode.UNKNOWN_MEMBER_ID
    )
    assert (
        h.call(
            ConsumerGroupPrepareAssignmentRequest("nope", "A", 0),
            ConsumerGroupPrepareAssignmentResponse,
        ).error_code
        is ErrorCode.GROUP_ID_NOT_FOUND
    )


def test_another_member_is_chosen_when_the_chosen_one_times_out() -> None:
    h = Harness()
    h.join("A", rebalance_timeout_ms=10000, **assignors(1, 5))
    h.join("B", **assignors(2, 3))
    assert h.coordinator.consumer.in_flight["g"].member_id == "A"
    h.advance(10000)
    in_flight = h.coordinator.consumer.in_flight["g"]
    assert in_flight.member_id == "B"
    assert h.hb("B", 0).error_code is ErrorCode.COMPUTE_ASSIGNMENT
    p = prepare(h, "B")
    assert install(h, "B", p.group_epoch, {"A": [0, 1], "B": [2]}).error_code is ErrorCode.NONE
    # A comes too late.
    assert install(h, "A", p.group_epoch, {"A": [0, 1, 2]}).error_code is ErrorCode.INVALID_REQUEST


def test_server_assignor_wins_over_client_assignors() -> None:
    h = Harness()
    h.join("A", **assignors(1, 5))
    response = h.join("B", server_assignor="range")
    assert response.error_code is ErrorCode.NONE
    assert h.group().assignment_epoch == h.group().group_epoch
    assert "g" not in h.coordinator.consumer.in_flight
