"""The exponential mechanism over a finite range, and its actual privacy cost.

For datasets x (rows of a utility table) and outputs r (columns), the mechanism
draws r with probability proportional to ``exp(epsilon u(x, r) / (2 Delta_u))``,
``Delta_u`` being the largest change of any utility between neighbouring datasets
(McSherry & Talwar; Liu Definition 6; Liu-Wu-Zhou Definition 6).

Liu's Lemma 7: the actual privacy cost (the largest log ratio of output
probabilities between neighbours) is always below epsilon, and exactly epsilon / 2
when the normaliser ``A(x) = sum_r exp(...)`` does not depend on x.
:meth:`ExponentialMechanism.actual_privacy_cost` measures it on the matrix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from dpopt.certificates import Certificate, certify
from dpopt.mechanisms.noise import check_epsilon, check_sensitivity
from dpopt.exact_sampling import exact_choice
from dpopt.sampling import check_count, resolve_rng
from dpopt.limits import MAX_MAGNITUDE
from dpopt.validation import check_array, check_int, fail

__all__ = ["ExponentialMechanism", "exponential_probabilities"]

OWNER = "exponential mechanism"


def exponential_probabilities(utility: Any, epsilon: float, sensitivity: float) -> np.ndarray:
    """Row-wise ``softmax(epsilon u / (2 Delta_u))`` (stable in log space)."""
    u = _utility_table(utility)
    epsilon, sensitivity = check_epsilon(epsilon, OWNER), check_sensitivity(sensitivity, OWNER)
    logits = epsilon * u / (2.0 * sensitivity)
    return np.exp(logits - special.logsumexp(logits, axis=1, keepdims=True))


def _utility_table(utility: Any) -> np.ndarray:
    """A finite utility table (one row: a single dataset) of at least two outputs, or refused naming ``utility``."""
    allowed = "a finite table of shape (datasets, outputs >= 2)"
    u = check_array(utility, "utility", OWNER, ndim=(1, 2), max_abs=MAX_MAGNITUDE)
    u = u[None, :] if u.ndim == 1 else u
    if u.shape[0] == 0 or u.shape[1] < 2:
        raise fail("utility", OWNER, allowed, utility)
    return u


@dataclass(frozen=True, kw_only=True)
class ExponentialMechanism:
    """The exponential mechanism for a utility table over datasets x outputs.

    Parameters
    ----------
    utility : array of shape (datasets, outputs)
        ``u(x, r)``; one row suffices to study a single dataset (Liu-Wu-Zhou Fig. 7).
    epsilon : float
    neighbours : array of shape (k, 2), optional
        Pairs of neighbouring datasets (row indices); default: consecutive rows.
    sensitivity : float, optional
        ``Delta_u``; default: measured over ``neighbours`` (1 for a single row).
    """

    utility: np.ndarray
    epsilon: float
    neighbours: np.ndarray | None = None
    sensitivity: float | None = None
    matrix: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        u = _utility_table(self.utility)
        eps = check_epsilon(self.epsilon, OWNER)
        pairs = self._pairs(u.shape[0])
        if self.sensitivity is None:
            measured = float(np.abs(u[pairs[:, 0]] - u[pairs[:, 1]]).max()) if len(pairs) else 1.0
            sens = measured if measured > 0 else 1.0
        else:
            sens = check_sensitivity(self.sensitivity, OWNER)
            if len(pairs) and np.abs(u[pairs[:, 0]] - u[pairs[:, 1]]).max() > sens * (1 + 1e-12):
                raise fail("sensitivity", OWNER, "at least the largest utility change between neighbours", sens)
        object.__setattr__(self, "utility", u)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "neighbours", pairs)
        object.__setattr__(self, "sensitivity", sens)
        object.__setattr__(self, "matrix", exponential_probabilities(u, eps, sens))

    def _pairs(self, rows: int) -> np.ndarray:
        if self.neighbours is None:
            first = np.arange(rows - 1)
            return np.column_stack([first, first + 1]).astype(int)
        pairs = np.asarray(self.neighbours)
        if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.size and (pairs.min() < 0 or pairs.max() >= rows):
            raise fail("neighbours", OWNER, f"pairs of row indices in [0, {rows - 1}]", pairs)
        return pairs.astype(int)

    def certificate(self) -> Certificate:
        """Measured privacy of the matrix against the nominal epsilon."""
        return certify(self.matrix, self.epsilon, pairs=self.neighbours)

    def actual_privacy_cost(self) -> float:
        """Largest ``|ln P(r | x) - ln P(r | x')|`` over neighbours (Lemma 7: < epsilon)."""
        return self.certificate().max_privacy_loss

    def normaliser_depends_on_data(self, *, tolerance: float = 1e-12) -> bool:
        """Whether ``A(x)`` differs between datasets (if not, the cost is epsilon / 2)."""
        log_a = special.logsumexp(self.epsilon * self.utility / (2.0 * self.sensitivity), axis=1)
        return bool(np.ptp(log_a) > tolerance)

    def sample(self, dataset: int = 0, count: int = 1, *, rng: Any = None, secure: bool = False) -> np.ndarray:
        """Draw output indices for one dataset (row), refusing an uncertified matrix."""
        row = check_int(dataset, "dataset", OWNER, low=0, high=self.matrix.shape[0] - 1)
        count = check_count(count, OWNER)
        if not self.certificate().ok:
            raise fail("utility", OWNER, "a mechanism whose certificate passes", self.certificate().to_dict())
        return exact_choice(self.matrix[row], count, resolve_rng(rng, secure=secure))
