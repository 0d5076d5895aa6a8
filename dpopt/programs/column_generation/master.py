"""The restricted master in HiGHS (simplex, IPM + crossover) or Clarabel (interior point, no basis).

Accuracy
--------
HiGHS's primal values and duals are only as good as its tolerances on the *scaled*
master (rows missed by up to 4e-7, bounds left ~1e-10 short). The returned T is
therefore recomputed from HiGHS's optimal basis with SuperLU (``B x_B = b``), and,
when the bounds are close (and always after the first master, which is often the
last), so are the duals (``B^T y = c_B``); see :meth:`Master.basic_solution`.
HiGHS's dual tolerance is absolute, so an optimum below 1 is scaled up to about 1.

Start
-----
The first master starts from the basis of T = I (feasible: the geometric mechanism)
with d tight at the middle of the rows tied for the worst loss. The master is very
degenerate, and HiGHS's pivot count depends on this start and on the initial band
more than on n: measured per form, not derived (see :func:`_tight_row`,
:meth:`Form.initial_band`).

Interior-point masters (no crossover)
-------------------------------------
Where the first master is likely to hold the optimal support already (a coarse start at
n (1 - alpha) >= 5, or the band at n (1 - alpha) >= 400, where the ends barely move the
optimum), it is solved by Clarabel's interior point instead of
HiGHS's (:meth:`Master.solve_interior`). HiGHS's IPX spends most of its time in iterative
linear algebra and crossover on these chains; Clarabel factorises the banded KKT system
directly and needs no basis, because the certificate never did: the upper bound is the
exact loss of the clipped remap, the lower bound prices the duals exactly. Measured
(one process, 2 cores): absolute alpha = 0.9, n = 10,000 30 -> 4.7 s; alpha = 0.8, n =
5000: absolute 7.6 -> 1.1 s, squared 22 -> 2.3 s; alpha = 0.99, n = 10,000: absolute 44
-> 7.7 s, squared 59 -> 26 s. Its limit is accuracy, about 1e-8 relative on the duals
of the squared master at n = 10,000, alpha = 0.9 (bound gap stuck at 3e-8 for 10 rounds,
where it needs 1e-9): after INTERIOR_ROUNDS interior masters (after one where a basis can
be predicted), HiGHS takes over, from a predicted basis where one applies (:func:`~dpopt.programs.column_generation.starts.extended_basis`: 152 -> 15 s there) and
otherwise from scratch (176 s there either way), with IPX working on the master's dual
(``ipx_dualize_strategy = 1``; in one process 144 and 147 s against 182 s, through the
benchmark 152 against 199 s; only this fallback is dualized: on the first masters at
alpha = 0.9, n = 2000 and 5000, it changed nothing beyond noise). Loosening the
fallback's feasibility tolerances to 1e-7 (1e-10 again for the warm rounds) broke a
later master: the run ended 1.7e-4 above its bound. Without a basis each further master
is solved cold, so it loses where many rounds follow (absolute, alpha = 0.9, n = 5000:
12 -> 15 s; alpha = 0.999, n = 2000: 14 -> 45 s), hence the thresholds. HiGHS's ``crossover`` from
Clarabel's point (highspy 1.16) ended in a segmentation fault; projecting Clarabel's duals
onto the complementary equations (least squares) was slower and worse.

Folded masters
--------------
Where S and the loss are symmetric under r <-> n - r, the mirror of an optimal T is
optimal and so is their average, so the master may be restricted to mirror-symmetric
remaps: one HiGHS column per mirrored pair of remaps (the sum of their columns), with the
convexity rows r > n/2 and the loss rows i > n/2 left out (they repeat their mirrors';
the chain rows stay, as the chains are free and fixed by T). Its optimum is the unfolded
master's as long as the columns are closed under the mirror, which
:meth:`Master.add_remap_columns` keeps them; each loss-row dual is split evenly between i
and n - i. The certificate is untouched: the upper bound is the exact loss of the returned
T, the lower bound prices the split duals exactly. The whole column generation then runs on
a master of about half the rows and columns: HiGHS's interior point + crossover, its warm
primal simplex, the exact basis solution and Clarabel alike (``folded=True``, chosen by
:func:`~dpopt.programs.column_generation.solve.solve_by_column_generation` unless a basis
can be predicted by :func:`~dpopt.programs.column_generation.starts.extended_basis`, whose
prediction is not mirror-symmetric: folded there, S = all at alpha = 0.9, n = 10,000,
squared, went from 13.6 to 104 s, and alpha = 0.5, n = 5000, squared, from 1.0 to 13.9 s).
Measured (2026-11-26, session 14, one process per run, unfolded then folded in the same
hour): S = 10%..40% and 60%..90% of n, absolute loss, alpha = 0.99: n = 1000 0.60 -> 0.25 s,
n = 5000 11.1 -> 4.3-4.8 s, n = 10,000 46.7 -> 13.3 s; squared there n = 10,000
26.0 -> 8.4 s (n = 5000 about even, 7.6-9.7 s); S = 0..n/10 and 9n/10..n at alpha = 0.99,
n = 5000 absolute 7.0 -> 2.8 s, squared 2.8 -> 1.0 s; the even counts at alpha = 0.999,
n = 2000 absolute 2.0 -> 1.2 s; S = all at alpha = 0.999, n = 2000 absolute 2.3 -> 1.2 s,
squared 1.8 -> 0.7 s. Same rounds and optimum throughout; no cell measured slower beyond
this machine's noise (the even counts at alpha = 0.9, n = 10,000, absolute: 10.3-12.6 s
unfolded, 11.2-12.2 s folded).
"""

