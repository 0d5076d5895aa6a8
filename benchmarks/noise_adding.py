"""Integer noise at large sensitivity: the closed forms' solve, certificate and exact draws.

    python benchmarks/noise_adding.py [--tables 1 2 3 4] [--sensitivities 100 1000 5000 100000] [--draws 1000]
        [--lp-sensitivities 50 100 200 300] [--repair-sensitivities 1 2 5 20 100] [--repair-epsilons 2 5 8 ...]

For each Delta, ``dpopt.solve(NoiseAdding(sensitivity=Delta, epsilon=1), "staircase")`` then
``--draws`` exact releases: wall time and tracemalloc peak. The baseline, run in the same
process, is the route this replaced (session 24): the best step width r found by building
each candidate's noise on its window (O(Delta^2)) and the (Delta + 1) x (2M + 3 Delta + 1)
mechanism matrix built with every solution. It is not run where that matrix would not fit
in memory (its size is printed instead). ``ratio`` = baseline time / new time.

The second table times ``--draws`` exact releases from that noise alone (its window and tail
periods: 6 Delta + 1 weights) through :func:`dpopt.exact_sampling.exact_choice`, which draws a
block of weights first from 65,536 weights on (:class:`~dpopt.exact_sampling.BlockedDiscrete`),
against :class:`~dpopt.exact_sampling.ExactDiscrete` over all of them (the route before, same
process); both are exact.

The third table times the program itself, ``lp`` (build, solve, repair): its privacy rows
through a range-maximum table once Delta > 64 and HiGHS's interior point, against the route
before session 25 in the same process: one row per (value, shift), 2 Delta per value, and
HiGHS's defaults. Both are checked against the staircase's closed form. The baseline is run
up to ``--lp-baseline-max`` (at Delta = 300 its matrix has 1.1 million rows).

The fourth table is about accuracy, not speed: one LP solve per cost, Delta and epsilon,
repaired by the smallest private majorant (``lp`` since 2026-11-28) and by the mix with the
strict member (before), each against the discrete staircase.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

import dpopt
from dpopt.exact_sampling import ExactDiscrete, exact_choice
from dpopt.limits import memory_limit
from dpopt.mechanisms.integer_noise import PeriodicNoise
from dpopt.mechanisms.staircase import discrete_staircase_noise
from dpopt.lazy_modules import cvxpy as cp
from dpopt.methods.noise_adding import noise_matrix, repair_lp_window, window_lp_highs
from dpopt.programs.noise_adding import (build_noise_program, cost_vector, mass_vector, noise_objective_scale, mix_with_strict, privacy_matrix,
                                         repair_window, strictly_private_window)
from dpopt.solvers import run_program
from count_query import measure  # same folder: one way to measure


def new_route(delta: int, draws: int) -> float:
    solution = dpopt.solve(dpopt.NoiseAdding(sensitivity=delta, epsilon=1.0), "staircase")
    assert solution.certificate.ok
    solution.sample(0, draws, rng=1)
    return solution.objective


def old_route(delta: int, draws: int) -> float:
    """Every r's noise on its window, the best one's matrix, its certificate and draws."""
    costs = [discrete_staircase_noise(delta, 1.0, r).moment(1) for r in range(1, delta + 1)]
    r = 1 + int(np.argmin(costs))
    m = 2 * delta
    noise = PeriodicNoise(discrete_staircase_noise(delta, 1.0, r).pmf(np.arange(-m, m + 1)), delta, float(np.exp(-1.0)))
    noise_matrix(noise, delta)
    assert noise.privacy_loss() <= 1.0 + 1e-12
    noise.sample(draws, rng=1)
    return noise.moment(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sensitivities", type=int, nargs="+", default=[100, 1000, 5000, 100_000])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--release-sensitivities", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--lp-sensitivities", type=int, nargs="+", default=[50, 100, 200, 300, 500, 1000])
    parser.add_argument("--lp-baseline-max", type=int, default=300)
    parser.add_argument("--repair-sensitivities", type=int, nargs="+", default=[1, 2, 5, 20, 100])
    parser.add_argument("--repair-epsilons", type=float, nargs="+", default=[2, 5, 8, 10, 12, 15, 20, 25, 30])
    parser.add_argument("--tables", type=int, nargs="+", choices=[1, 2, 3, 4], default=[1, 2, 3, 4])
    args = parser.parse_args()
    new_route(10, 1), old_route(10, 1)  # imports and first-call set-up outside the measurements
    rows = []
    for delta in args.sensitivities if 1 in args.tables else []:
        objective, seconds, peak = measure(lambda: new_route(delta, args.draws))
        matrix_bytes = 8.0 * (delta + 1) * (7 * delta + 1)
        row = {"sensitivity": delta, "seconds": seconds, "peak_MiB": peak, "objective": objective}
        if 4 * matrix_bytes <= memory_limit() and delta <= 5000:
            base_objective, base_seconds, base_peak = measure(lambda: old_route(delta, args.draws))
            row.update(baseline_seconds=base_seconds, baseline_peak_MiB=base_peak, same_objective=abs(base_objective - objective) <= 1e-9 * objective,
                       ratio=base_seconds / seconds, memory_ratio=base_peak / peak)
        else:
            row.update(baseline_seconds=f"not run: its matrix is {matrix_bytes / 2**30:.3g} GiB of floats")
        rows.append(row)
        print(f"Delta = {delta}: done", flush=True)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        if rows:
            print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        if 2 in args.tables:
            print(f"\n{args.draws} exact draws from the staircase noise's 6 Delta + 1 weights: blocks first against all weights at once")
            print(release_table(args.release_sensitivities, args.draws).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        if 3 in args.tables:
            print("\nThe window LP (epsilon = 1, absolute cost): build, solve, repair; baseline = one row per (value, shift), HiGHS's defaults")
            print(lp_table(args.lp_sensitivities, args.lp_baseline_max).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        if 4 in args.tables:
            print("\nThe window LP's repair, majorant against the strict member's mix (one solve each; gaps relative to the staircase)")
            print(repair_table(args.repair_sensitivities, args.repair_epsilons).to_string(index=False, float_format=lambda v: f"{v:.3g}"))


def lp_route(problem: dpopt.NoiseAdding) -> float:
    """``lp`` as dpopt runs it: range-maximum rows (Delta > 64) and the interior point first; E|Z| after the repair."""
    program, window = build_noise_program(problem)
    run_program(program, owner="benchmark", highs_first=window_lp_highs(problem))
    repaired, _ = repair_lp_window(window.value, problem)
    return float(cost_vector(problem.window, problem.sensitivity, problem.alpha, 1) @ repaired.window)


def repair_table(sensitivities: list[int], epsilons: list[float]) -> pd.DataFrame:
    """One LP solve per (cost, Delta, epsilon), repaired both ways: ``lp``'s repair (the majorant since
    2026-11-28, ``majorant_certified``; the mix should it fail) and the mix with the strict member
    alone (before); each objective's relative gap to the discrete staircase, and the solver's own."""
    rows = []
    for cost in ("absolute", "squared"):
        for delta in sensitivities:
            for epsilon in epsilons:
                problem = dpopt.NoiseAdding(sensitivity=delta, epsilon=epsilon, cost=cost)
                program, window = build_noise_program(problem)
                info = run_program(program, owner="benchmark", highs_first=window_lp_highs(problem))
                costs = cost_vector(problem.window, delta, problem.alpha, problem.power)
                closed_form = dpopt.solve(problem, "staircase").objective
                raised, certificate = repair_lp_window(window.value, problem)
                mixed, weight = repair_window(window.value, problem)
                rows.append({"cost": cost, "sensitivity": delta, "epsilon": epsilon, "solver_gap": info.objective / noise_objective_scale(problem) / closed_form - 1,
                             "lp_repair_gap": float(costs @ raised.window) / closed_form - 1,
                             "majorant_certified": certificate.repair == "clip+majorant",
                             "mix_gap": float(costs @ mixed) / closed_form - 1, "mix_weight": weight})
    return pd.DataFrame(rows)


def lp_baseline(problem: dpopt.NoiseAdding) -> float:
    """The route before: one row per (value, shift), HiGHS's defaults, repaired through that matrix."""
    m, d, b = problem.window, problem.sensitivity, problem.alpha
    rows, mass = privacy_matrix(m, d, b), mass_vector(m, d, b)
    window = cp.Variable(2 * m + 1, nonneg=True)
    run_program(cp.Problem(cp.Minimize(cost_vector(m, d, b, 1) @ window), [rows @ window <= 0, mass @ window == 1]), owner="benchmark")
    p = np.clip(window.value, 0.0, None)
    repaired, _ = mix_with_strict(p / (mass @ p), strictly_private_window(m, d, b), rows)
    return float(cost_vector(m, d, b, 1) @ repaired)


