"""dpopt: differentially private mechanisms designed by optimization.

Every mechanism is a program (an LP or convex program in cvxpy, solved by a real
solver); closed forms are registered beside it as solver-free shortcuts.

>>> import dpopt
>>> solution = dpopt.solve(dpopt.CountQuery(n=3, alpha=0.25))
>>> round(solution.objective * 415)
168
"""

from dpopt.privacy_audit import audit
from dpopt.certificates import Certificate, certify, repair
from dpopt.problems.calibration import Calibration
from dpopt.problems.count_query import CountQuery
from dpopt.problems.dx_linear_query import DXLinearQuery
from dpopt.problems.finite_query import FiniteQuery
from dpopt.problems.multi_level import MultiLevelRelease
from dpopt.problems.noise_adding import NeighbouringSetNoise, NoiseAdding
from dpopt.problems.statistical_query import StatisticalQuery
from dpopt.registry import compare, compare_table, methods_for, price_of_closed_form, solve
from dpopt.solution import Solution
from dpopt.sweeps import sweep
from dpopt import plot
from dpopt.validation import DPOptError, InvalidParameterError, SolverError

__all__ = [
    "plot",
    "audit",
    "Calibration",
    "Certificate",
    "CountQuery",
    "DPOptError",
    "DXLinearQuery",
    "FiniteQuery",
    "InvalidParameterError",
    "MultiLevelRelease",
    "NeighbouringSetNoise",
    "NoiseAdding",
    "Solution",
    "SolverError",
    "StatisticalQuery",
    "certify",
    "compare",
    "compare_table",
    "methods_for",
    "price_of_closed_form",
    "repair",
    "solve",
    "sweep",
]

__version__ = "0.1.0"
