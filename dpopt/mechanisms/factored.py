"""Mechanisms stored as the geometric mechanism followed by a sparse remap: x = G T.

Theorem 1 of Gupte & Sundararajan says an optimal count mechanism factors as
``x = G_{n,alpha} T`` with T row-stochastic, and the optimal T is very sparse. Storing
``alpha`` and T costs O(nnz(T)) instead of (n+1)^2; the dense matrix is formed only
when asked, in row blocks. Privacy holds by construction: ``alpha G[i] <= G[i+1]``
entrywise, so ``alpha (G T)[i] <= (G T)[i+1]`` for any non-negative T (post-processing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
from scipy import sparse

from dpopt.certificates import Certificate
from dpopt.mechanisms.geometric import column_weights, geometric_rows
from dpopt.sampling import RandomSource, inverse_cdf, uniforms
from dpopt.validation import fail

__all__ = ["FactoredMechanism"]

#: Rows per block when a dense product is streamed (memory ~ BLOCK * (n+1) floats).
BLOCK = 256


@dataclass(frozen=True, eq=False)
class FactoredMechanism:
    """``x = G_{n,alpha} T`` with T a sparse row-stochastic (n+1) x (n+1) matrix.

    Attributes
    ----------
    n : int
    alpha : float
    remap : scipy.sparse.csr_array
        Row-stochastic, non-negative; row r is the consumer's distribution over
        reported values when the geometric mechanism outputs r.
    """

    n: int
    alpha: float
    remap: sparse.csr_array

    def __post_init__(self) -> None:
        t = sparse.csr_array(self.remap)
        if t.shape != (self.n + 1, self.n + 1):
            raise fail("remap", "FactoredMechanism", f"a ({self.n + 1}, {self.n + 1}) matrix", t.shape)
        if t.nnz and t.data.min() < 0:
            raise fail("remap", "FactoredMechanism", "a matrix with non-negative entries", float(t.data.min()))
        t.sum_duplicates()
        t.eliminate_zeros()
        object.__setattr__(self, "remap", t)

    @classmethod
    def from_remap(cls, n: int, alpha: float, remap: sparse.sparray | np.ndarray) -> "FactoredMechanism":
        """Clip a solver's remap to >= 0 and renormalise its rows (any such T keeps G's privacy)."""
        t = sparse.csr_array(remap, dtype=float)
        t.data = np.clip(t.data, 0.0, None)
        t.eliminate_zeros()
        sums = np.asarray(t.sum(axis=1)).ravel()
        if np.any(sums <= 0):
            raise fail("remap", "FactoredMechanism", "rows with positive mass", int(np.argmin(sums)))
        return cls(n=n, alpha=alpha, remap=sparse.csr_array(sparse.diags_array(1.0 / sums) @ t))

    def blocks(self, rows: np.ndarray | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(row indices, x[rows])`` in blocks of :data:`BLOCK` rows."""
        every = np.arange(self.n + 1) if rows is None else np.asarray(rows)
        t_transposed = self.remap.T.tocsr()
        for start in range(0, every.size, BLOCK):
            chunk = every[start : start + BLOCK]
            g = geometric_rows(self.n, self.alpha, chunk)
            yield chunk, np.asarray((t_transposed @ g.T).T)

    def dense(self) -> np.ndarray:
        """The full (n+1) x (n+1) mechanism matrix."""
        return np.vstack([block for _, block in self.blocks()])

    def row_losses(self, loss_rows: Callable[[np.ndarray], np.ndarray], rows: np.ndarray) -> np.ndarray:
        """Exact expected losses ``sum_r l(i, r) x[i, r]`` for i in ``rows``."""
        out = []
        for chunk, x in self.blocks(rows):
            out.append(np.einsum("ij,ij->i", loss_rows(chunk), x))
        return np.concatenate(out) if out else np.zeros(0)

    def log_blocks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(row indices, ln x[rows])``, computed in log space so nothing underflows.

        ``ln x[i, c] = logsumexp_r (ln G[i, r] + ln T[r, c])`` over the non-zeros of
        column c of T; entries of x far from the diagonal (alpha^|i-r| below 1e-308)
        keep their exact ratios, which a dense float matrix would lose.
        """
        t = self.remap.tocsc()
        columns = np.repeat(np.arange(self.n + 1), np.diff(t.indptr))
        nonempty = np.unique(columns)
        starts = t.indptr[nonempty]
        base = np.log(column_weights(self.n, self.alpha))[t.indices] + np.log(t.data)
        log_alpha = np.log(self.alpha)
        every = np.arange(self.n + 1)
        for begin in range(0, every.size, BLOCK):
            chunk = every[begin : begin + BLOCK]
            values = base[None, :] + np.abs(chunk[:, None] - t.indices[None, :]) * log_alpha
            peak = np.maximum.reduceat(values, starts, axis=1)
            total = np.add.reduceat(np.exp(values - peak[:, np.searchsorted(nonempty, columns)]), starts, axis=1)
            out = np.full((chunk.size, self.n + 1), -np.inf)
            out[:, nonempty] = peak + np.log(total)
            yield chunk, out

    def certificate(self, epsilon: float) -> Certificate:
        """Measure the privacy of ``G T`` in log space, streaming over row blocks."""
        worst, worst_pair = 0.0, (0, 1, 0)
        min_entry, row_error = np.inf, 0.0
        previous: np.ndarray | None = None
        for chunk, logx in self.log_blocks():
            x = np.exp(logx)
            min_entry = min(min_entry, float(x.min()))
            row_error = max(row_error, float(np.abs(x.sum(axis=1) - 1).max()))
            stacked = logx if previous is None else np.vstack([previous, logx])
            offset = chunk[0] - (0 if previous is None else 1)
            with np.errstate(invalid="ignore"):
                loss = np.abs(stacked[:-1] - stacked[1:])
            both_zero = np.isneginf(stacked[:-1]) & np.isneginf(stacked[1:])
            loss = np.where(both_zero, 0.0, loss)
            if loss.size:
                p, r = divmod(int(np.argmax(loss)), loss.shape[1])
                if loss[p, r] > worst:
                    worst, worst_pair = float(loss[p, r]), (int(offset + p), int(offset + p + 1), r)
            previous = logx[-1:]
        return Certificate.measured(
            worst,
            epsilon,
            worst_pair,
            min_entry,
            row_error,
            repair="clip+renormalise remap",
            method="by_construction: geometric mechanism + stochastic remap; measured in log space",
        )

    def sample(self, row: int, count: int, source: RandomSource) -> np.ndarray:
        """Draw through the factors: r ~ G[row], then the release ~ T[r]."""
        middle = inverse_cdf(geometric_rows(self.n, self.alpha, np.array([row]))[0], uniforms(source, count))
        out = np.empty(count, dtype=int)
        u = uniforms(source, count)
        t = self.remap
        for r in np.unique(middle):
            where = middle == r
            span = slice(t.indptr[r], t.indptr[r + 1])
            out[where] = t.indices[span][inverse_cdf(t.data[span], u[where])]
        return out

