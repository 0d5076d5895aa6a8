"""The noise LPs' privacy rows (dpopt.programs.noise_adding): the range-maximum table against one row per pair."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from dpopt.lazy_modules import cvxpy as cp
from dpopt.mechanisms.neighbouring_sets import symmetric_shifts
from dpopt.problems.noise_adding import NoiseAdding
from dpopt.programs.range_max import DIRECT_RUN, line_privacy_rows, offset_runs, range_blocks
from tests.programs.test_range_max import block_maxima
from dpopt.programs.noise_adding import (
    build_grid_program,
    build_noise_program,
    extension_matrix,
    grid_functionals,
    grid_line,
    grid_privacy_matrix,
    grid_privacy_rows,
    grid_rows,
    grid_shifts,
    pair_violation_weight,
    mass_vector,
    mix_with_strict,
    privacy_matrix,
    repair_window,
    strictly_private_cells,
    strictly_private_window,
    window_line,
    window_rows,
    window_shifts,
)
from dpopt.solvers import run_program
from tests.conftest import examples


@st.composite
def neighbouring_sets(draw: st.DrawFn) -> np.ndarray:
    """A union of 1-3 intervals in [0, 10] (some of them points), as dpopt reads V."""
    ends = sorted(draw(st.lists(st.floats(0.0, 9.0, allow_subnormal=False), min_size=1, max_size=5, unique=True)))
    ends.append(draw(st.floats(9.5, 10.0)))  # Delta, in an interval of positive length
    if len(ends) % 2:
        ends.insert(0, 0.0) if ends[0] > 0.0 else ends.pop(0)
    pairs = [[ends[i], ends[i + 1]] for i in range(0, len(ends), 2)]
    pairs[-1][0] = min(pairs[-1][0], 9.0)
    if draw(st.booleans()):
        pairs[0][0] = 0.0
    return np.array(pairs)


@settings(max_examples=examples(60))
@given(v=neighbouring_sets(), grid=st.integers(1, 30), window=st.integers(1, 4), epsilon=st.floats(0.05, 3.0),
       seed=st.integers(0, 2**32 - 1), noise=st.sampled_from([0.0, 1e-6, 0.3]), direct_run=st.sampled_from([1, 4, DIRECT_RUN]))
def test_table_rows_take_the_same_values_as_one_row_per_pair(v, grid, window, epsilon, seed, noise, direct_run):
    """With U the exact block maxima, the largest table row is the largest pair row (or 0): the same test of privacy.

    Together with ``U >= block maxima`` for every feasible U (the level rows), this is the
    exactness of the formulation; p is near a private density or far from one.
    """
    cells, decay, bound = grid * window, float(np.exp(-epsilon)), float(np.exp(epsilon))
    offsets = grid_shifts(symmetric_shifts(v), float(v.max()) / grid)
    rows, table = grid_privacy_rows(cells, grid, decay, offsets, bound, direct_run)
    estimate = grid_rows(symmetric_shifts(v), float(v.max()), grid, window)
    if direct_run == DIRECT_RUN:  # the estimate is for the LP dpopt builds
        assert rows.shape[0] <= estimate[0] and rows.shape[1] == cells + table.variables <= estimate[1]
    size = grid_line(cells, grid, decay).size
    runs = [(int(lo), int(hi)) for lo, hi in offset_runs(offsets)]
    blocks = [range_blocks(size, run) for run in runs if run[1] - run[0] + 1 > direct_run]
    levels = max((int(k.max()) for _, k, _, _ in blocks if k.size), default=0)
    assert rows.shape[0] == (sum(2 * (size - (1 << k) + 1) for k in range(1, levels + 1))  # U_k >= both halves
                             + sum(int(np.sum(1 + (one != two))) for _, _, one, two in blocks)  # two blocks <= e^eps value(b)
                             + sum(size - abs(j) for lo, hi in runs if hi - lo + 1 <= direct_run for j in range(lo, hi + 1)))
    rng = np.random.default_rng(seed)
    p = strictly_private_cells(cells, grid, epsilon) * np.exp(noise * rng.standard_normal(cells))
    line = grid_line(cells, grid, decay).values(p)
    z = np.concatenate([p, *block_maxima(line, levels)])
    assert z.size == rows.shape[1]
    pairs = grid_privacy_matrix(cells, grid, decay, offsets, bound) @ p
    assert np.max(rows @ z) == pytest.approx(max(np.max(pairs), 0.0), rel=1e-12, abs=1e-15)


@settings(max_examples=examples(20))
@given(v=neighbouring_sets(), grid=st.integers(8, 60), window=st.integers(1, 3), epsilon=st.floats(0.1, 2.0),
       power=st.sampled_from([1, 2]), direct_run=st.sampled_from([1, 4, DIRECT_RUN]))
def test_the_table_lp_has_the_optimum_of_the_lp_with_one_row_per_pair(v, grid, window, epsilon, power, direct_run):
    """An independent route: the LP written with every (cell, offset) row, solved by HiGHS's default simplex."""
    shifts, delta = symmetric_shifts(v), float(v.max())
    built = build_grid_program(shifts, delta, epsilon, grid, window, power, direct_run)
    run_program(built.program, owner="test", highs_first={"solver": "ipm", "run_crossover": "on"})
    cells = grid * window
    p = cp.Variable(cells, nonneg=True)
    mass, cost = grid_functionals(cells, grid, delta / grid, float(np.exp(-epsilon)), power)
    pairs = grid_privacy_matrix(cells, grid, float(np.exp(-epsilon)), grid_shifts(shifts, delta / grid), float(np.exp(epsilon)))
    direct = cp.Problem(cp.Minimize(cost @ p), [pairs @ p <= 0, mass @ p == 1])
    run_program(direct, owner="test")
    assert built.program.value == pytest.approx(direct.value, rel=1e-8)


