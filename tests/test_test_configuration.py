"""The test configuration itself: a failing test is reported as a failure, whatever plugins do.

With ``filterwarnings = error`` for every module, a DeprecationWarning raised by a
third-party package inside a pytest hook (seen: mypy_extensions.TypedDict, through the
hypothesis plugin) turned a failing test into INTERNALERROR, exit 3, and the real
failure was never printed. Deprecations are errors only in dpopt and its tests.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

PLUGIN = textwrap.dedent(
    """
    import warnings
    import pytest

    def touch():  # stands for a third-party package's deprecated attribute
        warnings.warn("old API", DeprecationWarning, stacklevel=1)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        yield
        if call.excinfo is not None:
            touch()
    """
)


def _run(tmp_path, test_body: str) -> subprocess.CompletedProcess:
    (tmp_path / "thirdparty_plugin.py").write_text(PLUGIN)
    (tmp_path / "test_case.py").write_text(textwrap.dedent(test_body))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path),
         "-p", "thirdparty_plugin", "-p", "no:cacheprovider", "-q", str(tmp_path / "test_case.py")],
        capture_output=True, text=True, cwd=tmp_path, env={**_env(), "PYTHONPATH": str(tmp_path)}, timeout=120,
    )


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}


def test_a_plugin_deprecation_does_not_hide_a_failure(tmp_path):
    done = _run(tmp_path, "def test_fails():\n    assert 1 == 2\n")
    assert done.returncode == 1, done.stdout[-2000:]
    assert "INTERNALERROR" not in done.stdout + done.stderr
    assert "1 failed" in done.stdout


def test_warnings_raised_in_tests_are_still_errors(tmp_path):
    body = """
    import warnings
    def test_warns():
        warnings.warn("an inaccurate solve", UserWarning)
    """
    done = _run(tmp_path, body)
    assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout[-2000:]


def test_approx_has_no_hidden_absolute_tolerance():
    """conftest.py sets pytest.approx's default absolute tolerance (1e-12) to 0: with it,
    ``approx(x, rel=1e-9)`` accepted any value within 1e-12 of x, so a test of a loss near
    epsilon = 1e-12 passed at twice the loss (it did, until 2026-11-28)."""
    assert 2e-12 != pytest.approx(1e-12, rel=1e-9)
    assert [0.0, 1e-13] != pytest.approx([0.0, 0.0])
    assert 1e-13 == pytest.approx(0.0, abs=1e-12)  # asked for explicitly, it still applies
