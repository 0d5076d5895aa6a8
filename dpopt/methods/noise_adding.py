"""Methods for :class:`~dpopt.problems.noise_adding.NoiseAdding`.

* ``lp`` -- the window LP with periodic tails (:mod:`dpopt.programs.noise_adding`),
  repaired to exact privacy by mixing with a strictly private member of the family.
* ``staircase`` -- Geng-Viswanath's discrete staircase with the best r (exact; the
  tests hold it equal to the LP for both costs).
* ``geometric`` -- ``p(z) ~ e^(-epsilon |z| / Delta)``: exact for Delta = 1, an upper
  bound otherwise.
* ``laplace_rounded`` -- ``round(Lap(Delta / epsilon))``: always an upper bound.

Every Solution carries the noise as :class:`~dpopt.mechanisms.integer_noise.PeriodicNoise`
(``details["noise"]``), its mechanism matrix for the true values 0..Delta on the
window (releases beyond it clamped to the end columns), and a certificate measured
on the whole integer line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpopt.certificates import Certificate
from dpopt.mechanisms.integer_noise import PeriodicNoise
from dpopt.mechanisms.staircase import DiscreteStaircaseMechanism
from dpopt.problems.noise_adding import NoiseAdding
from dpopt.programs.noise_adding import build_noise_program, mass_vector, repair_window
from dpopt.export import StoredSolution, check_labels, stored_fields
from dpopt.registry import register, register_reader
from dpopt.validation import check_array
from dpopt.sampling import RandomSource
from dpopt.solution import Solution, mechanism_frame
from dpopt.solvers import run_program

KIND = "noise_adding"

__all__ = ["certify_noise", "noise_matrix", "geometric_noise", "rounded_laplace_noise"]


def certify_noise(noise: PeriodicNoise, epsilon: float, *, mixing_weight: float = 0.0) -> Certificate:
    """Privacy of additive integer noise for sensitivity ``noise.period``, on all integers.

    ``worst_pair`` is ``(0, s, z)``: true values 0 and s, release z.
    """
    loss, z, shift = noise.worst_ratio()
    return Certificate.measured(
        loss,
        epsilon,
        (0, shift, z),
        float(noise.window.min()),
        abs(noise.total_mass() - 1.0),
        repair="clip+strict_mix" if mixing_weight else "none",
        mixing_weight=mixing_weight,
        method="measured: window plus one period of each tail (further pairs repeat these)",
    )


def noise_matrix(noise: PeriodicNoise, sensitivity: int) -> pd.DataFrame:
    """Mechanism matrix for true values 0..Delta, releases on the window (ends clamped)."""
    m = noise.half_width
    outputs = np.arange(-m - sensitivity, m + 2 * sensitivity + 1)
    rows = []
    for value in range(sensitivity + 1):
        row = noise.pmf(outputs - value)
        row[0] = noise.cdf(outputs[0] - value)
        row[-1] = 1.0 - noise.cdf(outputs[-1] - 1 - value)
        rows.append(row)
    return mechanism_frame(np.array(rows), rows=range(sensitivity + 1), columns=outputs)


def geometric_noise(problem: NoiseAdding) -> PeriodicNoise:
    """``p(z) ~ alpha^(|z| / Delta)`` on the problem's window (decays by alpha per Delta steps)."""
    return PeriodicNoise.geometric(problem.sensitivity, problem.alpha, problem.window)


def rounded_laplace_noise(problem: NoiseAdding) -> PeriodicNoise:
    """``round(X)`` with ``X ~ Lap(Delta / epsilon)``: post-processing of the Laplace mechanism."""
    m = problem.window
    b = problem.sensitivity / problem.epsilon
    z = np.abs(np.arange(-m, m + 1)).astype(float)
    window = np.where(z == 0, -np.expm1(-0.5 / b), 0.5 * np.exp(-(z - 0.5) / b) * -np.expm1(-1.0 / b))
    return PeriodicNoise(window, problem.sensitivity, problem.alpha)


def _solution(problem: NoiseAdding, noise: PeriodicNoise, certificate: Certificate, **fields: object) -> Solution:
    def sampler(true_value: int, count: int, source: RandomSource) -> np.ndarray:
        return true_value + noise.sample(count, rng=source)

    return Solution(
        problem=problem,
        certificate=certificate,
        dense=noise_matrix(noise, problem.sensitivity),
        objective=noise.moment(problem.power),
        exact=True,
        seconds=0.0,
        details={"noise": noise, "window": problem.window, "noise_pmf": noise.window.tolist()},
        sampler=sampler,
        integer_inputs=True,
        **fields,
    )


