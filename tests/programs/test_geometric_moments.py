import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dpopt.programs.geometric_moments import kernel_moments


@given(st.integers(0, 40), st.floats(0.01, 0.99), st.integers(0, 2**32 - 1))
def test_recurrences_equal_the_direct_sums(n, alpha, seed):
    w = np.random.default_rng(seed).random(n + 1)
    m = kernel_moments(w, alpha)
    i = np.arange(n + 1)
    d = i[None, :] - i[:, None]  # d[r, i] = i - r
    k = alpha ** np.abs(d)
    scale = 1 + np.abs(w).sum() * n**2
    np.testing.assert_allclose(m.total, k @ w, atol=1e-12 * scale)
    np.testing.assert_allclose(m.absolute_first, (k * np.abs(d)) @ w, atol=1e-12 * scale)
    np.testing.assert_allclose(m.signed_first, (k * d) @ w, atol=1e-12 * scale)
    np.testing.assert_allclose(m.second, (k * d**2) @ w, atol=1e-12 * scale)
