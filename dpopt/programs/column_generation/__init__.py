"""Exact optimal count mechanisms at scale: x = G T with T found by column generation.

Theorem 1 of Gupte & Sundararajan: the minimax optimum is reached by ``x = G T``,
``G = G_{n,alpha}`` the geometric mechanism and T the consumer's optimal
row-stochastic remap (Section 2.4.3). That LP has (n+1)^2 variables ``T[r, r']`` but
only n+1 convexity rows and |S| loss rows, and its optimal T is very sparse, so it is
solved by column generation: a restricted master over a few columns (initially a band
around the diagonal), warm-started in HiGHS, and exact pricing of *all* (n+1)^2
columns in O(n^2) (or O(n)) per round.

Every result is certified: the lower bound is a Lagrangian bound priced exactly over all
columns for the master's multipliers (valid for any multipliers), the upper bound the
exact worst-case loss of the returned ``G T`` (T clipped and renormalised: private by
construction), and the loop stops when they agree to the tolerance.

The modules, in the order a run meets them (each docstring says what was measured and
tried there, dated, including what did not work):

* :mod:`~dpopt.programs.column_generation.solve`: the loop
  (:func:`solve_by_column_generation`), which routes each problem and decides how each
  master is solved; whole-run measurements (issue 16).
* :mod:`~dpopt.programs.column_generation.closed_forms`: optima certified without a
  master (the geometric mechanism itself, two counts, zero-one loss as a flow).
* :mod:`~dpopt.programs.column_generation.side_information`: S with gaps (the hull of S,
  clusters solved apart and joined, bridged masters).
* :mod:`~dpopt.programs.column_generation.starts`: first masters that hold (nearly) the
  optimal support (coarse-to-fine at small epsilon, a basis predicted from a smaller
  problem, the neighbouring counts of S).
* :mod:`~dpopt.programs.column_generation.forms`: the master's rows and columns per loss
  (chains of kernel sums for absolute and squared loss).
* :mod:`~dpopt.programs.column_generation.master`: the restricted master in HiGHS or
  Clarabel, and its exact basic solution.
* :mod:`~dpopt.programs.column_generation.pricing`: the Lagrangian costs, their row
  minima and the lower bound.
* :mod:`~dpopt.programs.column_generation.result`: :class:`ColumnGenerationResult` and
  the exact evaluation every upper bound is read from.
"""

from dpopt.programs.column_generation.closed_forms import solve_zero_one_by_flow
from dpopt.programs.column_generation.forms import form_for
from dpopt.programs.column_generation.master import ExtendedBasis
from dpopt.programs.column_generation.pricing import lagrangian_costs
from dpopt.programs.column_generation.result import ColumnGenerationResult
from dpopt.programs.column_generation.solve import solve_by_column_generation
from dpopt.programs.column_generation.starts import extended_basis, extension_plan, side_period

__all__ = ["ColumnGenerationResult", "ExtendedBasis", "extended_basis", "extension_plan", "form_for", "lagrangian_costs",
           "side_period", "solve_by_column_generation", "solve_zero_one_by_flow"]
