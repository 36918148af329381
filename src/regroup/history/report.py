"""``report.html`` of ``regroup history``: one self-contained page (inline SVG, no scripts).

Sections: what was read (files, lines, the formats and Kafka versions recognised); the
groups ranked by time spent rebalancing; then per group, in that order, one timeline
(a bar per rebalance from its start to its end, coloured by its reason class; a tick per
member leaving, red for a session timeout), its findings with their evidence lines, and
the command that replays the group as a scenario (``--scenario-out``) for ``regroup
compare``. Everything drawn comes from the JSON object of ``regroup.history.summary``.
"""

from __future__ import annotations

import html
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from regroup.history.formats import format_timestamp
from regroup.history.lines import timestamp_ms
from regroup.pipeline.report import PROTOCOL_NAMES

__all__ = ["REASON_COLOURS", "duration_text", "render_history_report", "write_history_report"]

REASON_COLOURS = {
    "member_joined": "#4c78a8",
    "member_left": "#f58518",
    "session_timeout": "#e45756",
    "static_member_replaced": "#72b7b2",
    "coordinator_moved": "#54a24b",
    "metadata_change": "#b279a2",
    "enforced": "#9d755d",
    "unknown": "#bab0ac",
}

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:72em;color:#222}
table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 8px}
th{background:#f4f4f4}td.n{text-align:right}pre{background:#f8f8f8;padding:0.5em;
overflow-x:auto;font-size:0.85em}code{background:#f0f0f0;padding:1px 4px}
.legend span{display:inline-block;margin-right:1em}.sw{width:1em;height:0.8em;
display:inline-block;margin-right:0.3em;vertical-align:middle}
"""


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def duration_text(ms: int | None) -> str:
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms} ms"
    if ms < 120_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms / 60000:.1f} min"


def _ms(text: str | None) -> int | None:
    if not text:
        return None
    parsed = timestamp_ms(text)
    return None if parsed is None else parsed[0]


def _timeline(group: Mapping[str, Any]) -> str:
    spans = []
    for rebalance in group["rebalances"]:
        start = _ms(rebalance["started_at"]) or _ms(rebalance["ended_at"])
        end = _ms(rebalance["ended_at"]) or start
        if start is None or end is None:
            continue
        spans.append((start, end, rebalance))
    leaves = [(t, leave) for leave in group["members_left"] if (t := _ms(leave["at"])) is not None]
    moments = [s for s, _, _ in spans] + [e for _, e, _ in spans] + [t for t, _ in leaves]
    if not moments:
        return "<p>No timed event in the log for this group.</p>"
    low, high = min(moments), max(moments)
    width, height, left = 900, 70, 10
    scale = (width - 2 * left) / max(1, high - low)

    def x(ms: int) -> float:
        return left + (ms - low) * scale

    parts = [f'<svg width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">']
    parts.append(f'<line x1="{left}" y1="40" x2="{width - left}" y2="40" stroke="#999"/>')
    for start, end, rebalance in spans:
        colour = REASON_COLOURS.get(rebalance["reason_class"], "#bab0ac")
        key = rebalance.get("generation", rebalance.get("epoch"))
        title = (
            f"{'generation' if 'generation' in rebalance else 'epoch'} {key}: "
            f"{rebalance['reason_class']}, {duration_text(rebalance['duration_ms'])}, "
            f"{rebalance['members']} members"
        )
        parts.append(
            f'<rect x="{x(start):.1f}" y="25" width="{max(2.0, (end - start) * scale):.1f}" '
            f'height="14" fill="{colour}"><title>{_esc(title)}</title></rect>'
        )
    for at, leave in leaves:
        colour = "#e45756" if leave["reason"] == "session_timeout" else "#555"
        parts.append(
            f'<line x1="{x(at):.1f}" y1="44" x2="{x(at):.1f}" y2="56" stroke="{colour}">'
            f"<title>{_esc(leave['member_id'])} left: {_esc(leave['reason'])}</title></line>"
        )
    parts.append(
        f'<text x="{left}" y="15" font-size="11">{_esc(_label(low))}</text>'
        f'<text x="{width - left}" y="15" font-size="11" text-anchor="end">'
        f"{_esc(_label(high))}</text></svg>"
    )
    return "".join(parts)


def _label(ms: int) -> str:
    return format_timestamp(ms)


def _legend() -> str:
    items = "".join(
        f'<span><i class="sw" style="background:{colour}"></i>{_esc(name)}</span>'
        for name, colour in REASON_COLOURS.items()
    )
    return f'<p class="legend">{items}</p>'


def render_history_report(result: Mapping[str, Any], logs: Sequence[str]) -> str:
    """The page of a ``history_json`` object; ``logs`` are the paths the command read."""
    logs_text = " ".join(shlex.quote(p) for p in logs) or "LOGS"
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<title>regroup history</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>Rebalance history</h1>",
        f"<p>{result['lines_read']} lines read, {result['lines_recognized']} recognised as "
        f"group-coordinator or consumer lines, {result['lines_unrecognized']} coordinator "
        "lines of no known format.</p>",
    ]
    if result["formats"]:
        out.append("<table><tr><th>family</th><th>Kafka versions</th><th>lines</th></tr>")
        for family in result["formats"]:
            out.append(
                f"<tr><td>{_esc(family['family'])}</td><td>{_esc(family['kafka_versions'])}</td>"
                f"<td class=n>{family['lines']}</td></tr>"
            )
        out.append("</table>")
    errors = [f for f in result["files"] if f["error"]]
    if errors:
        out.append("<p>Files not read to their end:</p><ul>")
        out.extend(f"<li>{_esc(f['error'])}</li>" for f in errors)
        out.append("</ul>")
    findings_by_group: dict[str, list[Mapping[str, Any]]] = {}
    for finding in result["findings"]:
        findings_by_group.setdefault(finding["group_id"], []).append(finding)
    out.append("<h2 id='ranking'>Groups by time spent rebalancing</h2>")
    out.append(
        "<table><tr><th>group</th><th>protocol</th><th>rebalances</th>"
        "<th>time rebalancing</th><th>members left</th><th>findings</th></tr>"
    )
    for group in result["groups"]:
        anchor = f"g-{_esc(group['group_id'])}"
        protocol = group["rebalance_protocol"] or group["protocol"] or "?"
        out.append(
            f"<tr><td><a href='#{anchor}'>{_esc(group['group_id'])}</a></td>"
            f"<td>{_esc(PROTOCOL_NAMES.get(protocol, protocol))}</td>"
            f"<td class=n>{len(group['rebalances'])}</td>"
            f"<td class=n>{duration_text(group['time_rebalancing_ms'])}</td>"
            f"<td class=n>{len(group['members_left'])}</td>"
            f"<td class=n>{len(findings_by_group.get(group['group_id'], []))}</td></tr>"
        )
    out.append("</table>")
    out.append(_legend())
    for group in result["groups"]:
        name = group["group_id"]
        out.append(f"<h2 id='g-{_esc(name)}'>{_esc(name)}</h2>")
        out.append(
            f"<p>{len(group['rebalances'])} rebalances, "
            f"{duration_text(group['time_rebalancing_ms'])} rebalancing, "
            f"{len(group['members_left'])} members left, "
            f"{len(group['coordinator_moves'])} coordinator moves; assignors seen: "
            f"{_esc(', '.join(group['assignors']) or 'none')}.</p>"
        )
        out.append(_timeline(group))
        for finding in findings_by_group.get(name, []):
            out.append(
                f"<h3>{_esc(finding['kind'])} at {_esc(finding['at'])}</h3>"
                f"<p>{_esc(finding['summary'])}.</p>"
                f"<p>What would change it: {_esc(finding['what_would_change'])}.</p>"
                f"<pre>{_esc(chr(10).join(finding['evidence']))}</pre>"
                f"<p>Next: <code>{_esc(finding['next_command'])}</code></p>"
            )
        replay = (
            f"regroup history {logs_text} --group {shlex.quote(name)} "
            f"--scenario-out incident-{name}.toml --partitions N && "
            f"regroup compare --scenario incident-{name}.toml"
        )
        out.append(f"<p>Replay this group's incident: <code>{_esc(replay)}</code></p>")
    out.append("</body></html>")
    return "\n".join(out)


def write_history_report(result: Mapping[str, Any], logs: Sequence[str], path: Path) -> Path:
    path.write_text(render_history_report(result, logs), encoding="utf-8")
    return path
