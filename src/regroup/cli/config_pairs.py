"""``--config NAME=VALUE`` options (repeatable), as ``serve`` and ``replay`` take them."""

from __future__ import annotations

from collections.abc import Iterable

from regroup.cli.errors import UsageError

__all__ = ["config_pairs"]


def config_pairs(pairs: Iterable[str]) -> dict[str, str]:
    """``NAME=VALUE`` strings as a dict (the last one of a name wins); a pair
    without ``=`` or without a name is a ``UsageError``."""
    properties: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--config expects NAME=VALUE, got {pair!r}")
        properties[name.strip()] = value.strip()
    return properties
