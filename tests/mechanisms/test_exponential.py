"""Exponential mechanism: Lemma 7's actual privacy cost."""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy import stats

from dpopt.mechanisms.exponential import ExponentialMechanism
from dpopt.validation import InvalidParameterError


@given(
    seed=st.integers(0, 2**32 - 1),
    datasets=st.integers(2, 6),
    outputs=st.integers(2, 6),
    epsilon=st.floats(0.05, 5.0),
)
def test_actual_cost_is_below_epsilon(seed, datasets, outputs, epsilon):
    u = np.random.default_rng(seed).uniform(-3, 3, size=(datasets, outputs))
    mech = ExponentialMechanism(utility=u, epsilon=epsilon)
    assert mech.actual_privacy_cost() < epsilon
    assert mech.certificate().ok


@given(seed=st.integers(0, 2**32 - 1), outputs=st.integers(2, 7), epsilon=st.floats(0.05, 5.0))
def test_cost_is_half_epsilon_when_the_normaliser_is_constant(seed, outputs, epsilon):
    rng = np.random.default_rng(seed)
    base = rng.uniform(0, 2, size=outputs)
    u = np.stack([base, np.roll(base, 1)])  # a permutation: same normaliser
    mech = ExponentialMechanism(utility=u, epsilon=epsilon)
    assert not mech.normaliser_depends_on_data()
    shifts = np.abs(u[0] - u[1])
    assert mech.actual_privacy_cost() == pytest.approx(epsilon / 2 * shifts.max() / mech.sensitivity, rel=1e-9)


def test_sampler_chi_square():
    mech = ExponentialMechanism(utility=[[1, 3, 2, 3, 1]], epsilon=2.0)
    draws = mech.sample(0, 50_000, rng=41)
    observed = np.bincount(draws, minlength=5)
    assert stats.chisquare(observed, mech.matrix[0] * draws.size).pvalue > 1e-3


def test_bad_input_named():
    with pytest.raises(InvalidParameterError, match="'utility'"):
        ExponentialMechanism(utility=[[1.0]], epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="'sensitivity'"):
        ExponentialMechanism(utility=[[0, 1], [1, 0]], epsilon=1.0, sensitivity=0.5)
    with pytest.raises(InvalidParameterError, match="'neighbours'"):
        ExponentialMechanism(utility=[[0, 1], [1, 0]], epsilon=1.0, neighbours=[[0, 2]])
