"""The observers' columns by partition number give what dicts and sets keyed by partition give.

``regroup.sim.partition_table`` keeps the metrics' and the invariant checker's
per-partition state in lists by partition number (for speed at 1,000
members). Here its rules are checked, and both observers are compared, on
random logs, with straightforward computations written from the definitions in
their module docstrings, keyed by ``TopicPartition``: partitions outside the
topics, partitions owned by two members at once, consumers stopping while
they own partitions, commits by non-owners and offsets going back included.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.events import (
    ConsumerStopped,
    Event,
    GenerationBumped,
    GroupStabilized,
    MemberJoined,
    OffsetsCommitted,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRestored,
    PartitionsRevoked,
    RecordsProcessed,
    RecordsProduced,
    ScenarioStep,
    SimulationEnded,
    SimulationStarted,
)
from regroup.model import TopicPartition
from regroup.sim.invariants import InvariantChecker, check_events
from regroup.sim.metrics import MetricsAccumulator, compute_metrics
from regroup.sim.partition_table import (
    DENSE_IDS,
    NOBODY,
    PartitionTable,
    with_member,
    without_member,
)
from tests.sim.sim_event_logs import MEMBERS, observed_logs

#: Ids a topic has, and ids only a hand-written log has (numbered through the sparse dict).
partition_ids = st.one_of(st.integers(0, 5), st.sampled_from((-3, DENSE_IDS, 2**40)))
partitions = st.builds(TopicPartition, st.sampled_from(("t", "u", "v")), partition_ids)


@settings(max_examples=100, deadline=None)
@given(st.lists(partitions, max_size=30), st.lists(st.integers(), max_size=4))
def test_numbers_are_dense_stable_and_every_column_keeps_up(
    seen: list[TopicPartition], defaults: list[int]
) -> None:
    table = PartitionTable()
    early = [table.column(d) for d in defaults[:2]]
    numbers: dict[TopicPartition, int] = {}
    for i, tp in enumerate(seen):
        if i == len(seen) // 2:
            late = [table.column(d) for d in defaults[2:]]
        number = table.index(tp)
        assert numbers.setdefault(tp, number) == number  # Rule 1: a number never changes
        assert table.partitions[number] == tp
        assert table.find(tp) == number
    if not seen:
        late = [table.column(d) for d in defaults[2:]]
    assert sorted(numbers.values()) == list(range(len(numbers))) == list(range(len(table)))
    for column, default in zip(early + late, defaults, strict=True):
        assert column == [default] * len(table)  # Rule 2, with the column's default
    assert table.find(TopicPartition("absent", 0)) is None
    asked = tuple(seen)
    assert table.indices(asked) == [numbers[tp] for tp in seen]
    assert table.indices(asked) is table.indices(asked)  # kept for the same tuple
    assert table.indices(tuple(reversed(seen))) == [numbers[tp] for tp in reversed(seen)]


@given(st.lists(st.tuples(st.booleans(), st.sampled_from(MEMBERS)), max_size=20))
def test_member_tuples_behave_as_sets(steps: list[tuple[bool, str]]) -> None:
    members, expected = NOBODY, set()
    for add, member in steps:
        if add:
            members = with_member(members, member)
            expected.add(member)
        else:
            members = without_member(members, member)
            expected.discard(member)
        assert sorted(members) == sorted(expected)
        assert len(members) == len(expected)


# -- the invariant checker --------------------------------------------------------------------


def _violations_by_definition(events: list[Event]) -> list[tuple[int, str, object, object]]:
    """Rules 1-5 of ``regroup.sim.invariants``, with dicts and sets keyed by partition."""
    owners: dict[TopicPartition, set[str]] = defaultdict(set)
    topics: dict[str, int] = {}
    committed: dict[TopicPartition, int] = {}
    high: dict[TopicPartition, int] = {}
    generation: int | None = None
    found: list[tuple[int, str, object, object]] = []
    for e in events:
        if isinstance(e, PartitionsAssigned):
            for tp in e.partitions:
                if owners[tp] - {e.member_id}:
                    found.append((e.ts_ms, "exclusive_ownership", tp, e.member_id))
                owners[tp].add(e.member_id)
        elif isinstance(e, PartitionsRevoked | PartitionsLost):
            for tp in e.partitions:
                owners[tp].discard(e.member_id)
        elif isinstance(e, ConsumerStopped) and e.member_id:
            for held in owners.values():
                held.discard(e.member_id)
        elif isinstance(e, OffsetsCommitted):
            member = e.member_id
            if member and generation is not None and e.generation_or_epoch != generation:
                found.append((e.ts_ms, "commit_by_owner", None, member))
            for tp, offset in sorted(e.offsets.items()):
                if member and owners[tp] and member not in owners[tp]:
                    found.append((e.ts_ms, "commit_by_owner", tp, member))
                if tp in committed and offset < committed[tp]:
                    found.append((e.ts_ms, "offsets_monotonic", tp, member or None))
                committed[tp] = offset
        elif isinstance(e, GenerationBumped):
            generation = e.generation
        elif isinstance(e, RecordsProcessed):
            if e.first_offset > high.get(e.partition, 0):
                found.append((e.ts_ms, "nothing_lost", e.partition, e.member_id))
            high[e.partition] = max(high.get(e.partition, 0), e.last_offset + 1)
        elif isinstance(e, SimulationStarted | ScenarioStep):
            topics.update(e.topics)
        elif isinstance(e, GroupStabilized):
            for topic in sorted(topics):
                for p in range(topics[topic]):
                    if not owners[TopicPartition(topic, p)]:
                        found.append(
                            (e.ts_ms, "all_partitions_owned", TopicPartition(topic, p), None)
                        )
    return found


@settings(max_examples=300, deadline=None)
@given(observed_logs())
def test_the_checker_finds_what_the_rules_say_in_the_order_they_say(events: list[Event]) -> None:
    found = [(v.ts_ms, v.invariant, v.partition, v.member_id) for v in check_events(events)]
    assert found == _violations_by_definition(events)


# -- the metrics ------------------------------------------------------------------------------


def _partition_metrics_by_definition(events: list[Event]) -> dict[str, object]:
    """The per-partition metrics of ``regroup.sim.metrics``, with dicts keyed by partition."""
    end = max(e.ts_ms for e in events)
    ends = [e.ts_ms for e in events if isinstance(e, SimulationEnded)]
    end = ends[-1] if ends else end
    steps = [i for i, e in enumerate(events) if isinstance(e, ScenarioStep)]
    stable = [i for i, e in enumerate(events) if isinstance(e, GroupStabilized)]
    opening = steps[0] if steps else stable[0] if stable else len(events)
    start = events[opening].ts_ms if opening < len(events) else end

    owns: dict[str, set[TopicPartition]] = defaultdict(set)
    serving: dict[TopicPartition, set[str]] = {}  # the partitions idle time is counted for
    idle_since: dict[TopicPartition, int | None] = {}
    spans: dict[TopicPartition, list[tuple[int, int]]] = defaultdict(list)
    identity: dict[str, str] = {}
    last_owner: dict[TopicPartition, str] = {}
    moved = 0
    seen: dict[TopicPartition, set[int]] = defaultdict(set)
    duplicates = 0
    produced: dict[TopicPartition, int] = {}
    processed_high: dict[TopicPartition, int] = {}
    peak_lag: int | None = None  # the largest lag after an event of the window

    def release(member: str, tps: Iterable[TopicPartition], ts: int) -> None:
        for tp in list(tps):
            owns[member].discard(tp)
            if tp in serving and member in serving[tp]:
                serving[tp].discard(member)
                if not serving[tp]:
                    idle_since[tp] = ts

    for i, e in enumerate(events):
        ts = e.ts_ms
        if isinstance(e, SimulationStarted | ScenarioStep):
            for topic in sorted(e.topics):
                for p in range(e.topics[topic]):
                    if TopicPartition(topic, p) not in serving:
                        serving[TopicPartition(topic, p)] = set()
                        idle_since[TopicPartition(topic, p)] = ts
        elif isinstance(e, MemberJoined) and e.instance_id:
            identity[e.member_id] = e.instance_id
        elif isinstance(e, PartitionsAssigned):
            me = identity.get(e.member_id, e.member_id)
            for tp in e.partitions:
                owns[e.member_id].add(tp)
                if i >= opening and tp in last_owner and last_owner[tp] != me:
                    moved += 1
                last_owner[tp] = me
        elif isinstance(e, PartitionsRestored):
            for tp in e.partitions:
                if tp not in owns[e.member_id]:
                    continue
                if tp not in serving:
                    serving[tp], idle_since[tp] = set(), None
                since = idle_since[tp]
                if not serving[tp] and since is not None:
                    spans[tp].append((since, ts))
                    idle_since[tp] = None
                serving[tp].add(e.member_id)
        elif isinstance(e, PartitionsRevoked | PartitionsLost):
            release(e.member_id, e.partitions, ts)
        elif isinstance(e, ConsumerStopped) and e.member_id:
            release(e.member_id, owns[e.member_id], ts)
        elif isinstance(e, RecordsProcessed):
            offsets = set(range(e.first_offset, e.last_offset + 1))
            duplicates += len(offsets & seen[e.partition])
            seen[e.partition] |= offsets
            processed_high[e.partition] = max(seen[e.partition]) + 1
        elif isinstance(e, RecordsProduced):
            produced[e.partition] = e.end_offset
        if i >= opening:
            lag = sum(produced.values()) - sum(processed_high.values())
            peak_lag = lag if peak_lag is None else max(peak_lag, lag)

    idle: dict[str, int] = {}
    longest = 0
    for tp in serving:
        since = idle_since[tp]
        closed = spans[tp] + ([(since, end)] if since is not None else [])
        lengths = [min(b, end) - max(a, start) for a, b in closed]
        lengths = [n for n in lengths if n > 0]
        idle[f"{tp.topic}-{tp.partition}"] = sum(lengths)
        longest = max([longest, *lengths])
    return {
        "idle_ms_by_partition": list(idle.items()),
        "max_partition_pause_ms": longest,
        "paused_partitions": sum(1 for n in idle.values() if n > 0),
        "partitions_moved": moved,
        "duplicates": duplicates,
        "peak_lag": peak_lag or 0,
    }


def _partition_metrics(events: list[Event], *, ordered: bool) -> dict[str, object]:
    accumulator = MetricsAccumulator(ordered=ordered)
    for event in events:
        accumulator.observe(event)
    m = accumulator.result().to_json()
    keys = ("max_partition_pause_ms", "paused_partitions", "partitions_moved", "duplicates")
    return {
        "idle_ms_by_partition": list(m["idle_ms_by_partition"].items()),
        **{key: m[key] for key in keys},
        "peak_lag": m["peak_lag"],
    }


@settings(max_examples=300, deadline=None)
@given(observed_logs())
def test_the_metrics_by_partition_are_those_of_the_definitions(events: list[Event]) -> None:
    expected = _partition_metrics_by_definition(events)
    assert _partition_metrics(events, ordered=False) == expected
    assert _partition_metrics(events, ordered=True) == expected
    idle = expected["idle_ms_by_partition"]
    assert isinstance(idle, list)
    assert compute_metrics(events).to_json()["idle_ms_by_partition"] == dict(idle)


@settings(max_examples=200, deadline=None)
@given(observed_logs())
def test_observers_sharing_a_table_find_what_each_finds_alone(events: list[Event]) -> None:
    table = PartitionTable()
    checker, metrics = InvariantChecker(table), MetricsAccumulator(ordered=True, table=table)
    for event in events:  # as the simulator feeds them: metrics first, then the checker
        metrics.observe(event)
        checker.observe(event)
    assert checker.violations == check_events(events)
    assert metrics.result().to_json() == compute_metrics(events).to_json()
