"""One registered method in a process of its own, stopped when its time is up (``dpopt compare --timeout``,
``dpopt solve --timeout``).

A solver cannot be interrupted from Python (HiGHS and Clarabel run in C++ until they finish),
so a method that must be stopped runs in a child process, which is killed at the deadline.
The child sends back the solution's :meth:`~dpopt.solution.Solution.summary` (plain JSON
values), never the mechanism: what leaves the child is what ``compare`` prints.
The processes come from the sweep's context (:func:`dpopt.sweeps.isolation_context`:
forkserver with the solvers preloaded, else spawn), and a child ends when its parent does.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

__all__ = ["MethodOutcome", "solve_in_process"]


@dataclass(frozen=True)
class MethodOutcome:
    """What a method's process gave: ``kind`` is ``"summary"`` (``value``: the summary dict),
    ``"raise"`` (``value``: the :class:`~dpopt.validation.DPOptError` it raised, whole),
    ``"error"`` (``value``: the message of any other exception), or ``"timeout"``."""

    kind: str
    value: Any


def _child(problem: Any, method: str, solver: str | None, repair: bool, export: str | None, dense: bool,
           connection: Any, parent: int) -> None:
    """Solve, export only a certified mechanism, and send back the summary or the error."""
    from dpopt.registry import solve
    from dpopt.process_lifetime import end_with
    from dpopt.validation import DPOptError

    end_with(parent)  # (its own parent is multiprocessing's fork server, not the driver ``parent``)
    try:
        solution = solve(problem, method, solver=solver, repair=repair)
        if export is not None and solution.certificate.ok:
            solution.export(export, dense=dense)
        outcome = MethodOutcome("summary", solution.summary())
    except DPOptError as exc:  # picklable: the parent raises it again
        outcome = MethodOutcome("raise", exc)
    except Exception as exc:  # anything else: the parent says what failed, in one line
        outcome = MethodOutcome("error", f"{type(exc).__name__}: {exc}")
    connection.send(outcome)
    connection.close()


def solve_in_process(problem: Any, method: str, solver: str | None, timeout: float, *, repair: bool = True,
                     export: str | None = None, dense: bool = False) -> MethodOutcome:
    """Solve ``problem`` with ``method`` in a fresh process; stop it after ``timeout`` seconds.

    With ``export``, the child writes the mechanism there if (and only if) it is certified;
    the caller checks the summary's certificate."""
    from dpopt.sweeps import isolation_context

    context = isolation_context()
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(problem, method, solver, repair, export, dense, send, os.getpid()), daemon=True)
    start = time.monotonic()
    process.start()
    send.close()
    try:
        if not wait([receive], timeout=max(0.0, timeout - (time.monotonic() - start))):
            return MethodOutcome("timeout", f"no result within {timeout:g} s (its process was stopped)")
        try:
            return receive.recv()
        except (EOFError, OSError):  # ended without a result: killed, out of memory
            process.join()
            return MethodOutcome("error", f"its process ended without a result (exit code {process.exitcode})")
    finally:
        if process.is_alive():
            process.kill()
        process.join()
        receive.close()
