"""The restricted master's rows and columns for each loss family (x = G T, see the package docstring).

Master forms (all exact reformulations of the interaction LP)
-------------------------------------------------------------
Write ``G[i, r] = g_r alpha^|i-r|`` and ``t = r' - r`` for column ``(r, r')``.

* **squared loss**: ``sum_r' T[r,r'] (i - r')^2 = (i-r)^2 - 2 (i-r) delta_r + s_r`` with
  per-row moments ``delta_r = sum t T``, ``s_r = sum t^2 T``, so
  ``E_i = c_i - 2 (Q-_i - Q+_i) + U-_i + U+_i`` where the chains
  ``P-_i = sum_{r<=i} g_r alpha^(i-r) delta_r``, ``Q-_i = sum_{r<=i} g_r alpha^(i-r) (i-r) delta_r``
  (and their right-hand twins, and U for s) obey first-order recurrences
  (``Q-_i = alpha (Q-_{i-1} + P-_{i-1})``, ``Q+_i = alpha Q+_{i+1} + P+_i``, see
  :mod:`dpopt.programs.geometric_moments`). Q and U share their ratio alpha, so the
  master carries only ``V-/+ = -/+ 2 Q-/+ + U-/+``: four chains. Each column has 5 non-zeros.
  The loss rows read the chains at the counts of S only, so the chains are kept there
  alone, each step jumping a gap of S at once (:class:`_ChainForm`): (n+1) + 5|S| rows.
* **absolute loss**: for row i outside the interval between r and r', ``|i - r'|`` is
  affine in t, giving ``E_i = c_i - P-_i + P+_i`` plus a correction
  ``G[i, r] * 2 (r' - i)`` (for ``r <= i < r'``) or ``G[i, r] * 2 (i - r')`` (for
  ``r' < i < r``) on the loss rows between r and r' only. Near-diagonal columns have
  3 + |t| non-zeros. From a noise scale of 500 on, where rows move hundreds of counts, the
  change of loss goes through four chains instead, two of them carrying each row's tails
  (:class:`_CumulativeAbsoluteForm`): at most 9 non-zeros a column.
* **zero-one loss**: ``E_i = 1 - sum_r G[i, r] T[r, i]``: 2 non-zeros per column.
* **any other monotone loss** (a user table): dense columns ``G[i, r] (l(i, r') - l(i, r))``
  (the diagonal's loss moved to the right-hand side by the convexity row).

Chains on S only (2026-11-26, session 5). The loss rows read the chains at the counts of
S alone, so :class:`_ChainForm` keeps chain variables there and jumps each gap of S in
one step (with S = all of 0..n the master is the same, bit for bit, so the ``--scale``
table does not move). S = a random 10% of n = 10,000: 51k -> 15k master rows, a warm
primal pivot 2.9 -> 1.1 ms. HiGHS's presolve already shrank the first master's chains
(its interior point: 30 -> 24 s), so the gain is in the warm rounds, which skip presolve.
Through the benchmark, old code in the same session: alpha = 0.9, squared: the random 10%
65.6 -> 37.9 s, the even counts 186.6 -> 117.7 s (one process: 79.5 s; its three Clarabel
masters, then HiGHS's dualized interior point 49 s and two warm rounds); alpha = 0.99
squared: random 10% 45.9 -> 31.5 s, S = 10%..40% and 60%..90% 75.9 -> 61.4 s. Absolute
loss keeps its chains on every count unless S is sparse (:attr:`_AbsoluteForm.CHAINS_ALWAYS_ON_S`).
Squared loss with sparse S also starts from a band of 1 (:meth:`_SquaredForm.initial_band`):
the random 10% at alpha = 0.9 then takes 28.4 s through the benchmark.
Measured and not adopted in the same session: HiGHS's IPM first for the even counts on
the smaller master (74.7 s, 22,103 clean-up pivots after crossover; 86 s in all);
Clarabel first for the random 10% (15-18 s a master with gaps in S, then 104 s for
HiGHS from scratch); primal simplex first for the random 10% (23,498 pivots, 24 s: as
slow as the interior point); a dense form with one row per count of S and entries cut
below 1e-12 (fewer rows, 66 entries a column: 120 s for the first master); HiGHS's
HiPO interior point (highspy 1.15.1 with ``highspy-extras``; 1.16's wheel lacks it) on
the random 10%'s first master: 192 iterations, 45 s against IPX's 30 s. One interior
master instead of INTERIOR_ROUNDS before HiGHS takes over: the even counts, alpha = 0.9, n =
10,000, 79.5 -> 45.9 s (the dualized fallback 49 -> 37 s on a master with fewer columns, and
no 16.7 s warm round after it), but n = 5000 16.0 -> 18.4 s and at alpha = 0.99 12.0 -> 25.0
s, so not adopted; nor the fallback without dualizing (72 s, 25,983 clean-up pivots).

A cut form for squared loss (2026-11-26, session 9; measured, not used). The squared
master sees each row of T only through its moments (delta_r, s_r), and by Jensen the
exact set of them is ``s_r >= PL(delta_r)``, the piecewise-linear interpolation of t^2 at
the integers: ``s_r >= (2j + 1) delta_r - j (j + 1)`` for every j. So the master can hold
2 (n+1) moment variables and *cuts* instead of columns, an outer approximation whose rows
jump to any mean in one solve (where the column master walks them there over rounds), cut
by the segment each mean lands on (Kelley). With cuts j = -3..2 and at +-2^k (so no row
jumps far for free) it reaches the column master's optimum exactly: a random 10% of n =
1000, alpha = 0.9, 6 rounds and 1.4 s against 1.5 s. At n = 10,000, though, HiGHS's
interior point took 230 s on its first master (266,964 cut rows, 62 iterations, then
74,451 clean-up pivots) and the run 354 s against 28 s.
As a primal predictor only (each row's columns at floor(r + delta_r) - 1 .. + 2, with the
side neighbours, as the first master of the column form): Clarabel on the cut form with cuts
j = -12..11 and at +-2^k took 30 s at n = 10,000 (200 iterations, "almost solved", 3e-5
below the optimum: some rows still sit beyond the window) and the column master from its
prediction three rounds, 68 s (at n = 1000: 1.7 s and 0.9 s, against 1.5 s in all).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, ClassVar

import highspy
import numpy as np
from scipy import sparse

from dpopt.mechanisms.factored import FactoredMechanism, group_ranks
from dpopt.mechanisms.geometric import column_weights
from dpopt.problems.count_query import CountQuery
from dpopt.programs.geometric_moments import kernel_moments

INF = highspy.kHighsInf

#: Master entries of dense (user table) columns at or below this are left out.
DENSE_DROP = 1e-12
#: S "has a gap" where two neighbours in S are this many noise scales 1 / (1 - alpha) apart:
#: the first chain master then goes to HiGHS (measured at :attr:`_ChainForm.INTERIOR_MAX_GAP`)
#: and every master's claimed optimum is checked against the exact loss of its remap.
INTERIOR_MAX_GAP = 0.25
#: Losses symmetric under (i, r') -> (n - i, n - r') (:meth:`Form.mirror_symmetric`).
MIRROR_LOSSES = ("absolute", "squared", "zero_one")
#: S is "sparse" where it holds at most this fraction of the counts 0..n: absolute loss then
#: keeps its chains on S only (:attr:`_AbsoluteForm.CHAINS_ALWAYS_ON_S`) and squared loss starts
#: from a narrower band (:meth:`_SquaredForm.initial_band`).
SPARSE_S_FRACTION = 0.25


def noise_scale(alpha: float) -> float:
    """``1 / (1 - alpha)``, rounded so that e.g. alpha = 0.95 gives 20 and not 19.99..."""
    return round(1.0 / (1.0 - alpha), 9)


# ---------------------------------------------------------------------------
# Sparse building blocks
# ---------------------------------------------------------------------------


class Columns:
    """A batch of ``count`` master columns, built as (column, row, value) triplets.

    Forms put whole arrays of entries at once (one numpy call per kind of entry, not
    one Python call per column); :meth:`arrays` sorts them into HiGHS's compressed
    column form.
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def put(self, columns: np.ndarray, rows: np.ndarray, values: np.ndarray | float) -> None:
        """Entries ``(columns[k], rows[k]) = values[k]`` (values broadcast; zeros are left out)."""
        columns, rows, values = np.broadcast_arrays(np.asarray(columns), np.asarray(rows), np.asarray(values, dtype=float))
        keep = values != 0
        self._parts.append((columns[keep], rows[keep], values[keep]))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(starts, rows, values)``: entries of column j are ``rows[starts[j]:starts[j+1]]``."""
        if not self._parts:
            return np.zeros(self.count, np.int32), np.zeros(0, np.int32), np.zeros(0)
        columns, rows, values = (np.concatenate(part) for part in zip(*self._parts))
        order = np.argsort(columns, kind="stable")
        counts = np.bincount(columns, minlength=self.count)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        return starts.astype(np.int32), rows[order].astype(np.int32), values[order]


class Form(ABC):
    """How one loss family enters the restricted master (rows, auxiliary columns, T columns)."""

    identity_losses: np.ndarray  # E_i when T is the identity (the geometric mechanism)
    #: Start with d tight at the middle of the rows tied for the worst identity loss
    #: (else the first of them); see :func:`_tight_row`.
    MIDDLE_START: ClassVar[bool] = True
    highs_options: ClassVar[dict[str, float]] = {}  # per-form HiGHS settings on top of HIGHS_OPTIONS

    def __init__(self, problem: CountQuery) -> None:
        self.problem = problem
        self.n = problem.n
        self.alpha = problem.alpha
        self.g = column_weights(self.n, self.alpha)
        self.support = np.array(problem.support)
        self.in_support = np.zeros(self.n + 1, dtype=bool)
        self.in_support[self.support] = True
        self.row_lower: list[float] = []
        self.row_upper: list[float] = []
        self.conv = self._rows(self.n + 1, 1.0, 1.0)
        #: whether S has a gap of INTERIOR_MAX_GAP noise scales (where the chains carry tiny
        #: values across it and HiGHS's optima are checked against the exact loss)
        widest = int(np.diff(self.support).max()) if self.support.size > 1 else 0
        self.gapped = bool(widest >= INTERIOR_MAX_GAP / (1.0 - self.alpha))
        #: S's widest gap in noise scales (0 where S is all of 0..n)
        self.widest_gap = widest * (1.0 - self.alpha) if self.support.size < self.n + 1 else 0.0

    def _rows(self, count: int, lower: float, upper: float) -> np.ndarray:
        first = len(self.row_lower)
        self.row_lower.extend([lower] * count)
        self.row_upper.extend([upper] * count)
        return np.arange(first, first + count)

    def _loss_rows(self, constants: np.ndarray) -> None:
        """Loss rows ``(terms) - d <= -constants[i]`` for i in S; ``loss_at[i]`` is the row of i."""
        first = len(self.row_lower)
        self.row_lower.extend([-INF] * self.support.size)
        self.row_upper.extend(list(-constants[self.support]))
        self.loss = np.arange(first, first + self.support.size)
        self.loss_at = np.full(self.n + 1, -1)
        self.loss_at[self.support] = self.loss

    def mirror_symmetric(self) -> bool:
        """Whether the problem is unchanged by r <-> n - r: S = n - S and a named loss
        (user tables are not checked for it); then the mirror of an optimal T is optimal."""
        return self.problem.loss_name in MIRROR_LOSSES and bool(np.array_equal(self.support, self.n - self.support[::-1]))

    def auxiliary(self) -> Columns:
        """Auxiliary (chain) columns; forms whose loss rows read T directly have none."""
        return Columns(0)

    def first_strategy(self, coarse_started: bool = False) -> str:
        """How the first master is solved (see :meth:`Master.solve`): primal simplex
        from the identity's basis, which is already optimal or close for most losses."""
        return "primal"

    def initial_band(self) -> int:
        """Half-width of the first master's band of columns ``|r' - r| <= band``."""
        return 2

    def columns(self, r: np.ndarray, rp: np.ndarray) -> Columns:
        """The master columns of ``T[r[k], rp[k]]``: the convexity row, then :meth:`_entries`."""
        r, rp = np.asarray(r, dtype=np.int64), np.asarray(rp, dtype=np.int64)
        cols = Columns(r.size)
        index = np.arange(r.size)
        cols.put(index, self.conv[r], 1.0)
        self._entries(cols, index, r, rp)
        return cols

    @abstractmethod
    def _entries(self, cols: Columns, index: np.ndarray, r: np.ndarray, rp: np.ndarray) -> None:
        """Put the entries of columns ``index`` (remap entries ``T[r, rp]``) other than convexity."""


