"""Integer noise at large sensitivity: the closed forms' solve, certificate and exact draws.

    python benchmarks/noise_adding.py [--sensitivities 100 1000 5000 100000] [--draws 1000]

For each Delta, ``dpopt.solve(NoiseAdding(sensitivity=Delta, epsilon=1), "staircase")`` then
``--draws`` exact releases: wall time and tracemalloc peak. The baseline, run in the same
process, is the route this replaced (session 24): the best step width r found by building
each candidate's noise on its window (O(Delta^2)) and the (Delta + 1) x (2M + 3 Delta + 1)
mechanism matrix built with every solution. It is not run where that matrix would not fit
in memory (its size is printed instead). ``ratio`` = baseline time / new time.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from typing import Any, Callable

import numpy as np
import pandas as pd

import dpopt
from dpopt.limits import memory_limit
from dpopt.mechanisms.integer_noise import PeriodicNoise
from dpopt.mechanisms.staircase import discrete_staircase_noise
from dpopt.methods.noise_adding import noise_matrix


def _measure(run: Callable[[], Any]) -> tuple[float, float, Any]:
    """Seconds of an untraced run, then the tracemalloc peak (MiB) of a traced one."""
    start = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    run()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak, result


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
    args = parser.parse_args()
    new_route(10, 1), old_route(10, 1)  # imports and first-call set-up outside the measurements
    rows = []
    for delta in args.sensitivities:
        seconds, peak, objective = _measure(lambda: new_route(delta, args.draws))
        matrix_bytes = 8.0 * (delta + 1) * (7 * delta + 1)
        row = {"sensitivity": delta, "seconds": seconds, "peak_MiB": peak, "objective": objective}
        if 4 * matrix_bytes <= memory_limit() and delta <= 5000:
            base_seconds, base_peak, base_objective = _measure(lambda: old_route(delta, args.draws))
            row.update(baseline_seconds=base_seconds, baseline_peak_MiB=base_peak, same_objective=abs(base_objective - objective) <= 1e-9 * objective,
                       ratio=base_seconds / seconds, memory_ratio=base_peak / peak)
        else:
            row.update(baseline_seconds=f"not run: its matrix is {matrix_bytes / 2**30:.3g} GiB of floats")
        rows.append(row)
        print(f"Delta = {delta}: done", flush=True)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
