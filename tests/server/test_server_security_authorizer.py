"""The authorizer's semantics (Kafka's StandardAuthorizer), by example and by property."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.server.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourceType,
    parse_acl_line,
    parse_acls,
)
from regroup.server.security.authorizer import Authorizer, AuthorizerConfig, implied_by

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
OPS = [op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)]
TYPES = [ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER]
PRINCIPALS = ["User:alice", "User:bob", "User:*"]
NAMES = ["shop", "shop-eu", "orders", "*", "sh"]


def acl(
    permission: AclPermissionType,
    principal: str,
    operation: AclOperation,
    resource_type: ResourceType = ResourceType.GROUP,
    name: str = "shop",
    pattern: PatternType = PatternType.LITERAL,
    host: str = "*",
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def allowed(authorizer: Authorizer, principal: str, op: AclOperation, name: str = "shop") -> bool:
    return authorizer.authorize(principal, "10.0.0.1", op, ResourceType.GROUP, name)


def test_no_acl_on_a_resource_denies_unless_allow_everyone_if_no_acl_found() -> None:
    assert not allowed(Authorizer(), "User:alice", AclOperation.READ)
    everyone = Authorizer(AuthorizerConfig(allow_everyone_if_no_acl_found=True))
    assert allowed(everyone, "User:alice", AclOperation.READ)
    # Once any ACL names the resource, allow.everyone no longer applies to it.
    everyone.add([acl(ALLOW, "User:bob", AclOperation.READ)])
    assert not allowed(everyone, "User:alice", AclOperation.READ)
    assert allowed(everyone, "User:alice", AclOperation.READ, "other")


def test_literal_prefixed_and_wildcard_patterns() -> None:
    authorizer = Authorizer(
        acls=[
            acl(ALLOW, "User:alice", AclOperation.READ, name="shop-", pattern=PatternType.PREFIXED),
            acl(ALLOW, "User:bob", AclOperation.READ, name="*"),
            acl(ALLOW, "User:*", AclOperation.DESCRIBE, name="public"),
        ]
    )
    assert allowed(authorizer, "User:alice", AclOperation.READ, "shop-eu")
    assert not allowed(authorizer, "User:alice", AclOperation.READ, "shop")
    assert allowed(authorizer, "User:bob", AclOperation.READ, "anything")
    assert allowed(authorizer, "User:carol", AclOperation.DESCRIBE, "public")
    assert not allowed(authorizer, "User:carol", AclOperation.READ, "public")


def test_implied_operations_and_hosts() -> None:
    authorizer = Authorizer(
        acls=[
            acl(ALLOW, "User:alice", AclOperation.READ),
            acl(ALLOW, "User:bob", AclOperation.ALL, host="10.0.0.2"),
        ]
    )
    assert allowed(authorizer, "User:alice", AclOperation.DESCRIBE)
    assert not allowed(authorizer, "User:alice", AclOperation.DELETE)
    assert not allowed(authorizer, "User:bob", AclOperation.READ)  # another host
    assert authorizer.authorize(
        "User:bob", "10.0.0.2", AclOperation.DELETE, ResourceType.GROUP, "shop"
    )


def test_a_deny_does_not_imply_describe() -> None:
    authorizer = Authorizer(
        acls=[
            acl(ALLOW, "User:alice", AclOperation.ALL),
            acl(DENY, "User:alice", AclOperation.READ),
        ]
    )
    assert not allowed(authorizer, "User:alice", AclOperation.READ)
    assert allowed(authorizer, "User:alice", AclOperation.DESCRIBE)


def test_any_topic_write_for_init_producer_id() -> None:
    topic = ResourceType.TOPIC
    authorizer = Authorizer(
        acls=[
            acl(ALLOW, "User:alice", AclOperation.WRITE, topic, "orders"),
            acl(ALLOW, "User:bob", AclOperation.WRITE, topic, "logs-a"),
            acl(DENY, "User:bob", AclOperation.WRITE, topic, "logs-", PatternType.PREFIXED),
        ]
    )
    assert authorizer.authorize_any_topic_write("User:alice", "h")
    assert not authorizer.authorize_any_topic_write("User:bob", "h")
    assert not authorizer.authorize_any_topic_write("User:carol", "h")


def test_filters_select_as_kafka_does() -> None:
    bindings = [
        acl(ALLOW, "User:alice", AclOperation.READ, name="shop"),
        acl(ALLOW, "User:alice", AclOperation.READ, name="*"),
        acl(ALLOW, "User:alice", AclOperation.READ, name="sh", pattern=PatternType.PREFIXED),
        acl(ALLOW, "User:alice", AclOperation.READ, name="other"),
    ]
    authorizer = Authorizer(acls=bindings)
    match = AclBindingFilter(resource_name="shop", pattern_type=PatternType.MATCH)
    assert authorizer.acls(match) == bindings[:3]
    literal = AclBindingFilter(resource_name="shop", pattern_type=PatternType.LITERAL)
    assert authorizer.acls(literal) == bindings[:1]
    assert authorizer.remove(AclBindingFilter(pattern_type=PatternType.PREFIXED)) == [bindings[2]]
    assert len(authorizer.acls()) == 3


def test_the_acl_file_format() -> None:
    parsed = parse_acls("# comment\nALLOW User:alice READ GROUP PREFIXED shop- 10.0.0.1  # eu\n")
    assert parsed == [
        acl(
            ALLOW,
            "User:alice",
            AclOperation.READ,
            name="shop-",
            pattern=PatternType.PREFIXED,
            host="10.0.0.1",
        )
    ]
    for bad, reason in [
        ("ALLOW alice READ GROUP LITERAL shop", "Could not parse principal"),
        ("ALLOW User:a READ CLUSTER LITERAL x", "kafka-cluster"),
        ("ALLOW User:a READ GROUP MATCH shop", "Invalid patternType"),
        ("ALLOW User:a FLY GROUP LITERAL shop", "unknown operation"),
        ("ALLOW User:a READ GROUP", "expected PERMISSION"),
    ]:
        with pytest.raises(InvalidAclError, match=reason):
            parse_acl_line(bad)
    with pytest.raises(InvalidAclError, match=r"acls\.txt:2:"):
        parse_acls("\nALLOW User:a READ GROUP\n", "acls.txt")


# -- properties -----------------------------------------------------------------------------

bindings = st.builds(
    AclBinding,
    st.sampled_from(TYPES),
    st.sampled_from(NAMES),
    st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]),
    st.sampled_from(PRINCIPALS),
    st.sampled_from(["*", "10.0.0.1"]),
    st.sampled_from(OPS),
    st.sampled_from([ALLOW, DENY]),
)
#: A request to authorize: principal, operation, resource type, resource name.
Request = tuple[str, AclOperation, ResourceType, str]
requests = st.tuples(
    st.sampled_from(["User:alice", "User:bob"]),
    st.sampled_from(OPS),
    st.sampled_from(TYPES),
    st.sampled_from(["shop", "shop-eu", "orders", "x"]),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(bindings, max_size=8), requests, st.booleans())
def test_deny_wins(acls: list[AclBinding], request: Request, everyone: bool) -> None:
    principal, op, rtype, name = request
    authorizer = Authorizer(AuthorizerConfig(allow_everyone_if_no_acl_found=everyone), acls)
    deny = acl(DENY, principal, op, rtype, name)
    authorizer.add([deny])
    assert not authorizer.authorize(principal, "10.0.0.1", op, rtype, name)
    # A DENY on ALL, or through the wildcard principal, name or a prefix, denies too.
    authorizer.remove(AclBindingFilter(permission=DENY))
    authorizer.add([acl(DENY, "User:*", AclOperation.ALL, rtype, name[:1], PatternType.PREFIXED)])
    assert not authorizer.authorize(principal, "10.0.0.1", op, rtype, name)


@settings(max_examples=100, deadline=None)
@given(st.lists(bindings, max_size=8), requests)
def test_super_users_are_always_allowed(acls: list[AclBinding], request: Request) -> None:
    principal, op, rtype, name = request
    denies = [acl(DENY, principal, AclOperation.ALL, rtype, "*")]
    authorizer = Authorizer(AuthorizerConfig(super_users=frozenset({principal})), acls + denies)
    assert authorizer.authorize(principal, "10.0.0.1", op, rtype, name)


@settings(max_examples=100, deadline=None)
@given(st.lists(bindings, max_size=8), requests)
def test_implied_operations(acls: list[AclBinding], request: Request) -> None:
    principal, op, rtype, name = request
    authorizer = Authorizer(acls=[a for a in acls if a.permission is ALLOW])
    if authorizer.authorize(principal, "10.0.0.1", op, rtype, name) and op in (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    ):
        assert authorizer.authorize(principal, "10.0.0.1", AclOperation.DESCRIBE, rtype, name)
    # With ALLOWs only, ALLOW of an implying operation allows; nothing else does.
    granted = authorizer.authorize(principal, "10.0.0.1", op, rtype, name)
    expected = any(
        a.applies_to(name)
        and a.resource_type == rtype
        and a.principal in (principal, "User:*")
        and a.operation in implied_by(op)
        for a in authorizer.acls()
    )
    assert granted == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(bindings, max_size=8), requests)
def test_adding_an_allow_never_revokes_and_a_deny_never_grants(
    acls: list[AclBinding],
    request: Request,
) -> None:
    principal, op, rtype, name = request
    authorizer = Authorizer(acls=acls)
    before = authorizer.authorize(principal, "10.0.0.1", op, rtype, name)
    authorizer.add([acl(DENY, "User:carol", op, rtype, name)])
    assert authorizer.authorize(principal, "10.0.0.1", op, rtype, name) == before
    authorizer.add([acl(ALLOW, principal, op, rtype, name)])
    after = authorizer.authorize(principal, "10.0.0.1", op, rtype, name)
    assert after or any(a.permission is DENY for a in authorizer.acls())


@settings(max_examples=100, deadline=None)
@given(
    st.lists(bindings, max_size=12),
    st.lists(st.sampled_from([*NAMES, None]), max_size=3),
    requests,
)
def test_the_index_finds_what_a_scan_finds(
    acls: list[AclBinding],
    removed_names: list[str | None],
    request: Request,
) -> None:
    """Rule 2 from the index equals rule 2 from a scan, after adds and removes."""
    _, _, rtype, name = request
    authorizer = Authorizer(acls=acls)
    for removed in removed_names:
        authorizer.remove(AclBindingFilter(resource_name=removed))
    scanned = {a for a in authorizer.acls() if a.resource_type == rtype and a.applies_to(name)}
    assert set(authorizer._applying(rtype, name)) == scanned