class _ChainForm(Form):
    """Shared chain variables: left ``sum_{r<=i} g_r alpha^(i-r) f_r`` and right twins
    ``sum_{r>i}``, kept only at the counts i of S (the only places the loss rows read
    them) where S leaves out enough of 0..n (:attr:`CHAINS_ALWAYS_ON_S`), else at every count.

    Between consecutive positions p < q the recurrence jumps the gap at once:
    ``L_q = alpha^(q-p) L_p + sum_{p<r<=q} g_r alpha^(q-r) f_r``, so row r of T feeds the
    left chain at the first position at or right of r and the right chain at the last
    one left of r, each with its kernel weight (:meth:`_feed`). Each chain adds |S|
    auxiliary columns and rows instead of n+1 (on every count the rows and entries are
    those of the step-by-step recurrence, bit for bit); ``_chain`` returns their column
    indices so that the caller can put further entries (the chain feeding another chain
    or the loss rows).
    """

    #: From this alpha on, the first master is solved by interior point + crossover:
    #: every row of T then moves away from the identity and primal simplex needs ~3.4
    #: pivots per row (n = 1000, 2000: squared 1.8 -> 1.4 s, 6.4 -> 4.4 s at alpha = 0.9,
    #: 0.83 -> 0.74 s at 0.8; absolute 1.13 -> 0.95 s); at alpha = 0.7 and below primal
    #: simplex is faster (squared, n = 1000, alpha = 0.5: 0.26 against 0.63 s).
    IPM_FROM_ALPHA: ClassVar[float] = 0.8
    #: Below IPM_FROM_ALPHA, from this n on (S holding a third of the counts or more), the first master is solved by
    #: Clarabel's interior point instead of primal simplex, whose pivots grow like n^2
    #: (2026-11-27, one process, primal / interior: absolute alpha = 0.1, 0.3, 0.5, 0.7 at
    #: n = 3000 1.7 / 0.13, 0.40 / 0.14, 1.2 / 0.21, 1.9 / 0.19 s, at n = 10,000 4.7 / 0.50,
    #: 4.4 / 0.56, 5.1 / 0.60, 10.8 / 0.70 s; squared at n = 3000 6.1 / 0.40, 0.61 / 0.52,
    #: 1.0 / 0.47, 3.8 / 0.48 s, alpha = 0.5, n = 10,000 44 / 2.5 s and n = 30,000 over
    #: 390 s; at n = 1000 primal took 0.02-0.62 s, interior 0.05-0.21 s). With S the even
    #: counts (alpha = 0.5, n = 10,000) 20 / 1.6 s squared, 7.0 / 0.6 s absolute; with every
    #: third count HiGHS failed every way on the squared master ("Solve error", then a
    #: corrupted heap: the process aborted) where Clarabel took 1.9 s. Sparser S stays with
    #: primal simplex (a random tenth of the counts: 2.9 / 14.6 s squared, 1.1 / 4.0 s absolute).
    INTERIOR_FROM_N: ClassVar[int] = 1000

    #: Where the first master is likely optimal already, it (and up to INTERIOR_ROUNDS
    #: masters) is solved by Clarabel's interior point without crossover
    #: (:meth:`Master.solve_interior`): HiGHS's interior point spends most of its time in
    #: iterative linear algebra and crossover on these chains (absolute, alpha = 0.9,
    #: n = 10,000: 27 of 30 s), while Clarabel's direct sparse LDL factorises the banded
    #: system in about a second. Without a basis, though, each further master is solved
    #: from scratch, so interior masters lose where many rounds follow (absolute, alpha =
    #: 0.9, n = 5000: 9 rounds, 12 -> 15 s; alpha = 0.999, n = 2000: 14 -> 45 s). "Likely
    #: optimal" is measured by the range in noise scales, n (1 - alpha): from
    #: INTERIOR_COARSE_RANGE with a coarse start (its prediction is good there: alpha =
    #: 0.99, n = 1000: 0.90 -> 0.53 s; n = 10,000 44 -> 8 s), from INTERIOR_BAND_RANGE
    #: from the band (the ends no longer move the optimum beyond the tolerance: alpha =
    #: 0.8, n = 5000 7.6 -> 1.1 s; alpha = 0.9, n = 10,000 30 -> 4.7 s). Since the
    #: fallback starts from a predicted basis (:func:`extended_basis`) the band's threshold
    #: is 400 (2026-11-25, one process, absolute / squared against HiGHS's IPM): range 400,
    #: alpha = 0.9, n = 4000 8.4 -> 7.0 s / 12.2 -> 9.0 s, alpha = 0.8, n = 2000 1.2 -> 0.4 s /
    #: 2.8 -> 2.4 s; range 500, alpha = 0.9, n = 5000 12.6 -> 7.6 s / 18.7 -> 8.3 s; but range
    #: 300 loses (alpha = 0.9, n = 3000: 4.8 -> 6.2 s / 7.8 -> 8.4 s; alpha = 0.94, n = 5000
    #: 15 -> 21 s / 39 -> 45 s) and range 200 too (alpha = 0.9, n = 2000: 2.7 -> 3.7 s).
    INTERIOR_COARSE_RANGE: ClassVar[float] = 5.0
    INTERIOR_BAND_RANGE: ClassVar[float] = 400.0
    #: ... but not where S has a gap of this many noise scales 1 / (1 - alpha): the rows of
    #: T inside it barely move any loss of S, and Clarabel then needs 85-200 iterations
    #: (31 at S = all) and still falls short of the certificate, so up to three interior
    #: masters are followed by HiGHS from scratch anyway. HiGHS's IPM + crossover for the
    #: first master, then warm primal simplex (alpha = 0.99, n = 5000, one process):
    #: S = 10%..40% and 60%..90% of n absolute 31.6 -> 15.5 s, squared 15.2 -> 12.4 s; a
    #: random 10% of the counts absolute 11.1 -> 6.1 s, squared 31.3 -> 7.0 s (n = 1000
    #: 1.07 -> 0.52 s); two counts absolute 2.4 -> 1.05 s, squared 8.9 -> 0.97 s; S = 0..n/10
    #: and 9n/10..n absolute 97 -> 40 s. S = the even counts (gaps of 2) keeps the interior
    #: point: there HiGHS took 2.1 -> 5.7 s (absolute) and 8.3 -> 9.4 s (squared).
    INTERIOR_MAX_GAP: ClassVar[float] = INTERIOR_MAX_GAP
    #: Whether a coarse-started master on a gapped but symmetric S (S = n - S) still goes to
    #: the interior point, where :meth:`Master.solve_interior` folds it in half (see
    #: :class:`_SquaredForm`).
    INTERIOR_ON_SYMMETRIC_GAPS: ClassVar[bool] = False

    def first_strategy(self, coarse_started: bool = False) -> str:
        if self.alpha < self.IPM_FROM_ALPHA:
            dense = 3 * self.support.size >= self.n + 1  # (a gap of one count is already "gapped" here)
            return "interior" if dense and self.n >= self.INTERIOR_FROM_N else "primal"
        if self.gapped or self.widest_gap >= self.INTERIOR_MAX_GAP:
            return "interior" if self.INTERIOR_ON_SYMMETRIC_GAPS and coarse_started and self.mirror_symmetric() else "ipm"
        # rounded: 8000 (1 - 0.9) is 799.99... in floating point, and the threshold was
        # missed by it (squared, n = 8000: 53 s for a first master the interior point does in 3)
        scales = round(self.n * (1.0 - self.alpha), 9)
        if scales >= (self.INTERIOR_COARSE_RANGE if coarse_started else self.INTERIOR_BAND_RANGE):
            return "interior"
        return "ipm"

    #: The chains live on the counts of S whatever S is (else only where S is sparse; see
    #: :attr:`_AbsoluteForm.CHAINS_ALWAYS_ON_S`).
    CHAINS_ALWAYS_ON_S: ClassVar[bool] = True

    def __init__(self, problem: CountQuery) -> None:
        super().__init__(problem)
        #: whether S holds at most SPARSE_S_FRACTION of the counts 0..n
        self.sparse_s = self.support.size <= SPARSE_S_FRACTION * (self.n + 1)
        on_s = self.CHAINS_ALWAYS_ON_S or self.sparse_s
        #: the counts that carry chain variables; the steps between them, and each one's
        #: step to the next, with a virtual position one past the last
        self.positions = self.support if on_s else np.arange(self.n + 1)
        self.step = np.diff(self.positions)
        self.next_step = np.append(self.step, 1)

    def _chain_rows(self) -> tuple[np.ndarray, np.ndarray]:
        return self._rows(self.positions.size, 0.0, 0.0), self._rows(self.positions.size, 0.0, 0.0)

    def _chain(self, cols: Columns, first: int, rows: np.ndarray, left: bool) -> np.ndarray:
        """Variables ``L_k`` (+1 in row k, -alpha^(p_(k+1) - p_k) in row k+1:
        ``L_(k+1) = alpha^step L_k + ...``) or, for ``left=False``, ``R_k`` (+1 in row k,
        -alpha^(p_k - p_(k-1)) in row k-1), one per position p_k."""
        k = np.arange(self.positions.size)
        index = first + k
        cols.put(index, rows[k], 1.0)
        decay = -(self.alpha**self.step)
        if left:
            cols.put(index[:-1], rows[1:], decay)
        else:
            cols.put(index[1:], rows[:-1], decay)
        return index

    def _loss_entries(self, cols: Columns, index: np.ndarray, coefficient: float) -> None:
        """Chain variable k (column ``index[k]``) enters the loss row of its position, if in S."""
        in_s = self.in_support[self.positions]
        cols.put(index[in_s], self.loss_at[self.positions[in_s]], coefficient)

    def _sides(self, r: np.ndarray) -> tuple["_Feed", "_Feed"]:
        """Where rows r of T feed the left chains (the first position at or right of r)
        and the right chains (the last position left of r); rows with none feed none."""
        first = np.searchsorted(self.positions, r)
        on_left = np.flatnonzero(first < self.positions.size)
        on_right = np.flatnonzero(first > 0)
        left = _Feed(on_left, first[on_left], self.positions[first[on_left]] - r[on_left])
        right = _Feed(on_right, first[on_right] - 1, r[on_right] - self.positions[first[on_right] - 1])
        return left, right

    def _feed(self, cols: Columns, index: np.ndarray, r: np.ndarray, feed: "_Feed", rows: np.ndarray, value: np.ndarray) -> None:
        """Columns ``index[feed.columns]`` enter chain rows ``rows[feed.position]`` with
        ``-g_r alpha^distance value`` (operands in the order of a one-step recurrence)."""
        weight = -(self.alpha**feed.distance) * self.g[r[feed.columns]]
        cols.put(index[feed.columns], rows[feed.position], weight * value)


