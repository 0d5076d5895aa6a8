"""Metrics on a finite data universe: the d_X of d_X-privacy.

A :class:`DXMetric` is an N x N matrix that is symmetric, zero on the diagonal,
non-negative (``+inf`` allowed: "never confuse these two") and satisfies the
triangle inequality; each is checked at construction and a violating triple is
reported. ``closure=True`` repairs a matrix that is not a metric by its
shortest-path closure (the largest metric below it), which only tightens privacy.

Constructors follow Perrier et al.: :meth:`uniform` (plain epsilon-DP),
:meth:`euclidean` (epsilon per unit distance), :meth:`heterogeneous`
(``eps_i + eps_j`` for i != j), :meth:`scaled_dates` (``eps |u_i - u_j| / T``),
:meth:`attribute` (Eq. 3: per-attribute ``min(eps(a), eps(b))`` where values differ),
and :meth:`graph` (shortest-path metric of a weighted graph).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from scipy.sparse import coo_array
from scipy.sparse.csgraph import csgraph_from_dense, shortest_path

from dpopt.limits import MAX_MAGNITUDE, MAX_UNIVERSE
from dpopt.privacy import not_implied
from dpopt.validation import check_array, check_int, check_real, fail, read_text_file

__all__ = ["DXMetric", "check_metric", "check_workload", "first_triangle_violation", "shortest_path_closure", "violation_by_passes"]

OWNER = "dx metric"
#: Relative slack of the triangle-inequality check (floating-point sums).
TRIANGLE_TOLERANCE = 1e-12


def first_triangle_violation(d: np.ndarray) -> tuple[int, int, int] | None:
    """(i, j, k) with ``d[i, j] > d[i, k] + d[k, j]`` (beyond :data:`TRIANGLE_TOLERANCE`), or None.

    O(N^3) either way. A metric passes on one Floyd-Warshall closure c in compiled code (3.3
    times faster than N numpy passes: 2.0 s against 6.5 s at N = 1500, ``benchmarks/dx.py
    --triangle``; a violation witnessed by the last point alone costs 1.3 times the passes,
    which run after the screen): ``c[i, j] <= fl(d[i, k]
    + d[k, j])`` for every k, since rounded addition is monotone, so ``d <= c (1 + tol)``
    everywhere implies the pass below finds nothing. Only where the closure flags a pair (a
    chain of several legs may do that without any one triangle failing) do the passes decide,
    so the answer is the passes' own. The first :data:`EARLY_PASSES` passes run before the
    screen: a gross violation has witnesses everywhere and is named in milliseconds (at
    N = 1500 the screen alone took 2 s where the passes stopped at k = 1 in 0.013 s).
    """
    early = violation_by_passes(d, stop=EARLY_PASSES)
    if early is not None or len(d) <= EARLY_PASSES:
        return early
    if _closure_passes(d):
        return None
    return violation_by_passes(d, start=EARLY_PASSES)


#: Middle points k tried one by one before the closure screen of :func:`first_triangle_violation`.
EARLY_PASSES = 8


def violation_by_passes(d: np.ndarray, start: int = 0, stop: int | None = None) -> tuple[int, int, int] | None:
    """:func:`first_triangle_violation` by vectorised passes, one per middle point k in
    ``start .. stop - 1`` (default: all; the route that decides, and the baseline that
    ``benchmarks/dx.py --triangle`` times the closure screen against)."""
    for k in range(start, d.shape[0] if stop is None else min(stop, d.shape[0])):
        through = d[:, k][:, None] + d[k, :][None, :]
        with np.errstate(invalid="ignore"):
            bad = d > through * (1 + TRIANGLE_TOLERANCE) + 1e-300
        if bad.any():
            i, j = np.argwhere(bad)[0]
            return int(i), int(j), int(k)
    return None


def _closure_passes(d: np.ndarray) -> bool:
    """Whether ``d <= c (1 + tol)`` for c = :func:`shortest_path_closure` of d."""
    with np.errstate(invalid="ignore"):
        return bool((d <= shortest_path_closure(d) * (1 + TRIANGLE_TOLERANCE) + 1e-300).all())


@dataclass(frozen=True, eq=False)
class DXMetric:
    """A validated metric matrix on a universe of N elements.

    Parameters
    ----------
    matrix : array of shape (N, N)
    closure : bool
        Replace the matrix by its shortest-path closure instead of rejecting a
        triangle-inequality violation.
    labels : sequence, optional
        Names of the N elements.
    proven : bool
        The matrix comes from a formula that is a metric (Euclidean distances, the uniform,
        heterogeneous, dates and smooth metrics, graph distances): the O(N^3) triangle check
        is skipped (at N = 3000 it takes 22 s; 90 s before its closure screen). Nothing private rests on it: every
        certificate measures every pair.
    line : array of shape (N,), optional
        Positions on a line whose distances (times a constant) the matrix holds
        (:meth:`scaled_dates`): then :attr:`essential_pairs` is read off the sorted
        positions instead of an O(N^3) search.
    """

    matrix: np.ndarray
    closure: bool = False
    labels: tuple[Any, ...] | None = None
    proven: bool = field(default=False, repr=False)
    line: np.ndarray | None = field(default=None, repr=False)
    size: int = field(init=False)

    def __post_init__(self) -> None:
        d = check_array(self.matrix, "matrix", OWNER, ndim=2, allow_inf=True, low=0.0, max_size=MAX_UNIVERSE**2)
        if d.shape[0] != d.shape[1] or d.shape[0] < 2:
            raise fail("matrix", OWNER, "a square N x N matrix with N >= 2", d)
        if not np.array_equal(d, d.T):
            i, j = np.argwhere(d != d.T)[0]
            raise fail("matrix", OWNER, f"symmetric (d[{i},{j}] = {d[i, j]:g} but d[{j},{i}] = {d[j, i]:g})", d)
        if np.any(np.diag(d) != 0):
            raise fail("matrix", OWNER, "zero on the diagonal", np.diag(d))
        if self.closure:
            d = shortest_path_closure(d)
        elif not self.proven:
            triple = first_triangle_violation(d)
            if triple is not None:
                i, j, k = triple
                raise fail(
                    "matrix", OWNER,
                    f"a metric (triangle inequality fails: d[{i},{j}] = {d[i, j]:g} > d[{i},{k}] + d[{k},{j}] = {d[i, k] + d[k, j]:g}; pass closure=True to repair)",
                    d,
                )
        d.setflags(write=False)
        object.__setattr__(self, "matrix", d)
        object.__setattr__(self, "size", d.shape[0])
        if self.labels is not None:
            labels = tuple(self.labels)
            if len(labels) != d.shape[0]:
                raise fail("labels", OWNER, f"{d.shape[0]} labels", len(labels))
            object.__setattr__(self, "labels", labels)

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Index arrays (i, j), i < j, of every pair with a finite distance (read-only, computed once)."""
        return self._finite_pairs

    @cached_property
    def _finite_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        i, j = np.triu_indices(self.size, 1)
        keep = np.isfinite(self.matrix[i, j])
        i, j = i[keep], j[keep]
        i.setflags(write=False)
        j.setflags(write=False)
        return i, j

    @cached_property
    def essential_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Index arrays (i < j) of the finite pairs no third element implies (computed once, O(N^3);
        on a :attr:`line`, from the sorted positions): see :func:`dpopt.dx.scales.essential_pairs`."""
        i, j = _line_pairs(self.line) if self.line is not None else np.nonzero(np.triu(not_implied(self.matrix, slack=1e-12), 1))
        i.setflags(write=False)
        j.setflags(write=False)
        return i, j

    @cached_property
    def min_distance(self) -> float:
        """The smallest distance between two distinct elements (plain DP's epsilon for this universe)."""
        i, j = np.triu_indices(self.size, 1)
        return float(self.matrix[i, j].min())

    # -- constructors ---------------------------------------------------------------
    @classmethod
    def uniform(cls, size: int, epsilon: float) -> DXMetric:
        """``epsilon [i != j]``: plain epsilon-DP (any two elements are neighbours)."""
        eps = check_real(epsilon, "epsilon", OWNER, low=1.0 / MAX_MAGNITUDE, high=MAX_MAGNITUDE)
        return cls(eps * (1 - np.eye(_universe_size(size))), proven=True)

    @classmethod
    def euclidean(cls, coordinates: Any, epsilon: float = 1.0) -> DXMetric:
        """``epsilon ||x_i - x_j||_2`` for points given as rows of ``coordinates``."""
        eps = check_real(epsilon, "epsilon", OWNER, low=1.0 / MAX_MAGNITUDE, high=MAX_MAGNITUDE)
        return cls(_finite(eps * _euclidean_distances(coordinates), "coordinates"), proven=True)

    @classmethod
    def heterogeneous(cls, epsilons: Sequence[float]) -> DXMetric:
        """``(eps_i + eps_j) [i != j]``: a per-element budget."""
        e = check_array(epsilons, "epsilons", OWNER, ndim=1, low=0.0, max_abs=MAX_MAGNITUDE)
        _universe_size(e.size, "epsilons")
        if (e <= 0).any():
            raise fail("epsilons", OWNER, "a list of floats > 0", epsilons)
        return cls(_finite((e[:, None] + e[None, :]) * (1 - np.eye(e.size)), "epsilons"), proven=True)

    @classmethod
    def scaled_dates(cls, dates: Sequence[float], epsilon: float, period: float) -> DXMetric:
        """``epsilon |u_i - u_j| / T``: dates (or any scalar) scaled by a period T."""
        u = check_array(dates, "values", OWNER, ndim=1, max_abs=MAX_MAGNITUDE)
        _universe_size(u.size, "values")
        eps = check_real(epsilon, "epsilon", OWNER, low=1.0 / MAX_MAGNITUDE, high=MAX_MAGNITUDE)
        t = check_real(period, "period", OWNER, low=1.0 / MAX_MAGNITUDE)
        return cls(_finite(eps * np.abs(u[:, None] - u[None, :]) / t, "values"), proven=True, line=u)

    @classmethod
    def attribute(cls, records: Sequence[Sequence[Any]], budgets: Mapping[Any, float], *, form: str = "min") -> DXMetric:
        """Eq. (3): ``sum_k min(eps(X_i^k), eps(X_j^k)) [X_i^k != X_j^k]`` (``form="sum"``: eps(a) + eps(b)).

        ``records`` lists each element's attribute values; ``budgets`` maps a value
        to its budget (values absent from it are rejected).
        """
        allowed = "a non-empty list of equally long lists of attribute values (strings or numbers)"
        records = _plain(records)
        if isinstance(records, (str, bytes)) or not isinstance(records, Sequence):
            raise fail("records", OWNER, allowed, records)
        if not all(isinstance(_plain(r), Sequence) and not isinstance(r, (str, bytes)) for r in records):
            raise fail("records", OWNER, allowed, records)
        rows = [tuple(_plain(v) for v in _plain(r)) for r in records]
        if not rows or len({len(r) for r in rows}) != 1 or not all(isinstance(v, (str, int, float)) for r in rows for v in r):
            raise fail("records", OWNER, allowed, records)
        if not isinstance(budgets, Mapping):
            raise fail("budgets", OWNER, "a table mapping each attribute value to its budget", budgets)
        missing = sorted({v for r in rows for v in r if v not in budgets}, key=str)
        if missing:
            raise fail("budgets", OWNER, "a budget for every attribute value", f"none for {missing[0]!r}")
        if form not in ("min", "sum"):
            raise fail("form", OWNER, "'min' or 'sum'", form)
        _universe_size(len(rows), "records")
        eps = check_array([[budgets[v] for v in r] for r in rows], "budgets", OWNER, ndim=2, low=0.0, max_abs=MAX_MAGNITUDE)
        values = np.array([[str(v) for v in r] for r in rows])
        differ = values[:, None, :] != values[None, :, :]
        if form == "min":
            weight = np.minimum(eps[:, None, :], eps[None, :, :])
        else:
            weight = eps[:, None, :] + eps[None, :, :]
        return cls(np.sum(np.where(differ, weight, 0.0), axis=-1), labels=tuple("".join(map(str, r)) for r in rows))

    @classmethod
    def blowfish(cls, coordinates: Any, epsilon: float, threshold: float) -> DXMetric:
        """``d^Blow`` of Section 4.4: epsilon within Euclidean distance T, +inf beyond, closed.

        The printed definition (inf beyond T) breaks the triangle inequality; its
        shortest-path closure (epsilon times the number of T-hops) is the metric the
        d_X Laplace constraints actually enforce, since ``||Q'_i - Q'_j||_1`` is itself
        a pseudo-metric: constraints on the T-close pairs imply the closure's bound on
        every other pair. Pairs in different T-components stay at +inf.
        """
        euclid = _euclidean_distances(coordinates)
        eps = check_real(epsilon, "epsilon", OWNER, low=1.0 / MAX_MAGNITUDE, high=MAX_MAGNITUDE)
        t = check_real(threshold, "threshold", OWNER, low=1.0 / MAX_MAGNITUDE)
        d = np.where(euclid <= t, eps, np.inf)
        np.fill_diagonal(d, 0.0)
        return cls(d, closure=True)

    @classmethod
    def smooth(cls, coordinates: Any, epsilon: float, threshold: float) -> DXMetric:
        """``d^Smooth`` of Section 4.4: ``epsilon max(1, d_Euc / T)`` for i != j (a metric as is)."""
        euclid = _euclidean_distances(coordinates)
        eps = check_real(epsilon, "epsilon", OWNER, low=1.0 / MAX_MAGNITUDE, high=MAX_MAGNITUDE)
        t = check_real(threshold, "threshold", OWNER, low=1.0 / MAX_MAGNITUDE)
        return cls(eps * np.maximum(1.0, euclid / t) * (1 - np.eye(euclid.shape[0])), proven=True)

    @classmethod
    def from_csv(cls, path: str, *, closure: bool = False) -> DXMetric:
        """An N x N matrix from a headerless CSV file (``inf`` allowed)."""
        import io

        text = read_text_file(path, "metric.path", OWNER, max_bytes=64 << 20, what="a CSV metric")
        try:
            d = np.loadtxt(io.StringIO(text), delimiter=",", ndmin=2)
        except ValueError:  # the parser's message quotes the file's content: never echoed
            raise fail("metric.path", OWNER, "a CSV file of an N x N matrix of numbers (inf allowed)", str(path)) from None
        return cls(d, closure=closure)

    @classmethod
    def graph(cls, size: int, edges: Sequence[tuple[int, int, float]]) -> DXMetric:
        """Shortest-path metric of an undirected graph with non-negative edge weights (inf if unreachable)."""
        n = _universe_size(size)
        e = check_array(edges, "edges", OWNER, ndim=2, allow_inf=True, low=0.0, max_abs=MAX_MAGNITUDE)
        if e.shape[1:] != (3,) or not np.isfinite(e[:, :2]).all() or e[:, :2].max() >= n or np.any(e[:, :2] != np.round(e[:, :2])):
            raise fail("edges", OWNER, f"(i, j, weight) rows with 0 <= i, j < {n} and weight >= 0", edges)
        g = coo_array((e[:, 2], (e[:, 0].astype(int), e[:, 1].astype(int))), shape=(n, n)).tocsr()
        d = shortest_path(g, directed=False)
        return cls((d + d.T) / 2, proven=True)


def _line_pairs(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The essential pairs (i < j) of points on a line: equal points, and points at consecutive
    distinct positions. A pair with a point strictly between is implied through it (both parts
    positive and shorter); equal points (distance 0) imply nothing, nor are they implied."""
    order = np.argsort(u, kind="stable")
    distinct, group = np.unique(u[order], return_inverse=True)
    starts = np.searchsorted(group, np.arange(distinct.size))
    sizes = np.diff(np.append(starts, u.size))
    pairs = []
    for k in range(distinct.size):
        members = order[starts[k]:starts[k] + sizes[k]]
        if members.size > 1:  # ties: every pair at distance 0
            a, b = np.triu_indices(members.size, 1)
            pairs.append(np.stack([members[a], members[b]]))
        if k + 1 < distinct.size:  # every member against every member of the next position
            after = order[starts[k + 1]:starts[k + 1] + sizes[k + 1]]
            pairs.append(np.stack([np.repeat(members, after.size), np.tile(after, members.size)]))
    both = np.concatenate(pairs, axis=1) if pairs else np.zeros((2, 0), dtype=np.intp)
    i, j = np.minimum(both[0], both[1]), np.maximum(both[0], both[1])
    keep = np.lexsort((j, i))
    return i[keep], j[keep]


def _plain(value: Any) -> Any:
    """A numpy array or scalar as the Python list or value it holds (records given from numpy)."""
    return value.tolist() if isinstance(value, (np.ndarray, np.generic)) else value


def _finite(d: np.ndarray, parameter: str) -> np.ndarray:
    """A metric computed from finite inputs must be finite: an overflow to +inf would mean
    "never confuse these two" and silently drop their privacy constraint."""
    if not np.isfinite(d).all():
        raise fail(parameter, OWNER, "values whose distances (times epsilon) stay finite doubles", "an overflow to inf")
    return d


def _euclidean_distances(coordinates: Any) -> np.ndarray:
    """Validated points (rows) -> their exactly symmetric Euclidean distance matrix."""
    x = check_array(coordinates, "coordinates", OWNER, ndim=(1, 2), max_abs=MAX_MAGNITUDE)
    if x.ndim == 1:
        x = x[:, None]
    _universe_size(x.shape[0], "coordinates")
    diff = x[:, None, :] - x[None, :, :]
    d = np.sqrt(np.sum(diff * diff, axis=-1))
    return _finite((d + d.T) / 2, "coordinates")  # exact symmetry despite rounding


def _universe_size(size: Any, parameter: str = "size") -> int:
    """N, refused above :data:`dpopt.limits.MAX_UNIVERSE` (N x N matrices are built)."""
    return check_int(size, parameter, OWNER, low=2, high=MAX_UNIVERSE)


def shortest_path_closure(d: np.ndarray) -> np.ndarray:
    """The largest metric below a symmetric ``d`` (+inf: no path): shortest paths, zeros as edges.

    scipy's csgraph reads a dense matrix's zeros as missing edges; ``closure=True`` used it that
    way until 2026-11-29, so a distance of 0 between two points came back as the length of a
    path around them, and paths through it were ignored: [[0, 0, 5], [0, 0, 1], [5, 1, 0]] became
    [[0, 6, 5], ...], weakening the privacy the user asked of that pair from "identical" to
    e^(6 eps). Here +inf is the missing edge and a zero is an edge of length 0. Each entry is an
    edge, so the closure is never above ``d``.
    """
    return shortest_path(csgraph_from_dense(d, null_value=np.inf), method="FW", directed=False)


def check_metric(metric: Any, owner: str) -> "DXMetric":
    """``metric`` if it is a :class:`DXMetric`, else refused naming ``metric`` (a raw
    AttributeError, "'list' object has no attribute 'size'", until 2026-11-29)."""
    if not isinstance(metric, DXMetric):
        raise fail("metric", owner, "a DXMetric (dpopt.dx.metric.DXMetric: a matrix, points or a graph)", type(metric).__name__)
    return metric


def check_workload(query: Any, metric: Any, owner: str, parameter: str = "query") -> np.ndarray:
    """A finite K x N table (one row may be given as a list) for the metric's N elements, or refused naming ``parameter``."""
    size = check_metric(metric, owner).size
    q = np.atleast_2d(check_array(query, parameter, owner, ndim=(1, 2)))
    if q.shape[1] != size or q.shape[0] == 0:
        raise fail(parameter, owner, f"K rows of N = {size} finite numbers", f"shape {q.shape}")
    return q
