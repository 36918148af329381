"""The examples use regroup's pytest plugin (``regroup_broker``).

An installed regroup registers the plugin through its ``pytest11`` entry point;
a checkout run with ``PYTHONPATH=src`` and an older install may not have it yet,
so it is registered here when it is missing (never twice).
"""

from __future__ import annotations

import pytest

import regroup.testing.pytest_plugin as plugin


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.is_registered(plugin):
        config.pluginmanager.register(plugin, "regroup")