@dataclass(frozen=True)
class _Feed:
    """Which master columns feed a chain (``columns``), at which chain variable (``position``,
    an index into the chain positions) and from how far (``distance`` >= 0)."""

    columns: np.ndarray
    position: np.ndarray
    distance: np.ndarray


class _AbsoluteForm(_ChainForm):
    #: Absolute loss leaves the interior point at narrower gaps: S = the even counts at alpha
    #: = 0.9 (gaps of 0.2 noise scales; one process, interior -> HiGHS's IPM): n = 3000 2.4 ->
    #: 2.1 s, 5000 15.1 -> 5.0 s, 10,000 20 -> 15 s, as three interior masters fell short and
    #: the fallback from scratch followed; at alpha = 0.95 (0.1 scales) the interior point
    #: certified at once (n = 10,000: 9.7 s against 26 s). Squared loss keeps 0.25: the even
    #: counts at alpha = 0.9, n = 10,000 took 94 s for HiGHS's first master alone and then
    #: 100+ s a round.
    INTERIOR_MAX_GAP: ClassVar[float] = 0.15
    #: Absolute loss keeps its two chains on S only where S is sparse: a random 10% of the
    #: counts, n = 10,000 (benchmark, old code in the same session): alpha = 0.99 19.1 ->
    #: 15.4 s, alpha = 0.9 10.0 -> 9.1 s; but S = the even counts (alpha = 0.9: 16.6 -> 19.0
    #: s) and S = 10%..40% and 60%..90% (alpha = 0.99: 58.7 -> 66.9 s, HiGHS's clean-up
    #: after crossover 142 -> 3134 pivots) lost, as presolve already shrinks the first
    #: master's chains and the rest of the master is as large.
    CHAINS_ALWAYS_ON_S: ClassVar[bool] = False

    def __init__(self, problem: CountQuery) -> None:
        super().__init__(problem)
        self._add_chain_rows()
        self.identity_losses = kernel_moments(self.g, self.alpha, 1).absolute_first
        self._loss_rows(self.identity_losses)

    def _add_chain_rows(self) -> None:
        """The rows of the chains (before the loss rows): P- and P+."""
        self.p_left, self.p_right = self._chain_rows()

    def initial_band(self) -> int:
        """1 below IPM_FROM_ALPHA, where the identity is (nearly) optimal and fewer
        columns mean fewer degenerate pivots (n = 1000: 0.17 -> 0.11 s at alpha = 0.1,
        0.24 -> 0.18 s at 0.5); 2 above, where band 1 costs more rounds (1.2 -> 2.1 s)."""
        return 1 if self.alpha < self.IPM_FROM_ALPHA else 2

    def auxiliary(self) -> Columns:
        size = self.positions.size
        cols = Columns(2 * size)
        self._loss_entries(cols, self._chain(cols, 0, self.p_left, left=True), -1.0)
        self._loss_entries(cols, self._chain(cols, size, self.p_right, left=False), 1.0)
        return cols

    def _entries(self, cols: Columns, index: np.ndarray, r: np.ndarray, rp: np.ndarray) -> None:
        t = rp - r
        left, right = self._sides(r)
        self._feed(cols, index, r, left, self.p_left, t[left.columns].astype(float))
        self._feed(cols, index, r, right, self.p_right, t[right.columns].astype(float))
        # the loss rows i strictly between (r <= i < r' or r' < i < r) get G[i, r] 2 |r' - i|
        length = np.where(t > 0, t, np.maximum(-t - 1, 0))
        owner = np.repeat(np.arange(r.size), length)
        offset = group_ranks(length)
        i = np.where(t[owner] > 0, r[owner], rp[owner] + 1) + offset
        inside = self.in_support[i]
        owner, i = owner[inside], i[inside]
        distance = 2.0 * np.abs(rp[owner] - i)
        cols.put(index[owner], self.loss_at[i], self.g[r[owner]] * self.alpha ** np.abs(i - r[owner]) * distance)


