"""Noise scales for d_X-private linear queries: closed form, strategies, exact optimum, privacy check."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from dpopt.dx.metric import DXMetric
from dpopt.dx.scales import (
    check_privacy,
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
    routes = {"strategy1": strategy1_scales(q, metric), "strategy2": strategy2_scales(q, metric), "exact": exact_scales(q, metric)}
    for name, c in routes.items():
        scaled = np.divide(q, c[:, None], out=np.zeros_like(q), where=c[:, None] > 0)
        assert check_privacy(scaled, metric).ok, name
    best = np.sum(routes["exact"] ** 2)
    assert best <= min(np.sum(routes["strategy1"] ** 2), np.sum(routes["strategy2"] ** 2)) * (1 + 1e-6)


def test_privacy_check_reports_the_worst_pair():
    metric = DXMetric.uniform(3, 1.0)
    check = check_privacy([[0.0, 0.5, 2.0]], metric)
    assert not check.ok and check.worst_pair == (0, 2) and check.worst_ratio == pytest.approx(2.0)
    assert check.pairs_checked == 3
