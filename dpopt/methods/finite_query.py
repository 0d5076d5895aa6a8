"""Methods for :class:`~dpopt.problems.finite_query.FiniteQuery` (Wu-Xia-He on a finite universe).

* ``lp`` -- the optimal mechanism (:mod:`dpopt.programs.finite_query`), repaired to exact
  privacy (:func:`mix_until_certified`: rounds of a private majorant, else the smallest mix
  with a constant mechanism), certified.
* ``value_lp`` -- the best mechanism whose row depends on a dataset only through its value
  (:class:`~dpopt.programs.finite_query.ValueQuotient`: the LP with one row per value), an
  upper bound on the LP optimum and a lower bound on every value-based construction; ``auto``
  takes it when ``lp`` does not apply (the benchmark's random universe with m = 5000).
* ``staircase``, ``privacy_first``, ``compositional``, ``utility_first``,
  ``weighted_utility_first``, ``weighted_privacy_first``, ``ladder``, ``exponential`` --
  the paper's constructions (:mod:`dpopt.mechanisms.set_sequences`), upper bounds on the
  LP optimum, each at the parameter ``calibrate_shortcuts`` asks for (measured: the
  largest whose measured loss meets epsilon; proof: epsilon / 2), with its certificate
  measured on the matrix.

On a finite universe with the counting measure, Section 7's exponential mechanism (score
``-d̄(x, f^-1(r))``, sensitivity 1, ``exp(eps q / 2)``) *is* Theorem 2's mechanism at
parameter eps / 2, as the paper remarks; both are registered so each can be asked for
by name, and they agree to the last digit.
"""

from __future__ import annotations

import dataclasses

from typing import Any, Callable

import numpy as np

from dpopt.certificates import MAJORANT_ROUNDS, Certificate, log_ratios
from dpopt.export import StoredSolution, check_labels, stored_fields
from dpopt.mechanisms import set_sequences as seq
from dpopt.problems.finite_query import FiniteQuery
from dpopt.programs.finite_query import (MAX_PRIVACY_ROWS, OutputSubset, ScaledLoss, ValueQuotient, build_finite_program, check_lp_size,
                                         class_edges, loss_classes, loss_scale, program_lower_bound, solve_finite_lp,
                                         undominated_outputs)
from dpopt.registry import register, register_reader
from dpopt.solution import Solution, mechanism_frame
from dpopt.solvers import MAX_COEFFICIENT_EXPONENT
from dpopt.validation import SolverError

KIND = "finite_query"

__all__ = ["certify_finite", "graph_majorant", "mix_until_certified", "privacy_decay", "trusted_minorant"]


def certify_finite(problem: FiniteQuery, x: np.ndarray, *, repair: str = "none", weight: float = 0.0, method: str = "measured") -> Certificate:
    """Privacy of an m x |R| matrix over the problem's pairs, as a loss normalised to epsilon.

    For ``privacy = "neighbours"`` this is the largest ``|ln(x[a, r] / x[b, r])|`` over
    neighbours; for ``"metric"`` the largest such log ratio divided by ``d̄(a, b)``, times
    epsilon (so ``ok`` means ``x[a, r] <= e^(eps d̄(a, b)) x[b, r]`` for every pair).
    """
    pairs, bounds = problem.privacy_pairs(implied=True)
    half = len(pairs) // 2
    pairs, bounds = pairs[:half], bounds[:half]  # |ln ratio| is symmetric
    losses = log_ratios(np.clip(x[pairs[:, 0]], 0.0, None), np.clip(x[pairs[:, 1]], 0.0, None))
    scale = np.where(bounds > 0, problem.epsilon / np.where(bounds > 0, bounds, 1.0), np.inf)
    with np.errstate(invalid="ignore"):
        normalised = np.where(losses > 1e-13, losses * scale[:, None], 0.0)
    worst = int(np.argmax(normalised)) if normalised.size else 0
    p, r = divmod(worst, x.shape[1])
    loss = float(normalised.ravel()[worst]) if normalised.size else 0.0
    return Certificate.measured(
        loss, problem.epsilon, (int(pairs[p, 0]), int(pairs[p, 1]), r) if len(pairs) else (0, 0, 0),
        float(x.min()), float(np.abs(x.sum(axis=1) - 1.0).max()), repair=repair, mixing_weight=weight, method=method,
    )