def _closed_form(problem: NoiseAdding, noise: PeriodicNoise, method: str) -> Solution:
    return _solution(problem, noise, certify_noise(noise, problem.epsilon), method=method, solver="none", status="closed_form")


def _lp_memory(problem: NoiseAdding) -> tuple[float, str]:
    """The window LP: 2M + 1 variables, one constraint per (z, shift) with |shift| <= Delta."""
    return 600.0 * (2 * problem.window + 1) * (2 * problem.sensitivity + 1), "window"


@register(KIND, "lp", exact=True, uses_solver=True, cost=lambda p: float(p.window * p.sensitivity) ** 2, memory=_lp_memory, summary="window LP with periodic geometric tails")
def solve_lp(problem: NoiseAdding, solver: str | None, repair: bool) -> Solution:
    program, p = build_noise_program(problem)
    info = run_program(program, solver=solver, owner="noise_adding lp")
    if repair:
        window, weight = repair_window(p.value, problem)
    else:  # clip and normalise only; the certificate reports whatever remains
        window, weight = np.clip(p.value, 0.0, None), 0.0
        window = window / (mass_vector(problem.window, problem.sensitivity, problem.alpha) @ window)
    noise = PeriodicNoise(window, problem.sensitivity, problem.alpha)
    solution = _solution(
        problem, noise, certify_noise(noise, problem.epsilon, mixing_weight=weight),
        method="lp", solver=info.solver, status=info.status,
    )
    solution.details["solver_objective"] = info.objective
    return solution


@register(KIND, "staircase", exact=True, uses_solver=False, cost=lambda p: float(p.sensitivity), summary="discrete staircase, best r (Geng-Viswanath)")
def solve_staircase(problem: NoiseAdding, solver: str | None, repair: bool) -> Solution:
    mech = DiscreteStaircaseMechanism(sensitivity=problem.sensitivity, epsilon=problem.epsilon, cost=problem.cost)
    # re-express on the problem's window so every method reports the same grid
    m = problem.window
    noise = PeriodicNoise(mech.pmf(np.arange(-m, m + 1)), problem.sensitivity, problem.alpha)
    solution = _closed_form(problem, noise, "staircase")
    solution.details["r"] = mech.r
    return solution


@register(KIND, "geometric", exact=False, uses_solver=False, cost=lambda p: 1.0, summary="geometric noise alpha^(|z|/Delta) (optimal iff Delta = 1)")
def solve_geometric(problem: NoiseAdding, solver: str | None, repair: bool) -> Solution:
    return _closed_form(problem, geometric_noise(problem), "geometric")


@register(KIND, "laplace_rounded", exact=False, uses_solver=False, cost=lambda p: 1.0, summary="Laplace(Delta/epsilon) rounded to the nearest integer")
def solve_laplace_rounded(problem: NoiseAdding, solver: str | None, repair: bool) -> Solution:
    return _closed_form(problem, rounded_laplace_noise(problem), "laplace_rounded")


@register_reader(KIND)
def read_noise_adding(problem: NoiseAdding, stored: StoredSolution) -> Solution:
    """Rebuild exported noise from its pmf on the window; the matrix stored must be the one it gives."""
    pmf = check_array(stored.summary["noise_pmf"], "noise_pmf", KIND, ndim=1, low=0.0)
    if pmf.size != 2 * problem.window + 1:
        raise stored.fail(f"its noise pmf has {pmf.size} values, not the 2M + 1 = {2 * problem.window + 1} of its window")
    noise = PeriodicNoise(pmf, problem.sensitivity, problem.alpha)
    solution = _solution(problem, noise, certify_noise(noise, problem.epsilon), **stored_fields(stored))
    x = check_labels(stored, list(solution.mechanism.index), list(solution.mechanism.columns))
    if np.abs(x - solution.mechanism.to_numpy()).max() > 1e-12:
        raise stored.fail("its matrix is not the one its noise pmf gives")
    solution.details["read_from"] = str(stored.path)
    return solution
