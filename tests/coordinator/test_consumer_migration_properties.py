"""Property: a converted group never gives a partition to two members, and replays exactly.

Random sequences of classic (eager or cooperative) and KIP-848 joins, rejoins,
syncs, heartbeats and leaves in a group upgraded from a classic one. Clients are
modelled as Kafka's: a classic member holds what its last SyncGroup gave it (an
eager one drops everything before it rejoins, a cooperative one keeps it and
reports it as owned); a KIP-848 member holds its assigned and pending partitions
and acknowledges revocations in its next heartbeat. After every step, no
partition is held by two live clients nor owned by two members in the
coordinator; at the end the records replay to the live group. The policy is
UPGRADE, so the group stays a consumer group whatever leaves (the downgrade has
its own scenario tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.model import TopicPartition
from regroup.model.errors import ErrorCode
from tests.coordinator.migration_harness import MigrationHarness, tps

PARTITIONS = 6


@dataclass
class Client:
    member_id: str
    classic: bool
    eager: bool = False
    generation: int = -1
    holds: set[TopicPartition] = field(default_factory=set)


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("classic_join"), st.booleans()),
        st.tuples(st.just("kip848_join"), st.just(0)),
        st.tuples(st.sampled_from(["rejoin", "sync", "heartbeat", "leave"]), st.integers(0, 7)),
        st.tuples(st.just("tick"), st.integers(0, 3000)),
    ),
    min_size=8,
    max_size=40,
)


def _check(h: MigrationHarness, clients: list[Client]) -> None:
    group = h.group()
    owned = [tp for m in group.members.values() for tp in m.owned_partitions()]
    assert len(owned) == len(set(owned)), "a partition owned by two members"
    live = [c for c in clients if c.member_id in group.members]
    for c in clients:
        if c not in live:
            c.holds.clear()  # removed (timed out): it lost its partitions
    seen: dict[TopicPartition, str] = {}
    for c in live:
        for tp in c.holds:
            assert tp not in seen, f"{tp} held by {seen[tp]} and {c.member_id}"
            seen[tp] = c.member_id


def _kip848_holds(h: MigrationHarness, member_id: str) -> set[TopicPartition]:
    member = h.group().members[member_id]
    return {TopicPartition("foo", p) for _, p in member.owned_partitions()}


@settings(max_examples=80, deadline=None)
@given(
    eager=st.lists(st.booleans(), min_size=1, max_size=3),
    ops=OPS,
)
def test_property_converted_groups_are_exclusive_and_replay(
    eager: list[bool], ops: list[tuple[str, object]]
) -> None:
    h = MigrationHarness(topics={"foo": PARTITIONS}, group_consumer_migration_policy="UPGRADE")
    split = [list(range(PARTITIONS))[i :: len(eager)] for i in range(len(eager))]
    ids = h.stable_classic_group(split)
    clients = [
        Client(m, classic=True, eager=e, generation=1, holds=set(tps(*ps)))
        for m, e, ps in zip(ids, eager, split, strict=True)
    ]
    assert h.join("k0").error_code == ErrorCode.NONE
    clients.append(Client("k0", classic=False, holds=_kip848_holds(h, "k0")))
    _check(h, clients)
    joined = 1
    for op, arg in ops:
        group = h.group()
        live = [c for c in clients if c.member_id in group.members]
        if op == "classic_join":
            response = h.cjoin("", [])
            if response.error_code == ErrorCode.NONE:
                clients.append(Client(response.member_id, True, bool(arg), response.generation_id))
        elif op == "kip848_join":
            member_id = f"k{joined}"
            joined += 1
            if h.join(member_id).error_code == ErrorCode.NONE:
                clients.append(Client(member_id, False, holds=_kip848_holds(h, member_id)))
        elif op == "tick":
            assert isinstance(arg, int)
            h.advance(arg)
        elif live:
            assert isinstance(arg, int)
            c = live[arg % len(live)]
            _step(h, c, op)
        _check(h, clients)
        if h.group().is_empty():
            break  # every member left: a classic JoinGroup would make the group classic again
    assert h.rebuilt() == h.group()


def _step(h: MigrationHarness, c: Client, op: str) -> None:
    if op == "leave":
        if c.classic:
            assert h.cleave(c.member_id).members[0].error_code == ErrorCode.NONE
        else:
            assert h.hb(c.member_id, -1).error_code == ErrorCode.NONE
        c.holds.clear()
        return
    if not c.classic:
        member = h.group().members[c.member_id]
        owned = sorted(p for ps in member.assigned_partitions.values() for p in ps)
        c.holds = {TopicPartition("foo", p) for p in owned}  # revoked what it was told to
        response = h.hb(c.member_id, member.member_epoch, owned)
        assert response.error_code == ErrorCode.NONE
        c.holds = _kip848_holds(h, c.member_id)
        return
    if op == "rejoin":
        if c.eager:
            c.holds.clear()  # eager: everything is revoked before JoinGroup
        joined = h.cjoin(c.member_id, sorted(c.holds))
        assert joined.error_code == ErrorCode.NONE
        c.generation = joined.generation_id
    elif op == "sync":
        synced = h.csync(c.member_id, c.generation)
        if synced.error_code == ErrorCode.NONE:
            c.holds = set(h.decoded(synced))
    else:
        h.cheartbeat(c.member_id, c.generation)
