"""Bounded samples of the in-process wire fuzzing (benchmarks/fuzz_frames.py runs
a million frames): mutated frames of every API and version never kill or hang the
server, unsecured or behind SASL and ACLs."""

from __future__ import annotations

import random

from regroup.server.control.fuzz import fuzz, mutate, seeds
from regroup.server.control.fuzz_sasl import fuzz_sasl
from regroup.server.wire.versions import ADVERTISED


def test_server_fuzz_sample_has_no_death() -> None:
    report = fuzz(3_000, seed=20, restart_every=1_000)
    assert report.frames == 3_000
    assert report.deaths == 0, report.examples
    assert report.hangs == 0, report.examples
    assert report.closed > 0 and report.answered > 0  # both paths were exercised


def test_server_fuzz_after_a_sasl_login_and_before_one_has_no_death() -> None:
    report = fuzz_sasl(3_000, seed=21, restart_every=1_500)
    assert report.frames == 3_000
    assert report.deaths == 0, report.examples
    assert report.hangs == 0, report.examples
    # Half the frames came after a login; each closed connection logged in again,
    # with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 in turn.
    assert report.authenticated == 1_500
    assert report.logins >= 3
    # They ran as the principal: the authorizer refused her some and allowed her
    # others, and decided for no one else; before a login it decided nothing.
    assert report.denied > 0 and report.allowed > 0
    assert report.foreign_decisions == 0
    assert report.pre_login_decisions == 0
    # Mutated SASL exchanges were answered, refused (a failed login's answer) and closed.
    assert report.answered > 0 and report.refused > 0 and report.closed > 0


def test_server_fuzz_seeds_cover_every_advertised_version_and_mutations_differ() -> None:
    bodies = seeds()
    advertised = sum(high - low + 1 for low, high in ADVERTISED.values())
    assert len(bodies) == advertised + 2
    rng = random.Random(1)
    assert sum(mutate(body, rng) != body for body in bodies[:50]) >= 45
