"""dpopt.testing: closed forms proved optimal, or bounded, against certified lower bounds."""

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpopt
import dpopt.testing as testing
from dpopt.problem_files import load_problem
from dpopt.validation import InvalidParameterError
from tests.conftest import examples

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"


def test_the_remapped_geometric_mechanism_is_proved_optimal_and_the_bare_one_is_not():
    # Gupte-Sundararajan Theorem 1: the geometric mechanism with the consumer's remap is optimal;
    # the bound comes from the GS LP's certificate, an independent route
    problem = dpopt.CountQuery(n=50, epsilon=1.0, loss="absolute")
    check = testing.assert_optimal(problem, "interaction")
    assert check.reference == "lp" and check.lower_bound_from == "certificate"
    assert check.lower_bound <= check.optimum and abs(check.gap) <= 1e-9 * check.lower_bound
    with pytest.raises(AssertionError, match=r"geometric is not proved optimal: objective .* exceeds the certified lower bound"):
        testing.assert_optimal(problem, "geometric")
    bare = testing.optimality_check(problem, "geometric")
    assert bare.gap > 1e-6 and bare.ratio_bound == bare.objective / bare.lower_bound


def test_assert_within_bounds_the_ratio_by_the_certified_lower_bound():
    problem = load_problem(PROBLEMS / "noise_adding_staircase.toml")  # the staircase is the LP's optimum
    testing.assert_optimal(problem, "staircase")
    geometric = testing.optimality_check(problem, "geometric")
    assert geometric.ratio_bound > 1.01
    testing.assert_within(problem, "geometric", ratio=geometric.ratio_bound * (1 + 1e-12))
    with pytest.raises(AssertionError, match="not proved within 1.01 times the optimum"):
        testing.assert_within(problem, "geometric", ratio=1.01)


def test_auto_is_checked_as_the_method_it_ran_and_the_wu_xia_he_constructions_are_priced():
    problem = load_problem(PROBLEMS / "finite_query_explicit.toml")
    assert testing.assert_optimal(problem).method == "lp"
    check = testing.optimality_check(problem, "privacy_first")
    assert check.ratio_bound > 1.5  # Theorem 2 on this universe: far from the LP optimum
    with pytest.raises(AssertionError, match="privacy_first is not proved optimal"):
        testing.assert_optimal(problem, "privacy_first")


def test_a_problem_without_a_certified_optimum_is_refused_not_failed():
    # a neighbouring set with a gap: the grid LP is an upper bound only, so nothing is proved either way
    gapped = load_problem(PROBLEMS / "noise_adding_neighbouring_set.toml")
    with pytest.raises(InvalidParameterError, match="'problem' parameter of dpopt.testing.*lp, is not exact on it and certifies no lower"):
        testing.assert_optimal(gapped, "compositional")
    with pytest.raises(InvalidParameterError, match="'problem' parameter of dpopt.testing"):
        testing.assert_optimal(load_problem(PROBLEMS / "calibration_gaussian_analytic.toml"))


def test_an_uncertified_mechanism_fails_whatever_its_objective(monkeypatch):
    problem = dpopt.CountQuery(n=4, epsilon=1.0, loss="absolute")
    real = testing.solve

    def leaky(problem, method, solver=None):
        solution = real(problem, method, solver=solver)
        certificate = dpopt.certify(solution.mechanism.to_numpy() ** 0.5, problem.epsilon)  # rows far apart: not private
        return dataclasses.replace(solution, certificate=certificate)

    monkeypatch.setattr(testing, "solve", leaky)
    with pytest.raises(AssertionError, match="fails its privacy certificate"):
        testing.assert_optimal(problem, "geometric")


@pytest.mark.parametrize(("keyword", "value"), [("rtol", -1.0), ("rtol", math.nan), ("atol", "0"), ("ratio", 0.5)])
def test_tolerances_are_refused_naming_them(keyword, value):
    problem = dpopt.CountQuery(n=3, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match=f"'{keyword}'"):
        if keyword == "ratio":
            testing.assert_within(problem, "geometric", ratio=value)
        else:
            testing.assert_optimal(problem, "geometric", **{keyword: value})


@settings(max_examples=examples(15), deadline=None)
@given(n=st.integers(1, 12), alpha=st.floats(0.05, 0.95), loss=st.sampled_from(["absolute", "squared", "zero_one"]))
def test_the_certified_lower_bound_is_below_every_certified_method(n, alpha, loss):
    # the bound is valid: no certified mechanism, closed form or optimum, costs less than it
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss=loss)
    for method in (m.name for m in dpopt.methods_for(problem)):
        check = testing.optimality_check(problem, method)
        assert check.lower_bound <= check.objective * (1 + 1e-12) + 1e-15
    testing.assert_optimal(problem, "factored")  # and the exact routes meet it


def test_a_reference_that_did_not_close_its_gap_still_bounds_the_optimum():
    # the GS LP's repaired mechanism sits 1.6e-9 above its certified bound here (not "exact"),
    # and that bound still proves the factored route optimal (found by the explore profile)
    problem = dpopt.CountQuery(n=8, alpha=0.05078125, loss="absolute")
    assert not dpopt.solve(problem, "lp").exact
    check = testing.assert_optimal(problem, "factored")
    assert check.reference == "lp" and check.lower_bound_from == "certificate" and check.optimum > check.lower_bound
