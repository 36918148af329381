"""The ``KEY=VALUE`` options several commands take: ``--config`` and ``--data``.

``--config key=value`` (repeatable) is a Kafka config by its Kafka name;
``--data key=N`` (repeatable) replaces one key of the scenario's ``[data]``
table (``records_per_second``, ``processing_us_per_record``, ``restore_ms`` ...).
``simulate``, ``compare``, ``sweep``, ``replay`` and ``serve`` read them alike.

``at_least(n)`` is the argparse type of an integer option with a lower bound
(``--indent``, ``--seeds``, ``--members`` ...): an impossible value is refused
while the command line is parsed, in one line, before any work.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable

from regroup.cli.errors import UsageError

__all__ = ["at_least", "parse_configs", "parse_data"]


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer ``>= minimum`` (else argparse's one-line error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def parse_configs(items: Iterable[str]) -> dict[str, str]:
    """``--config`` items as a mapping (a later name wins); an item without ``=`` or
    without a name is a ``UsageError``."""
    configs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--config expects NAME=VALUE, got {item!r}")
        configs[key.strip()] = value.strip()
    return configs


def parse_data(items: Iterable[str]) -> dict[str, int]:
    """``--data`` items as a mapping of integers (the keys are checked by the scenario)."""
    data: dict[str, int] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--data expects KEY=INTEGER, got {item!r}")
        try:
            data[key.strip()] = int(value.strip())
        except ValueError:
            raise UsageError(f"--data expects KEY=INTEGER, got {item!r}") from None
    return data
