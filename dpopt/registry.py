"""One registry of solution methods per problem kind, and :func:`solve` / :func:`compare`.

Every problem kind has a program method (``"lp"``); closed forms and faster exact
routes register beside it with a predicate saying when they apply and whether they
are exact or only an upper bound on the optimum. ``solve(problem, method="auto")``
runs the cheapest exact method that applies and records which one ran.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

from dpopt.lazy_modules import pandas as pd
from dpopt.validation import DPOptError, InvalidParameterError, fail

__all__ = ["Method", "float_only", "register", "register_reader", "reader_for", "methods_for", "parameters_only", "solve", "compare", "compare_outcomes", "compare_plan", "iter_compare_outcomes", "compare_table", "optimum_reference", "price_of_closed_form", "REGISTRY"]


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
    exact_when : callable
        ``exact_when(problem) -> bool``: for a method registered ``exact``, the
        problems on which it is (e.g. the staircase is optimal for one sensitivity
        interval, not for a neighbouring set with gaps). Default: all it applies to.
    requires : str
        What ``applies`` asks of a problem, in words (``"privacy = 'neighbours'"``): what
        :func:`solve` tells the user when no method applies. Default: the summary.
    releases : callable
        ``releases(problem) -> bool``: whether the solution it returns for ``problem`` has an
        exact sampler (``Solution.sampler_description`` starting "exact"), so a release
        can be refused before solving when no method that would run has one
        (:func:`float_only`). Default: always.
    parameters : callable
        ``parameters(problem) -> bool``: whether the solution it returns for ``problem`` is
        parameters (``Solution.parameters``), not a matrix, so that it exports as ``.json``
        only and a matrix format can be refused before solving (:func:`parameters_only`).
        ``register`` also takes True or False. Default: never.
    auto_fallback : bool
        Picked by ``auto`` when no exact method applies (a kind whose problem has
        no tractable exact optimum in general, e.g. the non-convex d_X problem (6)).
    memory : callable
        ``memory(problem) -> (bytes, parameter)``: a generous estimate of the peak
        memory the method needs and the parameter that drives it; :func:`solve`
        refuses to start a method whose estimate exceeds :func:`dpopt.limits.memory_limit`.
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
    memory: Callable[[Any], tuple[float, str]] = lambda problem: _NO_ESTIMATE
    exact_when: Callable[[Any], bool] = lambda problem: True
    requires: str = ""
    releases: Callable[[Any], bool] = lambda problem: True
    parameters: Callable[[Any], bool] = lambda problem: False

    def is_exact(self, problem: Any) -> bool:
        """Whether this method returns the optimum of ``problem`` (else an upper bound)."""
        return self.exact and bool(self.exact_when(problem))


#: The memory estimate of a method that declares none: nothing beyond its problem.
_NO_ESTIMATE = (0.0, "problem")


REGISTRY: dict[str, dict[str, Method]] = {}
#: kind -> ``read(problem, stored) -> Solution``: rebuilds a Solution from an export,
#: recomputing every figure (see :func:`dpopt.export.read_solution`).
READERS: dict[str, Callable[..., Any]] = {}


def register_reader(kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering the export reader of ``kind``."""

    def decorate(read: Callable[..., Any]) -> Callable[..., Any]:
        if kind in READERS:
            raise ValueError(f"a reader of {kind} is registered twice")
        READERS[kind] = read
        return read

    return decorate


