"""Collusion-resistant release at several privacy levels (Gupte & Sundararajan, Section 4.1).

Lemma 3: for alpha < beta, ``G_beta = G_alpha T_{alpha,beta}`` with T stochastic.
Algorithm 1 releases ``r_1 ~ G_{alpha_1}(true)``, then ``r_{i+1} ~ T_{i+1}(r_i)``, so
each r_i has exactly the law of ``G_{alpha_i}`` (the chain's marginal) and any
colluding set learns no more than its least private member (Lemma 4).

The paper's Algorithm 1 loops ``for 1 <= i <= k`` when computing ``T_{i+1}``; the
last iteration would need ``alpha_{k+1}``, which does not exist: the loop runs to k-1.

**T in closed form: keep, or redraw** (:func:`stay_probabilities`, not in the paper).
``G_alpha = A_alpha D_alpha`` with ``A[i, s] = alpha^|i - s|`` and D the column weights
(``1 / (1 + alpha)`` at 0 and n, ``(1 - alpha) / (1 + alpha)`` between), and
``A_alpha^-1`` is tridiagonal: ``(1 + alpha^2, -alpha, -alpha) / (1 - alpha^2)`` on an
interior row, ``(1, -alpha) / (1 - alpha^2)`` on an end row. Its interior row against
column s of ``A_beta`` gives ``K beta^|i - s|`` for s != i, with
``K = (1 - alpha beta)(1 - alpha / beta)``, and ``K + alpha (1 / beta - beta)`` at s = i
(an end row: ``1 - alpha / beta`` in place of K). So every row of
``T = D_alpha^-1 A_alpha^-1 A_beta D_beta`` is

    T[r] = p_r e_r + (1 - p_r) G_beta[r],
    p_r = alpha (1 - beta) / (beta (1 - alpha))              at r = 0 or n,
    p_r = alpha (1 - beta)^2 / (beta (1 - alpha)^2)          in between,

both in (0, 1) for alpha < beta: the next level keeps the release with probability p_r and
otherwise redraws it from ``G_beta`` around it. :class:`FactoredChain` releases the chain
this way, for any n, with no matrix at all: exact geometric noise and exact rational coins
(tested against the tridiagonal solve in rational arithmetic, entry by entry).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, Sequence

import numpy as np

from dpopt.mechanisms.geometric import clamped_geometric, geometric_matrix, remap_from_geometric
from dpopt.exact_sampling import exact_bernoulli_fraction, exact_choice, exact_choice_rows
from dpopt.sampling import RandomSource
from dpopt.validation import check_real, fail

__all__ = ["FACTORED_CHAIN_SAMPLER", "FactoredChain", "level_remap", "chain_remaps", "chain_marginals", "sample_chain", "stay_probabilities",
           "verify_chain_exact", "coalition_likelihood", "coalition_posterior"]


def _alphas(alphas: Any, owner: str, parameter: str = "alphas") -> list[Any]:
    """A chain's privacy levels: a non-empty list of numbers (floats or Fractions) increasing
    strictly in (0, 1), or refused naming ``alphas`` (a raw TypeError or IndexError before
    2026-11-29)."""
    allowed = "a non-empty list of privacy levels alpha_1 < alpha_2 < ... in (0, 1)"
    if isinstance(alphas, (str, bytes)) or not isinstance(alphas, (Sequence, np.ndarray)) or len(alphas) == 0:
        raise fail(parameter, owner, allowed, alphas)
    levels = [a if isinstance(a, Fraction) else check_real(a, parameter, owner, low=0.0, high=1.0, low_open=True, high_open=True)
              for a in alphas]
    if any(not 0 < a < 1 for a in levels) or any(a >= b for a, b in zip(levels[:-1], levels[1:])):
        raise fail(parameter, owner, allowed, list(alphas))
    return levels


def level_remap(n: int, alpha: float | Fraction, beta: float | Fraction) -> np.ndarray:
    """``T_{alpha,beta} = G_alpha^{-1} G_beta`` (Lemma 3), by the exact tridiagonal solve.

    Raises
    ------
    InvalidParameterError
        Unless ``alpha < beta``.
    """
    alpha, beta = _alphas([alpha], "level_remap", "alpha")[0], _alphas([beta], "level_remap", "beta")[0]
    if not alpha < beta:
        raise fail("beta", "level_remap", f"a privacy level larger than alpha = {alpha}", beta)
    return remap_from_geometric(geometric_matrix(n, beta), alpha)


def chain_remaps(n: int, alphas: Sequence[float | Fraction]) -> list[np.ndarray]:
    """The post-processing matrices ``T_2 .. T_k`` of Algorithm 1."""
    alphas = _alphas(alphas, "chain_remaps")
    return [level_remap(n, a, b) for a, b in zip(alphas[:-1], alphas[1:])]


def chain_marginals(n: int, alphas: Sequence[float | Fraction]) -> list[np.ndarray]:
    """Marginal mechanism of each level: ``G_{alpha_1} T_2 ... T_i`` for i = 1..k."""
    alphas = _alphas(alphas, "chain_marginals")
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
    exact = [Fraction(a) for a in _alphas(alphas, "verify_chain_exact")]
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
    alphas = _alphas(alphas, "coalition_likelihood")
    remaps = chain_remaps(n, alphas)
    releases = _releases(releases, n, len(alphas))
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
    likelihood = coalition_likelihood(n, alphas, releases)
    if isinstance(prior, (str, bytes)) or not isinstance(prior, (Sequence, np.ndarray)) or len(prior) != likelihood.size:
        raise fail("prior", "coalition_posterior", f"{likelihood.size} non-negative weights, one per count 0..{likelihood.size - 1}", prior)
    weights = [w if isinstance(w, Fraction) else check_real(w, "prior", "coalition_posterior", low=0.0) for w in prior]
    joint = np.asarray(weights, dtype=object) * likelihood
    if not joint.sum() > 0:
        raise fail("prior", "coalition_posterior", "weights that give the releases a positive probability", prior)
    return joint / joint.sum()


def _releases(releases: Any, n: int, levels: int) -> dict[int, int]:
    """A coalition's releases: level (0..levels-1) -> released count (0..n), at least one."""
    allowed = f"a non-empty dict of level (0..{levels - 1}) -> released count (0..{n})"
    if not isinstance(releases, dict) or not releases:
        raise fail("releases", "coalition_likelihood", allowed, releases)
    for level, value in releases.items():
        if isinstance(level, bool) or isinstance(value, bool) or not isinstance(level, (int, np.integer)) or not isinstance(value, (int, np.integer)) \
                or not 0 <= level < levels or not 0 <= value <= n:
            raise fail("releases", "coalition_likelihood", allowed, releases)
    return {int(k): int(v) for k, v in releases.items()}


