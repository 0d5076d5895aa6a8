"""Goodness of fit for samplers on the integers, shared by the release tests."""

from typing import Callable

import numpy as np
from scipy import stats


def integer_fit_pvalue(draws: np.ndarray, law: Callable[[np.ndarray], np.ndarray]) -> float:
    """Chi-square p-value of integer ``draws`` against ``law(j)`` = P(draw = j).

    Cells expected fewer than 5 times are pooled into one cell with the mass beyond the
    drawn range, so the test sees the whole law.
    """
    draws = np.asarray(draws, dtype=np.int64)
    support = np.arange(draws.min() - 3, draws.max() + 4)
    expected = law(support) * draws.size
    observed = np.bincount(draws - support[0], minlength=support.size)
    big = expected >= 5
    return float(stats.chisquare(np.append(observed[big], draws.size - observed[big].sum()),
                                 np.append(expected[big], draws.size - expected[big].sum())).pvalue)


def laplace_cdf(z: np.ndarray, scale: float) -> np.ndarray:
    """The Laplace(0, scale) cdf."""
    return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0) / scale), 1 - 0.5 * np.exp(-np.maximum(z, 0) / scale))


def geometric_fit_pvalue(draws: np.ndarray, ratio: float) -> float:
    """Chi-square p-value of draws K >= 0 against ``P(K = k) = (1 - ratio) ratio^k``, on about 20
    bins of equal count, the last one open (the whole tail)."""
    draws = np.asarray(draws, dtype=np.int64)
    edges = np.unique(np.append(np.quantile(draws, np.linspace(0, 1, 21)[:-1]).astype(np.int64), [0, 1]))
    while edges.size > 2 and np.exp(edges[-1] * np.log(ratio)) * draws.size < 5:
        edges = edges[:-1]  # the open last bin must expect at least 5 draws
    upper = np.append(edges[1:], np.iinfo(np.int64).max)
    observed = np.array([((draws >= lo) & (draws < hi)).sum() for lo, hi in zip(edges, upper)])
    survival = np.exp(edges * np.log(ratio))  # P(K >= edge)
    expected = np.append(survival[:-1] - survival[1:], survival[-1])
    return float(stats.chisquare(observed, expected / expected.sum() * draws.size).pvalue)
