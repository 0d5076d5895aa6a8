"""One registry of solution methods per problem kind, and :func:`solve` / :func:`compare`.

Every problem kind has a program method (``"lp"``); closed forms and faster exact
routes register beside it with a predicate saying when they apply and whether they
are exact or only an upper bound on the optimum. ``solve(problem, method="auto")``
runs the cheapest exact method that applies and records which one ran.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import pandas as pd

from dpopt.validation import fail

__all__ = ["Method", "register", "methods_for", "solve", "compare", "compare_table", "price_of_closed_form", "REGISTRY"]


class Problem(Protocol):
    kind: str


@dataclass(frozen=True)
class Method:
    """A registered way to solve one problem kind.

    Attributes
    ----------
    kind, name : str
        Problem kind and method name (``--method NAME`` on the command line).
    exact : bool
        True if the method returns an optimum; False if its objective is only an
        upper bound on the optimum (a closed form that is feasible but not optimal).
    uses_solver : bool
        Whether ``solver=`` is meaningful.
    run : callable
        ``run(problem, solver, repair) -> Solution``.
    applies : callable
        ``applies(problem) -> bool``.
    cost : callable
        Relative cost estimate used by ``auto`` (smaller is faster).
    summary : str
        One line for ``compare`` and the docs.
    auto_fallback : bool
        Picked by ``auto`` when no exact method applies (a kind whose problem has
        no tractable exact optimum in general, e.g. the non-convex d_X problem (6)).
    """

    kind: str
    name: str
    exact: bool
    uses_solver: bool
    run: Callable[..., Any]
    applies: Callable[[Any], bool]
    cost: Callable[[Any], float]
    summary: str
    auto_fallback: bool = False


REGISTRY: dict[str, dict[str, Method]] = {}


def _always(_: Any) -> bool:
    return True


def register(
    kind: str,
    name: str,
    *,
    exact: bool,
    uses_solver: bool,
    cost: Callable[[Any], float],
    summary: str,
    applies: Callable[[Any], bool] = _always,
    auto_fallback: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering ``run(problem, solver, repair)`` as method ``name`` of ``kind``."""

    def decorate(run: Callable[..., Any]) -> Callable[..., Any]:
        methods = REGISTRY.setdefault(kind, {})
        if name in methods:
            raise ValueError(f"method {name!r} of {kind} is registered twice")
        methods[name] = Method(kind, name, exact, uses_solver, run, applies, cost, summary, auto_fallback)
        return run

    return decorate


def _load_methods() -> None:
    # Importing the method modules fills REGISTRY; done lazily to avoid import cycles.
    import dpopt.methods  # noqa: F401


def methods_for(problem: Problem) -> list[Method]:
    """Registered methods that apply to ``problem``, cheapest first."""
    _load_methods()
    kind = getattr(problem, "kind", None)
    if kind not in REGISTRY:
        raise fail("problem", "solve", "a problem of kind " + ", ".join(sorted(REGISTRY)), problem)
    applicable = [m for m in REGISTRY[kind].values() if m.applies(problem)]
    return sorted(applicable, key=lambda m: m.cost(problem))


def _pick(problem: Problem, method: str) -> Method:
    candidates = methods_for(problem)
    if method == "auto":
        exact = [m for m in candidates if m.exact] or [m for m in candidates if m.auto_fallback] or candidates
        return exact[0]
    by_name = {m.name: m for m in candidates}
    if method not in by_name:
        names = ["auto"] + sorted(REGISTRY[problem.kind])
        raise fail("method", problem.kind, "one of " + ", ".join(names) + " (that applies to this problem)", method)
    return by_name[method]


def solve(problem: Problem, method: str = "auto", *, solver: str | None = None, repair: bool = True) -> Any:
    """Solve ``problem`` with ``method`` and return a certified :class:`~dpopt.solution.Solution`.

    Parameters
    ----------
    problem : a dpopt problem
    method : str
        ``"auto"`` (cheapest exact method that applies), ``"lp"``, or any name
        listed by :func:`methods_for`.
    solver : str, optional
        cvxpy solver name for program methods (default HiGHS for LPs).
    repair : bool
        Make a solver's near-feasible matrix meet the privacy target exactly
        (see :func:`dpopt.certificates.repair`). The certificate says if it did.

    Raises
    ------
    InvalidParameterError
        Unknown method or solver, before any work is done.
    SolverError
        The solver did not reach an optimal status.
    """
    chosen = _pick(problem, method)
    if solver is not None and not chosen.uses_solver:
        raise fail("solver", problem.kind, f"omitted for the solver-free method {chosen.name!r}", solver)
    if solver is not None:
        from dpopt.solvers import installed_solvers

        if solver.upper() not in installed_solvers():
            raise fail("solver", problem.kind, "one of " + ", ".join(installed_solvers()), solver)
    start = time.perf_counter()
    solution = chosen.run(problem, solver, repair)
    return solution.with_timing(method=chosen.name, exact=chosen.exact, seconds=time.perf_counter() - start)


def compare(problem: Problem, *, solver: str | None = None) -> list[Any]:
    """Solve ``problem`` with every applicable method; return the Solutions."""
    return [solve(problem, m.name, solver=solver if m.uses_solver else None) for m in methods_for(problem)]


def compare_table(problem: Problem, *, solver: str | None = None) -> pd.DataFrame:
    """Every applicable method's objective side by side, with its ratio to the best exact one."""
    solutions = compare(problem, solver=solver)
    table = pd.DataFrame([s.summary() for s in solutions]).set_index("method")
    exact = table.loc[table["exact"], "objective"]
    best = float(exact.min()) if len(exact) else float("nan")
    table["ratio_to_optimum"] = table["objective"] / best
    return table


def price_of_closed_form(problem: Problem, *, solver: str | None = None) -> pd.DataFrame:
    """Every applicable method's objective beside the program's optimum, and the ratio.

    One row per method: ``exact`` (True for optima, False for closed forms that are
    only feasible), ``objective``, ``optimum`` (the ``lp`` method's value, solved
    independently) and ``ratio = objective / optimum`` -- the price of using the
    closed form instead of solving the program.
    """
    table = compare_table(problem, solver=solver)
    if "lp" not in table.index:
        raise fail("problem", "price_of_closed_form", "a problem kind with an 'lp' program", problem)
    optimum = float(table.loc["lp", "objective"])
    out = table[["exact", "solver", "objective", "seconds"]].copy()
    out["optimum"] = optimum
    out["ratio"] = out["objective"] / optimum
    return out.sort_values("ratio")
