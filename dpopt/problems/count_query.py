"""The count-query problem of Gupte & Sundararajan (Section 2).

A count query takes values 0..n; neighbouring databases change it by at most one.
A consumer has a loss l(i, r), monotone in |i - r|, and side information S (the
true count is known to lie in S). The minimax-optimal alpha-DP mechanism minimises
``max_{i in S} sum_r l(i, r) x[i, r]`` (Eq. 1) over mechanisms x satisfying
Definition 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Sequence

import numpy as np

from dpopt.limits import MAX_COUNT, check_memory
from dpopt.losses import NAMED_LOSSES, loss_table, named_loss_rows
from dpopt.privacy import PrivacyLevel, resolve_privacy
from dpopt.validation import check_choice, check_index_set, check_int

__all__ = ["CountQuery"]

KIND = "count_query"
LossSpec = str | Callable[..., Any] | Sequence[Sequence[float]] | np.ndarray


@dataclass(frozen=True, eq=False, kw_only=True)
class CountQuery:
    """A validated count-query design problem.

    Parameters
    ----------
    n : int
        Largest count (>= 1); the mechanism maps 0..n to 0..n.
    alpha, epsilon : float
        Privacy, exactly one of the two: ``alpha`` in (0, 1) or ``epsilon`` > 0.
    loss : str, callable or table
        ``"absolute"``, ``"squared"``, ``"zero_one"``, a callable ``l(i, r)`` or an
        (n+1)x(n+1) table, non-decreasing in |i - r| on every row.
    side_information : None, dict, or sequence of int
        The set S of possible true counts: ``None`` for all of 0..n, an inclusive
        range ``{"lower": a, "upper": b}``, or a list of values in 0..n.

    References
    ----------
    M. Gupte and M. Sundararajan, "Universally optimal privacy mechanisms for
    minimax agents", PODS 2010, Sections 2.3 and 2.5.
    """

    n: int
    alpha: float | None = None
    epsilon: float | None = None
    loss: LossSpec = "absolute"
    side_information: Any = None
    privacy: PrivacyLevel = field(init=False, repr=False)
    support: tuple[int, ...] = field(init=False, repr=False)
    _table: np.ndarray | None = field(init=False, repr=False, default=None)

    kind = KIND

    def __post_init__(self) -> None:
        n = check_int(self.n, "n", KIND, low=1, high=MAX_COUNT)
        privacy = resolve_privacy(self.alpha, self.epsilon, KIND)
        # Named losses are monotone by construction and are built on demand (an
        # (n+1)^2 table is 200 MB at n = 5000); user losses are validated now.
        if isinstance(self.loss, str):
            check_choice(self.loss, "loss", KIND, NAMED_LOSSES)
            table = None
        else:
            check_memory(8.0 * 3 * (n + 1) ** 2, "n", KIND, n, what="a user loss table of (n+1)^2 entries")
            table = loss_table(self.loss, n, KIND)
            table.setflags(write=False)
        support = _side_information(self.side_information, n)
        for name, value in (
            ("n", n),
            ("privacy", privacy),
            ("alpha", privacy.alpha),
            ("epsilon", privacy.epsilon),
            ("_table", table),
            ("support", support),
        ):
            object.__setattr__(self, name, value)

    @cached_property
    def loss_matrix(self) -> np.ndarray:
        """The (n+1)x(n+1) table ``L[i, r] = l(i, r)`` (read-only)."""
        table = self._table if self._table is not None else loss_table(self.loss, self.n, KIND)
        table.setflags(write=False)
        return table

    def loss_rows(self, rows: np.ndarray) -> np.ndarray:
        """Rows ``L[rows, :]`` of the loss table, without forming the whole table for named losses."""
        if self._table is not None:
            return self._table[rows]
        return named_loss_rows(self.loss, np.asarray(rows), self.n)

    @property
    def loss_name(self) -> str:
        """The loss's name, or ``"table"`` for a user loss."""
        return self.loss if isinstance(self.loss, str) else "table"

    def to_dict(self) -> dict[str, Any]:
        """A TOML/JSON-ready description that :func:`dpopt.problem_files.problem_from_dict` reads back."""
        loss: Any = self.loss if isinstance(self.loss, str) else self.loss_matrix.tolist()
        data: dict[str, Any] = {"kind": KIND, "n": self.n, "alpha": self.alpha, "loss": loss}
        if len(self.support) != self.n + 1:
            data["side_information"] = list(self.support)
        return data

    def __repr__(self) -> str:
        s = "all" if len(self.support) == self.n + 1 else f"{len(self.support)} values"
        return f"CountQuery(n={self.n}, alpha={self.alpha:.6g}, loss={self.loss_name!r}, S={s})"


def _side_information(spec: Any, n: int) -> tuple[int, ...]:
    return tuple(range(n + 1)) if spec is None else check_index_set(spec, "side_information", KIND, n)

