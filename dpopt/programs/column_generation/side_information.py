"""Side information S with gaps: the hull of S, clusters of S solved apart, and bridged masters.

Side information: the hull of S (2026-11-25)
--------------------------------------------
Where S does not reach both ends of 0..n, the problem on S's hull [a, b] has the same
optimum (:func:`hull_problem`, exact for losses monotone in ``|i - r'|``) and loses the
rows outside [a, b], whose columns are proportional (a large optimal face). The coarse
means of such a problem jump where S begins and ends, and interpolation across a jump
mispredicts the rows inside it, so those rows also get the columns extrapolated from
either side (:func:`one_sided_means`). Absolute loss, alpha = 0.99, S = the middle 80%
(in-process, ``benchmarks/count_query.py --scale --side-cut 0.1``): n = 5000 29.9 -> 2.7 s
(one round instead of seven), n = 10,000 178 -> 6.6 s; squared n = 5000 21.5 -> 7.3 s,
n = 10,000 125 -> 18.5 s. At n = 1000 the hull problem has n = 800, whose end rows the
coarse start predicted up to 3 short (S = all at n = 800 took 1.8 s and four rounds,
against 0.5 s at n = 1000): a few columns further inward on the end rows (END_ROWS) took it
from 1.9 to 0.42 s. A wider boundary layer (the first and last 0.8 k rows with +-0.4 k
columns, and the corners ``T[0, 0]``, ``T[n, n]``) did as well at n = 800 and 1200 but
slowed S = all elsewhere (absolute, alpha = 0.99, n = 2000 +16%; alpha = 0.999, n = 2000
+16%, n = 5000 144 -> 283 s), so it is not used.

S with gaps (2026-11-25, alpha = 0.99, n = 5000, in-process unless said). Clarabel's
masters need 85-200 iterations where S has gaps (31 at S = all) and stop short of its
tolerances: even on a master holding the optimal support (+-1) of S = 0..500 and
4500..5000 it ran its 200 iterations (9 s) to an objective 2e-7 off, where HiGHS's IPM +
crossover certified the same master in one round, 7 s. So where S has a gap of
INTERIOR_MAX_GAP noise scales the first master goes to HiGHS (numbers at
:attr:`_ChainForm.INTERIOR_MAX_GAP`; S = 10%..40% and 60%..90% 31.6 -> 15.5 s absolute, a
random 10% of the counts 31 -> 7 s squared, S = 0..500 and 4500..5000 absolute 97 -> 41 s).
Where the gaps are so long that the clusters of S cannot reach each other within the
tolerance, each cluster is solved alone and the remaps are joined
(:func:`solve_by_clusters`, certified by the largest of the clusters' lower bounds): alpha =
0.9, n = 5000, S = 10%..40% and 60%..90% failed before ("Unknown" from every HiGHS route: the
chains carry values down to alpha^1000 across the gap) and now takes 3.7 s. Still slow: S =
0..500 and 4500..5000 (absolute 41 s, squared > 300 s): the coupling across that gap is
real at the certificate's tolerance (the optimum is 1.1e-8 relative above the left
cluster's alone: the left inputs see the gap's rows at alpha^2000 ~ 2e-9 times distances
of ~4000), so the clusters cannot be solved apart. A start from each cluster's own
optimum (its rows over its hull, the gap's rows its end row's main column, both clusters'
columns near the gap's middle) with a HiGHS first master took that case to 17.6 s (one
round; IPX "imprecise", then 17,747 clean-up simplex pivots) but left squared loss
uncertified (gap 3.7e-8 after 100 s) and slowed S = 10%..40% and 60%..90% (31 -> 35 s, 11
rounds), so it is not used.

Bridged clusters (2026-11-25). What made that start slow was not its columns but the
freedom of the gap's rows. Priced with the clusters' own multipliers, a row deep inside
the gap maps to the nearer cluster's edge (absolute loss: the cost is linear in r' across
the gap, so the row minimum sits at an edge; squared loss: a weighted mean that leaves the
edge only within a few noise scales of the switch), and such rows carry weights down to
alpha^2000. So :func:`solve_by_clusters` now cuts S at gaps of CLUSTER_GAP_SCALES noise
scales, solves the clusters alone and joins them, and where the join does not certify
(the clusters interact) it starts the whole problem's column generation from the joined
remap with every row deep inside a gap (and deep inside a cluster, away from the gap)
holding only its joined column and the diagonal (:func:`bridge_columns`); pricing still
adds any column anywhere, and the re-solves go to HiGHS's IPM from scratch (warm primal
simplex stalled on these masters: 18 s for one round that the IPM does in 2-3 s).
The multipliers of the two clusters, mixed, already bound the optimum to 1e-11 here: the
coupling is real but every row far from the switch has an obvious best column. Measured
(alpha = 0.99, one process): S = 0..n/10 and 9n/10..n, n = 5000: absolute 40 -> 4.9 s,
squared > 300 -> 7.5 s; n = 4000 9.4 -> 4.1 s / 23 -> 2.7 s; n = 3000 3.7 -> 3.1 s / 3.1 ->
2.5 s; n = 2000 (a gap of 16 scales) lost (1.2 -> 3.6 s), hence 20 scales; S = 10%..40% and
60%..90%, n = 10,000: absolute 86 -> 29 s, squared 40 -> 42 s (holding rows deep inside the
clusters took these from 36 and 61 s). S split into a part narrower than a noise scale is
not cut (two counts at n/4, 3n/4, n = 5000: 1.0 s whole, 3.8 s bridged). Where the bridged
master falls short or fails (short noise scales: alpha = 0.6, n = 75, a gap of 53 counts,
HiGHS "Unknown"), the whole problem is solved as before; that route fails on some of
those problems as well (chains carrying alpha^gap < 1e-12), and any master's stopping
test is now checked against the exact loss of the remap it would return (it had stopped
with HiGHS's optimum below the lower bound and the remap 4.4e-8 above it).

Bridged clusters, priced ahead (2026-11-26, session 6). S = 10%..40% and 60%..90% of n =
10,000 at alpha = 0.99 spent two interior-point masters of ~22 s on the bridged problem;
the columns the second one needed were the rows around the join mapping to weighted means
just inside either cluster (targets 2947..3000 and 5000..5052 on the hull). The clusters'
own multipliers, mixed (:func:`mixed_multipliers`: the bound is concave in the weights,
golden-section search per neighbouring pair), bound the whole problem almost as well as the
optimum does, so their row minimisers (:func:`mixed_columns`, only for rows between the
clusters whose best column the joined remap lacks) join the bridged master's first columns,
and the mixture's bound is kept as a lower bound: one master instead of two. And clusters
whose hull problems coincide (there: twice S = all on 0..2999) are solved once
(:func:`_solve_clusters`). Through the benchmark, old code in the same session, squared:
alpha = 0.99 63.9 -> 43.0 s (before the dedupe; in-process with it 39.8 s), alpha = 0.9
24.5 -> 13.0 s (in-process; no bridge there, the two clusters certify apart).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np
from scipy import sparse

from dpopt.mechanisms.geometric import column_weights
from dpopt.problems.count_query import CountQuery
from dpopt.programs.column_generation.forms import noise_scale
from dpopt.programs.column_generation.pricing import price_columns
from dpopt.programs.column_generation.result import ABSOLUTE_GAP, ColumnGenerationResult, evaluated, solvers_of
from dpopt.validation import SolverError

#: Losses for which moving an output into [min S, max S] never raises any loss on S
#: (monotone in |i - r'|), so :func:`hull_problem` applies.
HULL_LOSSES = ("absolute", "squared", "zero_one")


def hull_problem(problem: CountQuery) -> CountQuery | None:
    """The same problem on the hull [a, b] of S (counts shifted by -a), or None if S reaches 0 and n.

    Exact for losses monotone in ``|i - r'|``. For inputs i >= a the geometric mechanism's
    rows r <= a are proportional (``G[i, r] = g_r alpha^(i - r)``), and together they weigh
    ``alpha^(i - a) / (1 + alpha)``: exactly the end column of ``G_(b - a, alpha)`` at i - a
    (likewise r >= b). So for inputs in [a, b], G followed by clamping to [a, b] *is*
    ``G_(b - a)`` shifted by a. Hence (i) any ``G_(b - a) T'`` is ``G T`` for the T that
    repeats the first row of T' on rows r <= a and its last on rows r >= b (the same loss
    on S; :func:`embedded_result`), and (ii) any ``G T`` restricted to S is ``G_(b - a) T2`` with
    the first row of T2 a convex combination of the rows r <= a of T, and clamping the
    outputs of T2 into [a, b] never raises a monotone loss on S. Both problems have the
    same optimum, so the smaller one's lower bound is a lower bound here. The rows outside
    [a, b], whose columns are proportional (a large optimal face), are gone: absolute
    loss, alpha = 0.99, n = 10,000, S = 1000..9000 took 178 s on the full problem.
    """
    if problem.loss_name not in HULL_LOSSES:
        return None
    support = np.asarray(problem.support)
    low, high = int(support.min()), int(support.max())
    if (low, high) == (0, problem.n) or high - low < 1:
        return None
    inner = None if support.size == high - low + 1 else (support - low).tolist()
    return CountQuery(n=high - low, alpha=problem.alpha, loss=problem.loss_name, side_information=inner)


def spread_row(weights: np.ndarray, columns: np.ndarray, masses: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stochastic rows, one per weight, whose ``weights``-average is the distribution ``masses``
    on ``columns``: the monotone (quantile) coupling, at most ``len(weights) +
    len(columns) - 1`` entries. Returns (row, column, value) triples; a row of weight 0
    (underflow) gets its quantile's column alone.
    """
    order = np.argsort(columns, kind="stable")
    columns, masses = np.asarray(columns)[order], np.asarray(masses, dtype=float)[order]
    w = np.cumsum(weights) / np.sum(weights)
    p = np.cumsum(masses) / np.sum(masses)
    w[-1] = p[-1] = 1.0
    breaks = np.unique(np.clip(np.concatenate([[0.0], w, p]), 0.0, 1.0))
    middle = (breaks[:-1] + breaks[1:]) / 2
    rows = np.minimum(np.searchsorted(w, middle), w.size - 1)
    cols = np.minimum(np.searchsorted(p, middle), p.size - 1)
    length = np.diff(breaks)
    empty = np.setdiff1d(np.arange(w.size), rows)  # rows whose interval has no length
    rows = np.concatenate([rows, empty])
    cols = np.concatenate([cols, np.minimum(np.searchsorted(p, w[empty]), p.size - 1)])
    length = np.concatenate([length, np.ones(empty.size)])
    totals = np.bincount(rows, weights=length, minlength=w.size)
    return rows, columns[cols], length / totals[rows]


