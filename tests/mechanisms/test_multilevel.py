from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dpopt
from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.mechanisms.multilevel import chain_marginals, level_remap, verify_chain_exact
from dpopt.validation import InvalidParameterError

levels = st.lists(st.floats(0.02, 0.98), min_size=2, max_size=4, unique=True).map(sorted).filter(
    lambda a: all(b - x > 1e-3 for x, b in zip(a[:-1], a[1:]))
)


@given(st.integers(1, 12), levels)
def test_remaps_are_stochastic_and_marginals_are_geometric(n, alphas):
    for a, b in zip(alphas[:-1], alphas[1:]):
        t = level_remap(n, a, b)
        assert t.min() >= -1e-12  # Lemma 3: T >= 0 (exactly; see the rational test)
        np.testing.assert_allclose(t.sum(axis=1), 1, atol=1e-12)
    for marginal, alpha in zip(chain_marginals(n, alphas), alphas):
        np.testing.assert_allclose(marginal, geometric_matrix(n, alpha), atol=1e-10)


@settings(max_examples=25)
@given(st.integers(1, 6), levels)
def test_chain_marginals_exact_in_rationals(n, alphas):
    assert verify_chain_exact(n, alphas)


def test_lemma_3_entries_exactly_nonnegative():
    t = level_remap(5, Fraction(1, 3), Fraction(2, 3))
    assert min(t.ravel()) >= 0 and all(sum(row) == 1 for row in t)


def test_closed_form_and_lp_give_the_same_remaps():
    problem = dpopt.MultiLevelRelease(n=8, alphas=[0.3, 0.55, 0.9])
    closed = dpopt.solve(problem, "closed_form")
    lp = dpopt.solve(problem, "lp")
    for a, b in zip(closed.details["remaps"], lp.details["remaps"]):
        np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), atol=1e-7)
    assert closed.certificate.ok and all(level["certificate"]["ok"] for level in closed.details["levels"])


def test_chain_sampler_releases_each_level_with_its_geometric_law():
    problem = dpopt.MultiLevelRelease(n=5, alphas=[0.2, 0.5, 0.7])
    solution = dpopt.solve(problem)
    draws = solution.sample(3, 60_000, rng=11)
    assert draws.shape == (60_000, 3)
    for level, alpha in enumerate(problem.levels):
        observed = np.bincount(draws[:, level], minlength=6)
        assert stats.chisquare(observed, geometric_matrix(5, alpha)[3] * 60_000).pvalue > 1e-3


@pytest.mark.parametrize("alphas", [[0.5, 0.3], [0.3, 0.3], [], [0.2, 1.0]])
def test_unsorted_duplicate_or_invalid_levels_rejected(alphas):
    with pytest.raises(InvalidParameterError, match="'alphas'"):
        dpopt.MultiLevelRelease(n=4, alphas=alphas)


def test_epsilons_must_decrease():
    assert dpopt.MultiLevelRelease(n=3, epsilons=[2.0, 1.0]).levels[0] == pytest.approx(np.exp(-2))
    with pytest.raises(InvalidParameterError, match="'epsilons'"):
        dpopt.MultiLevelRelease(n=3, epsilons=[1.0, 2.0])


def test_level_remap_needs_alpha_below_beta():
    with pytest.raises(InvalidParameterError, match="'beta'"):
        level_remap(3, 0.5, 0.4)
