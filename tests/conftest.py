"""Suite-wide: which build is under test (pure Python or ``make native``), and a stale one."""

from __future__ import annotations

import pytest

from regroup.native import describe_build, stale_sources


def pytest_report_header() -> str:
    return f"regroup build: {describe_build()}"


def pytest_configure(config: pytest.Config) -> None:
    stale = stale_sources()
    if stale:
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(
                f"changed after `make native`: {', '.join(stale[:3])}"
                f"{f' and {len(stale) - 3} more' if len(stale) > 3 else ''}; the tests run the "
                "old compiled code. Run `make native` again, or `make pure`."
            ),
            stacklevel=2,
        )
