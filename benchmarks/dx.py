"""d_X-privacy at N = 841 (GeoNames US cities): all-pairs work and the exact optima.

    python benchmarks/dx.py [--k 10] [--full-timeout 300]
    python benchmarks/dx.py --large 1000 2000 3000     # random Euclidean and dates universes, see large_universes
    python benchmarks/dx.py --triangle 500 1000 1500   # the triangle-inequality check, see triangle_check

Prints one table. Rows:

* ``closed_form x K`` and ``psa`` -- the vectorised all-pairs routes on a K x 841
  workload (goal: <= 2 s), beside ``closed_form_python_loop``, the same closed form
  as a Python loop over the 353,220 pairs, run in this process as the baseline
  (``ratio`` = time / that baseline's time).
* ``exact`` (multi-query, min ||c||^2 with c Q' = Q) and ``exact_surrogate`` (one
  query, q' free) with pair reduction and lazy constraints (goal: <= 30 s each),
  and the same programs on all pairs at once (in a child process, stopped after
  ``--full-timeout`` seconds; ``inf`` = did not finish). ``ratio`` = reduced / full.

Columns: seconds, peak MiB (tracemalloc or RSS growth, see benchmarks/count_query.py),
pairs (total / essential after dropping implied pairs / used by the lazy loop),
and the objective (||c||^2, or the surrogate value) so reduced and full can be compared.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pandas as pd
from count_query import measure, run_with_timeout  # same folder: one way to measure and time out

from dpopt.dx.experiments import us_cities
from dpopt.dx.metric import DXMetric
from dpopt.dx.scales import closed_form_scales, exact_surrogate, psa_scales, solve_exact, surrogate_objective

RECORDS = 10_000


def _metric() -> DXMetric:
    cities = us_cities()
    return DXMetric.euclidean(cities[["longitude", "latitude"]].to_numpy())


def _closed_form_loop(q: np.ndarray, metric: DXMetric) -> float:
    d = metric.matrix
    best = 0.0
    for i in range(metric.size):
        for j in range(i + 1, metric.size):
            best = max(best, abs(q[i] - q[j]) / d[i, j])
    return best


def _exact_child(which: str, q: np.ndarray, queue: Any) -> None:
    metric = _metric()
    if which == "exact":
        (c, report), seconds, peak = measure(lambda: solve_exact(q, metric, reduce=False))
        queue.put((seconds, peak, report.used, float(np.sum(c**2))))
    else:
        (transformed, c, report), seconds, peak = measure(lambda: exact_surrogate(q, metric, RECORDS, reduce=False))
        queue.put((seconds, peak, report.used, surrogate_objective(transformed, c, q, RECORDS)))


def _full_with_timeout(which: str, q: np.ndarray, timeout: float) -> tuple[float, float, int, float] | None:
    outcome = run_with_timeout(_exact_child, (which, q), timeout)
    return None if outcome is None else outcome[0]


def benchmark(k: int, full_timeout: float) -> pd.DataFrame:
    metric = _metric()
    rng = np.random.default_rng(0)
    workload = rng.uniform(0, 1, (k, metric.size))
    single = workload[:1]
    total = len(metric.pairs()[0])
    rows: list[dict[str, Any]] = []

    _, loop_s, loop_mb = measure(lambda: _closed_form_loop(single[0], metric))
    rows.append({"route": "closed_form_python_loop (1 query)", "seconds": loop_s, "peak_MiB": loop_mb, "pairs_total": total, "baseline": "-"})
    _, one_s, one_mb = measure(lambda: closed_form_scales(single, metric))
    rows.append({"route": "closed_form (1 query)", "seconds": one_s, "peak_MiB": one_mb, "pairs_total": total, "ratio": one_s / loop_s, "baseline": "python loop"})
    _, cf_s, cf_mb = measure(lambda: [closed_form_scales(row, metric) for row in workload])
    rows.append({"route": f"closed_form x {k}", "seconds": cf_s, "peak_MiB": cf_mb, "pairs_total": total, "ratio": cf_s / loop_s, "baseline": "python loop"})
    psa, psa_s, psa_mb = measure(lambda: psa_scales(workload, metric))
    rows.append({"route": f"psa (K = {k})", "seconds": psa_s, "peak_MiB": psa_mb, "pairs_total": total, "ratio": psa_s / loop_s,
                 "baseline": "python loop", "objective": float(np.sum(psa.scales**2))})

    (c, report), ex_s, ex_mb = measure(lambda: solve_exact(workload, metric))
    full = _full_with_timeout("exact", workload, full_timeout)
    rows.append(_exact_row(f"exact (K = {k})", ex_s, ex_mb, report, float(np.sum(c**2)), full, full_timeout))
    (transformed, c1, report1), su_s, su_mb = measure(lambda: exact_surrogate(single, metric, RECORDS))
    full1 = _full_with_timeout("surrogate", single, full_timeout)
    rows.append(_exact_row("exact_surrogate (1 query)", su_s, su_mb, report1, surrogate_objective(transformed, c1, single, RECORDS), full1, full_timeout))
    return pd.DataFrame(rows).set_index("route")


def _exact_row(name: str, seconds: float, peak: float, report: Any, objective: float, full: Any, timeout: float) -> dict[str, Any]:
    row = {"route": name, "seconds": seconds, "peak_MiB": peak, "pairs_total": report.total, "pairs_essential": report.essential,
           "pairs_used": report.used, "objective": objective, "baseline": "all pairs at once"}
    if full is None:
        row.update({"full_seconds": float("inf"), "ratio": 0.0, "note": f"all-pairs program did not finish in {timeout:g} s"})
    else:
        row.update({"full_seconds": full[0], "full_peak_MiB": full[1], "ratio": seconds / full[0], "full_objective": full[3],
                    "objective_rel_diff": abs(objective - full[3]) / abs(full[3])})
    return row


def large_universes(sizes: list[int]) -> pd.DataFrame:
    """``exact_surrogate`` on N random points (Euclidean in the plane, or dates on a line), from the
    coordinates to a certified answer.

    Baseline, in this process: the same metric validated by the O(N^3) triangle check and the
    lazy pool built from the O(N^3) pair reduction, as before both were skipped for large N
    (a formula metric is a metric; past :data:`dpopt.dx.scales.ESSENTIAL_PAIRS_MAX_N` the pool
    draws from every pair; on a line the essential pairs are read off the sorted dates).
    ``ratio`` = the route's time over the baseline's.
    """
    from dpopt.dx import scales
    from dpopt.dx.metric import first_triangle_violation

    rows = []
    for kind, size in [(kind, size) for kind in ("euclidean", "dates") for size in sizes]:
        rng = np.random.default_rng(size)
        points, q = rng.uniform(0, 100, (size, 2)), rng.uniform(0, 1, (1, size))
        build = (lambda: DXMetric.euclidean(points)) if kind == "euclidean" else (lambda: DXMetric.scaled_dates(points[:, 0], 1.0, 10.0))
        metric, build_s, _ = measure(build)
        (transformed, c, report), solve_s, peak = measure(lambda: exact_surrogate(q, metric, RECORDS))
        objective = surrogate_objective(transformed, c, q, RECORDS)
        _, check_s, _ = measure(lambda: first_triangle_violation(metric.matrix))
        cap = scales.ESSENTIAL_PAIRS_MAX_N
        scales.ESSENTIAL_PAIRS_MAX_N = size  # the baseline reduces every universe
        try:
            fresh = DXMetric(metric.matrix, proven=True)  # no line: the O(N^3) search
            (old_t, old_c, old_report), old_s, old_peak = measure(lambda: exact_surrogate(q, fresh, RECORDS))
        finally:
            scales.ESSENTIAL_PAIRS_MAX_N = cap
        baseline = build_s + check_s + old_s
        rows.append({"metric": kind, "N": size, "seconds": build_s + solve_s, "peak_MiB": peak, "pairs_total": report.total,
                     "pairs_candidates": report.essential, "pairs_used": report.used, "objective": objective,
                     "baseline_seconds": baseline, "baseline_check_s": check_s, "baseline_peak_MiB": old_peak,
                     "baseline_pairs_essential": old_report.essential, "ratio": (build_s + solve_s) / baseline,
                     "objective_rel_diff": abs(objective - surrogate_objective(old_t, old_c, q, RECORDS)) / objective})
    return pd.DataFrame(rows).set_index(["metric", "N"])


def triangle_check(sizes: list[int]) -> pd.DataFrame:
    """The triangle-inequality check of an N x N matrix: the Floyd-Warshall screen of
    :func:`~dpopt.dx.metric.first_triangle_violation` against its baseline in this process,
    :func:`~dpopt.dx.metric.violation_by_passes` (N numpy passes, the route before 2026-11-29).

    Three matrices per N: Euclidean distances of random points (a metric: the screen passes it
    and the passes are not run); the same with one entry raised far above its shortest path
    (witnessed by every k: the early passes name it); and one where the last point sits at the
    midpoint of two others whose distance is raised by 1e-9 (witnessed by that k alone: the
    early passes, the screen and the remaining passes all run, the worst case).
    ``ratio`` = time / baseline's; the answers must agree.
    """
    from dpopt.dx.metric import first_triangle_violation, violation_by_passes

    rows = []
    for size in sizes:
        rng = np.random.default_rng(size)
        points = rng.uniform(0, 100, (size, 2))
        metric = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
        broken = metric.copy()
        i, j = size // 3, 2 * size // 3
        broken[i, j] = broken[j, i] = 1.01 * (metric[i, j] + 1e-9) + metric[i].min() + 1.0
        late = points.copy()
        late[-1] = (late[i] + late[j]) / 2
        subtle = np.sqrt(((late[:, None] - late[None]) ** 2).sum(-1))
        subtle[i, j] = subtle[j, i] = subtle[i, j] * (1 + 1e-9)
        for name, d in (("metric", metric), ("gross violation", broken), ("late violation", subtle)):
            found, seconds, peak = measure(lambda: first_triangle_violation(d))
            baseline, base_s, base_peak = measure(lambda: violation_by_passes(d))
            rows.append({"matrix": name, "N": size, "seconds": seconds, "peak_MiB": peak, "baseline_seconds": base_s,
                         "baseline_peak_MiB": base_peak, "ratio": seconds / base_s, "same_answer": found == baseline,
                         "answer": "none" if found is None else str(found)})
    return pd.DataFrame(rows).set_index(["matrix", "N"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--full-timeout", type=float, default=300.0)
    parser.add_argument("--large", type=int, nargs="*", default=None, metavar="N",
                        help="instead: exact_surrogate on N random Euclidean points and N dates, against the O(N^3) check and reduction")
    parser.add_argument("--triangle", type=int, nargs="*", default=None, metavar="N",
                        help="instead: the triangle-inequality check of N x N matrices, screen against passes")
    args = parser.parse_args()
    pd.set_option("display.width", 220)
    pd.set_option("display.max_columns", 20)
    start = time.perf_counter()
    if args.triangle:
        print(triangle_check(args.triangle).to_string(float_format=lambda v: f"{v:.4g}"))
        print(f"\n(total {time.perf_counter() - start:.0f} s)")
        return
    if args.large:
        print(large_universes(args.large).to_string(float_format=lambda v: f"{v:.4g}"))
        print(f"\n(total {time.perf_counter() - start:.0f} s)")
        return
    table = benchmark(args.k, args.full_timeout)
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
