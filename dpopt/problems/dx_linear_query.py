"""A d_X-private linear-query workload: n records over a universe of N elements, queries Q (K x N)."""

from __future__ import annotations

import math
import pickle
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpopt.dx.metric import DXMetric
from dpopt.limits import MAX_MAGNITUDE, MAX_RECORDS
from dpopt.validation import check_array, check_int, check_real, fail

__all__ = ["METRIC_TYPES", "DXLinearQuery", "metric_from_spec"]

KIND = "dx_linear_query"
#: SmallDB's failure probability beta where a problem with ``synthetic_size`` gives none.
SMALLDB_BETA = 0.05

#: metric type -> the fields its table takes
METRIC_TYPES: dict[str, tuple[str, ...]] = {
    "uniform": ("epsilon",),
    "euclidean": ("coordinates", "epsilon"),
    "attribute": ("records", "budgets", "form"),
    "heterogeneous": ("epsilons",),
    "dates": ("values", "epsilon", "period"),
    "blowfish": ("coordinates", "epsilon", "threshold"),
    "smooth": ("coordinates", "epsilon", "threshold"),
    "graph": ("edges",),
    "matrix": ("values", "closure"),
    "csv": ("path", "closure"),
}


#: Metrics built from recent specs: a sweep builds the same metric for every cell (e.g. 1000
#: random queries on the 841 US cities), and a DXMetric is immutable (read-only matrix).
_RECENT_METRICS: OrderedDict[bytes, DXMetric] = OrderedDict()
_RECENT_LIMIT = 8


def _spec_key(spec: Mapping[str, Any], size: int) -> bytes | None:
    """The spec's pickle (equal bytes mean equal values; fast on long coordinate lists), or None for a file."""
    if spec.get("type") == "csv":
        return None  # the file may change between two reads
    try:
        return pickle.dumps((dict(spec), size), protocol=5)
    except Exception:  # anything that cannot be pickled is simply not cached
        return None


def metric_from_spec(spec: Any, size: int) -> DXMetric:
    """Build a :class:`DXMetric` from a problem file's ``[metric]`` table (recent specs are reused)."""
    if isinstance(spec, DXMetric):
        return spec
    key = _spec_key(spec, size) if isinstance(spec, Mapping) else None
    if key is not None and key in _RECENT_METRICS:
        _RECENT_METRICS.move_to_end(key)
        return _RECENT_METRICS[key]
    metric = _build_metric(spec, size)
    if key is not None:
        _RECENT_METRICS[key] = metric
        while len(_RECENT_METRICS) > _RECENT_LIMIT:
            _RECENT_METRICS.popitem(last=False)
    return metric


def _build_metric(spec: Any, size: int) -> DXMetric:
    if not isinstance(spec, Mapping) or "type" not in spec:
        raise fail("metric", KIND, "a DXMetric or a table with 'type' (" + ", ".join(METRIC_TYPES) + ")", spec)
    kind = spec["type"]
    if not isinstance(kind, str) or kind not in METRIC_TYPES:
        raise fail("metric.type", KIND, "one of " + ", ".join(repr(k) for k in METRIC_TYPES), kind)
    unknown = sorted(set(spec) - {"type", *METRIC_TYPES[kind]})
    if unknown:
        raise fail(f"metric.{unknown[0]}", KIND, f"absent: a {kind} metric takes " + ", ".join(METRIC_TYPES[kind]), spec[unknown[0]])
    get = spec.get
    if kind == "uniform":
        return DXMetric.uniform(size, get("epsilon", 1.0))
    if kind == "euclidean":
        return DXMetric.euclidean(get("coordinates"), get("epsilon", 1.0))
    if kind == "attribute":
        return DXMetric.attribute(get("records"), get("budgets"), form=get("form", "min"))
    if kind == "heterogeneous":
        return DXMetric.heterogeneous(get("epsilons"))
    if kind == "dates":
        return DXMetric.scaled_dates(get("values"), get("epsilon", 1.0), get("period", 1.0))
    if kind in ("blowfish", "smooth"):
        build = DXMetric.blowfish if kind == "blowfish" else DXMetric.smooth
        return build(get("coordinates"), get("epsilon", 1.0), get("threshold"))
    if kind == "graph":
        return DXMetric.graph(size, get("edges"))
    closure = get("closure", False)
    if not isinstance(closure, bool):
        raise fail("metric.closure", KIND, "true or false", closure)
    if kind == "matrix":
        values = check_array(get("values"), "metric.values", KIND, ndim=2, allow_inf=True, low=0.0, max_abs=MAX_MAGNITUDE)
        return DXMetric(values, closure=closure)
    return DXMetric.from_csv(get("path"), closure=closure)


