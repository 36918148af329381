"""Golden event logs: the sha256 of every built-in scenario's event log and metrics.

Behaviour is pinned by the bytes the simulator writes: for every built-in scenario
under every protocol it allows, and for every example scenario file, the event log
(JSON lines, as ``regroup simulate --events`` writes it) and the metrics (as
``regroup simulate --json`` prints them) of seed 0 are hashed. ``tests/golden``
holds the hashes and ``tests/sim/test_golden_logs.py`` recomputes them, so a change
that moves one byte of one log fails a test. A refactor keeps them identical; a
change of behaviour that an issue asks for regenerates them on purpose:

    python tools/golden.py --write      # or: make golden

and says in its commit which logs moved and why. The metrics of every case are also
kept in full (``tests/golden/metrics.json``, ``--write-metrics``), so a change that moves
the logs but must not move a figure (a different layout of the same records) is checked
against them before its hashes are rewritten.

Every case under the KIP-848 protocol (``:consumer``) runs twice: with the default
``regroup.consumer.semantics`` (Apache Kafka 4.0's behaviour) and, as
``:consumer+kip-848``, with the design document's; the second pins the behaviour
regroup had before the switch existed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from regroup.sim.scenario import BUILTINS, load_scenario
from regroup.sim.simulation import Settings, Simulation

ROOT = Path(__file__).resolve().parent.parent
HASHES = ROOT / "tests" / "golden" / "hashes.json"
#: Every case's metrics, as ``regroup simulate --json`` prints them: readable, so a change
#: of the event log's layout can be checked to leave every figure as it was
#: (``tests/sim/test_golden_metrics.py``). Written only with ``--write-metrics``.
METRICS = ROOT / "tests" / "golden" / "metrics.json"
EXAMPLES = ROOT / "examples" / "scenarios"


def cases() -> Iterator[tuple[str, str, str]]:
    """(case name, scenario name or path, protocol) for every pinned run."""
    sources = [(name, name) for name in BUILTINS]
    sources += [
        (f"examples/{path.name}", str(path))
        for path in sorted(EXAMPLES.iterdir())
        if path.suffix in (".toml", ".json")
    ]
    for label, source in sources:
        for protocol in load_scenario(source).protocols:
            yield f"{label}:{protocol}", source, protocol
            if protocol == "consumer":
                yield f"{label}:{protocol}{KIP_848}", source, f"{protocol}{KIP_848}"


#: The suffix of a protocol that runs with ``regroup.consumer.semantics=kip-848``.
KIP_848 = "+kip-848"


def _settings(source: str, protocol: str) -> Settings:
    configs: dict[str, str] = {}
    if protocol.endswith(KIP_848):
        protocol = protocol.removesuffix(KIP_848)
        configs["regroup.consumer.semantics"] = "kip-848"
    return Settings(scenario=load_scenario(source), protocol=protocol, seed=0, configs=configs)


def metrics_of(source: str, protocol: str) -> dict[str, Any]:
    """One run's metrics (seed 0) as JSON values, from a run that keeps no event log."""
    result = Simulation(_settings(source, protocol), keep_events=False).run()
    loaded: dict[str, Any] = json.loads(json.dumps(result.metrics.to_json()))
    return loaded


def digest(source: str, protocol: str) -> dict[str, str]:
    """The sha256 of one run's event log and of its metrics JSON (seed 0)."""
    result = Simulation(_settings(source, protocol), keep_events=True).run()
    events = hashlib.sha256()
    for event in result.events:
        events.update(event.to_json_line().encode())
        events.update(b"\n")
    metrics = json.dumps(result.metrics.to_json(), sort_keys=False).encode()
    return {"events": events.hexdigest(), "metrics": hashlib.sha256(metrics).hexdigest()}


def compute() -> dict[str, dict[str, str]]:
    return {name: digest(source, protocol) for name, source, protocol in cases()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {HASHES.name}")
    parser.add_argument(
        "--write-metrics",
        action="store_true",
        help=f"rewrite {METRICS.name} (only for a change that is meant to move a metric)",
    )
    args = parser.parse_args(argv)
    if args.write_metrics:
        figures = {name: metrics_of(source, protocol) for name, source, protocol in cases()}
        METRICS.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
        print(f"wrote the metrics of {len(figures)} cases to {METRICS.relative_to(ROOT)}")
        return 0
    hashes = compute()
    if args.write:
        HASHES.parent.mkdir(parents=True, exist_ok=True)
        HASHES.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(hashes)} cases to {HASHES.relative_to(ROOT)}")
        return 0
    stored = json.loads(HASHES.read_text())
    moved = sorted(
        name for name in hashes.keys() | stored.keys() if hashes.get(name) != stored.get(name)
    )
    for name in moved:
        print(f"changed: {name}")
    print(f"{len(hashes) - len(moved)} of {len(hashes)} cases identical")
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main())
