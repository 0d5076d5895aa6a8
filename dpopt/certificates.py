"""Privacy certificates for mechanism matrices, and the repair of near-feasible ones.

A certificate states the measured privacy of a matrix: the largest
``|ln(x[a, r] / x[b, r])|`` over neighbouring inputs (a, b) and outputs r, with
``0/0`` counted as no loss and a zero beside a non-zero as infinite loss; the target
epsilon; and the verdict. Every mechanism that leaves dpopt carries one.

Solvers return matrices that are feasible only to a tolerance (HiGHS's default
1e-7 lets the GS LP break privacy by ~1e-8). :func:`repair` turns such a matrix into
one that meets the target: clip negatives; for adjacent-row neighbours (count
queries) raise each column to its smallest log-Lipschitz majorant
``max_j alpha^|i-j| x[j, r]``, which removes every absolute violation while moving
entries only by the violations themselves; renormalise rows; and finally mix with the
uniform mechanism (every row equal, so it has privacy loss 0 and strict slack
``(1 - alpha) / m`` in every constraint) with the smallest weight that restores what
the renormalisation left. The certificate records the weight used.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpopt.validation import check_array, check_real, fail

__all__ = ["Certificate", "certify", "repair", "adjacent_pairs", "log_lipschitz_majorant", "log_ratios", "log_tolerance",
           "LOG_TOLERANCE"]

#: Largest slack allowed on a measured privacy loss (an absolute cap on :func:`log_tolerance`).
LOG_TOLERANCE = 1e-12
#: The slack's floor: about nine units in the last place of a ratio near 1, which float entries
#: computed in a few operations carry whatever epsilon is (geometric noise from the float
#: ``exp(-epsilon)`` at epsilon = 1e-12 measures 1.00007e-12: 7e-17 above).
LOG_FLOOR = 1e-15
#: The slack's part relative to epsilon.
LOG_RELATIVE = 1e-9
#: Largest allowed deviation of a row sum from 1.
ROW_SUM_TOLERANCE = 1e-9


def log_tolerance(epsilon: float, log_magnitude: float = 0.0) -> float:
    """The slack a measured privacy loss may exceed ``epsilon`` by: ``min(1e-12, 1e-15 + 1e-9 epsilon)``,
    plus four ulps of ``log_magnitude`` for a loss measured as a difference of logarithms
    (entries kept in log space because they underflow; ``log_magnitude`` is the largest
    ``|ln x|`` involved), which cannot resolve the loss any closer.

    Until 2026-11-28 this was 1e-12 whatever epsilon: twice the loss passed at epsilon = 1e-12
    (and the measurement itself, a difference of logarithms, was off by 0.3% there). The
    floor is rounding, not privacy: losses are measured to a few ulps of themselves
    (:func:`log_ratios`), but entries stored as floats cannot hold a ratio near 1 closer than
    about 1e-16.
    """
    return min(LOG_TOLERANCE, LOG_FLOOR + LOG_RELATIVE * epsilon) + 4.0 * float(np.spacing(abs(log_magnitude)))


@dataclass(frozen=True)
class Certificate:
    """Measured privacy of one mechanism matrix.

    Attributes
    ----------
    max_privacy_loss : float
        Largest ``|ln(x[a, r] / x[b, r])|`` over neighbours (a, b); ``inf`` if some
        output has zero probability for one neighbour only.
    target : float
        The epsilon the mechanism must meet.
    ok : bool
        ``max_privacy_loss <= target + log_tolerance(target, log_magnitude)``, entries non-negative and
        row sums within ``ROW_SUM_TOLERANCE`` of 1.
    worst_pair : tuple of int
        (a, b, r) where the largest loss occurs.
    min_entry, max_row_sum_error : float
        Smallest entry and largest ``|sum_r x[i, r] - 1|``.
    repair : str
        ``"none"``, or how the matrix was repaired (``"clip+uniform_mix"``).
    mixing_weight : float
        Weight of the uniform mechanism in the repair (0 if none).
    method : str
        ``"measured"`` (checked on the matrix) or ``"by_construction"`` plus what
        it rests on (for example post-processing of the geometric mechanism).
    delta : float
        The delta of an (epsilon, delta) guarantee (0 for pure DP).
    tolerance : float
        How far ``max_privacy_loss`` may exceed ``target`` and still be ``ok``
        (:func:`log_tolerance`). Beside a tiny epsilon it dominates: at epsilon = 2e-16 it is
        1e-15, since float64 entries hold a ratio near 1 only to ~1.1e-16, so a certificate
        there guarantees ``max_privacy_loss``, not the target.
    """

    max_privacy_loss: float
    target: float
    ok: bool
    worst_pair: tuple[int, int, int]
    min_entry: float
    max_row_sum_error: float
    repair: str = "none"
    mixing_weight: float = 0.0
    method: str = "measured"
    delta: float = 0.0
    tolerance: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["worst_pair"] = list(self.worst_pair)
        for key in ("max_privacy_loss", "target", "min_entry", "max_row_sum_error", "mixing_weight", "tolerance"):
            value = data[key]
            data[key] = None if not np.isfinite(value) else float(value)
        return data

    @classmethod
    def measured(
        cls,
        loss: float,
        epsilon: float,
        worst_pair: tuple[int, int, int],
        min_entry: float,
        row_sum_error: float,
        *,
        log_magnitude: float = 0.0,
        **notes: Any,
    ) -> "Certificate":
        """The verdict for measured quantities: the one place ``ok`` is decided
        (``log_magnitude``: see :func:`log_tolerance`)."""
        tolerance = log_tolerance(epsilon, log_magnitude)
        ok = loss <= epsilon + tolerance and min_entry >= 0.0 and row_sum_error <= ROW_SUM_TOLERANCE
        return cls(
            max_privacy_loss=float(loss),
            target=float(epsilon),
            ok=bool(ok),
            worst_pair=worst_pair,
            min_entry=float(min_entry),
            max_row_sum_error=float(row_sum_error),
            tolerance=float(tolerance),
            **notes,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Certificate":
        values = dict(data)
        values["worst_pair"] = tuple(values["worst_pair"])
        if values["max_privacy_loss"] is None:
            values["max_privacy_loss"] = float("inf")
        return cls(**values)


def adjacent_pairs(rows: int) -> np.ndarray:
    """Neighbour pairs (i, i+1) of a count query with values 0..rows-1."""
    first = np.arange(rows - 1)
    return np.column_stack([first, first + 1])


def _pair_losses(matrix: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    return log_ratios(matrix[pairs[:, 0]], matrix[pairs[:, 1]])


def log_ratios(xa: np.ndarray, xb: np.ndarray) -> np.ndarray:
    """``|ln(xa / xb)|`` entrywise, with 0/0 -> 0 and a zero beside a non-zero -> inf.

    Accurate to a few units in the last place *of the loss*, however small: with
    ``hi = max``, ``lo = min``, ``ln(1 + (hi - lo) / lo)`` up to a ratio of 2 (``hi - lo`` is
    exact there), ``ln(hi / lo)`` beyond it, and ``ln hi - ln lo`` only where that quotient
    overflows. The difference of logarithms everywhere (until 2026-11-28) carries an error of
    an ulp of ``|ln x|``: 3e-15 for entries near 5e-13, which is 0.3% of epsilon = 1e-12 and
    made geometric noise there measure 1.0019e-12. Each branch is monotone in ``hi`` and in
    ``1 / lo`` and both give ``ln 2`` at a ratio of 2, so the loss is too: the largest loss
    against a set of entries is the loss against its largest or smallest one, exactly.
    """
    xa, xb = np.asarray(xa, dtype=float), np.asarray(xb, dtype=float)
    hi, lo = np.maximum(xa, xb), np.minimum(xa, xb)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = hi / lo
        loss = np.where(ratio <= 2.0, np.log1p((hi - lo) / lo), np.log(ratio))
        loss = np.where(np.isinf(ratio) & (lo > 0), np.log(hi) - np.log(lo), loss)
    loss = np.where(np.isnan(xa) | np.isnan(xb), np.nan, loss)
    both_zero = (xa == 0) & (xb == 0)
    one_zero = (xa == 0) ^ (xb == 0)
    loss = np.where(both_zero, 0.0, loss)
    return np.where(one_zero, np.inf, loss)


def certify(
    matrix: np.ndarray,
    epsilon: float,
    *,
    pairs: np.ndarray | None = None,
    repair_note: str = "none",
    mixing_weight: float = 0.0,
    method: str = "measured",
) -> Certificate:
    """Measure the privacy of ``matrix`` against ``epsilon``.

    Parameters
    ----------
    matrix : array_like
        Rows are inputs, columns outputs.
    epsilon : float
        Target privacy loss.
    pairs : array of shape (k, 2), optional
        Neighbouring rows; default: adjacent rows (count queries).

    repair_note, method : str
        Recorded in the certificate (how the matrix was repaired; how it was measured).
    mixing_weight : float
        Recorded: the weight of the uniform mechanism mixed in by :func:`repair`, in [0, 1].

    Raises
    ------
    InvalidParameterError
        A matrix that is not a non-empty 2-D array of numbers, an epsilon that is not a
        finite number >= 0, pairs that are not row indices (NaN entries are measured:
        they are never private; an empty list of pairs means no neighbours, which nothing
        can violate), a mixing weight outside [0, 1], or notes that are not strings.
    """
    x = _checked_matrix(matrix, "certify", allow_nan=True)  # NaN entries certify as not private
    epsilon = check_real(epsilon, "epsilon", "certify", low=0.0)
    nb = _checked_pairs(pairs, x.shape[0], "certify")
    mixing_weight = check_real(mixing_weight, "mixing_weight", "certify", low=0.0, high=1.0)
    for name, note in (("repair_note", repair_note), ("method", method)):  # written into every export's JSON
        if not isinstance(note, str):
            raise fail(name, "certify", "a string", note)
    min_entry = float(x.min())
    row_err = float(np.abs(x.sum(axis=1) - 1.0).max())
    if nb.size == 0:
        worst, loss = (0, 0, 0), 0.0
    else:
        losses = _pair_losses(np.clip(x, 0.0, None), nb)
        p, r = divmod(int(np.argmax(losses)), x.shape[1])
        loss = float(losses[p, r])
        worst = (int(nb[p, 0]), int(nb[p, 1]), r)
    return Certificate.measured(
        loss, epsilon, worst, min_entry, row_err, repair=repair_note, mixing_weight=mixing_weight, method=method
    )


def _checked_matrix(matrix: Any, owner: str, *, allow_nan: bool) -> np.ndarray:
    """``matrix`` as a non-empty 2-D float array (NaN and inf only where ``allow_nan``: measured, never private), or refused."""
    x = check_array(matrix, "matrix", owner, ndim=2, allow_nan=allow_nan, allow_inf=allow_nan)
    if 0 in x.shape:
        raise fail("matrix", owner, "a non-empty 2-D matrix of numbers", matrix)
    return x


def _checked_pairs(pairs: Any, rows: int, owner: str) -> np.ndarray:
    """Neighbouring row pairs as a (k, 2) int array of row indices (default: adjacent rows), or refused."""
    if pairs is None:
        return adjacent_pairs(rows)
    nb = check_array(pairs, "pairs", owner, ndim=(1, 2), integer=True, low=0.0)
    if nb.size == 0:  # no neighbours: nothing to measure
        return np.zeros((0, 2), dtype=int)
    if nb.ndim != 2:
        raise fail("pairs", owner, f"an array of shape (k, 2) of row indices in [0, {rows - 1}]", pairs)
    if nb.shape[1] != 2 or nb.max() >= rows:
        raise fail("pairs", owner, f"an array of shape (k, 2) of row indices in [0, {rows - 1}]", pairs)
    return nb.astype(int)


def _violation(x: np.ndarray, alpha: float, pairs: np.ndarray) -> float:
    xa, xb = x[pairs[:, 0]], x[pairs[:, 1]]
    return float(max((alpha * xa - xb).max(), (alpha * xb - xa).max()))


def log_lipschitz_majorant(matrix: np.ndarray, alpha: float) -> np.ndarray:
    """Smallest ``y >= x`` with ``alpha y[i, r] <= y[i+1, r]`` and ``alpha y[i+1, r] <= y[i, r]``.

    ``y[i, r] = max_j alpha^|i - j| x[j, r]``, computed by one forward and one
    backward sweep over rows (vectorised over columns): after the forward sweep
    ``y[i+1] >= alpha y[i]``; the backward sweep raises ``y[i]`` to at most
    ``alpha y[i+1]``, which keeps ``alpha y[i] <= alpha^2 y[i+1] <= y[i+1]``.
    """
    y = np.array(matrix, dtype=float)
    for i in range(1, y.shape[0]):
        np.maximum(y[i], alpha * y[i - 1], out=y[i])
    for i in range(y.shape[0] - 2, -1, -1):
        np.maximum(y[i], alpha * y[i + 1], out=y[i])
    return y


#: Rounds of "private majorant, then renormalise" :func:`repair` tries before mixing in the
#: uniform mechanism. On the GS LP's HiGHS solutions (n = 50..150, three losses) the
#: certificate passed after 2 to 5 rounds; until 2026-11-29 there was one round, then the mix,
#: whose weight times the uniform mechanism's loss (about n / 3) left the ``lp`` 4.7e-8 above
#: the optimum at n = 100 (``gap_above_tolerance``; absolute loss, epsilon = 1, optimum 0.85),
#: where the rounds leave 4.5e-10.
MAJORANT_ROUNDS = 20


def repair(
    matrix: np.ndarray, epsilon: float, *, pairs: np.ndarray | None = None
) -> tuple[np.ndarray, Certificate]:
    """Make a near-feasible matrix meet ``epsilon`` exactly, and certify the result.

    Clip negative entries to 0 and renormalise rows. For adjacent rows (``pairs`` omitted)
    then raise the matrix to its smallest private majorant and renormalise, up to
    :data:`MAJORANT_ROUNDS` times: each round's renormalisation moves ratios by the rows'
    differing gains (about the solver's tolerance), the next round removes most of that. If a
    constraint ``alpha * x[a, r] <= x[b, r]`` is still violated by ``v > 0``, mix with the
    uniform mechanism ``u = 1/m`` with weight ``lam = v / (v + (1 - alpha) u)``, which
    restores every constraint (each constraint is linear and u satisfies it with
    slack ``(1 - alpha) u``). The weight is enlarged by a small factor until the
    floating-point certificate passes.

    Returns
    -------
    repaired : numpy.ndarray
    certificate : Certificate

    Raises
    ------
    InvalidParameterError
        As :func:`certify`, and also for NaN or infinite entries and rows without mass.
    """
    x = np.clip(_checked_matrix(matrix, "repair", allow_nan=False), 0.0, None)
    epsilon = check_real(epsilon, "epsilon", "repair", low=0.0)
    sums = x.sum(axis=1, keepdims=True)
    if np.any(sums <= 0) or not np.isfinite(sums).all():
        raise fail("matrix", "repair", "a matrix whose rows have positive, finite mass", matrix)
    x = x / sums
    nb = _checked_pairs(pairs, x.shape[0], "repair")
    alpha = float(np.exp(-epsilon))
    cert = certify(x, epsilon, pairs=nb, repair_note="clip")
    if cert.ok:
        return x, cert
    if pairs is None:
        for _ in range(MAJORANT_ROUNDS):
            x = log_lipschitz_majorant(x, alpha)
            x /= x.sum(axis=1, keepdims=True)
            cert = certify(x, epsilon, pairs=nb, repair_note="clip+majorant")
            if cert.ok:
                return x, cert
    v = _violation(x, alpha, nb) if nb.size else 0.0
    uniform = 1.0 / x.shape[1]
    lam = max(v, 1e-16) / (max(v, 1e-16) + (1 - alpha) * uniform)
    for _ in range(60):
        lam = min(1.0, lam * (1 + 1e-6) + 1e-15)
        mixed = (1 - lam) * x + lam * uniform
        note = ("clip+majorant" if pairs is None else "clip") + "+uniform_mix"
        cert = certify(mixed, epsilon, pairs=nb, repair_note=note, mixing_weight=lam)
        if cert.ok:
            return mixed, cert
        lam *= 2
    raise AssertionError("uniform mixing with weight 1 is always private")  # pragma: no cover
