"""Suite-wide: Hypothesis's profile.

Property tests draw the same examples on every run (``derandomize``), so CI on a clean
clone passes or fails on the code alone, never on the luck of the draw. To hunt for new
counterexamples, run with ``HYPOTHESIS_PROFILE=explore`` (fresh random draws each run).
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
