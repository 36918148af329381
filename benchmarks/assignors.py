"""Assignor benchmarks at Apache Kafka's own test scale, with kafka-python in the same run.

What it measures ("benchmarks/assignors.py"):

* classic assignors on Kafka's scale-test input (``AbstractStickyAssignorTest``
  ``testLargeAssignmentAndGroupWithUniformSubscription``): 500 topics x 2,000
  partitions (1,000,000 partitions) and 2,000 members with identical
  subscriptions: a fresh assignment, then a second round in which every
  member but the first reports what it owns (``sticky`` through its user
  data, ``cooperative-sticky`` through owned partitions and generation);
* the same with one member subscribed to a single topic (the sticky
  assignors' general path);
* KIP-848 ``uniform`` and ``range`` with 10,000 members x 1,000 topics at 10
  partitions per member (Kafka's ``ServerSideAssignorBenchmark`` shape):
  from scratch, and incrementally with one member added;
* kafka-python 3.0's own assignors on the same inputs at 100,000 partitions and
  below, with the ratio (fresh assignments at 100,000 partitions; second rounds
  at 10,000, since each of its sticky runs at 100,000 takes about five minutes).

Each case runs in a forked child so that its peak memory (resident set growth
over the input already built) is its own. Figures only; nothing here is an
assertion. Usage::

    python benchmarks/assignors.py              # the full run (several minutes)
    python benchmarks/assignors.py --quick      # 1/10 of the sizes, for a smoke run
    python benchmarks/assignors.py --json       # one JSON document instead of tables
    python benchmarks/assignors.py --suite classic --assignors sticky --repeat 3
                                                # one assignor, fastest of 3 runs per case

"CPU s" is the child's CPU time (user and system) for the assignment: on a
shared, loaded machine wall time grows with the other processes' load, CPU
time much less, so it is the figure to hold against a reference measured on
an idle machine.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from regroup.assignors.classic import (
    Assignment,
    ClusterMetadata,
    ConsumerGroupMetadata,
    GroupSubscription,
    Subscription,
    create_classic_assignor,
)
from regroup.assignors.consumer import (
    GroupSpec,
    MemberAssignment,
    MemberSubscriptionSpec,
    SubscribedTopicDescriber,
    TopicMetadata,
    create_server_assignor,
)
from regroup.model import Uuid

#: Apache Kafka's Java assignors on this kind of machine, seconds.
KAFKA_JAVA_SECONDS = {
    ("sticky", "fresh", "uniform"): 0.13,
    ("sticky", "second round", "uniform"): 1.9,
    ("sticky", "fresh", "general"): 6.3,
    ("sticky", "second round", "general"): 4.4,
}
CLASSIC_ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
#: Kafka's JMH figures for the KIP-848 assignors (ms/op; research kafka-kip848.md §17).
KAFKA_JMH_MS = {
    ("uniform", "incremental", "homogeneous"): 1.975,
    ("range", "incremental", "homogeneous"): 37.947,
    ("range", "incremental", "heterogeneous"): 172.398,
    ("uniform", "full", "homogeneous"): 4.309,
}


@dataclass
class Row:
    suite: str
    assignor: str
    case: str
    subscriptions: str
    members: int
    partitions: int
    seconds: float
    peak_mib: float
    cpu_seconds: float
    kafka_python_seconds: float | None = None
    reference_seconds: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.kafka_python_seconds is None or self.seconds <= 0:
            return None
        return self.kafka_python_seconds / self.seconds


# -- measuring in a forked child ------------------------------------------------------


def _rss_kib() -> int:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def _child(work: Callable[[], object], conn: Any) -> None:
    gc.collect()
    start_rss = _rss_kib()
    start = time.perf_counter()
    start_cpu = time.process_time()
    try:
        work()
    except Exception as exc:  # a peer's assignor may fail on an input: report, don't hang
        conn.send(f"{type(exc).__name__}: {exc}")
        conn.close()
        return
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - start_cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    conn.send((elapsed, max(0, peak - start_rss) / 1024, cpu))
    conn.close()


def measure(
    work: Callable[[], object], timeout_s: float, repeat: int = 1
) -> tuple[float, float, float] | None:
    """The fastest of ``repeat`` runs, each in a fresh child: (seconds, peak MiB above the
    starting resident set, CPU seconds); None on a timeout or a failure."""
    runs = [_measure_once(work, timeout_s) for _ in range(repeat)]
    done = [run for run in runs if run is not None]
    if len(done) < len(runs):
        return None
    return min(r[0] for r in done), min(r[1] for r in done), min(r[2] for r in done)


def _measure_once(
    work: Callable[[], object], timeout_s: float
) -> tuple[float, float, float] | None:
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(work, child))
    process.start()
    child.close()
    if not parent.poll(timeout_s):
        process.kill()
        process.join()
        print(f"  timed out after {timeout_s:.0f} s", file=sys.stderr)
        return None
    try:
        result: tuple[float, float, float] | str = parent.recv()
    except EOFError:
        result = "the child died"
    process.join()
    if isinstance(result, str):
        print(f"  failed: {result}", file=sys.stderr)
        return None
    return result


# -- classic inputs -------------------------------------------------------------------


def topic_names(count: int) -> list[str]:
    return [f"topic{i:04d}" for i in range(count)]


def member_names(count: int) -> list[str]:
    return [f"consumer{i:05d}" for i in range(count)]


def classic_first_round(
    topics: int, partitions_per_topic: int, members: int, general: bool
) -> tuple[ClusterMetadata, dict[str, Subscription]]:
    names = topic_names(topics)
    cluster = ClusterMetadata(dict.fromkeys(names, partitions_per_topic))
    subscriptions = {m: Subscription(topics=tuple(names)) for m in member_names(members)}
    if general:
        first = member_names(1)[0]
        subscriptions[first] = Subscription(topics=(names[0],))
    return cluster, subscriptions


def classic_second_round(
    assignor_name: str,
    subscriptions: dict[str, Subscription],
    first: dict[str, Assignment],
    generation: int = 1,
) -> dict[str, Subscription]:
    """Every member but the first reports what it owns, as its assignor reports it."""
    second: dict[str, Subscription] = {}
    for index, (member_id, subscription) in enumerate(subscriptions.items()):
        if index == 0:
            second[member_id] = subscription
            continue
        owned = tuple(first[member_id].partitions)
        if assignor_name == "sticky":
            member_assignor = create_classic_assignor("sticky")
            member_assignor.on_assignment(
                first[member_id], ConsumerGroupMetadata("bench", generation, member_id)
            )
            user_data = member_assignor.subscription_user_data(set(subscription.topics))
            second[member_id] = Subscription(topics=subscription.topics, user_data=user_data)
        else:
            second[member_id] = Subscription(
                topics=subscription.topics, owned_partitions=owned, generation_id=generation
            )
    return second


# -- kafka-python ---------------------------------------------------------------------


def kafka_python_case(
    assignor_name: str,
    cluster: ClusterMetadata,
    subscriptions: dict[str, Subscription],
) -> Callable[[], object]:
    """A closure running kafka-python 3.0's own assignor on the same input."""
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.protocol.consumer.group import JoinGroupResponse
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    classes: dict[str, Any] = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }
    partitions = {t: set(range(n)) for t, n in cluster.partitions_per_topic.items()}

    class Cluster:
        def topics(self) -> set[str]:
            return set(partitions)

        def partitions_for_topic(self, topic: str) -> set[int] | None:
            return partitions.get(topic)

    member_type = JoinGroupResponse.JoinGroupResponseMember
    owned_type = ConsumerProtocolSubscription.TopicPartition

    def owned(parts: Any) -> list[Any]:
        by_topic: dict[str, list[int]] = {}
        for tp in parts:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        return [owned_type(topic=t, partitions=sorted(p)) for t, p in sorted(by_topic.items())]

    members = [
        member_type(
            member_id=member_id,
            group_instance_id=None,
            metadata=ConsumerProtocolSubscription(
                version=3,
                topics=list(s.topics),
                user_data=s.user_data or b"",
                owned_partitions=owned(s.owned_partitions),
                generation_id=s.generation_id,
                rack_id=None,
            ),
        )
        for member_id, s in subscriptions.items()
    ]
    assignor = classes[assignor_name]()
    cluster_view = Cluster()
    return lambda: assignor.assign(cluster_view, members)


