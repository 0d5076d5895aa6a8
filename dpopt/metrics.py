"""Privacy and utility metrics of mechanisms, and the monotonicity checker.

Liu, Wu & Zhou, "Privacy-preserving monotonicity of differential privacy mechanisms":

* expected estimation error, Eq. (1): ``EEE = sum_s' P(s') |s' - s|`` per true value s;
* entropy of the output, Eq. (3), in bits; normalised entropy NE, Eq. (4), and the
  utility metric ``1 - NE``;
* modulus of the characteristic function ``|phi(t)|``, Eq. (2);
* privacy-preserving monotonicity, Definition 8: a privacy metric must not increase
  and a utility metric must not decrease as epsilon grows.
  :func:`check_monotonicity` evaluates a metric on a grid of epsilon and reports
  where monotonicity fails; :func:`monotonicity_table` does it for several metrics.

Beside them, for any mechanism matrix: worst-case and prior-averaged expected loss
under any loss table, and the actual privacy loss (the certificate's measurement).
Everything is vectorised over rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from dpopt.certificates import certify
from dpopt.lazy_modules import pandas as pd
from dpopt.validation import DPOptError, check_array, check_choice, check_real, fail

__all__ = [
    "expected_estimation_error",
    "entropy",
    "normalized_entropy",
    "one_minus_normalized_entropy",
    "output_distribution",
    "characteristic_modulus",
    "expected_loss",
    "worst_case_loss",
    "average_loss",
    "privacy_loss",
    "MonotonicityReport",
    "check_monotonicity",
    "monotonicity_table",
]

OWNER = "metrics"
#: How far a row of a mechanism (or a distribution) may sum from 1: a solver's or a closed
#: form's round-off, not a different distribution.
SUM_TOLERANCE = 1e-6


def _matrix(matrix: Any, parameter: str = "matrix") -> np.ndarray:
    """A mechanism matrix: finite, non-negative, each row a distribution (within :data:`SUM_TOLERANCE`)."""
    x = check_array(matrix, parameter, OWNER, ndim=2, low=0.0)
    if x.size == 0 or np.any(np.abs(x.sum(axis=1) - 1.0) > SUM_TOLERANCE):
        raise fail(parameter, OWNER, "a mechanism matrix (rows: inputs, columns: outputs), each row non-negative and summing to 1", x)
    return x


def _distribution(probabilities: Any, parameter: str = "probabilities") -> np.ndarray:
    """Probabilities along the last axis: finite, non-negative, at least one outcome, each summing to 1."""
    p = check_array(probabilities, parameter, OWNER, low=0.0)
    if p.ndim == 0 or p.shape[-1] == 0 or np.any(np.abs(p.sum(axis=-1) - 1.0) > SUM_TOLERANCE):
        raise fail(parameter, OWNER, "probabilities along the last axis, non-negative and summing to 1", p)
    return p


def _labels(values: Any, size: int, parameter: str) -> np.ndarray:
    v = np.arange(size, dtype=float) if values is None else check_array(values, parameter, OWNER, ndim=1)
    if v.shape != (size,):
        raise fail(parameter, OWNER, f"{size} numbers", v)
    return v


def expected_estimation_error(matrix: Any, inputs: Any = None, outputs: Any = None) -> np.ndarray:
    """Eq. (1) per true value: ``sum_r x[i, r] |output_r - input_i|``.

    ``inputs``/``outputs`` are the numeric labels of rows/columns (default 0, 1, ...).
    """
    x = _matrix(matrix)
    s = _labels(inputs, x.shape[0], "inputs")
    r = _labels(outputs, x.shape[1], "outputs")
    return np.sum(x * np.abs(r[None, :] - s[:, None]), axis=1)


def entropy(probabilities: Any, *, base: float = 2.0) -> np.ndarray:
    """Eq. (3) along the last axis, with ``0 log 0 = 0`` (bits by default)."""
    p = _distribution(probabilities)
    base = check_real(base, "base", OWNER, low=0.0, low_open=True)
    if base == 1.0:
        raise fail("base", OWNER, "a logarithm's base: a number > 0 other than 1", base)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(p), 0.0)
    return terms.sum(axis=-1) / np.log(base)


def normalized_entropy(probabilities: Any) -> np.ndarray:
    """Eq. (4): entropy divided by ``log2(number of outcomes)``, in [0, 1]."""
    p = _distribution(probabilities)
    if p.shape[-1] < 2:
        raise fail("probabilities", OWNER, "a distribution over at least 2 outcomes", p)
    return entropy(p) / np.log2(p.shape[-1])


def one_minus_normalized_entropy(probabilities: Any) -> np.ndarray:
    """The utility metric ``1 - NE`` of Liu-Wu-Zhou Section 3.3."""
    return 1.0 - normalized_entropy(probabilities)


def output_distribution(matrix: Any, prior: Any) -> np.ndarray:
    """Distribution of the release when the input follows ``prior``: ``prior @ matrix``."""
    x = _matrix(matrix)
    return _prior(prior, x.shape[0]) @ x


def _prior(prior: Any, size: int) -> np.ndarray:
    pi = check_array(prior, "prior", OWNER, ndim=1, low=0.0)
    if pi.shape != (size,) or abs(pi.sum() - 1) > 1e-9:
        raise fail("prior", OWNER, f"a probability vector of length {size}", pi)
    return pi


def characteristic_modulus(values: Any, probabilities: Any, t: Any) -> np.ndarray:
    """``|sum_k p_k exp(i t v_k)|`` of a discrete distribution, for each t (Eq. 2)."""
    v = check_array(values, "values", OWNER, ndim=1)
    p = _distribution(probabilities)
    if p.shape != v.shape:
        raise fail("probabilities", OWNER, f"one probability per value ({v.size})", p)
    ts = np.atleast_1d(check_array(t, "t", OWNER))
    phase = ts[:, None] * v[None, :]
    out = np.hypot(np.cos(phase) @ p, np.sin(phase) @ p)
    return out.reshape(np.shape(t))


def expected_loss(matrix: Any, loss: Any) -> np.ndarray:
    """Expected loss per input row: ``sum_r x[i, r] loss[i, r]``."""
    x = _matrix(matrix)
    table = check_array(loss, "loss", OWNER, ndim=2)
    if table.shape != x.shape:
        raise fail("loss", OWNER, f"a table of the matrix's shape {x.shape}", table)
    return np.sum(x * table, axis=1)


def worst_case_loss(matrix: Any, loss: Any, rows: Sequence[int] | None = None) -> float:
    """The minimax objective: largest expected loss over ``rows`` (default all)."""
    per_row = expected_loss(matrix, loss)
    if rows is None:
        return float(per_row.max())
    chosen = check_array(rows, "rows", OWNER, ndim=1, integer=True, low=0.0)
    if chosen.size == 0 or chosen.max() >= per_row.size:
        raise fail("rows", OWNER, f"a non-empty list of row indices in [0, {per_row.size - 1}]", rows)
    return float(per_row[chosen.astype(int)].max())


def average_loss(matrix: Any, loss: Any, prior: Any) -> float:
    """Bayesian objective: expected loss averaged over ``prior``."""
    per_row = expected_loss(matrix, loss)
    return float(_prior(prior, per_row.size) @ per_row)


def privacy_loss(matrix: Any, pairs: Any = None) -> float:
    """Actual privacy loss of a matrix: the certificate's largest ``|ln x[a, r] / x[b, r]|``.

    ``pairs`` are neighbouring rows (default: adjacent rows, as for counts).
    """
    return certify(_matrix(matrix), 0.0, pairs=pairs).max_privacy_loss


@dataclass(frozen=True)
class MonotonicityReport:
    """Verdict of :func:`check_monotonicity`.

    Attributes
    ----------
    monotone : bool
    direction : str
        ``"decreasing"`` (privacy metrics) or ``"increasing"`` (utility metrics) in epsilon.
    values : pandas.Series
        The metric on the epsilon grid.
    violations : pandas.DataFrame
        Consecutive grid points where the metric moves the wrong way (beyond the tolerance).
    """

    monotone: bool
    direction: str
    values: pd.Series
    violations: pd.DataFrame


def check_monotonicity(
    metric: Callable[[float], float],
    epsilons: Sequence[float],
    *,
    direction: str = "decreasing",
    tolerance: float = 1e-12,
    atol: float = 1e-12,
) -> MonotonicityReport:
    """Definition 8 on a grid: is ``metric(epsilon)`` monotone in the stated direction?

    Parameters
    ----------
    metric : callable
        epsilon -> value (for example the entropy of a family's output at epsilon).
    epsilons : sequence of float
        Increasing grid of budgets.
    direction : {"decreasing", "increasing"}
        Privacy metrics (EEE, entropy) must not increase with epsilon; utility
        metrics (|phi(t)|, 1 - NE) must not decrease.
    tolerance, atol : float
        Relative and absolute slack for round-off (a flat metric such as
        ``1 - NE = 0`` of a uniform output wobbles at 1e-16).
    """
    owner = "check_monotonicity"
    if not callable(metric):
        raise fail("metric", owner, "a function of epsilon returning a number", metric)
    check_choice(direction, "direction", owner, ("decreasing", "increasing"))
    grid = check_array(epsilons, "epsilons", owner, ndim=1, low=0.0)
    if grid.size < 2 or np.any(np.diff(grid) <= 0):
        raise fail("epsilons", owner, "an increasing grid of at least 2 budgets", grid)
    tolerance = check_real(tolerance, "tolerance", owner, low=0.0)
    atol = check_real(atol, "atol", owner, low=0.0)
    values = np.array([_metric_value(metric, e, owner) for e in grid])
    step = np.diff(values)
    scale = tolerance * np.maximum(np.abs(values[:-1]), np.abs(values[1:])) + atol
    wrong = step > scale if direction == "decreasing" else step < -scale
    idx = np.flatnonzero(wrong)
    violations = pd.DataFrame(
        {"epsilon_from": grid[idx], "epsilon_to": grid[idx + 1], "value_from": values[idx], "value_to": values[idx + 1]}
    )
    return MonotonicityReport(
        monotone=not idx.size,
        direction=direction,
        values=pd.Series(values, index=pd.Index(grid, name="epsilon"), name="value"),
        violations=violations,
    )


def _metric_value(metric: Callable[[float], float], epsilon: float, owner: str) -> float:
    """``metric(epsilon)`` as a finite float: a NaN compares False both ways, so it made every
    grid "monotone" (until 2026-11-29)."""
    value = metric(float(epsilon))
    if isinstance(value, np.ndarray) and value.ndim == 0:  # characteristic_modulus at a scalar t
        value = value[()]
    try:
        return check_real(value, "metric", owner)
    except DPOptError:
        raise fail("metric", owner, f"a finite number at every epsilon (at epsilon = {float(epsilon):g})", value) from None


def monotonicity_table(
    metrics: Mapping[str, tuple[Callable[[float], float], str]],
    epsilons: Sequence[float],
    *,
    tolerance: float = 1e-12,
) -> pd.DataFrame:
    """One row per metric: direction required, verdict, number of violations and the first one.

    ``metrics`` maps a name to ``(metric, direction)``.
    """
    if not isinstance(metrics, Mapping) or not metrics:
        raise fail("metrics", "monotonicity_table", "a non-empty mapping of names to (metric, direction)", metrics)
    rows = []
    for name, entry in metrics.items():
        if not isinstance(entry, tuple) or len(entry) != 2:
            raise fail("metrics", "monotonicity_table", f"(metric, direction) for {name!r}", entry)
        metric, direction = entry
        report = check_monotonicity(metric, epsilons, direction=direction, tolerance=tolerance)
        first = report.violations.iloc[0] if len(report.violations) else None
        rows.append(
            {
                "metric": name,
                "direction": direction,
                "monotone": report.monotone,
                "violations": len(report.violations),
                "first_violation_at": None if first is None else float(first["epsilon_from"]),
            }
        )
    return pd.DataFrame(rows).set_index("metric")