def reader_for(kind: str) -> Callable[..., Any]:
    """The export reader of ``kind`` (every registered kind has one)."""
    _load_methods()
    return READERS[kind]


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
    memory: Callable[[Any], tuple[float, str]] | None = None,
    exact_when: Callable[[Any], bool] = _always,
    requires: str = "",
    releases: Callable[[Any], bool] = _always,
    parameters: bool | Callable[[Any], bool] = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering ``run(problem, solver, repair)`` as method ``name`` of ``kind``."""

    def decorate(run: Callable[..., Any]) -> Callable[..., Any]:
        methods = REGISTRY.setdefault(kind, {})
        if name in methods:
            raise ValueError(f"method {name!r} of {kind} is registered twice")
        estimate = memory if memory is not None else (lambda problem: _NO_ESTIMATE)
        gives_parameters = parameters if callable(parameters) else (lambda problem: bool(parameters))
        methods[name] = Method(kind, name, exact, uses_solver, run, applies, cost, summary, auto_fallback, estimate, exact_when,
                               requires, releases, gives_parameters)
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


def _applicable(problem: Problem, method: Any) -> list[Method]:
    """:func:`methods_for`, refused in one line saying what each method needs when none applies
    (e.g. the 1044 graphs with ``privacy = "metric"``: too many pairs for the LP, and the
    constructions need neighbours)."""
    candidates = methods_for(problem)
    if not candidates:
        needs: dict[str, list[str]] = {}
        for m in REGISTRY[problem.kind].values():
            needs.setdefault(m.requires or m.summary, []).append(m.name)
        reasons = "; ".join(f"{', '.join(names)}: {need}" for need, names in needs.items())
        raise fail("method", problem.kind, f"a method that applies to this problem, and none does ({reasons})", method)
    return candidates


def _auto_order(problem: Problem, candidates: list[Method]) -> list[Method]:
    """What ``auto`` tries, in order: the exact methods cheapest first, else the declared
    fallbacks, else every candidate alike in what it returns (:func:`_best_of`)."""
    return ([m for m in candidates if m.is_exact(problem)] or [m for m in candidates if m.auto_fallback]
            or _alike(problem, candidates))


def _best_of(problem: Problem, order: list[Method]) -> bool:
    """Whether ``auto`` runs all of ``order`` and keeps the lowest objective: when no method is
    exact for ``problem`` and none is declared a fallback (a neighbouring set with gaps, where
    the cheapest, the staircase, is 6% above Theorem 3's noise on Wu-Xia-He's V1)."""
    return not any(m.is_exact(problem) or m.auto_fallback for m in order)


def _alike(problem: Problem, candidates: list[Method]) -> list[Method]:
    """The candidates that return what the cheapest returns (parameters or a matrix, an exact
    sampler or not), so that :func:`float_only` and :func:`parameters_only` hold for whichever
    one :func:`_best_of` keeps."""
    first = candidates[0]
    return [m for m in candidates
            if m.releases(problem) == first.releases(problem) and m.parameters(problem) == first.parameters(problem)]


def _pick(problem: Problem, method: Any) -> list[Method]:
    """The methods to try for ``method``: one, or for ``auto`` every exact one in order."""
    candidates = _applicable(problem, method)
    names = ["auto"] + sorted(REGISTRY[problem.kind])
    if not isinstance(method, str):
        raise fail("method", problem.kind, "one of " + ", ".join(names), method)
    if method == "auto":
        return _auto_order(problem, candidates)
    by_name = {m.name: m for m in candidates}
    if method not in by_name:
        registered = REGISTRY[problem.kind].get(method)
        if registered is not None:  # registered, but not for this problem: say which do apply
            why = f": it requires {registered.requires}" if registered.requires else f" ({registered.summary})"
            raise fail("method", problem.kind, f"one that applies to this problem ({', '.join(sorted(by_name))}); "
                       f"{method!r} does not{why}", method)
        raise fail("method", problem.kind, "one of " + ", ".join(names) + " (that applies to this problem)", method)
    return [by_name[method]]


def float_only(problem: Problem, method: str = "auto") -> list[str]:
    """The methods ``solve(problem, method)`` could run, if none of them returns a mechanism with
    an exact sampler (so a release can be refused before any solving); else ``[]``. Bad
    ``method`` names are refused as :func:`solve` refuses them."""
    order = _pick(problem, method)
    return [] if any(m.releases(problem) for m in order) else [m.name for m in order]


def parameters_only(problem: Problem, method: str = "auto") -> bool:
    """Whether every method ``solve(problem, method)`` could run returns parameters, not a matrix
    (so an export other than ``.json`` can be refused before any solving). Bad ``method`` names
    are refused as :func:`solve` refuses them."""
    order = _pick(problem, method)
    return bool(order) and all(m.parameters(problem) for m in order)


def _check_solver(problem: Problem, chosen: Method, solver: Any) -> None:
    if solver is None:
        return
    from dpopt.solvers import installed_solvers

    available = installed_solvers()
    if not isinstance(solver, str) or solver.upper() not in available:
        raise fail("solver", problem.kind, "one of " + ", ".join(available), solver)
    if not chosen.uses_solver:
        raise fail("solver", problem.kind, f"omitted for the solver-free method {chosen.name!r}", solver)


def _methods_that_fit(problem: Problem, exclude: set[str]) -> list[str]:
    """Names of the applicable methods outside ``exclude`` whose memory estimate fits."""
    fits = []
    for candidate in _applicable(problem, "auto"):
        if candidate.name in exclude:
            continue
        try:
            _check_memory(problem, candidate)
        except InvalidParameterError:
            continue
        fits.append(candidate.name)
    return fits


def _check_memory(problem: Problem, chosen: Method) -> None:
    from dpopt.limits import check_memory

    estimate, parameter = chosen.memory(problem)
    check_memory(estimate, parameter, problem.kind, getattr(problem, parameter, None), what=f"method {chosen.name!r}")


def solve(problem: Problem, method: str = "auto", *, solver: str | None = None, repair: bool = True) -> Any:
    """Solve ``problem`` with ``method`` and return a certified :class:`~dpopt.solution.Solution`.

    Parameters
    ----------
    problem : a dpopt problem
    method : str
        ``"auto"`` (the cheapest exact method that applies; where none is exact, the
        declared fallback, or if none is declared the lowest certified objective of all
        that apply, in ``details["auto_best_of"]``), ``"lp"``, or any name listed by
        :func:`methods_for`.
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
    from dpopt.validation import SolverError

    if not isinstance(repair, bool):
        raise fail("repair", getattr(problem, "kind", "solve"), "True or False", repair)
    order = _pick(problem, method)
    if solver is not None and method == "auto":
        order = [m for m in order if m.uses_solver] or order
    for chosen in order:
        _check_solver(problem, chosen, solver)
    refusals = {}
    for chosen in order:  # before any work: auto passes over exact methods that cannot fit
        try:
            _check_memory(problem, chosen)
        except InvalidParameterError as exc:
            refusals[chosen.name] = exc
    if len(refusals) == len(order):
        first = refusals[order[0].name]
        fits = _methods_that_fit(problem, exclude={m.name for m in order}) if method == "auto" else []
        if fits:  # say what does fit (closed forms, not claimed optimal) rather than only what does not
            raise fail(first.parameter, first.owner, f"{first.allowed}, or a method that fits, not claimed exact: "
                       + ", ".join(fits), first.got) from first
        raise first
    failures = [f"{name}: {exc}" for name, exc in refusals.items()]
    order = [m for m in order if m.name not in refusals]
    if method == "auto" and len(order) > 1 and _best_of(problem, order):
        return _run_best(problem, order, solver, repair, failures)
    for position, chosen in enumerate(order):
        try:
            solution = _run_one(problem, chosen, solver, repair)
        except SolverError as exc:
            if position == len(order) - 1:
                if failures:
                    raise SolverError(exc.solver, exc.status, f"{exc} (auto tried first: {'; '.join(failures)})") from exc
                raise
            failures.append(f"{chosen.name}: {exc}")
            continue
        if failures:
            solution.details["auto_fallbacks"] = failures
        return solution
    raise SolverError("none", "no method could run", "; ".join(failures))  # pragma: no cover - loop returns or raises


