"""Zero-one loss count mechanisms as a lossy flow on the path: an LP with O(n) rows.

Under zero-one loss only the diagonal of ``x = G T`` matters: input i is answered
correctly with probability ``x[i, i] = sum_r G[i, r] T[r, i]``, and the minimax mechanism
maximises ``v = min_(i in S) x[i, i]`` (Gupte & Sundararajan, Theorem 1: some optimal
mechanism is ``G T``). Read ``G[i, r] = g_r alpha^|i - r|`` as *value*: count r owns
``g_r`` of it (its unit of mass in T), and mass moved from r to output i is worth
``g_r alpha^|i - r|`` there. Moving value one step along the path multiplies it by
alpha, whatever its origin, so the interaction LP over (n+1)^2 remap entries is exactly a
lossy (generalised) flow on the path 0..n:

    maximise v  subject to  alpha b_(j-1) + alpha a_(j+1) - b_j - a_j + g_j >= v  (j in S)
                                                                          >= 0  (j not in S)

with ``b_j >= 0`` the value node j sends right, ``a_j >= 0`` the value it sends left, and
node j's own output keeping the rest (the row's slack). That is 3n + 1 columns and
2n + 1 rows (v is a chain ``v_j = v_(j+1)``, so no column is dense) against the (n+1)^2
columns column generation searches. Its duals are the zero-one Lagrangian multipliers
of :mod:`dpopt.programs.column_generation`: its dual is
``min sum_r g_r w_r`` with ``w_r >= lambda_r`` and ``w_r >= alpha w_(r +- 1)``, the chain
form of ``w_r = max_i lambda_i alpha^|i - r|`` in the bound ``1 - sum_r g_r w_r``.

**Solved without an LP solver** (:func:`solve_flow_by_sweep`). For a fixed v the rows are
feasible exactly when one left-to-right sweep finds them so: with ``F_(j-1)`` the net
value crossing edge (j-1, j) rightwards, node j holds ``s_j = g_j - d_j + psi(F_(j-1))``
(``d_j = v`` on S, 0 elsewhere; ``psi(f) = alpha f`` for f > 0, f otherwise) and can send
at most ``F_j = phi(s_j)`` right (``phi(s) = s`` for s >= 0, ``s / alpha`` otherwise: a
deficit asks the right neighbour for ``-s / alpha``). Both maps are increasing, so the
largest flow at every edge is best for every node after it, and v is feasible iff
``F_n >= 0``. ``phi`` and ``psi`` are concave and positively homogeneous, so ``F_n`` is a
concave piecewise-linear function of v, linear on each piece as ``sum_j c_j (g_j - d_j)``
with ``c_j = dF_n/dg_j`` (a product of slopes in {alpha, 1, 1/alpha}). Newton's step
``v <- sum_j c_j g_j / sum_(j in S) c_j`` therefore never lands below the optimum and
descends onto it in finitely many pieces (in exact arithmetic; on pieces of slope ~alpha^-n
rounding stalls it, and a bracket [feasible, infeasible] falls back to bisection, as it
does where a step would shrink it too little); at the optimum the same ``c_j`` are the duals:
they satisfy ``alpha <= c_j / c_(j+1) <= 1/alpha`` by construction, and
``sum_j c_j g_j / sum_S c_j`` is the optimum, so ``c`` on S, normalised, is an optimal lambda.
Each sweep is O(n); at alpha = 0.999, n = 30,000 this replaced 68 s of dual simplex.

T is recovered from flows that move no more value than needed (:func:`_least_flows`) by
:func:`remap_from_flows` (a path decomposition: after cancelling opposite flows on each
edge, value travels as one stream a direction and each node keeps the back of it, so T
has at most about 2n + 1 non-zeros), and certified as every
factored mechanism is: the upper bound is the exact worst loss of the returned ``G T``,
the lower bound prices the LP's multipliers exactly
(:func:`~dpopt.programs.column_generation.solve_zero_one_by_flow`).

Why it matters (issue 16): column generation on the zero-one master tails off at small
epsilon (alpha = 0.999, n = 2000: 500 rounds, > 300 s, gap 4e-6), because the optimum is
massively degenerate: the end counts' surplus reaches the middle outputs by any of many
equally good chains of moves. The flow LP has no such choice to make.
"""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass

import highspy
import numpy as np
from scipy import sparse

