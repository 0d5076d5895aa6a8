"""Generalized sensitivity, the d_X privacy check, and noise scales c for linear queries.

Perrier et al., Section 4: a workload Q (K x N) is answered as ``c * Q'x + Lap(c)``
(Eq. 5) with ``Q' = diag(1/c) Q`` here (the cQ' = Q form). It is d_X-private iff
``||Q'_{:,i} - Q'_{:,j}||_1 <= d_X(i, j)`` for every pair, i.e.
``sum_k |Q_ki - Q_kj| / c_k <= d_X(i, j)``. Routes to c:

* :func:`closed_form_scales` -- one query: ``c = max_{i,j} |q_i - q_j| / d_X(i, j)``;
* :func:`strategy1_scales` -- the budget d_X/K shared equally between the K queries;
* :func:`strategy2_scales` -- one scale for all: ``max ||Q_:i - Q_:j||_1 / d_X(i, j)``;
* :func:`exact_scales` -- the exact optimum of ``min ||c||^2`` under the constraints,
  convex in c (each constraint is a sum of ``1/c_k`` terms), which the
  paper only approximates (Algorithm 3). Solved with Clarabel; the answer is scaled up
  by the measured worst ratio if the solver left any pair above d_X, so it always
  passes :func:`check_privacy`.

Pairs with ``d_X = inf`` impose nothing; pairs whose columns of Q coincide impose
nothing; the rest are all checked (vectorised), and :class:`PrivacyCheck` reports the
worst pair and its slack.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.dx.metric import DXMetric, check_metric, check_workload
from dpopt.limits import MAX_RECORDS
from dpopt.lazy_modules import cvxpy as cp
from dpopt.solvers import power_of_two_at_most, run_program
from dpopt.validation import SolverError, check_array, check_int, fail

__all__ = [
    "PrivacyCheck",
    "check_privacy",
    "generalized_sensitivity",
    "closed_form_scales",
    "strategy1_scales",
    "strategy2_scales",
    "exact_scales",
    "psa_scales",
    "PSAResult",
    "essential_pairs",
    "nearest_pairs",
    "PairReport",
    "solve_exact",
    "exact_surrogate",
    "alternating",
    "AlternatingResult",
    "with_constant_rows",
    "surrogate_objective",
    "lp_bound_objective",
    "exact_lp_bound",
]

OWNER = "dx linear query"
#: Relative slack allowed on ||Q'_i - Q'_j||_1 <= d_X(i, j) for floating-point sums.
PRIVACY_TOLERANCE = 1e-9


def _workload(query: Any, metric: DXMetric, parameter: str = "query") -> np.ndarray:
    return check_workload(query, metric, OWNER, parameter)


def generalized_sensitivity(query: Any, metric: DXMetric) -> np.ndarray:
    """``Delta(i, j) = ||Q_{:,i} - Q_{:,j}||_1`` for every pair (N x N)."""
    q = _workload(query, metric)
    return np.abs(q[:, :, None] - q[:, None, :]).sum(axis=0)


@dataclass(frozen=True)
class PrivacyCheck:
    """Result of :func:`check_privacy`.

    Attributes
    ----------
    ok : bool
    worst_pair : tuple of int
        (i, j) with the largest ``Delta'(i, j) / d_X(i, j)``.
    worst_ratio : float
        That ratio (<= 1 when private; inf if a zero distance separates different columns).
    min_slack : float
        Smallest ``d_X(i, j) - Delta'(i, j)`` over finite pairs.
    pairs_checked : int
    """

    ok: bool
    worst_pair: tuple[int, int]
    worst_ratio: float
    min_slack: float
    pairs_checked: int


def check_privacy(transformed: Any, metric: DXMetric) -> PrivacyCheck:
    """Check ``||Q'_{:,i} - Q'_{:,j}||_1 <= d_X(i, j)`` over every pair (vectorised)."""
    q = _workload(transformed, metric)
    i, j = metric.pairs()
    spread = np.abs(q[:, i] - q[:, j]).sum(axis=0)
    d = metric.matrix[i, j]
    ratio = distance_ratio(spread, d)
    k = int(np.argmax(ratio)) if ratio.size else 0
    worst = float(ratio[k]) if ratio.size else 0.0
    return PrivacyCheck(
        ok=bool(worst <= 1 + PRIVACY_TOLERANCE),
        worst_pair=(int(i[k]), int(j[k])) if ratio.size else (0, 0),
        worst_ratio=worst,
        min_slack=float((d - spread).min()) if ratio.size else float("inf"),
        pairs_checked=int(ratio.size),
    )


def distance_ratio(spread: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``spread / d`` per pair, where elements at distance 0 give 0 if they agree and +inf if not."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d > 0, spread / d, np.where(spread > 0, np.inf, 0.0))


def _pair_differences(q: np.ndarray, metric: DXMetric) -> tuple[np.ndarray, np.ndarray]:
    """``|Q_k,i - Q_k,j|`` (pairs x K) and ``d_X`` for every finite pair that constrains anything."""
    diff, d, _ = _pairs_of(q, metric, metric.pairs())
    return diff, d


def closed_form_scales(query: Any, metric: DXMetric) -> np.ndarray:
    """One query: ``c = max_{i,j} |q_i - q_j| / d_X(i, j)`` (returned as a length-1 array)."""
    q = _workload(query, metric)
    if q.shape[0] != 1:
        raise fail("query", OWNER, "a single query (one row) for the closed form", q.shape)
    diff, d = _pair_differences(q, metric)
    return np.array([float((diff[:, 0] / d).max()) if d.size else 0.0])


def strategy1_scales(query: Any, metric: DXMetric) -> np.ndarray:
    """Strategy 1: ``c_k = max_{i,j} |Q_ki - Q_kj| / (d_X(i, j) / K)``."""
    q = _workload(query, metric)
    diff, d = _pair_differences(q, metric)
    return (diff / (d[:, None] / q.shape[0])).max(axis=0) if d.size else np.zeros(q.shape[0])


def strategy2_scales(query: Any, metric: DXMetric) -> np.ndarray:
    """Strategy 2: ``c_k = max_{i,j} ||Q_:i - Q_:j||_1 / d_X(i, j)`` for every k."""
    q = _workload(query, metric)
    diff, d = _pair_differences(q, metric)
    value = float((diff.sum(axis=1) / d).max()) if d.size else 0.0
    return np.full(q.shape[0], value)


def exact_scales(query: Any, metric: DXMetric, *, solver: str | None = None, reduce: bool = True) -> np.ndarray:
    """The exact optimum of ``min ||c||^2`` s.t. ``sum_k |Q_ki - Q_kj| / c_k <= d_X(i, j)``.

    The constraints are convex in c (``1/c_k`` is convex for c > 0; equivalently
    linear in ``t = 1/c``), so this is a convex program, modelled with ``inv_pos``
    and solved by Clarabel. Queries that never differ get ``c_k = 0`` (no noise).
    With ``reduce`` the pairs are cut to the essential ones and added lazily
    (:func:`solve_exact`); the answer is checked against every pair either way.
    """
    return solve_exact(query, metric, solver=solver, reduce=reduce)[0]


def solve_exact(
    query: Any, metric: DXMetric, *, solver: str | None = None, reduce: bool = True, objective: str = "norm"
) -> tuple[np.ndarray, "PairReport"]:
    """:func:`exact_scales` and the :class:`PairReport` of the pairs it used.

    ``objective="norm"`` minimises ``||c||^2`` (the surrogate with c Q' = Q);
    ``objective="l1"`` minimises ``sum c`` (Theorem 2 part 2's l1 bound when c Q' = Q);
    ``objective="improvement"`` maximises the paper's improvement factor (the
    geometric mean of ``baseline / c_k``), i.e. maximises ``sum_k log t_k`` with
    ``t = 1/c`` -- concave, with the same linear constraints ``A t <= d``.
    """
    if objective not in ("norm", "improvement", "l1"):
        raise fail("objective", OWNER, "'norm', 'improvement' or 'l1'", objective)
    q = _workload(query, metric)
    diff, d, universe = _pairs_of(q, metric, essential_pairs(metric) if reduce else metric.pairs())
    used = diff.sum(axis=0) > 0
    c = np.zeros(q.shape[0])
    total = len(metric.pairs()[0])
    if not used.any():
        return c, PairReport(total, len(d), 0, 0)
    a = diff[:, used]
    # each scale in units of its own query's sensitivity u_k = max_r a_rk / d_r: every feasible
    # c has c_k >= u_k, and c = K u is feasible, so c_k / u_k lies in [1, K] whatever the
    # metric's spread (one budget of 1e-10 beside 2 left one scale 1e10 times the others,
    # and Clarabel failed on the mixed rows); every row coefficient a_rk / (u_k d_r) is <= 1
    unit = (a / d[:, None]).max(axis=0)
    rows_scaled = a / (d[:, None] * unit[None, :])
    weight = unit / unit.max()

    def solve(rows: np.ndarray) -> np.ndarray:
        s_var = cp.Variable(int(used.sum()), pos=True, name="s")
        if objective in ("norm", "l1"):  # ||c||^2, or E||Y||_1 = sum c (Theorem 2, part 2, with c Q' = Q)
            cost = cp.sum_squares(cp.multiply(weight, s_var)) if objective == "norm" else weight @ s_var
            program = cp.Problem(cp.Minimize(cost), [rows_scaled[rows] @ cp.inv_pos(s_var) <= 1.0])
            _run_conic(program, solver, "dx exact scales")
            return unit * np.asarray(s_var.value, dtype=float)
        # s is t * unit here: maximise the geometric mean of t (same optimum as sum log t,
        # but second-order-cone representable: Clarabel's exponential cone stalled on
        # these many nearly redundant rows)
        program = cp.Problem(cp.Maximize(cp.geo_mean(s_var)), [rows_scaled[rows] @ s_var <= 1.0])
        _run_conic(program, solver, "dx exact improvement factor")
        return unit / np.asarray(s_var.value, dtype=float)

    def ratios(scales: np.ndarray) -> np.ndarray:
        return (a / scales[None, :]).sum(axis=1) / d

    if reduce:
        # each query's own tightest pair too, so every variable is constrained from the first round
        start = np.union1d(nearest_pairs(metric, universe), np.argmax(a / d[:, None], axis=0))
    else:
        start = np.arange(len(d))
    scales, rows, rounds = _lazily(solve, ratios, start, len(d))
    worst = float(ratios(scales).max())
    c[used] = scales * worst if worst > 1 else scales
    return c, PairReport(total, len(d), len(rows), rounds)


def _pairs_of(q: np.ndarray, metric: DXMetric, pairs: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """``|dQ|`` and d_X on the pairs where some query differs, and those pairs."""
    i, j = pairs
    diff = np.abs(q[:, i] - q[:, j]).T
    d = metric.matrix[i, j]
    active = diff.sum(axis=1) > 0
    if np.any(active & (d == 0)):
        p = int(np.flatnonzero(active & (d == 0))[0])
        raise fail("query", OWNER, f"equal on elements at distance 0 (elements {i[p]} and {j[p]} differ)", q)
    return diff[active], d[active], (i[active], j[active])


#: A lazily generated constraint set stops when no pair exceeds d_X by more than this.
LAZY_TOLERANCE = 1e-9
#: Pairs added per round at most (the most violated first).
LAZY_BATCH = 20_000


def _lazily(solve: Any, ratios: Any, start: np.ndarray, count: int) -> tuple[Any, np.ndarray, int]:
    """Solve on ``start`` rows, add violated rows (ratio > 1 + tol), repeat until none."""
    rows = np.unique(start)
    rounds = 0
    while True:
        rounds += 1
        candidate = solve(rows)
        r = ratios(candidate)
        r[rows] = 0.0
        bad = np.flatnonzero(r > 1 + LAZY_TOLERANCE)
        if bad.size == 0 or rows.size == count:
            return candidate, rows, rounds
        worst_first = bad[np.argsort(-r[bad])][:LAZY_BATCH]
        rows = np.union1d(rows, worst_first)


def _run_conic(program: cp.Problem, solver: str | None, owner: str) -> None:
    """Clarabel at dpopt's tight tolerances, else at its defaults (accepting 'optimal_inaccurate').

    At 1e-10 Clarabel can stop at "optimal_inaccurate" on these hyperbolic
    constraints; every caller re-checks privacy and rescales, so accuracy only
    affects optimality, which the tests bound.
    """
    try:
        run_program(program, solver=solver or "CLARABEL", owner=owner)
    except SolverError as exc:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "solution may be inaccurate": checked by the caller
                program.solve(solver=solver or "CLARABEL")
        except cp.error.SolverError:
            raise exc from None
        if program.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            raise exc from None


# -- Algorithm 3 --------------------------------------------------------------------

@dataclass(frozen=True)
class PSAResult:
    """Algorithm 3's scales, with how the loop ended."""

    scales: np.ndarray
    iterations: int
    converged: bool


