"""Shared settings for dpopt's tests.

Hypothesis profiles: ``dpopt`` (default) draws the same instances on every run, so CI
is deterministic; ``explore`` draws new random instances and ten times as many
(``HYPOTHESIS_PROFILE=explore python -m pytest``) to hunt for counterexamples.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"

settings.register_profile("dpopt", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
settings.register_profile("explore", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dpopt"))
EXPLORE = os.environ.get("HYPOTHESIS_PROFILE") == "explore"

# pytest.approx(x, rel=r) also accepts anything within 1e-12 of x (its default absolute
# tolerance, kept when only rel is given), so at the scale of small epsilons (losses near
# 1e-12, probabilities of e^-40) every such comparison passed whatever the value. Here an
# absolute tolerance applies only where a test asks for one (abs=...).
type(pytest.approx(0.0)).DEFAULT_ABSOLUTE_TOLERANCE = 0.0


def examples(count: int) -> int:
    """A property test's own number of examples (``@settings(max_examples=examples(60))``), ten
    times as many under the ``explore`` profile: a test's own ``max_examples`` overrides the
    profile's, so without this the profile only redrew the same number of new instances."""
    return 10 * count if EXPLORE else count


@pytest.fixture(autouse=True, scope="session")
def _temporary_files_under_pytest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Send every temporary file of the run, and of the processes it starts, into pytest's own temporary folder.

    Worker processes that are terminated or killed (the Dask and process-pool tests do both) cannot remove their
    ``pymp-*`` and ``dask-scratch-space`` folders; under pytest's folder they go with its rotation of old runs
    instead of piling up in the system's temporary directory.
    """
    folder = str(tmp_path_factory.mktemp("tmp"))
    saved = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = folder, folder
    yield
    if saved[0] is None:
        del os.environ["TMPDIR"]
    else:
        os.environ["TMPDIR"] = saved[0]
    tempfile.tempdir = saved[1]
