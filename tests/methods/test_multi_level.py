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


def test_auto_exports_matrices_where_they_fit_and_releases_factored_beyond(tmp_path):
    small = dpopt.MultiLevelRelease(n=40, alphas=[0.3, 0.6])
    assert dpopt.solve(small).method == "closed_form"
    # the factored route on the same problem: the dense chain's parameters and the same level laws
    factored = dpopt.solve(small, "factored")
    assert factored.certificate.ok and factored.objective == 0.0
    assert all(level["certificate"]["ok"] for level in factored.details["levels"])
    large = dpopt.MultiLevelRelease(n=5_000_000, epsilons=[2.0, 1.0, 0.1])
    solution = dpopt.solve(large)
    assert solution.method == "factored" and solution.certificate.ok
    releases = solution.sample(4_999_999, 1000, rng=1)
    assert releases.shape == (1000, 3) and releases.min() >= 0 and releases.max() <= large.n
    solution.export(str(tmp_path / "chain.json"))
    back = read_solution(tmp_path / "chain.json")
    assert back.method == "factored"
    np.testing.assert_array_equal(back.sample(7, 50, rng=2), solution.sample(7, 50, rng=2))


def test_an_edited_factored_chain_is_refused_even_when_recertified(tmp_path):
    import json

    from dpopt.export import ExportFileError

    dpopt.solve(dpopt.MultiLevelRelease(n=10**5, alphas=[0.25, 0.5]), "factored").export(str(tmp_path / "c.json"))
    data = json.loads((tmp_path / "c.json").read_text())
    data["parameters"]["stay_inside"] = [0.9]  # keep more often: level 2 would be nearly level 1
    (tmp_path / "c.json").write_text(json.dumps(data))
    with pytest.raises(ExportFileError, match="stay_inside"):
        read_solution(tmp_path / "c.json", recertify=True)
