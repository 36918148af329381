"""Fingerprints of whole sticky assignments, to hold a rewrite of the engine to today's output.

``fingerprint`` hashes a full group assignment (every member, every partition,
in the order the assignor lists them). ``CASES`` are inputs built from a
seed: the shape of ``benchmarks/assignors.py`` (identical subscriptions, and
the same with one member on a single topic; a fresh assignment and a second
round in which every member but the first reports what it owns), and random
groups with overlapping subscriptions, stale generations and contested claims.

Run as a script to print the fingerprints at larger sizes (the benchmark's
shape up to Kafka's 1,000,000 partitions at ``--scale 1``), for comparing two
revisions, or ``--json`` to rewrite the file the test holds the small cases to::

    python -m tests.assignors.classic.sticky_fingerprints --scale 0.1
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from regroup.assignors.classic import (
    ClusterMetadata,
    GroupAssignment,
    GroupSubscription,
    Subscription,
    create_classic_assignor,
)
from regroup.assignors.classic.sticky_engine.user_data import encode_sticky_user_data
from regroup.model import TopicPartition

STICKY_ASSIGNORS = ("sticky", "cooperative-sticky")


@dataclass(frozen=True)
class Case:
    """One assignor run: its name, the metadata and the subscriptions."""

    name: str
    assignor: str
    cluster: ClusterMetadata
    subscriptions: dict[str, Subscription]

    def run(self) -> GroupAssignment:
        return create_classic_assignor(self.assignor).assign(
            self.cluster, GroupSubscription(self.subscriptions)
        )


def fingerprint(assignment: GroupAssignment) -> str:
    """SHA-256 over every member (sorted) and its partitions, in the listed order."""
    digest = hashlib.sha256()
    for member in sorted(assignment.assignments):
        digest.update(member.encode() + b"\0")
        for topic, number in assignment.assignments[member].partitions:
            digest.update(f"{topic}:{number},".encode())
        digest.update(b"\n")
    return digest.hexdigest()


def _reporting(
    assignor: str, topics: Sequence[str], owned: list[TopicPartition], generation: int
) -> Subscription:
    """A member that owned ``owned`` in ``generation``, as each assignor hears it."""
    if assignor == "sticky":
        user_data = encode_sticky_user_data(owned, generation)
        return Subscription(topics=tuple(topics), user_data=user_data, generation_id=generation)
    return Subscription(
        topics=tuple(topics), owned_partitions=tuple(owned), generation_id=generation
    )


def benchmark_shape(topics: int, per_topic: int, members: int, general: bool) -> Iterator[Case]:
    """The benchmark's input: fresh, then every member but the first reports what it owns."""
    names = tuple(f"topic{i:04d}" for i in range(topics))
    cluster = ClusterMetadata(dict.fromkeys(names, per_topic))
    fresh = {f"consumer{i:05d}": Subscription(topics=names) for i in range(members)}
    if general:
        fresh["consumer00000"] = Subscription(topics=(names[0],))
    shape = f"{'general' if general else 'uniform'} {topics}x{per_topic}x{members}"
    for assignor in STICKY_ASSIGNORS:
        first = Case(f"{assignor} fresh {shape}", assignor, cluster, fresh)
        yield first
        result = first.run().assignments
        second: dict[str, Subscription] = {}
        for index, (member, subscription) in enumerate(fresh.items()):
            if index == 0:
                second[member] = subscription
            else:
                owned = list(result[member].partitions)
                second[member] = _reporting(assignor, subscription.topics, owned, 1)
        yield Case(f"{assignor} second round {shape}", assignor, cluster, second)


def random_groups(seed: int) -> Iterator[Case]:
    """A random group with overlapping subscriptions, then a disturbed second round."""
    rng = random.Random(seed)
    topic_names = [f"t{i}" for i in range(rng.randint(1, 12))]
    cluster = ClusterMetadata({t: rng.randint(0, 30) for t in topic_names})
    members = [f"m{rng.randint(0, 10_000)}-{i}" for i in range(rng.randint(1, 25))]
    for assignor in STICKY_ASSIGNORS:
        subscriptions = {
            m: Subscription(topics=tuple(rng.sample(topic_names, rng.randint(1, len(topic_names)))))
            for m in members
        }
        first = Case(f"{assignor} random {seed} fresh", assignor, cluster, subscriptions)
        yield first
        result = first.run().assignments
        second: dict[str, Subscription] = {}
        every = [tp for m in members for tp in result[m].partitions]
        for member in members:
            owned = list(result[member].partitions)
            if owned and rng.random() < 0.3:
                owned = owned[: rng.randint(0, len(owned))]
            if every and rng.random() < 0.3:
                owned += rng.sample(every, rng.randint(1, min(5, len(every))))  # contested claims
            generation = rng.choice((1, 1, 1, 2, 0))
            topics = subscriptions[member].topics
            if rng.random() < 0.3:
                topics = tuple(rng.sample(topic_names, rng.randint(1, len(topic_names))))
            second[member] = _reporting(assignor, topics, owned, generation)
        for joiner in range(rng.randint(0, 3)):
            second[f"new{joiner}"] = Subscription(topics=tuple(topic_names))
        if rng.random() < 0.5 and len(second) > 1:
            del second[rng.choice(members)]
        yield Case(f"{assignor} random {seed} second round", assignor, cluster, second)


def small_cases() -> Iterator[Case]:
    """The inputs the test holds to fixed fingerprints (a second or so in all)."""
    for general in (False, True):
        yield from benchmark_shape(20, 100, 150, general)
    for seed in range(40):
        yield from random_groups(seed)


def scaled_cases(scale: float) -> Iterator[Case]:
    """The benchmark's shape at ``scale`` of Kafka's 500 topics x 2,000 partitions x 2,000."""
    topics, members = max(1, int(500 * scale)), max(2, int(2000 * scale))
    for general in (False, True):
        yield from benchmark_shape(topics, 2000, members, general)


def _print(cases: Iterator[Case], out: Callable[[str], None]) -> None:
    for case in cases:
        out(f"{fingerprint(case.run())}  {case.name}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="fingerprints of sticky assignments")
    parser.add_argument("--scale", type=float, default=0.0, help="the benchmark shape's scale")
    parser.add_argument("--json", action="store_true", help="rewrite the recorded small cases")
    args = parser.parse_args(argv)
    if args.json:
        recorded = {case.name: fingerprint(case.run()) for case in small_cases()}
        path = Path(__file__).with_name("sticky_fingerprints.json")
        path.write_text(json.dumps(recorded, indent=1) + "\n")
        return
    _print(scaled_cases(args.scale) if args.scale else small_cases(), print)


if __name__ == "__main__":
    main()
