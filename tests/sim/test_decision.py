"""The one tie rule (``regroup.sim.decision``) against its statement, property by property."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regroup.sim.decision import TIE_WITHIN, Spread, beats, rank

costs = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
seeds = st.lists(costs, min_size=1, max_size=5)
series = st.dictionaries(st.sampled_from(["eager", "cooperative", "consumer"]), seeds, min_size=1)


@given(series)
def test_a_winner_beats_every_other_series_and_a_tie_names_who_it_does_not_beat(
    values: dict[str, list[float]],
) -> None:
    spreads = {name: Spread.of_seeds(v) for name, v in values.items()}
    ranking = rank(spreads)
    assert spreads[ranking.best].centre == min(s.centre for s in spreads.values())
    others = [name for name in spreads if name != ranking.best]
    if ranking.winner is not None:
        assert all(beats(spreads[ranking.best], spreads[name]) for name in others)
        assert ranking.tied == ()
    else:
        assert ranking.tied and all(
            not beats(spreads[ranking.best], spreads[name]) for name in ranking.tied
        )


@given(seeds)
def test_equal_series_are_always_a_tie(values: list[float]) -> None:
    spread = Spread.of_seeds(values)
    assert rank({"a": spread, "b": spread}).tie


@given(costs, st.floats(min_value=0, max_value=TIE_WITHIN))
def test_centres_within_the_tolerance_are_a_tie_even_when_the_seeds_agree(
    cost: float, apart: float
) -> None:
    low, high = (
        Spread(cost, cost, cost),
        Spread(cost * (1 + apart), cost * (1 + apart), cost * (1 + apart)),
    )
    assert rank({"a": low, "b": high}).tie


@given(st.permutations(["eager", "cooperative", "consumer"]))
def test_the_outcome_does_not_depend_on_input_order(order: list[str]) -> None:
    spreads = {
        "eager": Spread(5, 5, 5),
        "cooperative": Spread(5, 5, 5),
        "consumer": Spread(9, 9, 9),
    }
    ranking = rank({name: spreads[name] for name in order})
    assert ranking.best == "cooperative" and ranking.tied == ("eager",)


def test_separated_seeds_more_than_the_tolerance_apart_are_a_win_with_its_ratio() -> None:
    ranking = rank({"a": Spread(10, 9, 11), "b": Spread(20, 18, 22), "c": Spread(40, 30, 50)})
    assert ranking.winner == "a" and ranking.runner_up == "b" and ranking.ratio == 2.0
    assert rank({"a": Spread(0, 0, 0), "b": Spread(3, 3, 3)}).ratio is None
