"""Minimising a failing schedule: the smallest scenario that still breaks the same invariant.

Rule 1: the target is one invariant name (the first violated); a candidate
*still fails* when running it (same protocol, same seed) reports that
invariant again. Any other outcome (passing, or another invariant only) is a
pass for the reduction.

Rule 2: the actions are reduced by delta debugging (Zeller's ddmin: try
removing chunks, then complements, halving the chunk size down to single
actions), so the result is 1-minimal: removing any one remaining action makes
the failure go away. Then the network's faults are switched off one at a
time (duplicate, loss, jitter), and then the group is shrunk: fewer members
(halving toward 1), fewer partitions per topic (halving toward 1), as long as
the failure stays. Every candidate is re-timed: its duration and the network's
``until_ms`` follow its last remaining action (``retime``).

Rule 3: the run is injected (``check``: a scenario -> the invariants it
violates), so the minimiser is tested with a test-only invariant, and it is
bounded (``max_runs``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from regroup.sim.scenario import Action, Scenario
from regroup.sim.soak.schedule import FIRST_FAULT_MS, SETTLE_MS, fit_to_group

__all__ = ["Minimised", "minimise", "retime"]

#: A scenario -> the names of the invariants it violates.
Check = Callable[[Scenario], set[str]]


@dataclass(frozen=True, slots=True)
class Minimised:
    scenario: Scenario
    invariant: str
    runs: int


def retime(scenario: Scenario) -> Scenario:
    """The scenario with its duration and flaky-network end following its actions."""
    faults_end = max(
        [FIRST_FAULT_MS]
        + [start + a.span_ms(scenario.members) for start, a in scenario.timed_actions()]
    )
    network = replace(scenario.network, until_ms=faults_end)
    return replace(scenario, duration_ms=faults_end + SETTLE_MS, network=network)


class _Budget:
    def __init__(self, check: Check, invariant: str, max_runs: int) -> None:
        self.check = check
        self.invariant = invariant
        self.max_runs = max_runs
        self.runs = 0

    def fails(self, scenario: Scenario) -> bool:
        if self.runs >= self.max_runs:
            return False
        self.runs += 1
        return self.invariant in self.check(retime(fit_to_group(scenario)))


def _ddmin(actions: Sequence[Action], fails: Callable[[Sequence[Action]], bool]) -> list[Action]:
    current = list(actions)
    n = 2
    while len(current) >= 2:
        size = len(current) // n
        chunks = [current[i : i + size] for i in range(0, len(current), size)] if size else []
        reduced = False
        for chunk in chunks:
            if fails(chunk):
                current, n, reduced = chunk, 2, True
                break
        if not reduced:
            for i in range(len(chunks)):
                complement = [a for j, c in enumerate(chunks) if j != i for a in c]
                if fails(complement):
                    current, n, reduced = complement, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    if len(current) == 1 and fails([]):
        return []
    return current


def minimise(scenario: Scenario, invariant: str, check: Check, *, max_runs: int = 200) -> Minimised:
    """The smallest variant of ``scenario`` still violating ``invariant`` (module rules)."""
    budget = _Budget(check, invariant, max_runs)
    best = scenario
    actions = _ddmin(scenario.actions, lambda a: budget.fails(replace(best, actions=tuple(a))))
    best = replace(best, actions=tuple(actions))
    for feature in ("duplicate", "loss", "jitter_ms"):
        if getattr(best.network, feature):
            candidate = replace(best, network=replace(best.network, **{feature: 0}))
            if budget.fails(candidate):
                best = candidate
    while best.members > 1:
        candidate = replace(best, members=best.members // 2)
        if not budget.fails(candidate):
            candidate = replace(best, members=best.members - 1)
            if not budget.fails(candidate):
                break
        best = candidate
    while any(n > 1 for n in best.topics.values()):
        halved = {t: max(1, n // 2) for t, n in best.topics.items()}
        candidate = replace(best, topics=halved)
        if not budget.fails(candidate):
            break
        best = candidate
    return Minimised(retime(fit_to_group(best)), invariant, budget.runs)