def lp_table(sensitivities: list[int], baseline_max: int) -> pd.DataFrame:
    rows = []
    for delta in sensitivities:
        problem = dpopt.NoiseAdding(sensitivity=delta, epsilon=1.0)
        closed_form = dpopt.solve(problem, "staircase").objective
        objective, seconds, peak = measure(lambda: lp_route(problem))
        size = 2 * problem.window + 1 + 2 * delta  # the window and one period each side
        row = {"sensitivity": delta, "pair rows": 2 * (delta * size - delta * (delta + 1) // 2), "seconds": seconds, "peak_MiB": peak,
               "relative_gap_to_staircase": objective / closed_form - 1}
        if delta <= baseline_max:
            base_objective, base_seconds, base_peak = measure(lambda: lp_baseline(problem))
            row.update(baseline_seconds=base_seconds, baseline_peak_MiB=base_peak, ratio=base_seconds / seconds,
                       memory_ratio=base_peak / peak, baseline_gap_to_staircase=base_objective / closed_form - 1)
        rows.append(row)
        print(f"lp, Delta = {delta}: done", flush=True)
    return pd.DataFrame(rows)


def release_table(sensitivities: list[int], draws: int) -> pd.DataFrame:
    rows = []
    for delta in sensitivities:
        noise = dpopt.solve(dpopt.NoiseAdding(sensitivity=delta, epsilon=1.0), "staircase").details["noise"]
        m = noise.half_width
        weights = noise.pmf(np.arange(-m - delta, m + delta + 1))  # as many as its sampler draws from
        _, seconds, peak = measure(lambda: exact_choice(weights, draws, np.random.default_rng(1)))
        _, base_seconds, base_peak = measure(lambda: ExactDiscrete(weights).sample(draws, np.random.default_rng(1)))
        rows.append({"sensitivity": delta, "weights": weights.size, "seconds": seconds, "peak_MiB": peak,
                     "all_weights_seconds": base_seconds, "all_weights_peak_MiB": base_peak,
                     "ratio": base_seconds / seconds, "memory_ratio": base_peak / peak})
    return pd.DataFrame(rows)


if __name__ == "__main__":
    main()
