"""Run a fixed set of simulations and print a digest of each (for test_native_build).

Run as a script under the build to check (``PYTHONPATH`` picks the source
tree). The first line names the build; each further line is
``label sha256-of-the-event-log steps metrics-json``. The set covers every
built-in scenario under every protocol (static membership too), the example
scenario files, and a larger rolling bounce.

The JSON codec builds events, requests and records from their type hints, which
a compiled class keeps only erased (``regroup.type_hints``), so two more lines
exercise it: every event of every run read back from its JSON line (the count of
those that come back equal, and of those that do not), and the replay case study
(``regroup replay``: requests and records from JSON) as a digest of its output.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from regroup.cli.replay import replay_script
from regroup.events import event_from_json_line
from regroup.native import describe_build
from regroup.sim.scenario import BUILTINS, PROTOCOLS, load_scenario
from regroup.sim.simulation import Settings, Simulation

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
REPLAY_CASE_STUDY = EXAMPLES.parent / "replay-case-study.json"


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
    read_back = {"equal": 0, "different": 0}
    for label, settings in runs():
        result = Simulation(settings, keep_events=True).run()
        digest = hashlib.sha256()
        for event in result.events:
            line = event.to_json_line()
            digest.update(line.encode())
            digest.update(b"\n")
            read_back["equal" if event_from_json_line(line) == event else "different"] += 1
        metrics = json.dumps(result.metrics.to_json(), sort_keys=True)
        print(label, digest.hexdigest(), result.steps, metrics, flush=True)
    print("events-read-back", json.dumps(read_back, sort_keys=True), flush=True)
    replayed = replay_script(json.loads(REPLAY_CASE_STUDY.read_text(encoding="utf-8")))
    replay_digest = hashlib.sha256(json.dumps(replayed, sort_keys=True).encode()).hexdigest()
    print("replay-case-study", replay_digest, len(replayed), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
