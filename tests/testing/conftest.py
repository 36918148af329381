"""The harness's own tests use regroup's pytest plugin as a user's project would.

The installed ``pytest11`` entry point registers it; a checkout run with
``PYTHONPATH=src`` over an older install may lack it, so it is registered here
when missing (never twice).
"""

from __future__ import annotations

import pytest

import regroup.testing.pytest_plugin as plugin


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.is_registered(plugin):
        config.pluginmanager.register(plugin, "regroup")