def graph_majorant(problem: FiniteQuery, x: np.ndarray, decay: np.ndarray | None = None) -> np.ndarray:
    """The smallest ``y >= x`` meeting every privacy row: ``y[a, r] = max_c e^(-eps D(a, c)) x[c, r]``.

    ``D`` is the distance whose ``e^(eps D)`` bounds each pair's ratio: for neighbour privacy
    the hop distance in the neighbour graph (d̄ for a universe given by edges; for a metric,
    its pairs at distance <= 1, and D = inf, a zero weight, between components), for metric
    privacy d̄ itself. Each term ``e^(-eps D(a, c)) x[c, r]`` meets every row because D is a
    metric with D <= 1 on neighbours (resp. D = d̄), and a private ``y >= x`` must be at
    least each term by chaining rows along a shortest path: the graph form of the
    log-Lipschitz majorant that repairs count-query LPs on a path. It moves entries only by
    the violations the solver left, so the mix that follows is tiny. (Until 2026-11-28 it
    used d̄ for neighbour privacy too, which on a metric universe is private but far from
    smallest: it raised entries of non-neighbours and cost one random probe 150 times the
    LP optimum.)
    """
    if decay is None:
        decay = privacy_decay(problem)
    # one output at a time: m x m memory, not the m x m x |R| array (244 MB on the 1044 graphs)
    return np.column_stack([np.max(decay * x[None, :, r], axis=1) for r in range(x.shape[1])])


def privacy_decay(problem: FiniteQuery) -> np.ndarray:
    """``e^(-eps D)`` of :func:`graph_majorant` (m x m; exp(-inf) = 0), formed once per repair and
    passed to every round, not once per round."""
    return np.exp(-problem.epsilon * _privacy_distances(problem))


def _privacy_distances(problem: FiniteQuery) -> np.ndarray:
    """D of :func:`graph_majorant`: hops between neighbours (inf between components), or d̄ for metric privacy."""
    return problem.universe.neighbour_hops if problem.privacy == "neighbours" else problem.universe.distances


def mix_until_certified(problem: FiniteQuery, x: np.ndarray) -> tuple[np.ndarray, Certificate]:
    """Clip and renormalise; raise to the smallest private majorant and renormalise; if that does
    not pass, repeat from two starts until the certificate passes, or else mix with a constant
    mechanism, and keep the cheapest result.

    The starts are the rows as they are and the rows with the residual bumps among their small
    entries lowered (:func:`trusted_minorant`). Each round of majorant and renormalisation
    (up to :data:`~dpopt.certificates.MAJORANT_ROUNDS`) moves ratios only by the rows' differing
    gains, so the violations shrink round by round, as in the count-query repair
    (:func:`dpopt.certificates.repair`). A start whose first round does not pass also mixes its
    first majorant with a constant row (one row for every dataset: private with slack for every
    pair) by the smallest weight, found by bisection, that makes the certificate pass: the
    uniform row, or the column means of the majorant (positive wherever a column has mass, so
    it can clear every violation), whichever is cheaper. At tiny epsilon the rows are nearly
    equal and their mean costs what they do, where the uniform row costs far more: on the 156
    six-node graphs at epsilon = 1e-6 a uniform weight of 3.2e-5 left the objective 6.6e-5
    above the certified bound.

    Measured on the path 0..200 (epsilon = 1, absolute loss), whose interior-point rows HiGHS
    calls "imprecise" (one entry of 6.4e-7 between neighbours of 0 and 2e-10): one majorant and
    a mix (the repair until 2026-11-29) left the objective 1.1e-3 above the optimum, twenty
    rounds 4.1e-5, the trusted minorant and twelve rounds 1.6e-7; under squared loss 9.3e-3,
    4.5e-4 (sixteen rounds) and 1.2e-9 (eight).
    """
    y = np.clip(x, 0.0, None)
    y /= y.sum(axis=1, keepdims=True)
    cert = certify_finite(problem, y, repair="clip", method="measured")
    if cert.ok:
        return y, cert
    decay = privacy_decay(problem)
    first = _majorised(problem, y, decay)
    cert = certify_finite(problem, first, repair="clip+majorant", method="measured")
    if cert.ok:
        return first, cert
    found = (_mixes_and_rounds(problem, first, "clip", decay)
             + _repairs_of(problem, trusted_minorant(problem, y, decay), "clip+trusted_minorant", decay))
    return min(found, key=lambda candidate: problem.objective_of(candidate[0]))