def embedded_result(problem: CountQuery, on_hull: ColumnGenerationResult) -> ColumnGenerationResult:
    """The hull problem's result as a mechanism on 0..n (see :func:`hull_problem`).

    The rows r <= a of T only act on S through their average weighted by ``g_r alpha^(a - r)``,
    which must be the hull remap's first row (likewise r >= b and its last row). Repeating
    that row on every one of them (as the proof does) would copy a dense end row up to n
    times (the zero-one flow's end rows hold hundreds of entries: S = 0..2500, n = 5000
    left millions of entries for the certificate to read), so :func:`spread_row` splits it
    among them instead, one or two entries a row. Outputs are shifted by a. The upper bound
    is recomputed exactly on 0..n; the lower bound carries over."""
    n, alpha, support = problem.n, problem.alpha, np.asarray(problem.support)
    low, high = int(support.min()), int(support.max())
    small = sparse.csr_array(on_hull.mechanism.remap)
    g = column_weights(n, alpha)
    inner = sparse.coo_array(small[1:-1])  # rows low + 1 .. high - 1
    rows, cols, vals = [inner.row + low + 1], [inner.col + low], [inner.data]
    for outside, end, distance in ((np.arange(low + 1), 0, low - np.arange(low + 1)),
                                   (np.arange(high, n + 1), small.shape[0] - 1, np.arange(high, n + 1) - high)):
        row = small[[end]]
        r, c, v = spread_row(g[outside] * alpha**distance, row.indices + low, row.data)
        rows.append(outside[r])
        cols.append(c)
        vals.append(v)
    remap = sparse.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n + 1, n + 1))
    mechanism, losses = evaluated(problem, remap)
    multipliers = None
    if on_hull.multipliers is not None:
        multipliers = np.zeros(n + 1)
        multipliers[low : high + 1] = on_hull.multipliers
    return dataclasses.replace(on_hull, mechanism=mechanism, upper_bound=float(losses.max()), row_losses=losses,
                               route=f"{on_hull.route} on the hull {low}..{high} of S", multipliers=multipliers)