class _CumulativeAbsoluteForm(_AbsoluteForm):
    """Absolute loss with O(1) entries per column: four chains carry the whole change of loss.

    Row r of T changes the loss at input i by the piecewise-linear
    ``h_r(i) = sum_r' T[r, r'] (|i - r'| - |i - r|)``, whose slope is twice a tail of the
    row: ``h_r(i) - h_r(i - 1) = -2 S_r(i)`` for i > r, with ``S_r(j) = sum_{r' >= j} T[r, r']``
    the mass at or above j, and ``h_r(i) - h_r(i + 1) = -2 F_r(i)`` for i < r, with
    ``F_r(j) = sum_{r' <= j} T[r, r']``. So the left part of the change,
    ``A_i = sum_{r <= i} g_r alpha^(i-r) h_r(i)``, obeys (chain positions p < q, D = q - p)

        A_q = alpha^D A_p - 2 D alpha^D B_p + 2 sum_{r <= p, p < r' < q} g_r alpha^(q-r) (q - r') T[r, r'] + (rows p < r <= q)
        B_q = alpha^D B_p + (rows p < r <= q) - (columns r <= p < r' <= q),

    with ``B_p = sum_{r <= p} g_r alpha^(p-r) S_r(p + 1)``; the right part ``A'_i`` (rows
    r > i) likewise with ``B'_q = sum_{r > q} g_r alpha^(r-q) F_r(q - 1)``. Column (r, r')
    enters A at the first position q >= r with ``g_r alpha^(q-r) (|q - r'| - (q - r))``, and
    B there with ``g_r alpha^(q-r)`` if r' > q, leaving it at the first position >= r'; its
    twins at the last position p < r likewise (B' if r' < p, leaving at the last position
    <= r'); and where r' lies strictly inside a gap between positions beyond the one it
    entered, A (or A') at the gap's far end gets ``2 g_r alpha^(.) |end - r'|``. At most 9
    entries (5 on every count), whatever |r' - r| is. The loss rows read
    ``A_i + A'_i - d <= -E_i(I)``, as in :class:`_AbsoluteForm`.

    :class:`_AbsoluteForm` puts ``G[i, r] 2 |r' - i|`` on every loss row between r and r'
    (3 + |r' - r| entries): at alpha = 0.999, n = 10,000 the coarse start's columns move a
    median 274 and up to 715 counts, and its first master held 12.2 million entries.

    Used from a noise scale of CUMULATIVE_FROM_SCALE = 500 (:func:`form_for`). Measured
    (2026-11-26, session 13, one process, S = all, every gap <= 2e-12, the old form in the
    same hour): alpha = 0.999, n = 1000 3.8 -> 1.0 s, n = 2000 20.9 -> 3.9 s, n = 5000
    74 s (127 s through the benchmark in session 12), n = 10,000 250 s and 1.49 GB -> 94 s and 438 MB (two Clarabel masters of
    ~50,000 columns); alpha = 0.998, n = 5000 36 -> 18 s. At alpha = 0.995 (scale 200) it
    was about even (this form at every level of the coarse start: n = 2000 6.8 -> 7.7 s,
    n = 5000 29.6 -> 24.9 s), so the gate stays at 500. Below that scale it loses, and
    it was not analysed why (each column's B entries join chain rows r and r', so the
    interior point's factors may fill a band as wide as the moves; the old form's entries
    join the loss rows between them instead): alpha = 0.99, n = 1000 0.53 / 0.54 s,
    n = 10,000 3.8 -> 13.3 s, n = 5000 2.1 s -> over 300 s; alpha = 0.97, n = 5000 2.9 s ->
    over 300 s; alpha = 0.5, n = 5000 0.28 -> 10.1 s (primal simplex); alpha = 0.9, n =
    2000 2.3 -> 26 s, and that run stopped with its bounds 3.8e-5 apart (not certified). S = 10-40% and 60-90% of n = 5000 at alpha = 0.99: HiGHS's first
    master 13.6 -> 10.7 s (430,203 -> 123,893 entries), but a later warm master drifted
    (claimed 4e-5 below the bound) and the run took 28.9 s against 16.4 s (15.7 s when the
    drifted master was re-solved on fresh factors, as after a predicted basis: no gain).
    Nor did a *twin* first master pay: HiGHS's interior point + crossover on this form, its
    optimal basis installed in :class:`_AbsoluteForm`'s master (a basis of one form is one
    of the other: the chains are free and fixed by T), after which primal simplex confirmed
    it in 0-1 pivots. It won on that S (18.7 -> 15.7 s), on n = 1000 (0.78 -> 0.64 s) and on
    S = 0..n/10 and 9n/10..n (8.6 -> 6.0 s), but lost at n = 10,000 (47 -> 200 s), on the
    even counts at alpha = 0.9, n = 10,000 (16 -> 32 s), on S = 10-40% and 60-90% there
    (7.1 -> 8.2 s) and on a random 10% at alpha = 0.99, n = 5000 (5.5 -> 5.9 s).
    """

    def _add_chain_rows(self) -> None:
        """The rows of the four chains: A and B on the left, A' and B' on the right."""
        self.a_left, self.b_left = self._chain_rows()
        self.a_right, self.b_right = self._chain_rows()

    def auxiliary(self) -> Columns:
        size = self.positions.size
        cols = Columns(4 * size)
        coupling = 2.0 * self.step * self.alpha**self.step  # 2 D alpha^D between consecutive positions
        a_left = self._chain(cols, 0, self.a_left, left=True)
        b_left = self._chain(cols, size, self.b_left, left=True)
        cols.put(b_left[:-1], self.a_left[1:], coupling)
        a_right = self._chain(cols, 2 * size, self.a_right, left=False)
        b_right = self._chain(cols, 3 * size, self.b_right, left=False)
        cols.put(b_right[1:], self.a_right[:-1], coupling)
        self._loss_entries(cols, a_left, 1.0)
        self._loss_entries(cols, a_right, 1.0)
        return cols

    def _entries(self, cols: Columns, index: np.ndarray, r: np.ndarray, rp: np.ndarray) -> None:
        positions, size = self.positions, self.positions.size
        at_or_above_r = np.searchsorted(positions, r)  # the first position >= r (size: none)
        below_r = at_or_above_r - 1  # the last position < r (-1: none)
        at_or_above_rp = np.searchsorted(positions, rp)
        at_or_below_rp = np.searchsorted(positions, rp, side="right") - 1
        inside_gap = at_or_above_rp != at_or_below_rp  # r' is not a position

        def put(which: np.ndarray, k: np.ndarray, rows: np.ndarray, value: Callable[[np.ndarray, np.ndarray], np.ndarray | float]) -> None:
            """Columns ``which`` enter chain rows ``rows[k]`` with ``-g_r alpha^|p - r| value(p)``, p their position."""
            c = np.flatnonzero(which)
            p = positions[k[c]]
            cols.put(index[c], rows[k[c]], -self.g[r[c]] * self.alpha ** np.abs(p - r[c]) * value(p, c))

        left = at_or_above_r < size
        put(left, at_or_above_r, self.a_left, lambda p, c: np.abs(p - rp[c]) - (p - r[c]))
        onward = left & (rp > positions[np.minimum(at_or_above_r, size - 1)])
        put(onward, at_or_above_r, self.b_left, lambda p, c: 1.0)
        put(onward & (at_or_above_rp < size), at_or_above_rp, self.b_left, lambda p, c: -1.0)
        put(inside_gap & (at_or_above_rp < size) & (at_or_above_rp > at_or_above_r), at_or_above_rp, self.a_left,
            lambda p, c: 2.0 * (p - rp[c]))
        right = below_r >= 0
        put(right, below_r, self.a_right, lambda p, c: np.abs(p - rp[c]) - (r[c] - p))
        back = right & (rp < positions[np.maximum(below_r, 0)])
        put(back, below_r, self.b_right, lambda p, c: 1.0)
        put(back & (at_or_below_rp >= 0), at_or_below_rp, self.b_right, lambda p, c: -1.0)
        put(inside_gap & (at_or_below_rp >= 0) & (below_r > at_or_below_rp), at_or_below_rp, self.a_right,
            lambda p, c: 2.0 * (rp[c] - p))