#: :func:`trusted_minorant` keeps entries at least this fraction of their row's largest entry.
TRUSTED = 1e-4


def trusted_minorant(problem: FiniteQuery, x: np.ndarray, decay: np.ndarray | None = None) -> np.ndarray:
    """The largest private matrix below ``max(x, F)``, rows renormalised, where F is the
    smallest private matrix above x's trusted entries (at least :data:`TRUSTED` times their
    row's largest).

    F keeps every trusted entry and raises what privacy forces around it; the minorant then
    lowers any bump among the small entries that the trusted ones do not support, and never
    below F (F is private and below ``max(x, F)``). An interior point leaves such bumps where
    the optimum's entries are of order e^-100: on the path 0..200 (epsilon = 1, squared loss)
    a ramp rising by e a row to 4.8e-8 beside an entry of 6.6e-13, which the majorant alone
    answers by raising that entry's whole basin, 4.5e-4 of the objective."""
    big = x >= TRUSTED * x.max(axis=1, keepdims=True)
    floor = graph_majorant(problem, np.where(big, x, 0.0), decay)
    y = _graph_minorant(problem, np.maximum(x, floor))
    return y / y.sum(axis=1, keepdims=True)


def _graph_minorant(problem: FiniteQuery, x: np.ndarray) -> np.ndarray:
    """The largest ``y <= x`` meeting every privacy row: ``y[a, r] = min_c e^(eps D(a, c)) x[c, r]``
    (D as in :func:`graph_majorant`). A dataset in another component (D = inf) bounds nothing;
    a zero entry at finite D bounds to zero, even where ``e^(eps D)`` overflows."""
    distances = _privacy_distances(problem)
    reach = np.isfinite(distances)
    unbounded = np.where(reach, 0.0, np.inf)  # what a zero entry allows
    with np.errstate(over="ignore", invalid="ignore"):  # inf * 0 is replaced by ``unbounded``
        growth = np.where(reach, np.exp(problem.epsilon * np.where(reach, distances, 0.0)), np.inf)
        return np.column_stack([np.min(np.where(x[None, :, r] > 0, growth * x[None, :, r], unbounded), axis=1)
                                for r in range(x.shape[1])])


def _majorised(problem: FiniteQuery, y: np.ndarray, decay: np.ndarray) -> np.ndarray:
    """One round: :func:`graph_majorant`, rows renormalised."""
    z = graph_majorant(problem, y, decay)
    return z / z.sum(axis=1, keepdims=True)


def _repairs_of(problem: FiniteQuery, start: np.ndarray, note: str, decay: np.ndarray) -> list[tuple[np.ndarray, Certificate]]:
    """``start``'s first round if it passes, else :func:`_mixes_and_rounds` of it."""
    first = _majorised(problem, start, decay)
    cert = certify_finite(problem, first, repair=f"{note}+majorant", method="measured")
    return [(first, cert)] if cert.ok else _mixes_and_rounds(problem, first, note, decay)


