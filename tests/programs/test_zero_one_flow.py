"""The zero-one flow LP against independent routes: the GS LP, column generation, G T itself."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpopt
from dpopt.mechanisms.geometric import column_weights, geometric_matrix
from dpopt.programs.column_generation import closed_forms, solve as loop
from dpopt.programs.column_generation.pricing import price_zero_one
from dpopt.programs.column_generation.result import evaluated
from dpopt.programs.zero_one_flow import remap_from_flows, solve_flow_by_sweep, solve_flow_program
from tests.strategies import side_information
from tests.conftest import examples


def _random_flows(n, alpha, rng):
    """A feasible flow with value going both ways over some edges (so cancellation is exercised)."""
    supply = column_weights(n, alpha) * rng.uniform(0.5, 2.0)
    right = np.zeros(n)
    carried = 0.0
    for j in range(n):  # each node sends a random share of what it holds to the right
        right[j] = rng.random() * rng.integers(0, 2) * (supply[j] + alpha * carried)
        carried = right[j]
    held = supply.copy()
    held[:n] -= right
    held[1:] += alpha * right
    left = np.zeros(n + 1)
    carried = 0.0
    for j in range(n, 0, -1):  # then a random share of what remains to the left
        left[j] = rng.random() * rng.integers(0, 2) * (held[j] + alpha * carried)
        carried = left[j]
    kept = held.copy()
    kept[1:] -= left[1:]
    kept[:n] += alpha * left[1:]
    return supply, right, left, kept


@settings(max_examples=examples(80))
@given(st.integers(1, 30), st.floats(0.05, 0.999), st.integers(0, 2**32 - 1))
def test_the_decomposed_remap_gives_each_output_what_the_flow_leaves_it(n, alpha, seed):
    supply, right, left, kept = _random_flows(n, alpha, np.random.default_rng(seed))
    remap = remap_from_flows(alpha, supply, right, left).toarray()
    assert remap.min() >= 0
    np.testing.assert_allclose(remap.sum(axis=1), 1.0, rtol=1e-12)
    # x = G T: output i is reached from input i with probability G[i, :] @ T[:, i], which is
    # the value i keeps, in units of the supply (g_r times the common scale)
    scale = supply[0] / column_weights(n, alpha)[0]
    diagonal = np.einsum("ir,ri->i", geometric_matrix(n, alpha), remap)
    # cancelling opposite flows leaves each end (1 - alpha) x the cancelled amount more
    assert np.all(diagonal * scale >= kept - 1e-12 * supply.max())
    assert np.count_nonzero(remap) <= 3 * (n + 1)


def test_without_opposite_flows_the_diagonal_is_exactly_what_is_kept():
    n, alpha = 6, 0.8
    supply = column_weights(n, alpha)
    right = np.array([0.3, 0.2, 0.0, 0.0, 0.0, 0.0]) * supply[0]
    left = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.4]) * supply[6]
    kept = supply.copy()
    kept[:n] -= right
    kept[1:] += alpha * right
    kept[1:] -= left[1:]
    kept[:n] += alpha * left[1:]
    remap = remap_from_flows(alpha, supply, right, left).toarray()
    np.testing.assert_allclose(np.einsum("ir,ri->i", geometric_matrix(n, alpha), remap), kept, rtol=1e-13)


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(1, 25).flatmap(lambda n: st.tuples(st.just(n), st.floats(0.05, 0.999), side_information(n))))
def test_the_flow_route_equals_the_gs_lp_and_column_generation(case):
    n, alpha, s = case
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss="zero_one", side_information=s)
    result, closed = closed_forms.solve_zero_one_by_flow(problem)
    # HiGHS works to 1e-10 absolute: where the optimum is ~0 (S = {0}: every row sent to 0,
    # the farthest row's share worth alpha^n) the flow can stop that short, and column
    # generation takes over from its support (solve_by_column_generation)
    assert result.within(1e-9, 1e-10)
    full = loop.solve_by_column_generation(problem, hull=False)  # the same problem the flow solved
    assert full.within(1e-9, 1e-10)
    if len(problem.support) == 2:  # two counts come before the flow: the threshold remap (closed form)
        assert full.route.startswith("two counts")
    elif full.route == "identity certificate":  # so does the identity, when S is every count (explore: n = 18, alpha = 0.05)
        assert len(problem.support) == n + 1
    else:
        assert (full.route == "zero-one flow") == closed
    on_hull = loop.solve_by_column_generation(problem)  # (solves the problem on the hull of S)
    assert on_hull.within(1e-9, 1e-10) and on_hull.upper_bound == pytest.approx(full.upper_bound, rel=1e-9, abs=2e-10)
    lp = dpopt.solve(problem, "lp")
    scale = abs(result.upper_bound)
    assert abs(result.upper_bound - lp.details["solver_objective"]) <= 1e-8 * scale + 1e-9
    assert result.lower_bound <= lp.objective + 1e-9 * scale + 1e-12
    plain = loop.solve_by_column_generation(problem, flow=False)
    assert plain.route != "zero-one flow"
    # abs as above: at S = {0} (optimum 0) plain column generation stopped at 1.2e-12 (explore profile, n = 22)
    assert full.upper_bound == pytest.approx(plain.upper_bound, rel=2e-9, abs=1e-10)
    assert result.upper_bound == pytest.approx(plain.upper_bound, rel=2e-9, abs=1e-10)
    assert result.mechanism.certificate(problem.epsilon).ok


def test_the_multipliers_are_the_lps_duals_and_certify_it():
    # the flow LP's duals are a zero-one lambda: priced over all (n+1)^2 columns they bound the optimum
    problem = dpopt.CountQuery(n=60, alpha=0.97, loss="zero_one", side_information={"lower": 5, "upper": 50})
    flow = solve_flow_program(problem)
    assert flow.lam.sum() == pytest.approx(1.0) and flow.lam.min() >= 0
    assert np.all(flow.lam[[0, 1, 2, 3, 4, 51, 58]] == 0)  # outside S
    lp = dpopt.solve(problem, "lp").objective
    value = 1 - flow.value * (1 - problem.alpha) / (1 + problem.alpha)  # flow.value is in units of the inner diagonal
    assert value == pytest.approx(lp, rel=1e-8)


def test_small_epsilon_no_longer_tails_off():
    """Regression (issue 16): alpha = 0.999 tailed off in column generation (n = 1000: 500
    rounds, gap 4e-6); the flow route certifies it in one LP."""
    problem = dpopt.CountQuery(n=1000, alpha=0.999, loss="zero_one")
    solution = dpopt.solve(problem, "factored")
    assert solution.exact and solution.status == "optimal"
    assert solution.details["route"] == "zero-one flow" and solution.details["relative_gap"] <= 1e-9
    # the identity's bound 1 - 1 / sum_r alpha^|n/2 - r| (every output must be some row's diagonal)
    # is below the optimum, and G itself is worse
    centre = 1 - 1 / np.sum(problem.alpha ** np.abs(np.arange(1001) - 500))
    identity = 1 - (1 - problem.alpha) / (1 + problem.alpha)
    assert centre * (1 - 1e-12) <= solution.objective < identity  # the optimum is the bound here, up to rounding


def test_an_uncertified_flow_hands_its_support_to_column_generation(monkeypatch):
    problem = dpopt.CountQuery(n=40, alpha=0.9, loss="zero_one", side_information=[0, 3, 7, 20, 33, 40])
    original = closed_forms.solve_zero_one_by_flow
    seen = {}

    def unclosed(problem, tolerance):
        result, _ = original(problem, tolerance=tolerance)
        seen["support"] = result.mechanism.remap.nnz
        return result, False

    monkeypatch.setattr(loop, "solve_zero_one_by_flow", unclosed)
    result = loop.solve_by_column_generation(problem)
    assert seen and result.route == "column generation" and result.within(1e-9)
    assert result.rounds == 1  # the flow's support holds the optimum: the first master closes
    assert result.upper_bound == pytest.approx(original(problem)[0].upper_bound, rel=1e-9)


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.floats(0.02, 0.999), side_information(n))))
def test_the_sweep_solves_the_flow_lp_and_its_slopes_certify_it(case):
    # the same LP through HiGHS's dual simplex (an independent route); the sweep's duals,
    # priced exactly over all (n+1)^2 remap columns, must close the gap on the sweep's own remap
    n, alpha, s = case
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss="zero_one", side_information=s)
    swept, lp = solve_flow_by_sweep(problem), solve_flow_program(problem)
    assert swept is not None
    assert swept.value == pytest.approx(lp.value, rel=1e-9, abs=1e-9)  # HiGHS: 1e-10 absolute on its scaled LP
    assert swept.lam.sum() == pytest.approx(1.0) and swept.lam.min() >= 0
    assert np.all(swept.lam[np.setdiff1d(np.arange(n + 1), problem.support)] == 0)
    remap = remap_from_flows(alpha, swept.supply, swept.right, swept.left)
    mechanism, losses = evaluated(problem, remap)
    lower = price_zero_one(problem, swept.lam, mechanism.remap).lower_bound
    upper = float(losses.max())
    assert lower <= upper + 1e-15
    assert upper - lower <= 1e-10 * upper + 1e-12


def test_the_sweep_keeps_every_row_it_promises():
    # the flows as exact rationals: every node of S keeps at least v, every other node >= 0
    # (up to the float sweep's rounding), and the value is the bracket's feasible end
    problem = dpopt.CountQuery(n=40, alpha=0.9, loss="zero_one", side_information=[0, 3, 7, 20, 33, 40])
    flow = solve_flow_by_sweep(problem)
    alpha, g = Fraction(problem.alpha), [Fraction(x) for x in flow.supply]
    right = [Fraction(x) for x in flow.right] + [Fraction(0)]
    left = [Fraction(x) for x in flow.left] + [Fraction(0)]
    for j in range(problem.n + 1):
        kept = g[j] - right[j] - left[j] + alpha * (right[j - 1] if j else 0) + alpha * left[j + 1]
        wanted = Fraction(flow.value) if j in problem.support else Fraction(0)
        assert kept >= wanted - Fraction(1, 10**12) * g[j]


@pytest.mark.parametrize("n, alpha, s", [
    (51, 0.08184397914605299, [0, 12, 25, 33, 47, 51]),  # a piece of slope ~alpha^-n: Newton stalled on it
    (43, 0.1642038493578707, [4, 6, 31]),  # no float v near the root sweeps feasible on the piece above it
    (39, 0.0948608647051267, [0, 18, 20, 25, 26, 38]),  # the flows at the bracket's end overdrew node 0 by 1.8e6
])
def test_the_sweep_brackets_where_newton_stalls(n, alpha, s):
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss="zero_one", side_information=s)
    result, closed = closed_forms.solve_zero_one_by_flow(problem)
    assert closed and result.within(1e-10)
    lp = dpopt.solve(problem, "lp").objective  # HiGHS: 1e-10 absolute on an optimum of 3e-3 (first case)
    assert result.upper_bound <= lp + 1e-12 and result.upper_bound == pytest.approx(lp, rel=1e-6)


def test_small_epsilon_at_large_n_needs_no_lp_solver(monkeypatch):
    # alpha = 0.999, n = 5000: the sweep alone (HiGHS's dual simplex took 68 s at n = 30,000)
    def refused(problem):
        raise AssertionError("the flow LP was handed to HiGHS")

    monkeypatch.setattr(closed_forms, "solve_flow_program", refused)
    solution = dpopt.solve(dpopt.CountQuery(n=5000, alpha=0.999, loss="zero_one"), "factored")
    assert solution.details["route"] == "zero-one flow" and solution.details["relative_gap"] <= 1e-10
    assert solution.certificate.ok


def test_a_count_whose_value_travels_past_underflow_still_arrives_whole():
    # every node passes everything right: count 0's value reaches node n worth alpha^1000 g_0,
    # below any float; pieces are held as shares of their origin's count, so its row is
    # still all at output n
    n, alpha = 1000, 0.5
    supply = column_weights(n, alpha)
    right = np.zeros(n)
    for j in range(n):
        right[j] = supply[j] + (alpha * right[j - 1] if j else 0.0)
    remap = remap_from_flows(alpha, supply, right, np.zeros(n + 1))
    np.testing.assert_allclose(remap[:, [n]].toarray().ravel(), 1.0, rtol=1e-12)
    assert remap.nnz == n + 1
