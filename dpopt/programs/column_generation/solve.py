"""The column-generation loop (:func:`solve_by_column_generation`) and what was measured on whole runs.

How a run goes
--------------
1. Where S does not reach both ends of 0..n, the problem on S's hull is solved instead
   and embedded (:mod:`~dpopt.programs.column_generation.side_information`).
2. Closed forms that certify end the run (:mod:`~dpopt.programs.column_generation.closed_forms`),
   then S in clusters too far apart to interact is solved cluster by cluster, and
   zero-one loss by its flow LP.
3. Otherwise the first master holds a band around the diagonal and what the starts
   predict (:mod:`~dpopt.programs.column_generation.starts`), or, for squared loss on a
   sparse S, the diagonal and the replies of the minimax game
   (:mod:`~dpopt.programs.column_generation.game`); it is solved as the loss
   form chooses (:meth:`~dpopt.programs.column_generation.forms.Form.first_strategy`: primal simplex, HiGHS's IPM + crossover,
   or Clarabel's interior point), later masters by warm primal simplex from HiGHS's basis,
   or, after interior masters, from a predicted basis or HiGHS from scratch.
4. Each round prices every column for the master's multipliers (a certified lower bound)
   and adds the ones that price out; the run stops when the master's optimum, checked
   against the exact loss of its remap where HiGHS's accuracy is in doubt, meets the
   bound to the tolerance.

Scattered S at alpha = 0.9, n = 10,000 (2026-11-25, session 4). The even counts and a
random 10% of the counts missed the issue's 20 s (absolute 24 / 25 s, squared > 125 s).
Absolute loss: (i) the pricing sweeps were O(n^2), 1.8 s a round, up to 18 s of a run;
each row's minimum is now found at its kernel-weighted median by one vectorised
bisection on closed-form partial sums (:func:`_price_absolute`, 0.02 s, equal to the
sweeps to 1e-13); (ii) the first master also holds each row's nearest counts of S
(:func:`side_neighbours`), where the rows walked a few columns a round from the band
(random 10%: 13 -> 5 rounds; squared loss from the band only, 85 -> 63 s); (iii) the even counts go to HiGHS's IPM first
(:attr:`_AbsoluteForm.INTERIOR_MAX_GAP`). Through the benchmark, the old code run in the
same session (a day this machine ran about 2x slower): random 10% 48 -> 12 s, the even
counts 37 -> 17.5 s. Squared loss is still slow there (the even counts 185 s, the
random 10% 81 s, one process). Measured and not adopted for it: HiGHS's IPM first on the
even counts (94 s for the first master, then 100+ s a round); Clarabel first on the random
10% (5.5 s, but its masters do not certify and the fallback from scratch took 122 s);
columns from uniform multipliers on S (their row minimisers are 2 / 6 / 13 columns from
the optimal support at the median / 90th / 99th percentile; slower); the mirrored
extension of :func:`extended_basis` for the even counts (their optimum at n0 = 2000 is
179.83, at n = 10,000 180 - 2.3e-6, and the conclusion then was that the ends do not
decouple; wrong: S = all's optimum moves just as much, 179.83 to 180 - 2.3e-6, and its
prediction works. What failed was S = all's pattern between the parts; the even counts'
own pattern predicts well, see "Periodic S" in :mod:`~dpopt.programs.column_generation.starts`);
windows of S solved apart and joined (each input must see a single window's rows within
~30 noise scales, and the windows' optimal faces disagree where they meet: the join was
20% above the bound); Wentges smoothing of the duals for pricing (absolute, random 10%:
more rounds, 24.6 -> 32 s); each row's next counts of S as extra priced columns (more
columns, no fewer rounds).

Over the issue's 20 s until session 11: a random 10% of n = 10,000, squared, alpha = 0.9 (28 s). Its
first master is HiGHS's interior point, 94 iterations (the last 40 take the gap from 1e-5
to 1e-12, ~5 s) and 2,456 crossover pivots, ~15 s; then warm rounds of 5,184, 7,787 and a
few hundred pivots. Measured this session and not adopted: every count between a row and
its nearest counts of S (up to 3 / 8 away) in the first master: the warm rounds fell to
6.3 / 8.6 s, but the first master took 26 / 61 s (111 / 128 iterations); HiGHS's
``ipm_optimality_tolerance`` (1e-6, 1e-8) did not change IPX's iterations on this master.
Bridged masters dualized (``ipx_dualize_strategy = 1``): 29 s against 21 s. Their second
round by warm primal or dual simplex instead of the interior point: 404 s / 87 s against 23 s.
Session 7 (2026-11-26, one process, baseline 28.7 s): where the time goes. The optimal
support has 10,641 entries inside S's hull, 1,828 of them absent from the first master,
and 1,639 of those lie in 6000..9993, where the multipliers are (mass above 1e-9 from
6486 on, 99% in 8457..9686). Nearly all are a whole row (median value 1) moved 2-10
counts off the diagonal to a count near, not in, S. The warm rounds' ~13,000 pivots are
those rows walking there; the first master's multipliers are too rough to send them in
one step. Not adopted: ``NEARBY_WIDTH`` 1 or 6 (29.1 / 32.3 s: the same pivots); primal
edge weights Dantzig or steepest edge (37.4 / 66.2 s); the first master dualized (IPX 50 s),
without presolve (16 s) or unscaled (13 s against 14 s, noise); Clarabel masters first
(5.8, 9.0, 11.2 s, then the dualized fallback from scratch 212 s). Windows: S cut into
four windows of 2500 counts with 300 counts of margin, each solved alone on its hull
(21 s together), gave a window bound 1.5e-7 below the optimum (its multipliers reach
3500 counts below their peak) and, joined, a remap 17% above it: the hull's ends move
rows inward for ~1000 counts (as at S = all), so the margins would have to be wider than
the windows.
Session 9 (2026-11-26, one process, same session): what any better start could gain. An
oracle first master holding the *optimal* support (the certified T's entries) with the band
and the side neighbours certified in one round, but took 19.1 s against 27.7 s for the
usual route (0.69x; the usual route took 23.5 s in a faster hour, so ~16 s): its interior
point alone costs about as much as the usual first master and its warm rounds together.
The columns priced from the *optimal* multipliers (each row's minimiser and NEARBY_WIDTH
neighbours, 89,928 columns) made a first master of 207 s (IPX), and 298 s in all; each
row's minimiser alone under those multipliers does not predict the support either (the
optimal multipliers leave many rows tied between two columns, and the optimal T mixes
them): a first master at 178.146, four rounds from scratch, 127 s. Nor does the optimal
support where the multipliers are (hull rows 5990..9991, 4,288 of its 10,641 entries, with
the band and side neighbours elsewhere): a first master at 178.146 again, two rounds, 37 s
(the full support: one round, 16.6 s in that hour). Every input of S must reach the
optimum's worst loss, so the rows far from the multipliers must move as well. So only a *primal*
prediction of the support could bring this cell under 20 s, and none is known for a
random S (no coarser problem has its pattern; windows of S interact, see above). Dual
simplex for the usual first master: 13.1 s against IPX's 10.7-13 s, then slower warm
rounds (32.5 s in all against 23.5 s). Cutting IPX short (``ipm_iteration_limit`` 60 of its
94 iterations, to cross over from a rougher point): HiGHS then stops with "iteration limit"
and no crossover, so no basis, and the retry solves the master again from scratch. HiGHS's
``simplex_update_limit`` (refactorisation every 500 or 2000 updates, default 5000) for the
warm rounds: 31.0 / 31.3 s against 33.0 s, within this hour's noise.
What makes the oracle's master cheap is how few columns it has: the optimal support and the
diagonal alone (band 0, no side neighbours) certify in one round in 2.1 s; with the side
neighbours 11.0 s; with band 1 as well 16.6 s (the usual route: 30.1 s in that hour). The
interior point's cost is the alternative columns (a large, degenerate optimal face), so a
primal predictor should hand over a *minimal* column set. Lean masters without one do not
work: a loop of masters from scratch holding the diagonal, the last support and each row's
minimiser +-1 certifies n = 1000 in 14 rounds (2.9 s; 26 rounds and 2.3 s with the minimiser
alone), but at n = 10,000 stays at the geometric mechanism's 180 for 30 rounds (every input
must improve at once), and after the usual first master creeps (178.27, 178.19, 178.12 in
14-32 s a master).
Session 10 (2026-11-26, one process): the *tie-aware* prediction from the optimal multipliers,
both integers around each row's continuous minimiser (floor and ceil of r + m1 / m0, so rows
tied between two columns keep both; 2 columns a row) with the diagonal. At n = 2000 it holds
the whole optimal support (2,119 entries) and certifies in one round, 0.42 s against 2.65 s.
At n = 10,000 it misses 5,257 of the 10,641 optimal entries: below ~6000 the optimal
multipliers vanish (m0 underflows; their mass starts at 6486), so the prices there say
nothing, yet those rows must move too (every input of S must get below the geometric
mechanism's 180). Its master stayed at 180 for 12 rounds (741 s). So a predictor needs the
multipliers' region from prices and the rest from feasibility at the optimum's level, and
the multipliers themselves before any master has been solved. Nor is feasibility there
cheap to guess: each row's best column under uniform multipliers on S (the min-average T,
one column a row) brings the mean loss over S to 166.9 but leaves inputs at up to 310.
HiGHS's direct-factorisation interior point, HiPO (highspy 1.15.1 with highspy-extras; the
1.16 wheel lacks it), for the first master of this cell: 38.7 s against IPX's 11.6 s, then
the same rounds.

Session 11 (2026-11-26): this cell now starts from the minimax game's replies
(:mod:`~dpopt.programs.column_generation.game`): 9.4 s in one process, 9.8 s through the
benchmark. Before that, measured and not adopted (one process, same session; the usual
route 32.7 s): where the
multipliers live decides the optimum. S cut to its counts >= 6000 (or >= 5000) has the
same optimum to 3e-12 (177.8924024; the multipliers' mass starts at 6488) and solves on
its hull in 8.5 s (9.9 s). Its optimal T on rows >= 6400, with the diagonal and band 1
and the side neighbours below 6400, as the full problem's first master (warm primal
rounds after it): 36,668 columns, a first master of 10.6 s at 178.146 (the rows below
the multipliers still have to move), certified in three rounds: 15.1 s, so 23.2 s with
the tail's solve. It needs the multipliers' region before any master (no cheap predictor
of it is known: windows of S have optima 176.2-177.9 and cost 2-3 s per 2000 counts),
so it was not adopted. Taking that region from the first master's multipliers instead
(S from 500 counts below their 0.1% quantile, 7716 on: 2.8 s, its T's 8,011 columns added
after round 1) gave 35.4 s against 32.5 s: round 2 reached 178.1459 as in the usual route,
the value every variant reaches once the multipliers' rows are right, and the rows below
them took the rest. Nor do windows of S solved on their hulls and joined: five
windows of 2000 counts (11.3 s) gave columns whose first master sat at 179.9997 (every
join must be re-routed; 15 rounds, 589 s in all); with 600 counts of margin trimmed off
(24.4 s) at 178.597, 7 rounds and 178 s in all.
S = all, squared, alpha = 0.99, n = 1000 (the usual route: two Clarabel masters, 1.30-1.38 s):
the tie-aware prediction from the *optimal* multipliers certifies in one round, 0.56 s, but
from the coarse problem's (n = 100, alpha^10) multipliers interpolated onto 0..n the rows'
continuous minimisers are off by 7.6 counts at the median and up to 37 (the optimal
multipliers are not unique: HiGHS's hold 12.5% of their mass in the first tenth of the
counts and none in the last), and the run took 4 rounds, 5.6 s.
Nor did a narrower coarse prediction (PREDICTED_WIDTH 0 / 1 / 2 for squared loss: 4, 4
and 3 rounds, 4.6-5.6 / 4.0 / 1.5-1.8 s against 1.2-1.5 s), the game's replies added to the
coarse start (still two rounds, 1.9-3.7 s), or a lean second master holding only the first
interior master's positive columns and the priced ones (n = 1000: 9,282 -> 8,021 columns,
1.03-1.18 s against 1.14-1.39 s, within noise; with values above 1e-8 only, 2,399 columns
and five rounds, 1.5-1.8 s; n = 5000: every column is positive, so nothing is dropped).

Session 12 (2026-11-26): the same cell certifies after one interior master from the widened
coarse start (:func:`~dpopt.programs.column_generation.starts.widened`), and that master is
folded onto mirror-symmetric remaps (:meth:`Master.solve_interior`): 0.80 s through the
benchmark. Clarabel's own settings did not help: its qdldl and faer solvers took the same
time (0.42-0.56 s for one master), tolerances 1e-6 to 1e-12 took 51-57 iterations, and
equilibration or presolve off changed nothing beyond noise.

Session 14 (2026-11-26): where S and the loss are mirror-symmetric, the master is held folded
onto mirror-symmetric remaps for the whole run (``Master(folded=True)``; "Folded masters" in
:mod:`~dpopt.programs.column_generation.master`), not only inside Clarabel's masters: one
HiGHS column per mirrored pair, half the convexity and loss rows. S = 10%..40% and 60%..90%
of n, absolute, alpha = 0.99, through the benchmark beside the previous code: n = 5000
13.2 -> 6.0 s (the last cell over issue 16's goals), n = 10,000 51 -> 12 s. Masters started
from a predicted basis (:func:`extended_basis`) stay unfolded.

Tried and not adopted: the optimal T of n/2 mapped onto n by scaling rows and columns
alike (2r +- 2, shifted +-1 or +-3): rounds 15 -> 11 but no time saved, because
n log(1/alpha) doubles, so the mapped support is wrong wherever it matters; per-round
interior point or dual simplex instead of warm primal simplex (n = 1000, alpha = 0.99:
12-27 s and 9-21 s against 7 s).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np

from dpopt.problems.count_query import CountQuery
from dpopt.programs.column_generation.closed_forms import identity_certificate, solve_zero_one_by_flow, two_count_bisection, two_count_threshold
from dpopt.programs.column_generation.forms import form_for
from dpopt.programs.column_generation.game import game_applies, game_columns
from dpopt.programs.column_generation.master import Master, normalised_multipliers
from dpopt.programs.column_generation.pricing import Pricing, price_columns
from dpopt.programs.column_generation.result import ABSOLUTE_GAP, ColumnGenerationResult, evaluated, solvers_of
from dpopt.programs.column_generation.side_information import CERTIFIED_FACTOR, embedded_result, hull_problem, solve_by_clusters
from dpopt.programs.column_generation.starts import SIDE_NEIGHBOURS, coarse_start, extended_basis, extension_plan, side_neighbours
from dpopt.validation import SolverError, check_int, check_real

#: When no column prices out, a gap within this multiple of the tolerance is HiGHS's
#: accuracy, not a missing column, and the loop stops (1e-10 x 5 < the 1e-9 certified gap).
SETTLED_FACTOR = 5.0
#: The basis's exact duals (one sparse LU, 0.02-0.5 s at n = 1000) are computed only when
#: HiGHS's duals leave the bounds within this multiple of the tolerance.
EXACT_DUALS_WITHIN = 100.0

#: How the masters started from a predicted basis (:func:`extended_basis`) are solved.
PREDICTED = ("predicted dual", "refactored dual")
#: Up to this n the predicted basis is tried after the first interior master that leaves a
#: gap (beyond it, after INTERIOR_ROUNDS of them, as before): at n = 16,000 (S = all,
#: squared, alpha = 0.9) the early prediction's dual simplex drifted as at 10,000, but the
#: re-solve on fresh factors ended "Unknown" and the cold interior point ran > 9 minutes.
#: Since an "Unknown" basis with no infeasibility is kept, the early prediction works there
#: too (2026-11-26, one process, same session): 84.5 s against 87.6 s, the same rounds
#: after the one interior master it saves (3.3 s). Within this machine's noise: not raised.
EARLY_EXTENSION_MAX_N = 10_000
#: Interior-point masters in a row before column generation goes on with HiGHS (cold
#: interior point + crossover, then warm primal simplex): where Clarabel's accuracy stalls
#: the gap (squared, alpha = 0.9, n = 10,000: 3e-8 for 10 rounds). Where a basis can be
#: predicted (:func:`extension_plan`) HiGHS takes over after the first.
INTERIOR_ROUNDS = 3


def _on_hull(
    initial: tuple[np.ndarray, np.ndarray] | None, problem: CountQuery, smaller: CountQuery
) -> tuple[np.ndarray, np.ndarray] | None:
    """The columns ``initial`` of ``problem`` as columns of its hull problem ``smaller`` (counts shifted, clamped)."""
    if initial is None:
        return None
    low = min(problem.support)
    rows, targets = (np.clip(np.asarray(part, dtype=np.int64) - low, 0, smaller.n) for part in initial)
    return rows, targets


def solve_by_column_generation(
    problem: CountQuery,
    *,
    tolerance: float = 1e-10,
    band: int | None = None,
    max_rounds: int = 500,
    progress: Callable[[dict[str, float]], None] | None = None,
    coarse: bool = True,
    flow: bool = True,
    hull: bool = True,
    split: bool = True,
    initial: tuple[np.ndarray, np.ndarray] | None = None,
    closed_forms: bool = True,
    fold: bool = True,
) -> ColumnGenerationResult:
    """The exact minimax-optimal mechanism as ``G T`` (see :mod:`dpopt.programs.column_generation`).

    Parameters
    ----------
    problem : CountQuery
    tolerance : float
        Stop when the master's optimum and the lower bound agree to
        ``tolerance * |optimum| + ABSOLUTE_GAP``.
    band : int, optional
        Initial master columns: ``|r' - r| <= band`` (default: the loss form's choice,
        1 or 2).
    max_rounds : int
        Cap on master solves; the result reports its bounds whether or not they met.
    progress : callable, optional
        Called after each round with a dict (round, columns, master, lower).
    coarse : bool
        Start from the columns a coarser problem predicts (:func:`coarse_start`) where
        that pays (small epsilon, absolute and squared loss), or else, for squared loss on
        a scattered S from n = GAME_FROM_N on, from the replies of the minimax game
        (:func:`~dpopt.programs.column_generation.game.game_columns`); False: the band alone.
    flow : bool
        Zero-one loss: solve the O(n) flow LP first (:func:`solve_zero_one_by_flow`) and
        return its result when certified; otherwise column generation starts from its
        support. False: column generation alone (an independent route, for tests).
    hull : bool
        Where S does not reach both ends of 0..n (named losses), solve the problem on the
        hull of S instead and embed it (:func:`hull_problem`, exact); False: the full
        problem (an independent route, for tests).
    split : bool
        Where S falls into clusters too far apart to interact within the tolerance, solve
        each alone and join them, bridged by the whole problem's master where they
        interact (:func:`solve_by_clusters`); False: never.
    closed_forms : bool
        Take the closed forms where they apply and certify (:func:`identity_certificate`,
        :func:`two_count_threshold`, :func:`two_count_bisection`); False: column generation
        (an independent route, for tests).
    fold : bool
        Where S and the loss are symmetric under r <-> n - r (and no basis is predicted by
        :func:`extended_basis`), hold the master folded onto mirror-symmetric remaps
        (:class:`Master` with ``folded``); False: never (an independent route, for tests).
    initial : (rows, targets), optional
        The first master's columns ``T[rows[k], targets[k]]`` (with the diagonal, or the
        band if given) instead of the band and the coarse start; on the hull problem,
        shifted and clamped to its counts.

    Raises
    ------
    SolverError
        If HiGHS cannot solve the first restricted master (a later failure returns
        the incumbent with its bounds and ``master_failure`` set).
    """
    tol = check_real(tolerance, "tolerance", "column generation", low=0.0, low_open=True)
    if band is not None:
        band = check_int(band, "band", "column generation", low=0)
    max_rounds = check_int(max_rounds, "max_rounds", "column generation", low=1)
    smaller = hull_problem(problem) if hull else None
    if smaller is not None:
        on_hull = solve_by_column_generation(smaller, tolerance=tol, band=band, max_rounds=max_rounds, progress=progress,
                                             coarse=coarse, flow=flow, split=split, closed_forms=closed_forms, fold=fold,
                                             initial=_on_hull(initial, problem, smaller))
        return embedded_result(problem, on_hull)
    if closed_forms:
        certified = (identity_certificate(problem, tolerance=tol) or two_count_threshold(problem, tolerance=tol)
                     or two_count_bisection(problem, tolerance=tol))
        if certified is not None:
            return certified
    if split:
        apart = solve_by_clusters(problem, tolerance=tol, max_rounds=max_rounds, progress=progress, fold=fold)
        if apart is not None:
            return apart
    flow_support = None
    if flow and problem.loss_name == "zero_one":
        flow_result, closed = solve_zero_one_by_flow(problem, tolerance=tol)
        if closed:
            return flow_result
        flow_support = flow_result.mechanism.remap.nonzero()
    start = time.perf_counter()
    plannable = extension_plan(problem) is not None  # whether extended_basis can apply at all
    master, coarse_started = _first_master(problem, tol, band, coarse, initial, flow_support, fold and not plannable)
    loop = _Rounds(problem, master, tol, plannable, coarse_started, warm_resolves=initial is None)
    whole = loop.run(max_rounds, progress, start)
    if split and initial is None and not whole.within(CERTIFIED_FACTOR * tol, ABSOLUTE_GAP):
        # Stopped above the bound (beyond the 1e-9 that count_query reports as optimal at the
        # default tolerance): S of a few far-apart parts, some narrower than a noise scale,
        # may certify apart (S = {16, 33, 4833}, alpha = 0.3, n = 5000: whole, 1.2e-7 above its
        # bound with squared loss; apart, the two-count closed form and a single count, exact).
        # Tried only now: apart it is slower where the whole certifies (alpha = 0.99: 4.8 -> 9.2 s).
        apart = solve_by_clusters(problem, tolerance=tol, max_rounds=max_rounds, progress=progress, fold=fold, narrow=True)
        if apart is not None and apart.gap < whole.gap:
            return dataclasses.replace(apart, seconds=time.perf_counter() - start, rounds=apart.rounds + whole.rounds)
    return whole


def _first_master(problem: CountQuery, tol: float, band: int | None, coarse: bool, initial: tuple[np.ndarray, np.ndarray] | None,
                  flow_support: tuple[np.ndarray, np.ndarray] | None, folded: bool) -> tuple[Master, bool]:
    """The first restricted master (see :func:`solve_by_column_generation` for the options) and
    whether its columns came from the coarse problem's (:func:`coarse_start`).

    ``folded`` where S and the loss are mirror-symmetric and no basis can be predicted (that
    prediction is not mirror-symmetric; see "Folded masters" in master.py).
    """
    n = problem.n
    master = Master(form_for(problem), folded=folded)
    predicted = coarse_start(problem, tolerance=tol) if coarse and initial is None else None
    coarse_started = predicted is not None
    if predicted is None and coarse and initial is None and game_applies(problem):
        predicted = game_columns(problem)
    if band is None:
        band = 0 if predicted is not None or initial is not None else master.form.initial_band()
    r = np.repeat(np.arange(n + 1), 2 * band + 1)
    rp = r + np.tile(np.arange(-band, band + 1), n + 1)
    inside = (rp >= 0) & (rp <= n)
    master.add_remap_columns(r[inside], rp[inside])
    after_coarse = SIDE_NEIGHBOURS.get(problem.loss_name)
    if after_coarse is not None and (after_coarse or predicted is None) and len(problem.support) < n + 1 and initial is None:
        master.add_remap_columns(*side_neighbours(problem))
    for columns in (predicted, initial, flow_support):
        if columns is not None:
            master.add_remap_columns(*columns)
    return master, coarse_started


class _Rounds:
    """The rounds of column generation on one master: solve it, bound it, add the columns that
    price out, until the bounds meet (:meth:`run`).

    Each master is solved by a *strategy* (see :meth:`Master.solve`): the form's first one,
    then warm re-solves (primal simplex, or HiGHS's interior point where the master was built
    from given columns: the bridged master's warm primal re-solves stalled, 18 s and 610 s with
    narrower free zones, for one round that the interior point does from scratch in about
    2 s); Clarabel's interior masters, INTERIOR_ROUNDS of them at most, hand over to HiGHS
    from scratch ("dualized ipm"), before which a predicted basis is tried once where one
    applies (:func:`extended_basis`).
    """

    def __init__(self, problem: CountQuery, master: Master, tol: float, plannable: bool, coarse_started: bool,
                 warm_resolves: bool) -> None:
        self.problem, self.master, self.tol, self.plannable = problem, master, tol, plannable
        self.support = np.array(problem.support)
        self.resolve = "primal" if warm_resolves else "ipm"
        self.strategy = master.form.first_strategy(coarse_started=coarse_started)
        self.refreshes = self.interior_rounds = 0
        self.best_lower, self.best_multipliers = -np.inf, None
        self.incumbent: np.ndarray | None = None  # T values of the last master solved
        self.polished = False  # whether incumbent was recomputed from the basis (basic_solution)
        self.exact_pricing: Pricing | None = None  # the pricing of the last polish's exact duals
        self.failure = ""
        self.extension_tried = False  # whether extended_basis was tried (once, before the fallback)
        # the prediction right after the first interior master, where that was measured to pay
        self.extendable = plannable and problem.n <= EARLY_EXTENSION_MAX_N
        self.refactored = False  # whether a predicted basis's solve was re-run on fresh factors
        self.history: list[dict[str, float]] = []

    def price(self, duals: np.ndarray) -> Pricing:
        """Price every column at the loss-row multipliers ``duals`` (normalised), keeping the best bound."""
        lam = np.zeros(self.problem.n + 1)
        lam[self.support] = normalised_multipliers(duals, self.support.size)
        pricing = price_columns(self.problem, lam, self.master.structure())
        if pricing.lower_bound > self.best_lower:
            self.best_lower, self.best_multipliers = pricing.lower_bound, lam
        return pricing

    def polish(self) -> bool:
        """Replace the incumbent by the basis's exact solution and price its exact duals."""
        exact = self.master.basic_solution()
        if exact is None:
            return False
        self.incumbent, exact_duals = exact
        self.exact_pricing = self.price(exact_duals)
        return True

    def add_priced(self, pricing: Pricing, allowed: float) -> int:
        """Add the columns that price out (row minimum below the master's); how many."""
        if pricing.potential <= allowed:
            return 0
        rows = np.flatnonzero(pricing.row_min < pricing.master_min - allowed / (self.problem.n + 1))
        added = self.master.add_remap_columns(rows, pricing.row_argmin[rows])
        if pricing.nearby is not None:
            extra = pricing.nearby[rows]
            added += self.master.add_remap_columns(np.repeat(rows, extra.shape[1]), extra.ravel())
        return added

    def exact_upper(self, values: np.ndarray) -> float:
        """The worst loss of the remap ``values`` (the master's columns), clipped and renormalised."""
        padded = np.concatenate([values, np.zeros(self.master.t_rows.size - values.size)])
        return float(evaluated(self.problem, self.master.remap(padded))[1].max())

    def run(self, max_rounds: int, progress: Callable[[dict[str, float]], None] | None, start: float) -> ColumnGenerationResult:
        """Up to ``max_rounds`` masters; the result holds the last one's remap and the best bound."""
        self.master.start_from_identity()
        objective = np.inf
        for round_number in range(1, max_rounds + 1):
            self._try_extension()
            try:
                objective, values, duals = self.master.solve("dual" if self.strategy == "predicted dual" else self.strategy,
                                                             checked=self.strategy in PREDICTED)
            except SolverError as exc:
                if self.incumbent is None:
                    raise
                # Every fallback failed on a later master (seen: squared loss, alpha = 0.9,
                # n = 5000). The last solved master's T is still a valid remap: return it
                # with its certified bounds instead of nothing.
                self.failure = str(exc)
                break
            self.incumbent, self.polished, self.exact_pricing = values, False, None
            solved_by = self._solved_by()
            allowed = self.tol * abs(objective) + ABSOLUTE_GAP
            objective, pricing = self._bound(objective, values, duals, solved_by, allowed, first=round_number == 1)
            record = {"round": round_number, "columns": self.master.t_rows.size, "master": objective, "lower": self.best_lower,
                      "solver": "CLARABEL" if solved_by == "interior" else "HIGHS"}
            self.history.append(record)
            if progress is not None:
                progress(record)
            if objective - self.best_lower <= allowed:
                break
            if self.strategy == "refactored dual":
                continue  # the same master again, before any column is added
            if not self._grow(pricing, allowed, objective, solved_by):
                break
        return self._result(objective, start)

    def _try_extension(self) -> None:
        """Before HiGHS from scratch ("dualized ipm"), once: a predicted basis, where one applies."""
        if self.strategy != "dualized ipm" or self.extension_tried:
            return
        self.extension_tried = True
        predicted_basis = extended_basis(self.problem, tolerance=self.tol)
        if predicted_basis is not None and self.master.install_basis(predicted_basis):
            # nearly dual optimal, primal infeasible near the ends: 847 dual simplex
            # pivots where primal simplex needed 10,935 (n = 10,000, alpha = 0.9)
            self.strategy = "predicted dual"
        elif self.interior_rounds < INTERIOR_ROUNDS:
            self.strategy = "interior"  # no prediction after all: the interior masters go on

    def _solved_by(self) -> str:
        """The strategy that solved the master just solved; sets the next round's strategy."""
        # without a basis after a simplex or IPM strategy, HiGHS failed and Clarabel solved it
        solved_by = self.strategy if self.master.has_basis or self.strategy == "interior" else "interior"
        self.strategy = self.resolve
        if solved_by == "interior":
            # no basis to warm-start from: more interior masters, then HiGHS from scratch
            self.interior_rounds += 1
            # where a basis can be predicted, it is tried after the first interior master
            more = self.interior_rounds < INTERIOR_ROUNDS and (self.extension_tried or not self.extendable)
            self.strategy = "interior" if more else "dualized ipm"
        return solved_by

    def _bound(self, objective: float, values: np.ndarray, duals: np.ndarray, solved_by: str, allowed: float,
               first: bool) -> tuple[float, Pricing | None]:
        """The master's objective as the stopping test should read it, and the pricing of new
        columns (None where the bounds already meet)."""
        pricing = None
        if first:
            # Most first masters are already optimal (every alpha <= 0.5 in the benchmark)
            # and their closing certificate needs the basis's exact duals: try those first.
            self.polished = self.polish()
        if objective - self.best_lower > allowed:
            # HiGHS's own duals choose the new columns: pricing with the exact ones can
            # stall at a gap just above the tolerance (a smooth table, n = 150, alpha =
            # 0.1: 1.007e-9 with no column pricing out)
            pricing = self.price(duals)
            if not self.polished and objective - self.best_lower <= EXACT_DUALS_WITHIN * allowed:
                # close: the basis's exact duals may close the gap HiGHS's tolerances leave
                self.polished = self.polish()
            if solved_by == "interior" and objective - self.best_lower <= EXACT_DUALS_WITHIN * allowed:
                # an interior optimum is only accurate to ~1e-10: the stopping test takes
                # the exact loss of the remap that would be returned
                objective = self.exact_upper(values)
        if objective - self.best_lower <= allowed and solved_by != "interior" and (self.master.form.gapped or solved_by in PREDICTED):
            # HiGHS's optimum can be off where chains carry tiny values across a gap of S
            # (n = 119, alpha = 0.75, squared, S = both ends: a master optimum reported below
            # the lower bound, and the remap's exact loss 4.4e-8 above it), so before
            # stopping, the exact loss of the remap that would be returned is checked
            # (only there: it costs ~1 s at n = 10,000). So is the dual simplex's from a
            # predicted basis: its updated factors can drift (S = all, squared, alpha = 0.9,
            # n = 10,000, after one interior master: "optimal" 1,191 pivots on, and the
            # basis's exact remap 1.9e-3 over on one row; afresh, 2 more pivots and 0.7 s).
            if not self.polished:  # the basis's exact remap (its duals are priced only if needed)
                exact_solution = self.master.basic_solution()
                if exact_solution is not None:
                    self.incumbent, self.polished = exact_solution[0], True
            exact = self.exact_upper(self.incumbent)
            if exact - self.best_lower > SETTLED_FACTOR * allowed:
                objective = exact
                pricing = self.price(duals)
                if solved_by == "predicted dual" and not self.refactored:
                    self.refactored, self.strategy = True, "refactored dual"
        return objective, pricing

    def _grow(self, pricing: Pricing, allowed: float, objective: float, solved_by: str) -> bool:
        """Add the columns that price out, or change how the next master is solved; False to stop."""
        added = self.add_priced(pricing, allowed)
        if added == 0 and self.master.form.gapped and self.exact_pricing is None and self.polish():
            # HiGHS's duals price nothing out, yet the gap is open: the basis's exact duals
            # may (S in two clusters bridged, n = 75, alpha = 0.6, squared: stuck 2e-7 apart)
            added = self.add_priced(self.exact_pricing, allowed)
        if added == 0 and solved_by == "interior" and not self.extension_tried and self.plannable:
            # the interior masters stalled short of the bound: the predicted basis before
            # HiGHS from scratch, as after INTERIOR_ROUNDS of them
            self.strategy = "dualized ipm"
            return True
        if added == 0:
            # No column can raise the bound by more than the tolerance, yet the bounds
            # disagree: the master is optimal only to HiGHS's dual tolerance (1e-10 on the
            # scaled LP; absolute loss, n = 200, alpha = 0.1 stops 5e-11 short with columns
            # worth 5e-13 pricing out). Within SETTLED_FACTOR x the tolerance that is
            # accepted; otherwise an interior-point solve from scratch, at most twice.
            if self.refreshes == 2 or objective - self.best_lower <= SETTLED_FACTOR * allowed:
                return False
            self.refreshes += 1
            # after an IPM + crossover, first the warm primal simplex from its basis (the
            # same IPM again gave the same point: bridged S = both ends, 2 x 4.3 s for nothing)
            gapped_ipm = self.master.form.gapped and solved_by.endswith("ipm") and self.master.has_basis
            self.strategy = "primal" if self.refreshes == 1 and gapped_ipm else "ipm"
        return True

    def _result(self, objective: float, start: float) -> ColumnGenerationResult:
        """The last solved master's remap (from its basis where that is exact) with the best bound."""
        if not (self.failure or self.polished):
            exact = self.master.basic_solution()
            self.incumbent = self.incumbent if exact is None else exact[0]
        # columns added after the last solved master are 0
        values = np.concatenate([self.incumbent, np.zeros(self.master.t_rows.size - self.incumbent.size)])
        mechanism, losses = evaluated(self.problem, self.master.remap(values))
        return ColumnGenerationResult(
            mechanism=mechanism,
            lower_bound=self.best_lower,
            upper_bound=float(losses.max()),
            rounds=len(self.history),
            columns=self.master.t_rows.size,
            master_objective=objective,
            row_losses=losses,
            seconds=time.perf_counter() - start,
            history=self.history,
            master_failure=self.failure,
            multipliers=self.best_multipliers,
            solver=solvers_of(record["solver"] for record in self.history),
        )