def _mixes_and_rounds(problem: FiniteQuery, first: np.ndarray, note: str, decay: np.ndarray) -> list[tuple[np.ndarray, Certificate]]:
    """Certified repairs of a first round ``first`` that did not pass: its least mixes with a
    constant row, and the first further round that passes (far from private rows, as in a
    random matrix, the rounds can move more mass than a mix)."""
    found = [_least_mix(problem, first, np.full_like(first, 1.0 / first.shape[1]), "uniform", note),
             _least_mix(problem, first, np.broadcast_to(first.mean(axis=0), first.shape), "column_mean", note)]
    y = first
    for _ in range(MAJORANT_ROUNDS - 1):
        y = _majorised(problem, y, decay)
        cert = certify_finite(problem, y, repair=f"{note}+majorant", method="measured")
        if cert.ok:
            return found + [(y, cert)]
    return found


def _least_mix(problem: FiniteQuery, y: np.ndarray, constant: np.ndarray, name: str, note: str = "clip") -> tuple[np.ndarray, Certificate]:
    """``(1 - w) y + w constant`` with the least w (bisection) whose certificate passes."""
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        if certify_finite(problem, (1 - middle) * y + middle * constant).ok:
            high = middle
        else:
            low = middle
    mixed = (1 - high) * y + high * constant
    return mixed, certify_finite(problem, mixed, repair=f"{note}+majorant+{name}_mix", weight=high, method="measured")


def _solution(problem: FiniteQuery, x: np.ndarray, cert: Certificate, *, exact: bool, **fields: Any) -> Solution:
    return Solution(
        problem=problem, certificate=cert, dense=mechanism_frame(x, rows=range(problem.universe.size), columns=problem.outputs.tolist()),
        objective=problem.objective_of(x), exact=exact, seconds=0.0, **fields,
    )


def _lp_memory(problem: FiniteQuery) -> tuple[float, str]:
    m, k = problem.size
    pairs = len(problem.privacy_pairs()[0])
    return 400.0 * pairs * k + 2000.0 * m * k, "universe"


def _coefficients_fit(bounds: np.ndarray) -> bool:
    """Whether every privacy row's e^(log-bound) is a coefficient HiGHS accepts."""
    return not bounds.size or float(bounds.max()) <= MAX_COEFFICIENT_EXPONENT


def _lp_fits(problem: FiniteQuery) -> bool:
    pairs, bounds = problem.privacy_pairs()
    return len(pairs) * problem.size[1] <= MAX_PRIVACY_ROWS and _coefficients_fit(bounds)


#: Largest relative gap between the lp mechanism's objective and the optimum's lower bound for
#: which it is reported exact (the 1044 graphs' largest measured, epsilon = 4: 7.6e-7);
#: beyond it the mechanism is still certified private, but reported as an upper bound.
#: Objectives below a thousandth of the largest loss are judged against that instead.
EXACT_GAP = 1e-6

#: What the LP routes need of every privacy row's log-bound (epsilon, or epsilon d̄ for metric privacy).
_COEFFICIENTS = f"every privacy row's log-bound at most {MAX_COEFFICIENT_EXPONENT:g} (HiGHS refuses coefficients above 1e15)"


@register(KIND, "lp", exact=True, uses_solver=True, cost=lambda p: float(p.size[0] * p.size[1]) ** 1.5, memory=_lp_memory,
          applies=_lp_fits, requires=f"at most {MAX_PRIVACY_ROWS:,} privacy rows (privacy pairs in both directions x outputs) and {_COEFFICIENTS}",
          summary=f"the optimal mechanism: LP over m x |R| entries, one privacy row per pair, direction and output (<= {MAX_PRIVACY_ROWS:,} rows)")
