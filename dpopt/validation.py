"""One validation path and one error format for every parameter in dpopt.

Every public constructor validates its arguments through these helpers, so a bad
value is reported the same way wherever it enters::

    The 'alpha' parameter of count_query must be a float in (0, 1). Got 1.5 instead.

The command line turns :class:`InvalidParameterError` into one line on stderr and
exit status 2.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, Iterable, Sequence

import numpy as np

__all__ = [
    "DPOptError",
    "InvalidParameterError",
    "SolverError",
    "check_int",
    "check_real",
    "check_choice",
    "fail",
]


class DPOptError(Exception):
    """Base class of every error dpopt raises on purpose."""


class InvalidParameterError(DPOptError, ValueError):
    """A parameter is outside what is allowed; raised before any work is done."""

    def __init__(self, parameter: str, owner: str, allowed: str, got: Any) -> None:
        self.parameter = parameter
        self.owner = owner
        self.allowed = allowed
        self.got = got
        super().__init__(
            f"The '{parameter}' parameter of {owner} must be {allowed}. Got {_show(got)} instead."
        )


class SolverError(DPOptError, RuntimeError):
    """A solver did not return an optimal solution (CLI exit status 3)."""

    def __init__(self, solver: str, status: str, detail: str = "") -> None:
        self.solver = solver
        self.status = status
        message = f"Solver {solver} did not solve the program: status '{status}'."
        if detail:
            message += f" {detail}"
        super().__init__(message)


def _show(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def fail(parameter: str, owner: str, allowed: str, got: Any) -> InvalidParameterError:
    """Build (not raise) the standard error, for checks that do not fit the helpers."""
    return InvalidParameterError(parameter, owner, allowed, got)


def _interval(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    left = "(" if low_open or low is None else "["
    right = ")" if high_open or high is None else "]"
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    return f"{left}{lo}, {hi}{right}"


def check_real(
    value: Any,
    parameter: str,
    owner: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite float within the interval, or raise.

    Booleans are rejected even though ``bool`` is a subclass of ``int``.
    """
    allowed = f"a float in {_interval(low, high, low_open, high_open)}"
    if isinstance(value, bool) or not isinstance(value, (Real, np.floating, np.integer)):
        raise fail(parameter, owner, allowed, value)
    number = float(value)
    if not math.isfinite(number):
        raise fail(parameter, owner, allowed, value)
    if low is not None and (number < low or (low_open and number == low)):
        raise fail(parameter, owner, allowed, value)
    if high is not None and (number > high or (high_open and number == high)):
        raise fail(parameter, owner, allowed, value)
    return number


def check_int(
    value: Any,
    parameter: str,
    owner: str,
    *,
    low: int | None = None,
    high: int | None = None,
) -> int:
    """Return ``value`` as an int within [low, high], or raise."""
    if low is not None and high is not None:
        allowed = f"an integer in [{low}, {high}]"
    elif low is not None:
        allowed = f"an integer >= {low}"
    elif high is not None:
        allowed = f"an integer <= {high}"
    else:
        allowed = "an integer"
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)):
        raise fail(parameter, owner, allowed, value)
    number = int(value)
    if (low is not None and number < low) or (high is not None and number > high):
        raise fail(parameter, owner, allowed, value)
    return number


def check_choice(value: Any, parameter: str, owner: str, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``, or raise naming them all."""
    options: Sequence[str] = tuple(choices)
    if not isinstance(value, str) or value not in options:
        allowed = "one of " + ", ".join(repr(c) for c in options)
        raise fail(parameter, owner, allowed, value)
    return value
