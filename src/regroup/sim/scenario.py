"""Scenarios as data: a documented file format (TOML or JSON) and the built-ins.

File format
-----------

A scenario is one table (TOML) or object (JSON); every key is optional
except ``name``. Times are virtual milliseconds. Example (TOML)::

    name = "my-bounce"
    description = "bounce two members, 5 s apart"
    duration_ms = 90000          # default: the last action's end + settle_ms
    settle_ms = 60000            # time after the last action (default 60000)
    protocols = ["eager", "cooperative", "consumer"]   # which --protocol values apply

    [group]
    members = 4                  # consumers started at t=0 (CLI --members)
    protocol = "cooperative"     # eager | cooperative | consumer (CLI --protocol)
    assignor = "cooperative-sticky"   # CLI --assignor
    static = false               # group.instance.id = client id (KIP-345)
    start_spread_ms = 3000       # initial members start at seeded times in [0, this)

    [topics]                     # topic -> partition count (CLI --partitions sets each)
    events = 12

    [data]
    records_per_second = 10      # per partition; 0 = no data plane
    produce_interval_ms = 1000
    processing_us_per_record = 1000
    max_poll_records = 500       # Kafka's max.poll.records
    restore_ms = 0               # state restore per newly assigned partition batch
    idle_poll_ms = 1000          # how often an idle application calls poll()

    [network]
    latency_ms = 1
    jitter_ms = 0
    loss = 0.0
    duplicate = 0.0              # probability that a message is delivered twice
    until_ms = 120000            # jitter, loss, duplicate stop here (default: never)

    [consumer]                   # consumer configs by Kafka name
    "session.timeout.ms" = 10000
    "heartbeat.interval.ms" = 3000

    [broker]                     # coordinator configs by Kafka name
    "group.initial.rebalance.delay.ms" = 0

    [[actions]]
    at_ms = 30000                # or after_ms = N: N ms after the previous action ends
    action = "rolling_bounce"
    members = "all"              # "all", an index, or a list of indexes (-1 = last)
    gap_ms = 5000
    downtime_ms = 1000

Actions (``action``):

``start``            start ``count`` new consumers (with ``config`` applied, as ``restart``)
``stop``             close the members cleanly (LeaveGroup / leave heartbeat)
``crash``            kill the members: no callbacks, no leave
``restart``          stop (or ``crash = true``) then start again after ``downtime_ms``,
                     with ``config`` (Kafka names) applied to the new process;
                     ``group.protocol`` = ``classic`` | ``consumer`` there switches the
                     member's protocol (an online migration of the group, Kafka's
                     ``group.consumer.migration.policy``; see ``upgrade-to-consumer``)
``rolling_bounce``   ``restart`` each member in turn, ``gap_ms`` apart
``slow``             the member's next batch stalls for ``duration_ms``
``cut``              cut the member off the network for ``duration_ms``
``add_partitions``   add ``count`` partitions to ``topic`` (default: double it)
``enforce_rebalance``  KIP-568 ``enforceRebalance`` on the members
``coordinator_restart``  the coordinator fails over: rebuilt from its records after
                     ``downtime_ms`` (``members`` is not used)

Built-ins (``BUILTINS``) are kebab-case names; ``load_scenario`` accepts a
name or a path ending in ``.toml`` or ``.json``.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from regroup.sim.data_plane import DataPlaneConfig
from regroup.sim.network import NetworkConfig

__all__ = [
    "ACTIONS",
    "BUILTINS",
    "PROTOCOLS",
    "Action",
    "DataConfig",
    "Scenario",
    "ScenarioError",
    "builtin_scenario",
    "load_scenario",
    "parse_scenario",
    "with_data",
]

PROTOCOLS = ("eager", "cooperative", "consumer")
ACTIONS = (
    "start",
    "stop",
    "crash",
    "restart",
    "rolling_bounce",
    "slow",
    "cut",
    "add_partitions",
    "enforce_rebalance",
    "coordinator_restart",
)
DEFAULT_SETTLE_MS = 60000


class ScenarioError(ValueError):
    """A scenario that cannot be read or run (one-line message)."""


@dataclass(frozen=True, slots=True)
class Action:
    """One step of a scenario (see the module docstring for the fields)."""

    action: str
    at_ms: int | None = None
    after_ms: int | None = None
    members: str | tuple[int, ...] = (0,)
    count: int = 1
    gap_ms: int = 10000
    downtime_ms: int = 0
    crash: bool = False
    duration_ms: int = 0
    topic: str = ""
    config: Mapping[str, Any] = field(default_factory=dict)

    def span_ms(self, member_count: int) -> int:
        """How long the action lasts once started (for ``after_ms`` and the default duration)."""
        if self.action == "rolling_bounce":
            n = member_count if self.members == "all" else len(self.members)
            return max(0, n - 1) * self.gap_ms + self.downtime_ms
        if self.action in ("restart", "coordinator_restart"):
            return self.downtime_ms
        if self.action in ("cut", "slow"):
            return self.duration_ms
        return 0


@dataclass(frozen=True, slots=True)
class DataConfig:
    """The data plane and the consumers' processing model."""

    records_per_second: int = 10
    produce_interval_ms: int = 1000
    processing_us_per_record: int = 1000
    max_poll_records: int = 500
    restore_ms: int = 0
    idle_poll_ms: int = 1000

    def __post_init__(self) -> None:
        DataPlaneConfig(self.records_per_second, self.produce_interval_ms)
        if self.processing_us_per_record < 0 or self.restore_ms < 0:
            raise ScenarioError("processing_us_per_record and restore_ms must be >= 0")
        if self.max_poll_records < 1 or self.idle_poll_ms < 1:
            raise ScenarioError("max_poll_records and idle_poll_ms must be >= 1")

    @property
    def plane(self) -> DataPlaneConfig:
        return DataPlaneConfig(self.records_per_second, self.produce_interval_ms)


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str = ""
    duration_ms: int | None = None
    settle_ms: int = DEFAULT_SETTLE_MS
    protocols: tuple[str, ...] = PROTOCOLS
    members: int = 3
    protocol: str = "cooperative"
    assignor: str | None = None
    static: bool = False
    #: The initial members start at seeded random times in ``[0, start_spread_ms)``, so
    #: their heartbeats are out of phase as in a real deployment (0: all at once).
    start_spread_ms: int = 3000
    topics: Mapping[str, int] = field(default_factory=lambda: {"events": 6})
    data: DataConfig = field(default_factory=DataConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    consumer: Mapping[str, Any] = field(default_factory=dict)
    broker: Mapping[str, Any] = field(default_factory=dict)
    actions: tuple[Action, ...] = ()

    def timed_actions(self) -> list[tuple[int, Action]]:
        """Every action with its absolute start time (``after_ms`` resolved), in order."""
        out: list[tuple[int, Action]] = []
        previous_end = 0
        for action in self.actions:
            if action.at_ms is not None:
                start = action.at_ms
            else:
                start = previous_end + (action.after_ms or 0)
            out.append((start, action))
            previous_end = start + action.span_ms(self.members)
        return out

    def total_duration_ms(self) -> int:
        if self.duration_ms is not None:
            return self.duration_ms
        end = 0
        for start, action in self.timed_actions():
            end = max(end, start + action.span_ms(self.members))
        return end + self.settle_ms


# -- parsing ------------------------------------------------------------------------------


def _int(data: Mapping[str, Any], key: str, default: int, *, minimum: int = 0) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError(f"{key} must be an integer, got {value!r}")
    if value < minimum:
        raise ScenarioError(f"{key} must be >= {minimum}, got {value}")
    return value


def _table(
    data: Mapping[str, Any], key: str, known: tuple[str, ...] | None = None
) -> Mapping[str, Any]:
    """The table ``[key]``; with ``known``, a key it does not name is refused (a typo such
    as ``memebers`` must not run with the default)."""
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise ScenarioError(f"[{key}] must be a table")
    if known is not None:
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise ScenarioError(f"unknown key {unknown[0]!r} in [{key}]; known: {', '.join(known)}")
    return value


#: The keys of the ``[group]``, ``[network]`` and ``[data]`` tables.
GROUP_KEYS = ("members", "protocol", "assignor", "static", "start_spread_ms")
NETWORK_KEYS = ("latency_ms", "jitter_ms", "loss", "duplicate", "until_ms")
DATA_KEYS = (
    "records_per_second",
    "produce_interval_ms",
    "processing_us_per_record",
    "max_poll_records",
    "restore_ms",
    "idle_poll_ms",
)


def _members_ref(value: Any) -> str | tuple[int, ...]:
    if value == "all":
        return "all"
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, list | tuple) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return tuple(value)
    raise ScenarioError(f"members must be 'all', an index or a list of indexes, got {value!r}")


