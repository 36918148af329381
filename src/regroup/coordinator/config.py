"""The group coordinator's broker configuration, with Kafka's names and defaults.

Kafka: ``GroupCoordinatorConfig``. Classic groups: ``group.min.session.timeout.ms``
(6000), ``group.max.session.timeout.ms`` (1800000),
``group.initial.rebalance.delay.ms`` (3000), ``group.max.size``
(Integer.MAX_VALUE), and the internal new-member join timeout (300000).
KIP-848 groups: ``group.consumer.session.timeout.ms`` (45000) within
[``group.consumer.min.session.timeout.ms`` 45000,
``group.consumer.max.session.timeout.ms`` 60000],
``group.consumer.heartbeat.interval.ms`` (5000) within [5000, 15000] and below
the session timeout, ``group.consumer.max.size`` (Integer.MAX_VALUE),
``group.consumer.assignors`` (uniform, range; the first is the default) and
``group.consumer.migration.policy`` (BIDIRECTIONAL). Offsets:
``offsets.retention.minutes`` (10080).

regroup's own: ``regroup.consumer.semantics`` (``kafka``, the default, or
``kip-848``): where KIP-848 as designed and Apache Kafka 4.0 as shipped differ,
which one a KIP-848 group follows (``ConsumerSemantics``; a group may override
it with the group config of the same name). docs/kafka-differences.md lists
every difference it switches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import Final

__all__ = [
    "HEARTBEAT_INTERVAL_CONFIG",
    "SEMANTICS_CONFIG",
    "SESSION_TIMEOUT_CONFIG",
    "ConsumerGroupMigrationPolicy",
    "ConsumerSemantics",
    "EffectiveGroupConfig",
    "GroupCoordinatorConfig",
    "InvalidConfigError",
]

INT32_MAX = 2**31 - 1


#: The group configs of KIP-848 groups (``consumer.group_configs``).
SESSION_TIMEOUT_CONFIG: Final = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL_CONFIG: Final = "consumer.heartbeat.interval.ms"
SEMANTICS_CONFIG: Final = "regroup.consumer.semantics"


class InvalidConfigError(ValueError):
    """A configuration value outside what Kafka accepts (one-line message)."""


class ConsumerGroupMigrationPolicy(Enum):
    """``group.consumer.migration.policy`` (Kafka ``ConsumerGroupMigrationPolicy``)."""

    BIDIRECTIONAL = "BIDIRECTIONAL"
    UPGRADE = "UPGRADE"
    DOWNGRADE = "DOWNGRADE"
    DISABLED = "DISABLED"

    @property
    def is_upgrade_enabled(self) -> bool:
        """A classic group may become a consumer group (``consumer.upgrade``)."""
        return self in (
            ConsumerGroupMigrationPolicy.BIDIRECTIONAL,
            ConsumerGroupMigrationPolicy.UPGRADE,
        )

    @property
    def is_downgrade_enabled(self) -> bool:
        """A consumer group may become a classic group (``consumer.downgrade``)."""
        return self in (
            ConsumerGroupMigrationPolicy.BIDIRECTIONAL,
            ConsumerGroupMigrationPolicy.DOWNGRADE,
        )


class ConsumerSemantics(Enum):
    """``regroup.consumer.semantics``: Apache Kafka 4.0's behaviour or KIP-848's design.

    Each difference the switch covers is a property here, so a caller asks what
    it needs ("does a blocked member take the target epoch?") rather than which
    mode is on. The properties are cached on the two members: a heartbeat asks
    several of them.
    """

    KAFKA = "kafka"
    KIP_848 = "kip-848"

    @classmethod
    def parse(cls, raw: object) -> ConsumerSemantics:
        """A config value (case-insensitive); ``InvalidConfigError`` for anything else."""
        text = str(raw).strip().lower()
        for semantics in cls:
            if semantics.value == text:
                return semantics
        raise InvalidConfigError(
            f"regroup.consumer.semantics must be kafka or kip-848, got {raw!r}"
        )

    @cached_property
    def is_kafka(self) -> bool:
        return self is ConsumerSemantics.KAFKA

    @cached_property
    def blocked_member_takes_target_epoch(self) -> bool:
        """A member with only partitions others still hold moves to the target epoch.

        Kafka ``CurrentAssignmentBuilder.computeNextAssignment`` (UNRELEASED_PARTITIONS
        at the target epoch); the KIP's case study keeps it at its epoch.
        """
        return self.is_kafka

    @cached_property
    def previous_epoch_always_shifts(self) -> bool:
        """Every reconciliation step sets previous := current (Kafka ``updateMemberEpoch``),
        not only those that change the epoch."""
        return self.is_kafka

    @cached_property
    def assignor_change_bumps_epoch(self) -> bool:
        """A member changing its ServerAssignor bumps the group epoch (the KIP; Kafka 4.0
        only writes the member record)."""
        return not self.is_kafka

    @cached_property
    def regex_resolved_at_once(self) -> bool:
        """A new regex is resolved inside the heartbeat that subscribes and the epoch bumped
        there (the design's simplification); Kafka resolves it asynchronously and bumps
        the epoch when the resolution lands (``coordinator.consumer.regex_refresh``)."""
        return not self.is_kafka

    @cached_property
    def every_join_bumps_epoch(self) -> bool:
        """A new member always bumps the group epoch (the KIP: "A new member joins");
        Kafka bumps only when the subscribed topic names change (so not for a member
        that subscribes by a regex not resolved yet, or to nothing)."""
        return not self.is_kafka

    @cached_property
    def names_and_regex_exclusive(self) -> bool:
        """SubscribedTopicNames and SubscribedTopicRegex may not both be non-empty, and
        setting one clears the other (the KIP); Kafka keeps both and subscribes to
        their union."""
        return not self.is_kafka


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig:
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = INT32_MAX
    classic_group_new_member_join_timeout_ms: int = 300000
    group_consumer_session_timeout_ms: int = 45000
    group_consumer_min_session_timeout_ms: int = 45000
    group_consumer_max_session_timeout_ms: int = 60000
    group_consumer_heartbeat_interval_ms: int = 5000
    group_consumer_min_heartbeat_interval_ms: int = 5000
    group_consumer_max_heartbeat_interval_ms: int = 15000
    group_consumer_max_size: int = INT32_MAX
    group_consumer_assignors: tuple[str, ...] = ("uniform", "range")
    group_consumer_migration_policy: str = "BIDIRECTIONAL"
    offsets_retention_minutes: int = 10080
    regroup_consumer_semantics: str = ConsumerSemantics.KAFKA.value

    def __post_init__(self) -> None:
        """Kafka's checks at broker start-up (``GroupCoordinatorConfig``'s constructor and
        its ``ConfigDef`` bounds): a broker configured so does not start, so every message
        names the settings and their values."""
        for name in (
            "group_min_session_timeout_ms",
            "group_consumer_session_timeout_ms",
            "group_consumer_min_session_timeout_ms",
            "group_consumer_max_session_timeout_ms",
            "group_consumer_heartbeat_interval_ms",
            "group_consumer_min_heartbeat_interval_ms",
            "group_consumer_max_heartbeat_interval_ms",
            "offsets_retention_minutes",
        ):
            value = getattr(self, name)
            self._check(value >= 1, f"{name.replace('_', '.')}={value} must be >= 1")
        self._at_most("group_min_session_timeout_ms", "group_max_session_timeout_ms")
        self._check(self.group_max_size >= 1, "group.max.size must be >= 1")
        self._check(
            self.group_initial_rebalance_delay_ms >= 0,
            "group.initial.rebalance.delay.ms must be >= 0",
        )
        for kind in ("session_timeout_ms", "heartbeat_interval_ms"):
            self._at_most(f"group_consumer_min_{kind}", f"group_consumer_max_{kind}")
            self._at_most(f"group_consumer_min_{kind}", f"group_consumer_{kind}")
            self._at_most(f"group_consumer_{kind}", f"group_consumer_max_{kind}")
        self._check(
            self.group_consumer_heartbeat_interval_ms < self.group_consumer_session_timeout_ms,
            f"group.consumer.heartbeat.interval.ms={self.group_consumer_heartbeat_interval_ms} "
            "must be below group.consumer.session.timeout.ms="
            f"{self.group_consumer_session_timeout_ms}",
        )
        self._check(self.group_consumer_max_size >= 1, "group.consumer.max.size must be >= 1")
        self._check(bool(self.group_consumer_assignors), "group.consumer.assignors is empty")
        _check_assignors(self.group_consumer_assignors)
        self._check(
            self.group_consumer_migration_policy in ConsumerGroupMigrationPolicy.__members__,
            "group.consumer.migration.policy must be BIDIRECTIONAL, UPGRADE, DOWNGRADE or DISABLED",
        )
        ConsumerSemantics.parse(self.regroup_consumer_semantics)

    @property
    def consumer_semantics(self) -> ConsumerSemantics:
        """``regroup.consumer.semantics`` as an enum (the broker-wide default)."""
        return ConsumerSemantics.parse(self.regroup_consumer_semantics)

    @property
    def migration_policy(self) -> ConsumerGroupMigrationPolicy:
        return ConsumerGroupMigrationPolicy[self.group_consumer_migration_policy]

    def _at_most(self, low: str, high: str) -> None:
        """``low <= high``, else an error naming both settings and their values, the
        bound last (``... is above group.max.session.timeout.ms=1800000``)."""
        low_value, high_value = getattr(self, low), getattr(self, high)
        low_name, high_name = low.replace("_", "."), high.replace("_", ".")
        if "_max_" in high:
            message = f"{low_name}={low_value} is above {high_name}={high_value}"
        else:
            message = f"{high_name}={high_value} is below {low_name}={low_value}"
        self._check(low_value <= high_value, message)

    @staticmethod
    def _check(condition: bool, message: str) -> None:
        if not condition:
            raise InvalidConfigError(message)

    @classmethod
    def kafka_names(cls) -> dict[str, str]:
        """Kafka config name -> field name (``group.max.size`` -> ``group_max_size``)."""
        return {f.name.replace("_", "."): f.name for f in dataclasses.fields(cls)}

    @classmethod
    def from_properties(cls, properties: Mapping[str, object]) -> GroupCoordinatorConfig:
        """Build from Kafka-named properties; unknown names are an error."""
        names = cls.kafka_names()
        values: dict[str, object] = {}
        for key, raw in properties.items():
            field_name = names.get(key)
            if field_name is None:
                raise InvalidConfigError(f"unknown broker config {key!r}")
            if field_name == "group_consumer_assignors":
                values[field_name] = _names(key, raw)
            elif field_name == "group_consumer_migration_policy":
                values[field_name] = str(raw).upper()
            elif field_name == "regroup_consumer_semantics":
                values[field_name] = ConsumerSemantics.parse(raw).value
            else:
                values[field_name] = _integer(key, raw)
        # Each value has its field's type now; the constructor checks them together.
        build: Callable[..., GroupCoordinatorConfig] = cls
        return build(**values)


@dataclass(frozen=True, slots=True)
class EffectiveGroupConfig:
    """A group's configs as its heartbeats read them: its overrides over the broker's.

    Parsed when the overrides or the broker config change, not per request:
    ``group_config`` keeps one per group and parses again only when the group's
    overrides (a map that replay replaces whole, never edits) or the broker config
    are other objects than the ones it was parsed from.
    """

    overrides: Mapping[str, str] | None
    broker: GroupCoordinatorConfig
    session_timeout_ms: int
    heartbeat_interval_ms: int
    semantics: ConsumerSemantics

    @classmethod
    def parse(
        cls, overrides: Mapping[str, str] | None, broker: GroupCoordinatorConfig
    ) -> EffectiveGroupConfig:
        given = overrides or {}
        session = given.get(SESSION_TIMEOUT_CONFIG)
        interval = given.get(HEARTBEAT_INTERVAL_CONFIG)
        semantics = given.get(SEMANTICS_CONFIG)
        return cls(
            overrides,
            broker,
            broker.group_consumer_session_timeout_ms if session is None else int(session),
            broker.group_consumer_heartbeat_interval_ms if interval is None else int(interval),
            broker.consumer_semantics if semantics is None else ConsumerSemantics.parse(semantics),
        )


def _check_assignors(names: Iterable[object]) -> None:
    """Every ``group.consumer.assignors`` entry is a server assignor regroup has: Kafka's
    broker instantiates each class at start-up (``getConfiguredInstances``) and does not
    start with one it cannot load."""
    # Imported here, not at the top: the registry imports every assignor implementation.
    from regroup.assignors.consumer.registry import KAFKA_CLASS_NAMES, SERVER_ASSIGNOR_NAMES

    for name in names:
        if not isinstance(name, str) or KAFKA_CLASS_NAMES.get(name, name) not in (
            SERVER_ASSIGNOR_NAMES
        ):
            raise InvalidConfigError(
                f"group.consumer.assignors: unknown server assignor {name!r}; known: "
                f"{', '.join(SERVER_ASSIGNOR_NAMES)} (or Kafka's class names)"
            )


def _names(key: str, raw: object) -> tuple[object, ...]:
    """A list of names: a comma-separated string, or any sequence of names."""
    if isinstance(raw, str):
        return tuple(v.strip() for v in raw.split(",") if v.strip())
    if isinstance(raw, Iterable):
        return tuple(raw)
    raise InvalidConfigError(f"{key} must be a list of names, got {raw!r}")


def _integer(key: str, raw: object) -> int:
    if isinstance(raw, int | float | str | bytes):
        try:
            return int(raw)
        except (ValueError, OverflowError):
            pass
    raise InvalidConfigError(f"{key} must be an integer, got {raw!r}")
