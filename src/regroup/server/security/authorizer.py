"""An authorizer with the semantics of Kafka's ``StandardAuthorizer`` (KIP-801); pure, no I/O.

``authorize(principal, host, operation, resource_type, name)`` decides as
``StandardAuthorizerData.authorize`` does:

1. a principal listed in ``super.users`` is allowed everything;
2. the ACLs that apply to the resource are those of its type whose pattern
   covers the name: LITERAL with that name, LITERAL ``*`` (the wildcard), and
   PREFIXED with a prefix of the name;
3. if no ACL applies to the resource at all (whoever its principal), the
   answer is ``allow.everyone.if.no.acl.found`` (default false: denied);
4. of those, an ACL matches the request when its principal is the request's
   or ``User:*``, its host is the request's or ``*``, and its operation is the
   requested one or ALL;
5. DENY wins: one matching DENY denies, whatever ALLOWs match;
6. otherwise one matching ALLOW allows; an ALLOW of READ, WRITE, DELETE or
   ALTER also allows DESCRIBE, and an ALLOW of ALTER_CONFIGS also allows
   DESCRIBE_CONFIGS (Kafka's implied operations; a DENY implies nothing);
7. otherwise denied.

``authorize_any_topic_write`` is the question InitProducerId asks
(``Authorizer.authorizeByResourceType`` for WRITE on TOPIC): is there an
allowed WRITE on some topic pattern that no DENY covers.

The ACL set changes through ``add`` and ``remove`` only (CreateAcls/DeleteAcls).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from regroup.server.security.acl import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

__all__ = ["Authorizer", "AuthorizerConfig", "implied_by"]

_DESCRIBE_IMPLIED_BY = frozenset(
    {
        AclOperation.DESCRIBE,
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    }
)
_DESCRIBE_CONFIGS_IMPLIED_BY = frozenset(
    {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
)


def implied_by(operation: AclOperation) -> frozenset[AclOperation]:
    """The operations whose ALLOW allows ``operation`` (rule 6), ALL included."""
    if operation is AclOperation.DESCRIBE:
        return _DESCRIBE_IMPLIED_BY | {AclOperation.ALL}
    if operation is AclOperation.DESCRIBE_CONFIGS:
        return _DESCRIBE_CONFIGS_IMPLIED_BY | {AclOperation.ALL}
    return frozenset({operation, AclOperation.ALL})


@dataclass(frozen=True, slots=True)
class AuthorizerConfig:
    """``super.users`` (``User:a;User:b``) and ``allow.everyone.if.no.acl.found``."""

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False


class Authorizer:
    """The ACL set and the decisions over it.

    Rule 2 is answered from an index rather than a scan (Kafka's
    ``StandardAuthorizerData`` keeps its ACLs sorted for the same reason): per
    resource type, LITERAL ACLs by name (the wildcard ``*`` is one of them) and
    PREFIXED ACLs by prefix, so finding the ACLs of a resource costs one lookup
    per prefix length that some PREFIXED ACL has, whatever the number of ACLs.
    """

    def __init__(
        self, config: AuthorizerConfig | None = None, acls: Iterable[AclBinding] = ()
    ) -> None:
        self.config = config or AuthorizerConfig()
        #: Every ACL, in the order added (DescribeAcls and DeleteAcls answer in it).
        self._all: dict[AclBinding, None] = {}
        self._literal: dict[tuple[ResourceType, str], dict[AclBinding, None]] = {}
        self._prefixed: dict[tuple[ResourceType, str], dict[AclBinding, None]] = {}
        #: Per resource type, how many PREFIXED ACLs have a prefix of each length.
        self._prefix_lengths: dict[ResourceType, dict[int, int]] = {}
        #: Bumped by every change of the set: a decision cached with it is still valid
        #: while it has not moved.
        self.version = 0
        self.add(acls)

    # -- the ACL set -------------------------------------------------------------------

    def acls(self, flt: AclBindingFilter | None = None) -> list[AclBinding]:
        return [acl for acl in self._all if flt is None or flt.matches(acl)]

    def add(self, acls: Iterable[AclBinding]) -> None:
        self.version += 1
        for acl in acls:
            if acl in self._all:
                continue
            self._all[acl] = None
            key = (acl.resource_type, acl.resource_name)
            if acl.pattern_type is PatternType.PREFIXED:
                self._prefixed.setdefault(key, {})[acl] = None
                lengths = self._prefix_lengths.setdefault(acl.resource_type, {})
                lengths[len(acl.resource_name)] = lengths.get(len(acl.resource_name), 0) + 1
            else:
                self._literal.setdefault(key, {})[acl] = None

    def remove(self, flt: AclBindingFilter) -> list[AclBinding]:
        gone = self.acls(flt)
        self.version += 1
        for acl in gone:
            del self._all[acl]
            key = (acl.resource_type, acl.resource_name)
            index = self._prefixed if acl.pattern_type is PatternType.PREFIXED else self._literal
            del index[key][acl]
            if not index[key]:
                del index[key]
            if acl.pattern_type is PatternType.PREFIXED:
                lengths = self._prefix_lengths[acl.resource_type]
                lengths[len(acl.resource_name)] -= 1
                if not lengths[len(acl.resource_name)]:
                    del lengths[len(acl.resource_name)]
        return gone

    def _applying(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        """Rule 2: the ACLs whose pattern covers the resource."""
        found: list[AclBinding] = []
        literal = self._literal
        found.extend(literal.get((resource_type, name), ()))
        if name != WILDCARD:
            found.extend(literal.get((resource_type, WILDCARD), ()))
        prefixed = self._prefixed
        for length in self._prefix_lengths.get(resource_type, {}):
            if length <= len(name):
                found.extend(prefixed.get((resource_type, name[:length]), ()))
        return found

    # -- decisions ---------------------------------------------------------------------

    def is_super_user(self, principal: str) -> bool:
        return principal in self.config.super_users

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if principal in self.config.super_users:  # rule 1
            return True
        applying = self._applying(resource_type, name)  # rule 2
        if not applying:  # rule 3
            return self.config.allow_everyone_if_no_acl_found
        mine = [acl for acl in applying if _entry_matches(acl, principal, host)]  # rule 4
        deny_ops = {operation, AclOperation.ALL}
        if any(a.permission is AclPermissionType.DENY and a.operation in deny_ops for a in mine):
            return False  # rule 5
        allow_ops = implied_by(operation)
        return any(
            a.permission is AclPermissionType.ALLOW and a.operation in allow_ops for a in mine
        )  # rules 6-7

    def authorize_any_topic_write(self, principal: str, host: str) -> bool:
        """WRITE on some topic (``authorizeByResourceType``), for InitProducerId."""
        if principal in self.config.super_users:
            return True
        topic_acls = [a for a in self._all if a.resource_type is ResourceType.TOPIC]
        if not topic_acls:
            return self.config.allow_everyone_if_no_acl_found
        ops = {AclOperation.WRITE, AclOperation.ALL}
        mine = [a for a in topic_acls if _entry_matches(a, principal, host) and a.operation in ops]
        denies = [a for a in mine if a.permission is AclPermissionType.DENY]
        return any(
            a.permission is AclPermissionType.ALLOW and not any(_covers(d, a) for d in denies)
            for a in mine
        )


def _entry_matches(acl: AclBinding, principal: str, host: str) -> bool:
    return acl.principal in (principal, WILDCARD_PRINCIPAL) and acl.host in (host, WILDCARD)


def _covers(deny: AclBinding, allow: AclBinding) -> bool:
    """Whether ``deny``'s pattern covers every resource ``allow``'s pattern names."""
    if deny.pattern_type is PatternType.LITERAL and deny.resource_name == WILDCARD:
        return True
    if deny.pattern_type is PatternType.PREFIXED:
        return allow.resource_name.startswith(deny.resource_name)
    return allow.pattern_type is PatternType.LITERAL and allow.resource_name == deny.resource_name
