"""Noise scales for d_X-private linear queries: closed form, strategies, exact optimum, privacy check."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from dpopt.dx.metric import DXMetric
from dpopt.dx.scales import (
    check_privacy,
    essential_pairs,
    closed_form_scales,
    exact_scales,
    generalized_sensitivity,
    strategy1_scales,
    strategy2_scales,
)


def test_uniform_metric_recovers_the_laplace_scale():
    rng = np.random.default_rng(1)
    q = rng.uniform(0, 1, 12)
    metric = DXMetric.uniform(12, 0.4)
    laplace = np.ptp(q) / 0.4  # Delta_1 / epsilon for a one-record change between any two elements
    assert closed_form_scales(q, metric)[0] == pytest.approx(laplace)
    assert exact_scales(q, metric)[0] == pytest.approx(laplace, rel=1e-7)


def test_strategy2_is_the_plain_dp_scale_and_exact_is_never_worse():
    rng = np.random.default_rng(2)
    q = rng.uniform(0, 1, (4, 12))
    metric = DXMetric.uniform(12, 0.4)
    delta_q = generalized_sensitivity(q, metric).max()
    np.testing.assert_allclose(strategy2_scales(q, metric), delta_q / 0.4)
    assert np.sum(exact_scales(q, metric) ** 2) <= np.sum(strategy2_scales(q, metric) ** 2) * (1 + 1e-7)


def test_example_1_scales():
    # Perrier et al. Example 1: c = 1/eps0 for the query counting Native = N... per the paper,
    # a query on the attribute "Native" alone changes only across the eps0 edge
    eps0, eps1 = 0.5, 2.0
    records = [(g, n, a) for g in "MF" for n in "YN" for a in "AB"]
    budgets = {"M": eps1, "F": eps1, "Y": eps0, "N": eps1, "A": eps1, "B": eps1}
    metric = DXMetric.attribute(records, budgets)
    native = np.array([1.0 if r[1] == "N" else 0.0 for r in records])
    male = np.array([1.0 if r[0] == "M" else 0.0 for r in records])
    assert closed_form_scales(native, metric)[0] == pytest.approx(1 / eps0)
    assert closed_form_scales(male, metric)[0] == pytest.approx(1 / eps1)


@st.composite
def instances(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(3, 15))
    k = draw(st.integers(1, 4))
    metric = DXMetric.euclidean(rng.uniform(0, 10, (n, 2)), draw(st.floats(0.05, 2.0)))
    binary = draw(st.booleans())
    q = rng.integers(0, 2, (k, n)).astype(float) if binary else rng.uniform(0, 1, (k, n))
    return q, metric


@given(instances())
def test_every_route_is_private_and_exact_is_best(instance):
    q, metric = instance
    from dpopt.dx.scales import exact_surrogate, psa_scales

    routes = {
        "strategy1": strategy1_scales(q, metric),
        "strategy2": strategy2_scales(q, metric),
        "psa": psa_scales(q, metric).scales,
        "exact": exact_scales(q, metric),
    }
    for name, c in routes.items():
        scaled = np.divide(q, c[:, None], out=np.zeros_like(q), where=c[:, None] > 0)
        assert check_privacy(scaled, metric).ok, name
    best = np.sum(routes["exact"] ** 2)
    assert best <= min(np.sum(c**2) for c in routes.values()) * (1 + 1e-6)
    if q.shape[0] == 1 and np.ptp(q) > 0:
        transformed, _, _ = exact_surrogate(q, metric, 100)
        assert check_privacy(transformed, metric).ok


def test_privacy_check_reports_the_worst_pair():
    metric = DXMetric.uniform(3, 1.0)
    check = check_privacy([[0.0, 0.5, 2.0]], metric)
    assert not check.ok and check.worst_pair == (0, 2) and check.worst_ratio == pytest.approx(2.0)
    assert check.pairs_checked == 3


def _random_instance(seed: int, n: int = 25, k: int = 3):
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 1, (k, n)), DXMetric.euclidean(rng.uniform(0, 100, (n, 2)), 0.2)


def test_psa_is_private_and_recovers_plain_dp_for_one_query():
    from dpopt.dx.scales import psa_scales

    q, metric = _random_instance(5)
    result = psa_scales(q, metric)
    assert result.converged and check_privacy(q / result.scales[:, None], metric).ok
    single = psa_scales(q[:1], metric)
    assert single.scales[0] == pytest.approx(closed_form_scales(q[:1], metric)[0], rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_constraint_reduction_and_lazy_pairs_never_change_the_optimum(seed):
    from dpopt.dx.scales import solve_exact

    rng = np.random.default_rng(seed)
    coords = rng.uniform(0, 100, (30, 2))
    for metric in (DXMetric.euclidean(coords, 0.3), DXMetric.blowfish(coords, 1.0, 30.0)):
        q = rng.uniform(0, 1, (3, 30))
        lazy, report = solve_exact(q, metric, reduce=True)
        full, full_report = solve_exact(q, metric, reduce=False)
        assert np.sum(lazy**2) == pytest.approx(np.sum(full**2), rel=1e-6)
        assert report.used <= report.essential <= report.total == full_report.total


def test_blowfish_closure_drops_most_pairs():
    from dpopt.dx.scales import essential_pairs

    coords = np.random.default_rng(9).uniform(0, 100, (40, 2))
    metric = DXMetric.blowfish(coords, 1.0, 30.0)
    assert len(essential_pairs(metric)[0]) < 0.5 * len(metric.pairs()[0])


@pytest.mark.parametrize("records", [10, 100, 10_000])
def test_exact_surrogate_beats_the_papers_closed_form_and_is_private(records):
    from dpopt.dx.scales import exact_surrogate, surrogate_objective

    q, metric = _random_instance(3, k=1)
    c0 = closed_form_scales(q, metric)
    transformed, c, _ = exact_surrogate(q, metric, records)
    assert check_privacy(transformed, metric).ok
    assert surrogate_objective(transformed, c, q, records) <= surrogate_objective(q / c0, c0, q, records) * (1 + 1e-9)


@pytest.mark.parametrize("epsilon", [1e-13, 1e-9, 1e-3, 1.0, 1e15])  # 1e15: the largest a metric's epsilon may be
def test_single_query_programs_solve_at_every_metric_scale(epsilon):
    # distances of up to 1e17 (or of 1e-8) beside a step of 1 / n once left Clarabel calling the surrogate
    # "infeasible" (the hotspots problem file at epsilon = 1e15, exit 3)
    from dpopt.dx.scales import exact_lp_bound, exact_surrogate, lp_bound_objective, surrogate_objective

    coordinates = np.random.default_rng(5).uniform(0, 100, (12, 2))
    q = np.random.default_rng(6).uniform(0, 1, (1, 12))
    metric = DXMetric.euclidean(coordinates, epsilon)
    c0 = closed_form_scales(q, metric)
    # slack: Clarabel's accuracy (1e-7), and c q' - q is only known to ~1e-15 an entry in floats
    # (at epsilon = 1e15 q' ~ 1e16, so the bias term is float noise against a noise term of 1e-32)
    transformed, c, _ = exact_surrogate(q, metric, 1000)
    assert check_privacy(transformed, metric).ok
    closed = surrogate_objective(q / c0, c0, q, 1000)
    assert surrogate_objective(transformed, c, q, 1000) <= closed * (1 + 1e-7) + 1000**2 * q.size * 1e-30
    for p in (1, np.inf):
        transformed, c, _ = exact_lp_bound(q, metric, 1000, p)
        assert check_privacy(transformed, metric).ok
        closed = lp_bound_objective(q / c0, c0, q, 1000, p)
        assert lp_bound_objective(transformed, c, q, 1000, p) <= closed * (1 + 1e-7) + 1000 * q.size * 1e-15


@given(exponent=st.integers(-14, 1), low=st.floats(-1.0, 1.0), spread=st.floats(0.01, 2.0), records=st.sampled_from([1, 10, 1000]))
def test_single_query_programs_meet_their_closed_forms_on_two_elements(exponent, low, spread, records):
    # Two elements at d_X = d with q = (low, low + D): every program is one-dimensional in c.
    # Surrogate: bias n^2 (D - c d)^2 / 2 below c = D / d, so c* = n^2 d D / (4 + n^2 d^2);
    # l_1 bound: c + n (D - c d), linear, so min(n D, D / d); l_inf: c + n (D - c d) / 2.
    # Until 2026-11-28 the programs were scaled by the closed-form scale D / d alone and
    # at d = 1e-8 (n = 1000) the "exact" surrogate was 78% above this optimum, the l_1 bound 3e4 times.
    from dpopt.dx.scales import exact_lp_bound, exact_surrogate, lp_bound_objective, surrogate_objective

    d, gap = 10.0**exponent, spread
    q = np.array([[low, low + gap]])
    metric = DXMetric(np.array([[0.0, d], [d, 0.0]]))
    n = records
    c = n * n * d * gap / (4 + n * n * d * d)
    optimum = {"surrogate": 2 * c * c + n * n * (gap - c * d) ** 2 / 2,
               1: min(n * gap, gap / d), np.inf: min(n * gap / 2, gap / d)}
    transformed, scale, _ = exact_surrogate(q, metric, n)
    assert check_privacy(transformed, metric).ok
    assert surrogate_objective(transformed, scale, q, n) == pytest.approx(optimum["surrogate"], rel=1e-8)
    for p in (1, np.inf):
        transformed, scale, _ = exact_lp_bound(q, metric, n, p)
        assert check_privacy(transformed, metric).ok
        assert lp_bound_objective(transformed, scale, q, n, p) == pytest.approx(optimum[p], rel=1e-8)


def test_exact_surrogate_against_an_independent_grid_search():
    # for fixed c the best q' is a convex projection; scan c on a fine grid with the QP in q' only
    import cvxpy as cp
    from dpopt.dx.scales import exact_surrogate, surrogate_objective

    q, metric = _random_instance(4, n=10, k=1)
    records = 20
    transformed, c, _ = exact_surrogate(q, metric, records)
    best = surrogate_objective(transformed, c, q, records)
    i, j = metric.pairs()
    grid = []
    for scale in np.linspace(0.5, 1.5, 41) * c[0]:
        v = cp.Variable(metric.size)
        program = cp.Problem(cp.Minimize(records**2 * cp.sum_squares(scale * v - q[0]) + 2 * scale**2),
                             [cp.abs(v[i] - v[j]) <= metric.matrix[i, j]])
        program.solve(solver="CLARABEL")
        grid.append(program.value)
    assert best <= min(grid) * (1 + 1e-6)
    assert best >= min(grid) * (1 - 1e-2)  # the grid is 2.5 % wide; the optimum is inside it


def test_alternating_never_increases_the_objective():
    from dpopt.dx.scales import alternating, solve_exact

    q, metric = _random_instance(6, k=3)
    c, _ = solve_exact(q, metric)
    result = alternating(q, metric, 50, (q / c[:, None], c), iterations=5)
    assert all(b <= a * (1 + 1e-12) for a, b in zip(result.objectives, result.objectives[1:]))
    assert check_privacy(result.transformed, metric).ok


def test_alternating_keeps_its_last_point_when_a_q_step_fails(monkeypatch):
    import dpopt.dx.scales as scales
    from dpopt.validation import SolverError

    q, metric = _random_instance(6, k=3)
    c, _ = scales.solve_exact(q, metric)
    calls = []
    real_step = scales._q_step

    def failing_second(*args, **kwargs):
        calls.append(1)
        if len(calls) > 1:
            raise SolverError("CLARABEL", "optimal_inaccurate", "(test)")
        return real_step(*args, **kwargs)

    monkeypatch.setattr(scales, "_q_step", failing_second)
    result = scales.alternating(q, metric, 50, (q / c[:, None], c), iterations=5)
    assert result.stopped.startswith("iteration 2:") and "optimal_inaccurate" in result.stopped
    assert len(result.objectives) == 2 and result.objectives[1] <= result.objectives[0]
    assert check_privacy(result.transformed, metric).ok
    assert scales.surrogate_objective(result.transformed, result.scales, q, 50) <= result.objectives[1] * (1 + 1e-12)


def test_constant_rows_never_raise_the_objective_and_keep_privacy():
    from dpopt.dx.scales import solve_exact, surrogate_objective, with_constant_rows

    q, metric = _random_instance(8, k=3)
    for n in (1, 50, 10_000):
        for budget in (1.0, 1e-6):
            scaled = DXMetric(metric.matrix * budget)
            c, _ = solve_exact(q, scaled)
            start = (q / c[:, None], c)
            transformed, scales_ = with_constant_rows(*start, q, n)
            assert check_privacy(transformed, scaled).ok
            assert surrogate_objective(transformed, scales_, q, n) <= surrogate_objective(*start, q, n)
            if budget < 1e-3:  # far below the closed form's at a tiny budget: each row is its mean
                constant = n**2 * float(((q - q.mean(axis=1, keepdims=True)) ** 2).sum())
                assert surrogate_objective(transformed, scales_, q, n) == pytest.approx(constant, rel=1e-9)


@given(instances())
def test_exact_improvement_factor_is_at_least_every_strategys(instance):
    from dpopt.dx.evaluation import improvement_factor
    from dpopt.dx.scales import psa_scales, solve_exact

    q, metric = instance
    if np.ptp(q, axis=1).min() == 0:
        return  # a constant row needs no noise; the IF leaves it out
    best, _ = solve_exact(q, metric, objective="improvement")
    assert check_privacy(q / best[:, None], metric).ok
    ours = improvement_factor(q, best, metric)
    for c in (strategy1_scales(q, metric), strategy2_scales(q, metric), psa_scales(q, metric).scales):
        assert ours >= improvement_factor(q, c, metric) * (1 - 1e-6)


def test_reduction_never_changes_the_surrogate_optimum():
    from dpopt.dx.scales import exact_surrogate, surrogate_objective

    rng = np.random.default_rng(11)
    coords = rng.uniform(0, 100, (25, 2))
    for metric in (DXMetric.euclidean(coords, 0.3), DXMetric.blowfish(coords, 1.0, 35.0)):
        q = rng.uniform(0, 1, (1, 25))
        reduced = exact_surrogate(q, metric, 30, reduce=True)
        full = exact_surrogate(q, metric, 30, reduce=False)
        assert surrogate_objective(reduced[0], reduced[1], q, 30) == pytest.approx(surrogate_objective(full[0], full[1], q, 30), rel=1e-6)


def test_two_elements_at_one_point_do_not_drop_each_others_pairs():
    """Elements 0 and 1 at distance 0: (0, 2) via 1 and (1, 2) via 0 each looked implied by the
    other, both were dropped, and `exact` returned a scale of 0 for a query that differs on them
    (the closed form needs 1). Detours now count only through positive, shorter parts."""
    import dpopt

    metric = DXMetric.euclidean(np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]]), 1.0)
    i, j = essential_pairs(metric)
    assert {(0, 1), (0, 2), (1, 2)} == set(zip(i.tolist(), j.tolist()))
    problem = dpopt.DXLinearQuery(n=10, query=[[1.0, 1.0, 0.0]],
                                  metric={"type": "euclidean", "coordinates": [[0, 0], [0, 0], [1, 0]], "epsilon": 1.0})
    with np.errstate(divide="ignore"):  # the plain-DP baseline divides by the smallest distance, 0 here
        scales = dpopt.solve(problem, "exact").details["scales"]
    assert scales == pytest.approx([1.0], rel=1e-6)


def test_above_the_reduction_cap_every_pair_is_a_candidate_and_the_optimum_is_the_same(monkeypatch):
    """Past ESSENTIAL_PAIRS_MAX_N the O(N^3) pair reduction is skipped: the lazy pool then draws
    from every finite pair, adds only violated ones, and reaches the same optimum (a line
    metric, where the reduction keeps only neighbours, and a Euclidean one)."""
    from dpopt.dx import scales
    from dpopt.dx.scales import exact_surrogate

    rng = np.random.default_rng(4)
    dates = DXMetric.scaled_dates(np.sort(rng.uniform(0, 50, 40)), 1.0, 2.0)
    monkeypatch.setattr(scales, "ESSENTIAL_PAIRS_MAX_N", 10)
    assert len(essential_pairs(dates)[0]) == 39  # a line keeps its reduction at any N: the sorted neighbours
    monkeypatch.undo()
    # the same line-shaped matrix given as a plain matrix, and a Euclidean metric, above the cap
    for metric in (DXMetric(dates.matrix), DXMetric.euclidean(rng.uniform(0, 9, (40, 2)), 0.5)):
        q = rng.uniform(0, 1, (1, 40))
        reduced = exact_surrogate(q, metric, 100)
        assert essential_pairs(metric) is essential_pairs(metric)  # computed once per metric
        monkeypatch.setattr(scales, "ESSENTIAL_PAIRS_MAX_N", 10)
        assert len(essential_pairs(metric)[0]) == len(metric.pairs()[0])
        full = exact_surrogate(q, metric, 100)
        monkeypatch.undo()
        assert check_privacy(full[0], metric).ok and full[2].essential == full[2].total
        assert scales.surrogate_objective(*full[:2], q, 100) == pytest.approx(scales.surrogate_objective(*reduced[:2], q, 100), rel=1e-6)


def test_a_nearly_constant_transformed_query_is_shrunk_until_private_as_stored():
    """A random probe: at epsilon = 0.01 the exact l_inf bound for one query takes c = 2.5e-10, so
    q' is about 3.7e8 with spreads of 0.06; dividing by the measured excess once left the stored
    floats 1 + 1.5e-8 over (exit 4). Every pair now holds as measured, for both exact bounds."""
    import dpopt

    problem = dpopt.DXLinearQuery(
        n=5, query=[-0.742, -0.057, 0.977, 0.533, 0.437, 0.855, -0.111, -0.275, 0.586, -0.794, 0.533],
        histogram=[0, 0, 1, 0, 1, 0, 0, 0, 1, 1, 1],
        metric={"type": "euclidean", "epsilon": 0.01,
                "coordinates": [[38.59, 3.14], [33.58, 41.35], [1.94, 34.18], [14.0, 37.22], [48.93, 0.14], [20.34, 24.97],
                                [49.06, 46.21], [1.44, 6.82], [20.38, 40.2], [39.48, 27.79], [46.07, 41.01]]})
    for method in ("exact_linf", "exact_l1"):
        solution = dpopt.solve(problem, method)
        assert solution.certificate.ok and solution.certificate.max_privacy_loss <= 1.0, method
