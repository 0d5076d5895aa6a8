"""Size limits, checked before any work starts (DESIGN.md: "Work and memory are estimated
before a solve starts, and what cannot fit is refused naming the parameter and the limit").

Each problem kind checks the sizes it allocates at construction, and each registered
method declares an estimate of the peak memory it needs (``Method.memory``), which
:func:`dpopt.solve` compares with :func:`memory_limit` before running it. Estimates are
deliberately generous upper bounds; a refused problem names the parameter that drives
the size, the estimate and the limit. Large work that fits may run.
"""

from __future__ import annotations

import math
import os
from typing import Any

from dpopt.validation import fail

__all__ = [
    "MAX_PROBLEM_FILE_BYTES",
    "MAX_RELEASES",
    "MAX_COUNT",
    "MAX_UNIVERSE",
    "UNDERFLOW_EXPONENT",
    "MAX_MAGNITUDE",
    "MAX_TIMEOUT",
    "check_memory",
    "memory_limit",
]

#: Problem files larger than this are refused unread (the largest example is ~3 KB).
MAX_PROBLEM_FILE_BYTES = 1 << 20
#: Largest number of releases one call of ``sample`` (and ``dpopt sample --count``) draws.
MAX_RELEASES = 1_000_000
#: Largest n of a count query (the support alone is n + 1 integers); the routes'
#: memory estimates refuse far smaller n for the dense methods.
MAX_COUNT = 10_000_000
#: Largest universe (d_X elements, finite-query datasets): N x N metrics are built.
MAX_UNIVERSE = 20_000
#: Largest magnitude of a user number that dpopt squares or sums (queries, coordinates,
#: distances, budgets): 1e15^2 times a workload's size stays far from overflow.
MAX_MAGNITUDE = 1e15
#: Largest number of records of a d_X workload: the surrogate's bias term grows with n^2 (squared to 1e24).
MAX_RECORDS = 10**12
#: Largest order p of the generalized Gaussian: Lemma 5's bound expands (|x| + Delta)^p in
#: p + 1 binomial terms whose powers overflow near p = 100 (measured: p = 50 runs without a
#: floating-point warning, p = 100 overflows and p = 10**6 asked for 745 GiB).
MAX_ORDER = 50
#: Longest ``--timeout`` (seconds) a command takes (solve, compare, sweep): a week.
MAX_TIMEOUT = 7 * 86400.0
#: Dense mechanisms whose entries decay like alpha^k need alpha^k to stay a normal double:
#: epsilon * k <= this (-ln of the smallest normal double is 708.4; a margin is kept).
#: Below it, ratios of subnormal entries are inexact and zeros appear beside non-zeros.
UNDERFLOW_EXPONENT = 700.0


def memory_limit() -> int:
    """Bytes a single solve may plan to use: ``DPOPT_MEMORY_LIMIT`` or half the machine's RAM.

    Read at each check, so a bad value is refused where a solve starts (one line naming the
    variable), not when dpopt is imported: until 2026-11-28 ``DPOPT_MEMORY_LIMIT=abc`` (or
    ``nan``, ``inf``, ``12GiB``) made ``import dpopt``, and so every command, end in a
    traceback, and ``0`` or ``-1`` became a 1-byte limit that refused everything.
    """
    configured = os.environ.get("DPOPT_MEMORY_LIMIT")
    if configured is not None and configured.strip():
        try:
            limit = float(configured)
        except ValueError:
            limit = math.nan
        if not (math.isfinite(limit) and limit >= 1):
            raise fail("DPOPT_MEMORY_LIMIT", "environment", "a positive, finite number of bytes (e.g. 8e9)", configured)
        return int(limit)
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2)
    except (ValueError, OSError, AttributeError):  # pragma: no cover - no sysconf (not seen)
        return 8 << 30


def check_memory(estimate: float, parameter: str, owner: str, value: Any, *, what: str) -> None:
    """Refuse ``value`` of ``parameter`` if ``what`` needs more than :func:`memory_limit` bytes."""
    limit = memory_limit()
    if estimate > limit:
        raise fail(
            parameter,
            owner,
            f"small enough for {what} to fit in the memory limit "
            f"({limit / 2**30:.3g} GiB; this needs about {estimate / 2**30:.3g} GiB; "
            "set DPOPT_MEMORY_LIMIT in bytes to change it)",
            value,
        )