def _parse_action(data: Any, index: int) -> Action:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"actions[{index}] must be a table")
    known = {f for f in Action.__dataclass_fields__}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ScenarioError(f"actions[{index}]: unknown key {unknown[0]!r}")
    name = data.get("action")
    if name not in ACTIONS:
        raise ScenarioError(f"actions[{index}]: action must be one of {', '.join(ACTIONS)}")
    at = data.get("at_ms")
    after = data.get("after_ms")
    if at is not None and after is not None:
        raise ScenarioError(f"actions[{index}]: give at_ms or after_ms, not both")
    config = data.get("config", {})
    if not isinstance(config, Mapping):
        raise ScenarioError(f"actions[{index}]: config must be a table of Kafka configs")
    crash = data.get("crash", False)
    if not isinstance(crash, bool):
        raise ScenarioError(f"actions[{index}]: crash must be true or false")
    topic = data.get("topic", "")
    if not isinstance(topic, str):
        raise ScenarioError(f"actions[{index}]: topic must be a string")
    return Action(
        action=name,
        at_ms=None if at is None else _int(data, "at_ms", 0),
        after_ms=None if after is None else _int(data, "after_ms", 0),
        members=_members_ref(data.get("members", 0)),
        # add_partitions without a count doubles the topic (0), as documented above.
        count=_int(data, "count", 0 if name == "add_partitions" else 1),
        gap_ms=_int(data, "gap_ms", 10000),
        downtime_ms=_int(data, "downtime_ms", 0),
        crash=crash,
        duration_ms=_int(data, "duration_ms", 0),
        topic=topic,
        config=dict(config),
    )


