"""A first master predicted by playing the minimax game: multiplicative weights against best responses.

The minimax problem ``min_T max_(i in S) loss_i(G T)`` is a zero-sum game between the
designer (a remap T) and an adversary (a distribution lambda over the inputs S). For a
given lambda the designer's best reply is row-separable: row r goes to the column that
minimises its lambda-weighted cost, which for squared loss is an integer next to the
kernel-weighted mean of S around r (the pricing of
:func:`~dpopt.programs.column_generation.pricing.price_columns`). Multiplicative weights
(Freund and Schapire, 1999) let lambda grow on the inputs the current reply serves worst,
``lambda_i <- lambda_i exp(eta loss_i)``; the replies' average approaches an optimal
mechanism and lambda an optimal multiplier vector. Each round is O(n): two-sided
geometric-kernel sums for the reply and for the losses of a deterministic remap, about a
millisecond at n = 10,000.

The game is not run to optimality (its gap closes like 1/sqrt(rounds)). What it gives is a
column set: the rows' replies over the last rounds, where lambda has settled. Unlike the
optimal multipliers alone, whose mass sits where the binding inputs are and vanishes
elsewhere, the game keeps every input of S in play (an input served badly gains weight
until its rows move), so its replies also route the rows far from the binding inputs.
Column generation then prices every column and certifies as before; the game only
chooses where it starts.

Measured (a random 10% of the counts, squared loss, alpha = 0.9, n = 10,000, hull 0..9991;
one process, 2026-11-26): 3000 rounds (about 3 s) give 11,494 columns that miss 4,271 of
the 10,641 entries of the certified optimum, yet the first master (with the diagonal)
sits at 177.9113 against the optimum 177.8924 (the usual band and side neighbours:
178.2722) and takes 4-5 s by interior point and crossover (the usual first master:
11.6 s); eight warm rounds follow in under 4 s: 11.0 and 11.9 s in all against 32.4 s,
and 12.8 s through ``benchmarks/count_query.py --side-shape random10`` (31 s before).
Where the game is used, and where it was measured not to pay: :func:`game_applies`.
"""

from __future__ import annotations

import numpy as np

from dpopt.mechanisms.geometric import column_weights
from dpopt.problems.count_query import CountQuery
from dpopt.programs.column_generation.starts import extension_plan

__all__ = ["GAME_FROM_ALPHA", "GAME_FROM_N", "GAME_MAX_FRACTION", "game_applies", "game_columns", "remap_losses", "squared_best_reply"]

#: Rounds of the game.
GAME_ROUNDS = 3000
#: The step eta times the geometric mechanism's loss on an inner input (``2 alpha / (1 - alpha)^2``).
GAME_STEP = 0.27
#: The replies of this last fraction of the rounds become columns.
GAME_KEEP = 0.2
#: The game starts column generation from this n on ...
GAME_FROM_N = 2000
#: ... and this alpha (below it the identity's basis is nearly optimal and primal simplex
#: finishes the first master cheaply: random 10%, alpha = 0.5, n = 10,000 took 6.3 s with
#: the game against 4.1 s without).
GAME_FROM_ALPHA = 0.8
#: ... where S holds at most this fraction of the counts. Random S at alpha = 0.9, n =
#: 10,000 (one process, 2026-11-26), with the game against without: 5% 9.4 / 15.4 s, 10%
#: 20.9 / 50.5 s (another seed: 11 / 32 s), 15% 22.9 / 29.1 s, 20% 29.6 / 33.8 s, but 30%
#: 640 / 30 s (16 rounds: where S is dense the optimum is close to the identity, 179.991
#: against the geometric mechanism's 180, and the replies move rows it keeps), and 50% at
#: n = 3000 9.6 / 5.6 s.
GAME_MAX_FRACTION = 0.2


def game_applies(problem: CountQuery) -> bool:
    """Whether :func:`game_columns` chooses the first master's columns for ``problem``.

    Squared loss on a hull problem (S reaches 0 and n) with S sparse (GAME_MAX_FRACTION),
    from GAME_FROM_N and GAME_FROM_ALPHA on, and not where a periodic S's basis is predicted
    (:func:`~dpopt.programs.column_generation.starts.extension_plan`: the even counts,
    alpha = 0.9, n = 10,000 took 12.1 s with the game against 9.5 s without).
    """
    return (problem.loss_name == "squared" and problem.n >= GAME_FROM_N and problem.alpha >= GAME_FROM_ALPHA
            and len(problem.support) <= GAME_MAX_FRACTION * (problem.n + 1) and extension_plan(problem) is None)


