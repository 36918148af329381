"""Soak figures: seeds run, violations, faults drawn per kind, virtual and wall time.

``Summary.add(outcome)`` folds one ``SeedOutcome`` in; the same summary is made
from a local loop (``regroup soak``) and from outcome rows collected from Spark
(``regroup soak --spark``): ``outcome_row`` / ``outcome_from_row`` are the row form.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from regroup.sim.soak.check import SeedOutcome, Violation

__all__ = ["Summary", "outcome_from_row", "outcome_row"]


@dataclass(slots=True)
class _Totals:
    seeds: int = 0
    failed_seeds: int = 0
    violations: int = 0
    virtual_ms: int = 0
    wall_s: float = 0.0
    steps: int = 0
    zombie_overlaps: int = 0
    static_rejoin_gaps: int = 0
    duplicated: int = 0
    coordinator_restarts: int = 0
    max_members: int = 0
    max_partitions: int = 0
    by_invariant: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)

    def add(self, outcome: SeedOutcome) -> None:
        self.seeds += 1
        self.failed_seeds += bool(outcome.violations)
        self.violations += len(outcome.violations)
        self.virtual_ms += outcome.virtual_ms
        self.wall_s += outcome.wall_s
        self.steps += outcome.steps
        self.zombie_overlaps += outcome.zombie_overlaps
        self.static_rejoin_gaps += outcome.static_rejoin_gaps
        self.duplicated += outcome.duplicated
        self.coordinator_restarts += outcome.coordinator_restarts
        self.max_members = max(self.max_members, outcome.members)
        self.max_partitions = max(self.max_partitions, outcome.partitions)
        self.by_invariant.update(v.invariant for v in outcome.violations)
        self.faults.update(outcome.faults)

    def as_dict(self, elapsed_s: float | None) -> dict[str, Any]:
        wall = self.wall_s if elapsed_s is None else elapsed_s
        return {
            "seeds": self.seeds,
            "failed_seeds": self.failed_seeds,
            "violations": self.violations,
            "violations_by_invariant": dict(sorted(self.by_invariant.items())),
            "faults": dict(sorted(self.faults.items())),
            "zombie_overlaps": self.zombie_overlaps,
            "static_rejoin_gaps": self.static_rejoin_gaps,
            "messages_duplicated": self.duplicated,
            "coordinator_restarts": self.coordinator_restarts,
            "largest_group": {"members": self.max_members, "partitions": self.max_partitions},
            "virtual_s": round(self.virtual_ms / 1000, 1),
            "run_cpu_s": round(self.wall_s, 2),
            "wall_s": round(wall, 2),
            "seeds_per_s": round(self.seeds / wall, 3) if wall > 0 else None,
        }


class Summary:
    """Totals per protocol and overall, and the first failures (see the module docstring)."""

    def __init__(self) -> None:
        self.protocols: dict[str, _Totals] = {}
        self.total = _Totals()
        #: Failing outcomes, in the order they were added.
        self.failures: list[SeedOutcome] = []

    def add(self, outcome: SeedOutcome) -> None:
        self.protocols.setdefault(outcome.protocol, _Totals()).add(outcome)
        self.total.add(outcome)
        if outcome.violations:
            self.failures.append(outcome)

    @property
    def violations(self) -> int:
        return self.total.violations

    def as_dict(self, elapsed_s: float | None = None) -> dict[str, Any]:
        out = self.total.as_dict(elapsed_s)
        out["protocols"] = {
            name: totals.as_dict(elapsed_s if len(self.protocols) == 1 else None)
            for name, totals in self.protocols.items()
        }
        out["failures"] = [
            {
                "protocol": f.protocol,
                "seed": f.seed,
                "violations": [
                    {"invariant": v.invariant, "ts_ms": v.ts_ms, "detail": v.detail}
                    for v in f.violations[:5]
                ],
            }
            for f in self.failures
        ]
        return out


def outcome_row(outcome: SeedOutcome) -> dict[str, Any]:
    """A JSON-able row of one outcome (what a Spark task returns)."""
    return {
        "protocol": outcome.protocol,
        "seed": outcome.seed,
        "violations": [[v.invariant, v.ts_ms, v.detail] for v in outcome.violations],
        "faults": dict(outcome.faults),
        "virtual_ms": outcome.virtual_ms,
        "wall_s": outcome.wall_s,
        "steps": outcome.steps,
        "zombie_overlaps": outcome.zombie_overlaps,
        "static_rejoin_gaps": outcome.static_rejoin_gaps,
        "duplicated": outcome.duplicated,
        "coordinator_restarts": outcome.coordinator_restarts,
        "members": outcome.members,
        "partitions": outcome.partitions,
        "consumer_errors": outcome.consumer_errors,
    }


def outcome_from_row(row: dict[str, Any]) -> SeedOutcome:
    violations = [Violation(str(i), int(t), str(d)) for i, t, d in row["violations"]]
    return SeedOutcome(
        protocol=str(row["protocol"]),
        seed=int(row["seed"]),
        violations=violations,
        faults=Counter({str(k): int(v) for k, v in row["faults"].items()}),
        virtual_ms=int(row["virtual_ms"]),
        wall_s=float(row["wall_s"]),
        steps=int(row["steps"]),
        zombie_overlaps=int(row["zombie_overlaps"]),
        static_rejoin_gaps=int(row.get("static_rejoin_gaps", 0)),
        duplicated=int(row["duplicated"]),
        coordinator_restarts=int(row["coordinator_restarts"]),
        members=int(row["members"]),
        partitions=int(row["partitions"]),
        consumer_errors=int(row["consumer_errors"]),
        invariants=sorted({v.invariant for v in violations}),
    )