#: PSA stops when every query's share gained in a round is below this fraction of its total.
PSA_TOLERANCE = 1e-9
#: ... or after this many rounds.
PSA_MAX_ITERATIONS = 1000


def psa_scales(
    query: Any, metric: DXMetric, *, tolerance: float = PSA_TOLERANCE, max_iterations: int = PSA_MAX_ITERATIONS
) -> PSAResult:
    """Algorithm 3 (PSA, Strategy 3) as printed, over every finite pair.

    Each round: (1) ``c_k`` = the scale query k would need alone on the remaining
    budget; (2) split each pair's remaining budget between the queries in
    proportion to ``|Q_ki - Q_kj| / c_k``; (3) ``c_k`` = the scale query k needs on its
    share; (4) subtract what was spent; (5) ``R += 1/c``. Output ``c = 1/R``. The
    printed loop runs "while T != 0": T_k is 0 once query k differs on a pair whose
    budget is spent (its c_k is infinite). Since the budget may also only shrink
    geometrically, the loop also stops when ``max_k T_k / R_k <= tolerance`` (default
    1e-9), or after ``max_iterations``.
    Steps (2)-(3) simplify to ``c_k <- c_k max_{p: Q_k differs} (sum_l |dQ_l| / c_l) / rem_p``.
    """
    q = _workload(query, metric)
    diff, d = _pair_differences(q, metric)
    k_count = q.shape[0]
    used = diff.sum(axis=0) > 0
    total = np.zeros(int(used.sum()))
    if not used.any():
        return PSAResult(np.zeros(k_count), 0, True)
    diff, remaining = diff[:, used], d.copy()
    moves = diff > 0
    iterations, converged = 0, False
    with np.errstate(divide="ignore", invalid="ignore"):
        while iterations < max_iterations:
            iterations += 1
            # step 1: a query differing on an exhausted pair gets c = inf, i.e. T_k = 0
            c = np.where(moves, diff / remaining[:, None], 0.0).max(axis=0)
            live = np.isfinite(c)
            if not live.any():
                converged = True  # T = 0: the printed loop's exit
                break
            share = np.where(live[None, :], diff / np.where(live, c, 1.0)[None, :], 0.0)
            spend = share.sum(axis=1)
            pressure = np.where(spend > 0, spend / remaining, 0.0)
            c = np.where(live, c * np.where(moves, pressure[:, None], 0.0).max(axis=0), np.inf)  # steps 2-3
            gain = np.where(np.isfinite(c), 1.0 / c, 0.0)  # step 5's T
            remaining = np.maximum(remaining - (diff * gain[None, :]).sum(axis=1), 0.0)  # step 4
            total += gain
            if np.max(gain / total) <= tolerance:
                converged = True
                break
    scales = np.zeros(k_count)
    scales[used] = 1.0 / total
    return PSAResult(_rescale_to_private(scales, diff, d, used), iterations, converged)