def _two_sided(x: np.ndarray, alpha: float) -> np.ndarray:
    """``sum_j x_j alpha^|i - j|`` at every i, along the last axis: two first-order recurrences.

    scipy.signal's ``lfilter`` runs each in C at ~0.1 ms for 10,000 terms, 40 times faster
    than the banded solves of :func:`~dpopt.programs.geometric_moments.kernel_moments`, which
    the certified pricing keeps (imported here, not at module level: scipy.signal imports
    scipy.stats, about a second of every command-line start).
    """
    from scipy.signal import lfilter

    forward = lfilter([1.0], [1.0, -alpha], x, axis=-1)
    backward = lfilter([1.0], [1.0, -alpha], x[..., ::-1], axis=-1)[..., ::-1]
    return forward + backward - x


def squared_best_reply(lam: np.ndarray, alpha: float) -> np.ndarray:
    """Each row's best column under multipliers ``lam`` (length n + 1), squared loss.

    Row r's cost of column ``r + t`` is ``g_r (m2 - 2 m1 t + m0 t^2)`` with the kernel sums
    ``m_k = sum_i lam_i alpha^|i-r| (i - r)^k``: least at the integer below or above
    ``m1 / m0`` (the diagonal where ``m0`` underflows). The same choice as the pricing's,
    from sums that lose ~1e-12 relative to cancellation (``m1 = sum lam_i i ... - r m0``),
    which can only flip a near tie: the game's columns are a prediction, never a bound.
    """
    n = lam.size - 1
    r = np.arange(n + 1, dtype=float)
    m0, first = _two_sided(np.stack([lam, lam * r]), alpha)
    m1 = first - r * m0
    centre = np.divide(m1, m0, out=np.zeros_like(m1), where=m0 > 0)
    low = np.clip(np.floor(centre), -r, n - r)
    high = np.clip(low + 1, -r, n - r)
    pick_high = -2 * m1 * high + m0 * high**2 < -2 * m1 * low + m0 * low**2
    return (r + np.where(pick_high, high, low)).astype(np.int64)


def remap_losses(targets: np.ndarray, alpha: float, inputs: np.ndarray) -> np.ndarray:
    """Squared loss of ``G T`` on ``inputs`` for the deterministic remap ``T[r, targets[r]] = 1``.

    ``loss_i = sum_r g_r alpha^|i-r| (i - t_r)^2 = F(g t^2)_i - 2 i F(g t)_i + i^2 F(g)_i`` with
    ``F`` the two-sided kernel sum (:func:`_two_sided`; rounding ~1e-8 absolute at n = 10,000).
    """
    n = targets.size - 1
    g = column_weights(n, alpha)
    t = targets.astype(float)
    zero, first, second = _two_sided(np.stack([g, g * t, g * t * t]), alpha)[:, inputs]
    i = inputs.astype(float)
    return second - 2 * i * first + i * i * zero


def game_columns(problem: CountQuery, *, rounds: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Master columns (rows, targets): the best replies of the game's last rounds (squared loss).

    ``rounds`` defaults to GAME_ROUNDS; the replies of the last GAME_KEEP of them are kept.
    """
    rounds = GAME_ROUNDS if rounds is None else rounds
    n, alpha = problem.n, problem.alpha
    inputs = np.asarray(problem.support)
    step = GAME_STEP * (1 - alpha) ** 2 / (2 * alpha)
    log_weights = np.zeros(inputs.size)
    lam = np.zeros(n + 1)
    keep_from = rounds - max(1, int(GAME_KEEP * rounds))
    seen = []
    for round_number in range(rounds):
        weights = np.exp(log_weights - log_weights.max())
        lam[inputs] = weights / weights.sum()
        targets = squared_best_reply(lam, alpha)
        losses = remap_losses(targets, alpha, inputs)
        log_weights += step * (losses - losses.max())
        if round_number >= keep_from:
            seen.append(np.arange(n + 1) * (n + 1) + targets)
    keys = np.unique(np.concatenate(seen))
    return keys // (n + 1), keys % (n + 1)
