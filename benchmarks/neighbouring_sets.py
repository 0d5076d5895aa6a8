"""Sum queries with a neighbouring set V (Wu-Xia-He Section 6.2): every method, timed.

    python benchmarks/neighbouring_sets.py

Prints two tables:

1. For V1..V4 at epsilon = 1 (Theorem 3 with delta = 10): each method's seconds, peak
   memory and E|X|, with the Theorem 3 density's closed-form E|X| against the baseline of
   integrating its pdf numerically (scipy.quad, period by period, in the same process).
2. The grid LP on V1 as the cells shrink and the window grows: seconds, rows, E|X|.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from count_query import measure  # same folder: one way to measure
from scipy import integrate

import dpopt
from dpopt.programs.noise_adding import grid_rows
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
    v = check_neighbouring_set(SETS["V1"])
    for grid, window in ((50, 4), (200, 4), (1001, 4), (1001, 8), (1001, 12)):
        problem = dpopt.NeighbouringSetNoise(neighbouring_set=SETS["V1"], epsilon=1.0, grid=grid, window=window)
        solution, seconds, peak = measure(lambda: dpopt.solve(problem, "lp"))
        rows.append({"grid (cells per Delta)": grid, "h": 1001 / grid, "window (periods)": window,
                     "privacy rows": grid_rows(symmetric_shifts(v), 1001.0, grid, window), "seconds": seconds, "peak_MiB": peak,
                     "E|X|": solution.objective, "repair weight": solution.certificate.mixing_weight})
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
    print("\n2. The grid LP on V1 at epsilon = 1 as the cells shrink and the window grows")
    print(refinement_table().to_string(index=False, float_format=lambda x: f"{x:.4g}"))


if __name__ == "__main__":
    main()