def _rescale_to_private(c: np.ndarray, diff: np.ndarray, d: np.ndarray, used: np.ndarray) -> np.ndarray:
    """Multiply c by the worst ratio if floating point left a pair above d_X."""
    if not used.any() or d.size == 0:
        return c
    worst = float(((diff / c[used][None, :]).sum(axis=1) / d).max())
    return c * worst if worst > 1 else c


# -- pair reduction and lazy constraints -------------------------------------------------

#: Above this many elements the pair reduction (O(N^3): 6 s at N = 1500, 50 s at 3000) is
#: skipped and every finite pair is a candidate of the lazy constraint pool, which adds only
#: the violated ones; the reduction only ever shrinks that pool (and the final certificate
#: measures every pair either way).
ESSENTIAL_PAIRS_MAX_N = 1500


def essential_pairs(metric: DXMetric) -> tuple[np.ndarray, np.ndarray]:
    """Finite pairs (i < j) not implied by the triangle inequality (:func:`dpopt.privacy.not_implied`),
    computed once per metric (:attr:`DXMetric.essential_pairs`); every finite pair above
    :data:`ESSENTIAL_PAIRS_MAX_N` elements, except on a line, where they are read off the
    sorted positions at any N.

    A pair with ``d(i, j) >= d(i, k) + d(k, j)`` (to 1e-12) through positive parts shorter
    than d(i, j) is dropped: every constraint here bounds a pseudo-metric in (i, j)
    (``||Q'_i - Q'_j||_1``, its weighted form, ``|p_i - p_j| / c``), so (i, k) and (k, j)
    imply it, and by induction on d the kept pairs imply every dropped one. "Shorter" and
    "positive" are asked for, not implied by the sum: a part of 1e-13 beside two of 2
    (Example 1 with a budget of 1e-13), or of 0 (two elements at one point), made (i, j)
    and (k, j) imply each other, both were dropped, and the exact routes then left a query
    unconstrained (scale 0).
    """
    metric = check_metric(metric, OWNER)
    if metric.size > ESSENTIAL_PAIRS_MAX_N and metric.line is None:
        return metric.pairs()
    return metric.essential_pairs


