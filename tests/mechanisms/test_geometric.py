from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import dpopt
from dpopt.mechanisms.geometric import (
    derivability,
    exact_geometric_release,
    geometric_inverse,
    geometric_matrix,
    geometric_row_is_normal,
    geometric_rows,
    remap_from_geometric,
    sample_geometric_release,
    three_term_condition,
    two_sided_geometric,
)
from dpopt.validation import InvalidParameterError

F = Fraction
APPENDIX_B = np.array(
    [[F(1, 9), F(2, 9), F(4, 9), F(2, 9)], [F(2, 9), F(1, 9), F(2, 9), F(4, 9)],
     [F(4, 9), F(2, 9), F(1, 9), F(2, 9)], [F(13, 18), F(1, 9), F(1, 18), F(1, 9)]],
    dtype=object,
)


def test_definition_4_in_exact_arithmetic():
    g = geometric_matrix(3, F(1, 4))
    assert list(g[0]) == [F(4, 5), F(3, 20), F(3, 80), F(1, 80)]
    assert all(sum(row) == 1 for row in g)


@given(st.integers(1, 30), st.floats(0.01, 0.99))
def test_g_is_stochastic_and_exactly_alpha_private(n, alpha):
    g = geometric_matrix(n, alpha)
    np.testing.assert_allclose(g.sum(axis=1), 1, atol=1e-12)
    cert = dpopt.certify(g, -np.log(alpha))
    assert cert.ok and cert.max_privacy_loss == pytest.approx(-np.log(alpha), rel=1e-9)


@given(st.integers(1, 15), st.floats(0.05, 0.95), st.integers(0, 2**32 - 1))
def test_remap_solves_g_t_equals_m(n, alpha, seed):
    m = np.random.default_rng(seed).dirichlet(np.ones(n + 1), n + 1)
    t = remap_from_geometric(m, alpha)
    np.testing.assert_allclose(t, np.linalg.solve(geometric_matrix(n, alpha), m), atol=1e-8 * (1 / (1 - alpha)) ** 2)
    np.testing.assert_allclose(t.sum(axis=1), 1, atol=1e-9)


def test_remap_is_exact_on_fractions():
    t = remap_from_geometric(APPENDIX_B, F(1, 2))
    assert (geometric_matrix(3, F(1, 2)) @ t == APPENDIX_B).all()


def test_appendix_b_is_private_but_not_derivable():
    assert dpopt.certify(APPENDIX_B.astype(float), np.log(2)).ok
    assert three_term_condition(APPENDIX_B, F(1, 2))[0, 1] == F(-3, 4) / 9  # the paper's -0.75/9
    report = derivability(APPENDIX_B, F(1, 2))
    assert not report.derivable and report.worst_value < 0
    assert not derivability(APPENDIX_B.astype(float), 0.5).derivable


def test_optimal_mechanism_from_interaction_is_derivable():
    solution = dpopt.solve(dpopt.CountQuery(n=6, alpha=0.4, loss="squared"), "interaction")
    report = derivability(solution.mechanism.to_numpy(), 0.4)
    assert report.derivable
    np.testing.assert_allclose(report.remap, solution.details["remap"].to_numpy(), atol=1e-7)


def test_two_sided_geometric_matches_its_pmf():
    alpha = 0.6
    z = two_sided_geometric(alpha, 200_000, np.random.default_rng(7))
    support = np.arange(-8, 9)
    pmf = (1 - alpha) / (1 + alpha) * alpha ** np.abs(support)
    observed = np.array([(z == k).sum() for k in support] + [(np.abs(z) > 8).sum()])
    expected = np.append(pmf, 1 - pmf.sum()) * z.size
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    wrong = np.append((1 - 0.5) / 1.5 * 0.5 ** np.abs(support), 0)
    wrong[-1] = 1 - wrong[:-1].sum()
    assert stats.chisquare(observed, wrong * z.size).pvalue < 1e-6
    assert np.mean(np.abs(z)) == pytest.approx(2 * alpha / (1 - alpha**2), rel=0.02)


def test_range_restricted_release_has_the_law_of_g():
    n, alpha, true = 6, 0.5, 2
    draws = sample_geometric_release(true, n, alpha, 100_000, np.random.default_rng(3))
    observed = np.bincount(draws, minlength=n + 1)
    assert stats.chisquare(observed, geometric_matrix(n, alpha)[true] * draws.size).pvalue > 1e-3


@pytest.mark.parametrize("true", [0, 3, 9])
def test_exact_release_has_the_law_of_g(true):
    n, alpha = 9, 0.55
    draws = exact_geometric_release(true, n, alpha, 100_000, np.random.default_rng(11))
    observed = np.bincount(draws, minlength=n + 1)
    assert observed.sum() == draws.size and stats.chisquare(observed, geometric_matrix(n, alpha)[true] * draws.size).pvalue > 1e-3
    shifted = geometric_matrix(n, alpha)[min(true + 1, n - 1)] * draws.size  # a neighbour's row is told apart
    assert stats.chisquare(observed, shifted).pvalue < 1e-6


def test_exact_release_is_reproducible_and_takes_the_secure_source():
    first = exact_geometric_release(4, 8, 0.3, 50, np.random.default_rng(2))
    assert np.array_equal(first, exact_geometric_release(4, 8, 0.3, 50, np.random.default_rng(2)))
    secure = exact_geometric_release(4, 8, 0.3, 50, dpopt.sampling.SecureRandom())
    assert secure.min() >= 0 and secure.max() <= 8