@settings(max_examples=examples(30))
@given(v=neighbouring_sets(), grid=st.integers(1, 12), window=st.integers(1, 3), epsilon=st.floats(0.05, 3.0),
       seed=st.integers(0, 2**32 - 1), noise=st.sampled_from([0.0, 1e-9, 1e-4, 0.5]))
def test_repair_weight_without_the_pair_matrix_is_the_matrix_one(v, grid, window, epsilon, seed, noise):
    cells, decay, bound = grid * window, float(np.exp(-epsilon)), float(np.exp(epsilon))
    offsets = grid_shifts(symmetric_shifts(v), float(v.max()) / grid)
    q = strictly_private_cells(cells, grid, epsilon)
    p = q[::-1].copy() if noise == 0.5 else q * np.exp(noise * np.random.default_rng(seed).standard_normal(cells))
    line = grid_line(cells, grid, decay)
    for some in [offsets] + [offsets[i : i + 1] for i in range(len(offsets))]:  # all offsets, and each alone
        _, expected = mix_with_strict(p, q, sparse.csr_array(grid_privacy_matrix(cells, grid, decay, some, bound)))
        weight = pair_violation_weight(p, q, line, some, bound)
        assert (weight == 0.0) == (expected == 0.0)
        assert weight == pytest.approx(expected / (1 + 1e-6), rel=1e-6, abs=2e-15)


def test_a_wide_interval_takes_a_few_rows_per_cell():
    """The random probe's slow case (55 s through 1,352,502 pair rows): V = [1, 7.3597], 200 cells per Delta, 8 periods."""
    rows, variables = grid_rows(symmetric_shifts(np.array([[1.0, 7.3597]])), 7.3597, 200, 8)
    pair_rows = len(grid_shifts(symmetric_shifts(np.array([[1.0, 7.3597]])), 7.3597 / 200)) * (2 * 1600 + 4 * 200)
    assert rows < pair_rows / 15 and variables < 30_000


# --- the integer window LP (noise_adding with an integer sensitivity) ----------------------

@settings(max_examples=examples(60))
@given(delta=st.integers(1, 12), extra=st.integers(0, 20), epsilon=st.floats(0.05, 5.0), seed=st.integers(0, 2**32 - 1),
       noise=st.sampled_from([0.0, 1e-6, 0.3]), direct_run=st.sampled_from([1, 3, DIRECT_RUN]))
