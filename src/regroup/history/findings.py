"""The patterns operators look for in a group's history, each with the lines that show it.

Every finding names its ``kind``, the group, a one-line ``summary``, the ``evidence`` (the
log lines, at most ``MAX_EVIDENCE``), ``what_would_change`` it and the ``next_command`` to
run. The rules (thresholds are the constants below):

- ``rolling_deploy_without_static``: at least ``DEPLOY_MIN_RESTARTS`` members of a group
  without static membership left cleanly and a new member joined within
  ``RESTART_PAIR_MS`` of each leave, the leaves no more than ``DEPLOY_GAP_MS`` apart, and
  the group rebalanced at least twice per restart over that span. Each restarted dynamic
  member costs two rebalances (its leave, its new member id's join); a static member
  (KIP-345) back within ``session.timeout.ms`` costs none, and KIP-848 makes each an
  incremental epoch bump.
- ``repeated_poll_timeout``: one consumer (a static member's ``group.instance.id``, else its
  client id: the member id without its UUID) left at least ``POLL_TIMEOUT_REPEATS`` times
  because ``max.poll.interval.ms`` expired (the client's reason in the coordinator's log,
  Kafka 3.2+, or the client's own ``consumer poll timeout has expired`` line).
- ``clustered_session_timeouts``: at least ``CLUSTER_MIN_TIMEOUTS`` session timeouts
  (classic ``has failed``, KIP-848 fenced on session expiry) within ``CLUSTER_WINDOW_MS``:
  one cause hit several members at once (a GC pause, a network event, a broker restart).
- ``rebalance_storm``: at least ``STORM_REBALANCES`` rebalances started within
  ``STORM_WINDOW_MS``.
- ``big_group_on_eager``: a classic group of at least ``BIG_GROUP_MEMBERS`` members whose
  assignor is an eager one (``range``, ``roundrobin``, ``sticky``) as the log shows it (a
  client's ``protocol='range'``, a leave's ``supportedProtocols``): every rebalance stops
  every member's every partition.
"""

from __future__ import annotations

import re
import shlex
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from regroup.history.rebalances import GroupHistory, MemberLeave

__all__ = [
    "BIG_GROUP_MEMBERS",
    "CLUSTER_MIN_TIMEOUTS",
    "CLUSTER_WINDOW_MS",
    "DEPLOY_GAP_MS",
    "DEPLOY_MIN_RESTARTS",
    "FINDING_KINDS",
    "MAX_EVIDENCE",
    "POLL_TIMEOUT_REPEATS",
    "RESTART_PAIR_MS",
    "STORM_REBALANCES",
    "STORM_WINDOW_MS",
    "Finding",
    "consumer_key",
    "find",
]

DEPLOY_MIN_RESTARTS = 3
RESTART_PAIR_MS = 120_000
DEPLOY_GAP_MS = 600_000
POLL_TIMEOUT_REPEATS = 2
CLUSTER_MIN_TIMEOUTS = 3
CLUSTER_WINDOW_MS = 60_000
STORM_REBALANCES = 10
STORM_WINDOW_MS = 600_000
BIG_GROUP_MEMBERS = 10
MAX_EVIDENCE = 12

FINDING_KINDS = (
    "rolling_deploy_without_static",
    "repeated_poll_timeout",
    "clustered_session_timeouts",
    "rebalance_storm",
    "big_group_on_eager",
)

_T = TypeVar("_T")
_UUID_TAIL = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    group_id: str
    at: str
    summary: str
    evidence: tuple[str, ...]
    what_would_change: str
    next_command: str


def consumer_key(leave: MemberLeave) -> str:
    """Which consumer process a leave belongs to across its member ids (see module doc)."""
    if leave.instance_id:
        return leave.instance_id
    return _UUID_TAIL.sub("", leave.member_id)


def _evidence(lines: Sequence[str]) -> tuple[str, ...]:
    unique = list(dict.fromkeys(lines))
    return tuple(unique[:MAX_EVIDENCE])


def _within(items: Sequence[_T], start: int, span_ms: int, times: Sequence[int]) -> list[_T]:
    """``items[start:]`` up to the last one at most ``span_ms`` after ``items[start]``."""
    end = bisect_right(times, times[start] + span_ms, lo=start)
    return list(items[start:end])


