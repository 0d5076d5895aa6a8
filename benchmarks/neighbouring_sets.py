"""Sum queries with a neighbouring set V (Wu-Xia-He Section 6.2): every method, timed.

    python benchmarks/neighbouring_sets.py

Prints three tables:

1. For V1..V4 at epsilon = 1 (Theorem 3 with delta = 10): each method's seconds, peak
   memory and E|X|, with the Theorem 3 density's closed-form E|X| against the baseline of
   integrating its pdf numerically (scipy.quad, period by period, in the same process).
2. The grid LP on V1..V4 as the cells shrink (and, on V1, the window grows): seconds, E|X|, and
   ``LP rows``, the memory estimate's upper bound on its privacy rows (part 3 counts them).
3. The grid LP's own route (range-maximum rows for runs of more than 64 offsets; HiGHS's
   interior point + crossover from 16 privacy rows per cell, its default below) against
   the baseline of one row per (cell, offset) solved with HiGHS's default options (the
   route before 2026-11-27), in the same process: build + solve + repair, seconds and
   peak traced memory, on wide intervals (where a run of offsets is long).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from count_query import measure  # same folder: one way to measure
from scipy import integrate

import dpopt
from dpopt.lazy_modules import cvxpy as cp
from dpopt.methods.noise_adding import grid_lp_highs
from dpopt.programs.noise_adding import (build_grid_program, grid_functionals, grid_privacy_matrix, grid_rows, grid_shifts,
                                         mix_with_strict, repair_cells, strictly_private_cells)
from dpopt.solvers import run_program
from dpopt.mechanisms.neighbouring_sets import check_neighbouring_set, symmetric_shifts

SETS = {"V1": [[0, 1], [1000, 1001]], "V2": [[0, 100], [1000, 1001]], "V3": [[0, 500], [1000, 1001]], "V4": [[0, 1001]]}


def quadrature_mean(noise, periods: int = 60) -> float:
    """E|X| by integrating the pdf over [0, periods * Delta], breakpoints given to quad."""
    total = 0.0
    d = noise.period
    for start in np.arange(0.0, periods * d, d):
        inside = noise.breaks[(noise.breaks > start) & (noise.breaks < start + d)]
        total += integrate.quad(lambda z: z * noise.pdf(z), start, start + d, points=inside[:100], limit=400)[0]
    return 2 * total


def methods_table() -> pd.DataFrame:
    rows = []
    dpopt.solve(dpopt.NeighbouringSetNoise(neighbouring_set=[[0, 1]], epsilon=1.0), "lp")  # imports, first-call caches
    for name, v in SETS.items():
        problem = dpopt.NeighbouringSetNoise(neighbouring_set=v, epsilon=1.0, delta=10.0)
        for method in ("privacy_first", "compositional", "staircase", "lp"):
            solution, seconds, peak = measure(lambda: dpopt.solve(problem, method))
            rows.append({"V": name, "method": method, "seconds": seconds, "peak_MiB": peak, "E|X|": solution.objective,
                         "pieces": solution.parameters["pieces"], "certificate_ok": solution.certificate.ok})
        if name != "V1":  # V1's 481,202 pieces make the quadrature baseline take minutes
            noise = dpopt.solve(problem, "compositional").details["noise"]
            value, seconds, peak = measure(lambda: noise.moment(1))
            rows.append({"V": name, "method": "closed-form E|X| of Theorem 3's density", "seconds": seconds, "peak_MiB": peak,
                         "E|X|": value, "pieces": noise.log_values.size, "certificate_ok": None})
            value, seconds, peak = measure(lambda: quadrature_mean(noise))
            rows.append({"V": name, "method": "baseline: quadrature of Theorem 3's pdf", "seconds": seconds, "peak_MiB": peak,
                         "E|X|": value, "pieces": noise.log_values.size, "certificate_ok": None})
    return pd.DataFrame(rows)


def refinement_table() -> pd.DataFrame:
    rows = []
    cases = [("V1", grid, window) for grid, window in ((50, 4), (200, 4), (1001, 4), (1001, 8), (1001, 12))]
    cases += [(name, grid, 4) for name in ("V2", "V3", "V4") for grid in (50, 200, 500)]
    for name, grid, window in cases:
        v = check_neighbouring_set(SETS[name])
        problem = dpopt.NeighbouringSetNoise(neighbouring_set=SETS[name], epsilon=1.0, grid=grid, window=window)
        solution, seconds, peak = measure(lambda: dpopt.solve(problem, "lp"))
        rows.append({"V": name, "grid (cells per Delta)": grid, "h": 1001 / grid, "window (periods)": window,
                     "LP rows": grid_rows(symmetric_shifts(v), 1001.0, grid, window)[0], "seconds": seconds, "peak_MiB": peak,
                     "E|X|": solution.objective, "repair weight": solution.certificate.mixing_weight})
    return pd.DataFrame(rows)


def route(v: np.ndarray, epsilon: float, grid: int, window: int) -> float:
    """dpopt's grid LP: build (range-maximum rows for long runs), solve (HiGHS as dpopt runs it), repair; E|X|."""
    built = build_grid_program(symmetric_shifts(v), float(v.max()), epsilon, grid, window, 1)
    run_program(built.program, owner="benchmark", highs_first=grid_lp_highs(built))
    values, _ = repair_cells(built.p.value, built, strictly_private_cells(grid * window, grid, epsilon))
    return float(grid_functionals(grid * window, grid, float(v.max()) / grid, float(np.exp(-epsilon)), 1)[1] @ values)


