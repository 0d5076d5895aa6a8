"""Methods for :class:`~dpopt.problems.multi_level.MultiLevelRelease` (Algorithm 1).

* ``closed_form`` -- ``T_{alpha,beta} = G_alpha^{-1} G_beta`` by the exact tridiagonal solve.
* ``lp`` -- each ``T`` as the feasibility LP ``G_alpha T = G_beta``, T row-stochastic
  (an independent route to the same remaps; T is unique because G is invertible).
* ``factored`` -- the same T as "keep, or redraw from G_beta"
  (:class:`~dpopt.mechanisms.multilevel.FactoredChain`): no matrices, any n up to
  :data:`~dpopt.limits.MAX_COUNT`. The dense routes need ``n epsilon_1 <= 700`` (below
  that alpha_1^n is no normal double) and (n+1)^2 floats per matrix; ``auto`` takes
  ``closed_form`` where it applies, for the matrices it exports, and ``factored`` beyond.

The objective is the largest deviation of any level's chain marginal from
``G_{alpha_i}`` (zero up to round-off); the certificate is that of level 1, which
bounds what any coalition learns (Lemma 4). ``details["levels"]`` certifies each level.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpopt.certificates import Certificate, adjacent_pairs, certify, repair as repair_matrix
from dpopt.lazy_modules import cvxpy as cp
from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.exact_sampling import EXACT_SAMPLER
from dpopt.limits import UNDERFLOW_EXPONENT
from dpopt.mechanisms.multilevel import FACTORED_CHAIN_SAMPLER, FactoredChain, level_remap, sample_chain
from dpopt.problems.multi_level import MultiLevelRelease
from dpopt.export import StoredSolution, check_labels, stored_fields
from dpopt.registry import register, register_reader
from dpopt.sampling import RandomSource
from dpopt.solution import Solution, mechanism_frame
from dpopt.solvers import run_program

KIND = "multi_level_release"
#: Largest deviation of a level's chain marginal from G at its alpha (the objective, whose
#: optimum is 0) for which the chain is reported exact. Near alpha = 1, G is nearly singular:
#: the feasibility LP at alphas (0.999999, 0.9999999), n = 10, deviated by 2.8e-5 and was
#: reported exact until 2026-11-28 (the tridiagonal solve: 3.1e-10).
MARGINAL_TOLERANCE = 1e-9


def _solution(problem: MultiLevelRelease, remaps: list[np.ndarray], **fields: object) -> Solution:
    first = geometric_matrix(problem.n, problem.levels[0])
    marginal, deviation, levels = first, 0.0, []
    for i, alpha in enumerate(problem.levels):
        if i:
            marginal = marginal @ remaps[i - 1]
        target = geometric_matrix(problem.n, alpha)
        deviation = max(deviation, float(np.abs(marginal - target).max()))
        cert = certify(marginal, -np.log(alpha))
        levels.append({"alpha": alpha, "epsilon": float(-np.log(alpha)), "certificate": cert.to_dict()})
    # no renormalisation: the exact sampler normalises every row exactly, so what is exported,
    # read back and sampled is bit for bit the same table
    clean = [np.clip(t, 0.0, None) for t in remaps]

    def sampler(row: int, count: int, source: RandomSource) -> np.ndarray:
        return sample_chain(first, clean, row, count, source)

    if deviation > MARGINAL_TOLERANCE:  # the remaps are not G_a^-1 G_b: still certified level by level, not exact
        fields = {**fields, "status": "gap_above_tolerance"}
    cert = certify(first, problem.epsilon, method="by_construction: level 1 is the geometric mechanism; later levels post-process it")
    failed = [i + 1 for i, level in enumerate(levels) if not level["certificate"]["ok"]]
    if failed:  # the release as a whole is not certified if any level is not
        cert = dataclasses.replace(cert, ok=False, method=f"measured: level(s) {failed} fail their own certificate")
    return Solution(
        problem=problem,
        certificate=cert,
        dense=mechanism_frame(first),
        objective=deviation,
        exact=deviation <= MARGINAL_TOLERANCE,
        seconds=0.0,
        details={"levels": levels, "remaps": [mechanism_frame(t) for t in clean]},
        sampler=sampler,
        sampling=EXACT_SAMPLER,  # sample_chain draws every level exactly
        **fields,
    )


def _chain_memory(problem: MultiLevelRelease) -> tuple[float, str]:
    """Bytes of the dense chain: k remaps, k marginals and their checks, (n+1)^2 floats each."""
    return 8.0 * 6 * len(problem.levels) * (problem.n + 1) ** 2, "n"


_DENSE = f"n x epsilon_1 <= {UNDERFLOW_EXPONENT:g} (the dense chain's entries down to alpha_1^n stay normal doubles)"


@register(KIND, "closed_form", exact=True, uses_solver=False, cost=lambda p: len(p.levels) * (p.n + 1) ** 2, memory=_chain_memory,
          applies=lambda p: p.dense_fits, requires=_DENSE, summary="T = G_a^-1 G_b by the tridiagonal inverse (Lemma 3)")
def solve_closed_form(problem: MultiLevelRelease, solver: str | None, repair: bool) -> Solution:
    levels = problem.levels
    remaps = [level_remap(problem.n, a, b) for a, b in zip(levels[:-1], levels[1:])]
    return _solution(problem, remaps, method="closed_form", solver="none", status="closed_form")


@register(KIND, "lp", exact=True, uses_solver=True, cost=lambda p: len(p.levels) * (p.n + 1) ** 3, applies=lambda p: p.dense_fits,
          requires=_DENSE, memory=lambda p: (_chain_memory(p)[0] + 1500.0 * (p.n + 1) ** 2, "n"),
          summary="feasibility LP G_a T = G_b per level pair")
def solve_lp(problem: MultiLevelRelease, solver: str | None, repair: bool) -> Solution:
    remaps, solvers, statuses = [], set(), set()
    for a, b in zip(problem.levels[:-1], problem.levels[1:]):
        size = problem.n + 1
        t = cp.Variable((size, size), nonneg=True, name="T")
        program = cp.Problem(
            cp.Minimize(0),
            [cp.sum(t, axis=1) == 1, geometric_matrix(problem.n, a) @ t == geometric_matrix(problem.n, b)],
        )
        info = run_program(program, solver=solver, owner="multi_level_release lp")
        remaps.append(t.value)
        solvers.add(info.solver)
        statuses.add(info.status)
    weights = _mix_until_private(problem, remaps) if repair else []
    solution = _solution(
        problem, remaps, method="lp",
        solver=",".join(sorted(solvers)) or "none", status=",".join(sorted(statuses)) or "optimal",
    )
    if any(weights):
        solution.details["remap_mixing_weights"] = weights
    return solution


# ranked after closed_form (which holds the matrices a user exports) wherever that applies
@register(KIND, "factored", parameters=True, exact=True, uses_solver=False, cost=lambda p: 2.0 * len(p.levels) * (p.n + 1) ** 2,
          memory=lambda p: (4096.0 * len(p.levels), "alphas"),
          summary="each T as keep-or-redraw (T[r] = p_r e_r + (1 - p_r) G_b[r], exact rational p_r): no matrices, any n")
def solve_factored(problem: MultiLevelRelease, solver: str | None, repair: bool) -> Solution:
    chain = FactoredChain(problem.n, problem.levels)
    certificates = [_geometric_certificate(problem.n, a) for a in problem.levels]
    levels = [{"alpha": a, "epsilon": float(-np.log(a)), "certificate": c.to_dict()} for a, c in zip(problem.levels, certificates)]
    stays = chain.stays
    return Solution(
        problem=problem, method="factored", exact=True, solver="none", status="closed_form", seconds=0.0,
        objective=0.0,  # every level's marginal is G at its alpha exactly (the identity in mechanisms.multilevel)
        certificate=certificates[0],
        parameters={"alphas": list(problem.levels), "stay_at_ends": [float(e) for e, _ in stays],
                    "stay_inside": [float(i) for _, i in stays]},
        details={"levels": levels, "chain": chain},
        sampler=lambda row, count, source: chain.sample(row, count, source), sampling=FACTORED_CHAIN_SAMPLER,
    )


def _geometric_certificate(n: int, alpha: float) -> Certificate:
    """G_{n,alpha}'s: adjacent rows differ by the factor alpha in every column, exactly (Definition 4)."""
    smallest = float(np.exp(n * np.log(alpha) - np.log1p(alpha)))  # alpha^n / (1 + alpha), 0 where it underflows
    return Certificate.measured(float(-np.log(alpha)), float(-np.log(alpha)), (0, 1, 0), smallest, 0.0,
                                method="by_construction: the geometric mechanism, adjacent rows differ by alpha^(+-1) in every "
                                       "column; later levels post-process level 1 (keep-or-redraw)")


