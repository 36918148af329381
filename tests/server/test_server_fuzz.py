"""A bounded sample of the in-process wire fuzzing (benchmarks/fuzz_frames.py runs
a million frames): mutated frames of every API and version never crash the server."""

from __future__ import annotations

import random

from regroup.server.control.fuzz import fuzz, mutate, seeds
from regroup.server.wire.versions import ADVERTISED


def test_server_fuzz_sample_has_no_crash() -> None:
    report = fuzz(3_000, seed=20, restart_every=1_000)
    assert report.frames == 3_000
    assert report.crashes == 0, report.examples
    assert report.refused > 0 and report.answered > 0  # both paths were exercised


def test_server_fuzz_seeds_cover_every_advertised_version_and_mutations_differ() -> None:
    bodies = seeds()
    advertised = sum(high - low + 1 for low, high in ADVERTISED.values())
    assert len(bodies) == advertised + 2
    rng = random.Random(1)
    assert sum(mutate(body, rng) != body for body in bodies[:50]) >= 45