def _replay_command(logs: str, group: str, start: str | None, end: str | None) -> str:
    window = ""
    if start:
        window += f" --from {start}"
    if end:
        window += f" --to {end}"
    return (
        f"regroup history {logs} --group {shlex.quote(group)}{window} "
        "--scenario-out incident.toml --partitions N && "
        "regroup compare --scenario incident.toml"
    )


def _rolling_deploy(history: GroupHistory, logs: str) -> list[Finding]:
    if history.static_members:
        return []
    joins = sorted(history.members_joined, key=lambda j: j.ts_ms)
    clean = [
        leave
        for leave in sorted(history.members_left, key=lambda m: m.ts_ms)
        if leave.reason in {"leave", "close"}
    ]
    restarts: list[tuple[MemberLeave, str]] = []
    used: set[int] = set()
    join_times = [j.ts_ms for j in joins]
    for leave in clean:
        index = bisect_left(join_times, leave.ts_ms)
        while index < len(joins) and joins[index].ts_ms - leave.ts_ms <= RESTART_PAIR_MS:
            if index not in used:
                used.add(index)
                restarts.append((leave, joins[index].line))
                break
            index += 1
    findings: list[Finding] = []
    run: list[tuple[MemberLeave, str]] = []

    def flush() -> None:
        if len(run) < DEPLOY_MIN_RESTARTS:
            return
        start_ms, end_ms = run[0][0].ts_ms, run[-1][0].ts_ms + RESTART_PAIR_MS
        rebalances = [
            r
            for r in history.rebalances
            if r.started_ms is not None and start_ms <= r.started_ms <= end_ms
        ]
        if len(rebalances) < 2 * len(run):
            return
        lines = [line for leave, join in run for line in (leave.line, join)]
        findings.append(
            Finding(
                kind="rolling_deploy_without_static",
                group_id=history.group_id,
                at=run[0][0].at,
                summary=(
                    f"{len(run)} members restarted one after another ({run[0][0].at} to "
                    f"{run[-1][0].at}) cost {len(rebalances)} rebalances: each restart of a "
                    "dynamic member is a leave and a new member id's join"
                ),
                evidence=_evidence(lines),
                what_would_change=(
                    "static membership (group.instance.id, with session.timeout.ms longer than "
                    "a restart) makes a restart cost no rebalance; KIP-848 "
                    "(group.protocol=consumer) makes each one an incremental epoch bump"
                ),
                next_command=_replay_command(logs, history.group_id, run[0][0].at, run[-1][0].at)
                + " --static",
            )
        )

    for pair in restarts:
        if run and pair[0].ts_ms - run[-1][0].ts_ms > DEPLOY_GAP_MS:
            flush()
            run = []
        run.append(pair)
    flush()
    return findings


def _poll_timeouts(history: GroupHistory, logs: str) -> list[Finding]:
    by_consumer: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for leave in history.members_left:
        if leave.reason == "poll_timeout":
            by_consumer[consumer_key(leave)].append((leave.at, leave.line))
    for timeout in history.poll_timeouts:
        by_consumer[timeout.client_id].append((timeout.at, timeout.line))
    findings = []
    for consumer, seen in sorted(by_consumer.items()):
        if len(seen) < POLL_TIMEOUT_REPEATS:
            continue
        seen.sort()
        findings.append(
            Finding(
                kind="repeated_poll_timeout",
                group_id=history.group_id,
                at=seen[0][0],
                summary=(
                    f"consumer {consumer} exceeded max.poll.interval.ms {len(seen)} times "
                    f"({seen[0][0]} to {seen[-1][0]}): each time it left the group and rejoined"
                ),
                evidence=_evidence([line for _, line in seen]),
                what_would_change=(
                    "a longer max.poll.interval.ms, or fewer records per poll "
                    "(max.poll.records), or faster processing; no protocol avoids it: KIP-848 "
                    "still fences a member past its rebalance timeout"
                ),
                next_command=(
                    "regroup compare --scenario slow-member --config max.poll.interval.ms=600000"
                ),
            )
        )
    return findings