def solve_lp(problem: FiniteQuery, solver: str | None, repair: bool) -> Solution:
    """The LP's mechanism, claimed exact only when it is within :data:`EXACT_GAP` of the optimum.

    The gap is certified (``lower_bound <= optimum <= objective``) whatever the solver: HiGHS's
    through the dual LP, any other's through its program's duals (:func:`program_lower_bound`).
    Where the solver's rows leave a gap, the rows of ``value_lp`` (a restriction of this LP) are
    taken instead if they are certified and cost less (``details["rows_from"]``).
    """
    check_lp_size(problem)
    x, details, solver_name = _optimal_rows(problem, solver)
    x, cert = _certified(problem, x, repair)
    below, objective = details["lower_bound"], problem.objective_of(x)
    if not _meets_bound(problem, objective, below) and _value_lp_applies(problem):
        # at extreme epsilon and losses (a value of 1e6 beside 0 and 0.5, squared, epsilon = 30)
        # HiGHS's rows, through the dual and the primal alike, sat at 0.344 above a certified
        # bound of 0.0936; the LP restricted to rows shared by value is a restriction, so its
        # certified rows are a feasible point of this LP, and there they meet the bound
        rows = _value_rows_or_none(problem, solver, repair)
        if rows is not None and rows.certificate.ok and rows.objective < objective:
            x, cert = rows.mechanism.to_numpy(), rows.certificate
            details = {**details, "rows_from": "value_lp (the LP restricted to rows shared by value: a feasible point of this LP)"}
    solution = _solution(problem, x, cert, exact=True, method="lp", solver=solver_name, status="optimal", details=details)
    solution.details["optimality_gap"] = (solution.objective - below) / max(abs(solution.objective), 1e-300)
    if _meets_bound(problem, solution.objective, below):
        return solution
    return dataclasses.replace(solution, exact=False, status="gap_above_tolerance")


def _value_rows_or_none(problem: FiniteQuery, solver: str | None, repair: bool) -> Solution | None:
    """``value_lp``'s solution, or None where its solver fails (the lp's own certified rows stand)."""
    try:
        return solve_value_lp(problem, solver, repair)
    except SolverError:
        return None


def _meets_bound(problem: FiniteQuery, objective: float, below: float) -> bool:
    """Whether ``objective`` is within :data:`EXACT_GAP` of the certified lower bound ``below``.

    An objective far below the losses (2e-13 against losses of 1 to 2.5 at epsilon = 15, where
    the optimum is of order alpha^4) is judged by the absolute gap: 1e-9 of the smallest loss
    the objective can charge, so that at most about 1e-9 of the mass can be misplaced. Until
    2026-11-28 the unit was the largest loss (outputs at +-1e15 made a gap of 6 "exact"), and
    until 2026-11-29 the best constant mechanism's objective, which a value of 1e6 beside 0 and
    0.5 (squared loss, epsilon = 30) made 2.5e11: a mechanism at 0.34 was "exact" beside a
    certified bound of 0.094.
    """
    return objective - below <= EXACT_GAP * max(abs(objective), 1e-3 * _smallest_charge(problem))


def _smallest_charge(problem: FiniteQuery) -> float:
    """The smallest positive amount the objective charges for a unit of mass on one entry: the
    smallest positive loss over the side information (minimax) or of prior weight times loss
    (average); 0 if every entry is free."""
    loss = problem.loss_matrix
    if problem.objective == "minimax":
        charges = loss[list(problem.side_information)]
    else:
        charges = problem.weights[:, None] * loss
    positive = charges[charges > 0]
    return float(positive.min()) if positive.size else 0.0


def _cheapest_outputs_bound(problem: FiniteQuery) -> float:
    """The objective if every dataset could release its cheapest output: a certified lower bound.

    Kept beside the LP's own bound: where the optimum is 0 (every dataset's value released
    surely, the neighbours sharing it) that bound came out a rounding below 0 and the
    reported gap, relative to an objective of 0, was 8.9e284 (explore profile)."""
    cheapest = problem.loss_matrix.min(axis=1)
    if problem.objective == "minimax":
        return float(cheapest[list(problem.side_information)].max())
    return float(problem.weights @ cheapest)


