"""Suite-wide: which build is under test (pure Python or ``make native``), and a stale one;
and Hypothesis's profile.

Property tests draw the same examples on every run (``derandomize``), so CI on a clean
clone passes or fails on the code alone, never on the luck of the draw. To hunt for new
counterexamples, run with ``HYPOTHESIS_PROFILE=explore`` (fresh random draws each run).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from regroup.native import describe_build, stale_sources

settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


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
