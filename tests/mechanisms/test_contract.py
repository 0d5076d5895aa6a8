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


# -- the formulas beside the classes (Liu's bounds, Balle-Wang, the exponential weights) ------------

from dpopt.mechanisms import exponential, gaussian, generalized_gaussian, laplace  # noqa: E402

NAN, INF = float("nan"), float("inf")
FORMULA_CASES = [  # until 2026-11-29 none of these was refused: nan came back, or a raw error, or a hang
    (lambda: gaussian.analytic_sigma(1.0, 1.0, INF), "'delta'"),  # looped for ever
    (lambda: gaussian.analytic_sigma(1.0, 1.0, 1e308), "'delta'"),  # looped for ever
    (lambda: gaussian.analytic_sigma(1e308, 1.0, 1e-5), "'sensitivity'"),  # OverflowError
    (lambda: gaussian.analytic_sigma(-1.0, 1.0, 1e-5), "'sensitivity'"),  # math domain error
    (lambda: gaussian.pdp_sigma(1.0, 1.0, NAN), "'delta'"),  # nan
    (lambda: gaussian.pdp_sigma(1.0, 0.0, 1e-5), "'epsilon'"),  # nan
    (lambda: gaussian.classic_sigma(1.0, 0.0, 1e-5), "'epsilon'"),  # ZeroDivisionError
    (lambda: gaussian.analytic_delta(NAN, 1.0, 1.0), "'sigma'"),  # nan
    (lambda: gaussian.analytic_delta(1.0, 0.0, 1.0), "'sensitivity'"),  # nan
    (lambda: gaussian.lemma11_threshold(NAN), "'epsilon'"),  # nan
    (lambda: generalized_gaussian.lemma9_bound(3, [1.0], [NAN], [2.0]), "'lowers'"),  # nan
    (lambda: generalized_gaussian.lemma9_bound(3, [1.0], [0.0, 1.0], [2.0]), "'uppers'"),
    (lambda: generalized_gaussian.lemma9_bound(10**6, [1.0], [0.0], [2.0]), "'p'"),
    (lambda: generalized_gaussian.utility_sensitivity(2.0, 1.0, NAN), "'width'"),  # nan
    (lambda: generalized_gaussian.exponential_scale(1.0, 1.0, NAN), "'p'"),  # nan
    (lambda: generalized_gaussian.truncated_scale(epsilon=1.0, p=2, sensitivities=1.0, widths=[2.0]), "'sensitivities'"),
    (lambda: exponential.exponential_probabilities([[0.0, 1.0]], NAN, 1.0), "'epsilon'"),  # nan
    (lambda: exponential.exponential_probabilities([[0.0, 1.0]], 1.0, 0.0), "'sensitivity'"),  # nan
    (lambda: exponential.exponential_probabilities([[0.0, INF]], 1.0, 1.0), "'utility'"),  # nan
    (lambda: laplace.laplace_ppf([NAN], 1.0), "'u'"),  # nan
    (lambda: laplace.laplace_ppf([1.5], 1.0), "'u'"),  # nan
    (lambda: laplace.laplace_cdf([0.0], NAN), "'b'"),  # nan
]


@pytest.mark.parametrize("call,field", FORMULA_CASES, ids=[f"case{i}" for i in range(len(FORMULA_CASES))])
def test_the_formulas_refuse_bad_input_naming_the_field(call, field):
    with pytest.raises(InvalidParameterError, match=field):
        call()


def test_the_formulas_still_take_their_edge_values():
    assert gaussian.analytic_delta([1.0, 2.0], 1.0, 0.0).shape == (2,)  # epsilon = 0 is a valid point of the curve
    assert laplace.laplace_ppf([0.0, 1.0], 1.0).tolist() == [-INF, INF]
    assert laplace.laplace_cdf([-INF, INF], 1.0).tolist() == [0.0, 1.0]
    np.testing.assert_allclose(exponential.exponential_probabilities([0.0, 1.0], 2.0, 1.0), [[1 / (1 + np.e), np.e / (1 + np.e)]])


@pytest.mark.parametrize("epsilon,cost,field", [(float("nan"), "absolute", "'epsilon'"), (0.0, "absolute", "'epsilon'"), (1.0, "cubic", "'cost'")])
def test_optimal_gamma_refuses_bad_input(epsilon, cost, field):
    """nan came back as gamma = nan, and an unknown cost as the squared cost's gamma (until 2026-11-29)."""
    from dpopt.mechanisms.staircase import optimal_gamma

    with pytest.raises(InvalidParameterError, match=field):
        optimal_gamma(epsilon, cost)