from __future__ import annotations

from dataclasses import dataclass

import clarabel
import highspy
import numpy as np
from scipy import sparse

from dpopt.programs.basis import basic_solution
from dpopt.programs.column_generation.forms import INF, Columns, Form
from dpopt.solvers import SOLVER_OPTIONS, new_highs, run_interruptibly
from dpopt.validation import SolverError

HIGHS_OPTIONS = {
    **SOLVER_OPTIONS["HIGHS"],  # the tolerances every dpopt LP uses
    "simplex_primal_edge_weight_strategy": 1,  # devex; measured the same pivots as the default
    # devex for the dual simplex too: when a warm primal re-solve ends in a dual clean-up,
    # exact steepest-edge weights cost one BTRAN per row (squared, alpha = 0.9: n = 2000
    # 15 -> 9 s).
    "simplex_dual_edge_weight_strategy": 1,
}


#: Clarabel settings for :meth:`Master.solve_interior` (its defaults stop at 1e-8).
#: ``max_iter``: Clarabel's default of 200 iterations ends the largest masters "almost
#: solved" on short steps while they still converge (squared loss, S = all, alpha = 0.99:
#: n = 10,000 125 iterations, 14,000 178, 17,000 279, 20,000 367). At 200 the first master
#: of n = 20,000 stopped 2.2e-8 above the optimum and HiGHS re-solved it cold: 83-91 s in
#: all; with 600, 31.7 s (17,000: 62.8 -> 21.7 s), one round each (2026-11-28, one
#: process). No master of the benchmark's cells up to n = 10,000 (alpha 0.9-0.999, both
#: losses, six shapes of S) needs more than 133, so nothing changes there. At n = 30,000
#: Clarabel stops on its own after 174 iterations (short steps), and HiGHS's cold re-solve
#: runs more than 13 minutes either way.
CLARABEL_OPTIONS = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "tol_ktratio": 1e-10, "max_iter": 600}
#: Interior remap values at or below this are set to 0 (an interior point leaves every
#: column slightly positive); the certificate is computed on what is kept.
INTERIOR_DROP = 1e-13

#: The most the master's objective is scaled up (see :class:`Master`). Without a cap, at
#: epsilon >= 33 the identity's losses (about alpha) made the scale ~1e14, and HiGHS ended
#: every master "Unknown".
MAX_OBJECTIVE_SCALE = 1e6


@dataclass(frozen=True)
class ExtendedBasis:
    """A predicted optimal basis of the master at n: basic remap entries and slack loss rows."""

    rows: np.ndarray
    targets: np.ndarray
    slack_rows: np.ndarray


