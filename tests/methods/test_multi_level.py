"""Methods for multi-level release (dpopt.methods.multi_level)."""

import numpy as np
import pytest

import dpopt
from dpopt.export import read_solution
from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.problem_files import load_problem
from tests.conftest import PROBLEMS


@pytest.mark.parametrize("solver", ["CLARABEL", "SCS", "HIGHS"])
def test_the_lp_route_is_certified_with_any_solver(tmp_path, solver):
    """The shipped three-level file with Clarabel: its interior-point T left level 2's marginal
    above its epsilon by more than the tolerance (exit 4 from `dpopt compare --solver CLARABEL`).
    Each remap is mixed with the uniform one just enough; the chain still reproduces every
    level's G to 1e-8, and the export reads back."""
    problem = load_problem(PROBLEMS / "multi_level_release.toml")
    solution = dpopt.solve(problem, "lp", solver=solver)
    assert solution.certificate.ok and all(level["certificate"]["ok"] for level in solution.details["levels"])
    assert solution.objective < 1e-8
    marginal = geometric_matrix(problem.n, problem.levels[0])
    for alpha, remap in zip(problem.levels[1:], solution.details["remaps"]):
        t = remap.to_numpy()
        assert t.min() >= 0 and np.allclose(t.sum(axis=1), 1.0, atol=1e-12)
        marginal = marginal @ t
        assert np.abs(marginal - geometric_matrix(problem.n, alpha)).max() < 1e-8
    solution.export(str(tmp_path / "chain.json"))
    assert read_solution(tmp_path / "chain.json").certificate.ok


def test_without_repair_an_inexact_chain_is_reported_not_released():
    problem = load_problem(PROBLEMS / "multi_level_release.toml")
    solution = dpopt.solve(problem, "lp", solver="CLARABEL", repair=False)
    assert "remap_mixing_weights" not in solution.details
    failed = [level for level in solution.details["levels"] if not level["certificate"]["ok"]]
    assert solution.certificate.ok == (not failed)