# -- suites ---------------------------------------------------------------------------


def run_classic(
    scale: float,
    kafka_python_limit: int,
    timeout_s: float,
    log: Callable[[str], None],
    assignors: tuple[str, ...] = CLASSIC_ASSIGNORS,
    repeat: int = 1,
) -> list[Row]:
    rows: list[Row] = []
    topics = max(1, int(500 * scale))
    members = max(2, int(2000 * scale))
    ladders = [(topics, 2000, members)]
    # kafka-python at 100,000 partitions and below: 50 x 2,000 and 5 x 2,000 with 2,000 members.
    small = [(max(1, int(50 * scale)), 2000, members), (max(1, int(5 * scale)), 2000, members)]
    for shape in ("uniform", "general"):
        for n_topics, per_topic, n_members in ladders + small:
            total = n_topics * per_topic
            for name in assignors:
                cluster, first_subs = classic_first_round(
                    n_topics, per_topic, n_members, shape == "general"
                )
                assignor = create_classic_assignor(name)
                log(f"classic {name} fresh {shape} {total:,} partitions x {n_members:,} members")
                measured = measure(
                    lambda a=assignor, c=cluster, s=first_subs: a.assign(c, GroupSubscription(s)),
                    timeout_s,
                    repeat,
                )
                if measured is None:
                    log("  timed out")
                    continue
                first = assignor.assign(cluster, GroupSubscription(first_subs)).assignments
                rounds = [("fresh", first_subs)]
                if name in ("sticky", "cooperative-sticky"):
                    rounds.append(
                        ("second round", classic_second_round(name, first_subs, dict(first)))
                    )
                for case, subs in rounds:
                    if case == "fresh":
                        seconds, peak, cpu = measured
                    else:
                        log(f"classic {name} second round {shape} {total:,} partitions")
                        result = measure(
                            lambda a=assignor, c=cluster, s=subs: a.assign(c, GroupSubscription(s)),
                            timeout_s,
                            repeat,
                        )
                        if result is None:
                            log("  timed out")
                            continue
                        seconds, peak, cpu = result
                    row = Row("classic", name, case, shape, n_members, total, seconds, peak, cpu)
                    if total == 1_000_000:
                        row.reference_seconds = KAFKA_JAVA_SECONDS.get((name, case, shape))
                    # kafka-python's sticky assignors need about 5 minutes per 100,000-partition
                    # run: at the limit, only fresh assignments; second rounds at a tenth of it.
                    if total <= kafka_python_limit and (
                        case == "fresh" or total * 10 <= kafka_python_limit
                    ):
                        log(f"  kafka-python {name} {case}")
                        kp = measure(kafka_python_case(name, cluster, subs), timeout_s)
                        row.kafka_python_seconds = None if kp is None else kp[0]
                    rows.append(row)
    return rows