def _optimal_rows(problem: FiniteQuery, solver: str | None) -> tuple[np.ndarray, dict[str, Any], str]:
    """The LP's optimal mechanism (not yet certified), what the solver reported, and the solver's name:
    HiGHS through the dual (:func:`solve_finite_lp`) by default, any other through the cvxpy program;
    on the undominated outputs only, which have the same optimum (:func:`undominated_outputs`)."""
    kept = undominated_outputs(problem.loss_matrix)
    if kept.size == problem.size[1]:
        return _optimal_rows_on(problem, solver)
    subset = OutputSubset(problem, kept)
    x, details, name = _optimal_rows_on(subset, solver)  # type: ignore[arg-type]
    return subset.embed(x), {**details, "dominated_outputs": int(problem.size[1] - kept.size)}, name


def _optimal_rows_on(problem: FiniteQuery, solver: str | None) -> tuple[np.ndarray, dict[str, Any], str]:
    if solver is not None and solver.upper() != "HIGHS":
        from dpopt.solvers import run_program

        scale = loss_scale(problem.loss_matrix)  # the program in units its solver can read
        solved = ScaledLoss(problem, scale) if scale != 1.0 else problem
        program = build_finite_program(solved)
        info = run_program(program.program, solver=solver, owner="finite_query lp")
        # the bound from the program's own duals: until 2026-11-28 another solver's objective was its
        # own reference, and Clarabel at outputs +-1e15 was "exact" at 1512 for a minimax optimum of 2.02
        lower_bound = max(program_lower_bound(solved, program) * scale, _cheapest_outputs_bound(problem))
        return program.x.value, {"solver_objective": info.objective * scale, "lower_bound": lower_bound}, info.solver
    result = solve_finite_lp(problem)
    lower_bound = max(result.lower_bound, _cheapest_outputs_bound(problem))
    details = {"solver_objective": result.objective, "privacy_rows": result.privacy_rows, "lower_bound": lower_bound,
               "lower_bound_datasets": result.bound_datasets, "quotient_classes": result.quotient_classes}
    return result.mechanism, details, "HIGHS"


def _certified(problem: FiniteQuery, x: np.ndarray, repair: bool) -> tuple[np.ndarray, Certificate]:
    return mix_until_certified(problem, x) if repair else (x, certify_finite(problem, x))


def _value_rows(problem: FiniteQuery) -> int:
    """Privacy rows of the LP on value classes (:class:`ValueQuotient`): class edges, both directions, x outputs."""
    return 2 * len(class_edges(problem, loss_classes(problem))) * problem.size[1]


def _value_lp_applies(problem: FiniteQuery) -> bool:
    # neighbour privacy: every row's log-bound is epsilon; the classes form a universe of their
    # own, which must be connected (a metric may leave a dataset with no neighbour)
    return (problem.privacy == "neighbours" and problem.universe.neighbours_connected
            and problem.epsilon <= MAX_COEFFICIENT_EXPONENT and _value_rows(problem) <= MAX_PRIVACY_ROWS)


def _value_lp_memory(problem: FiniteQuery) -> tuple[float, str]:
    m, k = problem.size
    return 400.0 * _value_rows(problem) + 8.0 * (20 * m * k + 4 * len(problem.universe.neighbours) * k + m * m), "universe"


@register(KIND, "value_lp", exact=False, uses_solver=True, auto_fallback=True, applies=_value_lp_applies, memory=_value_lp_memory,
          cost=lambda p: float(p.size[1]) ** 3, requires=f'privacy = "neighbours", neighbours (distance <= 1) connecting every dataset, at most {MAX_PRIVACY_ROWS:,} privacy rows between value classes and {_COEFFICIENTS}',
          summary="the best mechanism of the value alone: the LP with one row per value (per loss row and side-information "
                  "membership), lifted to the datasets; between the LP optimum and every value-based construction")