def baseline(v: np.ndarray, epsilon: float, grid: int, window: int) -> float:
    """The same LP with one row per (cell, offset), HiGHS's default options, repaired through that matrix; E|X|."""
    cells, step, decay = grid * window, float(v.max()) / grid, float(np.exp(-epsilon))
    pairs = grid_privacy_matrix(cells, grid, decay, grid_shifts(symmetric_shifts(v), step), float(np.exp(epsilon)))
    mass, cost = grid_functionals(cells, grid, step, decay, 1)
    p = cp.Variable(cells, nonneg=True)
    run_program(cp.Problem(cp.Minimize(cost @ p), [pairs @ p <= 0, mass @ p == 1]), owner="benchmark")
    values = np.clip(p.value, 0.0, None)
    strict = strictly_private_cells(cells, grid, epsilon)
    values, _ = mix_with_strict(values / (mass @ values), strict / (mass @ strict), pairs)
    return float(cost @ values)


def formulation_table() -> pd.DataFrame:
    cases = [("V4", SETS["V4"], 1.0, 200, 4), ("V3", SETS["V3"], 1.0, 200, 4), ("V2", SETS["V2"], 1.0, 200, 4),
             ("V2", SETS["V2"], 1.0, 500, 4), ("V1", SETS["V1"], 1.0, 1001, 12), ("[0, 60] U [1000, 1001]", [[0, 60], [1000, 1001]], 1.0, 400, 4),
             ("[1, 7.3597] (a random probe's)", [[1.0, 7.3597]], 0.1, 200, 8)]
    rows = []
    for name, v, epsilon, grid, window in cases:
        v = check_neighbouring_set(v)
        new, new_s, new_mb = measure(lambda: route(v, epsilon, grid, window))
        old, old_s, old_mb = measure(lambda: baseline(v, epsilon, grid, window))
        pair_rows = len(grid_shifts(symmetric_shifts(v), float(v.max()) / grid)) * (2 * grid * window + 4 * grid)
        built = build_grid_program(symmetric_shifts(v), float(v.max()), epsilon, grid, window, 1)
        rows.append({"V": name, "epsilon": epsilon, "grid": grid, "window": window, "LP rows": built.privacy_rows,
                     "interior point": grid_lp_highs(built) is not None,
                     "pair rows": pair_rows, "seconds": new_s, "baseline_seconds": old_s, "time_ratio": old_s / new_s,
                     "peak_MiB": new_mb, "baseline_peak_MiB": old_mb, "memory_ratio": old_mb / new_mb,
                     "E|X|": new, "relative_difference": abs(new / old - 1)})
    return pd.DataFrame(rows)


def main() -> None:
    pd.set_option("display.width", 200)
    print("1. Methods at epsilon = 1, Theorem 3 with delta = 10 (seconds of a whole solve: construction + certificate)")
    table = methods_table()
    print(table.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    for name in ("V2", "V3", "V4"):
        sub = table[table["V"] == name].set_index("method")
        closed = "closed-form E|X| of Theorem 3's density"
        ratio = sub.loc["baseline: quadrature of Theorem 3's pdf", "seconds"] / sub.loc[closed, "seconds"]
        gap = abs(sub.loc["baseline: quadrature of Theorem 3's pdf", "E|X|"] / sub.loc[closed, "E|X|"] - 1)
        print(f"{name}: closed form {ratio:.3g}x faster than quadrature; relative difference {gap:.1e}")
    print("\n2. The grid LP at epsilon = 1 as the cells shrink (h = Delta / grid) and, on V1, the window grows")
    print(refinement_table().to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print("\n3. The grid LP's route against one row per (cell, offset) with HiGHS's defaults (baseline), same process")
    print(formulation_table().to_string(index=False, float_format=lambda x: f"{x:.4g}"))


if __name__ == "__main__":
    main()
