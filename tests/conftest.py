"""Shared settings for dpopt's tests.

Hypothesis profiles: ``dpopt`` (default) draws the same instances on every run, so CI
is deterministic; ``explore`` draws new random instances and ten times as many
(``HYPOTHESIS_PROFILE=explore python -m pytest``) to hunt for counterexamples.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"

settings.register_profile("dpopt", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
settings.register_profile("explore", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dpopt"))