def solve_value_lp(problem: FiniteQuery, solver: str | None, repair: bool) -> Solution:
    quotient = ValueQuotient.of(problem)
    if quotient.problem is None:
        rows, details, solver_name = quotient.single_row(), {}, "none"
    else:
        rows, reported, solver_name = _optimal_rows(quotient.problem, solver)
        details = {"solver_objective": reported["solver_objective"],
                   "privacy_rows": len(quotient.problem.privacy_pairs()[0]) * problem.size[1]}
        if "lower_bound" in reported:  # certified for the quotient: how close these rows are to the best value-based mechanism
            details["value_optimality_gap"] = (reported["solver_objective"] - reported["lower_bound"]) / max(abs(reported["solver_objective"]), 1e-300)
    x, cert = _certified(problem, quotient.lift(rows), repair)
    details["value_classes"] = len(quotient.loss_rows)
    return _solution(problem, x, cert, exact=False, method="value_lp", solver=solver_name, status="optimal", details=details)


def _shortcut_memory(problem: FiniteQuery) -> tuple[float, str]:
    """Hop distances and one m x m working array (the index rules and ladders work through
    them an output or a value at a time), the mechanism and its bisection's temporaries,
    and the log ratios over neighbouring pairs that measure each candidate."""
    m, k = problem.size
    pairs = len(problem.universe.neighbours)
    return 8.0 * (3 * m * m + 20 * m * k + 4 * pairs * k), "universe"


def _neighbour_privacy(problem: FiniteQuery) -> bool:
    return problem.privacy == "neighbours"


def _connected_neighbour_privacy(problem: FiniteQuery) -> bool:
    """The ladder's rungs are hop distances in the neighbour graph: it must be connected."""
    return _neighbour_privacy(problem) and problem.universe.neighbours_connected


def _steps_counted(problem: FiniteQuery) -> bool:
    """Theorems 1 and 4 and the ladder count an output's distance in steps of the sensitivity, as
    int64 indices below :data:`seq.UNREACHABLE`: a dataset whose nearest output lies further (1e15
    over a sensitivity of 1e-10) would have no output it can reach (until 2026-11-29: a ValueError)."""
    if problem.sensitivity <= 0:
        return True
    nearest = np.abs(problem.universe.values[:, None] - problem.outputs[None, :]).min(axis=1)
    return bool(nearest.max() / problem.sensitivity < seq.UNREACHABLE / 2)


def _staircase_steps(problem: FiniteQuery) -> bool:
    return _neighbour_privacy(problem) and _steps_counted(problem)


def _ladder_reaches_an_output(problem: FiniteQuery) -> bool:
    """A constant query's ladder has rungs of width 0: only an output equal to its value is reached."""
    values = problem.universe.values
    return _connected_neighbour_privacy(problem) and _steps_counted(problem) and (bool(np.ptp(values) > 0) or _value_outputs(problem))


def _reaches_an_output(problem: FiniteQuery, radius: np.ndarray | float) -> bool:
    """Theorem 3's R_i^x reach only outputs within delta^y of some f(y), Theorem 2's I_i^x and
    Section 7's score -d̄(x, f^-1(r)) only values of f (radius 0): with none among the outputs
    every row would be empty. The tolerance is :func:`seq.compositional_index`'s."""
    gap = np.abs(problem.universe.values[:, None] - problem.outputs[None, :])
    return _neighbour_privacy(problem) and bool((gap <= np.reshape(radius, (-1, 1)) + 1e-12).any())


def _value_outputs(problem: FiniteQuery) -> bool:
    return _reaches_an_output(problem, 0.0)


def _outputs_within_delta(problem: FiniteQuery) -> bool:
    return _reaches_an_output(problem, problem.delta)


