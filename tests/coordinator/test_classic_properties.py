"""Properties of the broker-side classic group over random request and timer sequences.

A few simulated clients (dynamic and static) send JoinGroup / SyncGroup /
Heartbeat / LeaveGroup in a random order while the clock jumps; after every
step we check:

* the group only makes transitions its valid-previous-states table allows;
* the generation never decreases;
* every member that completes a SyncGroup in a generation gets exactly what
  the leader assigned to it in that generation (empty bytes if nothing);
* no request is answered twice (the harness checks), and no parked request
  survives its member's removal;
* the records rebuild the group: the replayed group equals the last record,
  and the live group too whenever it is Stable or Empty.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import event as note
from hypothesis import strategies as st

from regroup.classic.group.group_state import VALID_PREVIOUS_STATES, ClassicGroupState
from regroup.coordinator.classic.records import group_metadata_value
from regroup.model.errors import ErrorCode
from regroup.model.requests.classic import (
    HeartbeatRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupResponse,
)
from regroup.records.classic import GroupMetadataKey

S = ClassicGroupState
BY_NAME = {s.value: s for s in S}

CLIENTS = ("c0", "c1", "c2", "s0", "s1")  # s*: static members
PROTOCOLS = (
    (("range", b"r"),),
    (("range", b"r2"), ("roundrobin", b"x")),
    (("roundrobin", b"y"), ("range", b"r")),
)


@dataclass
class Client:
    name: str
    member_id: str = ""
    generation: int = -1
    is_leader: bool = False
    members: tuple[str, ...] = ()
    protocols: int = 0
    #: What the client does next when it "steps": join, sync, heartbeat, or wait (parked).
    next: str = "join"


actions = st.one_of(
    st.tuples(st.just("round"), st.just(""), st.just(0)),
    st.tuples(st.just("round"), st.just(""), st.just(0)),
    st.tuples(st.just("step"), st.sampled_from(CLIENTS), st.just(0)),
    st.tuples(st.just("step"), st.sampled_from(CLIENTS), st.just(0)),
    st.tuples(st.just("step"), st.sampled_from(CLIENTS), st.just(0)),
    st.tuples(st.just("join"), st.sampled_from(CLIENTS), st.integers(0, len(PROTOCOLS) - 1)),
    st.tuples(st.just("sync"), st.sampled_from(CLIENTS), st.just(0)),
    st.tuples(st.just("heartbeat"), st.sampled_from(CLIENTS), st.just(0)),
    st.tuples(st.just("leave"), st.sampled_from(CLIENTS), st.just(0)),
    st.tuples(st.just("restart"), st.sampled_from(CLIENTS), st.just(0)),
    st.tuples(st.just("advance"), st.just(""), st.sampled_from((0, 3000, 3000, 10000, 30000))),
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(actions, min_size=10, max_size=80))
def test_random_sequences_keep_the_invariants(
    classic_coordinator: Callable[..., Any], steps: list[tuple[str, str, int]]
) -> None:
    cc = classic_coordinator()
    clients = {name: Client(name) for name in CLIENTS}
    token_owner: dict[Hashable, tuple[str, str, int]] = {}  # token -> (client, kind, generation)
    seen_replies: set[Hashable] = set()
    leader_assignment: dict[int, dict[str, bytes]] = {}
    last_generation = 0
    events_seen = 0
    synced_ok: list[int] = []
    sync_member: dict[Hashable, str] = {}  # sync token -> the member id that sent it
    inherited_from: dict[str, str] = {}  # new static member id -> the id it replaced

    def send_join(c: Client) -> None:
        token = cc.join(
            c.member_id,
            instance_id=c.name if c.name.startswith("s") else None,
            protocols=PROTOCOLS[c.protocols],
            session_timeout_ms=10000,
            rebalance_timeout_ms=20000,
            client_id=c.name,
        )
        token_owner[token] = (c.name, "join", -1)

    expanded: list[tuple[str, str, int]] = []
    for kind, name, arg in steps:  # a "round": every client takes its next step
        if kind == "round":
            expanded.extend(("step", n, 0) for n in CLIENTS)
            expanded.append(("advance", "", 1500))
        else:
            expanded.append((kind, name, arg))
    for kind, name, arg in expanded:
        c = clients.get(name)
        if kind == "step":
            assert c is not None
            kind = {"join": "join", "sync": "sync", "heartbeat": "heartbeat"}.get(c.next, "none")
            arg = c.protocols
        if kind == "join":
            assert c is not None
            c.protocols = arg
            c.next = "wait"
            send_join(c)
        elif kind == "sync":
            assert c is not None
            if c.member_id:
                assignments = None
                if c.is_leader:
                    assignments = {m: f"{m}@{c.generation}".encode() for m in c.members}
                token = cc.sync(
                    c.member_id,
                    c.generation,
                    assignments,
                    instance_id=c.name if c.name.startswith("s") else None,
                )
                token_owner[token] = (c.name, "sync", c.generation)
                sync_member[token] = c.member_id
                c.next = "wait"
                if assignments is not None:
                    # a generation has one leader: what it sends is that generation's assignment
                    leader_assignment.setdefault(c.generation, assignments)
        elif kind == "heartbeat":
            assert c is not None
            if c.member_id:
                hb = cc.call(
                    HeartbeatRequest(
                        "g", c.generation, c.member_id, c.name if c.name.startswith("s") else None
                    )
                )
                if hb.error_code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
                    clients[name] = Client(name, protocols=c.protocols)
                elif hb.error_code != ErrorCode.NONE:
                    c.next = "join"
        elif kind == "leave":
            assert c is not None
            if c.member_id and not c.name.startswith("s"):
                cc.call(LeaveGroupRequest("g", (MemberIdentity(c.member_id),)))
                clients[name] = Client(name)
        elif kind == "restart":
            assert c is not None
            clients[name] = Client(name, protocols=c.protocols)  # a crash: forgets its id
        else:
            cc.advance(arg)

        replaced: dict[str | None, str] = {}
        for ev in cc.events[events_seen:]:
            if ev.kind == "member_left" and ev.reason == "replaced":
                replaced[ev.instance_id] = ev.member_id
            elif ev.kind == "member_joined" and ev.instance_id in replaced:
                inherited_from[ev.member_id] = replaced.pop(ev.instance_id)

        # -- the clients read their replies -----------------------------------------------
        for token, response in list(cc.replies.items()):
            if token in seen_replies or token not in token_owner:
                continue
            seen_replies.add(token)
            owner, _what, generation = token_owner[token]
            client = clients[owner]
            if isinstance(response, JoinGroupResponse):
                client.next = "join"
                if response.error_code == ErrorCode.MEMBER_ID_REQUIRED:
                    client.member_id = response.member_id
                elif response.error_code == ErrorCode.NONE:
                    client.member_id = response.member_id
                    client.generation = response.generation_id
                    client.is_leader = response.leader == response.member_id
                    client.members = tuple(m.member_id for m in response.members)
                    client.next = "heartbeat" if response.skip_assignment else "sync"
                elif response.error_code in (
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    ErrorCode.FENCED_INSTANCE_ID,
                ):
                    clients[owner] = Client(owner, protocols=client.protocols)
            elif isinstance(response, SyncGroupResponse) and response.error_code != ErrorCode.NONE:
                if response.error_code in (
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    ErrorCode.FENCED_INSTANCE_ID,
                ):
                    clients[owner] = Client(owner, protocols=client.protocols)
                else:
                    client.next = "join"
            elif isinstance(response, SyncGroupResponse):
                client.next = "heartbeat"
                expected = leader_assignment.get(generation)
                synced_ok.append(generation)
                assert expected is not None, "a sync completed before the leader's"
                if expected is not None:
                    # Rule: a completed sync carries the leader's assignment for that member.
                    mid = sync_member[token]
                    while mid not in expected and mid in inherited_from:
                        mid = inherited_from[mid]  # KIP-345: a replaced static member's assignment
                    assert response.assignment == expected.get(mid, b""), (
                        owner,
                        generation,
                    )

        # -- invariants -------------------------------------------------------------------
        for event in cc.events[events_seen:]:
            if event.kind == "group_state_changed":
                old, new = BY_NAME[event.old_state], BY_NAME[event.new_state]
                assert old in VALID_PREVIOUS_STATES[new], (old, new)
            if event.kind == "generation_bumped":
                assert event.generation > last_generation
        events_seen = len(cc.events)
        group = cc.groups.get("g")
        if group is None:
            continue
        assert group.generation_id >= last_generation
        last_generation = group.generation_id
        assert group.pending_sync_members <= set(group.members)
        if group.members and group.state is not S.EMPTY:
            assert group.leader_id in group.members
        if group.state is S.EMPTY:
            assert not group.members
        for member in group.members.values():
            if member.awaiting_join is not None:
                assert member.awaiting_join not in cc.replies
            if member.awaiting_sync is not None:
                assert member.awaiting_sync not in cc.replies
        # the kept count of parked JoinGroups is the count a scan finds
        assert group.num_awaiting_join() == sum(
            m.awaiting_join is not None for m in group.members.values()
        )
        counts = group.supported_protocol_counts()
        expected_counts: dict[str, int] = {}
        for member in group.members.values():
            for name_ in member.protocol_names():
                expected_counts[name_] = expected_counts.get(name_, 0) + 1
        assert counts == expected_counts

        # -- records rebuild the group ----------------------------------------------------
        note(f"state {group.state.value}, generation>1: {group.generation_id > 1}")
        group_records = [r for r in cc.records if isinstance(r.key, GroupMetadataKey)]
        if group_records:
            replayed = cc.replayed().groups["g"]
            assert group_metadata_value(replayed) == group_records[-1].value
            if group.state in (S.STABLE, S.EMPTY):
                assert group_metadata_value(group) == group_records[-1].value
                assert replayed.state is group.state