def test_window_rows_take_the_same_values_as_one_row_per_value_and_shift(delta, extra, epsilon, seed, noise, direct_run):
    """As for the grid: with U the exact block maxima, the largest row is the largest row of :func:`privacy_matrix` (or 0)."""
    m, alpha = delta + extra, float(np.exp(-epsilon))
    rows, table = line_privacy_rows(window_line(m, delta, alpha), 2 * m + 1, window_shifts(delta), alpha, 1.0, direct_run)
    if direct_run == DIRECT_RUN:
        estimate = window_rows(delta, m)
        assert rows.shape[0] <= estimate[0] and rows.shape[1] <= estimate[1]
    rng = np.random.default_rng(seed)
    p = strictly_private_window(m, delta, alpha) * np.exp(noise * rng.standard_normal(2 * m + 1))
    line = window_line(m, delta, alpha).values(p)
    np.testing.assert_array_equal(line, extension_matrix(m, delta, alpha) @ p)
    z = np.concatenate([p, *block_maxima(line, table.levels)])
    assert np.max(rows @ z) == pytest.approx(max(np.max(privacy_matrix(m, delta, alpha) @ p), 0.0), rel=1e-12, abs=1e-15)


@settings(max_examples=examples(30))
@given(delta=st.integers(1, 12), extra=st.integers(0, 12), epsilon=st.floats(0.05, 5.0), seed=st.integers(0, 2**32 - 1),
       noise=st.sampled_from([1e-9, 1e-4, 0.5]))
def test_window_repair_without_the_pair_matrix_is_the_matrix_one(delta, extra, epsilon, seed, noise):
    problem = NoiseAdding(sensitivity=delta, epsilon=epsilon, window=delta + extra)
    m, alpha = problem.window, problem.alpha
    q = strictly_private_window(m, delta, alpha)
    p = q * np.exp(noise * np.random.default_rng(seed).standard_normal(2 * m + 1))
    expected, expected_weight = mix_with_strict(p / (mass_vector(m, delta, alpha) @ p), q, privacy_matrix(m, delta, alpha))
    repaired, weight = repair_window(p, problem)
    assert (weight == 0.0) == (expected_weight == 0.0)
    assert weight == pytest.approx(expected_weight, rel=1e-6, abs=1e-15)
    np.testing.assert_allclose(repaired, expected, rtol=1e-9, atol=1e-300)


@settings(max_examples=examples(40))
@given(delta=st.integers(1, 5), extra=st.integers(0, 6), epsilon=st.floats(0.1, 20.0), seed=st.integers(0, 2**32 - 1),
       spread=st.sampled_from([1e-12, 1e-3, 1.0, 30.0]))
def test_the_majorant_window_is_the_max_plus_closure_by_its_definition(delta, extra, epsilon, seed, spread):
    """``y(z) = max_z' alpha^ceil(|z - z'| / Delta) p(z')`` over the window and two tail periods each
    side, pair by pair, with each raised tail value pulled back into its source period until the
    window's own periodic tails are closed, against the sliding-maximum passes; the result is
    private with its periodic tails, however far p was from private."""
    from dpopt.mechanisms.integer_noise import PeriodicNoise
    from dpopt.methods.noise_adding import certify_noise
    from dpopt.programs.noise_adding import majorant_window

    problem = NoiseAdding(sensitivity=delta, epsilon=epsilon, window=delta + extra)
    m, alpha = problem.window, problem.alpha
    mass = mass_vector(m, delta, alpha)
    p = np.exp(spread * np.random.default_rng(seed).standard_normal(2 * m + 1)) * strictly_private_window(m, delta, alpha)
    p /= mass @ p
    z = np.arange(-m - 2 * delta, m + 2 * delta + 1)
    steps = alpha ** np.ceil(np.abs(z[:, None] - z[None, :]) / delta)
    w = p.copy()
    for _ in range(50):
        line = PeriodicNoise(w / (mass @ w), delta, alpha).pmf(z)
        closed = np.max(line[None, :] * steps, axis=1)
        back = closed[2 * delta: 2 * delta + 2 * m + 1].copy()
        for k in (1, 2):
            source = np.abs(z) - k * delta  # tail value z comes from the window value sign(z) (|z| - k Delta)
            for position in np.flatnonzero((np.abs(z) > m + (k - 1) * delta) & (np.abs(z) <= m + k * delta)):
                at = int(np.sign(z[position]) * source[position]) + m
                back[at] = max(back[at], closed[position] / alpha**k)
        if np.allclose(back / (mass @ back), w / (mass @ w), rtol=1e-13, atol=0):
            break
        w = back
    y = majorant_window(p, problem)
    np.testing.assert_allclose(y, w / (mass @ w), rtol=1e-10, atol=1e-300)
    assert certify_noise(PeriodicNoise(y, delta, alpha), epsilon).ok


