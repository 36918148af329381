"""Golden event logs: the sha256 of every built-in scenario's event log and metrics.

Behaviour is pinned by the bytes the simulator writes: for every built-in scenario
under every protocol it allows, and for every example scenario file, the event log
(JSON lines, as ``regroup simulate --events`` writes it) and the metrics (as
``regroup simulate --json`` prints them) of seed 0 are hashed. ``tests/golden``
holds the hashes and ``tests/sim/test_golden_logs.py`` recomputes them, so a change
that moves one byte of one log fails a test. A refactor keeps them identical; a
change of behaviour that an issue asks for regenerates them on purpose:

    python tools/golden.py --write      # or: make golden

and says in its commit which logs moved and why.

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

from regroup.sim.scenario import BUILTINS, load_scenario
from regroup.sim.simulation import Settings, Simulation

ROOT = Path(__file__).resolve().parent.parent
HASHES = ROOT / "tests" / "golden" / "hashes.json"
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


def digest(source: str, protocol: str) -> dict[str, str]:
    """The sha256 of one run's event log and of its metrics JSON (seed 0)."""
    configs: dict[str, str] = {}
    if protocol.endswith(KIP_848):
        protocol = protocol.removesuffix(KIP_848)
        configs["regroup.consumer.semantics"] = "kip-848"
    settings = Settings(scenario=load_scenario(source), protocol=protocol, seed=0, configs=configs)
    result = Simulation(settings, keep_events=True).run()
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
    args = parser.parse_args(argv)
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
