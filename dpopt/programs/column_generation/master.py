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
"""

from __future__ import annotations

from dataclasses import dataclass

import clarabel
import highspy
import numpy as np
from scipy import sparse

from dpopt.programs.basis import basic_solution
from dpopt.programs.column_generation.forms import INF, Columns, Form
from dpopt.solvers import SOLVER_OPTIONS, new_highs
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
CLARABEL_OPTIONS = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "tol_ktratio": 1e-10}
#: Interior remap values at or below this are set to 0 (an interior point leaves every
#: column slightly positive); the certificate is computed on what is kept.
INTERIOR_DROP = 1e-13


@dataclass(frozen=True)
class ExtendedBasis:
    """A predicted optimal basis of the master at n: basic remap entries and slack loss rows."""

    rows: np.ndarray
    targets: np.ndarray
    slack_rows: np.ndarray


class Master:
    def __init__(self, form: Form) -> None:
        self.form = form
        self.h = new_highs({**HIGHS_OPTIONS, **form.highs_options})
        self.scale_strategy = int(self.h.getOptionValue("simplex_scale_strategy")[1])
        self.dualize_strategy = int(self.h.getOptionValue("ipx_dualize_strategy")[1])
        lower, upper = np.array(form.row_lower), np.array(form.row_upper)
        empty = np.zeros(lower.size, dtype=np.int32)
        self.h.addRows(lower.size, lower, upper, 0, empty, np.zeros(0, np.int32), np.zeros(0))
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
        self.objective_scale = 1.0 / worst if 0 < worst < 1 else 1.0
        self._add(d, lower=-INF, upper=INF, cost=self.objective_scale)
        self.first_t = self.h.getNumCol()
        self.t_rows = np.zeros(0, dtype=np.int64)  # T[t_rows[k], t_cols[k]] is master column first_t + k
        self.t_cols = np.zeros(0, dtype=np.int64)
        self.known = np.zeros(0, dtype=np.int64)  # sorted keys r (n+1) + r' of master columns
        self.has_basis = False  # whether HiGHS holds an optimal basis of the last master solved

    def _add(self, cols: Columns, *, lower: float, upper: float, cost: float) -> None:
        starts, rows, values = cols.arrays()
        count = starts.size
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
        """Add the columns of ``T[rows[k], targets[k]]`` not already in the master; returns how many."""
        keys = np.asarray(rows, dtype=np.int64) * (self.form.n + 1) + np.asarray(targets, dtype=np.int64)
        # sorted by (r, r'): HiGHS's pivot path depends on the column order; against the
        # pricing order this measured faster for squared loss (n = 1000, alpha = 0.9: 1.5
        # against 1.9 s) and slower for a random table (9.7 against 8.7 s of HiGHS time)
        keys = np.unique(keys)
        keys = keys[~np.isin(keys, self.known, assume_unique=True)]
        if not keys.size:
            return 0
        self.known = np.union1d(self.known, keys)
        r, rp = np.divmod(keys, self.form.n + 1)
        self._add(self.form.columns(r, rp), lower=0.0, upper=INF, cost=0.0)
        self.t_rows = np.concatenate([self.t_rows, r])
        self.t_cols = np.concatenate([self.t_cols, rp])
        return int(keys.size)

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
        cols += [basic if on_diagonal else lower for on_diagonal in (self.t_rows == self.t_cols).tolist()]
        rows = [lower] * len(form.row_lower)
        worst = _tight_row(form.support, form.identity_losses[form.support], middle=form.MIDDLE_START)
        for i in form.support:
            rows[int(form.loss_at[i])] = upper if i == worst else basic
        basis = highspy.HighsBasis()
        basis.col_status = cols
        basis.row_status = rows
        self.h.setBasis(basis)

    def install_basis(self, basis: "ExtendedBasis", width: int = 1) -> bool:
        """Add the columns of ``basis`` (and ``width`` neighbours on each side of each) and
        make it HiGHS's basis with every chain variable and d; False (nothing installed)
        if it does not have one basic variable per row."""
        n, form = self.form.n, self.form
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

        The optimum is accurate to about 1e-10 relative (often "almost solved": Clarabel's
        reduced tolerances), which is enough: the caller takes the exact loss of the
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
        fold = self._mirror_fold() if mirror else None
        matrix, costs = self.matrix()
        lower, upper = np.array(self.form.row_lower), np.array(self.form.row_upper)
        equal = np.isfinite(lower)  # convexity and chain rows; the loss rows are <= rows
        kept = np.ones(lower.size, dtype=bool)
        if fold is not None:
            n, support = self.form.n, self.form.support
            counts = np.arange(n + 1)
            kept[self.form.conv[2 * counts > n]] = False
            kept[self.form.loss_at[support[2 * support > n]]] = False
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
        values = x[self.first_t :]
        if fold is not None:
            values = fold @ values
            half = support[2 * support <= n]
            by_count = np.zeros(n + 1)
            by_count[half] = duals / np.where(2 * half == n, 1.0, 2.0)
            by_count[n - half] = by_count[half]
            duals = by_count[support]
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
        (Clarabel, :meth:`solve_interior`). On failure the others are tried from scratch.
        ``checked``: the caller verifies the basis exactly before trusting it (a master
        solved from a predicted basis), so a simplex run that HiGHS marks "Unknown" only
        for its objective check is accepted (:meth:`_simplex_optimal`).
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
            # of pivots after adding a few hundred columns); the dual simplex, warm from
            # where it stopped, then finishes in far fewer.
            self.h.setOptionValue("simplex_iteration_limit", 3 * self.form.n + 2000)
            attempts.insert(1, ("dual", True))
        for attempt, warm in attempts:
            self._configure(attempt)
            if attempt != "primal":
                self.h.setOptionValue("simplex_iteration_limit", 2**31 - 1)
            if not warm:
                # cold retry: the failed run may have left its factors unusable, and a
                # fresh factorisation of the old basis can be unstable (see basic_solution)
                self.h.clearSolver()
            self.h.run()
            status = self.h.getModelStatus()
            if status == highspy.HighsModelStatus.kOptimal or (checked and warm and attempt == "dual" and self._simplex_optimal(status)):
                break
        else:
            raise SolverError("HIGHS", self.h.modelStatusToString(status), "(column generation master)")
        self.has_basis = True
        solution = self.h.getSolution()
        values = np.asarray(solution.col_value)[self.first_t :]
        duals = np.asarray(solution.row_dual)[self.form.loss]
        return float(self.h.getInfo().objective_function_value) / self.objective_scale, values, duals

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
        return x[self.first_t :], y[self.form.loss]

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
