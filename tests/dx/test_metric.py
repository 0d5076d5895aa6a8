"""d_X metrics: validation, the triangle check, closure, and the paper's constructions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpopt.dx.metric import DXMetric, first_triangle_violation
from dpopt.validation import InvalidParameterError
from tests.conftest import examples


def test_example_1_attribute_metric():
    # Perrier et al. Example 1: eps(Y) = eps0, every other value eps1
    eps0, eps1 = 0.5, 2.0
    records = [(g, n, a) for g in "MF" for n in "YN" for a in "AB"]
    budgets = {"M": eps1, "F": eps1, "Y": eps0, "N": eps1, "A": eps1, "B": eps1}
    d = DXMetric.attribute(records, budgets).matrix
    assert d[0, 1] == eps1 and d[0, 2] == eps0 and d[0, 7] == eps0 + 2 * eps1
    # the same records from numpy (a 2-D array of strings, or rows of numpy scalars) give the same metric
    assert np.array_equal(DXMetric.attribute(np.array(records), budgets).matrix, d)
    assert np.array_equal(DXMetric.attribute([np.array(r) for r in records], budgets).matrix, d)


def test_triangle_violation_names_the_triple_and_closure_repairs_it():
    bad = np.array([[0, 1, 5], [1, 0, 1], [5, 1, 0.0]])
    with pytest.raises(InvalidParameterError, match=r"d\[0,2\] = 5 > d\[0,1\] \+ d\[1,2\] = 2"):
        DXMetric(bad)
    np.testing.assert_array_equal(DXMetric(bad, closure=True).matrix[0, 2], 2.0)


@pytest.mark.parametrize(
    "matrix,text",
    [
        (np.array([[0, 1], [2, 0.0]]), "symmetric"),
        (np.array([[1, 1], [1, 0.0]]), "diagonal"),
        (np.array([[0, -1], [-1, 0.0]]), "non-negative"),
        (np.zeros((2, 3)), "square"),
    ],
)
def test_invalid_matrices_rejected(matrix, text):
    with pytest.raises(InvalidParameterError, match=text):
        DXMetric(matrix)


def test_infinite_distances_are_allowed_and_skipped():
    d = np.array([[0, 1, np.inf], [1, 0, np.inf], [np.inf, np.inf, 0.0]])
    metric = DXMetric(d)
    i, j = metric.pairs()
    assert list(zip(i, j)) == [(0, 1)]


def test_constructors_are_metrics():
    rng = np.random.default_rng(0)
    assert DXMetric.euclidean(rng.uniform(0, 100, (20, 2)), 0.1).size == 20
    np.testing.assert_allclose(DXMetric.heterogeneous([1.0, 2.0, 3.0]).matrix[0], [0, 3, 4])
    np.testing.assert_allclose(DXMetric.scaled_dates([0, 10, 30], 1.0, 10.0).matrix[0], [0, 1, 3])
    graph = DXMetric.graph(4, [(0, 1, 1.0), (1, 2, 2.0), (2, 3, 1.0)])
    assert graph.matrix[0, 3] == 4.0
    assert DXMetric.uniform(3, 0.7).matrix[0, 1] == 0.7


def test_equal_metric_specs_share_one_read_only_metric_and_files_are_read_again(tmp_path):
    from dpopt.problems.dx_linear_query import metric_from_spec

    spec = {"type": "blowfish", "coordinates": [[0.0, 0.0], [1.0, 0.0], [5.0, 0.0]], "epsilon": 1.0, "threshold": 2.0}
    first = metric_from_spec(spec, 3)
    assert metric_from_spec(dict(spec), 3) is first and not first.matrix.flags.writeable
    assert metric_from_spec(spec | {"threshold": 10.0}, 3) is not first
    np.testing.assert_array_equal(first.matrix, [[0, 1, np.inf], [1, 0, np.inf], [np.inf, np.inf, 0]])
    path = tmp_path / "d.csv"
    path.write_text("0,1\n1,0\n")
    assert metric_from_spec({"type": "csv", "path": str(path)}, 2).matrix[0, 1] == 1
    path.write_text("0,2\n2,0\n")
    assert metric_from_spec({"type": "csv", "path": str(path)}, 2).matrix[0, 1] == 2


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(2, 25), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_metrics_built_by_formula_pass_the_triangle_check_they_skip(size, dim, seed):
    """Euclidean, uniform, heterogeneous, dates, smooth and graph metrics are metrics by their
    formula, so they skip the O(N^3) check (proven=True); the check itself, run here, agrees."""
    from dpopt.dx.metric import first_triangle_violation

    rng = np.random.default_rng(seed)
    points = rng.uniform(-50, 50, (size, dim)).round(int(rng.integers(0, 4)))  # rounding makes collinear triples
    edges = [(i, i + 1, float(rng.uniform(0, 3))) for i in range(size - 1)] + [
        (int(a), int(b), float(w)) for a, b, w in zip(rng.integers(0, size, size), rng.integers(0, size, size), rng.uniform(0, 5, size))]
    metrics = [DXMetric.euclidean(points, 0.7), DXMetric.uniform(size, 1.3), DXMetric.heterogeneous(rng.uniform(0.1, 2, size)),
               DXMetric.scaled_dates(points[:, 0], 0.4, 3.0), DXMetric.smooth(points, 1.0, 5.0), DXMetric.graph(size, edges)]
    for metric in metrics:
        assert metric.proven and first_triangle_violation(metric.matrix) is None


def test_a_users_matrix_is_still_checked():
    assert not DXMetric(np.array([[0, 1], [1, 0.0]])).proven


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.integers(0, 12), min_size=2, max_size=30), st.sampled_from([1.0, 0.37, 1e3]), st.floats(0.1, 3.0), st.floats(0.5, 5.0))
def test_essential_pairs_on_a_line_are_the_searchs_without_it(positions, unit, epsilon, period):
    """Dates (ties included): equal points and consecutive distinct positions, read off the sort,
    are exactly the pairs the O(N^3) search (dpopt.privacy.not_implied) keeps."""
    from dpopt.privacy import not_implied

    metric = DXMetric.scaled_dates(np.array(positions, dtype=float) * unit, epsilon, period)
    searched = np.nonzero(np.triu(not_implied(metric.matrix, slack=1e-12), 1))
    assert set(zip(*(a.tolist() for a in metric.essential_pairs))) == set(zip(*(a.tolist() for a in searched)))


def _dx_calls():
    from dpopt.dx import evaluation, mechanisms, scales, smalldb

    line = DXMetric.euclidean([[0.0], [1.0], [3.0]])
    q = [[0.0, 1.0, 2.0]]
    nan = float("nan")
    return [  # until 2026-11-29: a raw AttributeError ("'list' object has no attribute 'size'"), or nan
        (lambda: scales.closed_form_scales(q, [[0, 1], [1, 0]]), "'metric'"),
        (lambda: scales.check_privacy(q, None), "'metric'"),
        (lambda: scales.essential_pairs("line"), "'metric'"),
        (lambda: scales.closed_form_scales("abc", line), "'query'"),
        (lambda: scales.closed_form_scales([[0.0, nan, 1.0]], line), "'query'"),
        (lambda: scales.surrogate_objective(q, [nan], q, 10), "'scales'"),  # was nan
        (lambda: scales.surrogate_objective(q, [1.0], q, 0), "'n'"),
        (lambda: scales.lp_bound_objective(q, [1.0, 2.0], q, 10, 1), "'transformed'"),
        (lambda: scales.exact_surrogate(q, line, 0), "'n'"),  # was ZeroDivisionError
        (lambda: scales.exact_lp_bound(q, line, 10, 2), "'p'"),
        (lambda: evaluation.baseline_scale(q, 3), "'metric'"),
        (lambda: evaluation.improvement_factor(q, [nan], line), "'scales'"),
        (lambda: evaluation.empirical_rmse("mechanism", q, [1, 1, 1]), "'mechanism'"),
        (lambda: mechanisms.DXLaplaceMechanism(transformed=q, scales=[1.0], metric=[[0]]), "'metric'"),
        (lambda: mechanisms.DXLaplaceMechanism(transformed=q, scales=["x"], metric=line), "'scales'"),
        (lambda: mechanisms.DXExponentialMechanism(utilities=[[0, 1, 2], [2, 1, 0]], scale=1.0, metric=None), "'metric'"),
        (lambda: smalldb.smalldb_preprocessing(q, line, 0, 1.0), "'n'"),
        (lambda: smalldb.smalldb_preprocessing(q, object(), 5, 1.0), "'metric'"),
    ]


@pytest.mark.parametrize("index", range(18))
def test_the_dx_functions_refuse_bad_input_naming_the_field(index):
    call, field = _dx_calls()[index]
    with pytest.raises(InvalidParameterError, match=field):
        call()


def _triangle_passes(d):
    """The check as N numpy passes, written out (the route the closure only screens for)."""
    for k in range(d.shape[0]):
        bad = d > (d[:, k][:, None] + d[k, :][None, :]) * (1 + 1e-12) + 1e-300
        if bad.any():
            i, j = np.argwhere(bad)[0]
            return int(i), int(j), k
    return None


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(2, 30), st.integers(0, 2**32 - 1), st.sampled_from(["points", "random", "nudged", "zeros", "chain", "infinite"]))
def test_the_triangle_check_screened_by_a_closure_finds_what_every_pass_finds(size, seed, shape):
    """The Floyd-Warshall screen (2026-11-29, 3.5 times faster) never changes the answer: a
    metric, a random matrix, a metric nudged by 1e-13 (within the tolerance, or past it), a
    pseudo-metric with zero distances, infinite distances, and a path whose long legs exceed their chain by less
    than the tolerance on each triangle but more along the chain."""
    from dpopt.dx.metric import first_triangle_violation

    rng = np.random.default_rng(seed)
    points = rng.uniform(0, 10, (size, 2)).round(int(rng.integers(0, 3)))
    d = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    if shape == "random":
        d = rng.uniform(0, 3, (size, size))
        d = np.triu(d, 1) + np.triu(d, 1).T
    elif shape == "nudged":
        d = d * (1 + rng.choice([-1, 1], d.shape) * rng.uniform(0, 3e-12, d.shape))
        np.fill_diagonal(d, 0.0)
    elif shape == "zeros":
        d[:, : size // 2] = d[:, :1]
        d[: size // 2] = d[:1]
        np.fill_diagonal(d, 0.0)
    elif shape == "infinite":  # +inf is allowed: two blocks infinitely apart, or one such pair among finite paths
        far = rng.random(size) < 0.5 if rng.random() < 0.5 else np.isin(np.arange(size), [0])
        d[np.ix_(far, ~far)] = d[np.ix_(~far, far)] = np.inf
    elif shape == "chain":
        x = np.arange(size, dtype=float)
        legs = np.abs(x[:, None] - x[None])  # each triangle within 1 + 1e-12, a chain of unit legs (L > 5) not:
        d = legs * (1 + 5e-13) ** np.ceil(np.log2(np.maximum(legs, 1)))  # the closure flags what the passes let by
    assert first_triangle_violation(d) == _triangle_passes(d)


def _closure_by_passes(d):
    """Floyd-Warshall written out in numpy: every point k as a middle point, +inf unreachable."""
    out = np.array(d, dtype=float)
    for k in range(len(out)):
        out = np.minimum(out, out[:, k][:, None] + out[k, :][None, :])
    return out


def test_a_zero_distance_is_an_edge_of_the_closure():
    """Until 2026-11-29 ``closure=True`` read a zero distance as a missing edge (scipy's dense
    convention): d(0, 1) = 0 came back as 6, the length of the path around it, weakening the
    privacy asked of that pair from identical to e^(6 eps), and d(0, 2) stayed 5 although 0 and
    1 are one point and d(1, 2) = 1. ``metric_closure`` (Theorem 10's budgets) missed the same
    paths."""
    from dpopt.dx.statistical import metric_closure

    d = np.array([[0, 0, 5], [0, 0, 1], [5, 1, 0.0]])
    expected = [[0, 0, 1], [0, 0, 1], [1, 1, 0]]
    np.testing.assert_array_equal(DXMetric(d, closure=True).matrix, expected)
    np.testing.assert_array_equal(metric_closure(d), expected)


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(2, 12), st.integers(0, 2**32 - 1), st.floats(0.0, 0.5), st.floats(0.0, 0.3))
def test_the_closure_is_the_largest_metric_below_the_matrix(size, seed, zeros, infinite):
    """Against Floyd-Warshall in numpy, with zero distances between distinct points and +inf
    (no path) mixed in: equal entries, never above the matrix, and a metric."""
    from dpopt.dx.metric import shortest_path_closure
    from dpopt.dx.statistical import metric_closure

    rng = np.random.default_rng(seed)
    d = rng.uniform(0.1, 10, (size, size))
    d[rng.random((size, size)) < zeros] = 0.0
    d[rng.random((size, size)) < infinite] = np.inf
    d = np.triu(d, 1)
    d = d + d.T
    expected = _closure_by_passes(d)
    for closure in (shortest_path_closure(d), metric_closure(d), DXMetric(d, closure=True).matrix):
        np.testing.assert_allclose(closure, expected, rtol=1e-14, atol=0)
        assert (closure <= d).all()
    finite = np.where(np.isfinite(expected), expected, 1e300)
    assert first_triangle_violation(finite) is None
