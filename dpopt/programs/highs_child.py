"""HiGHS solves of independent LPs in child processes, so that they use every core.

HiGHS's interior point (IPX) runs on one thread, so on two cores two LPs that do not depend
on each other (the quotients of :func:`dpopt.programs.finite_query.solve_by_quotients`) can
be solved at once. They run in child processes started with :mod:`subprocess`, and neither
threads nor :mod:`multiprocessing`, because:

* threads in one process share HiGHS's task scheduler, and threads sharing it have
  deadlocked and crashed upstream (ERGO-Code/HiGHS#1886, #3141); dpopt never touches
  process-wide HiGHS state (:func:`dpopt.solvers.new_highs`);
* :mod:`multiprocessing` re-imports the caller's ``__main__`` in its children (a script
  without a ``__main__`` guard would start itself again), and daemonic processes such as
  Dask's workers may not start children with it.

A child reads one LP (numpy arrays in ``.npz`` form) on stdin, solves it with the options
given, and writes its solution on stdout; HiGHS's own C-level output goes to stderr. The
parent can kill a child whose answer it no longer needs (:meth:`ChildSolve.cancel`). Any
failure of a child (it died, or wrote something unreadable) reads as ``None``, and callers
fall back to solving in their own process; a child's solution is the same bits as a solve in
the parent (``tests/programs/test_highs_child.py``). What a child returns is read as any
solver's answer is: the mechanism made from it is repaired and certified before it is used.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

__all__ = ["ChildSolve", "HighsOutcome", "LpArrays", "available_cores", "solve_here"]


@dataclass(frozen=True)
class LpArrays:
    """An LP ``min cost @ x  s.t.  row_lower <= matrix @ x <= row_upper, col_lower <= x <= col_upper``
    as plain arrays (``highspy.HighsLp`` cannot be pickled or saved); infinite bounds are ``inf``."""

    matrix: sparse.csc_array
    cost: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray

    def highs_lp(self) -> Any:
        """The LP as a ``highspy.HighsLp`` (built anew on each call)."""
        import highspy

        lp = highspy.HighsLp()
        lp.num_row_, lp.num_col_ = self.matrix.shape
        lp.col_cost_ = self.cost
        lp.col_lower_, lp.col_upper_ = self.col_lower, self.col_upper
        lp.row_lower_, lp.row_upper_ = self.row_lower, self.row_upper
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = self.matrix.indptr
        lp.a_matrix_.index_ = self.matrix.indices
        lp.a_matrix_.value_ = self.matrix.data
        return lp

    def to_npz(self, options: dict[str, Any]) -> bytes:
        """The LP and HiGHS ``options`` as the bytes of an ``.npz`` file (what a child reads)."""
        buffer = io.BytesIO()
        np.savez(buffer, shape=np.array(self.matrix.shape), indptr=self.matrix.indptr, indices=self.matrix.indices,
                 data=self.matrix.data, cost=self.cost, col_lower=self.col_lower, col_upper=self.col_upper,
                 row_lower=self.row_lower, row_upper=self.row_upper, options=np.array(json.dumps(options)))
        return buffer.getvalue()

    @classmethod
    def from_npz(cls, payload: bytes) -> tuple["LpArrays", dict[str, Any]]:
        """Inverse of :meth:`to_npz` (arrays only: nothing is unpickled)."""
        with np.load(io.BytesIO(payload), allow_pickle=False) as f:
            matrix = sparse.csc_array((f["data"], f["indices"], f["indptr"]), shape=tuple(int(n) for n in f["shape"]))
            lp = cls(matrix, f["cost"], f["col_lower"], f["col_upper"], f["row_lower"], f["row_upper"])
            return lp, json.loads(str(f["options"]))


@dataclass(frozen=True)
class HighsOutcome:
    """What one HiGHS run returned: its model status, objective, column values and row duals."""

    status: str
    objective: float
    col_value: np.ndarray
    row_dual: np.ndarray

    @property
    def optimal(self) -> bool:
        return self.status == "Optimal"

    def to_npz(self) -> bytes:
        buffer = io.BytesIO()
        np.savez(buffer, status=np.array(self.status), objective=np.array(self.objective),
                 col_value=self.col_value, row_dual=self.row_dual)
        return buffer.getvalue()

    @classmethod
    def from_npz(cls, payload: bytes) -> "HighsOutcome":
        with np.load(io.BytesIO(payload), allow_pickle=False) as f:
            return cls(str(f["status"]), float(f["objective"]), f["col_value"], f["row_dual"])


def solve_here(lp: LpArrays, options: dict[str, Any]) -> HighsOutcome:
    """Solve ``lp`` with HiGHS in this process (:func:`dpopt.solvers.new_highs` with ``options``)."""
    from dpopt.solvers import new_highs, run_interruptibly

    highs = new_highs(options)
    highs.passModel(lp.highs_lp())
    run_interruptibly(highs)
    solution = highs.getSolution()
    return HighsOutcome(highs.modelStatusToString(highs.getModelStatus()), float(highs.getInfo().objective_function_value),
                        np.asarray(solution.col_value, dtype=float), np.asarray(solution.row_dual, dtype=float))


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS and Windows have no sched_getaffinity
        return os.cpu_count() or 1


class ChildSolve:
    """One LP solved by HiGHS in a child process, started at once; :meth:`result` waits for it."""

    def __init__(self, lp: LpArrays, options: dict[str, Any]) -> None:
        self._output: tuple[bytes, bytes] | None = None
        try:
            self._process = subprocess.Popen([sys.executable, "-m", __name__, str(os.getpid())], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError:  # no interpreter to run (a frozen application), no processes left: reads as None
            self._process = None
        self._talker = threading.Thread(target=self._talk, args=(lp.to_npz(options),), daemon=True)
        if self._process is not None:
            self._talker.start()

    def _talk(self, payload: bytes) -> None:
        try:
            self._output = self._process.communicate(payload)
        except (OSError, ValueError):  # the child was killed while we wrote to it
            self._output = None

    def result(self) -> HighsOutcome | None:
        """The child's solution, or ``None`` if it failed or was cancelled."""
        if self._process is None:
            return None
        self._talker.join()
        if self._output is None or self._process.returncode != 0:
            return None
        try:
            return HighsOutcome.from_npz(self._output[0])
        except (OSError, ValueError, KeyError):
            return None

    def cancel(self) -> None:
        """Kill the child if it is still running (its :meth:`result` is then ``None``)."""
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.kill()
        self._talker.join()


def main() -> None:
    """Child side: an LP on stdin (:meth:`LpArrays.to_npz`), its :class:`HighsOutcome` on stdout."""
    from dpopt.process_lifetime import end_with

    # Ctrl-C in a terminal reaches the whole process group: end at once, not after the
    # solve (Python would see the signal only when HiGHS returns); and end with the parent
    # when it is gone (killed, or stopped by Ctrl-C without waiting for us)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    parent = int(sys.argv[1]) if len(sys.argv) > 1 else os.getppid()  # the pid that started us (ChildSolve passes it)
    end_with(parent, parent=parent)
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything HiGHS prints at the C level goes to stderr, not into the answer
    lp, options = LpArrays.from_npz(sys.stdin.buffer.read())
    answer.write(solve_here(lp, options).to_npz())
    answer.close()


if __name__ == "__main__":
    main()
