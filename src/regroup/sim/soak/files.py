"""A scenario written back as a scenario file (the JSON form of docs/formats/scenarios.md).

``scenario_to_data(s)`` is the inverse of ``parse_scenario``: parsing what it
returns gives ``s`` again (a test checks it), so a minimised soak failure is an
ordinary scenario file that ``regroup simulate --scenario`` runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from regroup.sim.scenario import Action, Scenario

__all__ = ["scenario_to_data", "write_scenario"]

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


def write_scenario(scenario: Scenario, path: Path) -> Path:
    """Write ``scenario`` as a ``.json`` scenario file at ``path``; return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scenario_to_data(scenario), indent=2) + "\n", encoding="utf-8")
    return path
