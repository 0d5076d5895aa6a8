"""Heavy optional-at-start dependencies, imported on first use.

``import cvxpy`` takes about a second (it imports scipy.stats) and ``import pandas``
about half of one; a CLI call that samples from a closed form, or a method that talks
to HiGHS directly, needs neither. Modules that use them write
``from dpopt.lazy_modules import cvxpy as cp`` and use ``cp`` as usual: the real
import runs at the first attribute access (under Python's per-module import lock,
so threads that race to it all see the fully imported module).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["LazyModule", "cvxpy", "pandas"]


class LazyModule:
    """Stands in for module ``name``; every attribute is read from the imported module."""

    def __init__(self, name: str) -> None:
        self._name = name

    def module(self) -> ModuleType:
        return importlib.import_module(self._name)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.module(), attribute)

    def __repr__(self) -> str:
        return f"<lazily imported module {self._name!r}>"


cvxpy = LazyModule("cvxpy")
pandas = LazyModule("pandas")
