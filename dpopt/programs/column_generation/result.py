"""What column generation returns, and the exact evaluation every upper bound is read from."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from dpopt.mechanisms.factored import FactoredMechanism
from dpopt.problems.count_query import CountQuery

#: Absolute slack in the stopping rule, so an optimum of 0 (S a single value) can stop.
ABSOLUTE_GAP = 1e-14

#: How far (relative) a computed lower bound may sit above the computed objective it bounds and
#: still be read as equal to it: both are sums of up to n + 1 rounded terms, and on 120 solved
#: problems (n = 5..500, three losses) the Lagrangian bound came out above the objective in 21,
#: by up to 8.2e-16 (four ulps). 64 ulps; anything beyond is left for the caller to see.
ROUNDING_SLACK = 64 * 2.0**-52


def at_most(lower: float, upper: float) -> float:
    """``lower``, or ``upper`` where ``lower`` exceeds it by no more than :data:`ROUNDING_SLACK`:
    a certified bound that met the objective to its last digits is reported as that objective,
    so ``lower_bound <= objective`` holds as printed."""
    if upper < lower <= upper + ROUNDING_SLACK * max(abs(upper), 1e-300):
        return upper
    return lower


@dataclass(frozen=True)
class ColumnGenerationResult:
    """Outcome of :func:`solve_by_column_generation`.

    Attributes
    ----------
    mechanism : FactoredMechanism
        ``G T`` with T clipped and renormalised (private by construction).
    lower_bound, upper_bound : float
        Lagrangian bound and exact worst-case loss of ``mechanism``.
    rounds, columns : int
        Master solves and columns in the final master.
    master_objective : float
        The last restricted master's optimum.
    row_losses : numpy.ndarray
        Exact expected loss of each i in S.
    master_failure : str
        Empty, or HiGHS's failure on a later master; the result is then the last
        solved master's T, still private and certified by its bounds.
    route : str
        ``"column generation"``, ``"identity certificate"`` or ``"zero-one flow"``
        (:func:`solve_zero_one_by_flow`; rounds = 1 flow LP solve).
    multipliers : numpy.ndarray or None
        Column generation's multipliers on S (length n + 1, zero off S, summing to 1)
        whose Lagrangian bound is ``lower_bound``; None from the other routes.
    solver : str
        What solved its programs: ``"HIGHS"``, ``"CLARABEL+HIGHS"`` (interior masters), or
        ``"none"`` (a closed form, or the zero-one flow solved by its sweep).
    """

    mechanism: FactoredMechanism
    lower_bound: float
    upper_bound: float
    rounds: int
    columns: int
    master_objective: float
    row_losses: np.ndarray
    seconds: float
    history: list[dict[str, float]]
    master_failure: str = ""
    route: str = "column generation"
    multipliers: np.ndarray | None = None
    solver: str = "HIGHS"

    def __post_init__(self) -> None:
        object.__setattr__(self, "lower_bound", at_most(float(self.lower_bound), float(self.upper_bound)))

    @property
    def gap(self) -> float:
        return self.upper_bound - self.lower_bound

    @property
    def relative_gap(self) -> float:
        """``gap / |upper|`` (0 when both are 0: a consumer who knows the count exactly)."""
        if self.gap <= 0:
            return 0.0
        return self.gap / abs(self.upper_bound) if self.upper_bound else float("inf")

    def within(self, relative: float, absolute: float = 1e-13) -> bool:
        """Whether ``gap <= relative * |upper| + absolute``."""
        return self.gap <= relative * abs(self.upper_bound) + absolute


def evaluated(problem: CountQuery, remap: sparse.csr_array) -> tuple[FactoredMechanism, np.ndarray]:
    """``G T`` for the remap T (clipped and renormalised by :class:`FactoredMechanism`) and
    its exact expected loss on every input of S: what every upper bound here is read from
    (absolute and squared loss by kernel recurrences, :meth:`FactoredMechanism.named_row_losses`;
    at n = 10,000 the dense sums took 1.3 s an evaluation, up to half of a whole run)."""
    mechanism = FactoredMechanism.from_remap(problem.n, problem.alpha, remap)
    return mechanism, mechanism.expected_losses(problem.loss_name, problem.loss_rows, np.asarray(problem.support))


def solvers_of(names: Iterable[object]) -> str:
    """Solver labels (``"HIGHS"``, ``"CLARABEL+HIGHS"``, ``"none"``) combined into one: each named
    once, sorted, joined by "+"; ``"none"`` if none solved anything."""
    return "+".join(sorted({part for name in names for part in str(name).split("+")} - {"none"})) or "none"
