"""Wu-Xia-He's set-sequence mechanisms on a finite universe, as index matrices.

Every construction of Section 4 partitions the output set R, for each dataset x, into
a sequence S_0^x, S_1^x, ... and releases r in S_i^x with probability proportional to
``e^(-i eps')`` (Theorems 5-6 add ``t eps'`` outside an important set E). On a finite
universe the partition is an index matrix ``I[x, r]`` (the i with r in S_i^x), so one
function builds every mechanism from its index matrix (:func:`index_mechanism`), and
each theorem is only its index rule:

* Theorem 1 (``staircase``) and Example 9: ``i = ceil((d(f(x), r) - gamma) / Delta f)``
  (0 within gamma), Delta f the global sensitivity.
* Theorem 2 (``privacy_first``): ``i = min{ceil d̄(x, y) : f(y) = r}`` -- the hop
  distance from x to the datasets with value r (Algorithm 1; Section 7's exponential
  mechanism with score ``-d̄(x, f^-1(r))``).
* Theorem 3 (``compositional``): ``i = min{ceil d̄(x, y) : d(f(y), r) <= delta^y}``.
* Theorem 4 (``utility_first``): ``i = min{s(x, u) : r in T_0^u}``, s the staircase index
  of value u for x and ``T_0^u`` the values within d̄ <= delta^u of the datasets with value u.
* Theorems 5 and 6 (``weighted_utility_first``, ``weighted_privacy_first``): Theorem 4's
  and Theorem 3's index plus ``t`` outside E.
* Example 10 (``ladder``): the smallest i with ``d(f(x), r) <= Delta_0^x + ... + Delta_i^x``
  (ladders of local sensitivities; distance 0 belongs to S_0, see
  :mod:`dpopt.mechanisms.ladder`).

**Where the paper's definitions are corrected.** Theorem 3 defines
``B_(i-1)^x = U_{y in N_(i-1)^x} R_0^y`` over the *sphere* N_(i-1)^x (datasets at
distance exactly i - 1). With the sphere, a value reachable at distances 1 and 3 but
not 2 lands in both R_1^x and R_3^x, so the sets are not a partition and Lemma 2 fails;
Lemma 2's own proof uses ``U_{j<=t} R_j = B_t``, which holds only for the *ball*
``N̄_(i-1)^x`` (all datasets within i - 1), as Theorem 2's ``A_(i-1)^x`` is written.
The index rule above is the ball version: the first i at which r is reached.

**Privacy.** Lemmas 1-2 give ``|I[x, r] - I[x', r]| <= 1`` for neighbours, and the proofs
give 2 eps' (e^eps' from the index, e^eps' from the normalisers); Corollary 1 says eps'
suffices when every dataset's sequence is a shift of one another's (linear queries).
:func:`calibrate` finds the largest eps' whose *measured* loss meets a target, so the
constructions are compared with the LP optimum at the same measured privacy.

**Weights are clamped, not flushed to zero.** ``e^(-eps' I)`` underflows to 0 beyond
``eps' I`` ~ 745 (a long path, a large epsilon), and a 0 beside a non-zero is an infinite
loss. :func:`index_mechanism` releases r with probability proportional to
``e^(-eps' min(I[x, r], n_x + K))``, n_x the row's least index and ``eps' K`` just below
the underflow (:func:`clamp_level`). The proof survives: ``min(I, n_x + K)`` moves by at
most 1 between neighbours, because I and n_x each do and ``min`` is 1-Lipschitz in both
arguments; and at most ``|R| e^-(eps' K)``, about e^-700, of a row's mass moves. The paper
has no floats and no clamp; without it a construction's calibration stopped where the
first entry underflowed, far below its budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.special import logsumexp

from dpopt.certificates import log_ratios
from dpopt.limits import UNDERFLOW_EXPONENT
from dpopt.mechanisms.ladder import ladders_from_universe

__all__ = [
    "CONSTRUCTIONS",
    "Calibrated",
    "calibrate",
    "index_mechanism",
    "clamp_level",
    "measured_loss",
    "staircase_index",
    "privacy_first_index",
    "compositional_index",
    "utility_first_index",
    "ladder_index",
]

#: Index of an output no dataset can reach (its probability is 0 for every dataset).
UNREACHABLE = np.iinfo(np.int64).max // 4


def staircase_index(values: np.ndarray, outputs: np.ndarray, sensitivity: float, gamma: float = 0.0) -> np.ndarray:
    """Theorem 1 / Example 9: ``ceil((|f(x) - r| - gamma) / Delta)``, 0 within gamma.

    With Delta = 0 (neighbours share their values, as a metric universe's few neighbours
    may) the steps are infinitely fine: index 0 on the outputs nearest f(x) and none
    elsewhere, a function of f(x) alone and so private. Indices are capped at
    :data:`UNREACHABLE` (a tiny Delta against a large gap must not overflow int64).
    """
    gap = np.abs(values[:, None] - outputs[None, :])
    if sensitivity <= 0:
        return np.where(gap <= gap.min(axis=1, keepdims=True), 0, UNREACHABLE).astype(np.int64)
    steps = np.maximum(np.ceil((gap - gamma) / sensitivity - 1e-12), 0)
    capped = steps >= UNREACHABLE  # (float(UNREACHABLE) rounds up: compare, then cast only what fits)
    return np.where(capped, UNREACHABLE, np.where(capped, 0.0, steps).astype(np.int64))


def compositional_index(hops: np.ndarray, values: np.ndarray, outputs: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Theorem 3 (ball-corrected): the hop distance from x to the nearest y with |f(y) - r| <= delta^y.

    Datasets y with the same value and radius reach the same outputs, so the distance is
    taken to each such group once (``near``: m x groups) and then minimised over the groups
    that reach r: O(m^2 + m groups |R|) time and O(m (groups + |R|)) memory, never the
    m x m x |R| array the definition suggests (10 GB at m = 5000, |R| = 50).
    """
    groups, group_of = np.unique(np.column_stack([values, delta]), axis=0, return_inverse=True)
    group_of = group_of.ravel()
    near = np.full((hops.shape[0], len(groups)), UNREACHABLE, dtype=np.int64)
    for g in range(len(groups)):
        near[:, g] = hops[:, group_of == g].min(axis=1)
    reach = np.abs(groups[:, :1] - outputs[None, :]) <= groups[:, 1:] + 1e-12  # group -> r in R_0^y
    index = np.full((hops.shape[0], outputs.size), UNREACHABLE, dtype=np.int64)
    for g in range(len(groups)):
        np.minimum(index, np.where(reach[g], near[:, g, None], UNREACHABLE), out=index)
    return index


