"""The ``closed_form`` method of :class:`~dpopt.problems.calibration.Calibration`.

Each mechanism's scale comes from its own module (the formulas and their sources
are documented there). The Solution holds parameters instead of a matrix:
``scale`` (sigma for Gaussians, b otherwise; the step width Delta for the
staircase, with its ``gamma``), ``expected_absolute_error`` (also the objective),
and a certificate stating the guarantee and how it is established. Sampling
releases ``true_value + Z``; with a ``grid``, ``laplace`` and ``staircase`` release it rounded to
the grid, drawn exactly (:func:`_rounded`), and the discrete mechanisms add exact integer noise
to the rounded value.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import numpy as np

from dpopt.certificates import Certificate
from dpopt.exact_sampling import EXACT_SAMPLER, offset_exactly
from dpopt.mechanisms.gaussian import GaussianMechanism
from dpopt.mechanisms.generalized_gaussian import (
    GeneralizedGaussianNoise,
    TruncatedGeneralizedGaussianMechanism,
    pdp_scale_monte_carlo,
)
from dpopt.mechanisms.grid_release import ROUNDED_LAPLACE_SAMPLER, GridGaussian, GridLaplace, rounded_laplace_release
from dpopt.mechanisms.integer_noise import PeriodicNoise
from dpopt.mechanisms.laplace import LaplaceMechanism, TruncatedLaplaceMechanism
from dpopt.mechanisms.neighbouring_sets import staircase_noise
from dpopt.mechanisms.piecewise_noise import GRID_SAMPLER
from dpopt.mechanisms.staircase import StaircaseMechanism
from dpopt.problems.calibration import GRID_MECHANISMS, ROUNDED_MECHANISMS, Calibration
from dpopt.export import StoredSolution, stored_fields
from dpopt.registry import register, register_reader
from dpopt.sampling import RandomSource
from dpopt.solution import Solution

KIND = "calibration"

__all__ = ["calibrated_mechanism"]


def calibrated_mechanism(problem: Calibration) -> tuple[Any, dict[str, Any], Certificate]:
    """The calibrated mechanism object, its parameters, and its certificate."""
    builder = _BUILDERS[problem.mechanism]
    return builder(problem)


def _certificate(loss: float, problem: Calibration, how: str, delta: float = 0.0) -> Certificate:
    return Certificate.measured(loss, problem.epsilon, (0, 1, 0), 0.0, 0.0, method=how, delta=delta)


def _laplace(problem: Calibration) -> tuple[Any, dict[str, Any], Certificate]:
    if problem.lower is None:
        mech = LaplaceMechanism(sensitivity=problem.sensitivity, epsilon=problem.epsilon)
        cert = _certificate(mech.privacy_loss(), problem, "by_construction: Laplace, b = Delta / epsilon")
        return mech, {"scale": mech.scale, "expected_absolute_error": mech.expected_absolute_error()}, cert
    mech = TruncatedLaplaceMechanism(sensitivity=problem.sensitivity, epsilon=problem.epsilon, lower=problem.lower, upper=problem.upper)
    cert = _certificate(mech.privacy_loss(), problem, "computed: exact worst-case log ratio of the truncated Laplace")
    errors = [_truncated_error(mech, s) for s in np.linspace(problem.lower, problem.upper, 21)]
    return mech, {"scale": mech.scale, "expected_absolute_error": max(errors), "expected_absolute_error_at": "worst true value"}, cert


def _truncated_error(mech: Any, true_value: float) -> float:
    grid = np.linspace(mech.lower, mech.upper, 4001)
    dens = mech.pdf(grid, true_value)
    return float(np.trapezoid(np.abs(grid - true_value) * dens, grid))


def _geometric(problem: Calibration) -> tuple[Any, dict[str, Any], Certificate]:
    delta = int(problem.sensitivity)
    noise = PeriodicNoise.geometric(delta, problem.alpha)
    cert = _certificate(noise.privacy_loss(), problem, "measured: two-sided geometric noise on all integers")
    scale = delta / problem.epsilon  # p(z) ~ exp(-|z| / b)
    return noise, {"scale": scale, "expected_absolute_error": noise.moment(1)}, cert


def _staircase(problem: Calibration) -> tuple[Any, dict[str, Any], Certificate]:
    mech = StaircaseMechanism(sensitivity=problem.sensitivity, epsilon=problem.epsilon)
    cert = _certificate(mech.privacy_loss(), problem, "by_construction: staircase steps of width Delta decay by e^-epsilon")
    return mech, {"scale": mech.scale, "gamma": mech.gamma, "expected_absolute_error": mech.expected_absolute_error()}, cert


def _gaussian(calibration: str) -> Any:
    def build(problem: Calibration) -> tuple[Any, dict[str, Any], Certificate]:
        mech = GaussianMechanism(sensitivity=problem.sensitivity, epsilon=problem.epsilon, delta=problem.delta, calibration=calibration)
        achieved = mech.achieved_delta()
        how = {
            "classic": "by_construction: Dwork-Roth Theorem A.1 (epsilon < 1)",
            "pdp": "by_construction: Liu Lemma 10 ((epsilon, delta)-pDP); exact DP delta reported",
            "analytic": "computed: Balle-Wang exact (epsilon, delta) condition",
        }[calibration]
        loss = problem.epsilon if achieved <= problem.delta else np.inf  # no tolerance: the target is met or not
        cert = _certificate(loss, problem, how, delta=problem.delta)
        params = {"scale": mech.sigma, "expected_absolute_error": mech.expected_absolute_error(), "achieved_delta": achieved}
        return mech, params, cert

    return build


def _generalized_gaussian(problem: Calibration) -> tuple[Any, dict[str, Any], Certificate]:
    estimate = pdp_scale_monte_carlo(epsilon=problem.epsilon, delta=problem.delta, p=problem.p, sensitivities=[problem.sensitivity])
    # the Monte Carlo bound is raised by three standard errors so that it errs on the safe side
    scale = estimate.scale + 3.0 * estimate.standard_error
    noise = GeneralizedGaussianNoise(scale=scale, p=problem.p)
    cert = _certificate(problem.epsilon, problem, "estimated: Liu Lemma 5 by Monte Carlo ((epsilon, delta)-pDP), +3 standard errors", delta=problem.delta)
    params = {
        "scale": scale,
        "scale_estimate": estimate.scale,
        "standard_error": estimate.standard_error,
        "monte_carlo_seed": estimate.seed,
        "monte_carlo_draws": estimate.draws * len(estimate.replicates),
        "expected_absolute_error": noise.expected_absolute_error(),
    }
    return noise, params, cert


def _truncated_generalized_gaussian(problem: Calibration) -> tuple[Any, dict[str, Any], Certificate]:
    mech = TruncatedGeneralizedGaussianMechanism(
        sensitivity=problem.sensitivity, epsilon=problem.epsilon, p=problem.p, lower=problem.lower, upper=problem.upper
    )
    cert = _certificate(mech.log_ratio_bound(), problem, "by_construction: Liu Eq. (8); loss measured on a grid")
    errors = [_truncated_error(mech, s) for s in np.linspace(problem.lower, problem.upper, 21)]
    return mech, {"scale": mech.scale, "expected_absolute_error": max(errors), "expected_absolute_error_at": "worst true value"}, cert


def _discrete_laplace(problem: Calibration) -> tuple[Any, dict[str, Any], Certificate]:
    mech = GridLaplace(problem.sensitivity, problem.epsilon, problem.grid or 1.0)
    cert = _certificate(mech.privacy_loss(), problem, f"exact: discrete Laplace on the grid, loss S / t with S = {mech.steps} grid steps")
    return mech, {"scale": float(mech.scale) * mech.grid, "grid": mech.grid, "grid_steps": mech.steps,
                  "discrete_scale": str(mech.scale), "expected_absolute_error": mech.expected_absolute_error()}, cert


def _discrete_gaussian(problem: Calibration) -> tuple[Any, dict[str, Any], Certificate]:
    mech = GridGaussian(problem.sensitivity, problem.epsilon, problem.delta, problem.grid or 1.0)
    cert = _certificate(problem.epsilon, problem, f"computed: CKS Theorem 7 delta(epsilon) = {mech.achieved_delta:.4g} of the discrete "
                        f"Gaussian for S = {mech.steps} grid steps", delta=problem.delta)
    return mech, {"scale": float(mech.sigma2) ** 0.5 * mech.grid, "grid": mech.grid, "grid_steps": mech.steps,
                  "discrete_sigma2": str(mech.sigma2), "achieved_delta": mech.achieved_delta,
                  "expected_absolute_error": mech.expected_absolute_error()}, cert


_BUILDERS = {
    "discrete_laplace": _discrete_laplace,
    "discrete_gaussian": _discrete_gaussian,
    "laplace": _laplace,
    "geometric": _geometric,
    "staircase": _staircase,
    "gaussian_classic": _gaussian("classic"),
    "gaussian_pdp": _gaussian("pdp"),
    "gaussian_analytic": _gaussian("analytic"),
    "generalized_gaussian": _generalized_gaussian,
    "truncated_generalized_gaussian": _truncated_generalized_gaussian,
}


def _rounded(problem: Calibration, mech: Any, params: dict[str, Any], cert: Certificate) -> tuple[Any, dict[str, Any], Certificate, str]:
    """A ``laplace`` or ``staircase`` calibration released on ``problem.grid``: the exact draw, its parameters,
    certificate and sampler description.

    The Laplace release is :func:`~dpopt.mechanisms.grid_release.rounded_laplace` around the exact
    true value; the staircase is drawn as its piecewise density
    (:func:`~dpopt.mechanisms.neighbouring_sets.staircase_noise`, :meth:`PiecewiseNoise.grid_release`),
    whose privacy loss over every shift in [-Delta, Delta] is measured for the certificate, since
    that density (breaks in float64) is what is sampled. ``expected_absolute_error`` becomes the
    bound ``E|Z| + grid / 2``.
    """
    g = problem.grid
    params = {**params, "grid": g, "expected_absolute_error": params["expected_absolute_error"] + g / 2}
    if problem.mechanism == "laplace":
        def draw(true_value: float, count: int, source: RandomSource) -> np.ndarray:
            return rounded_laplace_release(Fraction(true_value), mech.scale, g, count, source)

        return draw, params, cert, ROUNDED_LAPLACE_SAMPLER
    noise = staircase_noise(problem.sensitivity, problem.epsilon, mech.gamma)
    loss, z, shift = noise.privacy_loss(np.array([[-problem.sensitivity, problem.sensitivity]]))
    cert = _certificate(loss, problem, f"measured: the staircase as pieces, every shift in [-Delta, Delta]; worst at z = {z:.6g}, v = {shift:.6g}")
    return (lambda true_value, count, source: noise.grid_release(true_value, g, count, source)), params, cert, GRID_SAMPLER


def _releases_exactly(problem: Calibration) -> bool:
    """Whether :func:`solve_closed_form` hands back an exact sampler for ``problem``."""
    return _sampling(problem.mechanism) is not None or (problem.grid is not None and problem.mechanism in ROUNDED_MECHANISMS)


@register(KIND, "closed_form", parameters=True, exact=True, uses_solver=False, cost=lambda p: 1.0, releases=_releases_exactly,
          summary="the mechanism's own calibration formula")
def solve_closed_form(problem: Calibration, solver: str | None, repair: bool) -> Solution:
    mech, params, cert = calibrated_mechanism(problem)
    rounded, sampling = None, _sampling(problem.mechanism)
    if problem.grid is not None and problem.mechanism in ROUNDED_MECHANISMS:
        rounded, params, cert, sampling = _rounded(problem, mech, params, cert)

    def sampler(true_value: float, count: int, source: RandomSource) -> np.ndarray:
        if rounded is not None:
            return rounded(true_value, count, source)
        if isinstance(mech, PeriodicNoise):
            return offset_exactly(round(true_value), mech.sample(count, rng=source))
        if isinstance(mech, (GridLaplace, GridGaussian)):
            return mech.sample(true_value, count, rng=source)
        return mech.sample(true_value, count, rng=source, exact=False)  # Solution.sample gates the float path

    params = {"mechanism": problem.mechanism, **params}
    return Solution(
        problem=problem,
        method="closed_form",
        exact=True,
        solver="none",
        status="monte_carlo" if problem.mechanism == "generalized_gaussian" else "closed_form",
        seconds=0.0,
        objective=float(params["expected_absolute_error"]),
        certificate=cert,
        parameters=params,
        sampler=sampler,
        integer_inputs=problem.mechanism == "geometric",
        sampling=sampling,
    )


def _sampling(mechanism: str) -> str | None:
    if mechanism in GRID_MECHANISMS:
        return "exact: rounded to the grid in rational arithmetic, exact discrete noise (CKS 2020)"
    if mechanism == "geometric":
        return EXACT_SAMPLER
    return None  # the float path, labelled so by Solution


@register_reader(KIND)
def read_calibration(problem: Calibration, stored: StoredSolution) -> Solution:
    """Recompute the calibration of the file's problem; the stored scale must be that one."""
    fresh = solve_closed_form(problem, None, True)
    stored_scale = stored.meta["parameters"]["scale"]
    if not isinstance(stored_scale, (int, float)) or not np.isclose(fresh.parameters["scale"], stored_scale, rtol=1e-9, atol=0.0):
        raise stored.fail(f"the scale read ({stored_scale}) is not the calibration of its problem ({fresh.parameters['scale']})")
    return dataclasses.replace(fresh, method=stored_fields(stored)["method"])
