"""Optima certified without a master: the identity certificate and two counts."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

import dpopt
from dpopt.mechanisms.geometric import column_weights
from dpopt.programs.column_generation import closed_forms, pricing, solve_by_column_generation
from tests.conftest import examples


@pytest.mark.parametrize(("n", "alpha"), [(80, 0.5), (100, 0.6)])
def test_the_identity_certificate_equals_the_gs_lp_where_it_applies(n, alpha):
    # zero-one loss, S = all, n large against 1 / (1 - alpha): G itself is optimal, certified by an explicit lambda
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss="zero_one")
    certified = closed_forms.identity_certificate(problem)
    assert certified is not None and certified.rounds == 0 and certified.relative_gap <= 1e-10
    assert certified.upper_bound == pytest.approx(1 - (1 - alpha) / (1 + alpha), rel=1e-12)  # 1 - G's inner diagonal
    lp = dpopt.solve(problem, "lp").objective  # HiGHS's direct GS LP: optimal to its tolerances (~1e-7)
    assert certified.lower_bound <= lp * (1 + 1e-12) and lp == pytest.approx(certified.upper_bound, rel=1e-6)


def test_the_identity_certificate_declines_where_g_is_not_certified():
    assert closed_forms.identity_certificate(dpopt.CountQuery(n=20, alpha=0.9, loss="zero_one")) is None  # alpha^(n/2) not negligible
    assert closed_forms.identity_certificate(dpopt.CountQuery(n=200, alpha=0.5, loss="absolute")) is None
    assert closed_forms.identity_certificate(dpopt.CountQuery(n=200, alpha=0.5, loss="zero_one", side_information=[3, 4, 5])) is None
    small = solve_by_column_generation(dpopt.CountQuery(n=20, alpha=0.9, loss="zero_one"))
    assert small.rounds >= 1 and small.relative_gap <= 1e-9


# -- interior-point masters (Clarabel, no basis) ---------------------------------------------


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(1, 25).flatmap(lambda n: st.tuples(st.just(n), st.floats(0.05, 0.95), st.sampled_from(["absolute", "zero_one", "squared"]),
                                                      st.lists(st.integers(0, n), min_size=2, max_size=2, unique=True))))
def test_two_counts_in_closed_form_equal_the_gs_lp(case):
    n, alpha, loss, pair = case
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss=loss, side_information=sorted(pair))
    result = closed_forms.two_count_threshold(problem) if loss != "squared" else closed_forms.two_count_bisection(problem)
    assert result is not None and result.within(1e-12, 1e-15)
    # independent routes: the consumer LP on G (well scaled), and the direct GS LP, whose solver
    # objective sat 2.6e-8 above the optimum at n = 22, alpha = 0.24 (explore profile; README, "Accuracy")
    interaction = dpopt.solve(problem, "interaction")
    # (abs: at an optimum of 2.2e-10, n = 19, alpha = 0.11, S = {0, 19}, its solver objective was 2.0e-9)
    assert result.upper_bound == pytest.approx(interaction.details["solver_objective"], rel=1e-8, abs=1e-8)
    lp = dpopt.solve(problem, "lp")
    # (abs: at an optimum of 2.4e-10, n = 22, alpha = 0.087, S = {1, 21}, where entries reach
    # alpha^21 ~ 1e-22, the GS LP's solver objective was 2.2e-9; README, "Accuracy")
    assert result.upper_bound == pytest.approx(lp.details["solver_objective"], rel=1e-7, abs=1e-8)
    assert result.lower_bound <= min(lp.objective, interaction.objective) * (1 + 1e-9) + 1e-9
    assert result.mechanism.certificate(problem.epsilon).ok
    if loss != "squared":  # every row maps to the two counts, at most one row split
        remap = result.mechanism.remap.toarray()
        assert set(np.flatnonzero(remap.sum(axis=0))) <= set(pair) and (np.count_nonzero(remap, axis=1) > 1).sum() <= 1


def test_two_counts_squared_bound_agrees_with_the_general_pricing():
    n, alpha, a, b = 1000, 0.99, 250, 750  # an optimum of ~8000: the general pricing is accurate here
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss="squared", side_information=[a, b])
    result = closed_forms.two_count_bisection(problem)
    assert result.relative_gap <= 1e-12
    whole = solve_by_column_generation(problem, hull=False, closed_forms=False)  # an independent route
    assert "two counts" not in whole.route and whole.relative_gap <= 1e-9
    assert whole.lower_bound <= result.upper_bound * (1 + 1e-12) and result.lower_bound <= whole.upper_bound * (1 + 1e-12)


@pytest.mark.parametrize("n, alpha", [(1000, 0.99), (600, 0.9), (2000, 0.999)])
def test_two_counts_bound_agrees_with_the_general_pricing(n, alpha):
    # where the optimum is not near 0 the general pricing (moments) is accurate: same bound
    a, b = n // 4, 3 * n // 4
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss="absolute", side_information=[a, b])
    result = closed_forms.two_count_threshold(problem)
    g = column_weights(n, alpha)
    s = int(np.flatnonzero(np.count_nonzero(result.mechanism.remap.toarray(), axis=1) > 1)[0])
    to_a, to_b = g[s] * alpha ** abs(s - a), g[s] * alpha ** abs(s - b)
    lam = np.zeros(n + 1)
    lam[[a, b]] = to_b / (to_a + to_b), to_a / (to_a + to_b)
    priced = pricing.price_columns(problem, lam, sparse.eye_array(n + 1, format="csr")).lower_bound
    assert priced == pytest.approx(result.lower_bound, rel=1e-10)
    assert result.relative_gap <= 1e-12
    # and through the default route (the hull, then this)
    assert "two counts" in solve_by_column_generation(problem).route
