"""Timeline rows come in natural order: ``c2`` before ``c10``, ``c99`` before ``c100``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regroup.sim.timeline import natural_order


def test_consumer_rows_sort_by_their_number() -> None:
    names = ["c100", "c10", "c2", "c01", "unowned", "c99", "c11"]
    assert sorted(names, key=natural_order) == [
        "c01",
        "c2",
        "c10",
        "c11",
        "c99",
        "c100",
        "unowned",
    ]


@given(st.lists(st.integers(min_value=0, max_value=10_000), unique=True))
def test_numbered_names_sort_as_their_numbers(numbers: list[int]) -> None:
    names = [f"c{n}" for n in numbers]
    assert [int(name[1:]) for name in sorted(names, key=natural_order)] == sorted(numbers)
