"""HiGHS solves in child processes (:mod:`dpopt.programs.highs_child`): the same bits as a
solve in this process, cancellable, and failures that read as ``None``."""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy import sparse
from scipy.optimize import linprog

import dpopt
from dpopt.programs import highs_child
from dpopt.programs.finite_query import _interior_point_options, build_dual_lp
from dpopt.programs.highs_child import ChildSolve, HighsOutcome, LpArrays, solve_here
from dpopt.universes import graph_atlas


@pytest.fixture(scope="module")
def atlas_dual() -> LpArrays:
    """The dual LP of the 34 five-node graphs at epsilon = 1 (272 rows, 1,190 columns)."""
    return build_dual_lp(dpopt.FiniteQuery(universe=graph_atlas(5, "triangles"), epsilon=1.0)).arrays


def test_an_lp_and_its_options_survive_the_npz_round_trip(atlas_dual):
    options = {"solver": "ipm", "run_crossover": "off", "primal_feasibility_tolerance": 1e-10}
    lp, read = LpArrays.from_npz(atlas_dual.to_npz(options))
    assert read == options
    assert (lp.matrix != atlas_dual.matrix).nnz == 0 and lp.matrix.shape == atlas_dual.matrix.shape
    for field in ("cost", "col_lower", "col_upper", "row_lower", "row_upper"):
        np.testing.assert_array_equal(getattr(lp, field), getattr(atlas_dual, field))


def test_a_childs_solution_is_the_same_bits_as_a_solve_here(atlas_dual):
    options = _interior_point_options(crossover=False)
    here, child = solve_here(atlas_dual, options), ChildSolve(atlas_dual, options).result()
    assert child is not None and child.optimal
    assert child.status == here.status and child.objective == here.objective
    np.testing.assert_array_equal(child.col_value, here.col_value)
    np.testing.assert_array_equal(child.row_dual, here.row_dual)


def test_the_child_solves_the_lp_it_is_given():
    """An independent check of what travels to the child: a small LP against scipy's linprog."""
    rng = np.random.default_rng(3)
    a = sparse.csc_array(rng.uniform(0.1, 1.0, size=(4, 6)))
    lp = LpArrays(a, cost=rng.uniform(-1, 1, 6), col_lower=np.zeros(6), col_upper=np.full(6, 2.0),
                  row_lower=np.full(4, -np.inf), row_upper=np.ones(4))
    outcome = ChildSolve(lp, {"solver": "simplex"}).result()
    reference = linprog(lp.cost, A_ub=a.toarray(), b_ub=lp.row_upper, bounds=[(0, 2)] * 6, method="highs")
    assert outcome is not None and outcome.optimal
    assert outcome.objective == pytest.approx(reference.fun, abs=1e-9)


def test_a_cancelled_child_is_killed_and_reads_as_none(atlas_dual):
    big = build_dual_lp(dpopt.FiniteQuery(universe=graph_atlas(6, "triangles"), epsilon=4.0)).arrays
    child = ChildSolve(big, _interior_point_options(crossover=True))
    time.sleep(0.2)
    started = time.perf_counter()
    child.cancel()
    assert time.perf_counter() - started < 5
    assert child._process.returncode is not None
    assert child.result() is None


@pytest.mark.parametrize("executable", ["false", "/nonexistent/python"])  # exits 1 at once; cannot start
def test_a_child_that_cannot_run_reads_as_none(monkeypatch, atlas_dual, executable):
    monkeypatch.setattr(highs_child.sys, "executable", executable)
    child = ChildSolve(atlas_dual, {})
    assert child.result() is None
    child.cancel()  # harmless after the fact


def test_a_child_that_writes_nonsense_reads_as_none(monkeypatch, atlas_dual):
    def nonsense(payload: bytes) -> HighsOutcome:
        raise ValueError("not an npz")
    monkeypatch.setattr(HighsOutcome, "from_npz", staticmethod(nonsense))
    assert ChildSolve(atlas_dual, {}).result() is None
