"""What a run is asked for (``Settings``), what it resolves to (``RunPlan``), what it gives back.

``Settings`` is a scenario plus the command line's choices; ``plan_run``
resolves them once, before anything runs, into a ``RunPlan``: the protocol,
the assignor, the member count, the topics, the coordinator's configuration
and the consumer properties every member starts from. Every refusal (a
scenario not written for the protocol, an assignor that cannot run it, a bad
Kafka config) is a ``ScenarioError`` raised here, so a bad command line fails
before the first event.

Kafka configs are split by name: the ``group.*`` broker configs go to the
coordinator (``GroupCoordinatorConfig``), everything else to the consumers. Each
side checks its own as Kafka does (``ClassicMemberConfig``,
``ConsumerMemberConfig``: what Kafka's consumer refuses to be built with;
``GroupCoordinatorConfig``: what keeps Kafka's broker from starting), and no
bound is moved to admit a value: a session timeout below the broker's
``group.min.session.timeout.ms`` is refused as the broker refuses the join, and
a run that wants one sets the bound too, as its operator would.

A request that contradicts itself or the broker is a ``SettingsError`` (a
``ScenarioError`` that a sweep refuses rather than skips), never a run that
silently does something else:

* an action aimed at a member that does not exist at its time (``-n <= i < n``
  over the members started so far), or at ``"all"`` of an empty group;
* ``add_partitions`` on a topic the run does not have;
* a run that ends before the scenario's last action has ended;
* ``group.protocol`` in the consumer configs that contradicts ``--protocol``;
  ``group.remote.assignor`` that contradicts ``--assignor``;
* a classic ``session.timeout.ms`` outside the broker's
  [``group.min.session.timeout.ms``, ``group.max.session.timeout.ms``]: Kafka's
  coordinator answers the JoinGroup with INVALID_SESSION_TIMEOUT and the consumer
  fails (``ClassicGroupJoin``), so the run would be nothing but failed joins;
* sizes beyond the simulator's limits (``MAX_MEMBERS``, ``MAX_PARTITIONS``),
  refused before anything is allocated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from regroup.assignors.classic.api import RebalanceProtocol
from regroup.classic.member.config import ClassicMemberConfig
from regroup.coordinator.config import GroupCoordinatorConfig, InvalidConfigError
from regroup.events import Event
from regroup.sim.configs import (
    CLASSIC_ONLY_CONFIGS,
    CONSUMER_ONLY_CONFIGS,
    PROCESS_CONFIGS,
    consumer_member_config,
)
from regroup.sim.metrics import RunMetrics
from regroup.sim.scenario import Scenario, ScenarioError

__all__ = [
    "GROUP_ID",
    "MAX_MEMBERS",
    "MAX_PARTITIONS",
    "RunPlan",
    "RunResult",
    "Settings",
    "SettingsError",
    "plan_run",
]

GROUP_ID = "sim-group"
#: The most consumers one run may start (initial members plus ``start`` actions): the
#: simulator keeps every member, its requests and its events in memory.
MAX_MEMBERS = 10_000
#: The most partitions one run may have (every topic, after ``add_partitions``).
MAX_PARTITIONS = 1_000_000
#: The actions that act on members (``members = ...``).
_MEMBER_ACTIONS = frozenset(
    {"stop", "crash", "restart", "rolling_bounce", "slow", "cut", "enforce_rebalance"}
)


class SettingsError(ScenarioError):
    """A request that contradicts itself or the broker (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """A scenario plus the command line's choices (``None``: the scenario's)."""

    scenario: Scenario
    protocol: str | None = None
    assignor: str | None = None
    members: int | None = None
    partitions: int | None = None
    seed: int = 0
    static: bool | None = None
    duration_ms: int | None = None
    #: Kafka configs from the command line: consumer configs and ``group.*`` broker configs.
    configs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class RunResult:
    metrics: RunMetrics
    events: list[Event]
    duration_ms: int
    steps: int
    consumer_errors: dict[str, list[str]]


@dataclass(slots=True)
class RunPlan:
    """``Settings`` resolved: everything a ``Simulation`` is built from."""

    scenario: Scenario
    """The scenario with ``members`` set to the run's member count, so ``members="all"``
    actions and their spans (hence the run's length) cover every member."""
    protocol: str
    group_protocol: str
    assignor: str
    member_count: int
    topics: dict[str, int]
    static: bool
    duration_ms: int
    broker: GroupCoordinatorConfig
    consumer_props: dict[str, Any]
    #: The Kafka configs the scenario and the command line set, and the broker bounds
    #: widened for them, that differ from Kafka's defaults (``assumptions``).
    stated_configs: dict[str, Any] = field(default_factory=dict)


def classic_strategy(protocol: str, assignor: str | None) -> tuple[str, str]:
    """``(partition.assignment.strategy, rebalance.protocol.selection)`` for --protocol."""
    from regroup.assignors.classic.registry import create_classic_assignor

    name = assignor or ("range" if protocol == "eager" else "cooperative-sticky")
    try:
        supported = create_classic_assignor(name).supported_protocols()
    except Exception as error:
        raise ScenarioError(str(error)) from None
    if protocol == "eager" and RebalanceProtocol.COOPERATIVE in supported:
        raise ScenarioError(
            f"assignor {name!r} runs the COOPERATIVE protocol; use --protocol cooperative"
        )
    if protocol == "cooperative" and RebalanceProtocol.COOPERATIVE not in supported:
        raise ScenarioError(f"assignor {name!r} does not support the COOPERATIVE protocol")
    return name, "static"


def split_configs(scenario: Scenario, settings: Settings) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(consumer properties, broker properties)``: the command line overrides the scenario."""
    broker_names = GroupCoordinatorConfig.kafka_names()
    consumer: dict[str, Any] = {}
    broker: dict[str, Any] = dict(scenario.broker)
    for key, value in [*scenario.consumer.items(), *settings.configs.items()]:
        if key in broker_names:
            broker[key] = value
        else:
            consumer[key] = value
    return consumer, broker


def _non_default_broker_configs(broker: GroupCoordinatorConfig) -> dict[str, Any]:
    """The coordinator configs of ``broker`` that differ from Kafka's defaults, by name."""
    default = GroupCoordinatorConfig()
    out: dict[str, Any] = {}
    for kafka_name, field_name in sorted(GroupCoordinatorConfig.kafka_names().items()):
        value = getattr(broker, field_name)
        if value != getattr(default, field_name):
            if isinstance(value, tuple):
                value = ",".join(value)
            out[kafka_name] = getattr(value, "value", value)  # an enum by its Kafka name
    return out


def _int_config(props: Mapping[str, Any], key: str) -> int:
    """``props[key]`` as an int, or the one-line error Kafka's ``ConfigDef`` would give."""
    try:
        return int(props[key])
    except (TypeError, ValueError):
        raise SettingsError(f"{key} must be an integer, got {props[key]!r}") from None


def _check_strategies(props: Mapping[str, Any], where: str = "") -> None:
    """Every ``partition.assignment.strategy`` entry names a classic assignor (Kafka's
    consumer fails at construction with a ConfigException for a class it cannot load)."""
    from regroup.assignors.classic.registry import resolve_classic_assignor_name

    value = props.get("partition.assignment.strategy")
    if value is None:
        return
    for name in str(value).split(","):
        try:
            resolve_classic_assignor_name(name.strip())
        except Exception as error:
            raise SettingsError(f"partition.assignment.strategy{where}: {error}") from None


#: Configs the simulated process reads itself, with Kafka's lower bound (``ConsumerConfig``:
#: ``request.timeout.ms`` and ``auto.commit.interval.ms`` are ``atLeast(0)``).
_PROCESS_INTS = ("request.timeout.ms", "auto.commit.interval.ms")


def _check_process_configs(props: Mapping[str, Any], where: str = "") -> None:
    for key in _PROCESS_INTS:
        if key in props:
            value = _int_config(props, key)
            if value < 0:
                raise ScenarioError(f"{key}{where} must be >= 0, got {value}")


def _check_restart_configs(
    scenario: Scenario, props: Mapping[str, Any], group_protocol: str
) -> None:
    """Each restart's ``config`` on top of the run's properties makes a valid member, as
    ``SimConsumer.start`` will build it (a bad value failed mid-run with a traceback)."""
    for index, action in enumerate(scenario.actions):
        if not action.config:
            continue
        where = f"actions[{index}] config: "
        merged = {**props, **action.config}
        member_protocol = str(merged.get("group.protocol", group_protocol)).strip().lower()
        if member_protocol not in ("classic", "consumer"):
            raise ScenarioError(
                f"{where}group.protocol must be classic or consumer, got "
                f"{merged['group.protocol']!r}"
            )
        if member_protocol == "classic" and group_protocol == "consumer":
            merged = {k: v for k, v in merged.items() if k not in CONSUMER_ONLY_CONFIGS}
        if member_protocol == "consumer" and group_protocol != "consumer":
            merged = {k: v for k, v in merged.items() if k not in CLASSIC_ONLY_CONFIGS}
        try:
            _validate_consumer_props(member_protocol, merged)
        except ScenarioError as error:
            raise type(error)(f"{where}{error}") from None


def _validate_consumer_props(group_protocol: str, props: Mapping[str, Any]) -> None:
    """Build the member configuration once, so a bad consumer config is refused up front.

    A config of the other protocol (``session.timeout.ms`` under KIP-848) is a
    ``ScenarioError``: a sweep's grid crosses configs with protocols and skips that
    run. Anything else Kafka's consumer refuses (a value, a pair of values, an unknown
    name) is a ``SettingsError``, refused by every command."""
    other = CLASSIC_ONLY_CONFIGS if group_protocol == "consumer" else CONSUMER_ONLY_CONFIGS
    for key in sorted(other & set(props)):
        raise ScenarioError(f"{key} is not a consumer config with group.protocol={group_protocol}")
    try:
        if group_protocol == "classic":
            ClassicMemberConfig.from_properties(
                {k: v for k, v in props.items() if k not in PROCESS_CONFIGS}
            )
        else:
            consumer_member_config(GROUP_ID, "probe", props)
    except ValueError as error:
        raise SettingsError(str(error)) from None


def plan_run(settings: Settings) -> RunPlan:
    """Resolve ``settings`` (``ScenarioError`` with a one-line reason if refused)."""
    scenario = settings.scenario
    protocol = settings.protocol or scenario.protocol
    if protocol not in scenario.protocols:
        raise ScenarioError(
            f"scenario {scenario.name!r} runs under {', '.join(scenario.protocols)}, not {protocol}"
        )
    group_protocol = "consumer" if protocol == "consumer" else "classic"
    members = settings.members if settings.members is not None else scenario.members
    if members < 0:
        raise ScenarioError("members must be >= 0")
    if members != scenario.members:
        scenario = dataclasses.replace(scenario, members=members)
    topics = dict(scenario.topics)
    if settings.partitions is not None:
        if settings.partitions < 1:
            raise ScenarioError("partitions must be >= 1")
        topics = {t: settings.partitions for t in topics}
    static = settings.static if settings.static is not None else scenario.static
    _check_actions(scenario, members, topics)

    consumer_props, broker_props = split_configs(scenario, settings)
    _check_group_protocol(consumer_props, group_protocol)
    stated = {**consumer_props}
    try:
        broker = GroupCoordinatorConfig.from_properties(broker_props)
    except InvalidConfigError as error:  # Kafka's broker would not start
        raise SettingsError(str(error)) from None
    if group_protocol == "classic":
        _check_session_timeouts(scenario, consumer_props, broker)
    _check_strategies(consumer_props)
    _check_process_configs(consumer_props)
    for index, action in enumerate(scenario.actions):
        _check_strategies(action.config, f" (actions[{index}] config)")
        _check_process_configs(action.config, f" (actions[{index}] config)")

    assignor = settings.assignor or scenario.assignor
    if group_protocol == "classic":
        if "partition.assignment.strategy" in consumer_props:
            if settings.assignor is not None:
                raise ScenarioError(
                    f"scenario {scenario.name!r} sets partition.assignment.strategy itself"
                )
            chosen = str(consumer_props["partition.assignment.strategy"])
        else:
            chosen, selection = classic_strategy(protocol, assignor)
            consumer_props["partition.assignment.strategy"] = chosen
            consumer_props.setdefault("rebalance.protocol.selection", selection)
    else:
        configured = consumer_props.get("group.remote.assignor")
        if configured is not None:
            configured = str(configured)
            if settings.assignor is not None and settings.assignor != configured:
                raise SettingsError(
                    f"--assignor {settings.assignor} contradicts group.remote.assignor={configured}"
                )
        chosen = configured or assignor or broker.group_consumer_assignors[0]
        if chosen not in broker.group_consumer_assignors:
            raise ScenarioError(
                f"unknown server assignor {chosen!r}; the coordinator has "
                f"{', '.join(broker.group_consumer_assignors)}"
            )
        consumer_props["group.remote.assignor"] = chosen

    probe = dict(consumer_props)
    if static:  # the first member's properties, as it will start with them
        probe["group.instance.id"] = "instance-c00"
    _validate_consumer_props(group_protocol, probe)
    _check_restart_configs(scenario, probe, group_protocol)
    duration = (
        settings.duration_ms if settings.duration_ms is not None else scenario.total_duration_ms()
    )
    _check_duration(scenario, duration, from_command_line=settings.duration_ms is not None)
    return RunPlan(
        scenario=scenario,
        protocol=protocol,
        group_protocol=group_protocol,
        assignor=chosen,
        member_count=members,
        topics=topics,
        static=static,
        duration_ms=duration,
        broker=broker,
        consumer_props=consumer_props,
        stated_configs={**stated, **_non_default_broker_configs(broker)},
    )


# -- the checks of the module docstring ------------------------------------------------------


def _check_actions(scenario: Scenario, members: int, topics: Mapping[str, int]) -> None:
    """Every action's members exist at its time; sizes within the limits; known topics."""
    if members > MAX_MEMBERS:
        raise SettingsError(f"{members} members: the simulator runs at most {MAX_MEMBERS:,}")
    total = sum(topics.values())
    if total > MAX_PARTITIONS:
        raise SettingsError(f"{total:,} partitions: the simulator runs at most {MAX_PARTITIONS:,}")
    timed = sorted(
        ((start, index, action) for index, (start, action) in enumerate(scenario.timed_actions())),
        key=lambda item: (item[0], item[1]),
    )
    slots = members
    partitions = dict(topics)
    for start, index, action in timed:
        where = f"actions[{index}] ({action.action} at {start} ms)"
        kind = action.action
        if kind == "start":
            slots += action.count
            if slots > MAX_MEMBERS:
                raise SettingsError(
                    f"{where}: {slots} members; the simulator runs at most {MAX_MEMBERS:,}"
                )
        elif kind == "add_partitions":
            topic = action.topic or sorted(partitions)[0]
            if topic not in partitions:
                raise SettingsError(
                    f"{where}: unknown topic {topic!r}; the run has {', '.join(sorted(partitions))}"
                )
            partitions[topic] += action.count or partitions[topic]
            if sum(partitions.values()) > MAX_PARTITIONS:
                raise SettingsError(
                    f"{where}: {sum(partitions.values()):,} partitions; the simulator runs "
                    f"at most {MAX_PARTITIONS:,}"
                )
        elif kind in _MEMBER_ACTIONS:
            targets = action.members
            if isinstance(targets, str):  # "all"
                if slots == 0:
                    raise SettingsError(f"{where} aims at all members, but the group has none")
                continue
            for member in targets:
                if not -slots <= member < slots:
                    known = "none" if slots == 0 else f"members 0..{slots - 1}"
                    raise SettingsError(
                        f"{where} aims at member {member}, but the group has {known} then"
                    )


def _check_duration(scenario: Scenario, duration: int, *, from_command_line: bool) -> None:
    """The run lasts until the scenario's last action has ended."""
    last: tuple[int, int, str] | None = None
    for start, action in scenario.timed_actions():
        end = start + action.span_ms(scenario.members)
        if last is None or end > last[0]:
            last = (end, start, action.action)
    if last is not None and duration < last[0]:
        end, start, kind = last
        name = "--duration-ms" if from_command_line else "duration_ms"
        raise SettingsError(
            f"{name} {duration} ends before the scenario's last action: "
            f"{kind} at {start} ms ends at {end} ms"
        )


def _check_group_protocol(consumer_props: Mapping[str, Any], group_protocol: str) -> None:
    """``group.protocol`` given as a config must agree with the protocol chosen."""
    configured = consumer_props.get("group.protocol")
    if configured is not None and str(configured).strip().lower() not in ("classic", "consumer"):
        raise SettingsError(f"group.protocol must be classic or consumer, got {configured!r}")
    if configured is not None and str(configured).strip().lower() != group_protocol:
        wanted = "--protocol consumer" if group_protocol == "classic" else "--protocol eager"
        raise SettingsError(
            f"group.protocol={configured} contradicts the protocol of the run "
            f"(group.protocol={group_protocol}); use {wanted}"
            + (" or cooperative" if group_protocol == "consumer" else "")
        )


def _check_session_timeouts(
    scenario: Scenario, consumer_props: Mapping[str, Any], broker: GroupCoordinatorConfig
) -> None:
    """Kafka's ``ClassicGroupJoin``: INVALID_SESSION_TIMEOUT outside the broker's bounds."""
    low, high = broker.group_min_session_timeout_ms, broker.group_max_session_timeout_ms
    sources: list[tuple[str, Mapping[str, Any]]] = [("", consumer_props)]
    sources += [
        (f" (actions[{i}] config)", action.config) for i, action in enumerate(scenario.actions)
    ]
    for where, props in sources:
        if "session.timeout.ms" not in props:
            continue
        if str(props.get("group.protocol", "classic")).lower() == "consumer":
            continue
        value = _int_config(props, "session.timeout.ms")
        if not low <= value <= high:
            raise SettingsError(
                f"session.timeout.ms={value}{where} is outside the broker's "
                f"[group.min.session.timeout.ms={low}, group.max.session.timeout.ms={high}]: "
                "Kafka refuses the join with INVALID_SESSION_TIMEOUT"
            )
