"""No result depends on what ran earlier in the same process (DESIGN.md, issue 12).

Every registered method of every problem kind is run alone, in a fresh process
(``python -m dpopt.cli solve FILE --method NAME``), and then in one process in several
orders: registry order, reversed, ``lp`` before ``auto``, and an explicit solver
choice before the solver-free methods. Each in-process result must equal the same
method's result alone. (HiGHS 1.16 once refused every factored solve after any
cvxpy/HiGHS solve had started its process-wide scheduler with another thread count.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import pytest

import dpopt
from dpopt.problem_files import load_problem
from dpopt.registry import REGISTRY, methods_for
from tests.conftest import PROBLEMS

#: One problem file per kind (two for count queries: with and without side information).
FILES = (
    "gupte_sundararajan_table1.toml",
    "zero_one_loss.toml",
    "randomized_response.toml",
    "multi_level_release.toml",
    "noise_adding_staircase.toml",
    "noise_adding_neighbouring_set.toml",
    "calibration_gaussian_analytic.toml",
    "dx_example1.toml",
    "finite_query_explicit.toml",
    "statistical_marginal.toml",
    "calibration_discrete_gaussian.toml",
    "dx_smalldb.toml",
)
#: Objectives of one deterministic method agree to this relative tolerance across runs.
RTOL = 1e-9


def _runs() -> list[tuple[str, str]]:
    return [(name, m.name) for name in FILES for m in methods_for(load_problem(PROBLEMS / name))]


def _alone(file: str, method: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "dpopt.cli", "solve", str(PROBLEMS / file), "--method", method],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@cache
def alone_results() -> dict[tuple[str, str], dict]:
    runs = _runs()
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(runs, pool.map(lambda run: _alone(*run), runs)))


def _same(summary: dict, alone: dict, context: str) -> None:
    assert summary["status"] == alone["status"], context
    assert summary["certificate"]["ok"] is alone["certificate"]["ok"] is True, context
    assert summary["objective"] == pytest.approx(alone["objective"], rel=RTOL, abs=1e-12), context


def _sequence(order: str) -> list[tuple[str, str, str | None]]:
    """(file, method, solver) in the order one fresh process runs them."""
    runs = _runs()
    if order == "registry":
        return [(f, m, None) for f, m in runs]
    if order == "reversed":
        return [(f, m, None) for f, m in runs[::-1]]
    sequence: list[tuple[str, str, str | None]] = []
    for file in FILES:
        methods = [m for f, m in runs if f == file]
        if "lp" not in methods:
            continue
        if order == "lp_then_auto":
            sequence += [(file, "lp", "HIGHS"), (file, "auto", None)]
        else:  # a solver choice, then every solver-free method
            problem = load_problem(PROBLEMS / file)
            sequence.append((file, "lp", "CLARABEL"))
            sequence += [(file, m.name, None) for m in methods_for(problem) if not m.uses_solver]
    return sequence


RUNNER = """
import json, sys
import dpopt
from dpopt.problem_files import load_problem
for file, method, solver in json.loads(sys.argv[1]):
    solution = dpopt.solve(load_problem(file), method, solver=solver)
    print(json.dumps(solution.summary()))
"""


def _in_one_process(sequence: list[tuple[str, str, str | None]]) -> list[dict]:
    args = json.dumps([(str(PROBLEMS / f), m, s) for f, m, s in sequence])
    done = subprocess.run([sys.executable, "-c", RUNNER, args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_every_kind_is_covered():
    kinds = {load_problem(PROBLEMS / name).kind for name in FILES}
    dpopt.methods_for(load_problem(PROBLEMS / FILES[0]))  # loads the registry
    assert kinds == set(REGISTRY)


@pytest.mark.parametrize("order", ["registry", "reversed", "lp_then_auto", "solver_then_solver_free"])
def test_methods_in_one_fresh_process_equal_methods_alone(order):
    alone = alone_results()
    sequence = _sequence(order)
    results = _in_one_process(sequence)
    assert len(results) == len(sequence)
    for (file, method, solver), summary in zip(sequence, results):
        if solver is not None and solver != "HIGHS":
            continue  # the solver choice itself: only what it does to later solves matters
        _same(summary, alone[(file, summary["method"])], f"{file} {method} -> {summary['method']} ({order} order)")
        if method == "auto":
            assert "auto_fallbacks" not in summary, summary.get("auto_fallbacks")