class Master:
    def __init__(self, form: Form, *, folded: bool = False) -> None:
        self.form = form
        #: whether HiGHS holds the master folded onto mirror-symmetric remaps (:meth:`_fold_rows`)
        self.folded = folded and form.mirror_symmetric()
        self.h = new_highs({**HIGHS_OPTIONS, **form.highs_options})
        self.scale_strategy = int(self.h.getOptionValue("simplex_scale_strategy")[1])
        self.dualize_strategy = int(self.h.getOptionValue("ipx_dualize_strategy")[1])
        kept = self._fold_rows() if self.folded else np.ones(len(form.row_lower), dtype=bool)
        #: the master row of each of the form's rows (-1: left out by the fold)
        self.row_of = np.where(kept, np.cumsum(kept) - 1, -1)
        #: the master rows of the loss rows of S that are kept, in the order of S
        self.loss_rows = self.row_of[form.loss][self.row_of[form.loss] >= 0]
        lower, upper = np.array(form.row_lower)[kept], np.array(form.row_upper)[kept]
        empty = np.zeros(lower.size, dtype=np.int32)
        self.h.addRows(lower.size, lower, upper, 0, empty, np.zeros(0, np.int32), np.zeros(0))
        self.row_lower, self.row_upper = lower, upper
        # a non-basic row sits at its finite bound (loss rows: upper; the rest: equalities)
        self.row_bound = np.where(np.isfinite(lower), lower, upper)
        self._blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray, float]] = []  # the master's columns
        self._matrix: sparse.csc_array | None = None
        self._costs = np.zeros(0)
        aux = form.auxiliary()
        self._add(aux, lower=-INF, upper=INF, cost=0.0)
        self.auxiliary_count = self.h.getNumCol()
        d = Columns(1)
        d.put(0, form.loss, -1.0)
        # HiGHS's dual tolerance is absolute: an optimum well below 1 is scaled up to about
        # 1, or the tolerance is too loose for the 1e-9 relative gap (a smooth table with
        # optimum 0.22 stopped 1.007e-9 short with no column pricing out). Never scaled
        # down: that loosens it (squared loss, alpha = 0.9, n = 5000, optimum 180: 32 ->
        # 100 s and a 1.04e-9 gap).
        worst = float(np.max(np.abs(form.identity_losses[form.support])))
        self.objective_scale = min(1.0 / worst, MAX_OBJECTIVE_SCALE) if 0 < worst < 1 else 1.0
        self._add(d, lower=-INF, upper=INF, cost=self.objective_scale)
        self.first_t = self.h.getNumCol()
        self.t_rows = np.zeros(0, dtype=np.int64)  # T[t_rows[k], t_cols[k]] is remap k
        self.t_cols = np.zeros(0, dtype=np.int64)
        #: remap k is master column first_t + column_of[k] (folded: mirrored remaps share one)
        self.column_of = np.zeros(0, dtype=np.int64)
        self.known = np.zeros(0, dtype=np.int64)  # sorted keys r (n+1) + r' of master columns
        self.has_basis = False  # whether HiGHS holds an optimal basis of the last master solved

    def _fold_rows(self) -> np.ndarray:
        """Which of the form's rows a master folded onto mirror-symmetric remaps keeps.

        With S and the loss symmetric under r <-> n - r, the mirror of an optimal T is
        optimal, and so is their average; restricted to remaps with ``T[r, r'] =
        T[n - r, n - r']`` (one column for each mirrored pair) the convexity rows r > n/2
        and the loss rows i > n/2 repeat their mirrors' and are dropped. The chain rows stay
        (the chains are free and fixed by T). The master's optimum is the same once its
        columns are closed under the mirror, which :meth:`add_remap_columns` keeps them.
        """
        form, n = self.form, self.form.n
        kept = np.ones(len(form.row_lower), dtype=bool)
        kept[form.conv[2 * np.arange(n + 1) > n]] = False
        kept[form.loss_at[form.support[2 * form.support > n]]] = False
        return kept

    def _split_duals(self, duals: np.ndarray) -> np.ndarray:
        """Loss-row duals of a folded master (rows i <= n/2 of S) as duals of every row of S:
        a kept row stands for itself and its mirror, so its dual is split evenly between them."""
        n, support = self.form.n, self.form.support
        half = support[2 * support <= n]
        by_count = np.zeros(n + 1)
        by_count[half] = duals / np.where(2 * half == n, 1.0, 2.0)
        by_count[n - half] = by_count[half]
        return by_count[support]

    def _add(self, cols: Columns, *, lower: float, upper: float, cost: float, fold: sparse.csc_array | None = None) -> None:
        """Add ``cols`` (on the form's rows), or their sums ``cols @ fold``, as master columns."""
        starts, rows, values = cols.arrays()
        count = starts.size
        if self.folded:
            shape = (self.row_of.size, count)
            batch = sparse.csc_array((values, rows, np.append(starts, rows.size)), shape=shape)
            if fold is not None:
                batch = batch @ fold
            batch = batch[self.row_of >= 0].tocsc()
            batch.eliminate_zeros()
            batch.sort_indices()
            count = batch.shape[1]
            starts, rows, values = batch.indptr[:-1].astype(np.int32), batch.indices.astype(np.int32), batch.data
        if count:
            self.h.addCols(count, np.full(count, cost), np.full(count, lower), np.full(count, upper), rows.size, starts, rows, values)
            self._blocks.append((np.diff(np.append(starts, rows.size)), rows, values, cost))
            self._matrix = None

    def matrix(self) -> tuple[sparse.csc_array, np.ndarray]:
        """The master's constraint matrix and column costs, as passed to HiGHS (a copy
        kept here: ``Highs.getLp`` converts through Python lists, 0.5 ms at n = 200)."""
        if self._matrix is None:
            counts, rows, values, costs = zip(*self._blocks)
            indptr = np.concatenate([[0], np.cumsum(np.concatenate(counts))])
            shape = (self.row_bound.size, indptr.size - 1)
            self._matrix = sparse.csc_array((np.concatenate(values), np.concatenate(rows), indptr), shape=shape)
            self._costs = np.concatenate([np.full(c.size, cost) for c, cost in zip(counts, costs)])
        return self._matrix, self._costs

    def add_remap_columns(self, rows: np.ndarray, targets: np.ndarray) -> int:
        """Add the columns of ``T[rows[k], targets[k]]`` not already in the master (folded: with
        their mirrors, one column a mirrored pair); returns how many remaps were added."""
        size = self.form.n + 1
        keys = np.asarray(rows, dtype=np.int64) * size + np.asarray(targets, dtype=np.int64)
        if self.folded:
            keys = np.append(keys, size * size - 1 - keys)  # (n - r, n - r') has key size^2 - 1 - key
        # sorted by (r, r'): HiGHS's pivot path depends on the column order; against the
        # pricing order this measured faster for squared loss (n = 1000, alpha = 0.9: 1.5
        # against 1.9 s) and slower for a random table (9.7 against 8.7 s of HiGHS time)
        keys = np.unique(keys)
        keys = keys[~np.isin(keys, self.known, assume_unique=True)]
        if not keys.size:
            return 0
        self.known = np.union1d(self.known, keys)
        r, rp = np.divmod(keys, size)
        first_column = self.h.getNumCol() - self.first_t
        if self.folded:
            pair_keys, column = np.unique(np.minimum(keys, size * size - 1 - keys), return_inverse=True)
            fold = sparse.csc_array((np.ones(keys.size), (np.arange(keys.size), column)), shape=(keys.size, pair_keys.size))
            self._add(self.form.columns(r, rp), lower=0.0, upper=INF, cost=0.0, fold=fold)
        else:
            column = np.arange(keys.size)
            self._add(self.form.columns(r, rp), lower=0.0, upper=INF, cost=0.0)
        self.t_rows = np.concatenate([self.t_rows, r])
        self.t_cols = np.concatenate([self.t_cols, rp])
        self.column_of = np.concatenate([self.column_of, first_column + column])
        return int(keys.size)

    def _remap_values(self, column_values: np.ndarray) -> np.ndarray:
        """The value of every remap from the values of the master's remap columns."""
        return column_values[self.column_of] if self.folded else column_values

    def _loss_duals(self, row_duals: np.ndarray) -> np.ndarray:
        """The duals of the loss rows of S (HiGHS's signs) from the master's row duals."""
        duals = row_duals[self.loss_rows]
        return self._split_duals(duals) if self.folded else duals

    def _configure(self, strategy: str) -> None:
        # "unscaled ipm": after an optimal IPM + crossover on the presolved master, HiGHS's
        # clean-up of the original LP can fail with "excessive dual values" (squared loss,
        # n = 10,000, alpha = 0.99, from the coarse start); unscaled, its clean-up succeeds
        self.h.setOptionValue("simplex_scale_strategy", 0 if strategy == "unscaled ipm" else self.scale_strategy)
        # "dualized ipm": IPX on the master's dual, for the fallback after interior masters
        self.h.setOptionValue("ipx_dualize_strategy", 1 if strategy == "dualized ipm" else self.dualize_strategy)
        if strategy in ("ipm", "unscaled ipm", "dualized ipm"):
            self.h.setOptionValue("solver", "ipm")
            self.h.setOptionValue("run_crossover", "on")
        else:
            self.h.setOptionValue("solver", "simplex")
            self.h.setOptionValue("simplex_strategy", 4 if strategy == "primal" else 1)

    def start_from_identity(self) -> None:
        """Install the basis of T = I (the geometric mechanism itself), which is feasible.

        Basic: every chain variable, every diagonal T[r, r], d, and the slack of every
        loss row but the worst one (where d is tight). The chains are triangular, so
        this basis is non-singular; primal simplex then only walks to the optimum.

        Far from the ends every row of the geometric mechanism has the same loss, so
        the worst row is a tie among many (see :func:`_tight_row`).
        """
        form = self.form
        basic, lower, upper = highspy.HighsBasisStatus.kBasic, highspy.HighsBasisStatus.kLower, highspy.HighsBasisStatus.kUpper
        cols = [basic] * (self.auxiliary_count + 1)  # chains, then d
        diagonal = np.zeros(self.h.getNumCol() - self.first_t, dtype=bool)
        diagonal[self.column_of[self.t_rows == self.t_cols]] = True  # a diagonal pair's mirror is diagonal too
        cols += [basic if on_diagonal else lower for on_diagonal in diagonal.tolist()]
        rows = [lower] * self.row_bound.size
        worst = _tight_row(form.support, form.identity_losses[form.support], middle=form.MIDDLE_START)
        if self.folded and 2 * worst > form.n:
            worst = form.n - worst  # its mirror's row stands for it
        for i in form.support:
            row = int(self.row_of[form.loss_at[i]])
            if row >= 0:
                rows[row] = upper if i == worst else basic
        basis = highspy.HighsBasis()
        basis.col_status = cols
        basis.row_status = rows
        self.h.setBasis(basis)

    def install_basis(self, basis: "ExtendedBasis", width: int = 1) -> bool:
        """Add the columns of ``basis`` (and ``width`` neighbours on each side of each) and
        make it HiGHS's basis with every chain variable and d; False (nothing installed)
        if it does not have one basic variable per row, or if the master is folded (the
        prediction is not made mirror-symmetric)."""
        n, form = self.form.n, self.form
        if self.folded:
            return False
        offsets = np.arange(-width, width + 1)
        rows = np.repeat(basis.rows, offsets.size)
        targets = np.repeat(basis.targets, offsets.size) + np.tile(offsets, basis.rows.size)
        inside = (targets >= 0) & (targets <= n)
        self.add_remap_columns(np.concatenate([rows[inside], basis.rows]), np.concatenate([targets[inside], basis.targets]))
        keys = self.t_rows * (n + 1) + self.t_cols
        order = np.argsort(keys)
        basic_columns = self.first_t + order[np.searchsorted(keys[order], basis.rows * (n + 1) + basis.targets)]
        if self.auxiliary_count + 1 + basic_columns.size + basis.slack_rows.size != len(form.row_lower):
            return False
        cols = np.full(self.h.getNumCol(), highspy.HighsBasisStatus.kLower)
        cols[: self.auxiliary_count + 1] = highspy.HighsBasisStatus.kBasic
        cols[basic_columns] = highspy.HighsBasisStatus.kBasic
        row_status = np.full(len(form.row_lower), highspy.HighsBasisStatus.kLower)
        row_status[form.loss] = highspy.HighsBasisStatus.kUpper
        row_status[form.loss_at[basis.slack_rows]] = highspy.HighsBasisStatus.kBasic
        installed = highspy.HighsBasis()
        installed.col_status = cols.tolist()
        installed.row_status = row_status.tolist()
        return self.h.setBasis(installed) == highspy.HighsStatus.kOk

    def solve_interior(self, *, mirror: bool = True) -> tuple[float, np.ndarray, np.ndarray]:
        """Solve the restricted master with Clarabel's interior point: no basis, no crossover.

        The optimum is accurate to about 1e-10 relative, but often only "almost solved"
        (Clarabel's reduced tolerances: 1.1e-8 below the master's optimum, seen at n = 39,
        alpha = 0.3, squared), which is enough: the caller takes the exact loss of the
        clipped remap as the upper bound and prices the duals exactly for the lower bound.
        Returns the objective, the remap values and the loss-row duals (HiGHS's signs).

        With ``mirror``, where S and the loss are symmetric under r <-> n - r, the master is
        solved on mirror-symmetric remaps only (:meth:`_mirror_fold`): the mirror of any
        optimal T is optimal, so is their average, and the restricted master's optimum is
        the same once its columns are closed under the mirror (they are, here). Each pair of
        mirrored columns becomes one, and the convexity rows r > n/2 and loss rows i > n/2
        (copies of their mirrors') are dropped; the chain rows stay. The duals of a kept
        loss row are split evenly between i and n - i. Clarabel then solves a master about
        half the size (alpha = 0.99, S = all, one interior master, in one process,
        2026-11-26: squared n = 1000 0.92 -> 0.61-0.82 s, n = 5000 7.7-8.6 -> 5.6-6.2 s;
        absolute n = 5000 3.9 -> 2.4-2.5 s; squared at alpha = 0.999, n = 5000, 18.5 ->
        9.3 s, two rounds instead of three). The certificate is unchanged: the upper bound is
        the exact loss of the returned T, and any multipliers give a valid lower bound.

        Raises
        ------
        SolverError
            If Clarabel reports neither solved nor almost solved.
        """
        # a folded master is already on mirror-symmetric remaps
        fold = self._mirror_fold() if mirror and not self.folded else None
        matrix, costs = self.matrix()
        lower, upper = self.row_lower, self.row_upper
        equal = np.isfinite(lower)  # convexity and chain rows; the loss rows are <= rows
        if fold is not None:
            kept = self._fold_rows()
            matrix = sparse.hstack([matrix[:, : self.first_t], matrix[:, self.first_t :] @ fold], format="csc")[kept]
            costs = np.concatenate([costs[: self.first_t], costs[self.first_t :] @ fold])
            lower, upper, equal = lower[kept], upper[kept], equal[kept]
        remap_count = matrix.shape[1] - self.first_t
        constraints = sparse.vstack([matrix[equal], matrix[~equal], -sparse.eye_array(matrix.shape[1], format="csc")[self.first_t :]])
        rhs = np.concatenate([lower[equal], upper[~equal], np.zeros(remap_count)])
        cones = [clarabel.ZeroConeT(int(equal.sum())), clarabel.NonnegativeConeT(int((~equal).sum()) + remap_count)]
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        for name, value in CLARABEL_OPTIONS.items():
            setattr(settings, name, value)
        size = matrix.shape[1]
        solution = clarabel.DefaultSolver(sparse.csc_matrix((size, size)), costs, sparse.csc_matrix(constraints), rhs, cones, settings).solve()
        if solution.status not in (clarabel.SolverStatus.Solved, clarabel.SolverStatus.AlmostSolved):
            raise SolverError("CLARABEL", str(solution.status), "(column generation master)")
        self.has_basis = False
        x, z = np.asarray(solution.x), np.asarray(solution.z)
        equalities = int(equal.sum())
        duals = -z[equalities : equalities + int((~equal).sum())]
        values = self._remap_values(x[self.first_t :])
        if fold is not None:
            values = fold @ values
        if fold is not None or self.folded:
            duals = self._split_duals(duals)
        values = np.where(values > INTERIOR_DROP, values, 0.0)
        return float(solution.obj_val) / self.objective_scale, values, duals

    def _mirror_fold(self) -> sparse.csc_array | None:
        """The map from mirror-symmetric remaps to the master's T columns, or None where S or the loss is not symmetric.

        First closes the columns under the mirror (r, r') -> (n - r, n - r'). Column j of the
        returned (T columns x pairs) 0/1 matrix has a 1 at each column of pair j: two for a
        mirrored pair, one for a column that is its own mirror.
        """
        n = self.form.n
        if not self.form.mirror_symmetric():
            return None
        self.add_remap_columns(n - self.t_rows, n - self.t_cols)
        keys = self.t_rows * (n + 1) + self.t_cols
        mirrored = (n - self.t_rows) * (n + 1) + (n - self.t_cols)
        order = np.argsort(keys)
        partner = order[np.searchsorted(keys[order], mirrored)]  # present: the columns were just closed
        first = np.flatnonzero(np.arange(keys.size) <= partner)
        pair = np.arange(first.size)
        double = partner[first] != first
        rows = np.concatenate([first, partner[first][double]])
        cols = np.concatenate([pair, pair[double]])
        return sparse.csc_array((np.ones(rows.size), (rows, cols)), shape=(keys.size, first.size))

    def solve(self, strategy: str = "primal", *, checked: bool = False) -> tuple[float, np.ndarray, np.ndarray]:
        """Solve the restricted master.

        ``strategy``: ``"primal"`` (primal simplex: added columns keep the basis
        primal feasible, so a re-solve costs a few pivots; HiGHS's dual simplex
        re-solve costs ~0.5 s at n = 1000 however few pivots it needs), ``"dual"``
        (``"refactored dual"``: from the current basis factorised afresh) or ``"ipm"`` (interior point + crossover, from scratch; ``"dualized ipm"``: on
        the master's dual), or ``"interior"``
        (Clarabel, :meth:`solve_interior`). On failure the others are tried from scratch,
        except after HiGHS reports an error (not a stall): then primal simplex from T = I
        once, unless that is what failed, and else Clarabel's interior point (:attr:`has_basis`
        is then False); never the dual simplex. ``checked``: the caller verifies the basis
        exactly before trusting it (a master solved from a predicted basis), so a simplex
        run that HiGHS marks "Unknown" only for its objective check is accepted
        (:meth:`_simplex_optimal`).
        """
        if strategy == "interior":
            try:
                return self.solve_interior()
            except SolverError:
                strategy = "ipm"  # not seen; HiGHS from scratch
        if strategy == "refactored dual":
            # the same basis, factorised afresh: HiGHS's updated factors had drifted
            basis = self.h.getBasis()
            self.h.clearSolver()
            self.h.setBasis(basis)
            strategy = "dual"
        attempts = [(strategy, True)] + [(other, False) for other in ("ipm", "unscaled ipm", "dual") if other != strategy]
        if strategy == "primal":
            # Primal simplex occasionally stalls on this degenerate LP (tens of thousands
            # of pivots after adding a few hundred columns): it is stopped and the interior
            # point goes on from scratch. The dual simplex warm from where primal stopped
            # finished in fewer pivots, but in highspy 1.16.0 it ended the process with a
            # segmentation fault (absolute loss, alpha = 0.1, n = 3000, and alpha = 0.5,
            # n = 50,000), even from the same basis factorised afresh.
            self.h.setOptionValue("simplex_iteration_limit", self._stall_limit)
        for attempt, warm in attempts:
            self._configure(attempt)
            if attempt != "primal":
                self.h.setOptionValue("simplex_iteration_limit", 2**31 - 1)
            if not warm:
                # cold retry: the failed run may have left its factors unusable, and a
                # fresh factorisation of the old basis can be unstable (see basic_solution)
                self.h.clearSolver()
            run_status = run_interruptibly(self.h)
            status = self.h.getModelStatus()
            if status == highspy.HighsModelStatus.kOptimal or (checked and warm and attempt == "dual" and self._simplex_optimal(status)):
                break
            if run_status == highspy.HighsStatus.kError:
                # HiGHS failed on this master outright, not by a limit. Seen with highspy
                # 1.16.0 on a well-formed master (squared loss, alpha = 0.72, n = 20,000,
                # S = every 7th count; no duplicate, zero or non-finite entry): primal
                # simplex from T = I went to NaN in 158 pivots and stopped with an error, its
                # IPM from scratch ended in "Solve error", and its dual simplex from scratch
                # corrupted the heap and aborted the process. So after an error the dual
                # simplex is never tried: primal simplex from T = I once (where that was not
                # what failed: S = a random tenth, squared, alpha = 0.9, n = 5000, IPX failed
                # and primal simplex solved it in 2 s), else Clarabel (6 s on the first).
                if attempt != "primal" and self._primal_from_identity():
                    break
                return self.solve_interior()
        else:
            raise SolverError("HIGHS", self.h.modelStatusToString(status), "(column generation master)")
        self.has_basis = True
        solution = self.h.getSolution()
        values = self._remap_values(np.asarray(solution.col_value)[self.first_t :])
        duals = self._loss_duals(np.asarray(solution.row_dual))
        return float(self.h.getInfo().objective_function_value) / self.objective_scale, values, duals

    @property
    def _stall_limit(self) -> int:
        """Primal simplex pivots after which a master counts as stalled."""
        return 3 * self.form.n + 2000

    def _primal_from_identity(self) -> bool:
        """Primal simplex from the feasible basis of T = I (:meth:`start_from_identity`) on fresh
        factors, within the stall limit; whether it ended optimal (no error and no stall)."""
        self.h.clearSolver()
        self.start_from_identity()
        self._configure("primal")
        self.h.setOptionValue("simplex_iteration_limit", self._stall_limit)
        run_status = run_interruptibly(self.h)
        return run_status != highspy.HighsStatus.kError and self.h.getModelStatus() == highspy.HighsModelStatus.kOptimal

    def _simplex_optimal(self, status: highspy.HighsModelStatus) -> bool:
        """Whether an "Unknown" simplex run ended on a basis with no primal or dual
        infeasibility: HiGHS then withheld "Optimal" only because its primal and dual
        objectives differ (n = 16,000, S = all, squared, alpha = 0.9: the fresh-factor dual
        simplex from the predicted basis, 151 pivots to primal objective 180 with both
        infeasibilities 0, dual objective 180.324). The basis is then re-checked exactly."""
        info = self.h.getInfo()
        return status == highspy.HighsModelStatus.kUnknown and info.num_primal_infeasibilities == 0 == info.num_dual_infeasibilities

    def basic_solution(self, refinement_steps: int = 2) -> tuple[np.ndarray, np.ndarray] | None:
        """Remap values and loss-row duals recomputed from the optimal basis by SuperLU
        (:func:`dpopt.programs.basis.basic_solution`), or None if the basis is singular.

        HiGHS's own values can miss rows by far more than its tolerances: ~1e-6 after
        hundreds of basis updates along the recurrence chains, 4e-7 for zero-one loss at
        n = 5000, alpha = 0.9, enough for a 2e-8 bound gap; its duals likewise leave the
        Lagrangian bound ~1e-10 short (absolute loss, n = 200, alpha = 0.1).
        """
        if not self.has_basis:  # the last master was solved by Clarabel
            return None
        matrix, costs = self.matrix()
        # non-basic columns sit at 0: T at its lower bound, free chains and d at zero
        exact = basic_solution(self.h, matrix, costs, self.row_bound, refinement_steps)
        if exact is None:
            return None
        x, y = exact
        return self._remap_values(x[self.first_t :]), self._loss_duals(y)

    def structure(self) -> sparse.csr_array:
        """Where T has master columns, as a CSR pattern (built from the sorted keys)."""
        size = self.form.n + 1
        rows, targets = np.divmod(self.known, size)
        indptr = np.searchsorted(rows, np.arange(size + 1))
        return sparse.csr_array((np.ones(self.known.size), targets, indptr), shape=(size, size))

    def remap(self, values: np.ndarray) -> sparse.csr_array:
        n = self.form.n
        return sparse.csr_array((values, (self.t_rows, self.t_cols)), shape=(n + 1, n + 1))


#: Rows whose identity loss is within this (relative) of the worst count as tied with it:
#: far below HiGHS's feasibility tolerance, so the start stays feasible.
TIE = 1e-13


def _tight_row(support: np.ndarray, losses: np.ndarray, *, middle: bool = True) -> int:
    """The middle (or first) one of the rows of ``support`` tied for the largest loss.

    The optimal multipliers concentrate in the middle of the tied rows, and primal
    simplex from there needs far fewer degenerate pivots than from the first of them
    (absolute loss, S = all: n = 200, alpha = 0.1: 97 -> 33 pivots; n = 1000,
    alpha = 0.5: 720 -> 204).
    """
    top = float(losses.max())
    tied = support[losses >= top - TIE * max(1.0, abs(top))]
    return int(tied[tied.size // 2] if middle else tied[0])


def normalised_multipliers(duals: np.ndarray, size: int) -> np.ndarray:
    lam = np.clip(-duals, 0.0, None)
    total = lam.sum()
    return lam / total if total > 0 else np.full(size, 1.0 / size)
