"""An incident from a group's log becomes a scenario file (docs/formats/scenarios.md).

``incident_scenario(history, ...)`` replays what the log shows of one group: its members
and each join, leave, crash and restart at its observed time; ``write_incident`` writes it
as TOML with a header saying which values were observed and which assumed, so that
``regroup compare --scenario incident.toml`` answers "what would this have cost under
eager, cooperative, KIP-848, or with static membership?".

How the log's events become actions (times relative to the first action, which is
``LEAD_MS`` after the scenario starts, so the group forms first):

- a member that leaves cleanly (LeaveGroup: closed, unsubscribed) and a new member that
  joins within ``RESTART_PAIR_MS`` after it are one process restarted: ``restart`` at the
  leave with ``downtime_ms`` up to the join (a static member is paired by its
  ``group.instance.id``; a dynamic one with the next unpaired join, leaves in time order);
- a session timeout (classic ``has failed``, KIP-848 fenced on session expiry) is a crash
  ``session.timeout.ms`` before the coordinator noticed (``ASSUMED_SESSION_TIMEOUT_MS``
  unless ``session_timeout_ms`` is given): ``restart`` with ``crash = true`` when a new
  member joins within ``RESTART_PAIR_MS`` of the crash (a restarted process often joins
  before the coordinator notices the old one's timeout), else ``crash``;
- a leave because ``max.poll.interval.ms`` expired is a member stalled
  ``max.poll.interval.ms`` before it (``ASSUMED_MAX_POLL_INTERVAL_MS``): ``slow`` until it
  rejoined (or for the interval and a second);
- a static member replaced by a new instance, with no leave before it (a static member
  closes without LeaveGroup), is a ``restart`` ending at the replacement,
  ``ASSUMED_STATIC_DOWNTIME_MS`` long;
- any other leave is a ``stop``; any other join a ``start``.

The group's initial size is the member count of the first rebalance that gives one, less
the joins and plus the leaves before it; else the members seen leaving that never joined
(at least one). Members are numbered as the simulator numbers them: initial members first
(in the order the log first names them), then each ``start``.

Not in a log, so assumed unless given: the partitions (``--partitions``, else
``max(6, 2 x members)`` on one topic ``events``), the data plane and processing (the
simulator's defaults, or ``--data``), the assignor (the log's, else the protocol's
default).
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from regroup.history.rebalances import GroupHistory, MemberJoin, MemberLeave
from regroup.sim.scenario import (
    PROTOCOLS,
    Action,
    Scenario,
    ScenarioError,
    parse_scenario,
    with_data,
)
from regroup.sim.soak.files import scenario_to_data

__all__ = [
    "ASSUMED_MAX_POLL_INTERVAL_MS",
    "ASSUMED_SESSION_TIMEOUT_MS",
    "ASSUMED_STATIC_DOWNTIME_MS",
    "LEAD_MS",
    "RESTART_PAIR_MS",
    "Incident",
    "incident_scenario",
    "to_toml",
    "write_incident",
]

LEAD_MS = 30_000
RESTART_PAIR_MS = 120_000
ASSUMED_SESSION_TIMEOUT_MS = 45_000  # Kafka 3.0+ default session.timeout.ms (KIP-735)
ASSUMED_MAX_POLL_INTERVAL_MS = 300_000  # Kafka's default max.poll.interval.ms
ASSUMED_STATIC_DOWNTIME_MS = 10_000


@dataclass(slots=True)
class Incident:
    """The scenario and the provenance lines of its header."""

    scenario: Scenario
    observed: list[str] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Step:
    at: int  # absolute ms
    action: str
    member: int
    downtime: int = 0
    crash: bool = False
    duration: int = 0
    note: str = ""


def _initial_members(history: GroupHistory, events: Sequence[tuple[int, str, Any]]) -> int | None:
    for rebalance in history.rebalances:
        if rebalance.members is None or rebalance.outcome != "stabilized":
            continue
        at = rebalance.stabilized_ms or 0
        joins = sum(1 for ts, kind, _ in events if kind == "join" and ts <= at)
        leaves = sum(1 for ts, kind, _ in events if kind == "leave" and ts <= at)
        return max(0, rebalance.members - joins + leaves)
    return None


def incident_scenario(
    history: GroupHistory,
    *,
    partitions: int | None = None,
    data: Mapping[str, int] | None = None,
    session_timeout_ms: int | None = None,
    max_poll_interval_ms: int | None = None,
    window: tuple[str | None, str | None] = (None, None),
) -> Incident:
    """The scenario replaying ``history`` (see the module docstring); ``ScenarioError`` when
    the log shows no member joining or leaving."""
    session = session_timeout_ms or ASSUMED_SESSION_TIMEOUT_MS
    poll = max_poll_interval_ms or ASSUMED_MAX_POLL_INTERVAL_MS
    events: list[tuple[int, str, MemberJoin | MemberLeave]] = sorted(
        [(j.ts_ms, "join", j) for j in history.members_joined]
        + [(m.ts_ms, "leave", m) for m in history.members_left],
        key=lambda e: (e[0], e[1] == "join"),
    )
    if not events:
        raise ScenarioError(
            f"group {history.group_id!r}: the log shows no member joining or leaving to replay"
        )
    slot_of: dict[str, int] = {}  # member id (and instance id) -> member index
    initial: list[str] = []
    started = 0
    steps: list[_Step] = []
    used_joins: set[int] = set()
    joins = [(ts, j) for ts, kind, j in events if kind == "join" and isinstance(j, MemberJoin)]

    def index_of_leaver(leave: MemberLeave) -> int:
        for key in (leave.member_id, leave.instance_id):
            if key and key in slot_of:
                return slot_of[key]
        initial.append(leave.member_id)
        slot_of[leave.member_id] = len(initial) - 1
        return len(initial) - 1

    def pair(leave: MemberLeave, earliest: int) -> tuple[int, MemberJoin] | None:
        """The first unpaired join in ``[earliest, earliest + RESTART_PAIR_MS]`` (a static
        member: of its own instance id)."""
        for position, (ts, join) in enumerate(joins):
            if position in used_joins or ts < earliest:
                continue
            if ts - earliest > RESTART_PAIR_MS:
                return None
            if leave.instance_id and join.instance_id and join.instance_id != leave.instance_id:
                continue
            used_joins.add(position)
            return ts, join
        return None

    for ts, _kind, item in events:
        if isinstance(item, MemberLeave):
            slot = index_of_leaver(item)
            if item.reason == "replaced":
                # A static member back under its instance id: the replacement join pairs.
                found = pair(item, ts)
                if found is not None:
                    slot_of[found[1].member_id] = slot
                steps.append(
                    _Step(
                        ts - ASSUMED_STATIC_DOWNTIME_MS,
                        "restart",
                        slot,
                        downtime=ASSUMED_STATIC_DOWNTIME_MS,
                        note="static member replaced",
                    )
                )
                continue
            if item.reason in {"session_timeout", "rebalance_timeout", "fenced"}:
                crash_at = ts - session
                found = pair(item, crash_at)
                if found is not None:
                    slot_of[found[1].member_id] = slot
                    steps.append(
                        _Step(crash_at, "restart", slot, downtime=found[0] - crash_at, crash=True)
                    )
                else:
                    steps.append(_Step(crash_at, "crash", slot))
                continue
            if item.reason == "poll_timeout":
                stall_at = ts - poll
                found = pair(item, ts)
                if found is not None:
                    slot_of[found[1].member_id] = slot
                    steps.append(_Step(stall_at, "slow", slot, duration=found[0] - stall_at))
                else:
                    steps.append(_Step(stall_at, "slow", slot, duration=poll + 1000))
                continue
            found = pair(item, ts)
            if found is not None:
                slot_of[found[1].member_id] = slot
                steps.append(_Step(ts, "restart", slot, downtime=found[0] - ts))
            else:
                steps.append(_Step(ts, "stop", slot))
    # Joins nobody's leave paired: new processes, numbered after the initial members.
    unpaired = [
        (ts, join)
        for position, (ts, join) in enumerate(joins)
        if position not in used_joins and join.member_id not in slot_of
    ]
    counted = _initial_members(history, events)
    first_count = counted if counted is not None else 0
    initial_size = max(len(initial), first_count, 1 if not unpaired else 0)
    # Members that joined before the first counted rebalance and never left are initial too
    # when the count says so; otherwise each unpaired join is a start.
    for ts, join in unpaired:
        slot_of[join.member_id] = initial_size + started
        steps.append(_Step(ts, "start", initial_size + started))
        started += 1
    if initial_size + started == 0:
        raise ScenarioError(f"group {history.group_id!r}: no member to replay")
    first = min(step.at for step in steps)
    origin = first - LEAD_MS
    steps.sort(key=lambda s: (s.at, s.action != "start"))
    actions = []
    for step in steps:
        at_ms = step.at - origin
        if step.action == "start":
            actions.append(Action("start", at_ms=at_ms, count=1))
        elif step.action == "restart":
            actions.append(
                Action(
                    "restart",
                    at_ms=at_ms,
                    members=(step.member,),
                    downtime_ms=max(0, step.downtime),
                    crash=step.crash,
                )
            )
        elif step.action == "slow":
            actions.append(
                Action(
                    "slow", at_ms=at_ms, members=(step.member,), duration_ms=max(1, step.duration)
                )
            )
        else:
            actions.append(Action(step.action, at_ms=at_ms, members=(step.member,)))
    total = initial_size + started
    partition_count = partitions or max(6, 2 * total)
    if history.protocol == "consumer":
        protocol = "consumer"
    else:
        protocol = history.rebalance_protocol or "eager"
    static = bool(history.static_members)
    scenario = Scenario(
        name=f"incident-{history.group_id}",
        description=(
            f"group {history.group_id} as its coordinator's log shows it: "
            f"{len(history.members_joined)} joins, {len(history.members_left)} leaves, "
            f"{len(history.rebalances)} rebalances"
        ),
        protocols=PROTOCOLS,
        members=initial_size,
        protocol=protocol,
        static=static,
        topics={"events": partition_count},
        actions=tuple(actions),
    )
    if data:
        scenario = with_data(scenario, data)
    scenario = parse_scenario(scenario_to_data(scenario))  # the simulator's own checks
    observed = [
        f"group {history.group_id}: {history.protocol or 'unknown'} protocol"
        + (f" ({history.rebalance_protocol})" if history.rebalance_protocol else ""),
        f"window: {window[0] or 'log start'} to {window[1] or 'log end'}; scenario time 0 is "
        f"{LEAD_MS // 1000} s before the first action",
        f"{initial_size} members at the start"
        + (" (the first rebalance's member count)" if counted is not None else " (seen leaving)"),
        f"static membership: {'yes' if static else 'no'}"
        + (f" ({len(history.static_members)} instance ids)" if static else ""),
        f"{len(actions)} actions at their observed times: "
        + ", ".join(f"{a.action}@{(a.at_ms or 0) / 1000:.1f}s" for a in actions[:12])
        + (" ..." if len(actions) > 12 else ""),
    ]
    assumed = []
    if partitions is None:
        assumed.append(f"partitions: {partition_count} on one topic 'events' (--partitions)")
    else:
        assumed.append(f"partitions: {partition_count} on one topic 'events' (given)")
    given = sorted((data or {}).items())
    assumed.append(
        "data plane and processing: "
        + (", ".join(f"{k}={v}" for k, v in given) + " given, " if given else "")
        + "the rest the simulator's defaults (--data)"
    )
    if any(a.crash or a.action == "crash" for a in actions):
        assumed.append(
            f"crashes: session.timeout.ms {session} ms before the coordinator noticed"
            + ("" if session_timeout_ms else " (Kafka's default)")
        )
    if any(a.action == "slow" for a in actions):
        assumed.append(f"poll timeouts: stalls began max.poll.interval.ms {poll} ms earlier")
    if any(s.note == "static member replaced" for s in steps):
        assumed.append(
            f"static restarts: {ASSUMED_STATIC_DOWNTIME_MS} ms down before the replacement"
        )
    if protocol != "consumer" and history.rebalance_protocol is None:
        assumed.append("assignor: eager 'range' (Kafka's first default; the log does not say)")
    return Incident(scenario, observed, assumed)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError("a scenario holds no NaN or infinity")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string is a JSON string for these texts
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return (
            "{"
            + ", ".join(f"{json.dumps(str(k))} = {_toml_value(v)}" for k, v in value.items())
            + "}"
        )
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def to_toml(data: Mapping[str, Any], header: Sequence[str] = ()) -> str:
    """TOML of a scenario table (scalars, then tables, then ``[[actions]]``)."""
    lines = [f"# {line}" if line else "#" for line in header]
    tables = {k: v for k, v in data.items() if isinstance(v, Mapping)}
    arrays = {k: v for k, v in data.items() if k == "actions"}
    for key, value in data.items():
        if key not in tables and key not in arrays:
            lines.append(f"{key} = {_toml_value(value)}")
    for key, table in tables.items():
        lines.append("")
        lines.append(f"[{key}]")
        lines.extend(f"{json.dumps(str(k))} = {_toml_value(v)}" for k, v in table.items())
    for item in arrays.get("actions", []):
        lines.append("")
        lines.append("[[actions]]")
        lines.extend(f"{k} = {_toml_value(v)}" for k, v in item.items())
    return "\n".join(lines) + "\n"


def write_incident(incident: Incident, path: Path) -> Path:
    """Write the scenario as TOML (``.toml``) or JSON (``.json``, no header), checked by
    reading it back."""
    data = scenario_to_data(incident.scenario)
    header = [
        "regroup history --scenario-out: an incident replayed as a scenario.",
        "Run it with: regroup compare --scenario " + path.name,
        "",
        "Observed in the log:",
        *(f"  - {line}" for line in incident.observed),
        "Assumed (not in the log):",
        *(f"  - {line}" for line in incident.assumed),
    ]
    if path.suffix == ".json":
        text = json.dumps(data, indent=2) + "\n"
        check = json.loads(text)
    else:
        text = to_toml(data, header)
        check = tomllib.loads(text)
    if parse_scenario(check) != incident.scenario:
        raise ScenarioError("the scenario written does not read back the same")  # pragma: no cover
    path.write_text(text, encoding="utf-8")
    return path