def privacy_first_index(hops: np.ndarray, values: np.ndarray, outputs: np.ndarray) -> np.ndarray:
    """Theorem 2 / Algorithm 1: the hop distance from x to f^-1(r) (Theorem 3 with delta = 0)."""
    return compositional_index(hops, values, outputs, np.zeros(values.size))


def utility_first_index(hops: np.ndarray, values: np.ndarray, outputs: np.ndarray, sensitivity: float, delta: np.ndarray) -> np.ndarray:
    """Theorem 4: ``min{s(x, u) : r in T_0^u}`` over the query's values u.

    ``T_0^u`` holds the values of the datasets within d̄ <= delta^u of some dataset with
    value u (Eq. 15, with delta indexed by the value; a per-dataset delta is taken at
    its smallest over the datasets sharing the value).
    """
    distinct, inverse = np.unique(values, return_inverse=True)
    u_count, r_count = distinct.size, outputs.size
    radius = np.full(u_count, np.inf)
    np.minimum.at(radius, inverse, delta)
    # near[u, r]: some dataset z with f(z) = u and some w with f(w) = r within radius[u]
    output_of = {value: j for j, value in enumerate(outputs.tolist())}
    near = np.zeros((u_count, r_count), dtype=bool)
    for u in range(u_count):
        close = hops[inverse == u].min(axis=0) <= radius[u] + 1e-12  # datasets w within reach
        for w_value in np.unique(values[close]).tolist():
            if w_value in output_of:
                near[u, output_of[w_value]] = True
    steps = staircase_index(values, distinct, sensitivity)  # s(x, u)
    index = np.full((values.size, r_count), UNREACHABLE, dtype=np.int64)
    for u in range(u_count):  # min over u, one value at a time: no (x, u, r) array
        np.minimum(index, np.where(near[u], steps[:, u, None], UNREACHABLE), out=index)
    # outputs outside every T_0 (not values of f) keep their staircase index: the partition covers R
    return np.where(index >= UNREACHABLE, staircase_index(values, outputs, sensitivity), index)


