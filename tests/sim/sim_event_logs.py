"""Random event logs for the simulator's observers (the metrics and the invariant checker).

``observed_logs`` draws ordered logs of every kind of event the two observers
read, on two topics that may grow: ownership changes (to partitions inside and
outside the topics, to two owners at once), restores, stops, stabilizations,
steps, generation bumps, commits (by non-members, at wrong generations, going
backwards), records produced and processed, and static joins.
"""

from __future__ import annotations

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

G = "g"
MEMBERS = ("m1", "m2", "m3")
TOPICS = ("t", "u")


@st.composite
def observed_logs(draw: st.DrawFn) -> list[Event]:
    """Ordered logs of everything the two observers read, on two topics that may grow."""
    counts = {topic: draw(st.integers(1, 4)) for topic in TOPICS}
    events: list[Event] = [
        SimulationStarted(
            ts_ms=0, group_id=G, scenario="hand", group_protocol="classic",
            rebalance_protocol="eager", assignor="range", seed=0, topics=dict(counts),
        )
    ]  # fmt: skip
    ts = 0
    choose = st.lists(
        st.builds(TopicPartition, st.sampled_from(TOPICS), st.integers(0, 5)), max_size=4
    )
    for _ in range(draw(st.integers(0, 50))):
        ts += draw(st.integers(0, 30))
        kind = draw(
            st.sampled_from(
                [
                    "assign", "restore", "revoke", "lost", "stop", "stable", "step",
                    "commit", "generation", "process", "produce", "join",
                ]
            )
        )  # fmt: skip
        member = draw(st.sampled_from(MEMBERS))
        chosen = tuple(sorted(set(draw(choose))))
        if kind == "assign":
            events.append(
                PartitionsAssigned(ts_ms=ts, group_id=G, member_id=member, partitions=chosen,
                                   generation_or_epoch=1)
            )  # fmt: skip
        elif kind == "restore":
            events.append(
                PartitionsRestored(ts_ms=ts, group_id=G, member_id=member, partitions=chosen)
            )
        elif kind == "revoke":
            events.append(
                PartitionsRevoked(ts_ms=ts, group_id=G, member_id=member, partitions=chosen)
            )
        elif kind == "lost":
            events.append(PartitionsLost(ts_ms=ts, group_id=G, member_id=member, partitions=chosen))
        elif kind == "stop":
            events.append(
                ConsumerStopped(ts_ms=ts, group_id=G, client_id="c", member_id=member,
                                crashed=draw(st.booleans()))
            )  # fmt: skip
        elif kind == "stable":
            events.append(
                GroupStabilized(ts_ms=ts, group_id=G, group_protocol="classic",
                                generation_or_epoch=1, members=1)
            )  # fmt: skip
        elif kind == "step":
            grown = dict(counts)
            if draw(st.booleans()):
                topic = draw(st.sampled_from(TOPICS))
                grown[topic] = counts[topic] = counts[topic] + draw(st.integers(1, 2))
            events.append(ScenarioStep(ts_ms=ts, group_id=G, action="add_partitions", topics=grown))
        elif kind == "commit":
            offsets = {tp: draw(st.integers(0, 9)) for tp in reversed(chosen)}
            committer = draw(st.sampled_from((*MEMBERS, "")))
            events.append(
                OffsetsCommitted(ts_ms=ts, group_id=G, member_id=committer,
                                 generation_or_epoch=draw(st.integers(1, 3)), offsets=offsets)
            )  # fmt: skip
        elif kind == "generation":
            events.append(
                GenerationBumped(ts_ms=ts, group_id=G, generation=draw(st.integers(1, 3)),
                                 protocol_name="range", leader_id=member, member_ids=(member,))
            )  # fmt: skip
        elif kind in ("process", "produce") and chosen:
            first = draw(st.integers(0, 8))
            last = first + draw(st.integers(0, 4))
            if kind == "process":
                events.append(
                    RecordsProcessed(ts_ms=ts, group_id=G, member_id=member, partition=chosen[0],
                                     first_offset=first, last_offset=last)
                )  # fmt: skip
            else:
                events.append(
                    RecordsProduced(ts_ms=ts, group_id=G, partition=chosen[0], count=last - first,
                                    end_offset=last)
                )  # fmt: skip
        elif kind == "join":
            instance = draw(st.sampled_from((None, "i1", "i2")))
            events.append(
                MemberJoined(ts_ms=ts, group_id=G, member_id=member, group_protocol="classic",
                             instance_id=instance)
            )  # fmt: skip
    events.append(SimulationEnded(ts_ms=ts + draw(st.integers(0, 50)), group_id=G))
    return events
