"""Kafka's error codes keep Kafka's numbers and names."""

from __future__ import annotations

import pytest

from regroup.model import ErrorCode


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("NONE", 0),
        ("UNKNOWN_SERVER_ERROR", -1),
        ("COORDINATOR_NOT_AVAILABLE", 15),
        ("NOT_COORDINATOR", 16),
        ("ILLEGAL_GENERATION", 22),
        ("INCONSISTENT_GROUP_PROTOCOL", 23),
        ("UNKNOWN_MEMBER_ID", 25),
        ("INVALID_SESSION_TIMEOUT", 26),
        ("REBALANCE_IN_PROGRESS", 27),
        ("UNSUPPORTED_VERSION", 35),
        ("INVALID_REQUEST", 42),
        ("GROUP_ID_NOT_FOUND", 69),
        ("MEMBER_ID_REQUIRED", 79),
        ("GROUP_MAX_SIZE_REACHED", 81),
        ("FENCED_INSTANCE_ID", 82),
        ("FENCED_MEMBER_EPOCH", 110),
        ("UNRELEASED_INSTANCE_ID", 111),
        ("UNSUPPORTED_ASSIGNOR", 112),
        ("STALE_MEMBER_EPOCH", 113),
        ("INVALID_REGULAR_EXPRESSION", 128),
    ],
)
def test_codes_match_kafka(name: str, code: int) -> None:
    assert ErrorCode[name] == code
    assert ErrorCode.parse(name.lower()) is ErrorCode[name]
    assert ErrorCode.parse(str(code)) is ErrorCode[name]


def test_parse_rejects_unknown() -> None:
    with pytest.raises(ValueError, match="unknown Kafka error code"):
        ErrorCode.parse("NOT_A_CODE")