from dpopt.mechanisms.geometric import column_weights
from dpopt.problems.count_query import CountQuery
from dpopt.programs.basis import basic_solution
from dpopt.solvers import SOLVER_OPTIONS, new_highs, run_interruptibly
from dpopt.validation import SolverError

__all__ = ["FlowSolution", "solve_flow_by_sweep", "solve_flow_program", "remap_from_flows"]

INF = highspy.kHighsInf
#: The dual simplex, measured against interior point (n = 10,000, one process): alpha =
#: 0.999 4.8 against 3.5 s, alpha = 0.99 1.7 against 5.3 s, alpha = 0.9 0.37 against 7.5 s
#: (n = 5000, alpha = 0.999: HiGHS's default 1.4 s, primal simplex 2.5 s, dual 1.3 s).
HIGHS_FLOW_OPTIONS = {**SOLVER_OPTIONS["HIGHS"], "solver": "simplex", "simplex_strategy": 1}


@dataclass(frozen=True)
class FlowSolution:
    """The flow LP's optimum.

    Values are in units of the inner diagonal ``(1 - alpha) / (1 + alpha)`` (so of order
    one), which keeps HiGHS's absolute tolerances meaningful.

    Attributes
    ----------
    value : float
        ``min_(i in S) x[i, i]`` in those units.
    right, left : numpy.ndarray
        ``right[j]`` (length n): value sent from j to j+1; ``left[j]`` (length n+1,
        ``left[0] = 0``): value sent from j to j-1.
    lam : numpy.ndarray
        The LP's multipliers of the rows of S (zero elsewhere), summing to one.
    supply : numpy.ndarray
        ``g_r`` in the same units: the value each count starts with.
    seconds : float
    """

    value: float
    right: np.ndarray
    left: np.ndarray
    lam: np.ndarray
    supply: np.ndarray
    seconds: float


def _supply(n: int, alpha: float) -> np.ndarray:
    """``g_r`` in units of the inner diagonal ``(1 - alpha) / (1 + alpha)``: what each count starts with."""
    return column_weights(n, alpha) * (1 + alpha) / (1 - alpha)


def _program(problem: CountQuery, supply: np.ndarray) -> tuple[highspy.HighsLp, sparse.csc_array, np.ndarray]:
    """The flow LP: columns ``v_0..v_n, b_0..b_(n-1), a_1..a_n``; rows: one per node, then the v chain.

    Returns the LP, its constraint matrix and the bound each row sits at when tight.
    """
    n, alpha = problem.n, problem.alpha
    size = n + 1
    support = np.asarray(problem.support)
    v, b, a = np.arange(size), size + np.arange(n), size + n + np.arange(n)
    inner = np.arange(n)
    rows = np.concatenate([inner, inner + 1, inner + 1, inner, support, size + inner, size + inner])
    cols = np.concatenate([b, b, a, a, v[support], v[:-1], v[1:]])
    values = np.concatenate([-np.ones(n), np.full(n, alpha), -np.ones(n), np.full(n, alpha),
                             -np.ones(support.size), np.ones(n), -np.ones(n)])
    matrix = sparse.csc_array((values, (rows, cols)), shape=(size + n, size + 2 * n))
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = matrix.shape[1], matrix.shape[0]
    lp.col_cost_ = _costs(matrix.shape[1])
    lp.col_lower_ = np.concatenate([np.full(size, -INF), np.zeros(2 * n)])
    lp.col_upper_ = np.full(matrix.shape[1], INF)
    row_bound = np.concatenate([-supply, np.zeros(n)])
    lp.row_lower_ = row_bound
    lp.row_upper_ = np.concatenate([np.full(size, INF), np.zeros(n)])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = matrix.indptr
    lp.a_matrix_.index_ = matrix.indices
    lp.a_matrix_.value_ = matrix.data
    return lp, matrix, row_bound


def _costs(count: int) -> np.ndarray:
    costs = np.zeros(count)
    costs[0] = -1.0  # maximise v_0 (= every v_j)
    return costs


