"""d_X Laplace, exponential and MWEM mechanisms: privacy checked before anything runs."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpopt.dx.evaluation import baseline_scale, empirical_rmse, improvement_factor
from dpopt.dx.mechanisms import DXExponentialMechanism, DXLaplaceMechanism, dx_mwem
from dpopt.dx.metric import DXMetric
from dpopt.dx.scales import closed_form_scales
from dpopt.validation import InvalidParameterError
from tests.distributions import integer_fit_pvalue, laplace_cdf

RNG = np.random.default_rng(0)
METRIC = DXMetric.euclidean(RNG.uniform(0, 100, (20, 2)), 0.5)
HIST = RNG.multinomial(500, np.full(20, 1 / 20))


def test_laplace_release_is_unbiased_with_the_right_scale():
    q = RNG.uniform(0, 1, (1, 20))
    c = closed_form_scales(q, METRIC)
    mech = DXLaplaceMechanism(q / c[:, None], c, METRIC)
    draws = mech.release(HIST, 20_000, rng=1, exact=False)[:, 0] - float(q[0] @ HIST)
    assert stats.kstest(draws, stats.laplace(scale=c[0]).cdf).pvalue > 1e-3
    assert stats.kstest(draws, stats.laplace(scale=1.1 * c[0]).cdf).pvalue < 1e-6
    assert empirical_rmse(mech, q, HIST, releases=20_000) == pytest.approx(np.sqrt(2) * c[0], rel=0.03)


def test_laplace_refuses_a_non_private_pair():
    q = RNG.uniform(0, 1, (1, 20))
    c = closed_form_scales(q, METRIC)
    with pytest.raises(InvalidParameterError, match="'transformed'"):
        DXLaplaceMechanism(q / (0.9 * c[:, None]), 0.9 * c, METRIC)


def test_improvement_factor_on_a_uniform_metric_is_one():
    metric = DXMetric.uniform(20, 0.5)
    q = RNG.uniform(0, 1, (1, 20))
    assert improvement_factor(q, closed_form_scales(q, metric), metric) == pytest.approx(1.0)
    assert baseline_scale(q, metric) == pytest.approx(np.ptp(q) / 0.5)


def test_exponential_mechanism_checks_theorem_3():
    utilities = RNG.uniform(0, 1, (4, 20))
    smallest = DXExponentialMechanism.smallest_scale(utilities, METRIC)
    mech = DXExponentialMechanism(utilities, smallest, METRIC)
    p = mech.probabilities(HIST)
    assert p.sum() == pytest.approx(1.0)
    with pytest.raises(InvalidParameterError, match="'scale'"):
        DXExponentialMechanism(utilities, 0.99 * smallest, METRIC)
    # the d_X guarantee: moving one record from i to j changes log-probabilities by <= d_X(i, j)
    moved = HIST.copy()
    moved[0] -= 1
    moved[7] += 1
    assert np.abs(np.log(p) - np.log(mech.probabilities(moved))).max() <= METRIC.matrix[0, 7] * (1 + 1e-12)


def test_exponential_mechanism_samples_its_logits_not_its_float_probabilities(monkeypatch):
    """A million records: the logits span ~10^4, so the float64 probabilities of the far outputs are 0
    (and a neighbouring histogram's need not be); the draws come from the logits, which follow the softmax."""
    import dpopt.exact_sampling as es

    utilities = np.linspace(0, 1, 4)[:, None] * np.ones((4, 20)) + RNG.uniform(0, 1e-3, (4, 20))
    mech = DXExponentialMechanism(utilities, DXExponentialMechanism.smallest_scale(utilities, METRIC), METRIC)
    big = HIST * 2000
    assert (mech.probabilities(big) == 0).sum() >= 2
    monkeypatch.setattr(es, "exact_choice", lambda *args: pytest.fail("sampled float64 probabilities"))
    assert set(mech.sample(big, 100, rng=2)) == {3}  # the largest utility: every other output is below e^-700
    wide = DXExponentialMechanism(utilities, max(mech.scale, np.ptp(utilities @ HIST) / 4.0), METRIC)  # logits 2 apart
    draws = wide.sample(HIST, 40_000, rng=3)
    observed = np.bincount(draws, minlength=4)
    assert stats.chisquare(observed, wide.probabilities(HIST) * draws.size).pvalue > 1e-3


def test_smallest_scale_equals_a_loop_over_pairs_and_the_refusal_names_the_binding_pair():
    utilities = RNG.uniform(0, 1, (3, 20))
    ratios = {(a, b): np.abs(utilities[:, a] - utilities[:, b]).max() / METRIC.matrix[a, b]
              for a in range(20) for b in range(a + 1, 20)}
    worst = max(ratios, key=ratios.get)
    assert DXExponentialMechanism.smallest_scale(utilities, METRIC) == pytest.approx(ratios[worst], rel=1e-15)
    with pytest.raises(InvalidParameterError, match=rf"pair \({worst[0]}, {worst[1]}\)"):
        DXExponentialMechanism(utilities, 0.999 * ratios[worst], METRIC)
    with pytest.raises(InvalidParameterError, match="'utilities'"):
        DXExponentialMechanism.smallest_scale(utilities[:, :5], METRIC)


def test_a_pair_at_distance_zero_needs_equal_utilities():
    metric = DXMetric(np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]]))
    assert DXExponentialMechanism.smallest_scale([[0.0, 0.0, 1.0], [1.0, 1.0, 0.0]], metric) == 1.0
    assert DXExponentialMechanism.smallest_scale([[0.0, 0.5, 1.0], [1.0, 1.0, 0.0]], metric) == np.inf