_WITHIN_DELTA = 'privacy = "neighbours" and an output within delta of a value of f'
_COUNTED = 'privacy = "neighbours" and every dataset within 2^60 sensitivities of its nearest output'
#: Each construction's condition beyond the problem kind, and how a refusal names it.
_CONSTRUCTION_APPLIES: dict[str, tuple[Callable[[FiniteQuery], bool], str]] = {
    "ladder": (_ladder_reaches_an_output, 'privacy = "neighbours", neighbours (distance <= 1) connecting every dataset, every '
               'dataset within 2^60 sensitivities of its nearest output, and for a constant query an output equal to its value'),
    "staircase": (_staircase_steps, _COUNTED),
    "utility_first": (_staircase_steps, _COUNTED),
    "weighted_utility_first": (_staircase_steps, _COUNTED),
    "privacy_first": (_value_outputs, 'privacy = "neighbours" and an output that is a value of f'),
    "exponential": (_value_outputs, 'privacy = "neighbours" and an output that is a value of f'),
    "compositional": (_outputs_within_delta, _WITHIN_DELTA),
    "weighted_privacy_first": (_outputs_within_delta, _WITHIN_DELTA),
}


def _index_of(name: str, problem: FiniteQuery) -> tuple[np.ndarray, np.ndarray | None]:
    """The construction's index matrix and its penalty (Theorems 5-6) over the outputs."""
    u = problem.universe
    f, r = u.values, problem.outputs
    if name == "staircase":
        return seq.staircase_index(f, r, problem.sensitivity, problem.gamma), None
    if name in ("privacy_first", "exponential"):
        return seq.privacy_first_index(u.hops, f, r), None
    if name == "ladder":
        return seq.ladder_index(f, r, u.neighbours), None
    penalty = np.where(np.isin(r, problem.important), 0.0, problem.penalty)
    if name in ("compositional", "weighted_privacy_first"):
        index = seq.compositional_index(u.hops, f, r, problem.delta)
    else:
        index = seq.utility_first_index(u.hops, f, r, problem.sensitivity, problem.delta)
    return index, (penalty if name.startswith("weighted") else None)


def _construction(name: str) -> Callable[..., Solution]:
    def run(problem: FiniteQuery, solver: str | None, repair: bool) -> Solution:
        index, penalty = _index_of(name, problem)
        pairs = problem.universe.neighbours
        calibrated = seq.calibrate(lambda eps: seq.index_mechanism(index, eps, penalty=penalty), pairs, problem.epsilon,
                                   proof=problem.calibrate_shortcuts == "proof")
        x = calibrated.mechanism
        # with "proof" the theorem promises 2 eps' = epsilon; either way the certificate measures it
        cert = certify_finite(problem, x, method=f"measured; {calibrated.how}")
        return _solution(problem, x, cert, exact=False, method=name, solver="none", status="closed_form",
                         details={"parameter": calibrated.parameter, "measured_loss": calibrated.loss,
                                  "reference": seq.CONSTRUCTIONS[name]})

    return run


for _name in seq.CONSTRUCTIONS:
    _applies, _requires = _CONSTRUCTION_APPLIES.get(_name, (_neighbour_privacy, 'privacy = "neighbours"'))
    register(KIND, _name, exact=False, uses_solver=False, cost=lambda p: float(p.size[0]) ** 2 * p.size[1] * 1e-3,
             applies=_applies, memory=_shortcut_memory, summary=seq.CONSTRUCTIONS[_name], requires=_requires)(_construction(_name))


@register_reader(KIND)
def read_finite_query(problem: FiniteQuery, stored: StoredSolution) -> Solution:
    """Rebuild an exported mechanism: labels against the universe and outputs, certificate and objective recomputed."""
    x = check_labels(stored, list(range(problem.universe.size)), problem.outputs.tolist())
    solution = _solution(problem, x, certify_finite(problem, x, method="measured on read"), exact=True, **stored_fields(stored))
    return dataclasses.replace(solution, exact=bool(stored.summary["exact"]))