def _session_timeouts(history: GroupHistory, logs: str) -> list[Finding]:
    timeouts = sorted(
        (m for m in history.members_left if m.reason == "session_timeout"), key=lambda m: m.ts_ms
    )
    times = [t.ts_ms for t in timeouts]
    findings: list[Finding] = []
    index = 0
    while index < len(timeouts):
        window = _within(timeouts, index, CLUSTER_WINDOW_MS, times)
        if len(window) >= CLUSTER_MIN_TIMEOUTS:
            findings.append(
                Finding(
                    kind="clustered_session_timeouts",
                    group_id=history.group_id,
                    at=window[0].at,
                    summary=(
                        f"{len(window)} members' sessions expired within "
                        f"{(window[-1].ts_ms - window[0].ts_ms) / 1000:.0f} s from "
                        f"{window[0].at}: one cause (a GC pause, a network event, a broker "
                        "restart) hit them together"
                    ),
                    evidence=_evidence([t.line for t in window]),
                    what_would_change=(
                        "the cause itself (look at the brokers' and clients' logs of that "
                        "minute); a longer session timeout rides out a short pause; static "
                        "membership or KIP-848 keep the members' partitions while they return"
                    ),
                    next_command=_replay_command(
                        logs, history.group_id, window[0].at, window[-1].at
                    ),
                )
            )
            index += len(window)
        else:
            index += 1
    return findings


def _storms(history: GroupHistory, logs: str) -> list[Finding]:
    started = sorted(
        (r for r in history.rebalances if r.started_ms is not None),
        key=lambda r: r.started_ms or 0,
    )
    times = [r.started_ms or 0 for r in started]
    findings: list[Finding] = []
    index = 0
    while index < len(started):
        window = _within(started, index, STORM_WINDOW_MS, times)
        if len(window) >= STORM_REBALANCES:
            classes: dict[str, int] = defaultdict(int)
            for rebalance in window:
                classes[rebalance.reason_class] += 1
            causes = ", ".join(
                f"{name} {count}" for name, count in sorted(classes.items(), key=lambda c: -c[1])
            )
            findings.append(
                Finding(
                    kind="rebalance_storm",
                    group_id=history.group_id,
                    at=window[0].started_at or "",
                    summary=(
                        f"{len(window)} rebalances within {STORM_WINDOW_MS // 60000} minutes "
                        f"from {window[0].started_at} (reasons: {causes})"
                    ),
                    evidence=_evidence([r.lines[0] for r in window if r.lines]),
                    what_would_change=(
                        "depends on the reasons: members leaving and joining (static "
                        "membership, KIP-848), poll timeouts (max.poll.interval.ms), session "
                        "timeouts (the pauses behind them)"
                    ),
                    next_command=_replay_command(
                        logs, history.group_id, window[0].started_at, window[-1].started_at
                    ),
                )
            )
            index += len(window)
        else:
            index += 1
    return findings


def _big_eager(history: GroupHistory, logs: str) -> list[Finding]:
    if history.protocol != "classic" or history.rebalance_protocol != "eager":
        return []
    sized = [r for r in history.rebalances if r.members is not None]
    if not sized:
        return []
    biggest = max(sized, key=lambda r: r.members or 0)
    if (biggest.members or 0) < BIG_GROUP_MEMBERS:
        return []
    assignor = next(
        name for name in reversed(history.assignors) if name in {"range", "roundrobin", "sticky"}
    )
    return [
        Finding(
            kind="big_group_on_eager",
            group_id=history.group_id,
            at=biggest.stabilized_at or biggest.started_at or "",
            summary=(
                f"{biggest.members} members on the eager assignor '{assignor}': each of its "
                f"{len(history.rebalances)} rebalances stopped every member's partitions"
            ),
            evidence=_evidence([history.assignor_lines[assignor], *biggest.lines]),
            what_would_change=(
                "cooperative-sticky (KIP-429: only moved partitions stop) or KIP-848 "
                "(group.protocol=consumer)"
            ),
            next_command=(
                f"regroup compare --scenario rolling-bounce --members {biggest.members} "
                "--partitions N"
            ),
        )
    ]


def find(history: GroupHistory, logs: str = "LOGS") -> list[Finding]:
    """Every finding of one group's history, in time order (``logs``: paths for commands)."""
    findings = [
        *_rolling_deploy(history, logs),
        *_poll_timeouts(history, logs),
        *_session_timeouts(history, logs),
        *_storms(history, logs),
        *_big_eager(history, logs),
    ]
    return sorted(findings, key=lambda f: (f.at, f.kind))
