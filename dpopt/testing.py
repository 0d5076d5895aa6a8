"""Assertions for regression tests: a closed form proved optimal, or its distance from the
optimum bounded, by certified numbers.

A closed form that replaces an optimization (the geometric mechanism with its remap for
Gupte-Sundararajan's LP, the staircase for the noise-adding LP, ...) is pinned in a test by
comparing it with the program it replaces, solved independently. The comparison is only a
proof if it uses a *certified lower bound* on the optimum: the program's own objective is an
upper bound (a certified mechanism reaches it), and a closed form that merely matches it to
the solver's digits says nothing about a program solved badly. So every check here reads

    lower_bound <= optimum <= reference objective,   method objective - lower_bound = gap,

with ``lower_bound`` from the exact route's certificate (:func:`optimality_check`), and
asserts on ``gap`` (:func:`assert_optimal`) or on ``objective / lower_bound``
(:func:`assert_within`)::

    def test_the_remapped_geometric_mechanism_is_optimal():
        dpopt.testing.assert_optimal(dpopt.CountQuery(n=50, epsilon=1.0), "interaction")

    def test_theorem_3_costs_at_most_ten_percent_more_than_the_optimum():
        dpopt.testing.assert_within(problem, "compositional", ratio=1.1)

The method checked must come with a passing privacy certificate: an uncertified mechanism
fails the assertion whatever its objective.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpopt.registry import optimum_reference, solve
from dpopt.solution import Solution
from dpopt.validation import check_real, fail

__all__ = ["OptimalityCheck", "assert_optimal", "assert_within", "optimality_check"]

OWNER = "dpopt.testing"


@dataclass(frozen=True)
class OptimalityCheck:
    """A method's objective beside certified bounds on the optimum of its problem.

    Attributes
    ----------
    method : str
        The method that ran (``auto``'s choice where ``auto`` was asked for).
    objective : float
        Its certified mechanism's objective.
    reference : str
        The exact route that bounds the optimum (``lp``, or the cheapest exact method of a
        kind without one: :func:`dpopt.price_of_closed_form`'s ``optimum_from``).
    lower_bound : float
        ``optimum >= lower_bound``: the reference's certified lower bound (whether or not the
        reference closed its own gap), or, for a route exact by construction that reports
        none, its objective (``lower_bound_from``).
    optimum : float
        The reference's objective: a certified mechanism reaches it, so ``optimum <=`` it.
    lower_bound_from : str
        ``"certificate"`` or ``"exact route"``.
    """

    method: str
    objective: float
    reference: str
    lower_bound: float
    optimum: float
    lower_bound_from: str

    @property
    def gap(self) -> float:
        """``objective - lower_bound``: at most how far the method is above the optimum."""
        return self.objective - self.lower_bound

    @property
    def ratio_bound(self) -> float:
        """``objective / lower_bound``: at most how many times the optimum the method costs
        (inf where the bound is not positive)."""
        return self.objective / self.lower_bound if self.lower_bound > 0 else math.inf


def optimality_check(problem: Any, method: str = "auto", *, solver: str | None = None) -> OptimalityCheck:
    """Solve ``problem`` by ``method`` and by its exact reference route, and bound the gap.

    Raises
    ------
    AssertionError
        If ``method``'s mechanism fails its privacy certificate.
    InvalidParameterError
        If the problem has no exact route to bound its optimum (a calibration; several d_X
        queries), or the reference route did not reach its optimum on this problem (a
        neighbouring set's grid LP is an upper bound only, an LP left with a gap).
    """
    reference = optimum_reference(problem, OWNER)
    checked = solve(problem, method, solver=solver)
    if not checked.certificate.ok:
        raise AssertionError(f"{checked.method} on this {checked.kind} problem fails its privacy certificate: "
                             f"measured loss {checked.certificate.max_privacy_loss:.6g} against {checked.certificate.target:.6g}")
    bounding = checked if checked.method == reference else solve(problem, reference, solver=solver)
    lower, source = _lower_bound(bounding)
    return OptimalityCheck(method=checked.method, objective=float(checked.objective), reference=reference, lower_bound=lower,
                           optimum=float(bounding.objective), lower_bound_from=source)


def _lower_bound(reference: Solution) -> tuple[float, str]:
    """The reference route's certified lower bound (valid whether or not the route closed its gap:
    ``lp`` on a small count query can sit 1e-9 above its bound), or, for a route exact by
    construction that reports none, its objective."""
    if not reference.certificate.ok:
        raise fail("problem", OWNER, f"a problem whose optimum an exact route bounds (its reference route, {reference.method}, "
                   "fails its certificate)", reference.kind)
    bound = reference.details.get("lower_bound")
    if isinstance(bound, (int, float)) and math.isfinite(bound):
        return min(float(bound), float(reference.objective)), "certificate"
    if not reference.exact:
        raise fail("problem", OWNER, f"a problem whose optimum an exact route bounds (its reference route, {reference.method}, "
                   "is not exact on it and certifies no lower bound: its objective is only an upper bound)", reference.kind)
    return float(reference.objective), "exact route"


def assert_optimal(problem: Any, method: str = "auto", *, rtol: float = 1e-9, atol: float = 0.0,
                   solver: str | None = None) -> OptimalityCheck:
    """Assert that ``method`` is optimal for ``problem``: its certified mechanism's objective is at
    most ``lower_bound + atol + rtol * |lower_bound|`` (:func:`optimality_check`).

    Returns the check, for a test that reports or asserts more.
    """
    rtol = check_real(rtol, "rtol", OWNER, low=0.0)
    atol = check_real(atol, "atol", OWNER, low=0.0)
    check = optimality_check(problem, method, solver=solver)
    allowed = atol + rtol * abs(check.lower_bound)
    if not check.gap <= allowed:
        raise AssertionError(f"{check.method} is not proved optimal: objective {check.objective!r} exceeds the certified lower "
                             f"bound {check.lower_bound!r} ({check.reference}, from its {check.lower_bound_from}) by {check.gap:.6g}, "
                             f"more than the {allowed:.6g} allowed (rtol={rtol:g}, atol={atol:g}); the optimum found is "
                             f"{check.optimum!r}")
    return check


def assert_within(problem: Any, method: str, *, ratio: float, solver: str | None = None) -> OptimalityCheck:
    """Assert that ``method`` costs at most ``ratio`` times the optimum of ``problem``: its
    objective is at most ``ratio * lower_bound`` (so at most ``ratio`` times the optimum,
    certified).

    Returns the check (``ratio_bound`` is the certified ratio; ``objective / optimum`` the
    ratio to the optimum found).
    """
    ratio = check_real(ratio, "ratio", OWNER, low=1.0)
    check = optimality_check(problem, method, solver=solver)
    if not check.objective <= ratio * check.lower_bound:
        raise AssertionError(f"{check.method} is not proved within {ratio:g} times the optimum: objective {check.objective!r} "
                             f"is {check.ratio_bound:.6g} times the certified lower bound {check.lower_bound!r} "
                             f"({check.reference}, from its {check.lower_bound_from}); the optimum found is {check.optimum!r}")
    return check
