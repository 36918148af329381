"""Group configs of KIP-848 groups: IncrementalAlterGroupConfigs, DescribeGroupConfigs, values.

KIP-848, "Dynamic Group Configuration" (Kafka ``GroupConfig``,
``GroupConfigManager``): ``consumer.session.timeout.ms`` and
``consumer.heartbeat.interval.ms`` per group, each within the broker's
``group.consumer.min/max.*`` bounds, and the heartbeat interval below the
session timeout (INVALID_CONFIG otherwise; an unknown name is INVALID_CONFIG
too; an empty group id INVALID_GROUP_ID). The overrides are a record
(ConsumerGroupConfig) and take effect at each member's next heartbeat; a group's
overrides are deleted with the group (``txn.delete_group``).

regroup adds ``regroup.consumer.semantics`` (``kafka`` or ``kip-848``; default:
the broker's config of the same name): which of Apache Kafka 4.0's behaviour or
KIP-848's design the group follows where they differ (``ConsumerSemantics``).
"""

from __future__ import annotations

from collections.abc import Hashable

from regroup.coordinator.config import (
    HEARTBEAT_INTERVAL_CONFIG,
    SEMANTICS_CONFIG,
    SESSION_TIMEOUT_CONFIG,
    ConsumerSemantics,
    EffectiveGroupConfig,
    InvalidConfigError,
)
from regroup.coordinator.consumer import records
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.consumer import (
    CONFIG_OP_DELETE,
    CONFIG_OP_SET,
    DescribedGroupConfig,
    DescribeGroupConfigsRequest,
    DescribeGroupConfigsResponse,
    IncrementalAlterGroupConfigsRequest,
    IncrementalAlterGroupConfigsResponse,
)

__all__ = [
    "HEARTBEAT_INTERVAL_CONFIG",
    "SEMANTICS_CONFIG",
    "SESSION_TIMEOUT_CONFIG",
    "EffectiveGroupConfig",
    "consumer_semantics",
    "group_config",
    "handle_alter_configs",
    "handle_describe_configs",
    "heartbeat_interval_ms",
    "session_timeout_ms",
]


def group_config(state: GroupCoordinatorState, group_id: str) -> EffectiveGroupConfig:
    """The group's effective configs (``EffectiveGroupConfig``), parsed once per change."""
    overrides = state.consumer.group_configs.get(group_id)
    parsed = state.consumer.effective_configs.get(group_id)
    if parsed is None or parsed.overrides is not overrides or parsed.broker is not state.config:
        parsed = EffectiveGroupConfig.parse(overrides, state.config)
        state.consumer.effective_configs[group_id] = parsed
    return parsed


def consumer_semantics(state: GroupCoordinatorState, group_id: str) -> ConsumerSemantics:
    """The group's ``regroup.consumer.semantics``: its override, else the broker's."""
    return group_config(state, group_id).semantics


def session_timeout_ms(state: GroupCoordinatorState, group_id: str) -> int:
    """The group's session timeout: its override, else ``group.consumer.session.timeout.ms``."""
    return group_config(state, group_id).session_timeout_ms


def heartbeat_interval_ms(state: GroupCoordinatorState, group_id: str) -> int:
    """The group's heartbeat interval: its override, else the broker's."""
    return group_config(state, group_id).heartbeat_interval_ms


def _bounds(state: GroupCoordinatorState) -> dict[str, tuple[int, int, int]]:
    """Config name -> (min, max, broker default)."""
    config = state.config
    return {
        SESSION_TIMEOUT_CONFIG: (
            config.group_consumer_min_session_timeout_ms,
            config.group_consumer_max_session_timeout_ms,
            config.group_consumer_session_timeout_ms,
        ),
        HEARTBEAT_INTERVAL_CONFIG: (
            config.group_consumer_min_heartbeat_interval_ms,
            config.group_consumer_max_heartbeat_interval_ms,
            config.group_consumer_heartbeat_interval_ms,
        ),
    }


