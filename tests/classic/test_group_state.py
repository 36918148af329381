"""The classic group's state table (Kafka ``ClassicGroupState``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.classic.group.group import ClassicGroup
from regroup.classic.group.group_state import (
    VALID_PREVIOUS_STATES,
    ClassicGroupState,
    IllegalGroupStateTransition,
    check_transition,
)

S = ClassicGroupState


def test_kafka_table() -> None:
    assert {
        S.EMPTY: {S.PREPARING_REBALANCE},
        S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
        S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
        S.STABLE: {S.COMPLETING_REBALANCE},
        S.DEAD: set(S),
    } == VALID_PREVIOUS_STATES


def test_names_are_kafkas() -> None:
    assert [s.value for s in S] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]
    assert str(S.STABLE) == "Stable"


def test_every_state_documents_action_and_transition() -> None:
    for state in S:
        doc = state.__doc__ or ""
        assert "action:" in doc and "transition:" in doc, state


def test_dead_is_final() -> None:
    for state in S:
        if state is not S.DEAD:
            with pytest.raises(IllegalGroupStateTransition):
                check_transition("g", S.DEAD, state)


def test_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        VALID_PREVIOUS_STATES[S.EMPTY] = frozenset()  # type: ignore[index]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list(S)), max_size=20))
def test_illegal_transition_raises_and_changes_nothing(path: list[ClassicGroupState]) -> None:
    group = ClassicGroup("g", now_ms=0)
    for now, target in enumerate(path, start=1):
        before = (group.state, group.previous_state, group.current_state_timestamp_ms)
        if before[0] in VALID_PREVIOUS_STATES[target]:
            group.transition_to(target, now)
            assert (group.state, group.previous_state, group.current_state_timestamp_ms) == (
                target,
                before[0],
                now,
            )
        else:
            with pytest.raises(IllegalGroupStateTransition):
                group.transition_to(target, now)
            assert (group.state, group.previous_state, group.current_state_timestamp_ms) == before
