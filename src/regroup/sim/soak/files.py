"""A scenario written back as a scenario file (docs/formats/scenarios.md), JSON or TOML.

``scenario_to_data(s)`` is the inverse of ``parse_scenario``: parsing what it
returns gives ``s`` again (a test checks it), so a minimised soak failure is an
ordinary scenario file that ``regroup simulate --scenario`` runs.
``scenario_to_toml(s, header)`` is the same table in TOML, after ``header`` as
comment lines (``regroup snapshot`` says there where each value came from);
``tomllib`` reads it back to the same table. ``write_scenario`` picks the
syntax from the path's suffix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from regroup.sim.scenario import Action, Scenario

__all__ = ["scenario_to_data", "scenario_to_toml", "write_scenario"]

_ACTION_DEFAULTS = Action("start")


def _action(action: Action) -> dict[str, Any]:
    out: dict[str, Any] = {"action": action.action}
    if action.at_ms is not None:
        out["at_ms"] = action.at_ms
    if action.after_ms is not None:
        out["after_ms"] = action.after_ms
    out["members"] = action.members if isinstance(action.members, str) else list(action.members)
    for key in ("count", "gap_ms", "downtime_ms", "crash", "duration_ms", "topic"):
        value = getattr(action, key)
        if value != getattr(_ACTION_DEFAULTS, key):
            out[key] = value
    if action.config:
        out["config"] = dict(action.config)
    return out


def scenario_to_data(scenario: Scenario) -> dict[str, Any]:
    """The scenario as the table ``parse_scenario`` reads."""
    data = scenario.data
    network = scenario.network
    out: dict[str, Any] = {
        "name": scenario.name,
        "description": scenario.description,
        "settle_ms": scenario.settle_ms,
        "protocols": list(scenario.protocols),
        "group": {
            "members": scenario.members,
            "protocol": scenario.protocol,
            "static": scenario.static,
            "start_spread_ms": scenario.start_spread_ms,
        },
        "topics": dict(scenario.topics),
        "data": {
            "records_per_second": data.records_per_second,
            "produce_interval_ms": data.produce_interval_ms,
            "processing_us_per_record": data.processing_us_per_record,
            "max_poll_records": data.max_poll_records,
            "restore_ms": data.restore_ms,
            "idle_poll_ms": data.idle_poll_ms,
        },
        "network": {
            "latency_ms": network.latency_ms,
            "jitter_ms": network.jitter_ms,
            "loss": network.loss,
            "duplicate": network.duplicate,
        },
        "consumer": dict(scenario.consumer),
        "broker": dict(scenario.broker),
        "actions": [_action(a) for a in scenario.actions],
    }
    if scenario.duration_ms is not None:
        out["duration_ms"] = scenario.duration_ms
    if network.until_ms is not None:
        out["network"]["until_ms"] = network.until_ms
    if scenario.assignor is not None:
        out["group"]["assignor"] = scenario.assignor
    return out


# -- TOML ---------------------------------------------------------------------------------

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _string(text: str) -> str:
    """A TOML basic string. JSON's escapes (``\\"``, ``\\\\``, ``\\n``, ``\\u001f`` ...) are
    TOML's too; other characters stay as they are (a TOML file is UTF-8: JSON's surrogate
    pairs for characters beyond U+FFFF would not parse), but for DEL, which TOML escapes
    and JSON does not."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _key(name: str) -> str:
    """A TOML key: bare when it can be, else a basic string (``"session.timeout.ms"``)."""
    return name if _BARE_KEY.fullmatch(name) else _string(name)


def _value(value: Any) -> str:
    """A TOML value: strings as ``_string``, integers and finite floats as JSON has them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"a scenario holds no {value} (TOML would, JSON would not)")
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def scenario_to_toml(scenario: Scenario, header: Sequence[str] = ()) -> str:
    """The scenario as a TOML document: ``header`` as ``#`` comment lines, the top-level
    keys, then one table per section and one ``[[actions]]`` table per action."""
    data = scenario_to_data(scenario)
    lines = [f"# {line}".rstrip() for text in header for line in text.splitlines() or [""]]
    if lines:
        lines.append("")
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    actions = data.pop("actions")
    for key, value in data.items():
        if key not in tables:
            lines.append(f"{_key(key)} = {_value(value)}")
    for name, table in tables.items():
        lines += ["", f"[{name}]"]
        lines += [f"{_key(k)} = {_value(v)}" for k, v in table.items()]
    for action in actions:
        lines += ["", "[[actions]]"]
        lines += [f"{_key(k)} = {_value(v)}" for k, v in action.items()]
    return "\n".join(lines) + "\n"


def write_scenario(scenario: Scenario, path: Path, header: Sequence[str] = ()) -> Path:
    """Write ``scenario`` at ``path``: TOML (with ``header`` as comments) when the path
    ends in ``.toml``, else JSON (which has no comments: ``header`` is not written);
    return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".toml":
        text = scenario_to_toml(scenario, header)
    else:
        text = json.dumps(scenario_to_data(scenario), indent=2) + "\n"
    path.write_text(text, encoding="utf-8")
    return path