def nearest_pairs(metric: DXMetric, pairs: tuple[np.ndarray, np.ndarray], neighbours: int = 8) -> np.ndarray:
    """Indices into ``pairs`` of each element's ``neighbours`` closest partners."""
    metric = check_metric(metric, OWNER)
    neighbours = check_int(neighbours, "neighbours", OWNER, low=1)
    i, j = pairs
    d = metric.matrix[i, j]
    chosen = np.zeros(i.size, dtype=bool)
    order = np.argsort(d, kind="stable")
    counts = np.zeros(metric.size, dtype=int)
    for p in order:  # O(P) pass, no per-entry matrix work
        a, b = i[p], j[p]
        if counts[a] < neighbours or counts[b] < neighbours:
            chosen[p] = True
            counts[a] += 1
            counts[b] += 1
    return np.flatnonzero(chosen)


@dataclass(frozen=True)
class PairReport:
    """How many pair constraints a solve used."""

    total: int
    essential: int
    used: int
    rounds: int

    def to_dict(self) -> dict[str, int]:
        return {"pairs_total": self.total, "pairs_essential": self.essential, "pairs_used": self.used, "lazy_rounds": self.rounds}


# -- the surrogate problem (6) under squared loss ------------------------------------------

def surrogate_objective(transformed: Any, scales: Any, query: Any, n: int) -> float:
    """Perrier et al.'s bound ``n^2 ||c (.) Q' - Q||_F^2 + 2 ||c||^2`` on the expected squared error."""
    qp, c, q, n = _bound_inputs(transformed, scales, query, n)
    return float(n**2 * np.sum((c[:, None] * qp - q) ** 2) + 2 * np.sum(c**2))


