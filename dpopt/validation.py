"""One validation path and one error format for every parameter in dpopt.

Every public constructor validates its arguments through these helpers, so a bad
value is reported the same way wherever it enters::

    The 'alpha' parameter of count_query must be a float in (0, 1). Got 1.5 instead.

The command line turns :class:`InvalidParameterError` into one line on stderr and
exit status 2.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, localcontext
from fractions import Fraction
from numbers import Integral, Real
from typing import Any, Iterable, Sequence

import numpy as np

__all__ = [
    "DPOptError",
    "InvalidParameterError",
    "SolverError",
    "check_int",
    "check_index_set",
    "check_real",
    "check_choice",
    "check_array",
    "read_text_file",
    "fail",
    "fraction_text",
]


class DPOptError(Exception):
    """Base class of every error dpopt raises on purpose."""

    def __reduce__(self) -> tuple[Any, ...]:
        # picklable whatever the subclass's __init__ takes (a method's process sends its error
        # back whole: dpopt solve --timeout); a refused value travels as its shown text
        state = {key: _show(value) if key == "got" else value for key, value in vars(self).items()}
        return _restore_error, (type(self), self.args, state)


def _restore_error(cls: type, args: tuple[Any, ...], state: dict[str, Any]) -> "DPOptError":
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class InvalidParameterError(DPOptError, ValueError):
    """A parameter is outside what is allowed; raised before any work is done."""

    def __init__(self, parameter: str, owner: str, allowed: str, got: Any) -> None:
        self.parameter = parameter
        self.owner = owner
        self.allowed = allowed
        self.got = got
        # a name holding a single quote (a file's key "'title") is shown in double quotes
        name = f'"{parameter}"' if "'" in str(parameter) else f"'{parameter}'"
        super().__init__(
            f"The {name} parameter of {owner} must be {allowed}. Got {_show(got)} instead."
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
    # an exact number (the command line reads --true-value 1.5 as Fraction(3, 2)) as it was written
    text = fraction_text(value) if isinstance(value, Fraction) else repr(value)
    text = re.sub(r"\s*\n\s*", " ", text)  # one line: a pandas or numpy repr spans several
    return text if len(text) <= 80 else text[:77] + "..."


def fraction_text(value: Fraction) -> str:
    """A decimal where ``value`` has one (its denominator divides a power of ten), else ``p/q``."""
    q = value.denominator
    for prime in (2, 5):
        while q % prime == 0:
            q //= prime
    if q != 1:
        return f"{value.numerator}/{value.denominator}"
    with localcontext() as context:
        context.prec = len(str(value.numerator)) + len(str(value.denominator)) + 2
        return format(Decimal(value.numerator) / Decimal(value.denominator), "f")


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
    try:
        number = float(value)
    except OverflowError:  # an int or Fraction beyond a double's range (10**400)
        raise fail(parameter, owner, allowed, value) from None
    if not math.isfinite(number):
        raise fail(parameter, owner, allowed, value)
    if low is not None and (number < low or (low_open and number == low)):
        raise fail(parameter, owner, allowed, value)
    if high is not None and (number > high or (high_open and number == high)):
        raise fail(parameter, owner, allowed, value)
    return number


#: Most decimal places an exact decimal true value may have (a double's smallest subnormal has
#: 1,074): each is a factor of 10 in its Fraction's denominator, and 1e-100000000 took minutes.
MAX_DECIMAL_PLACES = 1100


def check_exact_real(value: Any, parameter: str, owner: str) -> int | Fraction | float:
    """``value`` validated as :func:`check_real` does (a finite number in a double's range) and
    returned exactly: an integer as an int, a Fraction as itself, a Decimal as the Fraction it
    is, anything else as a float.

    For true values released on a grid, whose cell is computed in rational arithmetic: as a
    double, 2**60 + 128 and 2**60 + 129 (neighbours for sensitivity 1) are 256 apart.
    """
    if isinstance(value, Decimal):  # exact like a Fraction (refused as "not a float" until 2026-11-29)
        # bounded before Fraction(value), which would form 10**(10**8) for Decimal("1e-100000000")
        if not value.is_finite() or (value != 0 and (value.as_tuple().exponent < -MAX_DECIMAL_PLACES or value.adjusted() > 308)):  # type: ignore[operator]
            raise fail(parameter, owner, f"a finite number in a double's range with at most {MAX_DECIMAL_PLACES:,} decimal places", value)
        value = Fraction(value)
    number = check_real(value, parameter, owner)
    if isinstance(value, (Integral, np.integer)):
        return int(value)
    if isinstance(value, Fraction):
        return value
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


def check_index_set(value: Any, parameter: str, owner: str, last: int) -> tuple[int, ...]:
    """A non-empty set of indices in [0, last], sorted: an inclusive range ``{lower, upper}``
    (either end may be left out) or a list of integers (repeats collapse); else raise naming
    ``parameter`` (an end of a range as ``parameter.lower`` / ``parameter.upper``)."""
    allowed = f"a range {{lower, upper}} within [0, {last}], or a non-empty list of integers in [0, {last}]"
    if isinstance(value, dict):
        if set(value) - {"lower", "upper"}:
            raise fail(parameter, owner, allowed, value)
        lower = check_int(value.get("lower", 0), f"{parameter}.lower", owner, low=0, high=last)
        upper = check_int(value.get("upper", last), f"{parameter}.upper", owner, low=lower, high=last)
        return tuple(range(lower, upper + 1))
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise fail(parameter, owner, allowed, value)
    chosen = sorted({check_int(v, parameter, owner, low=0, high=last) for v in value})
    if not chosen:
        raise fail(parameter, owner, allowed, value)
    return tuple(chosen)


def check_array(
    value: Any,
    parameter: str,
    owner: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    allow_inf: bool = False,
    allow_nan: bool = False,
    low: float | None = None,
    integer: bool = False,
    max_size: int | None = None,
    max_abs: float | None = None,
) -> np.ndarray:
    """Return ``value`` as a float array of numbers, or raise naming ``parameter``.

    Refused: strings (also numeric strings such as ``"1.5"``), booleans, ragged or
    nested-mixed lists, NaN (always: a NaN distance or loss silently drops a privacy
    constraint; ``allow_nan`` only where a NaN is measured, as a certificate does), infinities unless ``allow_inf``, values below ``low``, non-integers
    when ``integer``, more than ``max_size`` entries, and finite values larger than
    ``max_abs`` in magnitude (where they are squared or summed: 1e155 overflowed a
    surrogate objective).
    """
    shape_text = {None: "an array", 1: "a list", 2: "a table (list of equally long lists)"}
    kinds = ndim if isinstance(ndim, tuple) else (ndim,)
    allowed = " or ".join(shape_text.get(k, f"a {k}-D array") for k in kinds) + " of "
    allowed += "non-negative " if low == 0 else ""
    allowed += "integers" if integer else "numbers"
    allowed += f" >= {low:g}" if low not in (None, 0) else ""
    allowed += "" if allow_nan else " (+inf allowed, no NaN)" if allow_inf else " (finite, no NaN)"
    allowed += f", at most {max_abs:g} in magnitude" if max_abs is not None else ""
    if isinstance(value, (str, bytes)) or value is None or _holds_bool(value):
        raise fail(parameter, owner, allowed, value)
    try:
        raw = np.asarray(value)
    except (ValueError, TypeError):  # ragged lists
        raise fail(parameter, owner, allowed, value) from None
    if raw.dtype.kind not in "iuf" or raw.dtype.kind == "b":
        raise fail(parameter, owner, allowed, value)
    if max_size is not None and raw.size > max_size:
        raise fail(parameter, owner, allowed + f", at most {max_size:,} entries", f"{raw.size:,} entries")
    array = raw.astype(float)
    if ndim is not None and array.ndim not in kinds:
        raise fail(parameter, owner, allowed, value)
    if (not allow_nan and np.isnan(array).any()) or (not allow_inf and np.isinf(array).any()):
        raise fail(parameter, owner, allowed, value)
    if low is not None and (array < low).any():
        raise fail(parameter, owner, allowed, value)
    if max_abs is not None and np.any(np.isfinite(array) & (np.abs(array) > max_abs)):
        raise fail(parameter, owner, allowed, value)
    if integer and np.any(np.isfinite(array) & (array != np.round(array))):
        raise fail(parameter, owner, allowed, value)
    return array


def check_file_name(path: Any, parameter: str, owner: str, *, added: int) -> None:
    """Refuse a file name too long for its folder once dpopt adds ``added`` bytes to it (the
    temporary, probe, lock and part files it writes beside a result are named after it).

    Until 2026-11-29 a name past the file system's limit (255 bytes) ended an export in an
    internal error (pathlib's ``is_dir`` raises ENAMETOOLONG), and one just under it in a
    refusal that blamed the folder's permissions.
    """
    import os

    name, folder = os.path.basename(os.fspath(path)), os.path.dirname(os.fspath(path)) or "."
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # no such folder (refused by the caller), or no pathconf
        limit = 255
    if len(os.fsencode(name)) + added > limit:
        shown = name if len(name) <= 40 else name[:37] + "..."
        raise fail(parameter, owner, f"a file name of at most {limit - added} bytes (dpopt writes files named after it "
                   f"beside it; the folder allows {limit})", f"{shown} ({len(os.fsencode(name))} bytes)")


def _holds_bool(value: Any) -> bool:
    """Whether nested lists or tuples hold a boolean. numpy reads ``[True, 2]`` as the integers
    ``[1, 2]``, so until 2026-11-29 a problem file's ``values = [0, true, 2]`` was read as
    ``[0, 1, 2]``; an array of booleans alone was already refused by its dtype."""
    if not isinstance(value, (list, tuple)):
        return False
    stack = [value]
    while stack:
        for item in stack.pop():
            if isinstance(item, (bool, np.bool_)):
                return True
            if isinstance(item, (list, tuple)):
                stack.append(item)
    return False


def read_text_file(path: Any, parameter: str, owner: str, *, max_bytes: int, what: str) -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes``, or one error naming ``parameter``.

    Refuses before reading: a path that is not a string or path, a missing file, a
    directory, a device or FIFO (``/dev/zero`` would never end), and a file over the
    limit; after reading: bytes that are not UTF-8 or contain NUL. Messages name the
    path and never echo the file's content.
    """
    import os
    import stat

    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise fail(parameter, owner, f"the path of {what}", path)
    try:
        info = os.stat(path)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or "not a valid path"
        raise fail(parameter, owner, f"the path of {what}", f"{path} ({reason})") from None
    if not stat.S_ISREG(info.st_mode):
        raise fail(parameter, owner, f"a regular file holding {what}", f"{path} (not a regular file)")
    if info.st_size > max_bytes:
        raise fail(parameter, owner, f"{what} of at most {max_bytes:,} bytes", f"{path} ({info.st_size:,} bytes)")
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise fail(parameter, owner, f"a readable file holding {what}", f"{path} ({exc.strerror})") from None
    if len(data) > max_bytes:
        raise fail(parameter, owner, f"{what} of at most {max_bytes:,} bytes", f"{path} (grew while read)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise fail(parameter, owner, f"UTF-8 text ({what})", f"{path} (not UTF-8)") from None
    if "\x00" in text:
        raise fail(parameter, owner, f"text ({what})", f"{path} (binary: holds NUL bytes)")
    return text


def check_choice(value: Any, parameter: str, owner: str, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``, or raise naming them all."""
    options: Sequence[str] = tuple(choices)
    if not isinstance(value, str) or value not in options:  # also unhashable values: no set lookup
        allowed = "one of " + ", ".join(repr(c) for c in options)
        raise fail(parameter, owner, allowed, value)
    return value