#: S is cut into clusters where it has a gap of at least this many noise scales
#: 1 / (1 - alpha) (:func:`clusters_of`; alpha = 0.99: 2000 counts), each cluster spanning
#: at least one noise scale.
CLUSTER_GAP_SCALES = 20.0
#: In the bridged master (:func:`solve_by_clusters`) a row of T inside a gap keeps the
#: joined remap's row as its only column (with the diagonal) when it is more than
#: BRIDGE_MARGIN_SCALES noise scales from S and BRIDGE_JOIN_SCALES from the join.
BRIDGE_MARGIN_SCALES = 1.0
BRIDGE_JOIN_SCALES = 3.0
BRIDGE_INNER_SCALES = 5.0
#: A bridged result within this many times the tolerance is kept (at the default 1e-10 the
#: 1e-9 that :mod:`dpopt.methods.count_query` reports as optimal); otherwise the caller
#: solves the whole problem.
CERTIFIED_FACTOR = 10.0


#: S with parts narrower than a noise scale is cut only on request (``narrow``), and only into at
#: most this many parts (:func:`clusters_of`).
NARROW_CLUSTERS = 4


def clusters_of(problem: CountQuery, gap_scales: float = CLUSTER_GAP_SCALES, *, narrow: bool = False) -> list[np.ndarray]:
    """S cut at its gaps of at least ``gap_scales`` noise scales 1 / (1 - alpha).

    S stays whole if a part would span less than one noise scale (two counts far apart: the
    whole problem's master has two loss rows and is solved at once, 1.0 s against 3.8 s split
    at alpha = 0.99, n = 5000), unless ``narrow``: then S of three counts or more is cut into
    at most :data:`NARROW_CLUSTERS` parts however narrow (the retry of
    :func:`~dpopt.programs.column_generation.solve.solve_by_column_generation` when the whole
    problem stops above its bound).
    """
    support = np.asarray(problem.support)
    scale = noise_scale(problem.alpha)
    parts = np.split(support, np.flatnonzero(np.diff(support) >= gap_scales * scale) + 1)
    if all(part[-1] - part[0] >= scale for part in parts):
        return parts
    return parts if narrow and support.size > 2 and len(parts) <= NARROW_CLUSTERS else [support]


