"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31), versions 1-3 (Kafka's ``AclApis``).

Rules, as Kafka 4.x answers them:

1. Without an authorizer every answer is SECURITY_DISABLED, "No Authorizer is
   configured." (per creation and per filter for Create/Delete).
2. DescribeAcls needs DESCRIBE on the CLUSTER; CreateAcls and DeleteAcls need
   ALTER on the CLUSTER; otherwise CLUSTER_AUTHORIZATION_FAILED (for every
   creation or filter).
3. A creation Kafka would refuse (``acl.validate_binding``) gets INVALID_REQUEST
   with the reason; the others are created. A filter with an unknown code
   gets INVALID_REQUEST.
4. DescribeAcls groups the matching ACLs by resource pattern.

ACLs created here live in memory, beside those of ``regroup.acls.file``; they
are not written back to the file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from regroup.model.errors import ErrorCode
from regroup.server.security.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourceType,
    validate_binding,
)
from regroup.server.security.authorizer import Authorizer
from regroup.server.wire.api_keys import ApiKey
from regroup.server.wire.codec import DecodedRequest, response_class
from regroup.server.wire.kio_build import build

__all__ = ["ACL_KEYS", "serve_acl_api"]

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = (
    ApiKey.DESCRIBE_ACLS,
    ApiKey.CREATE_ACLS,
    ApiKey.DELETE_ACLS,
)
ACL_KEYS = frozenset({DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS})
NO_AUTHORIZER = "No Authorizer is configured."

Check = Callable[[AclOperation, ResourceType, str], bool]


def _filter(f: Any) -> AclBindingFilter:
    """A kio filter (DescribeAcls request, DeleteAcls filter) as ``AclBindingFilter``."""
    try:
        return AclBindingFilter(
            resource_type=ResourceType(int(f.resource_type_filter)),
            resource_name=f.resource_name_filter,
            pattern_type=PatternType(int(f.pattern_type_filter)),
            principal=f.principal_filter,
            host=f.host_filter,
            operation=AclOperation(int(f.operation)),
            permission=AclPermissionType(int(f.permission_type)),
        )
    except ValueError as exc:
        raise InvalidAclError(str(exc)) from None


def _binding_values(acl: AclBinding) -> dict[str, Any]:
    return {
        "principal": acl.principal,
        "host": acl.host,
        "operation": int(acl.operation),
        "permission_type": int(acl.permission),
    }


def serve_acl_api(authorizer: Authorizer | None, check: Check | None, req: DecodedRequest) -> Any:
    key, version, body = req.api_key, req.api_version, req.body
    cls = response_class(key, version)
    if authorizer is None or check is None:  # rule 1
        return _refused(cls, key, body, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    operation = AclOperation.DESCRIBE if key == DESCRIBE_ACLS else AclOperation.ALTER
    if not check(operation, ResourceType.CLUSTER, CLUSTER_NAME):  # rule 2
        return _refused(cls, key, body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    if key == DESCRIBE_ACLS:
        return _describe(cls, authorizer, body)
    if key == CREATE_ACLS:
        return _create(cls, authorizer, body)
    return _delete(cls, authorizer, body)


def _refused(cls: type[Any], key: int, body: Any, code: ErrorCode, message: str | None) -> Any:
    failed = {"error_code": code, "error_message": message}
    if key == DESCRIBE_ACLS:
        return build(cls, {"throttle_time": 0, **failed, "resources": ()})
    if key == CREATE_ACLS:
        return build(cls, {"throttle_time": 0, "results": [failed for _ in body.creations]})
    results = [{**failed, "matching_acls": ()} for _ in body.filters]
    return build(cls, {"throttle_time": 0, "filter_results": results})


def _describe(cls: type[Any], authorizer: Authorizer, body: Any) -> Any:
    try:
        flt = _filter(body)
    except InvalidAclError as exc:
        failed = {"error_code": ErrorCode.INVALID_REQUEST, "error_message": str(exc)}
        return build(cls, {"throttle_time": 0, **failed, "resources": ()})
    by_pattern: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for acl in authorizer.acls(flt):
        pattern = (int(acl.resource_type), acl.resource_name, int(acl.pattern_type))
        by_pattern.setdefault(pattern, []).append(_binding_values(acl))
    resources = [
        {"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
        for (t, n, p), acls in by_pattern.items()
    ]
    values = {"throttle_time": 0, "error_code": ErrorCode.NONE, "error_message": None}
    return build(cls, {**values, "resources": resources})


def _create(cls: type[Any], authorizer: Authorizer, body: Any) -> Any:
    results = []
    for creation in body.creations:
        try:
            acl = AclBinding(
                resource_type=ResourceType(int(creation.resource_type)),
                resource_name=creation.resource_name,
                pattern_type=PatternType(int(getattr(creation, "resource_pattern_type", 3))),
                principal=creation.principal,
                host=creation.host,
                operation=AclOperation(int(creation.operation)),
                permission=AclPermissionType(int(creation.permission_type)),
            )
            validate_binding(acl)
        except (ValueError, InvalidAclError) as exc:  # rule 3
            results.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": str(exc)})
            continue
        authorizer.add([acl])
        results.append({"error_code": ErrorCode.NONE, "error_message": None})
    return build(cls, {"throttle_time": 0, "results": results})


def _delete(cls: type[Any], authorizer: Authorizer, body: Any) -> Any:
    results = []
    for f in body.filters:
        try:
            flt = _filter(f)
        except InvalidAclError as exc:
            results.append(
                {
                    "error_code": ErrorCode.INVALID_REQUEST,
                    "error_message": str(exc),
                    "matching_acls": (),
                }
            )
            continue
        gone = authorizer.remove(flt)
        matching = [
            {
                "error_code": ErrorCode.NONE,
                "error_message": None,
                "resource_type": int(acl.resource_type),
                "resource_name": acl.resource_name,
                "pattern_type": int(acl.pattern_type),
                **_binding_values(acl),
            }
            for acl in gone
        ]
        results.append(
            {"error_code": ErrorCode.NONE, "error_message": None, "matching_acls": matching}
        )
    return build(cls, {"throttle_time": 0, "filter_results": results})
