"""Running cvxpy programs on real solvers, with per-solver tolerances.

LPs default to HiGHS, conic programs to Clarabel; SCS is available for scale. The
tolerances below are tighter than the solvers' defaults because privacy constraints
are what is being optimised: HiGHS's default feasibility tolerance (1e-7) lets the
GS LP break privacy by ~1e-8, and its default ``small_matrix_value`` (1e-9) silently
drops the tiny coefficients of geometric kernels.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import re
import signal
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.lazy_modules import cvxpy as cp
from dpopt.validation import SolverError, fail

__all__ = ["SolveInfo", "run_program", "installed_solvers", "SOLVER_OPTIONS", "default_solver", "new_highs", "run_interruptibly",
           "power_of_two_at_most", "solver_unit"]

#: Options passed to each solver (names as cvxpy/solver expect them).
SOLVER_OPTIONS: dict[str, dict[str, Any]] = {
    "HIGHS": {
        "primal_feasibility_tolerance": 1e-10,
        "dual_feasibility_tolerance": 1e-10,
        "small_matrix_value": 1e-12,
    },
    "CLARABEL": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10},
    "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
}

#: Relative accuracy each solver reaches on our LPs with the options above.
SOLVER_ACCURACY: dict[str, float] = {"HIGHS": 1e-9, "CLARABEL": 1e-7, "SCS": 1e-4}


@functools.cache
def absorb_highs_banner() -> None:
    """Build this process's first ``highspy.Highs`` with file descriptor 1 on /dev/null.

    HiGHS (1.16) writes a copyright banner to the C-level stdout when the first
    ``Highs`` object of a process is constructed, before any option such as
    ``output_flag`` can be set; cvxpy's HiGHS interface builds one on every solve. The
    banner is printed once per process, so building the first instance here, with
    stdout pointed elsewhere and the C buffers flushed before it is restored, keeps it
    off stdout for every later solve (the CLI's stdout carries only JSON). Nothing else
    of HiGHS's state is touched.
    """
    import highspy

    sys.stdout.flush()
    saved, sink = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(sink, 1)
        highspy.Highs()
        _flush_c_stdio()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(sink)


def _flush_c_stdio() -> None:
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # pragma: no cover - no C runtime to flush (not seen)
        pass


def new_highs(options: dict[str, Any]) -> Any:
    """A ``highspy.Highs`` instance with ``options`` set on it (and on nothing else).

    Options are per instance; process-wide settings (``threads``, the scheduler) are
    never changed, so no solve can affect a later one.
    """
    import highspy

    absorb_highs_banner()
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    for key, value in options.items():
        highs.setOptionValue(key, value)
    return highs


def run_interruptibly(highs: Any) -> Any:
    """``highs.run()``, stopped at HiGHS's next iteration by Ctrl-C; returns its run status.

    Python handles SIGINT only between bytecodes of the main thread, so in a notebook a long
    solve ignored the kernel's interrupt until HiGHS returned (the 1044-graph LP: a minute and
    more). Here, in the main thread and while SIGINT has Python's default handler (as in a
    script, or a Jupyter cell), Ctrl-C only sets a flag that HiGHS's simplex and interior-point
    interrupt callbacks read on each iteration; HiGHS stops ("Interrupted by user") and
    :class:`KeyboardInterrupt` is raised once it has returned. Anywhere else (the CLI's worker
    thread, Dask's, a caller's own handler) this is ``highs.run()``. The callbacks belong to
    ``highs`` alone: nothing process-wide is touched (highspy's ``HandleKeyboardInterrupt``,
    which solves in a thread, resets HiGHS's global task scheduler afterwards), and each call
    clears the flag, so an interrupted instance solves again as new.
    """
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return highs.run()
    interrupted: list[int] = []

    def on_sigint(signum: int, frame: Any) -> None:
        interrupted.append(signum)

    def check(event: Any) -> None:
        event.interrupt(bool(interrupted))

    callbacks = (highs.cbSimplexInterrupt, highs.cbIpmInterrupt)
    previous = signal.signal(signal.SIGINT, on_sigint)
    for callback in callbacks:
        callback.subscribe(check)
    try:
        status = highs.run()
    finally:
        signal.signal(signal.SIGINT, previous)
        for callback in callbacks:
            callback.unsubscribe(check)
    if interrupted:
        raise KeyboardInterrupt
    return status


@dataclass(frozen=True)
class SolveInfo:
    """How a program was solved."""

    solver: str
    status: str
    seconds: float
    objective: float
    max_violation: float


def installed_solvers() -> list[str]:
    """Solvers cvxpy can call on this machine."""
    return list(cp.installed_solvers())


def default_solver(is_lp: bool) -> str:
    return "HIGHS" if is_lp else "CLARABEL"


def _check_solver(solver: str, owner: str) -> str:
    name = solver.upper()
    available = installed_solvers()
    if name not in available:
        raise fail("solver", owner, "one of " + ", ".join(available), solver)
    return name


def run_program(program: cp.Problem, *, solver: str | None = None, owner: str = "program",
                highs_first: dict[str, Any] | None = None) -> SolveInfo:
    """Solve ``program`` and return how; raise :class:`SolverError` unless optimal.

    ``highs_first``: HiGHS options for the first attempt only (e.g. its interior point for
    an LP on which the default simplex is slow); the retries below are unchanged.

    HiGHS is retried when it fails or returns a point that violates a constraint by
    more than ``VIOLATION_RETRY`` although it reports "optimal": a QP first with
    :data:`QP_RETRY`; then without presolve (dual simplex can fail after presolve on
    geometric kernels, e.g. alpha = 0.9), then without scaling (with its default scaling, HiGHS has returned
    GS LP solutions whose row sums are off by 4e-6 at n = 100), then with the
    interior-point solver and crossover (dual simplex has stopped with "Solve error"
    on a well-posed zero-one instance), and, only if every attempt failed, without
    crossover (the count_query interaction LP at n = 200 under zero-one loss: every
    simplex and the crossover ended in "Solve error", the interior point alone was within
    1.5e-9 of the optimum). An interior point is feasible to the tolerance like any other;
    callers certify the result and bound its gap as always. The attempt kept is the most
    feasible one, with its own constraint duals (a certified bound read from another
    attempt's duals is valid but looser).
    """
    name = _check_solver(solver or default_solver(program.is_dcp() and _is_lp(program)), owner)
    if name == "HIGHS":
        absorb_highs_banner()
    options = dict(SOLVER_OPTIONS.get(name, {}))
    start = time.perf_counter()
    best: _Snapshot | None = None
    first = {**options, "highs_options": dict(highs_first)} if name == "HIGHS" and highs_first else options
    try:
        status = _attempt(program, name, first)
    except _UnsuitableSolver:  # the user's choice of solver, not a failure of it: no retry can change it
        raise fail("solver", owner, "a solver for this program's cones (HIGHS takes LPs and QPs; CLARABEL or SCS "
                   "any of dpopt's programs)", solver) from None
    if status == cp.OPTIMAL:
        best = _snapshot(program)
    if name == "HIGHS":
        retries = (
            *(() if _is_lp(program) else (QP_RETRY,)),
            {"presolve": "off"},
            {"presolve": "off", "simplex_scale_strategy": 0},
            {"highs_options": {"solver": "ipm", "run_crossover": "on"}},
        )
        for retry in (*retries, LAST_RESORT):
            if best is not None and (best.violation <= VIOLATION_RETRY or retry is LAST_RESORT):
                break
            status = _attempt(program, name, {**options, **retry})
            if status == cp.OPTIMAL:
                candidate = _snapshot(program)
                if best is None or candidate.violation < best.violation:
                    best = candidate
    seconds = time.perf_counter() - start
    if best is None:
        raise SolverError(name, str(status), f"({owner})")
    best.restore(program)
    return SolveInfo(
        solver=name, status=cp.OPTIMAL, seconds=seconds, objective=best.objective, max_violation=best.violation
    )


#: HiGHS's first retry of a QP (its QP solver is active-set; the interior point takes LPs only):
#: a larger regularisation of the reduced Hessian. With the default 1e-7, HiGHS 1.16 stopped on
#: the d_X ``exact_surrogate`` QP of ``problems/dx_hotspots.toml`` (69 columns, a diagonal
#: Hessian of 1s and 2s) with "QP solver model status: Non-convex"; with 1e-5 (and 1e-3) it
#: solved it, 1e-12 (relative) from Clarabel's optimum.
QP_RETRY: dict[str, Any] = {"highs_options": {"qp_regularization_value": 1e-5}}

#: HiGHS's attempt when every other one failed: the interior point without crossover.
LAST_RESORT: dict[str, Any] = {"highs_options": {"solver": "ipm", "run_crossover": "off"}}


@dataclass(frozen=True)
class _Snapshot:
    """One attempt's point: its largest violation, objective, variable values and constraint duals."""

    violation: float
    objective: float
    values: list[Any]
    duals: list[Any]

    def restore(self, program: cp.Problem) -> None:
        for variable, value in zip(program.variables(), self.values):
            variable.project_and_assign(value)  # clipped to its domain
        for constraint, dual in zip(program.constraints, self.duals):
            if dual is not None:
                constraint.save_dual_value(dual)


def _snapshot(program: cp.Problem) -> _Snapshot:
    duals = [None if c.dual_value is None else np.array(c.dual_value, copy=True) for c in program.constraints]
    return _Snapshot(max_violation(program), float(program.value), [v.value.copy() for v in program.variables()], duals)


#: The largest x for which a program may hold e^x as a coefficient (a privacy row's
#: ``e^eps``): HiGHS refuses matrix entries above ``large_matrix_value`` = 1e15 = e^34.5
#: (the model never starts; cvxpy reports status UNKNOWN, highspy "Empty"). Methods whose
#: programs would exceed it do not apply (noise_adding's grid LP, finite_query's lp and value_lp).
MAX_COEFFICIENT_EXPONENT = 34.0

#: Data whose largest magnitude lies outside [2**-UNIT_RANGE, 2**UNIT_RANGE] is handed to a
#: solver divided by :func:`solver_unit` (its tolerances are absolute: HiGHS refuses entries
#: above 1e15 and drops those below ``small_matrix_value``).
UNIT_RANGE = 20


def power_of_two_at_most(x: float) -> float:
    """The power of two p with p <= x < 2 p (x > 0): dividing by it, or multiplying back, is exact."""
    return math.ldexp(1.0, math.frexp(x)[1] - 1)


def solver_unit(largest: float) -> float:
    """1, or :func:`power_of_two_at_most` ``largest`` when it lies outside ``[2**-UNIT_RANGE, 2**UNIT_RANGE]``."""
    if largest == 0.0 or 2.0**-UNIT_RANGE <= largest <= 2.0**UNIT_RANGE:
        return 1.0
    return power_of_two_at_most(largest)


#: A reported-optimal HiGHS point violating a constraint by more than this is re-solved.
VIOLATION_RETRY = 1e-9


def max_violation(program: cp.Problem) -> float:
    """Largest violation of any constraint at the program's current point."""
    return max((float(np.max(c.violation())) for c in program.constraints), default=0.0)


class _UnsuitableSolver(Exception):
    """cvxpy refused the solver for the program's cones before solving (HiGHS and a second-order cone)."""


def _attempt(program: cp.Problem, solver: str, options: dict[str, Any]) -> str:
    try:
        with warnings.catch_warnings():
            # cvxpy warns "Solution may be inaccurate"; we report the status instead.
            warnings.simplefilter("ignore", UserWarning)
            program.solve(solver=solver, **options)
    except (cp.error.SolverError, ValueError) as exc:  # ValueError: cvxpy cannot unpack an unknown status
        if re.search(rf"solver '?{solver}'? cannot solve this problem", str(exc), flags=re.IGNORECASE):
            raise _UnsuitableSolver from None
        return f"solver_error: {_short_reason(exc)}"
    return str(program.status)


def _short_reason(exc: Exception) -> str:
    """The first line of a solver error, with cvxpy's dump of an empty ``Solution(...)`` reduced to
    its status (the dump's object addresses would make the one-line CLI message unreadable)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    unpack = re.match(r"Cannot unpack invalid solution: Solution\(status=([\w.]+)", text)
    if unpack:
        return f"no solution to read (solver status {unpack.group(1)})"
    return text


def _is_lp(program: cp.Problem) -> bool:
    return all(c.__class__.__name__ in {"Equality", "Inequality", "Zero", "NonNeg", "NonPos"} for c in program.constraints) and program.objective.expr.is_affine()