def _mix_until_private(problem: MultiLevelRelease, remaps: list[np.ndarray]) -> list[float]:
    """Make each level's marginal meet its epsilon by mixing its remap with the uniform one, in place.

    An interior-point solver's T is feasible to ~1e-8, so a level's marginal ``M T`` can
    exceed its epsilon by more than the certificate's tolerance (Clarabel on the shipped
    three-level file). ``(1 - lam) T + lam U`` gives the marginal ``(1 - lam) M T + lam U``
    (M's rows sum to 1), so the weight that :func:`dpopt.certificates.repair` finds for the
    marginal repairs the remap; levels are repaired in order, each on the repaired chain.
    Returns the weights (0 where the level already passed).
    """
    size = problem.n + 1
    pairs = adjacent_pairs(size)
    marginal = geometric_matrix(problem.n, problem.levels[0])
    weights = []
    for i, alpha in enumerate(problem.levels[1:]):
        t = np.clip(remaps[i], 0.0, None)
        t /= t.sum(axis=1, keepdims=True)
        weight = repair_matrix(marginal @ t, -float(np.log(alpha)), pairs=pairs)[1].mixing_weight
        if weight:
            t = (1.0 - weight) * t + weight / size
        remaps[i] = t
        weights.append(float(weight))
        marginal = marginal @ t
    return weights


