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
geometric-kernel sums for the reply and for the losses of a deterministic remap, 1-2 ms
at n = 10,000.

The game is not run to optimality (its gap closes like 1/sqrt(rounds)). What it gives is a
column set: the rows' replies over the last rounds, where lambda has settled. Unlike the
optimal multipliers alone, whose mass sits where the binding inputs are and vanishes
elsewhere, the game keeps every input of S in play (an input served badly gains weight
until its rows move), so its replies also route the rows far from the binding inputs.
Column generation then prices every column and certifies as before; the game only
chooses where it starts.

Measured (a random 10% of the counts, squared loss, alpha = 0.9, n = 10,000, hull 0..9991;
one process, 2026-11-26). 3000 rounds (about 4 s) give 11,494 columns that miss 4,271 of
the 10,641 entries of the certified optimum, yet the first master (with the diagonal)
sits at 177.9113 against the optimum 177.8924 (the usual band and side neighbours:
178.2722) and takes 4-5 s by interior point and crossover (the usual first master:
11.6 s); eight warm rounds follow in under 4 s. With the 1500 rounds used (GAME_ROUNDS)
the cell takes 9.4 s in one process against 32.4 s for the usual start, and 9.8 s through
``benchmarks/count_query.py --side-shape random10`` (31 s before).
Where the game is used, and where it was measured not to pay: :func:`game_applies`.
"""

from __future__ import annotations

import numpy as np

from dpopt.mechanisms.geometric import column_weights
from dpopt.problems.count_query import CountQuery
from dpopt.programs.column_generation.starts import extension_plan
from dpopt.programs.geometric_moments import kernel_moments

__all__ = ["GAME_FROM_ALPHA", "GAME_FROM_N", "GAME_MAX_FRACTION", "game_applies", "game_columns", "remap_losses", "squared_best_reply"]

#: Rounds of the game, and its step eta times the geometric mechanism's loss on an inner
#: input (``2 alpha / (1 - alpha)^2``). Random 10% at alpha = 0.9, n = 10,000 (one process):
#: 3000 rounds at 0.27 12.4 s, 2000 at 0.36 11.3 s, 1500 at 0.45 9.4 s, 1000 at 0.54 9.6 s;
#: another seed 21.4 s (3000) and 19.8 s (1500), a random 20% 32.4 and 30.0 s.
GAME_ROUNDS = 1500
GAME_STEP = 0.45
#: The replies of this last fraction of the rounds become columns.
GAME_KEEP = 0.2
#: After this many rounds the game stops (and the usual start is taken) if its Lagrangian
#: bound shows the optimum within GAME_MIN_GAIN (relative) of the geometric mechanism's
#: worst loss. Measured at alpha = 0.9, n = 10,000 (the bound's gap after 300 rounds; the
#: gain at the optimum): random 5% of the counts 4.4e-2 (3.9e-2), 10% 1.5e-2 (1.2e-2), 20%
#: 2.2e-3 (1.1e-3), where the game paid or broke even, against 30% 4.5e-4 (5e-5) and every
#: 10th or 7th count 2.5e-4 (5e-7), where it did not: every 10th took 66 s with the game
#: against 3.0 s without at n = 5000, and at n = 10,000 HiGHS's interior point crashed the
#: process (a segmentation fault) on the game's first master.
GAME_PROBE = 300
GAME_MIN_GAIN = 1e-3
#: The game starts column generation from this n on ...
GAME_FROM_N = 2000
#: ... and this alpha (below it the identity's basis is nearly optimal and primal simplex
#: finishes the first master cheaply: random 10%, alpha = 0.5, n = 10,000 took 6.3 s with
#: the game against 4.1 s without).
GAME_FROM_ALPHA = 0.8
#: ... where S holds at most this fraction of the counts. Random S at alpha = 0.9, n =
#: 10,000 (one process, 2026-11-26; 3000 rounds at step 0.27, before the probe), with the
#: game against without: 5% 9.4 / 15.4 s, 10%
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


def squared_best_reply(lam: np.ndarray, alpha: float) -> np.ndarray:
    """Each row's best column under multipliers ``lam`` (length n + 1), squared loss.

    Row r's cost of column r' is ``g_r sum_i lam_i alpha^|i-r| (i - r')^2``, a convex
    quadratic in r' least at the kernel-weighted mean of the inputs,
    ``c_r = sum_i lam_i alpha^|i-r| i / sum_i lam_i alpha^|i-r|``; so the integer nearest
    ``c_r``, clipped to 0..n, is a best column (the diagonal where the sums underflow). The
    pricing (:func:`~dpopt.programs.column_generation.pricing.price_columns`) compares the
    two integers around ``c_r`` instead; the two can differ only at a tie.
    """
    n = lam.size - 1
    r = np.arange(n + 1, dtype=float)
    total, moment = kernel_moments(np.stack([lam, lam * r]), alpha, 0).total
    centre = np.divide(moment, total, out=r.copy(), where=total > 0)
    return np.clip(np.floor(centre + 0.5), 0, n).astype(np.int64)


def remap_losses(targets: np.ndarray, alpha: float, inputs: np.ndarray, *, g: np.ndarray | None = None) -> np.ndarray:
    """Squared loss of ``G T`` on ``inputs`` for the deterministic remap ``T[r, targets[r]] = 1``.

    ``loss_i = sum_r g_r alpha^|i-r| (i - t_r)^2 = F(g t^2)_i - 2 i F(g t)_i + i^2 F(g)_i`` with
    ``F`` the two-sided kernel sum (:func:`~dpopt.programs.geometric_moments.kernel_moments`'s
    ``total``; rounding ~1e-8 absolute at n = 10,000). ``g``: the column weights
    (:func:`~dpopt.mechanisms.geometric.column_weights`), if the caller has them already.
    """
    n = targets.size - 1
    g = column_weights(n, alpha) if g is None else g
    t = targets.astype(float)
    zero, first, second = kernel_moments(np.stack([g, g * t, g * t * t]), alpha, 0).total[:, inputs]
    i = inputs.astype(float)
    return second - 2 * i * first + i * i * zero


def game_columns(problem: CountQuery, *, rounds: int | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """Master columns (rows, targets): the best replies of the game's last rounds (squared loss).

    ``rounds`` defaults to GAME_ROUNDS; the replies of the last GAME_KEEP of them are kept.
    None when, after GAME_PROBE rounds, the game's own Lagrangian bound shows that the side
    information gains less than GAME_MIN_GAIN (relative) on the geometric mechanism: there
    the optimum is the identity moved slightly, which the band finds, and the replies
    only move rows it keeps.
    """
    rounds = GAME_ROUNDS if rounds is None else rounds
    n, alpha = problem.n, problem.alpha
    inputs = np.asarray(problem.support)
    step = GAME_STEP * (1 - alpha) ** 2 / (2 * alpha)
    g = column_weights(n, alpha)  # the same every round
    identity = float(remap_losses(np.arange(n + 1), alpha, inputs, g=g).max())
    log_weights = np.zeros(inputs.size)
    lam = np.zeros(n + 1)
    keep_from = rounds - max(1, int(GAME_KEEP * rounds))
    lower, seen = -np.inf, []
    row_keys = np.arange(n + 1) * (n + 1)  # a column's key: r (n + 1) + r'
    for round_number in range(rounds):
        weights = np.exp(log_weights - log_weights.max())
        lam[inputs] = weights / weights.sum()
        targets = squared_best_reply(lam, alpha)
        losses = remap_losses(targets, alpha, inputs, g=g)
        # the reply minimises the lam-weighted loss row by row: a Lagrangian lower bound
        lower = max(lower, float(lam[inputs] @ losses))
        if round_number + 1 == min(GAME_PROBE, rounds) and identity - lower < GAME_MIN_GAIN * identity:
            return None
        log_weights += step * (losses - losses.max())
        if round_number >= keep_from:
            seen.append(row_keys + targets)
    keys = np.unique(np.concatenate(seen))
    return keys // (n + 1), keys % (n + 1)