def solve_flow_program(problem: CountQuery) -> FlowSolution:
    """Solve the flow LP (zero-one loss) with HiGHS; values and duals from its basis by SuperLU.

    HiGHS's own values miss by up to its 1e-10 absolute tolerance, which matters where the
    optimum is near 0 (S one count: every row sent to it) or the diagonal is tiny (alpha =
    0.999: v ~ 5e-4 of the unit); :func:`dpopt.programs.basis.basic_solution` recomputes
    them from the optimal basis (HiGHS's are kept if that basis is numerically singular).

    Raises
    ------
    SolverError
        If HiGHS does not report an optimum.
    """
    start = time.perf_counter()
    n, alpha = problem.n, problem.alpha
    supply = _supply(n, alpha)
    lp, matrix, row_bound = _program(problem, supply)
    h = new_highs(HIGHS_FLOW_OPTIONS)
    h.passModel(lp)
    run_interruptibly(h)
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise SolverError("HIGHS", h.modelStatusToString(status), "(zero-one flow program)")
    exact = basic_solution(h, matrix, _costs(matrix.shape[1]), row_bound)
    if exact is None:  # pragma: no cover - not seen: the basis of a path LP
        solution = h.getSolution()
        exact = np.asarray(solution.col_value), np.asarray(solution.row_dual)
    x, duals = exact
    support = np.asarray(problem.support)
    lam = np.zeros(n + 1)
    lam[support] = np.clip(duals[support], 0.0, None)  # >= rows of min -v: duals >= 0 (HiGHS and B^T y = c_B agree)
    total = lam.sum()
    lam = lam / total if total > 0 else np.where(np.isin(np.arange(n + 1), support), 1.0 / support.size, 0.0)
    right = np.clip(x[n + 1 : 2 * n + 1], 0.0, None)
    left = np.concatenate([[0.0], np.clip(x[2 * n + 1 :], 0.0, None)])  # left[j]: j -> j-1, left[0] = 0
    return FlowSolution(value=float(x[0]), right=right, left=left, lam=lam, supply=supply,
                        seconds=time.perf_counter() - start)


#: Newton or bisection steps :func:`solve_flow_by_sweep` takes before it gives up (and the
#: caller solves the LP): bisection alone needs about 50 to close the bracket to
#: SWEEP_TOLERANCE, and Newton's steps, each onto a new linear piece of ``F_n``, fewer.
SWEEP_STEPS = 200
#: The bracket [feasible v, infeasible v] is closed at this relative width: a few ulps of
#: the sums the steps divide.
SWEEP_TOLERANCE = 1e-14


def solve_flow_by_sweep(problem: CountQuery) -> FlowSolution | None:
    """The flow LP's optimum and duals by Newton's method on the feasibility sweep (module docstring).

    Returns None if the iteration does not settle (the caller then solves the LP with
    HiGHS, :func:`solve_flow_program`). The values are those of one float64 sweep at the
    optimum, so a node's row may miss by rounding; the caller certifies the remap exactly.
    """
    start = time.perf_counter()
    n, alpha = problem.n, problem.alpha
    supply = _supply(n, alpha)
    in_s = np.zeros(n + 1, dtype=bool)
    in_s[np.asarray(problem.support)] = True
    g, wanted = supply.tolist(), in_s.tolist()
    # the optimum lies in [low, high]: every node keeping its own count is feasible, and x[i, i] <= 1
    low, high = float(supply[in_s].min()), (1 + alpha) / (1 - alpha)
    above = _sweep(g, wanted, high, alpha)
    if above[1][-1] >= 0.0:  # pragma: no cover - every output answered surely: only n = 0, which never comes here
        low = high
    v = high
    for _ in range(SWEEP_STEPS):
        if high - low <= SWEEP_TOLERANCE * high:
            break
        swept = above if v == high else _sweep(g, wanted, v, alpha)
        if swept[1][-1] >= 0.0:
            low = v
        else:
            high, above = v, swept
        # Newton's step (the tangent's root, >= the optimum) where it shrinks the bracket
        # well; bisection where rounding stalls it on pieces of slope ~alpha^-n
        weights = _slopes(*swept, alpha, in_s)
        tangent = float(weights @ supply) / float(weights[in_s].sum())  # (inf: a weight off S overflowed)
        middle = 0.5 * (low + high)
        v = tangent if low < tangent < high - 0.25 * (high - low) else middle
    else:  # pragma: no cover - bisection alone takes fewer steps
        return None
    weights = _slopes(*above, alpha, in_s)  # the duals of the piece just above the optimum
    lam = np.where(in_s, weights, 0.0)
    for v in low * (1.0 - np.array(FLOW_BACKOFFS)):  # at the feasible v just below it, or a hair lower
        flow, overdrawn = _least_flows(g, wanted, v, alpha)
        if overdrawn <= OVERDRAW_TOLERANCE * float(supply.max()):
            break
    right = np.clip(flow, 0.0, None)
    left = np.concatenate([[0.0], np.clip(-flow, 0.0, None)])
    return FlowSolution(value=float(v), right=right, left=left, lam=lam / lam.sum(), supply=supply,
                        seconds=time.perf_counter() - start)


