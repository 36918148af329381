"""The ``KEY=VALUE`` options several commands take: ``--config`` and ``--data``.

``--config key=value`` (repeatable) is a Kafka config by its Kafka name;
``--data key=N`` (repeatable) replaces one key of the scenario's ``[data]``
table (``records_per_second``, ``processing_us_per_record``, ``restore_ms`` ...).
``simulate``, ``compare``, ``sweep``, ``replay`` and ``serve`` read them alike.
"""

from __future__ import annotations

from collections.abc import Iterable

from regroup.cli.errors import UsageError

__all__ = ["parse_configs", "parse_data"]


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