def _altered(
    state: GroupCoordinatorState, req: IncrementalAlterGroupConfigsRequest
) -> dict[str, str]:
    bounds = _bounds(state)
    configs = dict(state.consumer.group_configs.get(req.resource_name, {}))
    for entry in req.configs:
        if entry.name == SEMANTICS_CONFIG and entry.config_operation == CONFIG_OP_SET:
            try:
                configs[entry.name] = ConsumerSemantics.parse(entry.value or "").value
            except InvalidConfigError as exc:
                raise KafkaProtocolError(ErrorCode.INVALID_CONFIG, str(exc)) from None
            continue
        if entry.name == SEMANTICS_CONFIG and entry.config_operation == CONFIG_OP_DELETE:
            configs.pop(entry.name, None)
            continue
        if entry.name not in bounds:
            raise KafkaProtocolError(
                ErrorCode.INVALID_CONFIG, f"Unknown group config name: {entry.name}"
            )
        if entry.config_operation == CONFIG_OP_DELETE:
            configs.pop(entry.name, None)
        elif entry.config_operation == CONFIG_OP_SET:
            low, high, _ = bounds[entry.name]
            try:
                value = int(entry.value or "")
            except ValueError:
                raise KafkaProtocolError(
                    ErrorCode.INVALID_CONFIG, f"{entry.name} must be an integer"
                ) from None
            if not low <= value <= high:
                raise KafkaProtocolError(
                    ErrorCode.INVALID_CONFIG,
                    f"{entry.name} must be between {low} and {high}, got {value}",
                )
            configs[entry.name] = str(value)
        else:
            raise KafkaProtocolError(
                ErrorCode.INVALID_CONFIG,
                f"Operation {entry.config_operation} is not supported for {entry.name}",
            )
    session = int(configs.get(SESSION_TIMEOUT_CONFIG, bounds[SESSION_TIMEOUT_CONFIG][2]))
    interval = int(configs.get(HEARTBEAT_INTERVAL_CONFIG, bounds[HEARTBEAT_INTERVAL_CONFIG][2]))
    if interval >= session:
        raise KafkaProtocolError(
            ErrorCode.INVALID_CONFIG,
            "consumer.heartbeat.interval.ms must be less than consumer.session.timeout.ms",
        )
    return configs


def handle_alter_configs(
    state: GroupCoordinatorState,
    token: Hashable,
    req: IncrementalAlterGroupConfigsRequest,
    now_ms: int,
) -> CoordinatorResult:
    if not req.resource_name:
        return CoordinatorResult().reply(
            token,
            IncrementalAlterGroupConfigsResponse(
                ErrorCode.INVALID_GROUP_ID, req.resource_name, "The group id is empty."
            ),
        )
    try:
        configs = _altered(state, req)
    except KafkaProtocolError as exc:
        return CoordinatorResult().reply(
            token, IncrementalAlterGroupConfigsResponse(exc.code, req.resource_name, exc.message)
        )
    result = CoordinatorResult()
    if not req.validate_only and configs != state.consumer.group_configs.get(req.resource_name, {}):
        record = records.config_record(req.resource_name, configs)
        result.records.append(record)
        records.replay(state, record)
    return result.reply(
        token, IncrementalAlterGroupConfigsResponse(ErrorCode.NONE, req.resource_name)
    )


def handle_describe_configs(
    state: GroupCoordinatorState, token: Hashable, req: DescribeGroupConfigsRequest, now_ms: int
) -> CoordinatorResult:
    overrides = state.consumer.group_configs.get(req.resource_name, {})
    defaults = {name: str(default) for name, (_, _, default) in _bounds(state).items()}
    defaults[SEMANTICS_CONFIG] = state.config.consumer_semantics.value
    described = tuple(
        DescribedGroupConfig(name, overrides.get(name, default), name not in overrides)
        for name, default in sorted(defaults.items())
    )
    return CoordinatorResult().reply(
        token, DescribeGroupConfigsResponse(ErrorCode.NONE, req.resource_name, configs=described)
    )