@pytest.mark.parametrize("cost", ["absolute", "squared"])
def test_the_window_lp_through_the_table_is_the_staircase(cost):
    """Delta = 100 > DIRECT_RUN: the range-maximum rows, solved by the interior point, against the closed form."""
    import dpopt

    problem = NoiseAdding(sensitivity=100, epsilon=0.7, cost=cost)
    assert build_noise_program(problem)[0].variables()[0].size > 2 * problem.window + 1  # the table is there
    lp, stair = dpopt.solve(problem, "lp"), dpopt.solve(problem, "staircase")
    assert lp.certificate.ok and lp.objective == pytest.approx(stair.objective, rel=1e-9)


@settings(max_examples=examples(30), deadline=None)
@given(sensitivity=st.one_of(st.integers(1, 6), st.integers(DIRECT_RUN + 1, DIRECT_RUN + 8)), epsilon=st.floats(0.05, 5.0),
       cost=st.sampled_from(["absolute", "squared"]),
       seed=st.integers(0, 2**32 - 1), scale=st.floats(1e-6, 1e3))
def test_the_window_bound_from_any_multipliers_is_below_the_optimum(sensitivity, epsilon, cost, seed, scale):
    """Weak duality, whatever multipliers (with a range-maximum table too, once they are balanced):
    the bound never exceeds the optimum, which is the discrete staircase's (Geng-Viswanath; the LP
    reaches it, test above)."""
    import dpopt
    from dpopt.programs.noise_adding import window_lower_bound, window_privacy_rows

    problem = NoiseAdding(sensitivity=sensitivity, epsilon=epsilon, cost=cost)
    rows, _ = window_privacy_rows(problem)
    multipliers = scale * np.random.default_rng(seed).exponential(size=rows.shape[0])
    optimum = dpopt.solve(problem, "staircase").objective
    assert window_lower_bound(problem, multipliers) <= optimum * (1 + 1e-12)


@pytest.mark.parametrize("sensitivity,epsilon,cost", [(1, 1.0, "absolute"), (3, 0.1, "squared"), (40, 5.0, "absolute"), (10, 1e-6, "absolute"),
                                                    (DIRECT_RUN + 1, 1.0, "squared"), (100, 5.0, "absolute")])
def test_the_integer_lp_is_judged_optimal_by_a_certified_bound(sensitivity, epsilon, cost):
    """Until 2026-11-28 the LP was called optimal when its repaired objective met the solver's
    own; now its row duals give a bound that meets the discrete staircase's optimum, and the
    verdict rests on it (with a range-maximum table, Delta > 64, after balancing the table's
    reduced costs, which the solver leaves at -1e-13 to -6e-8)."""
    import dpopt

    problem = NoiseAdding(sensitivity=sensitivity, epsilon=epsilon, cost=cost)
    solution = dpopt.solve(problem, "lp")
    staircase = dpopt.solve(problem, "staircase").objective
    lower = solution.details["lower_bound"]
    assert solution.exact and solution.details["judged_by"] == "certified lower bound"
    assert lower <= staircase * (1 + 1e-12) and lower == pytest.approx(staircase, rel=1e-9)
    assert solution.summary()["lower_bound"] == lower


def test_balancing_leaves_every_table_reduced_cost_non_negative():
    """The solver's duals leave some range-maximum variables' reduced costs negative (so no bound
    would hold); balanced, none is, with room above the rounding of the sums."""
    from dpopt.programs.noise_adding import _table_balanced, window_privacy_rows

    problem = NoiseAdding(sensitivity=100, epsilon=1.0)
    program, _ = build_noise_program(problem)
    run_program(program, solver=None, owner="test")
    m = problem.window
    rows, table = window_privacy_rows(problem)
    lam = np.clip(np.asarray(program.constraints[0].dual_value, dtype=float), 0.0, None)
    assert (rows.T @ lam)[2 * m + 1:].min() < 0
    balanced = _table_balanced(rows, lam, table)
    assert (rows.T @ balanced)[2 * m + 1:].min() >= 0 and np.all(balanced >= 0) and np.all(balanced <= lam)
