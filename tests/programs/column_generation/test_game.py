"""The minimax game's first master (dpopt.programs.column_generation.game) against dense sums and the GS LP."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

import dpopt
from dpopt.mechanisms.geometric import geometric_rows
from dpopt.programs.column_generation import game, solve_by_column_generation
from dpopt.programs.column_generation.pricing import price_columns
from tests.strategies import side_information
from tests.conftest import examples


def _instance(draw, low_n=1, high_n=40):
    n = draw(st.integers(low_n, high_n))
    alpha = draw(st.floats(0.05, 0.97))
    support = draw(side_information(n))
    return n, alpha, np.array(support)


@settings(max_examples=examples(60))
@given(st.data())
def test_remap_losses_equal_the_dense_sum(data):
    n, alpha, support = _instance(data.draw)
    targets = np.array(data.draw(st.lists(st.integers(0, n), min_size=n + 1, max_size=n + 1)))
    dense = (geometric_rows(n, alpha, support) * (support[:, None] - targets[None, :]) ** 2).sum(axis=1)
    assert game.remap_losses(targets, alpha, support) == pytest.approx(dense, rel=1e-9, abs=1e-9)


@settings(max_examples=examples(60))
@given(st.data())
def test_the_best_reply_is_the_pricings_row_minimiser(data):
    """Same column, or (a near tie, where the two routes round differently) the same row cost."""
    n, alpha, support = _instance(data.draw)
    weights = np.array(data.draw(st.lists(st.floats(1e-3, 1.0), min_size=support.size, max_size=support.size)))
    lam = np.zeros(n + 1)
    lam[support] = weights / weights.sum()
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss="squared", side_information=support.tolist())
    pricing = price_columns(problem, lam, sparse.csr_array(sparse.eye(n + 1)))
    reply = game.squared_best_reply(lam, alpha)
    rows = geometric_rows(n, alpha, support) * lam[support][:, None]  # lam_i G[i, r]
    cost = lambda r, column: float((rows[:, r] * (support - column) ** 2).sum())  # noqa: E731
    for r in np.flatnonzero(reply != pricing.row_argmin):
        assert cost(r, reply[r]) == pytest.approx(cost(r, pricing.row_argmin[r]), rel=1e-9, abs=1e-15)


def test_game_columns_give_every_row_a_column_in_range():
    n = 300
    support = np.random.default_rng(3).choice(n + 1, size=30, replace=False)
    problem = dpopt.CountQuery(n=n, alpha=0.9, loss="squared", side_information=sorted(support.tolist()))
    rows, targets = game.game_columns(problem, rounds=200)
    assert set(rows.tolist()) == set(range(n + 1))
    assert targets.min() >= 0 and targets.max() <= n
    assert len(set(zip(rows.tolist(), targets.tolist()))) == rows.size


@pytest.mark.parametrize("problem,applies", [
    (dpopt.CountQuery(n=3000, alpha=0.9, loss="squared", side_information=[0, 7, 100, 2999, 3000]), True),
    (dpopt.CountQuery(n=3000, alpha=0.9, loss="absolute", side_information=[0, 7, 100, 3000]), False),
    (dpopt.CountQuery(n=3000, alpha=0.5, loss="squared", side_information=[0, 7, 100, 3000]), False),
    (dpopt.CountQuery(n=1000, alpha=0.9, loss="squared", side_information=[0, 7, 100, 1000]), False),
    (dpopt.CountQuery(n=3000, alpha=0.9, loss="squared"), False),
    (dpopt.CountQuery(n=3000, alpha=0.9, loss="squared",
                      side_information=sorted({0, 3000} | set(np.random.default_rng(1).choice(3001, 900).tolist()))), False),
    (dpopt.CountQuery(n=10_000, alpha=0.9, loss="squared", side_information=list(range(0, 10_001, 2))), False),
])
def test_the_game_applies_where_it_was_measured_to_pay(problem, applies):
    assert game.game_applies(problem) is applies


@settings(max_examples=examples(25), deadline=None)
@given(st.data())
def test_column_generation_from_the_game_equals_the_gs_lp(data):
    """With the game on at every size, the certified optimum is the LP's (small n, alpha >= 0.8)."""
    n = data.draw(st.integers(2, 25))
    alpha = data.draw(st.floats(0.8, 0.97))
    support = sorted(set(data.draw(side_information(n))) | {0, n})
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss="squared", side_information=support)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(game, "GAME_FROM_N", 0)
        patch.setattr(game, "GAME_MAX_FRACTION", 1.0)
        patch.setattr(game, "GAME_ROUNDS", 300)
        result = solve_by_column_generation(problem, closed_forms=False, split=False)
    lp = dpopt.solve(problem, "lp")
    assert result.within(1e-9, 1e-10)
    assert abs(result.upper_bound - lp.details["solver_objective"]) <= 1e-8 * abs(result.upper_bound) + 1e-9
    assert result.lower_bound <= lp.objective + 1e-9 * abs(lp.objective) + 1e-12
    assert result.mechanism.certificate(problem.epsilon).ok


def test_the_first_master_holds_the_games_columns(monkeypatch):
    """A random 10% of n = 2400 at alpha = 0.9: the game runs once, its columns (with the diagonal) are the
    first master, and the certified optimum is the usual route's."""
    from dpopt.programs.column_generation import solve as loop

    support = sorted(set(np.random.default_rng(0).choice(2401, size=240, replace=False).tolist()) | {0, 2400})
    problem = dpopt.CountQuery(n=2400, alpha=0.9, loss="squared", side_information=support)
    calls = []

    def counted(p):
        calls.append(game.game_columns(p, rounds=300))
        return calls[-1]

    monkeypatch.setattr(loop, "game_columns", counted)
    history = []
    result = solve_by_column_generation(problem, progress=history.append)
    rows, targets = calls[0]
    assert len(calls) == 1
    assert history[0]["columns"] == np.count_nonzero(rows != targets) + 2401
    assert result.within(1e-9, 1e-10)
    monkeypatch.setattr(loop, "game_applies", lambda p: False)  # the band and side neighbours instead
    usual = solve_by_column_generation(problem)
    assert len(calls) == 1
    assert result.upper_bound == pytest.approx(usual.upper_bound, rel=1e-9)
    assert max(result.lower_bound, usual.lower_bound) <= min(result.upper_bound, usual.upper_bound) * (1 + 1e-12)


def test_the_game_gives_way_where_its_bound_shows_little_to_gain():
    """Every 10th count: the Lagrangian bound after GAME_PROBE rounds is within GAME_MIN_GAIN of the
    geometric mechanism's worst loss, so the usual start is taken; a random 5% gains ~4%."""
    n = 3000
    regular = dpopt.CountQuery(n=n, alpha=0.9, loss="squared", side_information=list(range(0, n + 1, 10)))
    assert game.game_applies(regular) and game.game_columns(regular) is None
    sparse_s = sorted({0, n} | set(np.random.default_rng(2).choice(n + 1, size=150, replace=False).tolist()))
    scattered = dpopt.CountQuery(n=n, alpha=0.9, loss="squared", side_information=sparse_s)
    assert game.game_applies(scattered) and game.game_columns(scattered, rounds=400) is not None
