"""The geometric mechanism and what can be derived from it (Gupte & Sundararajan).

* :func:`two_sided_geometric` samples Definition 1's noise,
  ``Pr[Z = z] = (1 - alpha) / (1 + alpha) * alpha**|z|``.
* :func:`geometric_matrix` is the range-restricted matrix ``G_{n,alpha}`` of
  Definition 4 (Table 2): ``G[i, r] = d_r * alpha**|i - r|`` with
  ``d_0 = d_n = 1 / (1 + alpha)`` and ``d_r = (1 - alpha) / (1 + alpha)`` inside.
* :func:`remap_from_geometric` solves ``G T = M`` for T in O(n^2) through the
  closed-form tridiagonal inverse of G (derivation below); :func:`derivability`
  applies Theorem 2.

Derivation of ``G^{-1}``
------------------------
``G = K D`` with ``K[i, r] = alpha**|i - r|`` (a Kac-Murdock-Szego matrix) and
``D = diag(d)``. ``K^{-1}`` is tridiagonal: ``(1 - alpha**2)^{-1}`` times the matrix
with diagonal ``(1, 1 + alpha**2, ..., 1 + alpha**2, 1)`` and off-diagonal ``-alpha``
(multiply out row by row: interior rows telescope, boundary rows use
``alpha**|0 - r| - alpha * alpha**|1 - r| = 0`` for r >= 1). Hence, for any M,

* ``T[0] = (M[0] - alpha M[1]) / (1 - alpha)`` and likewise ``T[n]``;
* ``T[r] = ((1 + alpha**2) M[r] - alpha (M[r-1] + M[r+1])) / (1 - alpha)**2`` inside.

These are exactly the "three consecutive entries" of Theorem 2 and the boundary
cases of Lemma 2, so M is derivable from G iff every entry above is >= 0. The same
formula evaluates exactly on :class:`fractions.Fraction` arrays.

Notes on the paper: Lemma 2 (3) is garbled in print; the condition meant is
``(1 + alpha**2) x_2 - alpha (x_1 + x_3) >= 0``. Table 1(b) is labelled
``G_{3,1/2}`` although the example uses alpha = 1/4, and its entries (4/3, ...) are
not a stochastic matrix; :func:`geometric_matrix` gives the true ``G_{3,1/4}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import sparse

from dpopt.limits import check_memory
from dpopt.validation import check_int, check_real, fail

__all__ = [
    "geometric_matrix",
    "geometric_rows",
    "column_weights",
    "geometric_inverse",
    "two_sided_geometric",
    "sample_geometric_release",
    "exact_geometric_release",
    "clamped_geometric",
    "geometric_row_is_normal",
    "remap_from_geometric",
    "three_term_condition",
    "derivability",
    "DerivabilityReport",
]

OWNER = "geometric mechanism"
#: ln of the smallest normal float64 (2.2e-308), with a margin of e^8 for the row's rounding.
LOG_SMALLEST_NORMAL = float(np.log(np.finfo(float).tiny)) + 8.0


def _alpha(alpha: Any) -> Any:
    if isinstance(alpha, Fraction):
        if not 0 < alpha < 1:
            raise fail("alpha", OWNER, "a number in (0, 1)", alpha)
        return alpha
    return check_real(alpha, "alpha", OWNER, low=0.0, high=1.0, low_open=True, high_open=True)


def geometric_matrix(n: int, alpha: float | Fraction) -> np.ndarray:
    """Range-restricted geometric mechanism ``G_{n,alpha}`` (Definition 4).

    Parameters
    ----------
    n : int
        Largest count (>= 1).
    alpha : float or Fraction
        Privacy parameter in (0, 1). A :class:`~fractions.Fraction` gives an exact
        object array.

    Returns
    -------
    numpy.ndarray
        ``(n+1, n+1)``; row i is the output distribution when the true count is i.
    """
    n = check_int(n, "n", OWNER, low=1)
    a = _alpha(alpha)
    # the dense (n + 1)^2 matrix, with the index array geometric_rows forms beside it (8 + 8
    # bytes an entry; a Fraction entry is a Python object of about 100): n = 10**11 asked
    # numpy for an array past its largest size, a raw ValueError, until 2026-11-29
    check_memory((n + 1) ** 2 * (116.0 if isinstance(a, Fraction) else 16.0), "n", OWNER, n, what="the dense geometric matrix")
    return geometric_rows(n, a, np.arange(n + 1))


def column_weights(n: int, alpha: float | Fraction) -> np.ndarray:
    """``d_r`` of Definition 4: ``G[i, r] = d_r alpha^|i-r|`` (edges 1/(1+a), inside (1-a)/(1+a))."""
    exact = isinstance(alpha, Fraction)
    weights = np.full(n + 1, (1 - alpha) / (1 + alpha), dtype=object if exact else float)
    weights[[0, -1]] = 1 / (1 + alpha)
    return weights


def geometric_rows(n: int, alpha: float | Fraction, rows: np.ndarray) -> np.ndarray:
    """Rows ``G[rows, :]`` of ``G_{n,alpha}`` without forming the rest (exact for a Fraction)."""
    dist = np.abs(np.asarray(rows)[:, None] - np.arange(n + 1)[None, :])
    if isinstance(alpha, Fraction):
        powers = np.array([alpha**k for k in range(n + 1)], dtype=object)
    else:
        powers = alpha ** np.arange(n + 1, dtype=float)
    return powers[dist] * column_weights(n, alpha)[None, :]


def remap_from_geometric(mechanism: np.ndarray, alpha: float | Fraction) -> np.ndarray:
    """Solve ``G_{n,alpha} T = M`` for T exactly, in O(n^2), without forming an inverse.

    Uses the tridiagonal ``G^{-1}`` derived in the module docstring. T is the
    consumer's remap (Definition 3) when M is derivable; it always has unit row sums
    when M does, but may have negative entries when M is not derivable.
    """
    m = np.asarray(mechanism)
    if m.ndim != 2 or m.shape[0] < 2:
        raise fail("mechanism", OWNER, "a 2-D matrix with at least 2 rows", m)
    a = _alpha(alpha)
    t = np.empty_like(m, dtype=object if m.dtype == object else float)
    t[0] = (m[0] - a * m[1]) / (1 - a)
    t[-1] = (m[-1] - a * m[-2]) / (1 - a)
    t[1:-1] = three_term_condition(m, a) / (1 - a) ** 2
    return t


def geometric_inverse(n: int, alpha: float, *, scaled: bool = False) -> sparse.csr_array:
    """``G_{n,alpha}^{-1}`` as a sparse tridiagonal matrix (see the module docstring).

    ``G^{-1} M`` equals :func:`remap_from_geometric` ``(M, alpha)``; the sparse form
    lets programs state "x is derivable from G" as ``G^{-1} x >= 0`` with three
    well-scaled coefficients per entry, instead of ``x = G T`` with G's tiny powers.
    ``scaled``: each row times its positive denominator ((1 - alpha)^2 inside, 1 - alpha
    at the ends), which keeps the sign of ``G^{-1} x`` and every coefficient of order one
    however near alpha is to 1 (unscaled, 1 / (1 - alpha)^2 passes HiGHS's largest
    coefficient, 1e15, at alpha = 1 - 1e-8).
    """
    n = check_int(n, "n", OWNER, low=1)
    a = _alpha(alpha)
    check_memory((n + 1) * 3 * 24.0, "n", OWNER, n, what="the tridiagonal inverse")
    size = n + 1
    inner, end = (1.0, 1.0) if scaled else (1.0 / (1.0 - a) ** 2, 1.0 / (1.0 - a))
    diagonal = np.full(size, (1.0 + a * a) * inner)
    diagonal[[0, -1]] = end
    upper = np.full(n, -a * inner)
    lower = np.full(n, -a * inner)
    upper[0] = -a * end  # row 0: (M[0] - a M[1]) / (1 - a)
    lower[-1] = -a * end  # row n: (M[n] - a M[n-1]) / (1 - a)
    return sparse.diags_array([lower, diagonal, upper], offsets=[-1, 0, 1], format="csr")


def three_term_condition(mechanism: np.ndarray, alpha: float | Fraction) -> np.ndarray:
    """``(1 + alpha^2) x[r] - alpha (x[r-1] + x[r+1])`` for every interior row r (Theorem 2)."""
    m = np.asarray(mechanism)
    a = alpha
    return (1 + a * a) * m[1:-1] - a * (m[:-2] + m[2:])


@dataclass(frozen=True)
class DerivabilityReport:
    """Outcome of Theorem 2's test for one mechanism.

    Attributes
    ----------
    derivable : bool
        Whether ``M = G T`` with T row-stochastic: entries >= ``-tolerance`` and
        row sums within ``tolerance`` of 1.
    remap : numpy.ndarray
        ``T = G^{-1} M`` (possibly with negative entries).
    worst_entry : tuple of int
        (row of T, column) of the most negative entry of T.
    worst_value : float
        That entry's value.
    tolerance : float
        Entries of T down to ``-tolerance`` count as zero (0 for exact input).
    row_sum_error : float
        Largest ``|sum_c T[r, c] - 1|`` (non-zero only if M's rows do not sum to 1).
    """

    derivable: bool
    remap: np.ndarray
    worst_entry: tuple[int, int]
    worst_value: float
    tolerance: float
    row_sum_error: float


def derivability(mechanism: np.ndarray, alpha: float | Fraction, *, tolerance: float = 1e-9) -> DerivabilityReport:
    """Test whether ``mechanism`` can be derived from ``G_{n,alpha}`` (Theorem 2).

    Parameters
    ----------
    mechanism : array_like
        Square row-stochastic matrix; an object array of Fractions is tested exactly.
    alpha : float or Fraction
    tolerance : float
        Negative entries of T above ``-tolerance`` are treated as round-off. Ignored
        (taken as 0) for exact input.
    """
    m = np.asarray(mechanism)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise fail("mechanism", OWNER, "a square matrix", m)
    exact = m.dtype == object
    t = remap_from_geometric(m, alpha)
    flat = int(np.argmin(np.asarray(t, dtype=float)))
    row, col = divmod(flat, t.shape[1])
    worst = t[row, col]
    tol = 0.0 if exact else check_real(tolerance, "tolerance", OWNER, low=0.0)
    row_sum_error = max(abs(sum(row) - 1) for row in t) if exact else float(np.abs(t.sum(axis=1) - 1).max())
    return DerivabilityReport(
        derivable=bool(worst >= -tol and row_sum_error <= tol),
        remap=t,
        worst_entry=(row, col),
        worst_value=float(worst),
        tolerance=tol,
        row_sum_error=float(row_sum_error),
    )


def two_sided_geometric(alpha: float, size: int | tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Draw Definition 1's noise: the difference of two i.i.d. geometric variables.

    If ``X, Y`` count failures before a success of probability ``1 - alpha``, then
    ``Pr[X - Y = z] = (1 - alpha) / (1 + alpha) * alpha**|z|``.
    """
    a = _alpha(alpha)
    if not isinstance(rng, np.random.Generator):
        raise fail("rng", OWNER, "a numpy.random.Generator", rng)
    return rng.geometric(1 - a, size=size) - rng.geometric(1 - a, size=size)


def sample_geometric_release(
    true_value: int, n: int, alpha: float, size: int, rng: np.random.Generator
) -> np.ndarray:
    """Release ``clip(true_value + Z, 0, n)``, which has exactly the law of row ``true_value`` of G."""
    n = check_int(n, "n", OWNER, low=1)
    v = check_int(true_value, "true_value", OWNER, low=0, high=n)
    return np.clip(v + two_sided_geometric(alpha, size, rng), 0, n)


def exact_geometric_release(true_value: int, n: int, alpha: float, count: int, source: Any) -> np.ndarray:
    """``count`` draws from row ``true_value`` of ``G_{n,alpha}``, exactly, alpha taken as its dyadic value.

    ``clip(true_value + K1 - K2, 0, n)`` with K1, K2 i.i.d. ``P(K = k) = (1 - alpha) alpha^k``
    (:func:`dpopt.exact_sampling.exact_geometric`, integer arithmetic only): K1 - K2 is
    Definition 1's noise, and the mass beyond 0 or n is ``alpha^i / (1 + alpha)``, G's
    end columns. Unlike a draw from G's float64 row, this stays exact where
    ``alpha^|i - r|`` leaves the float range (|i - r| epsilon > 708): there the float row
    holds zeros beside non-zeros, an infinite privacy loss. Expected cost: about
    ``2 / (1 - alpha)`` vectorised Bernoulli rounds.
    """
    n = check_int(n, "n", OWNER, low=1)
    v = check_int(true_value, "true_value", OWNER, low=0, high=n)
    return clamped_geometric(np.full(count, v), n, alpha, source)


def clamped_geometric(values: np.ndarray, n: int, alpha: float, source: Any) -> np.ndarray:
    """One exact draw from row ``values[j]`` of ``G_{n,alpha}`` for each j: ``clip(v + K1 - K2, 0, n)``
    (see :func:`exact_geometric_release`; alpha as its dyadic value)."""
    from dpopt.exact_sampling import exact_geometric

    a, size = float(_alpha(alpha)), len(values)
    return np.clip(np.asarray(values) + exact_geometric(a, size, source) - exact_geometric(a, size, source), 0, n)


def geometric_row_is_normal(n: int, alpha: float, row: int) -> bool:
    """Whether every entry of float row ``row`` of ``G_{n,alpha}`` is a normal float64.

    Then each entry is within a few ulps of ``d_r alpha^|i - r|`` and sampling the row's
    floats exactly is faithful to G; below the normal range (about e^-708) subnormals lose
    their relative precision and then round to zero beside non-zero neighbours.
    """
    a = float(alpha)
    weight = (1 - a) / (1 + a) if n >= 2 else 1 / (1 + a)  # the smallest d_r (column_weights), without forming them
    return float(np.log(weight)) + max(row, n - row) * float(np.log(a)) > LOG_SMALLEST_NORMAL
