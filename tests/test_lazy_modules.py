"""cvxpy and pandas are imported on first use, not when dpopt or its registry loads."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dpopt.lazy_modules import LazyModule


def test_loading_the_registry_imports_neither_cvxpy_nor_pandas():
    # ~1.5 s of every CLI start (cvxpy brings scipy.stats); a closed form needs neither
    code = "import sys, dpopt, dpopt.methods, dpopt.cli; print(sorted(m for m in ('cvxpy', 'pandas', 'scipy.stats') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_factored_route_imports_neither_cvxpy_nor_scipy_stats():
    # the kernel recurrences once came from scipy.signal, which imports scipy.stats
    code = ("import sys, dpopt; s = dpopt.solve(dpopt.CountQuery(n=40, alpha=0.9, loss='squared'), 'factored'); "
            "print(s.certificate.ok, sorted(m for m in ('cvxpy', 'scipy.signal', 'scipy.stats') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True []"


def test_a_lazy_module_reads_the_real_module():
    import json

    lazy = LazyModule("json")
    assert lazy.dumps is json.dumps
    assert lazy.module() is json
    assert "json" in repr(lazy)


def test_threads_racing_to_the_first_access_all_see_the_whole_module():
    code = (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from dpopt.lazy_modules import cvxpy as cp\n"
        "with ThreadPoolExecutor(8) as pool:\n"
        "    found = list(pool.map(lambda _: cp.Variable is not None and cp.Problem is not None, range(8)))\n"
        "print(all(found))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_a_missing_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError):
        LazyModule("json").no_such_function
