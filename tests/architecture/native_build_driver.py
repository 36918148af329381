"""Run a fixed set of simulations and print a digest of each (for test_native_build).

Run as a script under the build to check (``PYTHONPATH`` picks the source
tree). The first line names the build; each further line is
``label sha256-of-the-event-log steps metrics-json``. The set covers every
built-in scenario under every protocol (static membership too), the example
scenario files, and a larger rolling bounce.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from regroup.native import describe_build
from regroup.sim.scenario import BUILTINS, PROTOCOLS, load_scenario
from regroup.sim.simulation import Settings, Simulation

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


def runs() -> list[tuple[str, Settings]]:
    chosen = []
    for name in sorted(BUILTINS):
        scenario = load_scenario(name)
        for protocol in scenario.protocols:
            chosen.append((f"{name}/{protocol}", Settings(scenario, protocol=protocol, seed=7)))
        chosen.append((f"{name}/static", Settings(scenario, static=True, seed=11)))
    for path in sorted(EXAMPLES.iterdir()):
        chosen.append((path.name, Settings(load_scenario(str(path)), seed=3)))
    for protocol in PROTOCOLS:
        bounce = Settings(
            load_scenario("rolling-bounce"), protocol=protocol, members=40, partitions=400, seed=5
        )
        chosen.append((f"bounce-40/{protocol}", bounce))
    return chosen


def main() -> int:
    print(describe_build(), flush=True)
    for label, settings in runs():
        result = Simulation(settings, keep_events=True).run()
        digest = hashlib.sha256()
        for event in result.events:
            digest.update(event.to_json_line().encode())
            digest.update(b"\n")
        metrics = json.dumps(result.metrics.to_json(), sort_keys=True)
        print(label, digest.hexdigest(), result.steps, metrics, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
