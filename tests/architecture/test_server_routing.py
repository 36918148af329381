"""The server routes by one table: ``app.ROUTES``, keyed by ``ApiKey``.

``regroup.server.routing`` rule 1: no code in ``regroup.server`` compares an API
key with a number; a request goes where its row says. The check reads every
module's syntax tree: a comparison (``==``, ``!=``, ``in``, ``not in``) of a name
or attribute called ``key`` or ``*api_key`` with an integer literal, or with a
tuple, list or set holding one, fails and names the line.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

from regroup.server.apis import large_requests
from regroup.server.app import ROUTES
from regroup.server.routing import RouteKind, shortcuts
from regroup.server.security.acl_apis import ACL_KEYS
from regroup.server.security.cluster_rules import GUARDED_KEYS
from regroup.server.wire.api_keys import ApiKey
from regroup.server.wire.mapping import GROUP_APIS
from regroup.server.wire.versions import ADVERTISED, supports

SERVER = Path(__file__).resolve().parents[2] / "src" / "regroup" / "server"


def _names_a_key(node: ast.expr) -> bool:
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
    return name is not None and (name == "key" or name.endswith("api_key"))


def _int_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _int_literal(node.operand)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_int_literal(element) for element in node.elts)
    return False


def literal_key_comparisons(source: str) -> list[int]:
    """The lines of ``source`` that compare an API key with an integer literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for (left, right), op in zip(itertools.pairwise(operands), node.ops, strict=True):
            if not isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
                continue
            if (_names_a_key(left) and _int_literal(right)) or (
                _names_a_key(right) and _int_literal(left)
            ):
                found.append(node.lineno)
    return found


def test_the_check_finds_literal_comparisons() -> None:
    """The check itself: each form it must catch, and what it must leave alone."""
    caught = [
        "if req.api_key == 12: pass",
        "if key != 68: pass",
        "if 3 == key: pass",
        "if exc.api_key in (3, 10): pass",
        "if api_key not in {8, 9}: pass",
        "x = key == -1",
    ]
    for line in caught:
        assert literal_key_comparisons(line) == [1], line
    left_alone = [
        "if req.api_key == ApiKey.HEARTBEAT: pass",
        "if key in GUARDED_KEYS: pass",
        "if body.key_type != 0: pass",
        "if req.api_version == 0: pass",
    ]
    for line in left_alone:
        assert literal_key_comparisons(line) == [], line


def test_no_literal_api_key_comparison_in_the_server() -> None:
    offenders = [
        f"{path.relative_to(SERVER.parent)}:{line}"
        for path in sorted(SERVER.rglob("*.py"))
        for line in literal_key_comparisons(path.read_text())
    ]
    assert offenders == [], "compare with an ApiKey member, or route by app.ROUTES"


def test_every_served_api_has_one_row_and_every_row_is_served() -> None:
    served = {key for key in ApiKey if any(supports(key, v) for v in range(0, 20))}
    assert set(ROUTES) == served
    assert all(isinstance(key, ApiKey) for key in ROUTES)


def test_each_kind_is_the_part_that_answers() -> None:
    def of(kind: RouteKind) -> set[int]:
        return {key for key, route in ROUTES.items() if route.kind is kind}

    private = {key for key in ApiKey if key.private}
    assert of(RouteKind.GROUP) == set(GROUP_APIS) | (private & set(ROUTES))
    assert of(RouteKind.ACL) == set(ACL_KEYS)
    assert of(RouteKind.SASL) == {ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
    # The authorizer's cluster rules guard every cluster row but ApiVersions.
    assert of(RouteKind.CLUSTER) == set(GUARDED_KEYS) | {ApiKey.API_VERSIONS}


def test_the_before_decode_shortcuts_are_the_heartbeats_and_the_sliced_requests() -> None:
    marked = {key for key, route in ROUTES.items() if route.before_decode is not None}
    sliced = set(large_requests.SLICED)
    assert sliced == {ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_GROUPS, ApiKey.CONSUMER_GROUP_DESCRIBE}
    assert marked == {ApiKey.HEARTBEAT, ApiKey.CONSUMER_GROUP_HEARTBEAT} | sliced
    prefixes = shortcuts(ROUTES)
    for key in marked:
        low, high = ADVERTISED[key]
        for version in range(low, high + 1):
            assert key.to_bytes(2, "big") + version.to_bytes(2, "big") in prefixes
    assert len(prefixes) == sum(ADVERTISED[k][1] - ADVERTISED[k][0] + 1 for k in marked)
