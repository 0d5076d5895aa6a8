"""dpopt.solvers.run_program: the first attempt's HiGHS options, and the retries after it."""

import pytest

from dpopt.lazy_modules import cvxpy as cp
from dpopt.solvers import run_program


def small_lp() -> tuple[cp.Problem, cp.Variable]:
    x = cp.Variable(3, nonneg=True)
    return cp.Problem(cp.Minimize(x[0] + 2 * x[1] + 3 * x[2]), [cp.sum(x) == 1, x[0] <= 0.25, x[1] <= 0.5]), x


@pytest.mark.parametrize("first", [None, {"solver": "ipm", "run_crossover": "on"}, {"solver": "simplex"}])
def test_every_first_attempt_reaches_the_optimum(first):
    program, x = small_lp()
    info = run_program(program, owner="test", highs_first=first)
    assert info.solver == "HIGHS" and info.objective == pytest.approx(0.25 + 2 * 0.5 + 3 * 0.25, rel=1e-9)


def test_a_first_attempt_that_fails_falls_back_to_the_retries():
    """HiGHS refuses an unknown value of its 'solver' option; the retries run with dpopt's own options."""
    program, _ = small_lp()
    assert run_program(program, owner="test", highs_first={"solver": "no_such_method"}).objective == pytest.approx(2.0, rel=1e-9)


def test_highs_options_do_not_reach_other_solvers():
    program, _ = small_lp()
    assert run_program(program, solver="CLARABEL", owner="test", highs_first={"solver": "ipm"}).objective == pytest.approx(2.0, rel=1e-6)