@dataclass(frozen=True, eq=False, kw_only=True)
class DXLinearQuery:
    """Choose noise scales c and a transformed workload Q' for d_X-private release.

    Parameters
    ----------
    n : int
        Number of records (the surrogate's bias term grows with n^2).
    query : sequence
        N numbers (one query) or K lists of N numbers.
    metric : DXMetric or dict
        d_X on the N elements (see :data:`METRIC_TYPES`).
    histogram : sequence of int, optional
        The records' counts per element (sum n), used by ``sample``.
    synthetic_size : int, optional
        SmallDB's m (Algorithm 1: synthetic databases of m records), which the
        ``smalldb_preprocessing`` route needs to release; every one of the
        ``C(N + m - 1, m)`` candidates is enumerated, so m is checked against
        :data:`dpopt.dx.smalldb.MAX_SMALLDB_CANDIDATES` when that route runs.
    beta : float, optional
        SmallDB's failure probability in Theorem 6's ``gamma`` (default 0.05); only with
        ``synthetic_size``, since no other route reads it (None without it).
    release_grid : float, optional
        g > 0: the Laplace routes release each ``c_k (Q'x)_k + Lap(c_k)`` rounded to the
        nearest multiple of g, drawn exactly
        (:meth:`dpopt.dx.mechanisms.DXLaplaceMechanism.grid_release`; rounding is
        post-processing). Without it they have only the floating-point sampler, for
        simulation studies.
    """

    n: int
    query: Any
    metric: Any
    histogram: Any = None
    synthetic_size: Any = None
    beta: Any = None
    release_grid: Any = None
    matrix: np.ndarray = field(init=False, repr=False)

    kind = KIND

    def __post_init__(self) -> None:
        n = check_int(self.n, "n", KIND, low=1, high=MAX_RECORDS)
        q = np.atleast_2d(check_array(self.query, "query", KIND, ndim=(1, 2), max_abs=MAX_MAGNITUDE))
        if q.shape[1] < 2 or q.shape[0] < 1:
            raise fail("query", KIND, "N >= 2 finite numbers, or K lists of them", self.query)
        metric = metric_from_spec(self.metric, q.shape[1])
        i, j = np.triu_indices(metric.size, 1)
        distances = metric.matrix[i, j]
        if not np.isfinite(distances).any():
            raise fail("metric", KIND, "a metric with a finite distance between some two elements (all +inf: nothing to protect)", "every distance +inf")
        if np.any((distances > 0) & (distances < 1.0 / MAX_MAGNITUDE)):
            raise fail("metric", KIND, f"distances of 0 or at least {1.0 / MAX_MAGNITUDE:g} between distinct elements "
                       "(smaller ones round alpha = exp(-d) to 1 and the scales to overflow)", float(distances[distances > 0].min()))
        if metric.size != q.shape[1]:
            raise fail("query", KIND, f"rows of N = {metric.size} numbers (the metric's size)", q.shape)
        if self.histogram is not None:
            h = check_array(self.histogram, "histogram", KIND, ndim=1, integer=True, low=0.0)
            if h.shape != (metric.size,) or h.sum() != n:
                raise fail("histogram", KIND, f"{metric.size} non-negative integer counts summing to n = {n}", self.histogram)
            object.__setattr__(self, "histogram", h.astype(int))
        if self.synthetic_size is not None:
            object.__setattr__(self, "synthetic_size", check_int(self.synthetic_size, "synthetic_size", KIND, low=1, high=MAX_RECORDS))
        if self.beta is not None and self.synthetic_size is None:
            raise fail("beta", KIND, "omitted unless synthetic_size is given (SmallDB's failure probability; no other route reads it)",
                       self.beta)
        if self.synthetic_size is not None:  # None stays None: dataclasses.replace passes it back
            beta = SMALLDB_BETA if self.beta is None else self.beta
            object.__setattr__(self, "beta", check_real(beta, "beta", KIND, low=0.0, high=1.0, low_open=True, high_open=True))
        if self.release_grid is not None:
            object.__setattr__(self, "release_grid", check_real(self.release_grid, "release_grid", KIND, low=1.0 / MAX_MAGNITUDE,
                                                                high=MAX_MAGNITUDE))
        q.setflags(write=False)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "matrix", q)
        object.__setattr__(self, "metric", metric)

    @property
    def queries(self) -> int:
        """K."""
        return self.matrix.shape[0]

    @property
    def epsilon(self) -> float:
        """The plain-DP budget the paper compares against: ``min_{i != j} d_X(i, j)``."""
        i, j = np.triu_indices(self.metric.size, 1)
        return float(self.metric.matrix[i, j].min())

    @property
    def alpha(self) -> float:
        return math.exp(-self.epsilon)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": KIND,
            "n": self.n,
            "query": self.matrix.tolist(),
            "metric": {"type": "matrix", "values": np.where(np.isinf(self.metric.matrix), 1e308, self.metric.matrix).tolist()},
        }
        if self.histogram is not None:
            data["histogram"] = self.histogram.tolist()
        if self.synthetic_size is not None:
            data["synthetic_size"] = self.synthetic_size
        if self.beta not in (None, SMALLDB_BETA):
            data["beta"] = self.beta
        if self.release_grid is not None:
            data["release_grid"] = self.release_grid
        return data

    def __repr__(self) -> str:
        return f"DXLinearQuery(n={self.n}, K={self.queries}, N={self.metric.size})"
