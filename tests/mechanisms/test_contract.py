"""Contract tests over every closed-form mechanism class: one validation path, seeded repeats, repr."""

import numpy as np
import pytest

from dpopt.mechanisms.exponential import ExponentialMechanism
from dpopt.mechanisms.gaussian import GaussianMechanism
from dpopt.mechanisms.generalized_gaussian import GeneralizedGaussianNoise, TruncatedGeneralizedGaussianMechanism
from dpopt.mechanisms.ladder import LadderMechanism
from dpopt.mechanisms.laplace import LaplaceMechanism, ThresholdedLaplaceMechanism, TruncatedLaplaceMechanism
from dpopt.mechanisms.randomized_response import RandomizedResponse
from dpopt.mechanisms.staircase import DiscreteStaircaseMechanism, StaircaseMechanism
from dpopt.validation import InvalidParameterError

#: class -> (valid keyword arguments, a true value to sample at)
MECHANISMS = {
    LaplaceMechanism: (dict(sensitivity=1.0, epsilon=0.5), 3.0),
    TruncatedLaplaceMechanism: (dict(sensitivity=1.0, epsilon=0.5, lower=0.0, upper=5.0), 3.0),
    ThresholdedLaplaceMechanism: (dict(sensitivity=1.0, epsilon=0.5, lower=0.0, upper=5.0), 3.0),
    StaircaseMechanism: (dict(sensitivity=1.0, epsilon=0.5), 3.0),
    DiscreteStaircaseMechanism: (dict(sensitivity=2, epsilon=0.5), 3),
    GaussianMechanism: (dict(sensitivity=1.0, epsilon=0.5, delta=1e-5), 3.0),
    TruncatedGeneralizedGaussianMechanism: (dict(sensitivity=1.0, epsilon=0.5, p=2, lower=0.0, upper=5.0), 3.0),
    RandomizedResponse: (dict(k=3, epsilon=0.5), 2),
    LadderMechanism: (dict(ladder=(1, 2), epsilon=0.5), 3),
    ExponentialMechanism: (dict(utility=[[0.0, 1.0, 2.0]], epsilon=0.5), 0),
}
EPSILON_TAKERS = list(MECHANISMS)


@pytest.mark.parametrize("cls", EPSILON_TAKERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), "1", True])
def test_bad_epsilon_is_rejected_with_the_standard_message(cls, bad):
    kwargs, _ = MECHANISMS[cls]
    with pytest.raises(InvalidParameterError, match=r"The 'epsilon' parameter of .* must be .* Got .* instead\."):
        cls(**{**kwargs, "epsilon": bad})


@pytest.mark.parametrize("cls", EPSILON_TAKERS, ids=lambda c: c.__name__)
def test_construction_is_keyword_only_repr_works_and_seeded_draws_repeat(cls):
    kwargs, value = MECHANISMS[cls]
    with pytest.raises(TypeError):
        cls(*kwargs.values())
    mech = cls(**kwargs)
    assert cls.__name__ in repr(mech)
    exact = _has_exact_sampler(mech, value)
    kwargs = {} if exact else {"exact": False}
    np.testing.assert_array_equal(mech.sample(value, 25, rng=5, **kwargs), mech.sample(value, 25, rng=5, **kwargs))
    assert not np.array_equal(mech.sample(value, 25, rng=5, **kwargs), mech.sample(value, 25, rng=6, **kwargs))


def _has_exact_sampler(mech, value) -> bool:
    """Floating-point samplers refuse to run without exact=False; exact ones take no such flag."""
    try:
        mech.sample(value, 1, rng=0)
    except InvalidParameterError as exc:
        assert "exact" in str(exc)
        return False
    return True


@pytest.mark.parametrize("cls", [c for c in EPSILON_TAKERS if "sensitivity" in MECHANISMS[c][0]], ids=lambda c: c.__name__)
def test_bad_sensitivity_is_rejected(cls):
    kwargs, _ = MECHANISMS[cls]
    with pytest.raises(InvalidParameterError, match="'sensitivity'"):
        cls(**{**kwargs, "sensitivity": -1})


def test_generalized_gaussian_noise_contract():
    with pytest.raises(InvalidParameterError, match="'scale'"):
        GeneralizedGaussianNoise(scale=0.0, p=2.0)
    noise = GeneralizedGaussianNoise(scale=1.0, p=3.0)
    np.testing.assert_array_equal(noise.sample(0.0, 10, rng=1, exact=False), noise.sample(0.0, 10, rng=1, exact=False))