def parse_scenario(data: Mapping[str, Any]) -> Scenario:
    """A scenario from its parsed TOML/JSON form; ``ScenarioError`` on any mistake."""
    if not isinstance(data, Mapping):
        raise ScenarioError("a scenario must be a table / JSON object")
    known = {f for f in Scenario.__dataclass_fields__} | {"group"}
    unknown = sorted(set(data) - known - {"members", "protocol", "assignor", "static"})
    unknown += sorted({"members", "protocol", "assignor", "static"} & set(data))
    if unknown:
        raise ScenarioError(f"unknown scenario key {unknown[0]!r}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ScenarioError("a scenario needs a name")
    group = _table(data, "group", GROUP_KEYS)
    protocol = group.get("protocol", "cooperative")
    if protocol not in PROTOCOLS:
        raise ScenarioError(f"group.protocol must be one of {', '.join(PROTOCOLS)}")
    protocols = data.get("protocols", list(PROTOCOLS))
    if not isinstance(protocols, list | tuple) or not set(protocols) <= set(PROTOCOLS):
        raise ScenarioError(f"protocols must be a list of {', '.join(PROTOCOLS)}")
    assignor = group.get("assignor")
    if assignor is not None and not isinstance(assignor, str):
        raise ScenarioError("group.assignor must be a string")
    topics_table = data.get("topics", {"events": 6})
    if not isinstance(topics_table, Mapping) or not topics_table:
        raise ScenarioError("[topics] must map topic names to partition counts")
    topics = {str(t): _int(topics_table, t, 0, minimum=1) for t in topics_table}
    data_table = _table(data, "data", DATA_KEYS)
    network_table = _table(data, "network", NETWORK_KEYS)
    try:
        data_config = DataConfig(**{k: _int(data_table, k, 0) for k in data_table})
        network = NetworkConfig(
            latency_ms=_int(network_table, "latency_ms", 1),
            jitter_ms=_int(network_table, "jitter_ms", 0),
            loss=float(network_table.get("loss", 0.0)),
            duplicate=float(network_table.get("duplicate", 0.0)),
            until_ms=(
                None
                if network_table.get("until_ms") is None
                else _int(network_table, "until_ms", 0)
            ),
        )
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None
    actions = data.get("actions", [])
    if not isinstance(actions, list | tuple):
        raise ScenarioError("actions must be a list of tables")
    duration = data.get("duration_ms")
    static = group.get("static", False)
    if not isinstance(static, bool):
        raise ScenarioError("group.static must be true or false")
    return Scenario(
        name=name,
        description=str(data.get("description", "")),
        duration_ms=None if duration is None else _int(data, "duration_ms", 0, minimum=1),
        settle_ms=_int(data, "settle_ms", DEFAULT_SETTLE_MS),
        protocols=tuple(protocols),
        members=_int(group, "members", 3),
        protocol=protocol,
        assignor=assignor,
        static=static,
        start_spread_ms=_int(group, "start_spread_ms", 3000),
        topics=topics,
        data=data_config,
        network=network,
        consumer=dict(_table(data, "consumer")),
        broker=dict(_table(data, "broker")),
        actions=tuple(_parse_action(a, i) for i, a in enumerate(actions)),
    )


def with_data(scenario: Scenario, data: Mapping[str, int]) -> Scenario:
    """``scenario`` with keys of its ``[data]`` table replaced (``--data KEY=N``)."""
    if not data:
        return scenario
    unknown = sorted(set(data) - set(DATA_KEYS))
    if unknown:
        raise ScenarioError(f"unknown [data] key {unknown[0]!r}; known: {', '.join(DATA_KEYS)}")
    try:
        return replace(scenario, data=replace(scenario.data, **dict(data)))
    except ValueError as error:  # ScenarioError, or DataPlaneConfig's own check
        raise ScenarioError(f"data {dict(data)}: {error}") from None


def load_scenario(name_or_path: str) -> Scenario:
    """A built-in by name, or a scenario file (``.toml`` / ``.json``)."""
    if name_or_path in BUILTINS:
        return builtin_scenario(name_or_path)
    path = Path(name_or_path)
    if path.suffix not in (".toml", ".json"):
        raise ScenarioError(
            f"unknown scenario {name_or_path!r}: not a built-in "
            f"({', '.join(BUILTINS)}) nor a .toml/.json file"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    return parse_scenario(data)


# -- built-ins ------------------------------------------------------------------------------

_CLASSIC = ("eager", "cooperative")
_STRATEGY = "partition.assignment.strategy"
_SELECTION = "rebalance.protocol.selection"


def _bounce(config: Mapping[str, Any] | None = None, **kw: Any) -> Action:
    return Action(
        "rolling_bounce",
        members="all",
        gap_ms=kw.pop("gap_ms", 10000),
        downtime_ms=kw.pop("downtime_ms", 2000),
        config=dict(config or {}),
        **kw,
    )


BUILTINS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("steady", "a stable group, nothing happens", duration_ms=60000),
        Scenario(
            "scale-out",
            "one more member joins at 30 s",
            actions=(Action("start", at_ms=30000, count=1),),
        ),
        Scenario(
            "scale-in",
            "the last member leaves cleanly at 30 s",
            actions=(Action("stop", at_ms=30000, members=(-1,)),),
        ),
        Scenario(
            "crash",
            "member 0 crashes at 30 s (no leave): found after the session timeout",
            duration_ms=150000,
            actions=(Action("crash", at_ms=30000, members=(0,)),),
        ),
        Scenario(
            "rolling-bounce",
            "every member restarted in turn, 10 s apart, 2 s down (clean)",
            actions=(_bounce(at_ms=30000),),
        ),
        Scenario(
            "slow-member",
            "member 0 stalls 40 s in one batch, past max.poll.interval.ms=30000",
            consumer={"max.poll.interval.ms": 30000},
            actions=(Action("slow", at_ms=30000, members=(0,), duration_ms=40000),),
        ),
        Scenario(
            "network-partition",
            "member 0 is cut off the network for 60 s (longer than the session timeout)",
            duration_ms=180000,
            actions=(Action("cut", at_ms=30000, members=(0,), duration_ms=60000),),
        ),
        Scenario(
            "add-partitions",
            "the topic's partition count doubles at 30 s",
            actions=(Action("add_partitions", at_ms=30000, topic="events", count=0),),
        ),
        Scenario(
            "upgrade-double-bounce",
            "KIP-429 upgrade: bounce to [cooperative-sticky, range], then to [cooperative-sticky]",
            protocols=_CLASSIC,
            consumer={_STRATEGY: "range", _SELECTION: "static"},
            actions=(
                _bounce({_STRATEGY: "cooperative-sticky,range"}, at_ms=30000),
                _bounce({_STRATEGY: "cooperative-sticky"}, after_ms=30000),
            ),
        ),
        Scenario(
            "upgrade-single-bounce",
            "KIP-726 upgrade: one bounce from [range] to [cooperative-sticky, range]",
            protocols=_CLASSIC,
            consumer={_STRATEGY: "range", _SELECTION: "dynamic"},
            actions=(_bounce({_STRATEGY: "cooperative-sticky,range"}, at_ms=30000),),
        ),
        Scenario(
            "downgrade",
            "cooperative back to eager: bounce to [cooperative-sticky, range], then to [range]",
            protocols=_CLASSIC,
            consumer={_STRATEGY: "cooperative-sticky", _SELECTION: "dynamic"},
            actions=(
                _bounce({_STRATEGY: "cooperative-sticky,range"}, at_ms=30000),
                _bounce({_STRATEGY: "range"}, after_ms=30000),
            ),
        ),
        Scenario(
            "upgrade-to-consumer",
            "online upgrade to KIP-848: each classic member restarted with group.protocol=consumer",
            protocols=_CLASSIC,
            actions=(_bounce({"group.protocol": "consumer"}, at_ms=30000),),
        ),
        Scenario(
            "misconfigured-eager-member",
            "KIP-726: one member restarted with [range] only drags the group to EAGER",
            protocols=_CLASSIC,
            consumer={_STRATEGY: "cooperative-sticky,range", _SELECTION: "dynamic"},
            actions=(
                Action(
                    "restart",
                    at_ms=30000,
                    members=(0,),
                    downtime_ms=2000,
                    config={_STRATEGY: "range"},
                ),
            ),
        ),
        Scenario(
            "enforce-rebalance",
            "KIP-568 enforceRebalance on member 0 at 30 s (refused under KIP-848)",
            actions=(Action("enforce_rebalance", at_ms=30000, members=(0,)),),
        ),
        Scenario(
            "broker-rolling-restart",
            "three brokers restarted in turn, 30 s apart: the coordinator fails over twice "
            "(to the next broker, then back), 50 ms each",
            duration_ms=90000,
            actions=(
                Action("coordinator_restart", at_ms=30000, downtime_ms=50),
                Action("coordinator_restart", at_ms=60000, downtime_ms=50),
            ),
        ),
    )
}


def builtin_scenario(name: str) -> Scenario:
    try:
        return replace(BUILTINS[name])
    except KeyError:
        raise ScenarioError(
            f"unknown scenario {name!r}; built-ins: {', '.join(BUILTINS)}"
        ) from None
