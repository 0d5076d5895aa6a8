"""Consumer loss functions l(i, r) for count queries.

Gupte & Sundararajan (Section 2.3) only assume that l(i, r) is monotone
non-decreasing in |i - r| for every true value i: whenever |i - r| < |i - r'| we need
l(i, r) <= l(i, r'). The proof of their Lemma 5 compares outputs on *both* sides of
i, so the two sides are checked against each other, not only each side on its own.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dpopt.validation import check_array, fail

__all__ = ["NAMED_LOSSES", "loss_table", "named_loss_rows", "first_monotonicity_violation"]

NAMED_LOSSES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "absolute": lambda dist: dist.astype(float),
    "squared": lambda dist: dist.astype(float) ** 2,
    "zero_one": lambda dist: (dist != 0).astype(float),
}


def _distance(n: int) -> np.ndarray:
    values = np.arange(n + 1)
    return np.abs(values[:, None] - values[None, :])


def named_loss_rows(name: str, rows: np.ndarray, n: int) -> np.ndarray:
    """Rows ``rows`` of a named loss's table, computed from its formula."""
    return NAMED_LOSSES[name](np.abs(np.asarray(rows)[:, None] - np.arange(n + 1)[None, :]))


def loss_table(loss: Any, n: int, owner: str = "count_query") -> np.ndarray:
    """Return the validated (n+1)x(n+1) table ``L[i, r] = l(i, r)``.

    Parameters
    ----------
    loss : str, callable or array_like
        ``"absolute"``, ``"squared"``, ``"zero_one"``; a callable ``l(i, r)`` that
        accepts integer arrays (broadcast) or scalars; or an (n+1)x(n+1) table.
    n : int
        Largest count; values are 0..n.
    owner : str
        Name used in error messages.

    Raises
    ------
    InvalidParameterError
        If the loss is unknown, not finite, of the wrong shape, or not monotone
        non-decreasing in |i - r| (the message names the first offending cell).
    """
    if isinstance(loss, str):
        if loss not in NAMED_LOSSES:
            raise fail("loss", owner, "one of 'absolute', 'squared', 'zero_one', a callable or a table", loss)
        return NAMED_LOSSES[loss](_distance(n))
    if callable(loss):
        table = _table_from_callable(loss, n, owner)
    else:
        table = check_array(loss, "loss", owner, ndim=2)
    if table.shape != (n + 1, n + 1):
        raise fail("loss", owner, f"a table of shape ({n + 1}, {n + 1})", table)
    if not np.all(np.isfinite(table)):
        raise fail("loss", owner, "a table of finite numbers", table)
    violation = first_monotonicity_violation(table)
    if violation is not None:
        (i, r_near), (_, r_far) = violation
        raise fail(
            "loss",
            owner,
            "non-decreasing in |i - r| for every true value i",
            f"l({i}, {r_far}) = {table[i, r_far]:g} < l({i}, {r_near}) = {table[i, r_near]:g} "
            f"although |{i} - {r_far}| > |{i} - {r_near}|",
        )
    return table


def _table_from_callable(loss: Callable[..., Any], n: int, owner: str) -> np.ndarray:
    i, r = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    try:
        table = np.broadcast_to(np.asarray(loss(i, r), dtype=float), i.shape).copy()
    except Exception:  # the callable may only take scalars
        try:
            table = np.array([[float(loss(a, b)) for b in range(n + 1)] for a in range(n + 1)])
        except Exception as exc:
            raise fail("loss", owner, "a callable l(i, r) returning numbers", loss) from exc
    return table


def first_monotonicity_violation(table: np.ndarray) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Find the first row i and cells (i, r_near), (i, r_far) with a smaller loss further away.

    Returns ``None`` when ``table`` is non-decreasing in |i - r| on every row.
    The check is vectorised: per row and distance d it compares the largest loss
    at distance d with the smallest at distance d + 1 (which is transitive).
    """
    size = table.shape[0]
    rows = np.arange(size)[:, None]
    d = np.arange(size)[None, :]
    right_col, left_col = rows + d, rows - d
    right = np.where(right_col < size, table[rows, np.minimum(right_col, size - 1)], np.nan)
    left = np.where(left_col >= 0, table[rows, np.maximum(left_col, 0)], np.nan)
    with np.errstate(invalid="ignore"):
        hi_by_d = np.fmax(right, left)  # (row, d): largest loss at distance d (nan: none)
        lo_by_d = np.fmin(right, left)
    with np.errstate(invalid="ignore"):
        bad = hi_by_d[:, :-1] > lo_by_d[:, 1:]  # comparisons with nan are False
    if not bad.any():
        return None
    i, dd = map(int, np.argwhere(bad)[0])
    near = _cell_at(table[i], i, dd, np.argmax)
    far = _cell_at(table[i], i, dd + 1, np.argmin)
    return (i, near), (i, far)


def _cell_at(row: np.ndarray, i: int, distance: int, pick: Callable[[np.ndarray], Any]) -> int:
    candidates = [c for c in (i - distance, i + distance) if 0 <= c < row.size]
    return candidates[int(pick(row[candidates]))]