def test_mwem_runs_seeded_and_refuses_non_private_queries():
    queries = RNG.uniform(0, 1, (10, 20))
    queries = queries / np.array([closed_form_scales(r, METRIC)[0] for r in queries])[:, None]
    a = dx_mwem(HIST, queries, METRIC, rounds=5, rng=3, exact=False)
    assert np.array_equal(a, dx_mwem(HIST, queries, METRIC, rounds=5, rng=3, exact=False))
    assert a.sum() == pytest.approx(HIST.sum())
    with pytest.raises(InvalidParameterError, match="'queries'"):
        dx_mwem(HIST, queries * 2, METRIC, rounds=5, rng=3, exact=False)


def test_grid_release_rounds_each_query_exactly():
    # two queries on three elements; each column's law is the rounded Laplace of its exact mean
    metric = DXMetric.uniform(3, 2.0)
    transformed, scales = np.array([[0.0, 0.5, 1.0], [0.25, 0.0, 0.0]]), np.array([1.5, 0.4])
    mechanism = DXLaplaceMechanism(transformed, scales, metric)
    histogram, grid = np.array([3, 1, 2]), 0.3
    draws = mechanism.grid_release(histogram, grid, 20_000, np.random.default_rng(2))
    np.testing.assert_array_equal(draws, mechanism.grid_release(histogram, grid, 20_000, np.random.default_rng(2)))
    means = scales * (transformed @ histogram)
    for k in range(2):
        def law(j, k=k):
            z = j * grid - means[k]
            return laplace_cdf(z + grid / 2, scales[k]) - laplace_cdf(z - grid / 2, scales[k])
        assert integer_fit_pvalue(np.rint(draws[:, k] / grid).astype(np.int64), law) > 1e-3
    with pytest.raises(InvalidParameterError, match="histogram"):
        mechanism.grid_release([3, 1.5, 2], grid, 1, np.random.default_rng(0))


@pytest.mark.parametrize("histogram", [[1, 2], [1, -1, 0], [1, np.nan, 0], "abc", None, pd.NA, [[1, 2, 3]], [1, [2], 3], [True, False, True]])
def test_a_bad_histogram_is_refused_naming_it(histogram):
    from dpopt.dx.mechanisms import check_histogram

    with pytest.raises(InvalidParameterError, match="'histogram'"):
        check_histogram(histogram, 3, "dx")
    np.testing.assert_array_equal(check_histogram(np.array([1, 0, 2]), 3, "dx"), [1.0, 0.0, 2.0])