def _bound_inputs(transformed: Any, scales: Any, query: Any, n: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(Q', c, Q, n) of an error bound, refused naming the field unless finite and of matching shapes
    (a NaN scale gave a NaN bound until 2026-11-29)."""
    q = np.atleast_2d(check_array(query, "query", OWNER, ndim=(1, 2)))
    qp = np.atleast_2d(check_array(transformed, "transformed", OWNER, ndim=(1, 2)))
    c = np.atleast_1d(check_array(scales, "scales", OWNER, ndim=(0, 1), low=0.0))
    if qp.shape != q.shape or c.size != q.shape[0]:
        raise fail("transformed", OWNER, f"Q' of the workload's shape {q.shape}, with one scale per query", f"shape {qp.shape}, {c.size} scales")
    return qp, c, q, _records(n)


def _records(n: Any) -> int:
    return check_int(n, "n", OWNER, low=1, high=MAX_RECORDS)


def exact_surrogate(query: Any, metric: DXMetric, n: int, *, solver: str | None = None, reduce: bool = True) -> tuple[np.ndarray, np.ndarray, "PairReport"]:
    """Exact optimum of the single-query surrogate with q' free (the paper fixes c q' = q).

    ``min n^2 ||c q' - q||^2 + 2 c^2`` s.t. ``|q'_i - q'_j| <= d_X(i, j)``. With
    ``p = c q'`` the constraints read ``|p_i - p_j| <= c d_X(i, j)``: jointly convex in
    (p, c), a QP. Returns ``(q', c, pairs)`` with q' as a (1, N) array.
    """
    n = _records(n)
    return _single_query_program(
        query, metric, reduce, solver, "exact_surrogate", step=1.0 / float(n),
        # p = target + delta / n and c = unit * gamma turn the objective, divided by
        # 2 unit^2, into ||delta||^2 / 2 + gamma^2: every term of order one.
        objective=lambda delta, g: 0.5 * cp.sum_squares(delta) + cp.square(g),
        constant=lambda q: surrogate_constant_release(q, n),
        evaluate=lambda transformed, c, q: surrogate_objective(transformed, [c], q, n),
    )


# -- the l_p utilities of Theorem 2 (part 2) ------------------------------------------------

def lp_bound_objective(transformed: Any, scales: Any, query: Any, n: int, p: float) -> float:
    """Theorem 2 part 2's bound ``n ||c (.) Q' - Q||_p + E||Y||_p`` for p = 1 or inf.

    The matrix norm is entrywise (the proof applies Hoelder row by row, then
    ``||x||_q <= ||x||_1 = n``). ``E||Y||_1 = sum c``; ``E||Y||_inf`` for independent
    ``Y_k ~ Lap(c_k)`` is ``int_0^inf 1 - prod_k (1 - e^(-t / c_k)) dt``, summed exactly by
    inclusion-exclusion over the distinct scales for K <= 20 (it is c for one query).
    """
    qp, c, q, n = _bound_inputs(transformed, scales, query, n)
    if p not in (1, float("inf")):
        raise fail("p", OWNER, "1 or inf", p)
    gap = (c[:, None] * qp - q).ravel()
    if p == 1:
        return float(n * np.abs(gap).sum() + c.sum())
    return float(n * np.abs(gap).max() + expected_max_laplace(c))


def expected_max_laplace(scales: np.ndarray) -> float:
    """``E max_k |Y_k|`` for independent ``Y_k ~ Lap(c_k)``: ``|Y_k| ~ Exp(mean c_k)``, and
    ``E max = sum over non-empty subsets S of (-1)^(|S|+1) / sum_{k in S} 1/c_k``."""
    rates = 1.0 / np.asarray([v for v in scales if v > 0], dtype=float)
    if rates.size == 0:
        return 0.0
    if rates.size > 20:
        raise fail("query", OWNER, "at most 20 queries with noise for E||Y||_inf by inclusion-exclusion", rates.size)
    total = 0.0
    for mask in range(1, 1 << rates.size):
        members = [k for k in range(rates.size) if mask >> k & 1]
        total += (-1) ** (len(members) + 1) / rates[members].sum()
    return float(total)


def exact_lp_bound(query: Any, metric: DXMetric, n: int, p: float, *, solver: str | None = None, reduce: bool = True) -> tuple[np.ndarray, np.ndarray, "PairReport"]:
    """Exact optimum of Theorem 2 part 2's l_p bound (p = 1 or inf) for one query with q' free.

    ``min n ||c q' - q||_p + c`` s.t. ``|q'_i - q'_j| <= d_X(i, j)`` (``E||Y||_p = c`` for
    one query). With ``v = c q'`` the constraints read ``|v_i - v_j| <= c d_X(i, j)``, so it
    is an LP in (v, c). Returns ``(q', c, pairs)`` with q' as a (1, N) array.
    """
    n = _records(n)
    if p not in (1, float("inf")):
        raise fail("p", OWNER, "1 or inf", p)
    return _single_query_program(
        query, metric, reduce, solver, "the exact l_p bound", step=1.0 / float(n),
        # v = unit (target + delta / n): the objective over unit is ||delta||_p + gamma
        objective=lambda delta, g: (cp.norm1(delta) if p == 1 else cp.norm_inf(delta)) + g,
        constant=lambda q: lp_constant_release(q, n, p),
        evaluate=lambda transformed, c, q: lp_bound_objective(transformed, [c], q, n, p),
    )


@dataclass(frozen=True)
class ConstantRelease:
    """The limit c -> 0 of a single-query program: every dataset's estimate is ``n value``
    (q' = value / c, the same for every dataset, so no pair can fail), at an objective that
    is order one in ``unit``. It is released with noise scale ``noise * unit``, which adds
    about 1e-12 of the objective (c for the l_p bounds, 2 c^2 for the surrogate) and keeps
    c as large as that allows (a release grid must be at most 1000 c)."""

    value: float
    unit: float
    noise: float

    def release(self, size: int) -> tuple[np.ndarray, float]:
        """``(q', c)`` of this release over ``size`` elements: the same q' everywhere, c = noise * unit."""
        c = self.unit * self.noise
        return np.full(size, self.value / c), c


def _single_query_program(query: Any, metric: DXMetric, reduce: bool, solver: str | None, what: str, *, step: float,
                          objective: Any, constant: Callable[[np.ndarray], ConstantRelease],
                          evaluate: Callable[[np.ndarray, float, np.ndarray], float]) -> tuple[np.ndarray, np.ndarray, "PairReport"]:
    """``min objective(delta, gamma)`` over ``v = unit (target + step delta)``, ``c = unit gamma`` with
    ``|v_i - v_j| <= c d_X(i, j)`` (pairs reduced and added lazily), for one query; returns ``(q', c, pairs)``.

    ``unit`` is the smaller of the closed-form scale and the constant release's unit
    (``constant(q)``): the optimum lies below both objectives, so every term is of order one.
    ``target = q / unit``; q' = v / c is shrunk (and c grown) by any solver-tolerance excess so
    every pair holds, and the constant release is returned instead where ``evaluate`` puts it
    lower: at a tiny epsilon the optimum is c -> 0 (exactly 0 for the l_p bounds once
    n d_X < 1), which the solver reaches only to its tolerance, and the shrink then pays
    tolerance / d_X. Until 2026-11-28 the unit was the closed-form scale alone: at epsilon =
    1e-12 it was 1e12 times the optimum's c, the solver stopped at its tolerance, and the
    "exact" surrogate on the hotspots was 6e4 times the constant release's objective.
    """
    q = _workload(query, metric)
    if q.shape[0] != 1:
        raise fail("query", OWNER, f"a single query (one row) for {what}", q.shape)
    universe = essential_pairs(metric) if reduce else metric.pairs()
    i, j = universe
    d = metric.matrix[i, j]
    total = len(metric.pairs()[0])
    unit = float(closed_form_scales(q, metric)[0])
    if unit == 0:
        return np.zeros_like(q), np.zeros(1), PairReport(total, len(d), 0, 0)
    flat = constant(q[0])
    unit = min(unit, flat.unit)
    target = q[0] / unit

    def solve(rows: np.ndarray) -> tuple[np.ndarray, float]:
        delta = cp.Variable(metric.size, name="delta")
        g = cp.Variable(nonneg=True, name="gamma")
        # each row over the larger of its distance and the step, so every coefficient is at most
        # one whatever the metric's scale
        # (unscaled, epsilon = 1e15 on the hotspots put coefficients of 1e16 beside the step's
        # 1e-3 and Clarabel called it infeasible; over d alone, epsilon = 1e-9 put 1e5 on delta
        # and Clarabel ended "optimal_inaccurate")
        scale = 1.0 / np.maximum(d[rows], step)
        gap = (target[i[rows]] - target[j[rows]]) * scale + cp.multiply(step * scale, delta[i[rows]] - delta[j[rows]])
        program = cp.Problem(cp.Minimize(objective(delta, g)), [cp.abs(gap) <= g * (d[rows] * scale)])
        _run_conic(program, solver, f"dx {what}")
        return target + step * np.asarray(delta.value, dtype=float), float(g.value)

    def ratios(candidate: tuple[np.ndarray, float]) -> np.ndarray:
        v, g = candidate
        return distance_ratio(np.abs(v[i] - v[j]), max(g, 1e-300) * d)

    start = nearest_pairs(metric, universe) if reduce else np.arange(len(d))
    (v, g), rows, rounds = _lazily(solve, ratios, start, len(d))
    constant_row, c_flat = flat.release(q.shape[1])
    candidates = [(constant_row[None, :], c_flat)]
    if g > 0:
        candidates.append(shrink_until_private((v / g)[None, :], unit * g, metric))
    transformed, c = min(candidates, key=lambda candidate: evaluate(candidate[0], candidate[1], q))
    return transformed, np.array([c]), PairReport(total, len(d), len(rows), rounds)


def surrogate_constant_release(q: np.ndarray, n: int) -> ConstantRelease:
    """The best constant release of one query under (6): its mean, at ``n^2 ||q - mean||^2 = 2 unit^2``."""
    return ConstantRelease(float(q.mean()), float(n) * math.sqrt(0.5 * float(np.sum((q - q.mean()) ** 2))), noise=2.0**-20)


def lp_constant_release(q: np.ndarray, n: int, p: float) -> ConstantRelease:
    """The best constant release of one query under Theorem 2's l_p bound: the median (p = 1) or
    the midrange (p = inf), at ``n ||q - it||_p = unit``."""
    if p == 1:
        middle = float(np.median(q))
        return ConstantRelease(middle, float(n) * float(np.abs(q - middle).sum()), noise=2.0**-40)
    return ConstantRelease(0.5 * (float(q.max()) + float(q.min())), 0.5 * float(n) * float(np.ptp(q)), noise=2.0**-40)


def with_constant_rows(transformed: np.ndarray, scales: np.ndarray, query: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(Q', c)`` with each query's row replaced by its constant release where that lowers (6).

    (6) is a sum over queries, and a constant row adds nothing to any pair's
    ``||Q'_:i - Q'_:j||_1``, so the result is private whenever ``(Q', c)`` is. At a tiny
    epsilon the constant release is all but optimal and the routes constrained by
    ``c Q' = Q`` are far above it.
    """
    q = np.atleast_2d(np.asarray(query, dtype=float))
    qp, c = np.array(transformed, dtype=float, copy=True), np.array(scales, dtype=float, copy=True)
    for k in range(q.shape[0]):
        flat = surrogate_constant_release(q[k], n)
        if flat.unit == 0:
            continue
        row, noise = flat.release(q.shape[1])
        if surrogate_objective(row, [noise], q[k], n) < surrogate_objective(qp[k], [c[k]], q[k], n):
            qp[k], c[k] = row, noise
    return qp, c


#: Extra relative shrink :func:`shrink_until_private` tries in turn beyond the measured excess.
SHRINK_MARGINS = (0.0, 1e-12, 1e-9, 1e-6, 1e-4)


def shrink_until_private(transformed: np.ndarray, c: float, metric: DXMetric) -> tuple[np.ndarray, float]:
    """Shrink q' (and grow c by as much) until every pair holds *as measured on the stored floats*.

    A solver leaves pairs over by its tolerance, and dividing by the worst ratio once is not
    always enough: where c is tiny q' is huge and nearly constant (3.7e8 with spreads of 0.06
    in a random probe), so rounding q' / worst moves the spreads by 1e-6 relative and the
    certificate measured 1 + 1.5e-8. The margins are tried until the measure passes.
    """
    worst = check_privacy(transformed, metric).worst_ratio
    if worst <= 1:
        return transformed, c
    for margin in SHRINK_MARGINS:
        factor = worst * (1 + margin)
        if check_privacy(transformed / factor, metric).worst_ratio <= 1:
            break
    return transformed / factor, c * factor


def _q_step(q: np.ndarray, c: np.ndarray, n: int, base: np.ndarray, unit: float, reach: float,
            i: np.ndarray, j: np.ndarray, d: np.ndarray, solver: str | None) -> np.ndarray:
    """The Q'-step of :func:`alternating` on the pairs ``(i, j)``: ``min n^2 ||c (.) Q' - Q||^2`` s.t.
    ``||Q'_:i - Q'_:j||_1 <= d_ij``, as a move from the private ``base``.

    Written as ``Q'_k = base_k + m_k + reach Z_k``: a free shift per query (which no pair
    sees) and variations Z in units of the metric's reach, with ``a_k = n c_k m_k / unit``. The
    objective over ``unit^2`` is ``sum_k ||n (c_k base_k - Q_k) / unit + a_k + (n c_k reach / unit) Z_k||^2``
    (f's bias term itself, n times the residual, so that a small residual still counts) and every
    pair reads ``sum_k |(base_ki - base_kj) / reach + Z_ki - Z_kj| <= d_ij / reach``:
    every variable of order one at any epsilon. (As a plain step ``Delta / n`` from base,
    Clarabel failed or ended "optimal_inaccurate" on 3 of 8 random two- and three-query
    universes at epsilon = 1e-4, and on 6 of 64 (universe, epsilon) cells from 1 to 1e-12,
    where the shifts grow and the variations shrink, until 2026-11-28.)
    Rows with ``c_k = 0`` do not enter the objective and become 0.
    """
    active = c > 0
    moved = np.zeros_like(q)  # a row with c_k = 0 is not released: constant, it costs no pair anything
    if not active.any():
        return moved
    k, size = int(active.sum()), q.shape[1]
    shift = cp.Variable(k, name="a")
    z = cp.Variable((k, size), name="Z")
    start = base[active]
    residual = n * (c[active, None] * start - q[active]) / unit
    weight = (n * c[active] * reach / unit)[:, None]
    fitted = residual + cp.reshape(shift, (k, 1), order="C") @ np.ones((1, size)) + cp.multiply(weight, z)
    varied = start / reach + z
    program = cp.Problem(cp.Minimize(cp.sum_squares(fitted)),
                         [cp.sum(cp.abs(varied[:, i] - varied[:, j]), axis=0) <= d / reach])
    _run_conic(program, solver, "dx alternating Q'-step")
    shifts = unit * np.asarray(shift.value, dtype=float) / (n * c[active])
    moved[active] = start + shifts[:, None] + reach * np.asarray(z.value, dtype=float)
    return moved


@dataclass(frozen=True)
class AlternatingResult:
    """Alternating minimisation of (6): the final (Q', c) and the objective per iteration."""

    transformed: np.ndarray
    scales: np.ndarray
    objectives: tuple[float, ...]
    pairs: PairReport
    stopped: str = ""  # why the descent stopped early: a Q'-step the solver could not take


def alternating(
    query: Any,
    metric: DXMetric,
    n: int,
    start: tuple[np.ndarray, np.ndarray],
    *,
    iterations: int = 30,
    tolerance: float = 1e-9,
    solver: str | None = None,
) -> AlternatingResult:
    """Block coordinate descent on ``f(Q', c) = n^2 ||c (.) Q' - Q||^2 + 2 ||c||^2`` (Appendix B).

    c-step (closed form, per row): ``c_k = max(0, n^2 <Q'_k, Q_k> / (n^2 ||Q'_k||^2 + 2))``.
    Q'-step: ``min ||c (.) Q' - Q||^2`` s.t. ``||Q'_:i - Q'_:j||_1 <= d_X(i, j)`` (a convex
    QP on the essential pairs, added lazily). Starts from ``start = (Q', c)`` (a private
    point, e.g. the best of the other routes); f never increases.
    """
    q = _workload(query, metric)
    qp, c = np.atleast_2d(np.asarray(start[0], dtype=float)).copy(), np.asarray(start[1], dtype=float).copy()
    privacy = check_privacy(qp, metric)
    if not privacy.ok:
        raise fail("start", OWNER, "a private (Q', c) pair", privacy)
    universe = essential_pairs(metric)
    i, j = universe
    d = metric.matrix[i, j]
    objectives = [surrogate_objective(qp, c, q, n)]
    rows_used, rounds_total, stopped = np.arange(0), 0, ""
    # The Q'-step's units (see _q_step), powers of two so that they change no minimiser: Q's
    # scale (queries times 2^25 ended in Clarabel "solver_error", times 2^-20 stopped 0.12%
    # short) and the metric's (the variations of Q' are bounded by its distances).
    unit = power_of_two_at_most(float(np.abs(q).max())) if np.any(q) else 1.0
    finite = d[np.isfinite(d)]
    reach = power_of_two_at_most(float(finite.max())) if finite.size and finite.max() > 0 else 1.0
    for _ in range(iterations):
        norm2 = np.sum(qp * qp, axis=1)
        c = np.maximum(0.0, n**2 * np.sum(qp * q, axis=1) / (n**2 * norm2 + 2.0))  # c-step

        def solve(rows: np.ndarray, c: np.ndarray = c, base: np.ndarray = qp) -> np.ndarray:
            return _q_step(q, c, n, base, unit, reach, i[rows], j[rows], d[rows], solver)

        def ratios(candidate: np.ndarray) -> np.ndarray:
            return distance_ratio(np.abs(candidate[:, i] - candidate[:, j]).sum(axis=0), d)

        first = nearest_pairs(metric, universe) if rows_used.size == 0 else rows_used
        try:
            candidate, rows_used, rounds = _lazily(solve, ratios, first, len(d))
        except SolverError as exc:  # the last (Q', c) is private and no worse: a descent may stop there
            stopped = f"iteration {len(objectives)}: {exc}"
            break
        rounds_total += rounds
        worst = check_privacy(candidate, metric).worst_ratio
        if worst > 1:
            candidate = candidate / worst
        value = surrogate_objective(candidate, c, q, n)
        if value > objectives[-1]:  # a Q'-step never helps less than keeping Q'
            value = surrogate_objective(qp, c, q, n)
        else:
            qp = candidate
        objectives.append(value)
        if objectives[-2] - objectives[-1] <= tolerance * objectives[-2]:
            break
    report = PairReport(len(metric.pairs()[0]), len(d), int(rows_used.size), rounds_total)
    return AlternatingResult(qp, c, tuple(objectives), report, stopped)
