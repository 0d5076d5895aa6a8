"""Statistical queries under d_X-privacy: the d-way marginal of Perrier et al., Appendix C.

A dataset is n rows over d attributes, attribute i taking values in a finite set X_i; the
query is the d-way marginal ``q(x) = (1/n) sum_rows u`` (the mean of every attribute), and
the privacy budget adds over attributes, ``d_X(u, v) = sum_i d_i(u_i, v_i)``, with either

* ``budget = "discrete"``: ``d_i(u_i, v_i) = epsilon_i [u_i != v_i]`` (the paper's example), or
* ``budget = "distance"``: ``d_i(u_i, v_i) = epsilon_i |u_i - v_i|``, or
* ``budget = "matrix"``: ``d_i = epsilon_i D_i`` for given matrices ``D_i`` over each
  attribute's sorted values (symmetric, zero diagonal, positive elsewhere).

With the first two, problem (14)'s optimum over c > 0 is always the plain Laplace
calibration (every pair has the same ratio ``|u - v| / d_i(u, v)`` or one pair dominates),
so pre-processing gains only with a general ``D_i`` -- or by releasing nothing when
``n epsilon_i < 2`` (see ``limit_at_zero``).

Theorem 10 releases ``c (.) q(x') + Lap(c)`` after mapping every row u to u'; the methods
choose c and the map (:mod:`dpopt.methods.statistical_query`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpopt.limits import MAX_MAGNITUDE
from dpopt.validation import check_array, check_choice, check_int, check_real, fail

#: Smallest budget a pair of attribute values may get (epsilon_i times its distance), as for a
#: d_X metric (:class:`dpopt.problems.dx_linear_query.DXLinearQuery`): smaller ones round
#: exp(-d) to 1, and at 5e-324 the envelope's gap / budget overflowed.
MIN_PAIR_BUDGET = 1.0 / MAX_MAGNITUDE

__all__ = ["BUDGETS", "MAX_ATTRIBUTES", "MAX_ATTRIBUTE_VALUES", "MAX_ROWS", "StatisticalQuery"]

KIND = "statistical_query"
BUDGETS = ("discrete", "distance", "matrix")
#: Values per attribute (problem (14) compares every pair: quadratic in this).
MAX_ATTRIBUTE_VALUES = 2_000
#: Attributes of the marginal.
MAX_ATTRIBUTES = 1_000
#: Rows of a dataset given for sampling (n); larger n is fine without rows.
MAX_ROWS = 1_000_000


@dataclass(frozen=True, eq=False, kw_only=True)
class StatisticalQuery:
    """Choose scales c and a value map u -> u' for the d-way marginal (Appendix C, problems (13)-(14)).

    Parameters
    ----------
    n : int
        Rows per dataset (public; the marginal is a mean over them).
    values : sequence of sequences
        Attribute i's value set X_i: at least 2 distinct finite numbers each.
    epsilons : sequence of float
        The budget epsilon_i > 0 of each attribute.
    budget : {"discrete", "distance", "matrix"}
        How d_i depends on the values (module docstring).
    matrices : sequence of arrays, optional
        With ``budget = "matrix"``: one ``m_i x m_i`` matrix D_i per attribute, rows and
        columns in the order of the attribute's sorted values.
    rows : array (n, d), optional
        A dataset, each entry in its attribute's value set, released by ``sample``.
    release_grid : float, optional
        g > 0: each attribute's ``c_i mean(u'_i) + Lap(c_i)`` is released rounded to the
        nearest multiple of g, drawn exactly
        (:meth:`dpopt.dx.statistical.MarginalRelease.grid_release`; rounding is
        post-processing). Without it the release has only the floating-point sampler, for
        simulation studies.
    """

    n: int
    values: Any
    epsilons: Any
    budget: str = "discrete"
    matrices: Any = None
    rows: Any = None
    release_grid: Any = None
    attribute_values: tuple[np.ndarray, ...] = field(init=False, repr=False)

    kind = KIND

    def __post_init__(self) -> None:
        n = check_int(self.n, "n", KIND, low=1, high=10**12)
        budget = check_choice(self.budget, "budget", KIND, BUDGETS)
        if not isinstance(self.values, (list, tuple)) or not 1 <= len(self.values) <= MAX_ATTRIBUTES:
            raise fail("values", KIND, f"a list of 1 to {MAX_ATTRIBUTES} value lists (one per attribute)", self.values)
        attributes = []
        for i, column in enumerate(self.values):
            u = check_array(column, f"values[{i}]", KIND, ndim=1, max_abs=MAX_MAGNITUDE)
            if not 2 <= u.size <= MAX_ATTRIBUTE_VALUES or np.unique(u).size != u.size:
                raise fail(f"values[{i}]", KIND, f"2 to {MAX_ATTRIBUTE_VALUES} distinct numbers", column)
            u = np.sort(u)
            u.setflags(write=False)
            attributes.append(u)
        eps = check_array(self.epsilons, "epsilons", KIND, ndim=1, low=0.0, max_abs=MAX_MAGNITUDE)
        if eps.shape != (len(attributes),) or np.any(eps <= 0):
            raise fail("epsilons", KIND, f"{len(attributes)} budgets > 0 (one per attribute)", self.epsilons)
        eps.setflags(write=False)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "budget", budget)
        object.__setattr__(self, "attribute_values", tuple(attributes))
        object.__setattr__(self, "epsilons", eps)
        object.__setattr__(self, "matrices", self._check_matrices(budget))
        for i in range(len(attributes)):
            self._check_pair_budgets(i)
        if self.rows is not None:
            object.__setattr__(self, "rows", self.check_rows(self.rows))
        if self.release_grid is not None:
            object.__setattr__(self, "release_grid", check_real(self.release_grid, "release_grid", KIND, low=1.0 / MAX_MAGNITUDE,
                                                                high=MAX_MAGNITUDE))

    def _check_pair_budgets(self, attribute: int) -> None:
        """Refuse pair budgets below :data:`MIN_PAIR_BUDGET`: at epsilons = [5e-324, ...] (a valid
        float > 0) the envelope's gap / budget became inf and the solve an internal error."""
        d = self.distances(attribute)
        smallest = float(d[~np.eye(d.shape[0], dtype=bool)].min())
        if smallest < MIN_PAIR_BUDGET:
            blame_matrix = self.budget == "matrix" and self.epsilons[attribute] >= MIN_PAIR_BUDGET
            raise fail(f"matrices[{attribute}]" if blame_matrix else "epsilons", KIND,
                       f"pair budgets (epsilon x distance) of at least {MIN_PAIR_BUDGET:g}; attribute {attribute} has {smallest:g}",
                       self.matrices[attribute].tolist() if blame_matrix else self.epsilons.tolist())

    def _check_matrices(self, budget: str) -> tuple[np.ndarray, ...] | None:
        if budget != "matrix":
            if self.matrices is not None:
                raise fail("matrices", KIND, 'absent unless budget = "matrix"', "given")
            return None
        if not isinstance(self.matrices, (list, tuple)) or len(self.matrices) != len(self.attribute_values):
            raise fail("matrices", KIND, f"{len(self.attribute_values)} matrices (one per attribute)", self.matrices)
        checked = []
        for i, (given, u) in enumerate(zip(self.matrices, self.attribute_values)):
            d = check_array(given, f"matrices[{i}]", KIND, ndim=2, low=0.0, max_abs=MAX_MAGNITUDE)
            off = ~np.eye(u.size, dtype=bool)
            if d.shape != (u.size, u.size) or not np.array_equal(d, d.T) or np.any(np.diag(d) != 0) or np.any(d[off] <= 0):
                raise fail(f"matrices[{i}]", KIND, f"a symmetric {u.size} x {u.size} matrix, zero on the diagonal and positive elsewhere", d.shape)
            d.setflags(write=False)
            checked.append(d)
        return tuple(checked)

    @property
    def attributes(self) -> int:
        """d."""
        return len(self.attribute_values)

    @property
    def epsilon(self) -> float:
        """The smallest budget between two different rows: ``min_i min_{u != v} d_i(u, v)``."""
        return float(min(np.min(d[~np.eye(d.shape[0], dtype=bool)]) for d in (self.distances(i) for i in range(self.attributes))))

    @property
    def alpha(self) -> float:
        return float(np.exp(-self.epsilon))

    def distances(self, attribute: int) -> np.ndarray:
        """d_i on attribute i's values (sorted), an m_i x m_i matrix."""
        u = self.attribute_values[attribute]
        gap = np.abs(u[:, None] - u[None, :])
        if self.budget == "matrix":
            base = self.matrices[attribute]
        else:
            base = (gap > 0).astype(float) if self.budget == "discrete" else gap
        return self.epsilons[attribute] * base

    def check_rows(self, rows: Any) -> np.ndarray:
        """A dataset of n rows over the d attributes, every entry in its value set."""
        data = check_array(rows, "rows", KIND, ndim=2, max_abs=MAX_MAGNITUDE)
        if data.shape != (self.n, self.attributes) or self.n > MAX_ROWS:
            raise fail("rows", KIND, f"{self.n} rows of {self.attributes} attributes (n <= {MAX_ROWS:,})", data.shape)
        for i, u in enumerate(self.attribute_values):
            outside = ~np.isin(data[:, i], u)
            if outside.any():
                raise fail("rows", KIND, f"entries of column {i} in values[{i}]", float(data[np.argmax(outside), i]))
        return data

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": KIND, "n": self.n, "values": [u.tolist() for u in self.attribute_values],
                                "epsilons": self.epsilons.tolist(), "budget": self.budget}
        if self.matrices is not None:
            data["matrices"] = [d.tolist() for d in self.matrices]
        if self.rows is not None:
            data["rows"] = self.rows.tolist()
        if self.release_grid is not None:
            data["release_grid"] = self.release_grid
        return data

    def __repr__(self) -> str:
        return f"StatisticalQuery(n={self.n}, d={self.attributes}, budget={self.budget!r})"