def consumer_inputs(
    members: int, topics: int, partitions_per_topic: int, heterogeneous: bool
) -> tuple[dict[str, MemberSubscriptionSpec], SubscribedTopicDescriber]:
    ids = [Uuid.for_name(t) for t in topic_names(topics)]
    describer = SubscribedTopicDescriber(
        [
            TopicMetadata(i, t, partitions_per_topic)
            for i, t in zip(ids, topic_names(topics), strict=True)
        ]
    )
    every = frozenset(ids)
    thirds = [frozenset(ids[k::3]) for k in range(3)]
    specs = {
        m: MemberSubscriptionSpec(
            subscribed_topic_ids=thirds[i % 3] | thirds[(i + 1) % 3] if heterogeneous else every
        )
        for i, m in enumerate(member_names(members))
    }
    return specs, describer


def run_consumer(scale: float, timeout_s: float, log: Callable[[str], None]) -> list[Row]:
    rows: list[Row] = []
    members = max(3, int(10_000 * scale))
    topics = max(3, int(1_000 * scale))
    per_topic = max(1, members * 10 // topics)
    for shape in ("homogeneous", "heterogeneous"):
        specs, describer = consumer_inputs(members, topics, per_topic, shape == "heterogeneous")
        for name in ("uniform", "range"):
            assignor = create_server_assignor(name)
            spec = GroupSpec.of(specs)
            log(f"KIP-848 {name} full {shape} {members:,} members x {topics:,} topics")
            full = measure(lambda a=assignor, g=spec, d=describer: a.assign(g, d), timeout_s)
            if full is None:
                log("  timed out")
                continue
            rows.append(Row("kip-848", name, "full", shape, members, topics * per_topic, *full))
            target = assignor.assign(spec, describer).members
            grown = {
                m: MemberSubscriptionSpec(
                    subscribed_topic_ids=s.subscribed_topic_ids,
                    assigned_partitions=target.get(m, MemberAssignment({})).partitions,
                )
                for m, s in specs.items()
            }
            newcomer = f"consumer{members:05d}"
            grown[newcomer] = MemberSubscriptionSpec(
                subscribed_topic_ids=specs[member_names(1)[0]].subscribed_topic_ids
            )
            grown_spec = GroupSpec.of(grown)
            log(f"KIP-848 {name} incremental {shape}")
            inc = measure(lambda a=assignor, g=grown_spec, d=describer: a.assign(g, d), timeout_s)
            if inc is None:
                log("  timed out")
                continue
            row = Row("kip-848", name, "incremental", shape, members + 1, topics * per_topic, *inc)
            ref = KAFKA_JMH_MS.get((name, "incremental", shape))
            if ref is not None and members == 10_000:
                row.reference_seconds = ref / 1000
            rows.append(row)
    return rows


def print_tables(rows: list[Row]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="regroup assignors (seconds per assignment, peak MiB above the input)")
    for column in (
        "suite",
        "assignor",
        "case",
        "subscriptions",
        "members",
        "partitions",
        "seconds",
        "peak MiB",
        "CPU s",
        "kafka-python s",
        "x faster",
        "Kafka (Java) s",
    ):
        table.add_column(
            column,
            justify="right"
            if column[0].isdigit()
            or column
            in (
                "members",
                "partitions",
                "seconds",
                "peak MiB",
                "CPU s",
                "kafka-python s",
                "x faster",
                "Kafka (Java) s",
            )
            else "left",
        )
    for row in rows:
        table.add_row(
            row.suite,
            row.assignor,
            row.case,
            row.subscriptions,
            f"{row.members:,}",
            f"{row.partitions:,}",
            f"{row.seconds:.3f}",
            f"{row.peak_mib:.0f}",
            f"{row.cpu_seconds:.3f}",
            "-" if row.kafka_python_seconds is None else f"{row.kafka_python_seconds:.2f}",
            "-" if row.ratio is None else f"{row.ratio:.0f}x",
            "-" if row.reference_seconds is None else f"{row.reference_seconds:.3f}",
        )
    Console(width=200).print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--quick", action="store_true", help="one tenth of every size")
    parser.add_argument("--suite", choices=("classic", "kip-848", "all"), default="all")
    parser.add_argument("--kafka-python-max-partitions", type=int, default=100_000)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per measured case")
    parser.add_argument(
        "--assignors",
        default=",".join(CLASSIC_ASSIGNORS),
        help="the classic assignors to run, comma-separated",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per classic case; the fastest is shown"
    )
    args = parser.parse_args(argv)
    scale = 0.1 if args.quick else 1.0
    limit = int(args.kafka_python_max_partitions * scale)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    rows: list[Row] = []
    if args.suite in ("classic", "all"):
        chosen = tuple(a for a in args.assignors.split(",") if a)
        unknown = sorted(set(chosen) - set(CLASSIC_ASSIGNORS))
        if unknown:
            parser.error(f"unknown classic assignors: {', '.join(unknown)}")
        rows += run_classic(scale, limit, args.timeout, log, chosen, args.repeat)
    if args.suite in ("kip-848", "all"):
        rows += run_consumer(scale, args.timeout, log)
    if args.json:
        print(json.dumps([{**asdict(r), "kafka_python_ratio": r.ratio} for r in rows], indent=2))
    else:
        print_tables(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
