"""First masters that hold (nearly) the optimal support: coarse-to-fine, a predicted basis, neighbours in S.

Small epsilon: the coarse-to-fine start (issue 16)
--------------------------------------------------
At alpha >= 0.95 (n >= 400; absolute and squared loss) the first master also holds the
columns a coarser problem predicts (:func:`coarse_start`). Two facts make that work:

* for a loss convex in the output, replacing each row of T by the randomized rounding of
  its mean phi_r (mass on floor(phi_r) and ceil(phi_r)) never raises any input's expected
  loss (Jensen on the piecewise-linear interpolation of l(i, .)), so an optimal T with
  two columns per row exists and predicting phi predicts the support;
* the optimum depends on (n, alpha) mostly through n log(1/alpha): phi at (n, alpha) is
  close to k phi(r / k) at (n / k, alpha^k) (n = 1000, alpha = 0.99 from n = 200: 90% of
  rows within 0.3, except a boundary layer of a row or two at each end, handled apart).

With the optimal support given, the master at n = 1000, alpha = 0.99 (absolute) is one
0.6 s solve against 15 rounds and 7.4 s from the band; the cost of the band start is the
degenerate warm re-solves while every row of T walks from the identity to its place. The
coarse problem is solved the same way (recursively), so alpha = 0.999 goes through 0.99
to about 0.9. Measured (2 cores, one process, certified gaps <= 1e-9): absolute 0.99 n =
1000 7.4 -> 0.85 s, n = 5000 278 -> 13 s, n = 10,000 36 s; squared 0.99 n = 1000 6.8 -> 0.97
s, n = 5000 12.8 s; absolute 0.999 n = 2000 12.6 s; alpha = 0.95, n = 1000: 2.0 -> 0.7 s.
Squared loss predicts less well (its optimal phi is not unique where loss rows are slack:
the support sits up to 7 columns off the prediction at n = 2000), so it gets +-3 columns
around the prediction instead of +-1: with +-1 it needed 3-4 rounds, and at n = 10,000 each
warm primal round cost ~20,000 pivots (about 60 s; 209 s in all), with +-3 two rounds, 54 s.
At alpha = 0.9 a coarse start is not used. With k = 2..5 it gave 12.7 -> 7.4-10.6 s at
n = 5000 (absolute, erratic) and 30 -> 20-27 s at n = 10,000, but squared loss at n = 10,000
went from 176 s to 411 s (5 rounds from the prediction against 6 from the band).

Squared loss, alpha = 0.9, n = 10,000: a basis predicted from n0 = 2000 (2026-11-25)
------------------------------------------------------------------------------------
Its optimum is 180 - 2.27e-6 (the geometric mechanism's 180 improved by 1.3e-8 relative):
rows near each end shift their output inward by up to 7, the shift decays into the middle
(mass off the diagonal 0.15 at r = 1000, 9e-3 at 2000, 6e-4 at 3000, ~1e-7 at n/2).
Its one-entry rows of T and slack loss rows come in clusters near each end and one
around n/2. Given HiGHS's final basis (``setBasis``), primal simplex needs 49 pivots
(0.55 s): all of the fallback's ~130 s goes into finding it. What is used: the ends
decouple, so the optimum at n0 = EXTEND_RANGE / (1 - alpha) = 2000 (3.7 s), its halves
moved to the two ends, its middle cluster to n/2 and two-entry rows in between, predicts
the basis (:func:`extended_basis`). That basis is nearly dual optimal (its duals'
Lagrangian bound is 5e-9 below the optimum) and primal infeasible near the ends (32
negative entries: the end clusters drift with n, 295-302 at n0, 311-318 at n), so it is
re-solved by the dual simplex: 847 pivots, 2.6 s, and that master certifies. Through the
benchmark 152 -> 15 s (gap 2e-11; the issue's goal was 20 s). A first version (same
day) left n0's middle cluster at n0/2 and its mirror: its duals had the wrong sign on four loss
rows (Lagrangian bound 6.2 below) and its primal simplex took 10,935 pivots (53 s); the middle cluster moved to n/2,
primal simplex took 273 s (it is primal infeasible), the dual simplex 2.6 s. Before the
prediction, these routes to a vertex were measured and not adopted, each of the fallback
alone or of the whole run (one process, 2 cores):

* Clarabel settings (``faer``; static regularisation 1e-9 to 1e-11; 30-50 refinement
  steps; ``max_step_fraction`` 0.999; no equilibration): AlmostSolved every time, bound gap
  2e-6 to 1e-5 after three masters (it must reach 1.8e-7); 1e-11 ends in NumericalError.
* d shifted by the identity's worst loss and the diagonal of T eliminated (so the master
  works on the 1e-6 improvement): still AlmostSolved, no better bound after three masters.
* LP iterative refinement around Clarabel (Gleixner, Steffy & Wolter 2016): residuals
  reach 1e-11 (primal) and 1e-10 (dual), but complementarity stays near 1e-7 and the
  correction LPs end in NumericalError.
* Bases built from Clarabel's point (the top two entries of each row, or the randomized
  rounding of each row's mean with #single rows - 1 slack loss rows): HiGHS accepts them
  and primal simplex ends in 10,000-15,000 pivots (41-60 s against ~130 s), but the bases
  it ends on are ill-conditioned (the remap recomputed from the last one has worst loss
  180.0000225, a 2.5e-5 gap): uncertified. Choosing more single rows made them singular.
  The minimax optimum's face is large (rows without weight are free to go slack), so the
  interior point's centre is far from every vertex: on rows with one entry at HiGHS's
  vertex, Clarabel's second entry has median 0.2, and rows tight there have slack up to 0.08.
* Exact duals from Clarabel's by the tie equations: at an optimal vertex every row of T
  with two entries a, a + 1 has the lambda-weighted kernel mean
  ``sum_i lambda_i alpha^|i-r| i / sum_i lambda_i alpha^|i-r|`` exactly at a + 1/2, a
  banded linear system in lambda. Clarabel's lambda puts that mean within 1e-4 of a
  half-integer on only 57% of HiGHS's two-entry rows (79% within 1e-2; the dual optimum is
  presumably not unique either), and the system solved on those rows gave a worse bound.
* The fallback master pruned to Clarabel's support: entries above 1e-9 keep almost all
  columns (127 -> 107 s); above 1e-5 it loses the small middle entries (the optimum needs
  entries down to 3e-8) and the run took 14 rounds and > 380 s.
* The symmetry r <-> n - r (S and the loss symmetric): the fallback master with mirrored
  columns summed and the mirrored convexity and loss rows dropped (50,006 rows, 66,945
  columns against 60,006 and 94,860) took 86 s against 119 s for the same master in
  full: 1.4x, not worth a second master form.
* Clarabel's primal point handed to HiGHS (``setSolution``; it builds a basis from it):
  34,732 primal pivots, 93 s, on a master that already held the optimal support.
* HiGHS's ``crossover`` from Clarabel's point still ends in a segmentation fault (highspy
  1.16.0); its direct-factorisation interior point (HiPO) is not built into the wheel.

Periodic S, and the prediction right after the first interior master (2026-11-26,
session 6). The even counts' optimum at n0 = 2000 has S = all's picture with period 2:
clusters of one-entry rows and slack loss rows near each end and around n0/2, and in
between a two-entry row ``{r, r + 1}`` and a one-entry row at ``r + 1`` in turn (left half;
the phase may flip, e.g. at r = 200 and 502, at no cost: the optimal face is large). So
:func:`extended_basis` now takes any S that repeats with a period p <= EXTEND_MAX_PERIOD
(:func:`side_period`) and whose phase the shifts keep (n - n0 and n/2 - n0/2 multiples of
p): n0's S is S's pattern on 0..n0, only slack loss rows mark its middle cluster (every
other row is a one-entry row), and the rows in between copy a period of n0's rows next to
it. For S = all this is the old prediction, bit for bit (checked at n = 800, 801, 1000,
both losses). And the prediction is now tried after the first interior master that
leaves a gap, not after INTERIOR_ROUNDS of them (the interior masters after the first
moved the bound by ~1e-9 and cost 3-4 s each). Measured through the benchmark, the old
code (5c10c85) in the same session, alpha = 0.9: the even counts, squared, n = 5000 18.7
-> 5.9 s, n = 10,000 112.4 -> 11.0 s (certified gap 1.2e-11; one interior master 2.7 s,
n0 = 2000 3.2 s, 966 dual simplex pivots 2.9 s); S = all, squared n = 5000 12.9 -> 11.1 s,
n = 10,000 23.8 -> 19.8 s; absolute n = 5000 7.0 -> 4.2 s, n = 10,000 4.9 -> 5.2 s (one
round: unchanged code path, noise). With one interior master, S = all's dual simplex
(1,191 pivots) stopped "optimal" on a basis whose exact remap was 1.9e-3 over on one loss
row (HiGHS's values 0.15 off SuperLU's: its updated factors had drifted); the same basis
factorised afresh needed 2 more pivots (0.7 s; primal simplex from there: 10,977 pivots,
59 s; from scratch: 80,196). So a master solved from a predicted basis has its exact remap
checked before the run stops, and one that fails is re-solved on fresh factors
(``"refactored dual"`` in :meth:`Master.solve`). At n = 16,000 (S = all, squared) the
early prediction drifted too (1.9e-3 over), the fresh-factor dual simplex ended "Unknown"
after 151 pivots and the cold interior point that followed ran more than 9 minutes, so
beyond EARLY_EXTENSION_MAX_N = 10,000 the prediction waits for INTERIOR_ROUNDS masters as
before, or for an interior master that prices no column out (session 7: there the second
one did, and HiGHS's interior point from scratch took 499 s of the run's 494-521 s). From
the prediction, n = 16,000 now takes 116 s: the predicted dual simplex drifts as above,
its fresh-factor re-solve ends after 151 pivots on a basis with no primal or dual
infeasibility, primal objective 180 and dual objective 180.324, which HiGHS marks
"Unknown"; that basis is kept (:meth:`Master._simplex_optimal`; the caller checks it
exactly: 7.6e-3 over), priced, and one warm primal round (2,955 pivots, 64 s) certifies.
Warm primal simplex straight after the "Unknown" stopped at once with the same status.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from dpopt.problems.count_query import CountQuery
from dpopt.programs.column_generation.forms import noise_scale
from dpopt.programs.column_generation.master import ExtendedBasis

#: The coarse start is used from this alpha on (below it the band start needs few rounds).
COARSE_FROM_ALPHA = 0.95
#: ... and from this n on (smaller problems take well under a second either way).
COARSE_FROM_N = 400
#: The coarse problem has n / k rows with k <= COARSE_MAX_FACTOR, chosen so that alpha^k
#: is about COARSE_TARGET_ALPHA (where the band start is fast) ...
COARSE_MAX_FACTOR = 10
COARSE_TARGET_ALPHA = 0.9
#: ... and at least COARSE_MIN_ROWS rows (the continuum picture needs some resolution).
COARSE_MIN_ROWS = 100
#: Columns floor(phi) - w .. floor(phi) + 1 + w per row, w by loss: squared loss predicts its
#: support less well (see the module docstring); w = 3 there took n = 10,000, alpha = 0.99
#: from 4 rounds and 209 s to 2 rounds and 54 s (n = 1000: 1.24 -> 0.97 s).
PREDICTED_WIDTH = {"absolute": 1, "squared": 3}
#: Absolute loss on long paths: one more column each side per threshold (in noise scales,
#: n (1 - alpha)) the path exceeds. The continuum picture's error grows with the path: at
#: alpha = 0.99 the means of rows 4782-4810 of n = 17,000 sit 3.03 counts up, predicted 2.0,
#: so the first master missed 58 entries and the run took 9 rounds and 45 s (n = 14,000 and
#: 15,500: one round, 2.3 and 2.6 s). Measured with w = 1 / 2 / 3 (one process, session 27):
#: n = 5000 1.1 / 1.3 s, 10,000 1.7 / 2.1 s, 17,000 49 / 3.5 s, 20,000 86 / 4.3 s, 30,000
#: > 300 / 8.0 s, 50,000 13.5 / 20.6 s (w = 2 / 3), 100,000 > 125 / 108 s (w = 2 / 3).
LONG_PATH_SCALES = (120.0, 400.0)
#: Coarse intervals whose step differs from a neighbour's by more than this many coarse
#: counts are jumps (:func:`one_sided_means`; absolute loss, alpha = 0.99, S = the middle
#: 80%: n = 5000 29 -> 3.3 s, one round instead of seven).
JUMP_STEP = 1.0
#: Absolute loss: the first and last END_ROWS rows also get END_EXTRA columns further
#: inward. There the prediction is extrapolated from coarse rows 1 and 2 and falls short
#: by up to 3 (alpha = 0.99, n = 800 and 1200: row 1 predicted 65.1 and 71.3, optimal 67.8
#: and 74.0; row 8 still 1 short), which cost 4-5 rounds: n = 800 1.84 -> 0.40 s, n = 1200
#: 3.6 -> 0.65 s, one round each (n = 1000: 0.48 -> 0.51 s). Squared loss, with +-3
#: columns already, gains nothing from it (n = 1200: 1.51 -> 1.54 s).
END_ROWS = 6
END_EXTRA = 2
END_LOSSES = ("absolute",)
#: Squared loss after a coarse start whose factor k reached its target (alpha^k below
#: COARSE_FROM_ALPHA: k fine counts per coarse count, about a tenth of a noise scale;
#: :func:`widened`). The coarse optimum's rows are mostly one-entry rows, so its means move
#: by whole coarse counts, and the fine means predicted from them are off by up to k counts
#: in two places (alpha = 0.99, S = all): near the path's ends (rows 1-10 of n = 1000 and
#: 36-111 of n = 5000, off by up to 8, mostly outward) and at jumps of the coarse means
#: (n = 2000, rows 530-533, 860-862, ...: between the windows of their three predictions).
#: Those few hundred missing entries cost a second interior master. So rows within
#: END_ZONE_SCALES noise scales of an end (at most END_ZONE_FRACTION of the rows each)
#: also get the columns out to k + 2 counts beyond their predicted mean outward and
#: END_ZONE_INWARD more inward ...
END_ZONE_SCALES = 2.0
END_ZONE_FRACTION = 0.12
END_ZONE_INWARD = 2
#: ... and the EDGE_INTERVALS k rows at each end, where the means are extrapolated from the
#: last two coarse rows (flat where those agree: n = 2500, row 2480 goes to 2433, predicted
#: 2444), get k + 2 columns inward as well.
EDGE_INTERVALS = 3
#: ... the rows of a jump get every column between their predictions' windows, and where
#: the path spans fewer than WIDER_WITHIN_SCALES noise scales, every row gets one more column
#: each side (n = 1000 and 2000 miss entries one beyond the window in the middle too).
#: Measured in one process, two runs each, against the previous start (2026-11-26, session 12):
#: n = 1000 1.13-1.50 -> 0.75-0.95 s, 2000 3.1-3.6 -> 2.6-2.8 s, 3000 6.8-7.9 -> 4.4 s,
#: 4000 9.9-11.2 -> 5.3 s, 5000 12.2-15.6 -> 7.3-8.6 s, 10,000 28.6-34.1 -> 20.0-21.5 s, each
#: one round instead of two (n = 800 and 2500 needed the 12% cap and the edge rows: rows 88
#: and 2480 sat just outside; n = 1500 still takes two rounds, 3.2-3.9 s against 4.0-4.5 s).
#: Where the coarse problem is itself coarsened (alpha = 0.999) the prediction is finer and
#: the wider windows only cost (n = 10,000: 38 -> 51 s), so they are not used there; nor on
#: S without a period (a random 10% of n = 5000: 7-8.6 -> 10-11 s, 10-40% and 60-90%: +10%).
#: Not enough alone: PREDICTED_WIDTH 4-8 everywhere (n = 1000: two rounds, 1.1-2.1 s).
WIDER_WITHIN_SCALES = 25.0


#: The mirrored-extension start (:func:`extended_basis`) solves a smaller problem with
#: about EXTEND_RANGE / (1 - alpha) counts (n0 (1 - alpha) = 200: alpha = 0.9 from n0 = 2000;
#: n0 = 1000 measured the same with the first, primal-simplex version, 48.6 against 53.3 s) ...
EXTEND_RANGE = 200.0
#: ... only where n is at least this multiple of n0 (the ends must be apart for their
#: structure to carry over).
EXTEND_MIN_RATIO = 2
#: ... and where S repeats with a period of at most this many counts (1: S = all; 2: the
#: even counts).
EXTEND_MAX_PERIOD = 4


def side_period(problem: CountQuery, longest: int = EXTEND_MAX_PERIOD) -> int | None:
    """The least p <= ``longest`` with S = {i in 0..n : i mod p in S's residues} (1 for S = all)."""
    inside = np.zeros(problem.n + 1, dtype=bool)
    inside[list(problem.support)] = True
    for p in range(1, min(longest, problem.n) + 1):
        if np.array_equal(inside, np.resize(inside[:p], problem.n + 1)):
            return p
    return None


def extension_plan(problem: CountQuery) -> tuple[int, int] | None:
    """S's period and n0 / 2 where :func:`extended_basis` applies (before any solve), else None."""
    period = side_period(problem)
    if problem.loss_name not in ("absolute", "squared") or period is None:
        return None
    half0 = int(round(EXTEND_RANGE / (1.0 - problem.alpha) / 2))
    n0, middle = 2 * half0, problem.n // 2
    if half0 < 1 or problem.n < EXTEND_MIN_RATIO * n0 or (problem.n - n0) % period or (middle - half0) % period:
        return None
    return period, half0


def extended_basis(problem: CountQuery, *, tolerance: float = 1e-10) -> ExtendedBasis | None:
    """Predict the optimal basis at n from the certified optimum of a smaller problem.

    Where n (1 - alpha) is large the two ends of the path decouple. The optimal T (squared
    loss, alpha = 0.9) shifts outputs inward by up to 7 counts near each end, and the shift
    decays into the middle, where T is the identity up to tiny entries on ``{r, r + 1}``
    (left half) or ``{r - 1, r}`` (right half). Its one-entry rows and slack loss rows come
    in clusters: near each end (at 0-16, 21-24, 34-38, 53-58, 82-92, 140-153, 311-318 at
    n = 10,000, the last at 295-302 at n = 2000) and one around the middle row n/2. So
    the basis of the optimum at n0 = EXTEND_RANGE / (1 - alpha) predicts the basis at n:
    its left part stays, its right part moves by n - n0, its middle cluster (the run of
    one-entry and slack rows around n0/2, see :func:`_middle_cluster`) moves to n/2, and
    the rows in between repeat the pattern of the rows next to the middle cluster. Basic
    are the remap entries it names, every chain variable and d, and the slack loss rows
    moved likewise.

    S may be any periodic set (:func:`side_period`: the even counts have period 2), if
    the shifts keep its phase: then n0's S is S's pattern on 0..n0, and the rows between
    repeat a whole period. For the even counts the pattern is a two-entry row ``{r, r +
    1}`` and a one-entry row at ``r + 1`` in turn (left half), and only the slack loss
    rows (every other row is a one-entry row) mark the middle cluster.

    That basis is dual feasible or nearly so (its duals' Lagrangian bound is within 5e-9
    of the optimum at n = 10,000) and primal infeasible in a few rows near the ends (the
    end clusters drift with n), so the caller re-solves it with the dual simplex: 847
    pivots, 2.6 s (squared loss, alpha = 0.9, n = 10,000), where the fallback from scratch
    spends ~130 s. The prediction is only a start: the result is certified as always.

    Returns None where it does not apply (another loss, S not periodic or out of phase
    with the shifts, n below EXTEND_MIN_RATIO n0, or n0's optimum not certified or its
    middle cluster too wide to move).
    """
    from dpopt.programs.column_generation.solve import solve_by_column_generation  # the loop imports this module
    plan = extension_plan(problem)
    if plan is None:
        return None
    period, half0 = plan
    n, alpha = problem.n, problem.alpha
    n0, middle = 2 * half0, n // 2
    residues = [i for i in range(period) if i in problem.support]
    side = None if period == 1 else [i for i in range(n0 + 1) if i % period in residues]
    smaller_problem = CountQuery(n=n0, alpha=alpha, loss=problem.loss_name, side_information=side)
    smaller = solve_by_column_generation(smaller_problem, tolerance=tolerance)
    if not smaller.within(tolerance):
        return None
    remap = smaller.mechanism.remap.tocoo()
    positive = remap.data > 0
    rows0, targets0 = remap.row[positive].astype(np.int64), remap.col[positive].astype(np.int64)
    losses = smaller.row_losses
    slack0 = np.array(smaller_problem.support)[losses.max() - losses > tolerance * losses.max()]
    singles0 = np.flatnonzero(np.bincount(rows0, minlength=n0 + 1) == 1)
    special = np.union1d(singles0, slack0) if period == 1 else slack0
    width = _middle_cluster(special, half0, gap=4 * period)
    if 2 * width >= half0:  # no two-entry rows between the end and the middle
        return None
    # rows of n0 left of, right of and in its middle cluster; each part moves by its shift
    shifts = (0, n - n0, middle - half0)

    def part(r: np.ndarray) -> np.ndarray:
        return np.where(r < half0 - width, 0, np.where(r > half0 + width, 1, 2))

    moved = np.take(shifts, part(rows0))
    # between the parts: each row copies n0's row of the same phase next to the cluster
    inner_left = np.arange(half0 - width, middle - width)
    inner_right = np.arange(middle + width + 1, n - half0 + width + 1)
    source_left = half0 - width - period + (inner_left - (half0 - width)) % period
    source_right = half0 + width + 1 + (inner_right - (middle + width + 1)) % period
    new_rows, new_targets = [rows0 + moved], [targets0 + moved]
    per_row = np.bincount(rows0, minlength=n0 + 1)
    order = np.argsort(rows0, kind="stable")
    sorted_rows, offsets0 = rows0[order], (targets0 - rows0)[order]
    for inner, source in ((inner_left, source_left), (inner_right, source_right)):
        count = per_row[source]
        rank = _ranges(count)
        index = np.repeat(np.searchsorted(sorted_rows, source), count) + rank
        repeated = np.repeat(inner, count)
        by_rank = np.lexsort((repeated, rank))  # first entries first, as rows0
        new_rows.append(repeated[by_rank])
        new_targets.append((offsets0[index] + repeated)[by_rank])
    slack_rows = slack0 + np.take(shifts, part(slack0))
    return ExtendedBasis(np.concatenate(new_rows), np.concatenate(new_targets), slack_rows)


def _ranges(count: np.ndarray) -> np.ndarray:
    """0..count[0]-1, 0..count[1]-1, ... concatenated."""
    ends = np.cumsum(count)
    return np.arange(ends[-1] if ends.size else 0) - np.repeat(ends - count, count)


def _middle_cluster(special: np.ndarray, middle: int, gap: int = 4) -> int:
    """Half-width of the cluster of ``special`` rows around ``middle``: rows reached from
    ``middle`` in steps of at most ``gap`` (0 if there are none)."""
    low = high = middle
    while np.any(inside := (special >= low - gap) & (special < low)):
        low = int(special[inside].min())
    while np.any(inside := (special <= high + gap) & (special > high)):
        high = int(special[inside].max())
    return max(middle - low, high - middle)


def coarse_factor(n: int, alpha: float) -> int:
    """k of the coarse problem (n // k rows at alpha^k), or 1 when no coarse start is used."""
    if alpha < COARSE_FROM_ALPHA or n < COARSE_FROM_N:
        return 1
    k = int(round(np.log(COARSE_TARGET_ALPHA) / np.log(alpha)))
    return max(1, min(k, COARSE_MAX_FACTOR, n // COARSE_MIN_ROWS))


def row_means(remap: sparse.csr_array) -> np.ndarray:
    """phi_r = sum_r' T[r, r'] r': where each row of the remap sends its count on average."""
    return remap @ np.arange(remap.shape[1], dtype=float)


def predicted_means(coarse_means: np.ndarray, n: int, k: int) -> np.ndarray:
    """The fine problem's row means predicted from the coarse one's (n // k rows, alpha^k).

    The optimal mechanism depends on n and alpha mostly through n log(1/alpha) (a continuum
    limit: the geometric noise's scale 1/log(1/alpha) against the range n), so
    ``phi_n(r) ~ k phi_(n/k)(r / k)``, linear interpolation between coarse rows 1 .. m-1.
    The end rows are a boundary layer of width about one row at every scale: row 0 (and n)
    keeps the coarse row 0's mean times k; the fine rows between are extrapolated from
    coarse rows 1 and 2 (m-1 and m-2), not interpolated towards row 0.
    """
    m = coarse_means.size - 1
    x = np.arange(n + 1) / (n / m)
    inner = np.arange(1, m)
    phi = np.interp(x, inner, coarse_means[1:m])
    low, high = x < 1, x > m - 1
    phi[low] = coarse_means[1] + (x[low] - 1) * (coarse_means[2] - coarse_means[1])
    phi[high] = coarse_means[m - 1] + (x[high] - (m - 1)) * (coarse_means[m - 1] - coarse_means[m - 2])
    phi *= n / m
    phi[0], phi[n] = coarse_means[0] * n / m, n - (m - coarse_means[m]) * n / m
    return np.clip(phi, 0, n)


def coarse_start(problem: CountQuery, *, tolerance: float = 1e-10) -> tuple[np.ndarray, np.ndarray] | None:
    """Master columns (rows, targets) predicted by a coarser problem, or None where not used.

    Applies to losses convex in the output (absolute and squared), where an optimal remap
    can be taken to send row r to the two integers around its mean phi_r (Jensen: the
    randomized rounding of phi_r never raises any row's expected loss), so predicting phi
    predicts the optimal support. The coarse problem (n // k rows, alpha^k, side
    information S // k) is solved the same way (recursively, so alpha = 0.999 goes through
    0.99 to about 0.9); its row means, scaled by :func:`predicted_means`, give each fine row
    the columns around its predicted mean; for squared loss the rows near the ends and at
    jumps of the means get wider windows (:func:`widened`). The prediction only chooses where
    column generation starts: pricing still checks every column and the bounds certify the
    result.
    """
    from dpopt.programs.column_generation.solve import solve_by_column_generation  # the loop imports this module
    n, alpha = problem.n, problem.alpha
    k = coarse_factor(n, alpha)
    if k == 1 or problem.loss_name not in ("absolute", "squared"):
        return None
    m = n // k
    side = np.unique(np.minimum(np.round(np.asarray(problem.support) * m / n), m).astype(int))
    coarse_problem = CountQuery(n=m, alpha=alpha**k, loss=problem.loss_name,
                                side_information=None if side.size == m + 1 else side.tolist())
    result = solve_by_column_generation(coarse_problem, tolerance=tolerance)
    coarse_means = row_means(result.mechanism.remap)
    phi = predicted_means(coarse_means, n, k)
    jumps, from_left, from_right = one_sided_means(coarse_means, n, k)
    wide = widened(problem, k)
    w = PREDICTED_WIDTH[problem.loss_name]
    if problem.loss_name == "absolute":
        w += sum(n / noise_scale(alpha) > scales for scales in LONG_PATH_SCALES)
    if wide and n * (1.0 - alpha) < WIDER_WITHIN_SCALES:
        w += 1
    offsets = np.arange(-w, w + 2)
    predictions = [(np.arange(n + 1), phi, offsets), (jumps, from_left, offsets), (jumps, from_right, offsets)]
    if wide:
        predictions += _end_zones(n, alpha, k, w, phi)
    if problem.loss_name in END_LOSSES:
        depth = min(END_ROWS, (n + 1) // 2)
        low, high = np.arange(depth), np.arange(n + 1 - depth, n + 1)
        predictions += [(low, phi[low], np.arange(w + 2, w + 2 + END_EXTRA)),  # inward of each end
                        (high, phi[high], np.arange(-w - END_EXTRA, -w))]
    rows = np.concatenate([np.repeat(r, o.size) for r, _, o in predictions])
    targets = np.concatenate([(np.floor(p).astype(np.int64)[:, None] + o).ravel() for _, p, o in predictions])
    if wide:
        filled = _between(jumps, [phi[jumps], from_left, from_right], offsets)
        rows, targets = np.concatenate([rows, filled[0]]), np.concatenate([targets, filled[1]])
    inside = (targets >= 0) & (targets <= n)
    return _gap_edges(problem, rows[inside], targets[inside])


def widened(problem: CountQuery, k: int) -> bool:
    """Whether the coarse start widens its prediction near the ends and at jumps (see END_ZONE_SCALES).

    Squared loss, S = all of 0..n or periodic (:func:`side_period`; on a random 10% or S
    with gaps the wider windows only made the masters larger), and a coarse problem at
    alpha^k below COARSE_FROM_ALPHA (k reached its target, about a tenth of a noise scale).
    """
    return problem.loss_name == "squared" and problem.alpha**k < COARSE_FROM_ALPHA and side_period(problem) is not None


def _end_zones(n: int, alpha: float, k: int, w: int, phi: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Predictions (rows, means, offsets) widening the rows near each end (see END_ZONE_SCALES)."""
    zone = min(int(np.ceil(END_ZONE_SCALES * noise_scale(alpha))), int(END_ZONE_FRACTION * (n + 1)))
    edge = min(EDGE_INTERVALS * k, zone)
    # j counts beyond the window floor(phi) - w .. floor(phi) + w + 1: outward to k + 2 counts
    # from phi, inward END_ZONE_INWARD (in the extrapolated edge rows also to k + 2)
    outward, inward, edge_inward = np.arange(1, k + 3 - w), np.arange(1, END_ZONE_INWARD + 1), np.arange(END_ZONE_INWARD + 1, k + 3 - w)
    above, below = (lambda j: w + 1 + j), (lambda j: -w - j)
    low, high = np.arange(zone), np.arange(n + 1 - zone, n + 1)
    low_edge, high_edge = low[:edge], high[high.size - edge :]
    return [(low, phi[low], np.concatenate([below(outward), above(inward)])), (low_edge, phi[low_edge], above(edge_inward)),
            (high, phi[high], np.concatenate([above(outward), below(inward)])), (high_edge, phi[high_edge], below(edge_inward))]


def _between(rows: np.ndarray, means: list[np.ndarray], offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every column (rows, targets) from the lowest to the highest window of ``means`` (one per row)."""
    low = np.floor(np.min(means, axis=0)).astype(np.int64) + offsets[0]
    high = np.floor(np.max(means, axis=0)).astype(np.int64) + offsets[-1]
    count = high - low + 1
    return np.repeat(rows, count), np.repeat(low, count) + _ranges(count)


#: Losses whose first master also holds each row's nearest counts of S (:func:`side_neighbours`),
#: and whether also after a coarse start ...
SIDE_NEIGHBOURS = {"absolute": True, "squared": False}
#: ... where they lie within this many noise scales of the row: columns across a long gap
#: carry weights down to alpha^gap, and with them HiGHS failed a squared master ("Not Set":
#: S in two clusters 100 counts apart, n = 160, alpha = 0.3).
NEIGHBOUR_REACH_SCALES = 4.0


def side_neighbours(problem: CountQuery) -> tuple[np.ndarray, np.ndarray]:
    """Columns (rows, targets) from every row r to the last count of S below r and the first
    at or above it, where within NEIGHBOUR_REACH_SCALES noise scales of r.

    Absolute loss: for any multipliers lambda on S, row r's cost ``sum_i lambda_i
    alpha^|i-r| |i - r'|`` is piecewise linear in r' with kinks only at counts of S, so
    every row has a best column in S (a weighted median), and the optimal T sends row r to
    counts of S around it. The band around the diagonal misses them where S is sparse, and
    the rows then walk there a few columns a round: a random 10% of the counts, alpha =
    0.9, n = 10,000: 13 rounds, 24.6 s -> 5 rounds, 11.5 s; n = 5000 11.9 -> 5.7 s; alpha =
    0.99, n = 10,000 22.8 -> 17.2 s (one process). Not used where S is all of 0..n (the
    band holds them). Squared loss prices a weighted mean, not a count of S, yet the
    counts of S around a row still pull it: from the band (alpha < 0.95) a random 10%,
    alpha = 0.9, took n = 1000 1.33 -> 1.05 s, 5000 18.7 -> 15.4 s, 10,000 85 -> 63 s (8 -> 5
    rounds); after a coarse start they only made the master larger (random 10%, alpha =
    0.99, n = 5000 11.5 -> 13.1 s; 10-40% and 60-90% 21.1 -> 23.0 s; alpha = 0.999, n = 2000
    1.5 -> 2.1 s), so squared loss takes them from the band only.
    """
    support = np.asarray(problem.support)
    rows = np.arange(problem.n + 1)
    first = np.searchsorted(support, rows)  # the first count >= r; the last count < r before it
    above = support[np.minimum(first, support.size - 1)]
    below = support[np.maximum(first - 1, 0)]
    # past either end of S, both are its end
    rows, targets = np.concatenate([rows, rows]), np.concatenate([np.where(first == 0, above, below), np.where(first == support.size, below, above)])
    near = np.abs(targets - rows) <= NEIGHBOUR_REACH_SCALES * noise_scale(problem.alpha)
    return rows[near], targets[near]


#: Inside a gap of S of at least GAP_EDGE_SCALES noise scales, the rows farther than one
#: noise scale from S start with the gap's two edges as their only columns (see _gap_edges).
GAP_EDGE_SCALES = 4.0


def _gap_edges(problem: CountQuery, rows: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The predicted columns with the rows deep inside long gaps of S sent to the gap's edges.

    Absolute loss only. With any multipliers on S, a row inside a gap (a, b) prices output
    r' in [a, b] linearly (every input of S is on one side of it), so its best column is a
    or b; pricing adds anything else. The interpolated coarse means predict nothing useful
    there, and their columns made the first master larger: S = 10%..40% and 60%..90% of 5000,
    alpha = 0.99: first master 10.3 -> 9.0 s, 16.3 -> 12.4 s in all. Squared loss prices a
    weighted mean between the edges, and there the predicted columns were worth keeping
    (12.8 -> 25.7 s without them).
    """
    support = np.asarray(problem.support)
    scale = noise_scale(problem.alpha)
    long_gaps = np.flatnonzero(np.diff(support) >= GAP_EDGE_SCALES * scale)
    if problem.loss_name != "absolute" or not long_gaps.size:
        return rows, targets
    keep = np.ones(rows.size, dtype=bool)
    extra_rows, extra_targets = [], []
    for g in long_gaps:
        a, b = int(support[g]), int(support[g + 1])
        deep = np.arange(int(np.floor(a + scale)) + 1, int(np.ceil(b - scale)))
        keep &= (rows < deep[0]) | (rows > deep[-1]) if deep.size else keep
        extra_rows += [deep, deep]
        extra_targets += [np.full(deep.size, a), np.full(deep.size, b)]
    return np.concatenate([rows[keep], *extra_rows]), np.concatenate([targets[keep], *extra_targets])


def one_sided_means(coarse_means: np.ndarray, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fine rows inside a jump of the coarse means, and their means extrapolated from each side.

    Side information makes the optimal means jump where S begins and ends (absolute loss,
    alpha = 0.99, n = 5000, S = 500..4500: row 500 goes to 552, row 501 to 582): linear
    interpolation between the coarse rows around a jump puts the fine rows in between
    up to 30 counts off. Coarse interval j (fine rows k j .. k (j + 1)) is a jump where its
    step differs from a neighbouring interval's by more than JUMP_STEP coarse counts; its
    fine rows also get the means extrapolated linearly from the left (coarse rows j - 1,
    j) and from the right (j + 1, j + 2). The intervals at the path's two ends are left to
    :func:`predicted_means` (with S = all they are the only jumps, and adding their rows
    cost 17% at n = 1000, alpha = 0.99). Returns (rows, from_left, from_right).
    """
    m = coarse_means.size - 1
    x = np.arange(n + 1) / (n / m)
    j = np.clip(np.floor(x).astype(np.int64), 0, m - 1)
    step = np.diff(coarse_means)  # step[j]: coarse row j to j + 1
    left_step, right_step = step[np.maximum(j - 1, 0)], step[np.minimum(j + 1, m - 1)]
    jump = (np.abs(step[j] - left_step) > JUMP_STEP) | (np.abs(step[j] - right_step) > JUMP_STEP)
    jump &= (j >= 2) & (j <= m - 3)  # the path's own ends are predicted_means's boundary layers
    from_left = (coarse_means[j] + (x - j) * left_step) * (n / m)
    from_right = (coarse_means[j + 1] + (x - j - 1) * right_step) * (n / m)
    rows = np.flatnonzero(jump)
    return rows, np.clip(from_left[rows], 0, n), np.clip(from_right[rows], 0, n)