#: Largest deviation of a level's chain marginal from G at its alpha accepted on read
#: (the closed form and the LP reach ~1e-15 and ~1e-10).
CHAIN_TOLERANCE = 1e-8


@register_reader(KIND)
def read_multi_level(problem: MultiLevelRelease, stored: StoredSolution) -> Solution:
    """Rebuild an exported chain, refusing it unless every remap is stochastic and every
    level's marginal is G at that level's alpha (GS Lemma 3): an edited remap could
    otherwise release level 2 with level 1's accuracy. A factored chain (parameters, no
    table) is rebuilt from its problem, and refused unless its stored stay probabilities
    are that chain's."""
    if stored.table is None:
        return _read_factored(problem, stored)
    size = list(range(problem.n + 1))
    first = check_labels(stored, size, size)
    if np.abs(first - geometric_matrix(problem.n, problem.levels[0])).max() > CHAIN_TOLERANCE:
        raise stored.fail("its first level is not the geometric mechanism at alpha_1")
    tables = stored.meta.get("tables", {}).get("remaps")
    if tables is None and len(problem.levels) == 1:  # one level: a chain of no remaps, which the export leaves out
        tables = []
    if not isinstance(tables, list) or len(tables) != len(problem.levels) - 1:
        raise stored.fail(f"it does not hold the {len(problem.levels) - 1} remaps of its chain")
    remaps = []
    for level, table in enumerate(tables, start=2):
        t = np.array(table["data"], dtype=float)
        if t.shape != (problem.n + 1, problem.n + 1) or not np.isfinite(t).all() or t.min() < 0:
            raise stored.fail(f"the remap into level {level} is not a non-negative {problem.n + 1} x {problem.n + 1} matrix")
        if np.abs(t.sum(axis=1) - 1.0).max() > 1e-9:
            raise stored.fail(f"the remap into level {level} is not row-stochastic")
        remaps.append(t)
    solution = _solution(problem, remaps, **stored_fields(stored))
    if solution.objective > CHAIN_TOLERANCE:
        raise stored.fail(f"a level's marginal is not G at its alpha (deviation {solution.objective:.3g})")
    return solution


def _read_factored(problem: MultiLevelRelease, stored: StoredSolution) -> Solution:
    fresh = solve_factored(problem, None, True)
    params = stored.meta.get("parameters")
    for key in ("alphas", "stay_at_ends", "stay_inside"):
        value = params.get(key) if isinstance(params, dict) else None
        if not isinstance(value, list) or len(value) != len(fresh.parameters[key]) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise stored.fail(f"its parameters do not hold the chain's {key}")
        if not np.allclose(value, fresh.parameters[key], rtol=1e-12, atol=0.0):
            raise stored.fail(f"its {key} ({value}) are not those of its problem's chain ({fresh.parameters[key]})")
    return dataclasses.replace(fresh, **stored_fields(stored))
