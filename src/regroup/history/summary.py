"""The result of ``regroup history`` as one JSON object (docs/formats/history-json.md).

Also the per-file verdicts: a file with no recognised line is named with the formats tried
(``silent_files``), and ``kafka_versions`` narrows each family's versions to the range
every recognised row holds (rows of 2.8-3.9 and 2.1-3.9 -> 2.8-3.9).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from regroup.history.findings import Finding
from regroup.history.formats import FORMATS, NEWEST_CHECKED, Family, version_key
from regroup.history.reader import SplitStats, Window
from regroup.history.rebalances import GroupHistory, Rebalance

__all__ = ["formats_tried", "history_json", "merge_stats", "silent_files"]


def formats_tried() -> str:
    """Every family with the versions its rows span, for messages."""
    spans = []
    for family in Family:
        rows = [row for row in FORMATS if row.family == family]
        first = min((row.first for row in rows), key=version_key)
        spans.append(f"{family} {first}-{NEWEST_CHECKED}")
    return ", ".join(spans)


def merge_stats(stats: Iterable[SplitStats]) -> dict[str, SplitStats]:
    """The splits' counts summed per file."""
    files: dict[str, SplitStats] = {}
    for split in stats:
        total = files.setdefault(split.path, SplitStats(split.path))
        total.lines_read += split.lines_read
        total.lines_recognized += split.lines_recognized
        total.lines_unrecognized += split.lines_unrecognized
        total.bytes_read += split.bytes_read
        total.formats.update(split.formats)
        if split.error and not total.error:
            total.error = split.error
    return files


def silent_files(files: dict[str, SplitStats]) -> list[str]:
    """Files in which no line was recognised."""
    return [path for path, stats in sorted(files.items()) if stats.lines_recognized == 0]


def _kafka_versions(spans: Iterable[str]) -> str | None:
    low: tuple[int, ...] = (0,)
    high: tuple[int, ...] | None = None
    low_text, high_text = "", NEWEST_CHECKED
    for span in spans:
        first, _, last = span.rstrip("+").partition("-")
        if version_key(first) > low:
            low, low_text = version_key(first), first
        if last and (high is None or version_key(last) < high):
            high, high_text = version_key(last), last
    if high is not None and low > high:
        return None  # rows of versions that never coexist: mixed brokers
    return f"{low_text}-{high_text}"


def _formats(files: dict[str, SplitStats]) -> list[dict[str, Any]]:
    totals: Counter[tuple[str, str]] = Counter()
    for stats in files.values():
        totals.update(stats.formats)
    by_family: dict[str, dict[str, int]] = defaultdict(dict)
    for (family, versions), count in totals.items():
        by_family[family][versions] = count
    out = []
    for family in sorted(by_family):
        rows = by_family[family]
        out.append(
            {
                "family": family,
                "lines": sum(rows.values()),
                "kafka_versions": _kafka_versions(rows),
                "rows": [
                    {"versions": versions, "lines": count}
                    for versions, count in sorted(rows.items(), key=lambda r: -r[1])
                ],
            }
        )
    return out


def _rebalance(rebalance: Rebalance) -> dict[str, Any]:
    key: dict[str, Any] = (
        {"generation": rebalance.generation}
        if rebalance.protocol == "classic"
        else {"epoch": rebalance.epoch}
    )
    return {
        **key,
        "started_at": rebalance.started_at,
        "stabilized_at": rebalance.stabilized_at,
        "ended_at": rebalance.ended_at,
        "duration_ms": rebalance.duration_ms,
        "outcome": rebalance.outcome,
        "reason": rebalance.reason,
        "reason_class": rebalance.reason_class,
        "client_reason": rebalance.client_reason,
        "members": rebalance.members,
        "members_before": rebalance.members_before,
        "broker_id": rebalance.broker_id,
        "coordinator_partition": rebalance.coordinator_partition,
    }


def _group(history: GroupHistory) -> dict[str, Any]:
    return {
        "group_id": history.group_id,
        "protocol": history.protocol,
        "rebalance_protocol": history.rebalance_protocol,
        "assignors": list(history.assignors),
        "lines": history.records,
        "time_rebalancing_ms": history.rebalancing_ms,
        "rebalances": [_rebalance(r) for r in history.rebalances],
        "members_joined": len(history.members_joined),
        "members_left": [
            {
                "member_id": leave.member_id,
                "instance_id": leave.instance_id,
                "at": leave.at,
                "reason": leave.reason,
                "reason_text": leave.reason_text,
            }
            for leave in history.members_left
        ],
        "coordinator_moves": [
            {"at": move.at, "from_broker": move.from_broker, "to_broker": move.to_broker}
            for move in history.coordinator_moves
        ],
    }


def _finding(finding: Finding) -> dict[str, Any]:
    return {
        "kind": finding.kind,
        "group_id": finding.group_id,
        "at": finding.at,
        "summary": finding.summary,
        "evidence": list(finding.evidence),
        "what_would_change": finding.what_would_change,
        "next_command": finding.next_command,
    }


def history_json(
    files: dict[str, SplitStats],
    groups: Sequence[tuple[GroupHistory, list[Finding]]],
    window: Window,
    window_text: tuple[str | None, str | None] = (None, None),
) -> dict[str, Any]:
    """The ``--json`` object (docs/formats/history-json.md)."""
    ranked = sorted(groups, key=lambda pair: (-pair[0].rebalancing_ms, pair[0].group_id))
    return {
        "lines_read": sum(s.lines_read for s in files.values()),
        "lines_recognized": sum(s.lines_recognized for s in files.values()),
        "lines_unrecognized": sum(s.lines_unrecognized for s in files.values()),
        "window": {"group": window.group_id, "from": window_text[0], "to": window_text[1]},
        "files": [
            {
                "path": path,
                "lines_read": stats.lines_read,
                "lines_recognized": stats.lines_recognized,
                "lines_unrecognized": stats.lines_unrecognized,
                "error": stats.error,
            }
            for path, stats in sorted(files.items())
        ],
        "formats": _formats(files),
        "groups": [_group(history) for history, _ in ranked],
        "findings": [_finding(f) for _, findings in ranked for f in findings],
    }