def _run_one(problem: Problem, chosen: Method, solver: str | None, repair: bool) -> Any:
    """``chosen``'s solution of ``problem``, stamped with its name, exactness and seconds."""
    start = time.perf_counter()
    solution = chosen.run(problem, solver, repair)
    return solution.with_timing(method=chosen.name, exact=chosen.is_exact(problem), seconds=time.perf_counter() - start)


def _run_best(problem: Problem, order: list[Method], solver: str | None, repair: bool, failures: list[str]) -> Any:
    """``auto`` where no method is exact: run each of ``order`` and keep the certified solution
    with the lowest objective (the first of equals, so the cheapest); ``details["auto_best_of"]``
    holds every objective, ``auto_fallbacks`` what failed, and ``seconds`` is the time of them
    all. A method that fails (a solver, or a refusal only its run can make) is passed over; if
    all fail, the cheapest one's error is raised."""
    solutions, errors, start = [], [], time.perf_counter()
    for chosen in order:
        try:
            solution = _run_one(problem, chosen, solver, repair)
        except DPOptError as exc:
            failures.append(f"{chosen.name}: {exc}")
            errors.append(exc)
            continue
        solutions.append(solution)
    if not solutions:
        raise errors[0]
    # a certified one wins over any uncertified (only repair=False returns those)
    best = min(solutions, key=lambda s: (not s.certificate.ok, s.objective))
    best = dataclasses.replace(best, seconds=time.perf_counter() - start)  # what auto took: every method it ran
    best.details["auto_best_of"] = [{"method": s.method, "objective": s.objective, "certified": s.certificate.ok, "seconds": s.seconds}
                                   for s in solutions]
    if failures:
        best.details["auto_fallbacks"] = failures
    return best