def ladder_index(values: np.ndarray, outputs: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """Example 10: the first rung i with ``|f(x) - r| <= Delta_0^x + ... + Delta_i^x``."""
    ladders = ladders_from_universe(values, neighbours)
    last = ladders[:, -1:]
    gap = np.abs(values[:, None] - outputs[None, :])
    reach = np.cumsum(ladders, axis=1)  # L_0 .. L_D, non-decreasing: the first rung is a binary search
    first = np.stack([np.searchsorted(row, g - 1e-12, side="left") for row, g in zip(reach, gap)])
    # beyond the ladder's end the last rung width repeats for ever; a last rung of width 0 (a
    # constant query) never grows, so what lies beyond is unreachable (until 2026-11-29 the
    # division by 1e-300 cast inf to int64's minimum and put all the mass on the far outputs)
    with np.errstate(divide="ignore", invalid="ignore"):
        rungs = np.ceil((gap - reach[:, -1:]) / last - 1e-12) + (reach.shape[1] - 1)
    counted = np.broadcast_to(last > 0, gap.shape) & (rungs < UNREACHABLE)
    beyond = np.full(gap.shape, UNREACHABLE, dtype=np.int64)
    beyond[counted] = rungs[counted].astype(np.int64)
    return np.where(first < reach.shape[1], first, beyond).astype(np.int64)


def index_mechanism(index: np.ndarray, eps: float, *, penalty: np.ndarray | None = None) -> np.ndarray:
    """``p^x(r) ~ exp(-min(eps (I[x, r] + penalty[r] - n_x), c))``, rows normalised in log space.

    ``n_x`` is row x's least weight (it cancels in the normalisation) and ``c`` is
    :func:`clamp_level`: weights beyond it are clamped, which keeps the 2 eps' proof (see
    the module docstring) and moves at most ``e^-c`` of a row's mass.

    Raises ValueError for a dataset with no reachable output (its row would be 0 / 0): the
    methods' ``applies`` rules keep such problems away, so this is a bug, never a NaN row.
    """
    unreachable = index >= UNREACHABLE
    empty = unreachable.all(axis=1)
    if empty.any():
        raise ValueError(f"dataset {int(np.argmax(empty))} has no output in its set sequence")
    # Each row is shifted by its least reachable index first (exact in integers): far outputs
    # have indices near 1e14 (outputs at 1e15 over a sensitivity of 4), where eps I and its
    # logsumexp differ by ulps of 0.016 and the rows summed to 1 +- 0.008 (uncertified).
    nearest = np.where(unreachable, UNREACHABLE, index).min(axis=1, keepdims=True)
    weight = (index - nearest).astype(float) + (0.0 if penalty is None else penalty[None, :])
    # and shifted by its least weight again once the penalty is in: a penalty every output pays
    # (Theorem 5 with E empty) times a calibrated eps of 3e7 put both logits at -3e7, whose
    # ulps (4e-9) left the rows summing to 1 + 1.8e-9 (uncertified) until 2026-11-29
    weight -= np.where(unreachable, np.inf, weight).min(axis=1, keepdims=True)
    # Clamped so that every reachable entry stays a normal double (see the module docstring)
    logits = np.where(unreachable, -np.inf, -np.minimum(eps * weight, clamp_level(index.shape[1])))
    return np.exp(logits - logsumexp(logits, axis=1, keepdims=True))


def clamp_level(outputs: int) -> float:
    """The largest ``eps' I`` a weight keeps: ``UNDERFLOW_EXPONENT - ln |R|``, so that every
    reachable entry, at least ``e^-level / |R|``, is a normal double."""
    return UNDERFLOW_EXPONENT - math.log(max(outputs, 1))


def measured_loss(mechanism: np.ndarray, pairs: np.ndarray) -> float:
    """The largest ``|ln(x[a, r] / x[b, r])|`` over the given neighbour pairs."""
    return float(log_ratios(mechanism[pairs[:, 0]], mechanism[pairs[:, 1]]).max())


@dataclass(frozen=True)
class Calibrated:
    """A construction's mechanism at its calibrated parameter."""

    mechanism: np.ndarray
    parameter: float
    loss: float
    how: str


def calibrate(build: Callable[[float], np.ndarray], pairs: np.ndarray, target: float, *, proof: bool, iterations: int = 60) -> Calibrated:
    """The construction at ``eps' = target / 2`` (``proof``) or at the largest eps' whose measured loss <= target.

    The measured loss is continuous in eps', 0 at 0 and at most 2 eps' (Lemmas 1-2), so the
    largest feasible eps' lies in [target / 2, ...): it is bracketed by doubling and found by
    bisection; the certificate is measured on the mechanism returned. Since
    :func:`index_mechanism` clamps its weights, no entry underflows and the bound holds in
    floats too. (Before 2026-11-29 ``e^(-eps' I)`` underflowed to 0 where eps' I > ~745, an
    infinite measured loss, and the bisection stopped below it: on a path of 500 datasets at
    epsilon = 5 the exponential mechanism was calibrated to eps' = 1.49 and a measured loss
    of 1.65, an objective of 0.47 where its budget allows 0.0135.) If the bound still failed,
    the bisection would run below target / 2, down to eps' = 0 (every reachable output alike,
    loss 0).
    """
    if proof:
        mechanism = build(target / 2)
        return Calibrated(mechanism, target / 2, measured_loss(mechanism, pairs), "proof: parameter = epsilon / 2 (the theorem's 2 epsilon bound)")
    low, high = target / 2, target
    if measured_loss(build(low), pairs) > target:
        low, high = 0.0, low
    while measured_loss(build(high), pairs) <= target and high < 1e6 * target:
        low, high = high, 2 * high
    for _ in range(iterations):
        middle = (low + high) / 2
        if measured_loss(build(middle), pairs) <= target:
            low = middle
        else:
            high = middle
    mechanism = build(low)
    return Calibrated(mechanism, low, measured_loss(mechanism, pairs), "measured: the largest parameter whose measured loss meets epsilon (bisection)")


#: method name -> the construction it registers (paper and theorem)
CONSTRUCTIONS: dict[str, str] = {
    "staircase": "Wu-Xia-He Theorem 1 (Example 9's gamma)",
    "privacy_first": "Wu-Xia-He Theorem 2 (Algorithm 1 on any finite universe)",
    "compositional": "Wu-Xia-He Theorem 3 (delta per dataset; ball-corrected B_(i-1))",
    "utility_first": "Wu-Xia-He Theorem 4 (delta per value)",
    "weighted_utility_first": "Wu-Xia-He Theorem 5 (Theorem 4 with penalty t outside E)",
    "weighted_privacy_first": "Wu-Xia-He Theorem 6 (Theorem 3 with penalty t outside E)",
    "ladder": "Wu-Xia-He Example 10 (Zhang et al.'s ladder, codomain R)",
    "exponential": "Wu-Xia-He Section 7: exponential mechanism, score -d̄(x, f^-1(r)), sensitivity 1",
}