def test_float_rows_leave_the_normal_range_where_the_test_says():
    """alpha = 0.2, n = 600: alpha^462 is a subnormal, alpha^463 rounds to 0, so the float rows of
    the neighbours 0 and 1 put 0 and a non-zero on output 463: an infinite loss if sampled."""
    rows = geometric_rows(600, 0.2, np.array([0, 1]))
    assert rows[0, 463] == 0.0 < rows[1, 463]
    assert not geometric_row_is_normal(600, 0.2, 0) and not geometric_row_is_normal(600, 0.2, 600)
    assert geometric_row_is_normal(600, 0.2, 300)  # 0.2^300 = e^-483
    assert geometric_row_is_normal(12, 0.5, 0) and geometric_row_is_normal(600, 0.5, 0)  # 0.5^600 = e^-416
    assert not geometric_row_is_normal(2000, 0.5, 0)  # 0.5^2000 underflows


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, "0.5"])
def test_bad_alpha_rejected(alpha):
    with pytest.raises(InvalidParameterError, match="'alpha'"):
        geometric_matrix(3, alpha)


def test_table_1b_is_the_unnormalised_kernel_at_alpha_one_quarter():
    """GS Table 1(b), printed as G_{3,1/2}, is (1 + a)/(1 - a) G_{3,a} at a = 1/4: Table 2's left-hand
    kernel (entries a^|i-j|, end columns divided by 1 - a), not a mechanism (its rows sum to more than 1)."""
    printed = [[Fraction(4, 3), Fraction(1, 4), Fraction(1, 16), Fraction(1, 48)],
               [Fraction(1, 3), Fraction(1), Fraction(1, 4), Fraction(1, 12)],
               [Fraction(1, 12), Fraction(1, 4), Fraction(1), Fraction(1, 3)],
               [Fraction(1, 48), Fraction(1, 16), Fraction(1, 4), Fraction(4, 3)]]
    a = Fraction(1, 4)
    kernel = geometric_matrix(3, a) * ((1 + a) / (1 - a))
    assert kernel.tolist() == printed
    half = Fraction(1, 2)
    assert (geometric_matrix(3, half) * ((1 + half) / (1 - half))).tolist() != printed  # not at alpha = 1/2
    assert all(sum(row) > 1 for row in printed)


def _exact_determinant(matrix) -> Fraction:
    """Gaussian elimination over the rationals (an independent route to det)."""
    a = [[Fraction(v) for v in row] for row in matrix]
    size, det = len(a), Fraction(1)
    for col in range(size):
        pivot = next(r for r in range(col, size) if a[r][col] != 0)
        if pivot != col:
            a[col], a[pivot], det = a[pivot], a[col], -det
        det *= a[col][col]
        for r in range(col + 1, size):
            factor = a[r][col] / a[col][col]
            a[r] = [x - factor * y for x, y in zip(a[r], a[col])]
    return det


@given(size=st.integers(2, 7), alpha=st.fractions(Fraction(1, 50), Fraction(49, 50), max_denominator=50))
def test_lemma_1_determinant_of_g(size, alpha):
    """GS Lemma 1: det G'_{N,a} = (1 - a^2)^(N-1) for the N x N matrix, so det G_{N,a} > 0;
    G' scales G's end columns by 1 + a and the others by (1 + a)/(1 - a)."""
    g = geometric_matrix(size - 1, alpha)
    det = _exact_determinant(g)
    scale = (1 + alpha) ** 2 * ((1 + alpha) / (1 - alpha)) ** (size - 2)
    assert det > 0 and det * scale == (1 - alpha**2) ** (size - 1)


@given(n=st.integers(1, 30), alpha=st.sampled_from([0.05, 0.5, 0.99, 1 - 1e-9, 1 - 1e-13]), seed=st.integers(0, 2**32 - 1))
def test_scaled_inverse_keeps_the_sign_of_every_row_with_coefficients_of_order_one(n, alpha, seed):
    # the interaction program states "x is derivable from G" as G^-1 x >= 0 with these rows
    from dpopt.mechanisms.geometric import geometric_inverse

    scaled = geometric_inverse(n, alpha, scaled=True)
    assert 0.0 < np.abs(scaled.data).min() and np.abs(scaled.data).max() <= 2.0
    x = np.random.default_rng(seed).uniform(-1, 1, (n + 1, 3))
    ratio = (geometric_inverse(n, alpha) @ x) / (scaled @ x)
    denominators = np.full(n + 1, 1.0 / (1.0 - alpha) ** 2)
    denominators[[0, -1]] = 1.0 / (1.0 - alpha)
    np.testing.assert_allclose(ratio, np.broadcast_to(denominators[:, None], ratio.shape), rtol=1e-6)


def test_a_geometric_matrix_past_the_memory_limit_is_refused_before_work():
    """n = 10**11 asked numpy for an array past its largest size (a raw ValueError) until 2026-11-29."""
    with pytest.raises(InvalidParameterError, match="'n'.*memory limit"):
        geometric_matrix(10**11, 0.5)
    with pytest.raises(InvalidParameterError, match="'n'.*memory limit"):
        geometric_inverse(10**12, 0.5)