def compare(problem: Problem, *, solver: str | None = None) -> list[Any]:
    """Solve ``problem`` with every applicable method; return the Solutions.

    Raises the first method's error (see :func:`compare_outcomes` to keep going past it).
    """
    return [outcome for _, outcome in _each_outcome(problem, solver)]


def compare_outcomes(problem: Problem, *, solver: str | None = None) -> list[tuple[str, Any]]:
    """Every applicable method's name with its Solution, or with the error that stopped it.

    A method the memory estimate refuses, that refuses the problem as it runs (a condition its
    ``applies`` rule does not see), or whose solver fails does not stop the others: its
    outcome is that :class:`InvalidParameterError` or :class:`SolverError`. Any other
    error, and a ``solver`` that is not installed, is raised before or as it happens.
    Solutions are returned as solved: a caller releasing them still checks
    ``solution.certificate.ok``.
    """
    return list(iter_compare_outcomes(problem, solver=solver))


def iter_compare_outcomes(problem: Problem, *, solver: str | None = None,
                          plan: list[tuple[Method, InvalidParameterError | None]] | None = None) -> Iterator[tuple[str, Any]]:
    """:func:`compare_outcomes` one method at a time, in the order of ``plan`` (default
    :func:`compare_plan`), each yielded as soon as it finished."""
    return _each_outcome(problem, solver, keep_going=True, plan=plan)


def compare_plan(problem: Problem, *, solver: str | None = None) -> list[tuple[Method, InvalidParameterError | None]]:
    """The methods :func:`compare` runs, in order, each with its memory refusal (None where it fits).

    A ``solver`` that is not installed is bad input for the whole comparison: raised here,
    before any work.
    """
    methods = _applicable(problem, "compare")
    if solver is not None:
        programs = [m for m in methods if m.uses_solver]
        if not programs:
            raise fail("solver", problem.kind, "omitted: no method that applies uses a solver ("
                       + ", ".join(m.name for m in methods) + " are solver-free)", solver)
        _check_solver(problem, programs[0], solver)
    plan: list[tuple[Method, InvalidParameterError | None]] = []
    for chosen in methods:
        try:
            _check_memory(problem, chosen)
            plan.append((chosen, None))
        except InvalidParameterError as exc:  # too large for this method; the others may fit
            plan.append((chosen, exc))
    return plan