class _SquaredForm(_ChainForm):
    """Four chains: P-/P+ of delta_r, and V-/V+ carrying ``-/+ 2 Q + U`` (one chain per side).

    A gapped but symmetric S keeps the interior point after a coarse start
    (INTERIOR_ON_SYMMETRIC_GAPS): folded in half, Clarabel's masters certified S = 10%..40%
    and 60%..90% of n = 5000, alpha = 0.99, in three rounds, 10.0-11.4 s against 17.8-20.9 s
    for HiGHS's interior point and warm rounds (2026-11-26, session 12; unfolded 14.4 s).
    Absolute loss does not: its third interior master still stood 1e-9 short and HiGHS from
    scratch followed (39.8 s in all).

    ``Q-`` and ``U-`` obey the same recurrence (ratio alpha), so only their combination
    in the loss rows, ``V-_i = -2 Q-_i + U-_i``, needs a chain:
    ``V-_i = alpha V-_(i-1) - 2 alpha P-_(i-1) + g_i s_i``; on the right
    ``V+_i = 2 Q+_i + U+_i = alpha V+_(i+1) + 2 P+_i + alpha g_(i+1) s_(i+1)``.
    Two chains fewer than Q and U apart: the master has (n+1) + 5|S| rows, not
    (n+1) + 7|S|, and every simplex iteration is cheaper.

    Across a step D = q - p between counts of S (the chains live on S only):
    ``V-_q = alpha^D V-_p - 2 D alpha^D P-_p + sum_{p<r<=q} g_r alpha^(q-r) (s_r - 2 (q-r) delta_r)``
    and ``V+_p = alpha^D V+_q + 2 D P+_p + sum_{p<r<=q} g_r alpha^(r-p) (s_r + 2 (r-q) delta_r)``
    (Q+_p = alpha^D (Q+_q + D P+_q) + ... with alpha^D P+_q = P+_p - ...; D = 1 gives the
    one-step recurrences above; past the last count a virtual next count one further).
    """

    #: The middle start made squared loss erratic (alpha = 0.5: n = 1000 0.29 -> 2.1 s,
    #: n = 2000 1.0 -> 3.0 s in one run, faster in another); the first tied row measured
    #: steadier.
    MIDDLE_START = False

    def __init__(self, problem: CountQuery) -> None:
        super().__init__(problem)
        self.p_left, self.p_right = self._chain_rows()
        self.v_left, self.v_right = self._chain_rows()
        self.identity_losses = kernel_moments(self.g, self.alpha, 2).second
        self._loss_rows(self.identity_losses)

    INTERIOR_ON_SYMMETRIC_GAPS: ClassVar[bool] = True

    def initial_band(self) -> int:
        """2, but 1 where S is sparse from IPM_FROM_ALPHA on (its nearest counts join the
        first master, :func:`side_neighbours`). A random 10% at alpha = 0.9, one process,
        band 2 -> 1: n = 1000 0.59 -> 0.51 s, 5000 9.1 -> 8.9 s, 10,000 37.5 -> 30.3 s (the
        first master, HiGHS's IPM, 20.7 -> 13.7 s); alpha = 0.8, n = 5000 6.7 -> 6.5 s; but
        alpha = 0.5, n = 5000 1.76 -> 1.91 s. Band 0 was erratic (n = 10,000 29.8 s, but n =
        1000 0.70 s and 5000 12.5 s: 16,305 pivots in one warm round)."""
        return 1 if self.sparse_s and self.alpha >= self.IPM_FROM_ALPHA else 2

    def auxiliary(self) -> Columns:
        size = self.positions.size
        cols = Columns(4 * size)
        p_left = self._chain(cols, 0, self.p_left, left=True)
        cols.put(p_left[:-1], self.v_left[1:], 2.0 * self.step * self.alpha**self.step)
        p_right = self._chain(cols, size, self.p_right, left=False)
        cols.put(p_right, self.v_right, -2.0 * self.next_step)
        self._loss_entries(cols, self._chain(cols, 2 * size, self.v_left, left=True), 1.0)
        self._loss_entries(cols, self._chain(cols, 3 * size, self.v_right, left=False), 1.0)
        return cols

    def _entries(self, cols: Columns, index: np.ndarray, r: np.ndarray, rp: np.ndarray) -> None:
        t = (rp - r).astype(float)
        left, right = self._sides(r)
        t_left, t_right = t[left.columns], t[right.columns]
        self._feed(cols, index, r, left, self.p_left, t_left)
        self._feed(cols, index, r, right, self.p_right, t_right)
        self._feed(cols, index, r, left, self.v_left, -2.0 * left.distance * t_left + t_left * t_left)
        beyond = right.distance - self.next_step[right.position]  # r - (the next count after the right one)
        self._feed(cols, index, r, right, self.v_right, 2.0 * beyond * t_right + t_right * t_right)


