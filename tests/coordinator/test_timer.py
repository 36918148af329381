"""The coordinator's keyed timer against a naive model of its contract.

Contract (``regroup.coordinator.timer``): scheduling a key replaces its
deadline and operation; ``cancel`` removes it; ``expire(now)`` runs every due
operation in (deadline, scheduling order) order, including ones scheduled by
an operation for a time already due; ``next_deadline`` is the earliest armed
deadline. The timer reschedules lazily; the model pushes every schedule.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.coordinator.timer import MAX_RUNS_PER_INSTANT, Timer, TimerRunaway


class ModelTimer:
    """Every timer in a plain dict; the earliest (deadline, seq) found by a scan."""

    def __init__(self) -> None:
        self.timers: dict[str, tuple[int, int, Callable[[int], str]]] = {}
        self.seq = 0

    def schedule(self, key: str, deadline: int, operation: Callable[[int], str]) -> None:
        self.seq += 1
        self.timers[key] = (deadline, self.seq, operation)

    def cancel(self, key: str) -> None:
        self.timers.pop(key, None)

    def next_deadline(self) -> int | None:
        return min((d for d, _, _ in self.timers.values()), default=None)

    def expire(self, now: int) -> list[str]:
        out = []
        while self.timers:
            key = min(self.timers, key=lambda k: self.timers[k][:2])
            deadline, _, operation = self.timers[key]
            if deadline > now:
                break
            del self.timers[key]
            out.append(operation(now))
        return out


keys = st.sampled_from(["a", "b", "c", "d", "e"])
steps = st.lists(
    st.one_of(
        st.tuples(st.just("schedule"), keys, st.integers(0, 60), st.booleans()),
        st.tuples(st.just("cancel"), keys),
        st.tuples(st.just("expire"), st.integers(0, 80)),
    ),
    max_size=60,
)


def _operation(
    timer: Timer[str] | ModelTimer, name: str, key: str, chains: bool
) -> Callable[[int], str]:
    def operation(at: int) -> str:
        # Some operations arm another timer for "now": it must run in the same expire.
        if chains:
            timer.schedule(key + "'", at, lambda _at: name + "'")
        return name

    return operation


@settings(max_examples=400, deadline=None)
@given(steps)
def test_timer_matches_the_model(script: list[tuple[object, ...]]) -> None:
    real: Timer[str] = Timer()
    model = ModelTimer()
    now = 0
    for label, step in enumerate(script):
        if step[0] == "schedule":
            _, key, delta, chains = step
            assert isinstance(key, str) and isinstance(delta, int)
            name = f"{key}#{label}"
            real.schedule(key, now + delta, _operation(real, name, key, bool(chains)))
            model.schedule(key, now + delta, _operation(model, name, key, bool(chains)))
        elif step[0] == "cancel":
            real.cancel(str(step[1]))
            model.cancel(str(step[1]))
        else:
            delta = step[1]
            assert isinstance(delta, int)
            now += delta
            assert real.expire(now) == model.expire(now)
        assert real.next_deadline() == model.next_deadline()
        assert len(real) == len(model.timers)
        for key in ("a", "b", "c", "d", "e", "a'", "b'"):
            assert real.deadline(key) == (model.timers[key][0] if key in model.timers else None)


def test_a_later_reschedule_runs_once_at_the_new_deadline() -> None:
    timer: Timer[str] = Timer()
    for deadline in (10, 20, 30):

        def fired(now: int, d: int = deadline) -> str:
            return f"at {now} (set {d})"

        timer.schedule("k", deadline, fired)
    assert timer.next_deadline() == 30
    assert timer.expire(29) == []
    assert timer.expire(30) == ["at 30 (set 30)"]
    assert timer.next_deadline() is None


def test_an_earlier_reschedule_runs_at_the_earlier_deadline_only() -> None:
    timer: Timer[str] = Timer()
    timer.schedule("k", 30, lambda now: "late")
    timer.schedule("k", 10, lambda now: "early")
    assert timer.next_deadline() == 10
    assert timer.expire(40) == ["early"]


def test_equal_deadlines_run_in_scheduling_order_of_the_last_schedule() -> None:
    timer: Timer[str] = Timer()
    timer.schedule("a", 10, lambda now: "a")
    timer.schedule("b", 10, lambda now: "b")
    timer.schedule("a", 10, lambda now: "a again")  # now scheduled after b
    assert timer.expire(10) == ["b", "a again"]


def test_fire_runs_one_timer_early_and_disarms_it() -> None:
    timer: Timer[str] = Timer()
    timer.schedule("a", 100, lambda now: f"a@{now}")
    timer.schedule("b", 50, lambda now: f"b@{now}")
    assert timer.fire("a", 10) == "a@10"
    assert not timer.is_scheduled("a")
    assert timer.fire("a", 11) is None  # already fired: nothing left to run
    assert timer.next_deadline() == 50  # the other timer is untouched
    assert timer.expire(1000) == ["b@1000"]


# -- a timer never runs away -----------------------------------------------------------


def test_a_timer_that_rearms_itself_at_the_same_instant_is_stopped_as_a_runaway() -> None:
    timer: Timer[str] = Timer()
    runs: list[int] = []

    def again(now: int) -> str:
        runs.append(now)
        timer.schedule("loop", now, again)
        return "ran"

    timer.schedule("loop", 10, again)
    with pytest.raises(TimerRunaway) as raised:
        timer.expire(10)
    assert len(runs) == MAX_RUNS_PER_INSTANT
    assert raised.value.key == "loop" and raised.value.now_ms == 10


def test_a_runaway_is_handed_to_the_driver_and_waits_for_the_next_millisecond() -> None:
    timer: Timer[str] = Timer()
    runs: list[int] = []
    failures: list[tuple[str | None, BaseException]] = []

    def again(now: int) -> str:
        runs.append(now)
        timer.schedule("loop", now, again, owner="g")
        return "ran"

    def run(owner: str | None, operation: Callable[[int], str], now: int) -> str:
        try:
            return operation(now)
        except TimerRunaway as exc:  # a driver fails the owner's group (coordinator.guard)
            failures.append((owner, exc))
            timer.schedule("loop", now, again, owner=owner)  # and its recovery re-arms it
            return "failed"

    timer.schedule("loop", 10, again, owner="g")
    results = timer.expire(10, run)
    assert results.count("failed") == 1 and len(runs) == MAX_RUNS_PER_INSTANT
    assert [owner for owner, _ in failures] == ["g"]
    assert timer.next_deadline() == 11  # re-armed at the same instant: deferred one tick
    timer.expire(11, run)
    assert runs.count(11) == MAX_RUNS_PER_INSTANT and len(failures) == 2


def test_a_key_rearmed_once_per_instant_over_many_instants_is_no_runaway() -> None:
    timer: Timer[str] = Timer()
    runs: list[int] = []

    def next_tick(now: int) -> str:
        runs.append(now)
        timer.schedule("k", now + 1, next_tick)
        return "ran"

    timer.schedule("k", 0, next_tick)
    for now in range(3 * MAX_RUNS_PER_INSTANT):
        timer.expire(now)
    assert runs == list(range(3 * MAX_RUNS_PER_INSTANT))


def test_runs_are_counted_per_instant_across_expire_calls() -> None:
    timer: Timer[str] = Timer()
    runs: list[int] = []

    def again(now: int) -> str:
        runs.append(now)
        return "ran"

    for _ in range(MAX_RUNS_PER_INSTANT):
        timer.schedule("k", 5, again)
        assert timer.expire(5) == ["ran"]
    timer.schedule("k", 5, again)
    with pytest.raises(TimerRunaway):
        timer.expire(5)
    assert len(runs) == MAX_RUNS_PER_INSTANT
