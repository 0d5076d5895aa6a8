"""The optimal mechanism on a finite universe as an LP: cvxpy for inspection, HiGHS to solve.

Variables x[a, r] >= 0 (m x |R|), rows summing to 1; objective minimax (t >= the
expected loss of every dataset in the side information, minimise t) or average
(sum_a w_a sum_r L[a, r] x[a, r]); privacy ``x[a, r] <= e^eps_ab x[b, r]`` for every
directed pair of :meth:`FiniteQuery.privacy_pairs` and output r.

**What was measured** (2 cores; the atlas universes of :func:`dpopt.universes.graph_atlas`,
triangle counts, epsilon = 1, minimax absolute loss; the same optimum by every route):

| route | 5 nodes (34 x 8) | 6 nodes (156 x 16, 18,272 privacy rows) | 7 nodes (1044 x 28, 367,248 rows) |
| --- | --- | --- | --- |
| primal LP, HiGHS IPM + crossover | < 0.1 s | 1.45 s | > 600 s (also without crossover) |
| primal LP, dual / primal simplex | | 21 s / 18 s | |
| **dual LP, HiGHS IPM** (+ crossover <= 60,000 rows) | 0.03 s | 1.04 s | about 230 s without crossover (its crossover ran > 2 min more and did not finish) |
| dual LP, dual simplex | | 1.5 s | > 375 s |
| primal or dual LP, Clarabel (direct LDL, faer) | | 3.9 s / 5.3 s | > 60 s per iteration |
| lazy privacy rows, warm dual simplex | | 22 s (19 rounds, 10,241 rows added) | > 10 min |
| Dantzig-Wolfe over output columns | 0.3 s | 280 s (474 rounds: tailing off; dual smoothing made it worse) | |
| dual LP, HiGHS PDLP (first order, optimality tolerance 1e-4) | | 4.7 s | > 300 s (time limit; its rows read as a mechanism are 3% off the optimum) |

Lazy rows do not thin this LP (more than half the rows bind: a staircase-like optimum is
tight on every edge where the level changes, so the optimum is massively degenerate: far
more binding rows than variables, which is also why simplex and crossover struggle), and
Dantzig-Wolfe, although its master has only 2m + |R| rows and a certified Lagrangian bound
every round, tails off. Direct factorisations fill in: the class graph's separators
(whole edge-count layers, ~150 classes) times 28 outputs are dense blocks of ~4,000.
Nor does symmetry help: colour refinement of the class graph (cells: triangle count, then
neighbours' cells) ends with 1044 cells for 1044 classes, so no equitable partition (no
fractional automorphism) shrinks the LP. So the LP is solved through its dual
(:func:`build_dual_lp`), whose one row per mechanism entry suits HiGHS's interior point; the mechanism is read from the dual's row duals and
repaired to exact privacy, and :func:`certified_lower_bound` makes the dual values exactly
feasible, so every solution carries ``lower_bound <= optimum <= objective``. Where that
bound is loose (the interior point's duals violate every row a little, and the bound sums
the violations: 3.5e-6 and 2e-5 below the interior point's objective on the 1044 graphs
at epsilon = 2 and 4), :func:`relaxation_lower_bound` solves the LP on the few datasets
where those duals weigh (:class:`DatasetRelaxation`: 101 and 221 of the 1044), which is a
relaxation, to a vertex: its certified bound comes within 5e-8 and 7e-7 of that objective
(2 and 22 s more).

**Quotients first** (session 16). A minimax LP with more than :data:`QUOTIENT_ROWS` privacy
rows is first solved with datasets merged into classes (:func:`solve_by_quotients`):
datasets with the same loss row and the same hop distance, capped at a reach, to the
datasets of every value (:func:`distance_classes`). The quotient (:class:`DatasetQuotient`)
is a restriction: its rows lifted to the datasets are a private mechanism with its objective,
so its optimum is an upper bound, and the relaxation to the datasets where its duals weigh
is a certified lower bound; the quotient is kept when they meet within :data:`QUOTIENT_GAP`,
and otherwise the full LP is solved. It works because the optimum needs few datasets
(its dual's support) and a mechanism has to tell apart only what they see; colour
refinement, which found no equitable partition, asks for more: equal rows at *every*
optimum. See :data:`QUOTIENT_REACHES` for which reach is exact where. Since session 17 the
quotients are solved at once, each in a child process (:mod:`dpopt.programs.highs_child`;
HiGHS's interior point uses one core), and read in order of reach, so the answer is the
one a solve after another would give. The issue's goal of <= 10 s for the 1044 graphs is
still not met (see ``benchmarks/finite_query.py``).

**Also tried (2026-11-24), and why none is used.**

* *Exact Dantzig-Wolfe pricing.* The vertices of one output's polytope
  ``{v in [0, 1]^m : v_a <= e^eps v_b for neighbours}`` (connected graph) are 0 and
  ``alpha^g`` for integer g >= 0 that changes by at most 1 across every edge and joins
  every dataset to a zero of g by a path along which it changes by exactly 1 at each step
  (at a vertex every v_a > 0 is pinned by a chain of tight rows to an entry at 1; each
  tight row moves ``-ln v / eps`` by exactly one). Until 2026-11-28 this said
  ``alpha^d̄(., A)`` for sets A, the special case where the chains are shortest paths; the
  explore profile of ``tests/programs/test_finite_query.py`` found a smaller price on the
  tree 4-2-0-1, 0-3 (g = 2, 1, 1, 3, 0 on datasets 0..4: dataset 1 is a local maximum of
  v below 1, pinned through its neighbour), and the test now enumerates the g above. So
  pricing is an LP whose optimum reads off an exact column. Pricing is cheap (16 outputs x
  156 classes: 0.03 s a round), but the master's m row-sum equalities are met only through nearly
  constant columns: from a pool of 365 level-set columns (A = outputs within j of r, f >= r,
  f <= r) the 6-node master stayed at a constant mechanism's 10.0 for 76 rounds (optimum
  2.55) and HiGHS needed up to 100 s for single re-solves of that degenerate master.
* *A graph geometric mechanism.* Gupte-Sundararajan's Theorem 1 (x = G T) would remove
  every privacy row: ``x = E Y`` with ``E[a, c] = alpha^d̄(a, c)`` and Y >= 0 is private by
  construction. It does not hold on the class graphs: no Y >= 0 even makes the rows sum
  to 1 (``E z = 1`` has no non-negative solution) on 5 and 6 nodes at eps <= 1 and on 7
  nodes at eps <= 2, and where one does (eps = 2 and 4 on 5 and 6 nodes) the best such x
  is 12-50% above the LP optimum (tested).
* *A better bound from the interior point's duals.* At eps = 4 the certified bound sits
  2e-5 (relative) below the repaired mechanism's objective, which is within 5e-8 of the
  interior point's own. Re-pricing each output exactly at the interior point's (pi, mu)
  gives a Lagrangian bound 1.2e-5 below: every one of the 29,232 dual rows is violated
  by ~1e-10 and any bound sums the violations. Tightening ``ipm_optimality_tolerance``
  to 1e-10 (98 s) left the Lagrangian bound where it was and made the certified one
  worse (3.3e-5 below). A Dantzig-Wolfe polish seeded with the
  interior point's mechanism and duals (smoothed pricing) stopped at once: HiGHS reports
  "unknown" on that master (entries down to e^-84).
* *A looser interior point* (2026-11-25, epsilon = 1, same process order): HiGHS's
  ``ipm_optimality_tolerance`` 1e-6 took the 1044-graph LP from 158 to 82 s and its
  certified gap from 6.7e-8 to 5.7e-7; 1e-5 gave 76 s and 8.3e-6. Twice as fast for ten
  times the gap, and still eight times the goal: not adopted. Nor does output column
  generation apply: with an output left out, the datasets whose value it is pay for it
  (6 nodes, epsilon = 1: 2.55 with all 16 outputs, 4.21 without the first and last).
* *HiGHS's direct-factorisation interior point, HiPO* (2026-11-26; highspy 1.15.1 with
  its ``highspy-extras`` package, which highspy 1.16's wheel lacks). On the dual LP of the
  6-node universe its normal equations stalled at a 7.6e-3 gap and HiGHS restarted with
  IPX; its augmented system converged in 4.8 s (IPX: 1.04 s). On the 7-node universe the
  factor has 7.7e7 non-zeros and costs 4e11 flops an iteration (normal equations;
  augmented system: 1.35e8 and 8.2e11): the coupling of all 28 outputs of a class
  through its row sum fills in the class graph's separators, and 60 s ended in the
  first iterations.
* *Rows shared by (edge count, triangle count)* (2026-11-26): the LP restricted to one row
  per such group (49 groups on 6 nodes, ~300 on 7; privacy between groups holding a
  neighbouring pair) is an upper bound only: 6 nodes 0.6%, 0.6%, 1.9%, 5.6% above the
  optimum at epsilon 0.5, 1, 2, 4; 7 nodes 0.18%, 0.67%, 1.9%, 9.3% (3-19 s through
  cvxpy). The optimum's rows differ inside the groups (spread up to 0.5 on 6 nodes), as
  colour refinement predicted, so aggregation would need refining towards all 1044 rows.
* *Lazy privacy rows on random universes* (2026-11-25), where random values might leave
  most rows slack: they do not. The benchmark's generator at m = 1000, |R| = 50, degree
  10, eps = 1 (497,400 privacy rows): each warm dual-simplex round added every violated
  row, and ten rounds added 144,882 rows (9,700-25,000 a round, never fewer) in 471 s,
  the tenth re-solve alone 394 s, with the objective still climbing (11.5).
* *A cumulative form* (2026-11-26): ``F[a, j] = P(output <= v_j)``, so the row sums become the
  constant ``F[a, k-1] = 1`` and each privacy row couples outputs j and j - 1 (4 entries)
  instead of every output of a dataset coupling through its row sum. The minimax loss row
  (absolute loss: ``sum_j (L[a, j] - L[a, j+1]) F[a, j]``) couples all of them again, and so
  does any loss. Clarabel on the 6-node universe (epsilon = 1, same optimum 2.5504): 12.1 s
  and 35 iterations against 5.3 s and 34 for the entries x (one process, a busy machine).
* *The dual's free row-sum columns split* (``pi = u - v``, u, v >= 0; 2026-11-26): HiGHS's
  interior point takes the same iterations on the 6-node universe (36 at epsilon = 1, 48 at
  4; 1.5 against 1.7 s) and at epsilon = 4 ends "unknown" instead of optimal: not used.
* *A structured interior point of our own* (2026-11-26, session 10): Mehrotra's
  predictor-corrector in numpy and LAPACK that eliminates each output's entries and
  privacy rows through a dense inverse of its barrier Hessian
  ``H_r = diag(z / x) + P^T diag(lam / s) P``, leaving one dense Cholesky of order |S| + m
  (loss rows and row sums). Because it knows a dataset's loss row and row sum touch the
  same k entries, an iteration costs k m^3 = 3.2e10 flops on the 1044 graphs against
  HiPO's 4e11. Measured: 5 nodes, 13 iterations, 0.15 s, certified gap 5.7e-10; 6 nodes at
  epsilon = 0.5, 33 iterations, 1.3 s (HiGHS 2.9 s), gap 7.5e-11. But as privacy rows
  tighten (lam / s near 1e12 beside z / x near 1e-20) the solves lose accuracy, even with a
  diagonal shift of 1e-14 of H_r's largest entry and three passes of iterative refinement:
  on 6 nodes the dual residual grows from 1e-9, the certified bound never comes within
  1e-8 (epsilon = 1) or 3e-5 (epsilon = 4) of the optimum, and at epsilon = 4 the primal
  settles 7e-7 above it. On the 1044 graphs at epsilon = 1, keeping the best certified bound and
  stopping when it stalls: 52 iterations, 118 s and a certified gap of 7.6e-7, against
  247 s and 6.7e-8 for the HiGHS route in the same hour. An iteration took 2.3 s: 0.9 s of
  LAPACK (28 Cholesky inverses of order 1044), most of the rest streaming the 244 MB of
  inverses through 16 refined solves. Even with exact solves its floor (~30 iterations x
  0.9 s) is three times the goal, and k m^2 doubles rule out m = 5000: not adopted.
* *Dense rows split into chains* (2026-11-26, session 15): partial sums ``p[a, r] = p[a, r-1]
  + x[a, r]`` and the same for the loss make every row touch at most three entries, so the
  normal equations become the class graph times a path of outputs instead of times K_28.
  It does not thin the factor: SuperLU's minimum-degree ordering of the 7-node normal
  equations (85,608 unknowns) gives 1.4e8 non-zeros (HiPO's METIS on the entries x: 7.7e7),
  because a cut across outputs is a whole layer of 1044 classes and the class graph's own
  layers are fully coupled; Clarabel on 6 nodes: 4.6 s against 4.0 s.
* *Other quotients* (session 16; each against the full LP's optimum). Capping less or not at
  all: on 6 nodes reach 2 (68 of 156 classes) is exact at epsilon <= 1, but even uncapped
  distances (105 classes) stay 4.4e-5 and 5.8e-5 above at epsilon = 2 and 4. Value, and
  the smallest and largest value within one and two hops (277 classes on 7 nodes): exact
  at epsilon = 0.5 in the time of reach 2. Reach 1 (one class per value) with the
  relaxation's datasets as singletons: exact on 6 nodes at epsilon = 4 (73 classes), 4.9%
  above on 7 nodes at 0.5. Reach 2 with them (290 classes on 7 nodes, epsilon = 1): exact,
  but finding them needs reach 2 solved first, so no faster than reach 4. Starting from
  reach 1 and splitting the classes where the duals weigh, round by round: exact on 6 nodes
  in two rounds, but on 7 nodes at epsilon = 1 it ends with 511 classes in 66 s. At
  epsilon = 4 reach 4 (437 classes) is 2.1e-5 above: the large-epsilon optimum tells
  apart rows that these distance profiles merge. Reach 2 with the support of the
  relaxation's vertex added as singletons, round by round (7 nodes): at epsilon = 1 exact
  after one round (290 classes, 38 s in all against reach 4's 54 s; a possible refinement);
  at 2 it stalls 6.6e-7 above the optimum; at 4 the quotient *is* optimal after one round
  (354 classes: 0.3809840 against the full LP's 0.3809841), but its duals weigh on 430-460
  datasets and the relaxation, shrunk to about 200 of them, certifies it only within 3e-6
  after three rounds and five minutes: there the lower bound, not the mechanism, is what
  is missing.
* *Quotients by distance to the relaxation's datasets* (session 17; 1044 graphs, epsilon = 1,
  the 33 datasets where reach 4's duals weigh, whose relaxation is exact): classes by value
  and capped hop distance to the members of S with each value, S as singletons. Cap 1, 2, 3:
  55, 100, 186 classes, 5%, 0.3%, 2.6e-4 above the optimum; uncapped: exact, but 523 classes
  (61 s). Reach 2's 286 classes see more with fewer.
* *Quotients on random universes* (session 17; the benchmark's generator at m = 1000, |R| =
  50, degree 10, epsilon = 1: diameter 5, every reach-2 distance profile unique). One class
  per value (50 classes; every two values are neighbours somewhere, so every two rows are
  within e^eps): 15.4915, and the relaxation to 46 datasets proves the optimum >= 15.4288,
  so this near-trivial mechanism is within 0.41%. Value with the smallest and largest
  neighbouring value (900 classes): 15.4722 in 824 s. Value classes with the relaxation's
  datasets as singletons, round by round: 15.4818, 15.4807, 15.4792 (88, 125, 155 classes),
  while the certified bound moves between 15.398 and 15.418: neither closes the gap to 1e-7.
* *Session 18* (1044 graphs unless said). **Dominated datasets**: a dataset x whose
  neighbours are all y or y's neighbours, with y's loss row, can copy y's row, so it could
  leave the LP exactly; 6 of the 1044 qualify, none on the benchmark's random universes.
  **Growing the relaxation from nothing** (one dataset per value; each round adds the 30
  datasets whose cheapest row in the box the current rows leave them costs most above the
  bound): the bound is exact at epsilon = 1 after 6 rounds (178 datasets, 16 s), but the test
  never stops adding (356 datasets after 880 s; one round's crossover took 370 s); on 6
  nodes at epsilon = 4 it takes 155 of 156 datasets, and on a random m = 1000 universe it
  climbs from 14.55 to 15.26 in 104 s, below the known 15.4288. **Rescaling** the dual's
  rows by ``e^(-eps hops to the value)``: 15.0 s against 10.8 s on reach 2 (epsilon = 0.5).
  **Where reach 2's time goes** (epsilon = 0.5): 35 interior-point iterations of about
  0.3 s and a last one of 2 s; that is the floor of this route. **A looser interior point
  on the quotients** (``ipm_optimality_tolerance`` 1e-7): 13.4 to 11.5 s at epsilon = 0.5
  (gap 1.3e-8) and 36 to 33 s at 2 (gap 6.5e-8, near :data:`QUOTIENT_GAP`, past which the
  150 s full LP runs): not adopted. **The full dual with row sums and loss rows only on the
  datasets where reach 2's duals weigh** (the relaxation without its path bounds): slower
  than the full LP (336 datasets, epsilon = 4: 213 s, status unknown).
* *Session 21: the quotients' own interior point* (where the time goes: at epsilon = 0.5 the
  route's 11.3 s are 11.1 s of waiting for reach 2's solve and 0.13 s of relaxation). The
  reach-2 quotient alone (286 classes, 83,832 privacy rows): dual LP 10.6 s, primal LP
  9.2 s, dual simplex 42 s, primal dual-simplex > 120 s; reach 4 at epsilon = 1 and 2:
  primal 29.7 and 34.7 s against the dual's 29.5 and 28.6 s. Loosening HiGHS's
  feasibility tolerances to 1e-8 or 1e-7: 12.1 -> 12.1 and 10.9 s, same optimum. The
  structured interior point of session 10 (dense per-output inverses), rewritten as a
  Mehrotra predictor-corrector for the quotients, where a dense inverse costs
  28 x 286^3 flops: on the 6-node LP it reaches a gap of 1e-4 in 23 iterations and then
  loses accuracy (residuals grow from 1e-5 to 1), as session 10's did: the inverses of
  ``H_r`` are taken across condition numbers near 1e32 once privacy rows bind. None adopted.
* *Session 22: privacy rows shared through bicliques.* Where every dataset of A neighbours
  every dataset of B, the 2|A||B| rows of an output are exactly ``max_A <= e^eps min_B`` and
  ``max_B <= e^eps min_A``: 2(|A| + |B|) + 2 rows through four auxiliary entries. The class
  graph has few such blocks (of the 37,500 pairs of classes with a common neighbour, 4,004
  share four or more; none more than ten), and a greedy cover by 275 bicliques saves 1,356 of
  the 13,116 directed rows per output (10%) for 1,100 new entries per output: not tried
  further.
* *IPX's own dualization* (session 34, highspy 1.16, ``ipx_dualize_strategy``): on the
  dual LP of the 6-node universe, strategies 0, 2 (the default) and 3 take 0.55 and 0.48 s
  at epsilon = 1 and 4, and 1 (IPX dualizes, i.e. solves the primal) 1.8 and 1.4 s: the
  default already picks the faster form. The 1044-graph route in the same hour
  (``benchmarks/finite_query.py --parts 2``): 8.3, 20.9, 23.8 and 78 s at epsilon = 0.5, 1, 2, 4.
* *Entries scaled by their expected size* (session 39, the full dual LP at epsilon = 4, where
  the optimum's entries span e^-84 to 1): with ``x[a, r] = s[a, r] y[a, r]``,
  ``s = max(e^(-eps hops to a dataset of value r), cap)`` (each dual row times s), HiGHS's
  interior point took 36.7 s but ended "unknown" (cap 1e-9; certified bound 0.4% below),
  64 s with a bound 8.6e-4 below (cap 1e-4), and 84 s with 1.9e-5 (cap 1e-2), against
  87 s and 2.1e-5 unscaled in the same hour: the small entries are not what slows it.
* *The relaxation to a few datasets as a route of its own* (session 15). Its optimum is the
  full optimum once the subset holds an optimal dual's support, which is small on the
  atlas (a vertex of the 6-node dual: 20 of 156 datasets, 0.04 s), but a mechanism for all
  datasets still needs the full LP: extending the subset's optimal rows one dataset at a
  time (the box that privacy leaves for it, cheapest row in it) ends 68% above the optimum
  on 6 nodes and with an empty box on a random universe. On the benchmark's random
  universes the support is not small either (m = 300: 96 datasets).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import highspy
import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from dpopt.lazy_modules import cvxpy as cp
from dpopt.privacy import not_implied
from dpopt.problems.finite_query import FiniteQuery
from dpopt.universes import Universe
from dpopt.programs.highs_child import ChildSolve, HighsOutcome, LpArrays, available_cores, solve_here
from dpopt.solvers import SOLVER_OPTIONS, solver_unit
from dpopt.validation import SolverError, fail

__all__ = ["DatasetQuotient", "DatasetRelaxation", "FiniteProgram", "LPResult", "MAX_PRIVACY_ROWS", "OutputSubset", "ReducedMinimaxLP",
           "ScaledLoss", "ValueQuotient", "loss_scale", "build_finite_program", "check_lp_size", "class_edges", "distance_classes", "dual_weights",
           "loss_classes", "program_lower_bound", "relaxation_lower_bound", "undominated_outputs",
           "solve_by_quotients", "solve_finite_lp"]

HIGHS_OPTIONS = SOLVER_OPTIONS["HIGHS"]  # the tolerances every dpopt LP uses (dpopt.solvers)


@dataclass(frozen=True)
class FiniteProgram:
    """The full LP in cvxpy: ``program``, its mechanism variable ``x`` (m x |R|), and the
    constraints whose duals bound the optimum (:func:`program_lower_bound`): the privacy rows
    (pairs x outputs) and, for minimax, the loss rows ``expected loss of a <= t``."""

    program: cp.Problem
    x: cp.Variable
    privacy: Any = None
    loss_rows: Any = None


def build_finite_program(problem: FiniteQuery) -> FiniteProgram:
    """Every privacy row written out (no loops over entries: one sparse difference operator)."""
    m, k = problem.size
    x = cp.Variable((m, k), nonneg=True, name="x")
    pairs, bounds = problem.privacy_pairs()
    p = len(pairs)
    rows = np.arange(p)
    difference = sparse.csr_array(
        (np.concatenate([np.ones(p), -np.exp(bounds)]), (np.concatenate([rows, rows]), np.concatenate([pairs[:, 0], pairs[:, 1]]))),
        shape=(p, m),
    )
    privacy = difference @ x <= 0
    constraints = [cp.sum(x, axis=1) == 1, privacy]
    expected = cp.sum(cp.multiply(problem.loss_matrix, x), axis=1)
    loss_rows = None
    if problem.objective == "minimax":  # as an epigraph, so that its rows have duals
        t = cp.Variable(name="t")
        loss_rows = expected[list(problem.side_information)] <= t
        constraints.append(loss_rows)
        objective = t
    else:
        objective = problem.weights @ expected
    return FiniteProgram(cp.Problem(cp.Minimize(objective), constraints), x, privacy, loss_rows)


def program_lower_bound(problem: FiniteQuery, program: FiniteProgram) -> float:
    """A certified lower bound on the optimum from the duals of a solved :class:`FiniteProgram`
    (any solver): its loss-row and privacy-row duals are the dual LP's mu and lam columns, which
    :func:`certified_lower_bound` makes exactly feasible. ``-inf`` if the solver gave no duals."""
    lam = program.privacy.dual_value
    mu = program.loss_rows.dual_value if program.loss_rows is not None else np.zeros(0)
    if lam is None or mu is None:
        return -np.inf
    m = problem.size[0]
    columns = np.concatenate([np.zeros(m), np.atleast_1d(np.asarray(mu, dtype=float)).ravel(), np.asarray(lam, dtype=float).ravel()])
    return certified_lower_bound(problem, build_dual_lp(problem), columns)


#: Largest number of privacy rows (pairs x outputs) the LP route takes. The 1044 seven-node
#: graphs (367,248 rows) take about four minutes through the dual (see the table above);
#: the random m = 5000 universe of the benchmark (2.5 million rows) is refused.
MAX_PRIVACY_ROWS = 400_000
#: Up to this many privacy rows the interior point is followed by crossover (a basic optimal
#: solution); beyond it crossover took longer than the interior point and failed to finish
#: its clean-up at 367,248 rows, so the interior solution is repaired and certified instead.
CROSSOVER_ROWS = 60_000


@dataclass(frozen=True)
class LPResult:
    """What :func:`solve_finite_lp` found: the mechanism, the LP optimum, a certified lower bound, and how."""

    mechanism: np.ndarray
    objective: float
    lower_bound: float
    privacy_rows: int
    seconds: float
    bound_datasets: int = 0  # > 0: the bound came from the LP on this many datasets (relaxation_lower_bound)
    quotient_classes: int = 0  # > 0: the mechanism came from the LP on this many classes of datasets (solve_by_quotients)


def check_lp_size(problem: FiniteQuery) -> int:
    """The number of privacy rows, refused above :data:`MAX_PRIVACY_ROWS` before any work."""
    rows = len(problem.privacy_pairs()[0]) * problem.size[1]
    if rows > MAX_PRIVACY_ROWS:
        raise fail("universe", "finite_query lp",
                   f"small enough for the LP route: at most {MAX_PRIVACY_ROWS:,} privacy rows (directed pairs x outputs); "
                   f"this problem has {rows:,} (--method value_lp, the best mechanism of the value alone, and the constructions may still apply)", problem.universe.source)
    return rows


@dataclass(frozen=True)
class DualLP:
    """The LP's dual as arrays HiGHS reads (:class:`LpArrays`) and how to read its solution.

    Columns: ``pi`` (m, free; one per row sum), ``mu`` (minimax: one per dataset of the
    side information, >= 0, summing to 1), ``lam`` (one per privacy row, >= 0). Rows: one
    per entry x[a, r]:

        pi_a - mu_a L[a, r] - sum_{(a, b)} lam_abr + sum_{(b, a)} e^eps_ba lam_bar <= c[a, r]

    with ``c = 0`` (minimax) or ``w_a L[a, r]`` (average); maximise ``sum pi``. The row duals
    are the mechanism (negated), so solving the dual hands back the primal.
    """

    arrays: LpArrays
    rhs: np.ndarray
    mu_columns: np.ndarray

    @property
    def matrix(self) -> sparse.csc_array:
        return self.arrays.matrix

    @property
    def lp(self) -> highspy.HighsLp:
        """The dual as a ``highspy.HighsLp`` (built anew on each call)."""
        return self.arrays.highs_lp()


def build_dual_lp(problem: FiniteQuery | ReducedMinimaxLP) -> DualLP:
    """The dual of the finite-universe LP, built from sparse blocks (no loops over entries)."""
    m, k = problem.size
    pairs, bounds = problem.privacy_pairs()
    count = len(pairs)
    loss = problem.loss_matrix
    minimax = problem.objective == "minimax"
    support = np.array(problem.side_information) if minimax else np.zeros(0, dtype=np.int64)
    entry = np.arange(m * k).reshape(m, k)
    q, r = np.repeat(np.arange(count), k), np.tile(np.arange(k), count)
    lam = m + support.size + q * k + r
    rows = [entry.ravel(), entry[support].ravel(), pairs[q, 0] * k + r, pairs[q, 1] * k + r]
    cols = [np.repeat(np.arange(m), k), m + np.repeat(np.arange(support.size), k), lam, lam]
    vals = [np.ones(m * k), -loss[support].ravel(), -np.ones(q.size), np.exp(bounds)[q]]
    if minimax:  # sum mu = 1
        rows.append(np.full(support.size, m * k))
        cols.append(m + np.arange(support.size))
        vals.append(np.ones(support.size))
    n_rows, n_cols = m * k + (1 if minimax else 0), m + support.size + count * k
    matrix = sparse.csc_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_rows, n_cols))
    rhs = np.zeros((m, k)) if minimax else problem.weights[:, None] * loss
    arrays = LpArrays(
        matrix,
        cost=np.r_[-np.ones(m), np.zeros(n_cols - m)],  # HiGHS minimises: -sum pi
        col_lower=np.r_[np.full(m, -np.inf), np.zeros(n_cols - m)],
        col_upper=np.full(n_cols, np.inf),
        row_lower=np.r_[np.full(m * k, -np.inf), np.ones(n_rows - m * k)],
        row_upper=np.r_[rhs.ravel(), np.ones(n_rows - m * k)],
    )
    return DualLP(arrays, rhs, m + np.arange(support.size))


def certified_lower_bound(problem: FiniteQuery | ReducedMinimaxLP, dual: DualLP, columns: np.ndarray) -> float:
    """A lower bound on the optimum from any solver's dual values, made exactly feasible first.

    Clip ``mu`` and ``lam`` to >= 0 and scale them so ``sum mu = 1`` (minimax; every row is
    homogeneous in them, so scaling keeps feasibility); then the largest feasible
    ``pi_a = min_r (c[a, r] - [rest of row (a, r)])`` gives a dual-feasible point, and by weak
    duality ``sum pi`` bounds every private mechanism's objective from below.

    The bound holds in exact arithmetic for the LP as built (its float64 coefficients
    ``e^eps``), not only in floating point: until 2026-11-29 it was summed in doubles and
    could sit a rounding above what its dual point proves (at epsilon = 30, where
    ``e^eps lam`` terms of 1e12 cancel, 2e-17 above). The rows are formed in extended
    precision (``np.longdouble``; where that is a double, as on some platforms, the
    allowance grows and the bound stays valid), each ``pi_a`` is lowered by
    :func:`_rounding_allowance` (and, for the average objective, by the rounding of its stored
    ``c = w L``) and rounded down to a double, the sum is taken exactly rounded
    (``math.fsum``), and for minimax it is divided by the stored ``mu``'s exact sum (the point
    scaled by it is feasible for ``sum mu = 1``), each step rounded the safe way.
    """
    m, k = problem.size
    z = np.asarray(columns, dtype=float).copy()
    z[m:] = np.clip(z[m:], 0.0, None)
    if dual.mu_columns.size:
        total = z[dual.mu_columns].sum()
        if total <= 0:
            return -np.inf
        z[m:] /= total
    z[:m] = 0.0
    wide = z.astype(np.longdouble)
    matrix = dual.matrix.astype(np.longdouble)
    rest = (matrix @ wide)[: m * k]
    rhs = dual.rhs.ravel().astype(np.longdouble)
    # the average objective's c = w L is stored as a double: its rounding too (the objective is the exact product)
    stored = np.abs(rhs) * np.finfo(float).eps
    rows = rhs - rest - _rounding_allowance(matrix, wide, rhs, m * k) - stored
    pi = np.min(rows.reshape(m, k), axis=1)
    if not np.isfinite(pi).all():
        return -np.inf
    pi = np.nextafter(pi.astype(float), -np.inf)  # the double below each extended value
    low = _interval(math.fsum(pi.tolist()))[0]
    if not dual.mu_columns.size:
        return low
    mu_low, mu_high = _interval(math.fsum(z[dual.mu_columns].tolist()))
    return _down(low / mu_high if low >= 0 else low / mu_low)


def _rounding_allowance(matrix: sparse.csc_array, z: np.ndarray, rhs: np.ndarray, rows: int) -> np.ndarray:
    """An upper bound on the error of each of the first ``rows`` entries of ``rhs - A z`` formed
    in ``z``'s precision, against exact arithmetic on the same stored numbers: a dot product of
    t terms is within ``gamma_t sum |terms|`` of exact (Higham, Accuracy and Stability of
    Numerical Algorithms, Eq. 3.5) and the subtraction adds a term; taken twice over, which
    also covers the rounding of this bound and of the subtraction it enters."""
    magnitude = (abs(matrix) @ np.abs(z))[:rows] + np.abs(rhs)
    terms = np.bincount(matrix.indices, minlength=matrix.shape[0])[:rows] + 2
    unit = np.finfo(z.dtype).eps / 2
    return 2 * terms * unit / (1 - terms * unit) * magnitude


def _interval(value: float) -> tuple[float, float]:
    """The floats one unit in the last place either side of ``value``, a correctly rounded
    result (``math.fsum``), between which the exact value lies."""
    return float(np.nextafter(value, -np.inf)), float(np.nextafter(value, np.inf))


def _down(value: float) -> float:
    """``value`` (one rounded division) stepped down past its rounding error."""
    return float(np.nextafter(np.nextafter(value, -np.inf), -np.inf))


#: A dataset joins the relaxation's subset when its row-sum or minimax dual is at least this
#: fraction of the largest. Measured on the 1044 graphs (interior-point duals, epsilon = 2):
#: 1e-5 keeps 72 datasets and leaves the bound 1.3e-6 below the interior point's objective,
#: 1e-7 keeps 101 and comes within 5e-8, 1e-8 keeps 154 and gains 4e-9 more, but its LP took
#: 5-7 times as long (by simplex).
RELAXATION_SUPPORT = 1e-7
#: The relaxation is tried only when the certified gap (relative) is larger than this.
GAP_TO_TIGHTEN = 1e-9


@dataclass(frozen=True)
class ReducedMinimaxLP:
    """A minimax LP on fewer rows than the problem's datasets (:class:`DatasetRelaxation`,
    :class:`DatasetQuotient`): one loss row per LP row, the LP rows in the side
    information, and privacy pairs between LP rows with their log-bounds. It quacks like a
    :class:`FiniteQuery` for :func:`build_dual_lp` and :func:`certified_lower_bound`."""

    loss_matrix: np.ndarray
    side_information: tuple[int, ...]
    pairs: np.ndarray
    bounds: np.ndarray
    objective: ClassVar[str] = "minimax"

    @property
    def size(self) -> tuple[int, int]:
        return self.loss_matrix.shape

    def privacy_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        return self.pairs, self.bounds

    @property
    def privacy_rows(self) -> int:
        """Privacy rows of this LP: pairs x outputs (what :data:`CROSSOVER_ROWS` is measured in)."""
        return len(self.pairs) * self.size[1]


@dataclass(frozen=True, kw_only=True)
class DatasetRelaxation(ReducedMinimaxLP):
    """The minimax LP on a subset S of the datasets: a relaxation, so its optimum is a lower bound.

    Restrict any private mechanism of the full problem to the rows of S: the rows still sum
    to 1, the losses are the same, and chaining its privacy rows along a path from a to b gives
    ``x[a, r] <= e^w(a, b) x[b, r]`` with w the shortest path over the privacy pairs weighted
    by their log-bounds (the hop distance times epsilon on a neighbour graph). So it is
    feasible here, and its worst loss over S is at most its worst loss over all datasets.
    The LP's dual explains when the bound is exact: a full dual solution that vanishes
    (``pi = mu = 0``) outside S routes its privacy multipliers through the other datasets
    along shortest paths, which is this LP's dual; so if S holds the support of an optimal
    dual, this LP's optimum *is* the full optimum (``tests/programs/test_finite_query.py``
    checks both). Pairs with a third member of S on a shortest path between them are left out:
    the two shorter pairs imply them (and leaving out a pair can only weaken a relaxation).
    """

    datasets: np.ndarray  # indices into the problem's universe, one per LP row

    @classmethod
    def of(cls, problem: FiniteQuery, datasets: np.ndarray, path_bounds: np.ndarray | None = None) -> "DatasetRelaxation":
        """The relaxation of a minimax ``problem`` to ``datasets`` (indices into its universe);
        ``path_bounds`` (:func:`_path_bounds` of ``datasets``) if already known."""
        datasets = np.asarray(datasets, dtype=np.int64)
        implied = _path_bounds(problem, datasets) if path_bounds is None else path_bounds
        a, b = np.nonzero(not_implied(implied, slack=1e-12))
        position = {int(d): i for i, d in enumerate(datasets)}
        side = tuple(position[int(d)] for d in problem.side_information if int(d) in position)
        return cls(problem.loss_matrix[datasets], side, np.column_stack([a, b]), implied[a, b], datasets=datasets)


def _path_bounds(problem: FiniteQuery, datasets: np.ndarray) -> np.ndarray:
    """w(a, b) for a, b in ``datasets``: the shortest path over the privacy pairs, weighted by their log-bounds."""
    m = problem.size[0]
    pairs, bounds = problem.privacy_pairs()
    graph = sparse.csr_array((bounds, (pairs[:, 0], pairs[:, 1])), shape=(m, m))
    return csgraph.dijkstra(graph, directed=True, indices=datasets)[:, datasets]


#: Hop reaches :func:`solve_by_quotients` merges datasets at, coarsest first. Each refines the
#: one before, so its optimum is no higher. Measured on the 1044 graphs (classes 286 / 379 /
#: 437; each optimum against the full LP's): reach 2 is exact at epsilon = 0.5; reach 3 at
#: epsilon = 1, but 6.6e-7 above at 2; reach 4 is within 2.3e-9 at 2 and 2.1e-5 above at 4.
#: Reach 3 is skipped: at epsilon = 1 it saves 10 s over reach 4, at 2 it costs 30 s.
QUOTIENT_REACHES = (2, 4)
#: A quotient's mechanism is kept when its certified gap (relative) is at most this: the
#: full route's own gaps on the 1044 graphs are 1.4e-9, 8.7e-9 and 9.6e-8 at epsilon = 0.5,
#: 1 and 2 (and reach 3's 6.6e-7 excess at epsilon = 2 is refused).
QUOTIENT_GAP = 1e-7
#: Quotients are tried only when the full LP has more privacy rows than this (below it the
#: full route takes a few seconds: the 156 six-node graphs, 18,272 rows, 1-2.6 s).
QUOTIENT_ROWS = CROSSOVER_ROWS
#: Give up on quotients when their duals weigh on more datasets than this (certifying them
#: needs the relaxation to those datasets, which grows slow; the 1044 graphs at epsilon = 4
#: and reach 2: 336 datasets, and that quotient is 0.06% above the optimum).
QUOTIENT_SUPPORT = 200
#: ... or when a reach leaves a gap (relative) above this: the next is unlikely to close it.
QUOTIENT_HOPELESS = 1e-3


def loss_classes(problem: FiniteQuery) -> np.ndarray:
    """Each dataset's class when datasets are merged by loss row and side-information
    membership (for a query's own loss: by value). Returns class indices 0..q-1."""
    m = problem.size[0]
    watched = np.zeros((m, 1))
    watched[list(problem.side_information)] = 1.0
    return np.unique(np.hstack([problem.loss_matrix, watched]), axis=0, return_inverse=True)[1].ravel()


def distance_classes(problem: FiniteQuery, reach: int) -> np.ndarray:
    """Each dataset's class when datasets are merged by what they see within ``reach`` hops.

    Two datasets share a class when they share their :func:`loss_classes` class and the hop
    distance, capped at ``reach``, to the datasets of every such class (for a query's own
    loss: to every value of f). Returns class indices 0..q-1.
    """
    groups = loss_classes(problem)
    hops = problem.universe.hops
    near = np.column_stack([hops[:, groups == g].min(axis=1) for g in range(groups.max() + 1)])
    profile = np.column_stack([groups, np.minimum(near, reach)])
    return np.unique(profile, axis=0, return_inverse=True)[1].ravel()


class _ClassRows:
    """What a quotient's rows mean: one row per class of datasets (``classes``: each dataset's class)."""

    classes: np.ndarray

    def lift(self, rows: np.ndarray) -> np.ndarray:
        """The mechanism on the datasets: each dataset gets its class's row."""
        return rows[self.classes]


@dataclass(frozen=True, kw_only=True)
class DatasetQuotient(ReducedMinimaxLP, _ClassRows):
    """The minimax LP with datasets merged into classes (one row per class): a restriction, so
    its optimum is an upper bound, and its rows lifted to the datasets are a private mechanism.

    Class c and c' get a privacy pair when any of their members do, with the smallest
    log-bound among them; so for every pair (a, b) of the full problem the lifted rows meet
    ``x[a, r] <= e^eps_ab x[b, r]`` (with equality of rows inside a class), and since
    members share their loss row and side-information membership, the lifted mechanism's
    objective is the quotient's. It is exact when some optimal mechanism is constant on the
    classes; :func:`solve_by_quotients` checks that with a certified lower bound instead of
    assuming it.
    """

    classes: np.ndarray  # each dataset's class: its LP row

    @classmethod
    def of(cls, problem: FiniteQuery, classes: np.ndarray) -> "DatasetQuotient":
        """The quotient of a minimax ``problem`` by ``classes`` (one index 0..q-1 per dataset; members must
        share their loss row and side-information membership, as :func:`distance_classes` ensures)."""
        classes = np.asarray(classes, dtype=np.int64)
        pairs, bounds = problem.privacy_pairs()
        a, b = classes[pairs[:, 0]], classes[pairs[:, 1]]
        keep = a != b
        a, b, w = a[keep], b[keep], bounds[keep]
        order = np.lexsort((w, b, a))  # by pair, smallest bound first
        a, b, w = a[order], b[order], w[order]
        first = np.ones(len(a), dtype=bool)
        first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
        representative = np.unique(classes, return_index=True)[1]
        side = tuple(int(c) for c in np.unique(classes[list(problem.side_information)]))
        return cls(problem.loss_matrix[representative], side, np.column_stack([a[first], b[first]]), w[first], classes=classes)


@dataclass(frozen=True)
class ValueQuotient(_ClassRows):
    """The LP restricted to mechanisms whose row depends on a dataset only through its
    :func:`loss_classes` class (its value, for a query's own loss), as a finite_query
    problem of its own: one dataset per class, neighbours where any members are, the summed
    prior (average) or the classes holding side information (minimax).

    Any private mechanism that is constant on the classes (the staircase, Theorem 4's
    utility-first rule, any mechanism of f(x) alone) gives a private mechanism of the
    quotient with the same objective, and every private mechanism of the quotient, lifted,
    is private for the datasets (a neighbouring pair of datasets lies in a neighbouring
    pair of classes, or in one class, whose rows are equal) with the same objective. So the
    quotient's optimum is the best such mechanism: above the LP optimum, below every
    value-based construction. Needs ``privacy = "neighbours"`` (a metric's smallest
    distance between classes need not be a metric).
    """

    problem: FiniteQuery | None  # None when every dataset is in one class
    classes: np.ndarray
    loss_rows: np.ndarray  # one per class

    @classmethod
    def of(cls, problem: FiniteQuery) -> "ValueQuotient":
        classes = loss_classes(problem)
        representative = np.unique(classes, return_index=True)[1]
        rows = problem.loss_matrix[representative]
        edges = class_edges(problem, classes)
        if len(representative) == 1:
            return cls(None, classes, rows)
        side = sorted({int(c) for c in classes[list(problem.side_information)]})
        spec = {"universe": Universe.from_edges(problem.universe.values[representative], edges,
                                                source=f"classes of {problem.universe.source}"),
                "epsilon": problem.epsilon, "outputs": problem.outputs, "objective": problem.objective,
                "loss": problem.loss if isinstance(problem.loss, str) else rows}
        if problem.objective == "average":
            spec["prior"] = np.bincount(classes, weights=problem.weights, minlength=len(representative))
        elif len(side) < len(representative):
            spec["side_information"] = side
        return cls(FiniteQuery(**spec), classes, rows)

    def single_row(self) -> np.ndarray:
        """The optimum when there is one class (no privacy row binds): all mass on its cheapest output."""
        row = np.zeros((1, self.loss_rows.shape[1]))
        row[0, int(np.argmin(self.loss_rows[0]))] = 1.0
        return row


def class_edges(problem: FiniteQuery, classes: np.ndarray) -> np.ndarray:
    """Pairs (c, c'), c < c', of classes holding a neighbouring pair of datasets."""
    a, b = classes[problem.universe.neighbours.T]
    keep = a != b
    pairs = np.column_stack([np.minimum(a, b), np.maximum(a, b)])[keep]
    return np.unique(pairs, axis=0) if len(pairs) else pairs.reshape(0, 2)


def solve_by_quotients(problem: FiniteQuery, rows: int, start: float) -> LPResult | None:
    """The LP solved on ever finer :class:`DatasetQuotient` s, kept once certified within :data:`QUOTIENT_GAP`.

    For each reach of :data:`QUOTIENT_REACHES`: solve the quotient by :func:`distance_classes`
    (through its dual, as the full LP), lift its rows, and certify them with the relaxation
    to the datasets where the quotient's duals weigh (:func:`relaxation_lower_bound`, each
    dataset weighing as its class). Returns ``None`` (the caller solves the full LP) when no
    reach is certified close enough, when the quotient is not at most half the full LP, or when
    its duals weigh on more than :data:`QUOTIENT_SUPPORT` datasets. The quotients do not depend
    on each other, so with two or more cores they are solved at once, each in a child process
    (:func:`_quotient_solves`), and read in order of reach: the answer is the one a solve
    after another would give, sooner. On the 1044 graphs (2 cores,
    ``benchmarks/finite_query.py``) reach 2 (286 classes, 84,404 privacy rows) is kept at
    epsilon = 0.5 and reach 4 (437 classes) at 1 and 2; at epsilon = 4 reach 2's duals weigh
    on 336 datasets and the full LP is solved.
    """
    quotients = []
    for reach in QUOTIENT_REACHES:
        quotient = DatasetQuotient.of(problem, distance_classes(problem, reach))
        if 2 * quotient.privacy_rows > rows:
            break
        quotients.append(quotient)
    duals = [build_dual_lp(quotient) for quotient in quotients]
    solves = _quotient_solves(duals, [q.privacy_rows <= CROSSOVER_ROWS for q in quotients])
    try:
        for quotient, dual, solve in zip(quotients, duals, solves):
            outcome = solve()
            if outcome is None or not outcome.optimal:
                return None
            q, k = quotient.size
            mechanism = quotient.lift(-outcome.row_dual[: q * k].reshape(q, k))
            objective = max(-outcome.objective, problem.objective_of(mechanism))
            weight = quotient.lift(dual_weights(quotient, dual, outcome.col_value))
            if (weight > RELAXATION_SUPPORT).sum() > QUOTIENT_SUPPORT:
                return None
            bound, datasets = relaxation_lower_bound(problem, weight)
            gap = (objective - bound) / max(abs(objective), 1e-300)
            if gap <= QUOTIENT_GAP:
                return LPResult(mechanism, objective, bound, rows, time.perf_counter() - start, datasets, q)
            if gap > QUOTIENT_HOPELESS:
                return None
        return None
    finally:
        for solve in solves:
            solve.cancel()


#: Solve the quotients in child processes (one per quotient, when there are two or more
#: quotients and cores): the 1044 graphs at epsilon = 1 and 2, where reach 4 is kept, take
#: the time of reach 4 instead of reach 2 plus reach 4 (35 and 41 s against 49 and 63 s in
#: turn; 2 cores, ``benchmarks/finite_query.py --atlas7-in-turn``), for two interpreters'
#: memory (peaks of about 300 MiB against 26). ``False`` solves them one after another in
#: this process.
QUOTIENT_CHILDREN = True


class _QuotientSolve:
    """A quotient's dual being solved: call it for the :class:`HighsOutcome` (``None`` if the
    solve failed), :meth:`cancel` it when its answer is no longer needed."""

    def __init__(self, dual: DualLP, crossover: bool, child: bool) -> None:
        self._dual, self._options = dual, _interior_point_options(crossover)
        self._child = ChildSolve(dual.arrays, self._options) if child else None
        self._cancelled = False

    def __call__(self) -> HighsOutcome | None:
        if self._child is not None:
            outcome = self._child.result()
            if outcome is not None:
                return outcome
        # no child, or it failed (killed, out of memory): solve here
        return None if self._cancelled else solve_here(self._dual.arrays, self._options)

    def cancel(self) -> None:
        self._cancelled = True
        if self._child is not None:
            self._child.cancel()


def _quotient_solves(duals: list[DualLP], crossover: list[bool]) -> list[_QuotientSolve]:
    """Start the solves of ``duals``: in child processes when :data:`QUOTIENT_CHILDREN` is set and
    there are at least two duals and two cores, else lazily, in this process, when called."""
    child = QUOTIENT_CHILDREN and len(duals) > 1 and available_cores() > 1
    return [_QuotientSolve(dual, x, child) for dual, x in zip(duals, crossover)]


def dual_weights(problem: FiniteQuery | ReducedMinimaxLP, dual: DualLP, columns: np.ndarray) -> np.ndarray:
    """How much each dataset weighs in dual values ``columns``: its |row-sum dual| or minimax
    dual, whichever is larger, both relative to their largest (what :func:`relaxation_lower_bound` ranks by)."""
    m = problem.size[0]
    weight = np.abs(np.asarray(columns[:m], dtype=float))
    weight = weight / weight.max() if weight.max() > 0 else weight
    mu = np.clip(np.asarray(columns, dtype=float)[dual.mu_columns], 0.0, None)
    if mu.max(initial=0.0) > 0:
        np.maximum.at(weight, np.array(problem.side_information), mu / mu.max())
    return weight


def relaxation_lower_bound(problem: FiniteQuery, weight: np.ndarray,
                           support: float = RELAXATION_SUPPORT) -> tuple[float, int]:
    """A certified lower bound from the LP on the datasets whose ``weight`` (:func:`dual_weights`) exceeds ``support``.

    An interior point's duals are near the optimal face's centre, so they name the datasets
    an optimal dual needs (:class:`DatasetRelaxation`) while their own bound, which sums every
    row's tiny violation (:func:`certified_lower_bound`), stays loose: on the 1044 graphs at
    epsilon = 2 and 4 it sits 3.5e-6 and 2e-5 below the interior point's objective; the
    relaxation's, 5e-8 and 7e-7. The subset shrinks (by weight) until its LP has at most
    :data:`CROSSOVER_ROWS` privacy rows, so it is solved to a vertex. Returns the bound and
    the subset's size (``(-inf, 0)`` if the relaxation's LP is not solved).
    """
    ranked = np.argsort(-weight, kind="stable")
    count = int((weight > support).sum())
    chosen = np.sort(ranked[:count])
    path_bounds = _path_bounds(problem, chosen)  # smaller subsets read theirs from it
    relaxation = DatasetRelaxation.of(problem, chosen, path_bounds)
    while count > 1 and relaxation.privacy_rows > CROSSOVER_ROWS:
        count = int(count * 0.8)
        subset = np.sort(ranked[:count])
        at = np.searchsorted(chosen, subset)
        relaxation = DatasetRelaxation.of(problem, subset, path_bounds[np.ix_(at, at)])
    if not relaxation.side_information:
        return -np.inf, 0
    sub = build_dual_lp(relaxation)
    outcome = solve_here(sub.arrays, _interior_point_options(crossover=True))
    if not outcome.optimal:
        return -np.inf, 0
    return certified_lower_bound(relaxation, sub, outcome.col_value), count


def _interior_point_options(crossover: bool) -> dict[str, object]:
    """HiGHS's interior point with dpopt's tolerances, followed by crossover or not."""
    return {**HIGHS_OPTIONS, "solver": "ipm", "run_crossover": "on" if crossover else "off"}


def loss_scale(loss: np.ndarray) -> float:
    """1, or the power of two at most the largest loss when that lies outside
    ``[2**-UNIT_RANGE, 2**UNIT_RANGE]`` (:func:`dpopt.solvers.solver_unit`): HiGHS refused outputs
    at +-1e15 under absolute loss ("Empty") and dropped the entries of values 1e-13 apart.
    Dividing by it is exact, and so is multiplying the scaled LP's objective and bound back."""
    return solver_unit(float(np.max(loss)) if loss.size else 0.0)


class ScaledLoss:
    """A problem seen with its loss matrix divided by ``scale`` (a power of two); everything
    else (universe, privacy pairs, side information, weights) is the problem's own. The LP's
    mechanism is the same for any positive scale; its objective and bounds scale with it."""

    def __init__(self, problem: FiniteQuery, scale: float) -> None:
        self._problem = problem
        self.scale = scale
        self.loss_matrix = problem.loss_matrix / scale

    def __getattr__(self, name: str) -> Any:
        return getattr(self._problem, name)

    def objective_of(self, mechanism: np.ndarray) -> float:
        """The problem's objective of ``mechanism`` in the scaled units."""
        return self._problem.objective_of(mechanism) / self.scale


#: Largest m |R|^2 for which :func:`undominated_outputs` compares every pair of output columns.
DOMINANCE_WORK = 2e8


def undominated_outputs(loss: np.ndarray) -> np.ndarray:
    """Indices of the outputs no other output dominates (column-wise <= loss, < somewhere or an
    earlier copy): the LP's optimum on these alone is the full optimum, exactly.

    Privacy rows ``x[a, r] <= e^eps x[b, r]`` hold column by column and are closed under
    sums, so moving a dominated column's mass onto a kept output that dominates it (one
    exists: dominance is a strict partial order) keeps every row and loses no loss. Outputs
    far outside the values (+-1e15 beside values 0..8 under absolute loss) left the LP with
    losses 15 orders apart, which no solver resolved (HiGHS 6.06, SCS 4.67 for a minimax optimum of 2.02).
    All outputs are kept when the comparison would exceed :data:`DOMINANCE_WORK`.
    """
    m, k = loss.shape
    if k < 2 or m * k * k > DOMINANCE_WORK:
        return np.arange(k)
    dominated = np.zeros(k, dtype=bool)
    index = np.arange(k)
    for r in range(k):
        column = loss[:, [r]]
        below = np.all(loss <= column, axis=0) & (np.any(loss < column, axis=0) | (index < r))
        below[r] = False
        dominated[r] = bool(below.any())
    return index[~dominated]


class OutputSubset:
    """A problem seen on a subset of its outputs (:func:`undominated_outputs`); everything else is
    the problem's own. Its mechanisms have ``len(kept)`` columns; :meth:`embed` puts them back."""

    def __init__(self, problem: FiniteQuery, kept: np.ndarray) -> None:
        self._problem = problem
        self.kept = kept
        self.loss_matrix = problem.loss_matrix[:, kept]
        self.loss = self.loss_matrix  # a table: what a quotient of this problem must carry
        self.outputs = problem.outputs[kept]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._problem, name)

    @property
    def size(self) -> tuple[int, int]:
        return self.loss_matrix.shape

    def objective_of(self, mechanism: np.ndarray) -> float:
        return self._problem.objective_of(self.embed(mechanism))

    def embed(self, mechanism: np.ndarray) -> np.ndarray:
        """The problem's mechanism: these columns at their outputs, 0 elsewhere."""
        full = np.zeros((mechanism.shape[0], self._problem.size[1]))
        full[:, self.kept] = mechanism
        return full