class _ZeroOneForm(Form):
    def __init__(self, problem: CountQuery) -> None:
        super().__init__(problem)
        self.identity_losses = 1.0 - self.g
        self._loss_rows(np.ones(self.n + 1))

    def _entries(self, cols: Columns, index: np.ndarray, r: np.ndarray, rp: np.ndarray) -> None:
        hit = self.in_support[rp]
        r, rp = r[hit], rp[hit]
        cols.put(index[hit], self.loss_at[rp], -self.g[r] * self.alpha ** np.abs(rp - r))


class _DenseForm(Form):
    """Any monotone loss table: loss row i gets ``G[i, r] (l(i, r') - l(i, r))``.

    Subtracting the diagonal column's loss (the convexity row makes it a constant,
    ``c_i = sum_r G[i, r] l(i, r)``, moved to the right-hand side) keeps the entries
    small and zeroes them wherever the loss is flat (a capped loss far from r and r').
    Entries below :data:`DENSE_DROP` are left out of the master (HiGHS would drop them
    anyway); that perturbs the master by at most that much per entry, never the
    certificate, since the upper bound is the exact loss of the returned mechanism and
    pricing uses every entry.
    """

    #: HiGHS scaling of these dense columns (entries from 1e-12 up) breaks its
    #: tolerances: n = 300, alpha = 0.1, loss |i - r|^1.5 ran > 60 s in every simplex
    #: variant; unscaled (and with the offset) it takes 0.15 s.
    highs_options = {"simplex_scale_strategy": 0}
    #: Columns are built in blocks of about this many (column, support) pairs (4 MB per
    #: temporary array: building columns then costs less memory than pricing does).
    BLOCK_ENTRIES = 1 << 19

    def __init__(self, problem: CountQuery) -> None:
        super().__init__(problem)
        self.table = problem.loss_matrix
        identity = FactoredMechanism(n=self.n, alpha=self.alpha, remap=sparse.eye_array(self.n + 1, format="csr"))
        self.identity_losses = np.zeros(self.n + 1)
        self.identity_losses[self.support] = identity.row_losses(problem.loss_rows, self.support)
        self._loss_rows(self.identity_losses)

    def _entries(self, cols: Columns, index: np.ndarray, r: np.ndarray, rp: np.ndarray) -> None:
        s = self.support
        block = max(1, self.BLOCK_ENTRIES // s.size)
        for first in range(0, r.size, block):
            part = slice(first, first + block)
            rb, rpb = r[part, None], rp[part, None]
            coefficients = self.g[rb] * self.alpha ** np.abs(s - rb) * (self.table[s, rpb] - self.table[s, rb])
            which, where = np.nonzero(np.abs(coefficients) > DENSE_DROP)
            cols.put(index[part][which], self.loss[where], coefficients[which, where])


#: Absolute loss uses :class:`_CumulativeAbsoluteForm` from this noise scale 1 / (1 - alpha) on.
CUMULATIVE_FROM_SCALE = 500.0


def form_for(problem: CountQuery) -> Form:
    """The master form of ``problem``'s loss (see the module docstring)."""
    if problem.loss_name == "absolute" and noise_scale(problem.alpha) >= CUMULATIVE_FROM_SCALE:
        return _CumulativeAbsoluteForm(problem)
    forms = {"absolute": _AbsoluteForm, "squared": _SquaredForm, "zero_one": _ZeroOneForm}
    return forms.get(problem.loss_name, _DenseForm)(problem)
