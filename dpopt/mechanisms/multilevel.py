"""Collusion-resistant release at several privacy levels (Gupte & Sundararajan, Section 4.1).

Lemma 3: for alpha < beta, ``G_beta = G_alpha T_{alpha,beta}`` with T stochastic.
Algorithm 1 releases ``r_1 ~ G_{alpha_1}(true)``, then ``r_{i+1} ~ T_{i+1}(r_i)``, so
each r_i has exactly the law of ``G_{alpha_i}`` (the chain's marginal) and any
colluding set learns no more than its least private member (Lemma 4).

The paper's Algorithm 1 loops ``for 1 <= i <= k`` when computing ``T_{i+1}``; the
last iteration would need ``alpha_{k+1}``, which does not exist: the loop runs to k-1.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from dpopt.mechanisms.geometric import geometric_matrix, remap_from_geometric
from dpopt.exact_sampling import exact_choice, exact_choice_rows
from dpopt.sampling import RandomSource
from dpopt.validation import fail

__all__ = ["level_remap", "chain_remaps", "chain_marginals", "sample_chain", "verify_chain_exact", "coalition_likelihood", "coalition_posterior"]


def level_remap(n: int, alpha: float | Fraction, beta: float | Fraction) -> np.ndarray:
    """``T_{alpha,beta} = G_alpha^{-1} G_beta`` (Lemma 3), by the exact tridiagonal solve.

    Raises
    ------
    InvalidParameterError
        Unless ``alpha < beta``.
    """
    if not alpha < beta:
        raise fail("beta", "level_remap", f"a privacy level larger than alpha = {alpha}", beta)
    return remap_from_geometric(geometric_matrix(n, beta), alpha)


def chain_remaps(n: int, alphas: Sequence[float | Fraction]) -> list[np.ndarray]:
    """The post-processing matrices ``T_2 .. T_k`` of Algorithm 1."""
    return [level_remap(n, a, b) for a, b in zip(alphas[:-1], alphas[1:])]


def chain_marginals(n: int, alphas: Sequence[float | Fraction]) -> list[np.ndarray]:
    """Marginal mechanism of each level: ``G_{alpha_1} T_2 ... T_i`` for i = 1..k."""
    marginal = geometric_matrix(n, alphas[0])
    result = [marginal]
    for remap in chain_remaps(n, alphas):
        marginal = marginal @ remap
        result.append(marginal)
    return result


def verify_chain_exact(n: int, alphas: Sequence[float]) -> bool:
    """Check in exact rational arithmetic that every level's marginal is ``G_{alpha_i}``.

    The floats ``alphas`` are converted exactly to fractions; the remaps are
    computed exactly, checked non-negative, and the chain product is compared with
    ``G_{alpha_i}`` entry by entry (no tolerance).
    """
    exact = [Fraction(a) for a in alphas]
    remaps = chain_remaps(n, exact)
    if any(min(t.ravel()) < 0 for t in remaps):
        return False
    marginals = chain_marginals(n, exact)
    return all(np.array_equal(m, geometric_matrix(n, a)) for m, a in zip(marginals, exact))


def coalition_likelihood(n: int, alphas: Sequence[float | Fraction], releases: dict[int, int]) -> np.ndarray:
    """``P(r_c = releases[c] for every level c in the coalition | true count d)`` for each d.

    Algorithm 1 releases a Markov chain ``d -> r_1 -> r_2 -> ...`` (``r_1 ~ G_{alpha_1}(d)``,
    ``r_(i+1) ~ T_(i+1)(r_i)``); levels outside the coalition are summed out by a forward
    pass. Exact with :class:`~fractions.Fraction` alphas.
    """
    remaps = chain_remaps(n, alphas)
    forward = geometric_matrix(n, alphas[0])  # row d: the law of the current level given true count d
    # After the first released level, forward = outer(weight, law): kept as the two vectors,
    # so each later level costs a vector-matrix product (exact Fractions are slow).
    weight: np.ndarray | None = None
    law = np.zeros(0)
    for level in range(len(alphas)):
        if level in releases:
            r = releases[level]
            weight = forward[:, r] if weight is None else weight * law[r]
            law = np.zeros(n + 1, dtype=forward.dtype)
            law[r] = 1
        if level < len(remaps):
            if weight is None:
                forward = forward @ remaps[level]
            else:
                law = law @ remaps[level]
    likelihood = forward.sum(axis=1) if weight is None else weight * law.sum()
    return np.array(list(likelihood), dtype=object if isinstance(alphas[0], Fraction) else float)


def coalition_posterior(n: int, alphas: Sequence[float | Fraction], releases: dict[int, int], prior: Sequence[Any]) -> np.ndarray:
    """The posterior over the true count of consumers who pool ``releases`` (level -> value).

    GS Lemma 4: it equals the posterior of the least private member (the smallest level in
    ``releases``) alone, because the later releases are post-processing of that one by
    coins that do not depend on the data. :func:`coalition_likelihood` computes the joint
    law directly, so the identity can be checked exactly rather than assumed.
    """
    joint = np.asarray(prior, dtype=object) * coalition_likelihood(n, alphas, releases)
    return joint / joint.sum()


def sample_chain(
    first: np.ndarray, remaps: Sequence[np.ndarray], row: int, count: int, source: RandomSource
) -> np.ndarray:
    """Algorithm 1's release: ``count`` independent chains ``(r_1, .., r_k)`` for true input ``row``, drawn exactly."""
    out = np.empty((count, len(remaps) + 1), dtype=int)
    out[:, 0] = exact_choice(first[row], count, source)
    for level, remap in enumerate(remaps, start=1):
        out[:, level] = exact_choice_rows(remap, out[:, level - 1], source)
    return out
