"""Kafka's ACL model: resource patterns, access control entries, bindings and filters.

The enums carry Kafka's wire codes (``org.apache.kafka.common.resource.ResourceType``,
``PatternType``, ``org.apache.kafka.common.acl.AclOperation``,
``AclPermissionType``), so DescribeAcls/CreateAcls/DeleteAcls use them as
they are. A binding is one ACL: a resource pattern (type, name, LITERAL or
PREFIXED; the LITERAL name ``*`` is the wildcard) and an entry (principal
``User:name`` or ``User:*``, host or ``*``, operation, ALLOW or DENY). A filter
is a binding whose parts may be "any" (Kafka's ``AclBindingFilter``); its
pattern type MATCH selects every pattern that would apply to a literal name
(``ResourcePatternFilter.matches``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "InvalidAclError",
    "PatternType",
    "ResourceType",
    "parse_acl_line",
    "parse_acls",
    "validate_binding",
]

#: The one CLUSTER resource's name (Kafka's ``Resource.CLUSTER_NAME``).
CLUSTER_NAME = "kafka-cluster"
#: The literal resource name and principal name that match everything.
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class InvalidAclError(ValueError):
    """A binding Kafka would refuse (``AclControlManager.validateNewAcl``)."""


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def applies_to(self, name: str) -> bool:
        """Whether this binding's pattern covers the resource ``name``."""
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)

    def __str__(self) -> str:
        return (
            f"{self.permission.name} {self.principal} {self.operation.name} "
            f"{self.resource_type.name} {self.pattern_type.name} {self.resource_name} {self.host}"
        )


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """``None`` and the ANY codes match anything (Kafka's ``AclBindingFilter``)."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if not self._pattern_matches(acl):
            return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission is AclPermissionType.ANY or self.permission == acl.permission

    def _pattern_matches(self, acl: AclBinding) -> bool:
        kind, name = self.pattern_type, self.resource_name
        if kind is PatternType.MATCH:
            return name is None or acl.applies_to(name)
        if kind is not PatternType.ANY and kind != acl.pattern_type:
            return False
        return name is None or name == acl.resource_name


def validate_binding(acl: AclBinding) -> None:
    """Refuse what Kafka refuses in CreateAcls (``InvalidAclError`` says why)."""
    if acl.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
        raise InvalidAclError(f"Invalid resourceType {acl.resource_type.name}")
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAclError(f"Invalid patternType {acl.pattern_type.name}")
    if acl.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
        raise InvalidAclError(f"Invalid operation {acl.operation.name}")
    if acl.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        raise InvalidAclError(f"Invalid permissionType {acl.permission.name}")
    kind, sep, name = acl.principal.partition(":")
    if not sep or not kind or not name:
        raise InvalidAclError(f"Could not parse principal from `{acl.principal}`")
    if not acl.resource_name:
        raise InvalidAclError("Resource name should not be empty")
    if acl.resource_type is ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        raise InvalidAclError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not acl.host:
        raise InvalidAclError("Invalid host")


def _enum(cls: type[IntEnum], text: str, what: str) -> IntEnum:
    try:
        return cls[text.upper()]
    except KeyError:
        names = ", ".join(m.name for m in cls if m.name not in ("UNKNOWN", "ANY", "MATCH"))
        raise InvalidAclError(f"unknown {what} {text!r} (one of {names})") from None


def parse_acl_line(line: str) -> AclBinding:
    """``PERMISSION PRINCIPAL OPERATION RESOURCE-TYPE PATTERN-TYPE NAME [HOST]``."""
    parts = line.split()
    if len(parts) not in (6, 7):
        raise InvalidAclError(
            "expected PERMISSION PRINCIPAL OPERATION RESOURCE-TYPE PATTERN-TYPE NAME [HOST]"
        )
    permission, principal, operation, resource_type, pattern_type, name = parts[:6]
    acl = AclBinding(
        resource_type=ResourceType(_enum(ResourceType, resource_type, "resource type")),
        resource_name=name,
        pattern_type=PatternType(_enum(PatternType, pattern_type, "pattern type")),
        principal=principal,
        host=parts[6] if len(parts) == 7 else WILDCARD,
        operation=AclOperation(_enum(AclOperation, operation, "operation")),
        permission=AclPermissionType(_enum(AclPermissionType, permission, "permission")),
    )
    validate_binding(acl)
    return acl


def parse_acls(text: str, source: str = "<acls>") -> list[AclBinding]:
    """An ACL file: one ``parse_acl_line`` a line, ``#`` comments; errors name the line."""
    acls: list[AclBinding] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            acls.append(parse_acl_line(line))
        except InvalidAclError as exc:
            raise InvalidAclError(f"{source}:{number}: {exc}") from None
    return acls