def solve_finite_lp(problem: FiniteQuery) -> LPResult:
    """The LP optimum through its dual: HiGHS's interior point (+ crossover up to :data:`CROSSOVER_ROWS`).

    The dual has one row per entry x[a, r] and one column per privacy row, the shape
    HiGHS's interior point handles best here (the 1044-graph LP: about four minutes,
    against more than ten for the primal); the mechanism is the dual's row duals, and
    :func:`certified_lower_bound` turns the dual's columns into a certified lower bound. For
    minimax, if that bound is more than :data:`GAP_TO_TIGHTEN` (relative) below the optimum
    found, :func:`relaxation_lower_bound` is tried as well and the higher bound is kept. A
    minimax LP with more than :data:`QUOTIENT_ROWS` privacy rows is first tried on quotients
    (:func:`solve_by_quotients`); the full LP is solved only if none is certified.
    """
    start = time.perf_counter()
    rows = check_lp_size(problem)
    scale = loss_scale(problem.loss_matrix)
    if scale != 1.0:
        result = solve_finite_lp(ScaledLoss(problem, scale))  # type: ignore[arg-type]
        return dataclasses.replace(result, objective=result.objective * scale, lower_bound=result.lower_bound * scale)
    if problem.objective == "minimax" and rows > QUOTIENT_ROWS:
        merged = solve_by_quotients(problem, rows, start)
        if merged is not None:
            return merged
    m, k = problem.size
    dual = build_dual_lp(problem)
    options = _interior_point_options(crossover=rows <= CROSSOVER_ROWS)
    outcome = solve_here(dual.arrays, options)
    if not outcome.optimal:  # a cold retry by the dual simplex
        outcome = solve_here(dual.arrays, {**options, "solver": "simplex"})
    if not outcome.optimal:
        raise SolverError("HIGHS", outcome.status, "(finite_query lp, through its dual)")
    values = -outcome.row_dual[: m * k].reshape(m, k)
    columns = outcome.col_value
    objective = -outcome.objective
    bound, datasets = certified_lower_bound(problem, dual, columns), 0
    if problem.objective == "minimax" and objective - bound > GAP_TO_TIGHTEN * max(abs(objective), 1e-300):
        relaxed, size = relaxation_lower_bound(problem, dual_weights(problem, dual, columns))
        if relaxed > bound:
            bound, datasets = relaxed, size
    return LPResult(values, objective, bound, rows, time.perf_counter() - start, datasets)