def stay_probabilities(alpha: float | Fraction, beta: float | Fraction) -> tuple[Fraction, Fraction]:
    """``(p_end, p_interior)``: row r of ``T_{alpha,beta}`` is ``p_r e_r + (1 - p_r) G_beta[r]`` (module docstring),
    exactly, for the floats alpha < beta as the rationals they are."""
    a, b = (Fraction(v) for v in _alphas([alpha], "stay_probabilities", "alpha") + _alphas([beta], "stay_probabilities", "beta"))
    if not 0 < a < b < 1:
        raise fail("beta", "stay_probabilities", f"a privacy level in (alpha, 1) for alpha = {alpha}", beta)
    end = a * (1 - b) / (b * (1 - a))
    return end, end * (1 - b) / (1 - a)


#: How :meth:`FactoredChain.sample` draws (reported with every release).
FACTORED_CHAIN_SAMPLER = ("exact: level 1 is clip(x + K1 - K2, 0, n) with K1, K2 exact geometric on the dyadic alpha_1; each "
                          "later level keeps the previous release with its exact rational stay probability, else redraws "
                          "clip(r + K1 - K2, 0, n) at its own alpha (T = G_a^-1 G_b as keep-or-redraw)")


@dataclass(frozen=True)
class FactoredChain:
    """Algorithm 1 without matrices: ``r_1 ~ G_{alpha_1}(x)``, then ``r_(i+1) = r_i`` with probability
    ``p(r_i)`` (:func:`stay_probabilities` of the two levels), else ``r_(i+1) ~ G_{alpha_(i+1)}(r_i)``.

    Every level's marginal is exactly ``G_{alpha_i}`` for the float alphas as rationals, as for
    the dense chain, at O(k) memory for any n.
    """

    n: int
    levels: tuple[float, ...]

    @cached_property
    def stays(self) -> list[tuple[Fraction, Fraction]]:
        """``(p_end, p_interior)`` into each level 2..k."""
        return [stay_probabilities(a, b) for a, b in zip(self.levels[:-1], self.levels[1:])]

    def remap_row(self, level: int, r: int) -> np.ndarray:
        """Row r of the remap into level ``level`` (2..k) as floats: for checks at small n."""
        end, interior = self.stays[level - 2]
        p = end if r in (0, self.n) else interior
        row = (1 - float(p)) * geometric_matrix(self.n, self.levels[level - 1])[r]
        row[r] += float(p)
        return row

    def sample(self, row: int, count: int, source: RandomSource) -> np.ndarray:
        """``count`` independent chains ``(r_1, .., r_k)`` for true input ``row``, drawn exactly."""
        out = np.empty((count, len(self.levels)), dtype=np.int64)
        out[:, 0] = clamped_geometric(np.full(count, row), self.n, self.levels[0], source)
        for level, ((end, interior), alpha) in enumerate(zip(self.stays, self.levels[1:]), start=1):
            previous = out[:, level - 1]
            at_end = (previous == 0) | (previous == self.n)
            keep = np.empty(count, dtype=bool)
            for where, p in ((at_end, end), (~at_end, interior)):
                keep[where] = exact_bernoulli_fraction(p.numerator, p.denominator, int(where.sum()), source)
            out[:, level] = previous
            out[~keep, level] = clamped_geometric(previous[~keep], self.n, alpha, source)
        return out


def sample_chain(
    first: np.ndarray, remaps: Sequence[np.ndarray], row: int, count: int, source: RandomSource
) -> np.ndarray:
    """Algorithm 1's release: ``count`` independent chains ``(r_1, .., r_k)`` for true input ``row``, drawn exactly."""
    out = np.empty((count, len(remaps) + 1), dtype=int)
    out[:, 0] = exact_choice(first[row], count, source)
    for level, remap in enumerate(remaps, start=1):
        out[:, level] = exact_choice_rows(remap, out[:, level - 1], source)
    return out