#: Relative steps below the bracket's feasible end at which :func:`solve_flow_by_sweep` reads
#: the flows, first to last, until :func:`_least_flows` overdraws no node by more than
#: :data:`OVERDRAW_TOLERANCE`. On pieces of slope ~alpha^-n the bracket's end is feasible
#: for the left-to-right sweep by an ulp while the mirrored sweep of the right part finds an
#: ulp's deficit, grown by 1 / alpha a step: at n = 39, alpha = 0.095 (explore profile)
#: node 0 was asked for 1.8e6 with 1.1 to give, and its row lost everything (worst loss 1.0
#: against the optimum 0.0867; the route then fell back to column generation). 1e-15 lower,
#: both sweeps have slack to spare and the remap is within 1e-15 of the optimum.
FLOW_BACKOFFS = (0.0, 1e-15, 1e-14, 1e-13, 1e-12)
#: Largest overdraw (in units of the largest supply) :func:`_least_flows` may leave: rounding.
OVERDRAW_TOLERANCE = 1e-12


def _sweep(g: list[float], wanted: list[bool], v: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One left-to-right sweep at v: what each node holds (``s_j``) and the largest flow it sends right (``F_j``).

    ``F_n`` (the last entry) is node n's surplus (>= 0: v is feasible) or its unmet
    deficit divided by alpha. Far above the optimum a deficit can grow by 1/alpha a step
    until it is -inf; only the signs are read from there (:func:`_slopes`).
    """
    held, flow = [0.0] * len(g), [0.0] * len(g)
    carried = 0.0
    for j, (own, in_s) in enumerate(zip(g, wanted)):
        s = _holds(own - v if in_s else own, carried, alpha)
        carried = s if s >= 0.0 else s / alpha
        held[j], flow[j] = s, carried
    return np.array(held), np.array(flow)


def _holds(own: float, carried: float, alpha: float) -> float:
    """What a node holds (``s_j``): its own surplus plus ``psi`` of the flow over its left edge."""
    return own + (alpha * carried if carried > 0.0 else carried)


def _least_flows(g: list[float], wanted: list[bool], v: float, alpha: float) -> tuple[np.ndarray, float]:
    """Net flows ``f_j`` across edges (j, j+1) at a feasible v that move no more value than needed,
    and the largest overdraw (``least - most`` below) they leave a node with.

    The sweep's own flows send every surplus right as far as it goes, so every count's
    value would travel (worth alpha^k after k steps) and T would spread each row along
    long chains. Here ``f_j`` must lie in ``[-H_j, phi(s_j)]``: at most what nodes
    0..j can send on (given the flows chosen before), at least what nodes j+1..n need
    (``H_j``, what they could send left, from the mirrored sweep). Choosing the point of
    that interval nearest 0 keeps the next interval non-empty (nodes j+1..n are feasible
    with whatever crossed edge j), so one more sweep gives a feasible flow with least
    transport: positive ``f_j`` is value leaving j rightwards, negative ``-f_j`` value
    leaving j + 1 leftwards.
    """
    spare = _sweep(g[::-1], wanted[::-1], v, alpha)[1][::-1][1:]  # H_j for the edges j = 0..n-1
    flows = np.zeros(len(g) - 1)
    carried, overdrawn = 0.0, 0.0
    for j in range(len(g) - 1):
        s = _holds(g[j] - v if wanted[j] else g[j], carried, alpha)
        most, least = (s if s >= 0.0 else s / alpha), -spare[j]
        # least > most by rounding where both sides are tight: follow the right part's plan
        # (node j overdrawn by an ulp); taking ``most`` instead would ask the right part for an
        # ulp more than it has, a shortfall that grows by 1 / alpha a step
        overdrawn = max(overdrawn, least - most)
        carried = least if least > most else max(least, min(0.0, most))
        flows[j] = carried
    return flows, overdrawn


def _slopes(held: np.ndarray, flow: np.ndarray, alpha: float, in_s: np.ndarray) -> np.ndarray:
    """``c_j = dF_n/dg_j`` scaled so that the largest on S is 1 (entries off S may overflow to inf).

    ``ln c_j`` is the sum over nodes k >= j of ln phi'(s_k) and over edges k >= j of ln psi'(F_k).
    """
    step = np.where(held < 0.0, -np.log(alpha), 0.0)
    step[:-1] += np.where(flow[:-1] > 0.0, np.log(alpha), 0.0)
    log_c = np.cumsum(step[::-1])[::-1]
    with np.errstate(over="ignore"):
        return np.exp(log_c - log_c[in_s].max())


def remap_from_flows(alpha: float, supply: np.ndarray, right: np.ndarray, left: np.ndarray) -> sparse.csr_array:
    """T from a flow on the path: ``T[r, i]`` = the share of count r's value that output i keeps.

    Parameters
    ----------
    alpha : float
        Decay per step.
    supply : numpy.ndarray
        ``g_r`` (any common scale) for r = 0..n: the value each count starts with.
    right, left : numpy.ndarray
        ``right[j]`` (length n): value leaving j towards j+1; ``left[j]`` (length n+1,
        ``left[0] = 0``): value leaving j towards j-1. Value arrives times alpha.

    Opposite flows on an edge are cancelled first (each node keeps the difference, which
    only raises what outputs keep), so every edge carries value one way. Value travels as
    one stream a direction: each node puts its count behind what arrives, keeps the back
    of the stream (what it does not send on) and lets the front go on, so at most one
    piece per node is split: T has at most about ``2n + 1`` non-zeros. A piece is held as
    (origin r, its share of g_r): its value at node i is that times ``alpha^|i - r|``,
    which is read only to cut the stream, and its mass in row r is the share over g_r,
    so nothing is rescaled as the stream moves (the whole decomposition is O(n + pieces),
    and no piece underflows however far it travels). A row's masses sum to one up to
    rounding, and :meth:`FactoredMechanism.from_remap` renormalises.
    """
    size = supply.size
    n = size - 1
    right = np.concatenate([np.asarray(right, dtype=float), [0.0]])
    left = np.asarray(left, dtype=float).copy()
    both = np.minimum(right[:n], left[1:])
    right[:n] -= both
    left[1:] -= both
    log_alpha = float(np.log(alpha))
    kept: list[list[list[float]]] = [[[j, float(supply[j])]] for j in range(size)]
    for order, flow in ((range(size), right), (range(size - 1, -1, -1), left)):
        stream: deque[list[float]] = deque()  # pieces in transit, the farthest origin at the front
        carried = 0.0  # the stream's value at the current node
        for j in order:
            if flow[j] <= 0.0:
                kept[j].extend(stream)  # everything that arrived stays here
                stream, carried = deque(), 0.0
                continue
            for piece in kept[j]:
                carried += piece[1] * math.exp(abs(j - piece[0]) * log_alpha)
            stream.extend(kept[j])
            stays = max(carried - float(flow[j]), 0.0)
            kept[j] = _keep_back(stream, stays, j, log_alpha)
            carried = (carried - stays) * alpha  # what arrives at the next node
    return _masses(kept, supply)


def _keep_back(stream: deque[list[float]], amount: float, node: int, log_alpha: float) -> list[list[float]]:
    """Take ``amount`` of value (at ``node``) off the back of ``stream`` (splitting one piece at most)."""
    out = []
    while amount > 0.0 and stream:
        origin, share = stream[-1]
        value = share * math.exp(abs(node - origin) * log_alpha)
        if value <= amount:
            out.append(stream.pop())
            amount -= value
        else:
            part = share * (amount / value)
            out.append([origin, part])
            stream[-1][1] = share - part
            amount = 0.0
    return out


def _masses(kept: list[list[list[float]]], supply: np.ndarray) -> sparse.csr_array:
    pieces = [(origin, j, share) for j, held in enumerate(kept) for origin, share in held if share > 0.0]
    origins, outputs, shares = (np.array(column) for column in zip(*pieces))
    size = supply.size
    masses = shares / supply[origins.astype(int)]
    return sparse.csr_array((masses, (origins.astype(int), outputs.astype(int))), shape=(size, size))  # duplicates are summed
