"""The findings: each fires on its pattern with its evidence, and not on a near miss."""

from __future__ import annotations

from regroup.history.findings import find
from regroup.history.rebalances import GroupHistory, MemberJoin, MemberLeave, Rebalance

T0 = 1_796_220_000_000


def _at(ms: int) -> str:
    from regroup.history.lines import timestamp_ms

    seconds, millis = divmod(ms, 1000)
    minutes, second = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    text = f"2026-12-02T{14 + hours:02d}:{minute:02d}:{second:02d}.{millis:03d}"
    assert timestamp_ms(text) is not None
    return text


def _rebalance(ms: int, reason_class: str = "member_left", members: int | None = 6) -> Rebalance:
    return Rebalance(
        group_id="g",
        protocol="classic",
        generation=1,
        epoch=None,
        started_at=_at(ms),
        started_ms=T0 + ms,
        stabilized_at=_at(ms + 500),
        stabilized_ms=T0 + ms + 500,
        ended_at=_at(ms + 500),
        ended_ms=T0 + ms + 500,
        outcome="stabilized",
        reason="r",
        reason_class=reason_class,
        client_reason=None,
        members=members,
        members_before=members,
        broker_id=1,
        coordinator_partition=3,
        lines=(f"start line {ms}", f"end line {ms}"),
    )


def _leave(ms: int, member: str, reason: str = "close", instance: str | None = None) -> MemberLeave:
    return MemberLeave(
        "g", member, instance, _at(ms), T0 + ms, reason, None, f"leave {member} {ms}"
    )


def _join(ms: int, member: str, instance: str | None = None) -> MemberJoin:
    return MemberJoin("g", member, instance, _at(ms), T0 + ms, f"join {member} {ms}")


def _deploy(restarts: int, static: bool = False) -> GroupHistory:
    history = GroupHistory("g", protocol="classic")
    for index in range(restarts):
        at = index * 60_000
        instance = f"app-{index}" if static else None
        history.members_left.append(_leave(at, f"old-{index}", instance=instance))
        history.members_joined.append(_join(at + 15_000, f"new-{index}", instance=instance))
        history.rebalances += [_rebalance(at), _rebalance(at + 15_000, "member_joined")]
        if static:
            history.static_members.add(instance or "")
    return history


def test_a_rolling_deploy_of_dynamic_members() -> None:
    (finding,) = [
        f for f in find(_deploy(4), "server.log") if f.kind == "rolling_deploy_without_static"
    ]
    assert finding.group_id == "g"
    assert "4 members restarted" in finding.summary and "8 rebalances" in finding.summary
    assert finding.evidence[:2] == ("leave old-0 0", "join new-0 15000")
    assert "static membership" in finding.what_would_change
    assert finding.next_command.startswith("regroup history server.log --group g --from ")
    assert finding.next_command.endswith("regroup compare --scenario incident.toml --static")


def test_no_rolling_deploy_finding_for_static_members_or_two_restarts() -> None:
    assert not [
        f for f in find(_deploy(4, static=True)) if f.kind == "rolling_deploy_without_static"
    ]
    assert not [f for f in find(_deploy(2)) if f.kind == "rolling_deploy_without_static"]


def test_a_member_that_keeps_exceeding_max_poll_interval() -> None:
    history = GroupHistory("g", protocol="classic")
    uuid_a = "consumer-g-1-6cb0c9e9-79b8-4300-9c32-ed74a85bf54c"
    uuid_b = "consumer-g-1-0f1e2d3c-79b8-4300-9c32-ed74a85bf54c"
    history.members_left += [
        _leave(0, uuid_a, "poll_timeout"),
        _leave(400_000, uuid_b, "poll_timeout"),
    ]
    (finding,) = find(history)
    assert finding.kind == "repeated_poll_timeout"
    assert "consumer consumer-g-1 exceeded max.poll.interval.ms 2 times" in finding.summary
    assert len(finding.evidence) == 2
    history.members_left.pop()
    assert find(history) == []


def test_session_timeouts_clustered_in_a_minute() -> None:
    history = GroupHistory("g", protocol="classic")
    history.members_left += [_leave(at, f"m{at}", "session_timeout") for at in (0, 20_000, 45_000)]
    (finding,) = find(history)
    assert finding.kind == "clustered_session_timeouts" and len(finding.evidence) == 3
    history.members_left[-1] = _leave(70_000, "late", "session_timeout")
    assert find(history) == []


def test_a_rebalance_storm() -> None:
    history = GroupHistory("g", protocol="consumer")
    history.rebalances = [_rebalance(i * 30_000, "session_timeout") for i in range(10)]
    (finding,) = find(history)
    assert finding.kind == "rebalance_storm" and "session_timeout 10" in finding.summary
    history.rebalances.pop()
    assert find(history) == []


def test_a_big_group_on_an_eager_assignor() -> None:
    history = GroupHistory("g", protocol="classic", assignors=["range"])
    history.assignor_lines["range"] = "line with protocol='range'"
    history.rebalances = [_rebalance(0, members=12)]
    (finding,) = find(history)
    assert finding.kind == "big_group_on_eager"
    assert finding.evidence[0] == "line with protocol='range'"
    assert "--members 12" in finding.next_command
    history.assignors.append("cooperative-sticky")
    assert find(history) == []
