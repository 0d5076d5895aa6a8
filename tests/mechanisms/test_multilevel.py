import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dpopt
from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.mechanisms.multilevel import (
    FactoredChain, chain_marginals, chain_remaps, coalition_likelihood, coalition_posterior, level_remap, stay_probabilities,
    verify_chain_exact,
)
from dpopt.validation import InvalidParameterError
from tests.conftest import examples

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


@settings(max_examples=examples(25))
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


def test_a_chain_is_exact_only_when_its_marginals_are_geometric():
    # near alpha = 1, G is nearly singular and the feasibility LP's remaps leave level 2's
    # marginal 2.8e-5 from G_beta: certified level by level, but reported exact until 2026-11-28
    problem = dpopt.MultiLevelRelease(n=10, alphas=[0.999999, 0.9999999])
    for method in ("closed_form", "lp", "factored"):
        solution = dpopt.solve(problem, method)
        assert solution.certificate.ok and all(level["certificate"]["ok"] for level in solution.details["levels"])
        assert solution.exact == (solution.objective <= 1e-9)
        assert solution.status == ("gap_above_tolerance" if not solution.exact else solution.status)
    assert dpopt.solve(problem, "closed_form").exact and dpopt.solve(problem, "factored").exact


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


@settings(max_examples=examples(15), deadline=None)
@given(n=st.integers(1, 4), levels=st.integers(2, 4), data=st.data())
def test_lemma_4_a_coalition_learns_what_its_least_private_member_learns(n, levels, data):
    """GS Lemma 4 in exact arithmetic: pooling releases of several levels gives the same posterior
    over the true count as the least private (smallest alpha) member's release alone."""
    alphas = sorted(data.draw(st.sets(st.fractions(Fraction(1, 20), Fraction(19, 20), max_denominator=20),
                                      min_size=levels, max_size=levels)))
    coalition = sorted(data.draw(st.sets(st.integers(0, levels - 1), min_size=2, max_size=levels)))
    prior = [Fraction(data.draw(st.integers(1, 9))) for _ in range(n + 1)]
    for values in itertools.product(range(n + 1), repeat=len(coalition)):
        releases = dict(zip(coalition, values))
        pooled = coalition_posterior(n, alphas, releases, prior)
        alone = coalition_posterior(n, alphas, {coalition[0]: values[0]}, prior)
        assert list(pooled) == list(alone)


@settings(max_examples=examples(20), deadline=None)
@given(n=st.integers(1, 3), levels=st.integers(2, 3), data=st.data())
def test_coalition_likelihood_is_the_sum_over_every_chain(n, levels, data):
    """The forward pass against brute force: P(releases | d) summed over all chains (r_1, .., r_k), exactly."""
    alphas = sorted(data.draw(st.sets(st.fractions(Fraction(1, 20), Fraction(19, 20), max_denominator=20),
                                      min_size=levels, max_size=levels)))
    coalition = sorted(data.draw(st.sets(st.integers(0, levels - 1), min_size=1, max_size=levels)))
    releases = {level: data.draw(st.integers(0, n)) for level in coalition}
    first, remaps = geometric_matrix(n, alphas[0]), chain_remaps(n, alphas)
    for d, likelihood in enumerate(coalition_likelihood(n, alphas, releases)):
        total = Fraction(0)
        for chain in itertools.product(range(n + 1), repeat=levels):
            if all(chain[level] == value for level, value in releases.items()):
                p = first[d, chain[0]]
                for level, remap in enumerate(remaps):
                    p *= remap[chain[level], chain[level + 1]]
                total += p
        assert likelihood == total