def bridge_columns(problem: CountQuery, parts: list[np.ndarray], joined: sparse.csr_array) -> tuple[np.ndarray, np.ndarray]:
    """The first columns of the bridged master: the joined remap, freed where it may move.

    Rows of T deep inside a gap (farther than BRIDGE_MARGIN_SCALES noise scales from S and
    BRIDGE_JOIN_SCALES from the join) keep only the joined remap's row: an optimal row there
    maps to the nearer cluster's edge, and such rows barely move any loss of S, which is
    what made masters over them slow. Every other row gets the joined row's columns +-1,
    and the rows inside a gap also the gap's two edges (where the remap switches sides).
    Pricing adds whatever else the optimum needs.
    """
    n, scale = problem.n, noise_scale(problem.alpha)
    rows = np.arange(n + 1)
    free = np.zeros(n + 1, dtype=bool)
    inside = np.zeros(n + 1, dtype=bool)
    low_edge, high_edge = np.zeros(n + 1, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)
    for left, right in zip(parts, parts[1:]):
        a, b = int(left[-1]), int(right[0])
        gap = (rows > a) & (rows < b)
        inside |= gap
        low_edge[gap], high_edge[gap] = a, b
        free |= (rows >= a - BRIDGE_INNER_SCALES * scale) & (rows <= a + BRIDGE_MARGIN_SCALES * scale)
        free |= (rows <= b + BRIDGE_INNER_SCALES * scale) & (rows >= b - BRIDGE_MARGIN_SCALES * scale)
        free |= np.abs(rows - (a + b) // 2) <= BRIDGE_JOIN_SCALES * scale
    deep = ~free
    coo = sparse.coo_array(joined)
    free = ~deep[coo.row]
    offsets = np.arange(-1, 2)
    edges = np.flatnonzero(inside & ~deep)
    r = np.concatenate([coo.row[~free], np.repeat(coo.row[free], offsets.size), edges, edges])
    c = np.concatenate([coo.col[~free], (coo.col[free][:, None] + offsets).ravel(), low_edge[edges], high_edge[edges]])
    keep = (c >= 0) & (c <= n)
    return r[keep], c[keep]


def mixed_multipliers(problem: CountQuery, parts: list[np.ndarray | None], sweeps: int = 2,
                      steps: int = 40) -> tuple[np.ndarray, float] | None:
    """The clusters' multipliers mixed for the best Lagrangian bound on the whole problem.

    The bound is concave in the mixture weights, so each pair of neighbouring clusters
    shares its weight by golden-section search (``steps`` + 1 evaluations, O(n) each), for
    ``sweeps`` passes. Returns (multipliers, bound), or None if a cluster has none.
    """
    if any(lam is None for lam in parts):
        return None
    empty = sparse.csr_array((problem.n + 1, problem.n + 1))

    def bound(w: np.ndarray) -> float:
        return price_columns(problem, np.tensordot(w, parts, axes=1), empty).lower_bound

    weights = np.full(len(parts), 1.0 / len(parts))
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    for _ in range(sweeps):
        for c in range(len(parts) - 1):
            pair = weights[c] + weights[c + 1]

            def split(x: float, c: int = c, pair: float = pair) -> float:
                w = weights.copy()
                w[c], w[c + 1] = x * pair, (1.0 - x) * pair
                return bound(w)

            # golden section: one new evaluation a step, the other point carried over
            low, high = 0.0, 1.0
            a, b = high - ratio * (high - low), low + ratio * (high - low)
            fa, fb = split(a), split(b)
            for _ in range(steps - 1):
                if fa < fb:
                    low, a, fa = a, b, fb
                    b = low + ratio * (high - low)
                    fb = split(b)
                else:
                    high, b, fb = b, a, fa
                    a = high - ratio * (high - low)
                    fa = split(a)
            if fa < fb:
                low = a
            else:
                high = b
            x = (low + high) / 2.0
            weights[c], weights[c + 1] = x * pair, (1.0 - x) * pair
    lam = np.tensordot(weights, parts, axes=1)
    return lam, bound(weights)


def mixed_columns(problem: CountQuery, parts: list[np.ndarray], lam: np.ndarray,
                  initial: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's best columns (and their neighbours) priced with ``lam``, for the rows
    between the clusters' edges whose best column is not among their ``initial`` ones."""
    n = problem.n
    pricing = price_columns(problem, lam, sparse.csr_array((n + 1, n + 1)))
    rows = np.arange(n + 1)
    between = np.zeros(n + 1, dtype=bool)
    for left, right in zip(parts, parts[1:]):
        between |= (rows > left[-1]) & (rows < right[0])
    between &= ~np.isin(rows * (n + 1) + pricing.row_argmin, initial[0] * (n + 1) + initial[1])
    rows = rows[between]
    targets = pricing.row_argmin[rows][:, None]
    if pricing.nearby is not None:
        targets = np.hstack([targets, pricing.nearby[rows]])
    return np.repeat(rows, targets.shape[1]), targets.ravel()


def _solve_clusters(problem: CountQuery, parts: list[np.ndarray], tolerance: float, fold: bool = True) -> list[ColumnGenerationResult]:
    """Each cluster of S alone, on its hull; clusters whose hull problems are the same (S =
    10%..40% and 60%..90% of n: two copies of S = all on 0..3n/10) are solved once."""
    from dpopt.programs.column_generation.solve import solve_by_column_generation  # the loop imports this module
    solved: dict[tuple[int, tuple[int, ...]], ColumnGenerationResult] = {}
    results = []
    for part in parts:
        alone = CountQuery(n=problem.n, alpha=problem.alpha, loss=problem.loss_name, side_information=part.tolist())
        hull = hull_problem(alone)
        if hull is None:
            results.append(solve_by_column_generation(alone, tolerance=tolerance, fold=fold))
            continue
        key = (hull.n, hull.support)
        fresh = key not in solved
        if fresh:
            solved[key] = solve_by_column_generation(hull, tolerance=tolerance, fold=fold)
        embedded = embedded_result(alone, solved[key])
        results.append(embedded if fresh else dataclasses.replace(embedded, rounds=0, history=[], seconds=0.0))
    return results


def solve_by_clusters(problem: CountQuery, *, tolerance: float = 1e-10, gap_scales: float = CLUSTER_GAP_SCALES,
                      max_rounds: int = 500, progress: Callable[[dict[str, float]], None] | None = None,
                      fold: bool = True, narrow: bool = False) -> ColumnGenerationResult | None:
    """S with long gaps: each cluster solved alone, the remaps joined at the gaps' middles,
    and, unless that already certifies, the whole problem bridged from the joined remap;
    None if S has no gap of ``gap_scales`` noise scales.

    Exact certificate either way: the optimum for S is at least the optimum for any part
    of S, so the largest of the clusters' lower bounds is a lower bound, and the joined
    mechanism's exact worst loss on S an upper bound; where the gaps are long enough
    (an input sees the rows beyond a gap's middle at weight below alpha^(gap / 2) / (1 -
    alpha)) the two agree within the tolerance (S = 10%..40% and
    60%..90% of n = 5000 at alpha = 0.9: HiGHS failed on the whole master, "Unknown" by
    every route, as the chains carry values down to alpha^1000 ~ 1e-46 across the gap).
    Otherwise the clusters interact at the tolerance (S = 0..500 and 4500..5000, alpha =
    0.99: the optimum is 1.1e-8 relative above either cluster's alone) and column
    generation on the whole problem starts from the joined remap, with the rows deep
    inside the gaps held to it (:func:`bridge_columns`); its certificate is the usual one,
    and None is returned if it falls short (the caller then solves the whole problem).
    ``fold`` is passed on to :func:`solve_by_column_generation`; ``narrow`` to :func:`clusters_of`,
    and with it the joined remap is returned only if it certifies (no bridged master: where the
    clusters interact, the whole problem's stalled master is as good, and bridging narrow
    clusters at alpha = 0.99 cost 6 s and 400 MB more for nothing).
    """
    from dpopt.programs.column_generation.solve import solve_by_column_generation  # the loop imports this module
    if problem.loss_name not in ("absolute", "squared"):  # zero-one: the flow LP has no chains
        return None
    parts = clusters_of(problem, gap_scales, narrow=narrow)
    if len(parts) < 2:
        return None
    start = time.perf_counter()
    n = problem.n
    results = _solve_clusters(problem, parts, tolerance, fold)
    middles = [(left[-1] + right[0]) // 2 for left, right in zip(parts, parts[1:])]
    owner = np.searchsorted(np.asarray(middles), np.arange(n + 1), side="left")  # rows r <= middle: the left cluster
    pieces = []
    for c, result in enumerate(results):
        remap = sparse.coo_array(result.mechanism.remap)
        mine = owner[remap.row] == c
        pieces.append((remap.row[mine], remap.col[mine], remap.data[mine]))
    rows, cols, vals = (np.concatenate(p) for p in zip(*pieces))
    joined = sparse.csr_array((vals, (rows, cols)), shape=(n + 1, n + 1))
    mechanism, losses = evaluated(problem, joined)
    upper, lower = float(losses.max()), max(result.lower_bound for result in results)
    history = [record for r in results for record in r.history]
    if upper - lower <= tolerance * abs(upper) + ABSOLUTE_GAP:
        return ColumnGenerationResult(
            mechanism=mechanism, lower_bound=lower, upper_bound=upper, rounds=sum(r.rounds for r in results),
            columns=int(mechanism.remap.nnz), master_objective=upper, row_losses=losses, seconds=time.perf_counter() - start,
            history=history, route=f"{len(parts)} clusters of S solved apart ({results[0].route}, ...)",
            solver=solvers_of(r.solver for r in results),
        )
    if narrow:  # a retry (see clusters_of): only where the clusters certify apart, unbridged
        return None
    initial = bridge_columns(problem, parts, joined)
    mixed = mixed_multipliers(problem, [result.multipliers for result in results])
    if mixed is not None:
        lower = max(lower, mixed[1])
        initial = tuple(np.concatenate(pair) for pair in zip(initial, mixed_columns(problem, parts, mixed[0], initial)))
    try:
        bridged = solve_by_column_generation(problem, tolerance=tolerance, max_rounds=max_rounds, progress=progress,
                                             hull=False, split=False, initial=initial, fold=fold)
    except SolverError:
        return None
    if bridged.lower_bound < lower:  # the clusters' bound is as valid
        bridged = dataclasses.replace(bridged, lower_bound=lower)
    if not bridged.within(CERTIFIED_FACTOR * tolerance, ABSOLUTE_GAP):
        # seen with short noise scales (alpha = 0.6, n = 75, a gap of 53 counts: the master
        # stuck 2e-7 above its bound, or HiGHS "Unknown"), where the whole problem certifies
        return None
    return dataclasses.replace(bridged, seconds=time.perf_counter() - start, history=history + bridged.history,
                               rounds=bridged.rounds + sum(r.rounds for r in results),
                               route=f"{len(parts)} clusters of S solved apart and bridged ({bridged.route})",
                               solver=solvers_of([bridged.solver, *(r.solver for r in results)]))
