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


@given(st.integers(1, 30), st.integers(1, 4), st.floats(0.01, 0.999), st.integers(0, 2**32 - 1))
def test_stacked_sequences_equal_lfilter_sequence_by_sequence(n, stack, alpha, seed):
    """The banded solves against scipy.signal's IIR filter, the route they replaced, on a stack."""
    from scipy.signal import lfilter

    w = np.random.default_rng(seed).standard_normal((stack, n + 1))
    m = kernel_moments(w, alpha)
    for row, moments in zip(w, (kernel_moments(v, alpha) for v in w)):
        zero = lfilter([1.0], [1.0, -alpha], row)
        first = lfilter([0.0, alpha], [1.0, -alpha], zero)
        second = lfilter([0.0, alpha], [1.0, -alpha], 2.0 * first + zero)
        for ours, theirs in zip(moments.forward, (zero, first, second)):
            np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-13 * np.abs(row).sum() * (n + 1) ** 2)
    for k in range(3):
        np.testing.assert_array_equal(m.forward[k], np.stack([kernel_moments(v, alpha).forward[k] for v in w]))