def test_lemma_4_fails_for_independent_releases():
    """The control: releasing each level independently (not by Algorithm 1's chain) does leak more to a coalition."""
    n, alphas, prior = 2, [Fraction(1, 4), Fraction(1, 2)], [Fraction(1), Fraction(1), Fraction(1)]
    g1, g2 = geometric_matrix(n, alphas[0]), geometric_matrix(n, alphas[1])
    joint = np.array([prior[d] * g1[d, 0] * g2[d, 0] for d in range(n + 1)], dtype=object)
    assert list(joint / joint.sum()) != list(coalition_posterior(n, alphas, {0: 0}, prior))


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(1, 7), levels)
def test_each_remap_is_keep_or_redraw_exactly_in_rationals(n, alphas):
    """Row r of G_a^-1 G_b (the exact tridiagonal solve) is p_r e_r + (1 - p_r) G_b[r], entry by entry."""
    for a, b in zip(alphas[:-1], alphas[1:]):
        exact_a, exact_b = Fraction(a), Fraction(b)
        t, g = level_remap(n, exact_a, exact_b), geometric_matrix(n, exact_b)
        end, inside = stay_probabilities(a, b)
        assert 0 < inside < end < 1
        for r in range(n + 1):
            p = end if r in (0, n) else inside
            assert all(t[r, s] == (1 - p) * g[r, s] + (p if s == r else 0) for s in range(n + 1))


def test_the_factored_chain_draws_the_dense_chains_joint_law():
    from tests.distributions import integer_fit_pvalue

    n, alphas = 5, (0.3, 0.6, 0.85)
    chain = FactoredChain(n, alphas)
    draws = chain.sample(1, 60_000, np.random.default_rng(3))
    first, *remaps = [geometric_matrix(n, alphas[0])[1], *chain_remaps(n, alphas)]
    # P(r1, r2, r3) = G[1, r1] T2[r1, r2] T3[r2, r3], the dense chain's law, cell index r1 * 36 + r2 * 6 + r3
    law = np.einsum("i,ij,jk->ijk", first, remaps[0], remaps[1]).ravel()
    cells = draws[:, 0] * 36 + draws[:, 1] * 6 + draws[:, 2]
    assert integer_fit_pvalue(cells, lambda j: np.where((j >= 0) & (j < law.size), law[np.clip(j, 0, law.size - 1)], 0.0)) > 1e-3
    for level in (2, 3):
        np.testing.assert_allclose(chain.remap_row(level, 0), remaps[level - 2][0], atol=1e-15)


def test_the_factored_chain_at_a_million_counts_has_geometric_marginals():
    from tests.distributions import integer_fit_pvalue

    n, alphas, x = 10**6, (0.2, 0.7, 0.99), 400_000
    draws = FactoredChain(n, alphas).sample(x, 50_000, np.random.default_rng(8))
    for level, alpha in enumerate(alphas):  # far from 0 and n: the two-sided geometric around x
        law = lambda j, a=alpha: (1 - a) / (1 + a) * a ** np.abs(j)  # noqa: E731
        assert integer_fit_pvalue(draws[:, level] - x, law) > 1e-3, level


def test_stay_probabilities_refuse_levels_out_of_order():
    with pytest.raises(InvalidParameterError, match="beta"):
        stay_probabilities(0.5, 0.5)


@pytest.mark.parametrize("call,field", [  # until 2026-11-29: raw TypeErrors and IndexErrors
    (lambda: coalition_posterior(3, 0.5, {0: 1}, [0.25] * 4), "'alphas'"),
    (lambda: coalition_posterior(3, [], {0: 1}, [0.25] * 4), "'alphas'"),
    (lambda: coalition_posterior(3, [0.5, 0.3], {0: 1}, [0.25] * 4), "'alphas'"),
    (lambda: coalition_posterior(3, [0.3, 0.5], {2: 1}, [0.25] * 4), "'releases'"),
    (lambda: coalition_posterior(3, [0.3, 0.5], {0: 9}, [0.25] * 4), "'releases'"),
    (lambda: coalition_posterior(3, [0.3, 0.5], {0: 1}, [0.5] * 2), "'prior'"),
    (lambda: coalition_posterior(3, [0.3, 0.5], {0: 1}, [float("nan")] * 4), "'prior'"),
    (lambda: verify_chain_exact(3, [0.3, float("nan")]), "'alphas'"),
    (lambda: level_remap(3, "0.3", 0.5), "'alpha'"),
    (lambda: stay_probabilities(0.3, 1.5), "'beta'"),
])
def test_chain_helpers_refuse_bad_input_naming_the_field(call, field):
    with pytest.raises(InvalidParameterError, match=field):
        call()
