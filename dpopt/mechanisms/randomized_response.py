"""Randomized response as mechanism matrices (Liu-Wu-Zhou Eqs. 12-13).

Binary: keep the true bit with probability ``e^eps / (1 + e^eps)`` (Eq. 12). k-ary:
keep the true category with probability ``e^eps / (e^eps + k - 1)`` and report each
other category with ``1 / (e^eps + k - 1)`` (Eq. 13; its matrix is lost in the
paper's text, this is the standard form its Theorem 5 proof uses). Every pair of
inputs are neighbours (local DP), and the privacy loss is exactly epsilon.

Binary randomized response is the minimax-optimal epsilon-DP mechanism for a count
query with n = 1 under 0/1 loss; it is registered as the ``randomized_response``
shortcut of ``count_query`` and tested against the LP.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpopt.mechanisms.noise import check_epsilon
from dpopt.exact_sampling import exact_choice
from dpopt.sampling import check_count, resolve_rng
from dpopt.validation import check_int

__all__ = ["RandomizedResponse", "randomized_response_matrix", "all_pairs"]


def randomized_response_matrix(k: int, epsilon: float) -> np.ndarray:
    """The k x k randomized-response matrix (k = 2 is Eq. 12)."""
    k = check_int(k, "k", "randomized response", low=2)
    eps = check_epsilon(epsilon, "randomized response")
    keep = 1.0 / (1.0 + (k - 1) * np.exp(-eps))  # e^eps / (e^eps + k - 1), without overflow
    # 1 / (e^eps + k - 1) directly: (1 - keep) / (k - 1) cancels catastrophically at large
    # epsilon (eps = 18: relative error 7e-9 in the small entry, a measured loss above eps)
    other = np.exp(-eps) / (1.0 + (k - 1) * np.exp(-eps))
    return np.where(np.eye(k, dtype=bool), keep, other)


def all_pairs(k: int) -> np.ndarray:
    """Every unordered pair of k inputs (the neighbour relation of local DP)."""
    i, j = np.triu_indices(k, 1)
    return np.column_stack([i, j])


@dataclass(frozen=True, kw_only=True)
class RandomizedResponse:
    """k-ary randomized response with budget epsilon (local DP).

    Parameters
    ----------
    k : int
        Number of categories (2 = binary, Eq. 12).
    epsilon : float
    """

    k: int
    epsilon: float
    owner = "randomized response"

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_int(self.k, "k", self.owner, low=2))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, self.owner))

    @property
    def matrix(self) -> np.ndarray:
        return randomized_response_matrix(self.k, self.epsilon)

    def output_distribution(self, prior: Any) -> np.ndarray:
        """Distribution of the report when the input follows ``prior`` (pi in the paper)."""
        pi = np.asarray(prior, dtype=float)
        return pi @ self.matrix

    def sample(self, true_value: int, count: int = 1, *, rng: Any = None, secure: bool = False) -> np.ndarray:
        value = check_int(true_value, "true_value", self.owner, low=0, high=self.k - 1)
        count = check_count(count, self.owner)
        return exact_choice(self.matrix[value], count, resolve_rng(rng, secure=secure))
