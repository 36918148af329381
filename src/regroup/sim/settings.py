"""What a run is asked for (``Settings``), what it resolves to (``RunPlan``), what it gives back.

``Settings`` is a scenario plus the command line's choices; ``plan_run``
resolves them once, before anything runs, into a ``RunPlan``: the protocol,
the assignor, the member count, the topics, the coordinator's configuration
and the consumer properties every member starts from. Every refusal (a
scenario not written for the protocol, an assignor that cannot run it, a bad
Kafka config) is a ``ScenarioError`` raised here, so a bad command line fails
before the first event.

Kafka configs are split by name: the ``group.*`` broker configs go to the
coordinator (``GroupCoordinatorConfig``), everything else to the consumers.
Where a scenario sets a consumer's session timeout below the broker's default
``group.min.session.timeout.ms`` the bound is lowered to it, as an operator
running such a group would configure the broker.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from regroup.assignors.classic.api import RebalanceProtocol
from regroup.classic.member_config import ClassicMemberConfig
from regroup.coordinator.config import GroupCoordinatorConfig, InvalidConfigError
from regroup.events import Event
from regroup.sim.configs import PROCESS_CONFIGS, consumer_member_config
from regroup.sim.metrics import RunMetrics
from regroup.sim.scenario import Scenario, ScenarioError

__all__ = ["GROUP_ID", "RunPlan", "RunResult", "Settings", "plan_run"]

GROUP_ID = "sim-group"


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


def _int_config(props: Mapping[str, Any], key: str) -> int:
    """``props[key]`` as an int, or the one-line error Kafka's ``ConfigDef`` would give."""
    try:
        return int(props[key])
    except (TypeError, ValueError):
        raise ScenarioError(f"{key} must be an integer, got {props[key]!r}") from None


def _widen_broker_bounds(consumer_props: dict[str, Any], broker_props: dict[str, Any]) -> None:
    """Let the broker's min/max bounds admit the timeouts the scenario asks for."""
    if "group.consumer.session.timeout.ms" in broker_props:
        value = _int_config(broker_props, "group.consumer.session.timeout.ms")
        broker_props.setdefault("group.consumer.min.session.timeout.ms", min(value, 45000))
        broker_props.setdefault("group.consumer.max.session.timeout.ms", max(value, 60000))
    if "group.consumer.heartbeat.interval.ms" in broker_props:
        value = _int_config(broker_props, "group.consumer.heartbeat.interval.ms")
        broker_props.setdefault("group.consumer.min.heartbeat.interval.ms", min(value, 5000))
        broker_props.setdefault("group.consumer.max.heartbeat.interval.ms", max(value, 15000))
    if "group.min.session.timeout.ms" not in broker_props and "session.timeout.ms" in (
        consumer_props
    ):
        broker_props["group.min.session.timeout.ms"] = min(
            6000, _int_config(consumer_props, "session.timeout.ms")
        )


def _validate_consumer_props(group_protocol: str, props: Mapping[str, Any]) -> None:
    """Build the member configuration once, so a bad consumer config is refused up front."""
    try:
        if group_protocol == "classic":
            ClassicMemberConfig.from_properties(
                {k: v for k, v in props.items() if k not in PROCESS_CONFIGS}
            )
        else:
            consumer_member_config(GROUP_ID, "probe", props)
    except ValueError as error:
        raise ScenarioError(str(error)) from None


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

    consumer_props, broker_props = split_configs(scenario, settings)
    _widen_broker_bounds(consumer_props, broker_props)
    try:
        broker = GroupCoordinatorConfig.from_properties(broker_props)
    except InvalidConfigError as error:
        raise ScenarioError(str(error)) from None

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
        chosen = assignor or broker.group_consumer_assignors[0]
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
    duration = (
        settings.duration_ms if settings.duration_ms is not None else scenario.total_duration_ms()
    )
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
    )
