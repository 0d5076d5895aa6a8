"""Ladder mechanism (Wu-Xia-He Example 10): distribution, sampler, and the 2 epsilon guarantee."""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy import stats

from dpopt.certificates import certify
from dpopt.mechanisms.ladder import LadderMechanism, ladder_matrix, ladders_from_universe
from dpopt.validation import InvalidParameterError


def test_pmf_sums_to_one_and_decays_by_rung():
    mech = LadderMechanism(ladder=(1, 2, 3), epsilon=0.5)
    z = np.arange(-2000, 2001)
    assert mech.pmf(z).sum() == pytest.approx(1.0, abs=1e-12)
    assert mech.pmf(1) / mech.pmf(2) == pytest.approx(np.exp(0.5))  # rung 0 ends at 1, rung 1 at 3
    assert mech.pmf(2) == mech.pmf(3)


def test_sampler_chi_square():
    mech = LadderMechanism(ladder=(0, 1, 2), epsilon=0.7)
    draws = mech.sample(10, 100_000, rng=61) - 10
    values = np.arange(-10, 11)
    observed = np.array([(draws == v).sum() for v in values] + [(np.abs(draws) > 10).sum()])
    expected = np.append(mech.pmf(values), 1 - mech.pmf(values).sum()) * draws.size
    assert stats.chisquare(observed, expected).pvalue > 1e-3


@pytest.mark.parametrize("ladder", [(0, 0, 1, 3), (0, 0, 0), (2, 2)])
def test_sampler_chi_square_with_empty_rungs_and_no_tail(ladder):
    """A step of 0 leaves a rung empty (never drawn); a last step of 0 leaves no tail."""
    mech = LadderMechanism(ladder=ladder, epsilon=0.6)
    draws = mech.sample(0, 60_000, rng=5)
    values = np.arange(-12, 13)
    observed = np.array([(draws == v).sum() for v in values] + [(np.abs(draws) > 12).sum()])
    expected = np.append(mech.pmf(values), 1 - mech.pmf(values).sum()) * draws.size
    keep = expected > 0
    assert observed[~keep].sum() == 0
    assert keep.sum() == 1 or stats.chisquare(observed[keep], expected[keep]).pvalue > 1e-3


def test_rung_weights_are_never_flushed_to_zero(monkeypatch):
    """epsilon = 40 over 30 rungs: e^(-40 i) underflows from rung 19 on, so float weights would put 0
    beside a neighbour's non-zero; the rung is drawn from its logits, never from float weights."""
    import dpopt.exact_sampling as es
    import dpopt.mechanisms.ladder as ladder

    seen = []
    real = es.exact_choice_logits

    def spy(logits, count, source):
        seen.append(np.asarray(logits))
        return real(logits, count, source)

    monkeypatch.setattr(ladder, "exact_choice_logits", spy)
    mech = LadderMechanism(ladder=tuple(range(1, 31)), epsilon=40.0)
    assert (np.abs(mech.sample(0, 1000, rng=2)) <= 1).all()  # S_0 = {-1, 0, 1}; the rest has weight below e^-40
    assert seen and seen[0].size == 31 and np.exp(seen[0]).min() == 0.0 and (es.dyadic_exp(seen[0])[0] > 0).all()


def test_ladders_of_a_path():
    # f on a path of 4 datasets: local sensitivities 2, 3, 3, 1
    ladders = ladders_from_universe([0, 2, 5, 6], [[0, 1], [1, 2], [2, 3]])
    np.testing.assert_array_equal(ladders[0], [2, 3, 3, 3])
    np.testing.assert_array_equal(ladders[3], [1, 3, 3, 3])


@given(seed=st.integers(0, 2**32 - 1), size=st.integers(2, 7), epsilon=st.floats(0.1, 2.0))
def test_ladder_mechanism_is_two_epsilon_private(seed, size, epsilon):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 10, size=size)
    chain = [[i, i + 1] for i in range(size - 1)]
    extra = [[int(a), int(b)] for a, b in rng.integers(0, size, size=(2, 2)) if a != b]
    pairs = np.array(chain + extra)
    matrix, _ = ladder_matrix(values, pairs, epsilon)
    np.testing.assert_allclose(matrix.sum(axis=1), 1.0, atol=1e-12)
    assert certify(matrix, 2 * epsilon, pairs=pairs).ok


def test_epsilon_alone_is_not_enough():
    matrix, _ = ladder_matrix([0, 2, 5, 6], [[0, 1], [1, 2], [2, 3]], 0.7)
    assert certify(matrix, 0.7, pairs=np.array([[0, 1], [1, 2], [2, 3]])).max_privacy_loss > 0.7


def test_ladders_of_real_values_are_real_jumps():
    # values 0, 0.5, 1.0, 1.7 on a path: local sensitivities 0.5, 0.5, 0.7, 0.7 (truncating
    # the values to integers would give 0, 1, 1, 0)
    ladders = ladders_from_universe([0.0, 0.5, 1.0, 1.7], [[0, 1], [1, 2], [2, 3]])
    np.testing.assert_allclose(ladders[0], [0.5, 0.5, 0.7, 0.7])
    np.testing.assert_allclose(ladders[3], [0.7, 0.7, 0.7, 0.7])


def test_the_count_query_ladder_matrix_takes_integers_only():
    with pytest.raises(InvalidParameterError, match="'values'"):
        ladder_matrix([0, 0.5, 2], [[0, 1], [1, 2]], 1.0)


def test_bad_ladders_rejected():
    with pytest.raises(InvalidParameterError, match="'ladder'"):
        LadderMechanism(ladder=(3, 1), epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="'neighbours'"):
        ladders_from_universe([0, 1, 2], [[0, 1]])  # disconnected


@pytest.mark.parametrize("true_value", [-(2**63), 2**63 + 5, 10**30])
def test_releases_are_exact_integers_around_any_true_value(true_value):
    # until 2026-11-29 true value + offset was int64 arithmetic: -2**63 wrapped to releases near
    # +9.2e18, and a true value beyond int64 was an OverflowError
    mech = LadderMechanism(ladder=(1, 2, 3), epsilon=1.0)
    offsets = [int(r) - true_value for r in mech.sample(true_value, 200, rng=8)]
    assert offsets == mech.sample(0, 200, rng=8).tolist()
