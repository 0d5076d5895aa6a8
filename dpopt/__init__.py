"""dpopt: differentially private mechanisms designed by optimization.

Every mechanism is a program (an LP or convex program in cvxpy, solved by a real
solver); closed forms are registered beside it as solver-free shortcuts.

>>> import dpopt
>>> solution = dpopt.solve(dpopt.CountQuery(n=3, alpha=0.25))
>>> round(solution.objective * 415)
168
"""

import importlib
from typing import Any

#: Each public name and the module that defines it, imported on first use (PEP 562), so that
#: ``import dpopt.console`` (the console script) costs nothing before its Ctrl-C guard is in place.
_SOURCES = {
    "audit": "dpopt.privacy_audit",
    "Certificate": "dpopt.certificates",
    "certify": "dpopt.certificates",
    "repair": "dpopt.certificates",
    "Calibration": "dpopt.problems.calibration",
    "CountQuery": "dpopt.problems.count_query",
    "DXLinearQuery": "dpopt.problems.dx_linear_query",
    "FiniteQuery": "dpopt.problems.finite_query",
    "MultiLevelRelease": "dpopt.problems.multi_level",
    "NeighbouringSetNoise": "dpopt.problems.noise_adding",
    "NoiseAdding": "dpopt.problems.noise_adding",
    "StatisticalQuery": "dpopt.problems.statistical_query",
    "compare": "dpopt.registry",
    "compare_table": "dpopt.registry",
    "methods_for": "dpopt.registry",
    "price_of_closed_form": "dpopt.registry",
    "solve": "dpopt.registry",
    "Solution": "dpopt.solution",
    "sweep": "dpopt.sweeps",
    "DPOptError": "dpopt.validation",
    "InvalidParameterError": "dpopt.validation",
    "SolverError": "dpopt.validation",
}


def __getattr__(name: str) -> Any:
    if name in ("plot", "testing"):
        return importlib.import_module(f"dpopt.{name}")  # a module: importing it binds dpopt.plot, dpopt.testing
    if name not in _SOURCES:
        raise AttributeError(f"module 'dpopt' has no attribute {name!r}")
    value = getattr(importlib.import_module(_SOURCES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "plot",
    "testing",
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