def _each_outcome(problem: Problem, solver: str | None, *, keep_going: bool = False,
                  plan: list[tuple[Method, InvalidParameterError | None]] | None = None) -> Iterator[tuple[str, Any]]:
    from dpopt.validation import SolverError

    for chosen, refusal in compare_plan(problem, solver=solver) if plan is None else plan:
        if refusal is not None:
            if not keep_going:
                raise refusal
            yield chosen.name, refusal
            continue
        try:
            outcome = solve(problem, chosen.name, solver=solver if chosen.uses_solver else None)
        except (SolverError, InvalidParameterError) as exc:
            if not keep_going:
                raise
            outcome = exc
        yield chosen.name, outcome


def optimum_reference(problem: Problem, owner: str = "price_of_closed_form") -> str:
    """The method :func:`price_of_closed_form` and :mod:`dpopt.testing` measure against: ``lp``, else the
    cheapest exact one; refused (naming ``owner``) where there is none, or nothing to price against it."""
    candidates = _applicable(problem, "auto")
    names = [m.name for m in candidates]
    if "lp" in names:
        return "lp"
    exact = [m.name for m in candidates if m.is_exact(problem)]
    if not exact or len(names) < 2:
        raise fail("problem", owner, "a problem with an 'lp' program, or a method exact on it and "
                   f"another to price against it (it has {', '.join(names)}; exact: {', '.join(exact) or 'none'})", problem)
    return exact[0]


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
    only feasible), ``objective``, ``optimum`` (the value of the method named in
    ``optimum_from``, solved independently: ``lp``, or for a kind without one the cheapest
    method exact on this problem, such as ``exact_surrogate`` for one d_X query or a
    statistical query's ``exact``), ``excess = objective - optimum`` and
    ``ratio = objective / optimum`` -- the price of using the closed form instead of solving
    the program. The ratio is NaN where the optimum is not positive or is zero by design (a
    problem whose ``zero_optimum`` is True: a multi-level release's objective is a deviation,
    and until 2026-11-29 its ratios of round-off, 0 and 0.058, read as closed forms beating
    the optimum). ``optimum_lower_bound`` is the reference's certified lower bound where it
    reports one (NaN otherwise; :mod:`dpopt.testing` asserts against it). ``optimum_exact``
    says whether ``optimum`` is the optimum or only an upper bound on it (an ``lp`` that is not
    exact: a neighbouring set's grid LP, or an LP left with a gap), where a ratio below 1 is a method beating that bound (Theorem 3's noise at 0.94
    of the grid LP on ``problems/noise_adding_neighbouring_set.toml``), not the optimum.

    Raises
    ------
    InvalidParameterError
        Before any solving, for a problem with neither an ``lp`` nor an exact method (d_X
        workloads of several queries, whose problem (6) is non-convex), or with one method
        only (a calibration: a formula, nothing to price).
    """
    reference = optimum_reference(problem)
    table = compare_table(problem, solver=solver)
    optimum = float(table.loc[reference, "objective"])
    out = table[["exact", "solver", "objective", "seconds"]].copy()
    out["optimum"] = optimum
    out["optimum_from"] = reference
    out["optimum_exact"] = bool(table.loc[reference, "exact"])
    bound = table.loc[reference, "lower_bound"] if "lower_bound" in table.columns else float("nan")
    out["optimum_lower_bound"] = float(bound) if bound is not None and pd.notna(bound) else float("nan")
    out["excess"] = out["objective"] - optimum
    meaningful = optimum > 0 and not getattr(problem, "zero_optimum", False)
    out["ratio"] = out["objective"] / optimum if meaningful else float("nan")
    return out.sort_values(["ratio", "excess"])
