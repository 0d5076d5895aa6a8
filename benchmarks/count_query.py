"""Wall time and peak memory of the exact count-query routes, measured in one process.

    python benchmarks/count_query.py [--n 10 25 50 100] [--alpha 0.5] [--loss absolute]
    python benchmarks/count_query.py --scale [--n ...] [--alphas ...] [--losses ...] [--lp-limit 200] [--timeout S] [--output X.parquet]
    python benchmarks/count_query.py --scale --alphas 0.99 0.999 --n 1000 2000 5000 10000 --lp-limit 0   # small epsilon
    python benchmarks/count_query.py --scale --alphas 0.99 --n 1000 5000 10000 --side-cut 0.1   # S = the middle 80%
    python benchmarks/count_query.py --scale --alphas 0.99 --n 1000 5000 --side-shape both_ends   # other shapes of S

The first form compares the GS LP with the geometric + interaction program. The
``--scale`` form prints the large-n table: for each n, alpha and loss, the direct
GS LP (for n <= --lp-limit, stopped after 300 s: ``inf`` seconds means it did not
finish; it takes ~1 min at n = 200 and grows like n^3) beside the column-generation
route (``factored``), their time and memory ratios, the LP's objective relative to the
factored one, and the factored route's certified bound gap. For named losses the table
is two sweeps (:mod:`dpopt.sweeps`, one cell per (loss, alpha, n), each in a fresh
process of its own with a timeout; memory is that process's resident growth, solver
memory and a fresh process's first-solve costs of about 12 MB included; seconds are one
cold run); ``--output X.parquet`` keeps the sweeps' tables (``X.factored.parquet``,
``X.lp.parquet``) so an interrupted run resumes where it stopped.
``--losses`` also takes user tables (``table_power`` = |i - r|^1.5, ``table_capped`` =
min(|i - r|, 10), ``table_random`` = a seeded random monotone table), which the
factored route solves with dense master columns; those are measured in this process
(an n x n table per cell is too large a problem description to send as a sweep cell).

Prints one row per n: wall seconds and peak memory growth (the larger of the
tracemalloc peak and the sampled growth of resident memory, which includes the
solvers' own allocations) of the GS LP and of the geometric + interaction route,
measured one after the other in this process; the ratio of the second to the first;
and both objectives with their relative gap (both routes are exact; the gap is the
LP's solver tolerance, see the README).
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import queue as queue_module
import threading
import time
import tracemalloc
from typing import Any, Callable

import numpy as np
import pandas as pd

import dpopt
from dpopt.losses import loss_table


def _random_monotone_table(n: int, seed: int = 0) -> np.ndarray:
    """Row i rises by random steps in [0, 3) per unit of |i - r|; each side takes a value in the step."""
    rng = np.random.default_rng(seed)
    levels = np.cumsum(rng.uniform(0.0, 3.0, (n + 1, n + 2)), axis=1)
    distance = loss_table("absolute", n).astype(int)
    low = np.take_along_axis(levels, distance, axis=1)
    high = np.take_along_axis(levels, distance + 1, axis=1)
    return low + rng.random((n + 1, n + 1)) * (high - low)


#: User loss tables of the benchmark (dense master columns): smooth, flat beyond a cap, random.
TABLE_LOSSES: dict[str, Callable[[int], np.ndarray]] = {
    "table_power": lambda n: loss_table("absolute", n) ** 1.5,
    "table_capped": lambda n: np.minimum(loss_table("absolute", n), 10.0),
    "table_random": _random_monotone_table,
}


#: Side information S of other shapes (``--side-shape``), as functions of n.
SIDE_SHAPES: dict[str, Callable[[int], Any]] = {
    "evens": lambda n: list(range(0, n + 1, 2)),
    "thirds": lambda n: list(range(0, n + 1, 3)),
    "quarters": lambda n: list(range(0, n + 1, 4)),
    "sevenths": lambda n: list(range(5, n + 1, 7)),  # from 5: a random probe's S that HiGHS failed on (session 24)
    "lower_half": lambda n: {"lower": 0, "upper": n // 2},
    "two_points": lambda n: [n // 4, 3 * n // 4],
    "three_points": lambda n: [n // 300, n // 150, 29 * n // 30],  # far apart: value travels a long way (zero-one)
    "random10": lambda n: sorted(np.random.default_rng(0).choice(n + 1, size=(n + 1) // 10, replace=False).tolist()),
    "both_ends": lambda n: list(range(0, n // 10 + 1)) + list(range(n - n // 10, n + 1)),
    "middle_gap": lambda n: list(range(n // 10, 2 * n // 5)) + list(range(3 * n // 5, 9 * n // 10)),
}


def benchmark_problem(n: int, alpha: float, loss: str, side_cut: float = 0.0, side_shape: str | None = None) -> dpopt.CountQuery:
    """The count query of one benchmark cell; ``loss`` is a named loss or a key of TABLE_LOSSES;
    ``side_cut`` > 0: side information S = round(side_cut n) .. n - round(side_cut n);
    ``side_shape``: a key of SIDE_SHAPES instead."""
    spec = TABLE_LOSSES[loss](n) if loss in TABLE_LOSSES else loss
    cut = int(round(side_cut * n))
    side = {"lower": cut, "upper": n - cut} if cut > 0 else None
    if side_shape is not None:
        side = SIDE_SHAPES[side_shape](n)
    return dpopt.CountQuery(n=n, alpha=alpha, loss=spec, side_information=side)


def _rss_bytes() -> int:
    """Resident memory of this process and its child processes (dpopt solves some LPs in children)."""
    return sum(_statm_rss(pid) for pid in ["self", *_child_pids()])


def _statm_rss(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):  # the child has just exited
        return 0


def _child_pids() -> list[str]:
    pids = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as handle:
                pids += handle.read().split()
        except OSError:  # the thread has just exited, or the kernel does not list children
            pass
    return pids


class _RssPeak(threading.Thread):
    """Samples the resident memory of the process and its children every 10 ms while a measurement runs."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.start_rss = self.peak = _rss_bytes()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.01):
            self.peak = max(self.peak, _rss_bytes())


#: Runs shorter than this many seconds are repeated (up to SHORT_RUN_REPEATS in all) and
#: their median reported: a 10 ms run is otherwise at the mercy of one scheduler hiccup.
SHORT_RUN_SECONDS = 1.0
SHORT_RUN_REPEATS = 5


def wall_seconds(run: Callable[[], Any]) -> tuple[Any, float]:
    """``(result, seconds)`` of a bare run; the median of several when runs are short."""
    times = []
    while True:
        gc.collect()
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
        if times[0] >= SHORT_RUN_SECONDS or len(times) == SHORT_RUN_REPEATS:
            return result, float(np.median(times))
        del result


def peak_mib(run: Callable[[], Any]) -> tuple[Any, float]:
    """``(result, peak memory growth in MiB)``: the larger of the tracemalloc peak (Python
    allocations, exact) and the sampled growth of resident memory (includes the solvers'
    C allocations and child processes). Tracing slows Python-heavy code, so it never runs under the clock."""
    gc.collect()
    sampler = _RssPeak()
    sampler.start()
    tracemalloc.start()
    result = run()
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    sampler.done.set()
    sampler.join()
    return result, max(traced, sampler.peak - sampler.start_rss) / 2**20


def measure(run: Callable[[], Any]) -> tuple[Any, float, float]:
    """``(result, wall seconds, peak memory growth in MiB)``: :func:`wall_seconds`, then :func:`peak_mib`."""
    result, seconds = wall_seconds(run)
    del result
    result, peak = peak_mib(run)
    return result, seconds, peak


def benchmark(sizes: list[int], alpha: float, loss: str) -> pd.DataFrame:
    rows = []
    warm = dpopt.CountQuery(n=5, alpha=alpha, loss=loss)
    dpopt.solve(warm, "lp"), dpopt.solve(warm, "interaction")  # imports and first-call caches
    for n in sizes:
        problem = dpopt.CountQuery(n=n, alpha=alpha, loss=loss)
        lp, lp_s, lp_mb = measure(lambda: dpopt.solve(problem, "lp"))
        route, route_s, route_mb = measure(lambda: dpopt.solve(problem, "interaction"))
        rows.append(
            {
                "n": n,
                "lp_seconds": lp_s,
                "lp_peak_MiB": lp_mb,
                "interaction_seconds": route_s,
                "interaction_peak_MiB": route_mb,
                "time_ratio": route_s / lp_s,
                "memory_ratio": route_mb / lp_mb,
                "lp_objective": lp.objective,
                "interaction_objective": route.objective,
                "relative_gap": abs(lp.objective - route.objective) / lp.objective,
                "lp_status": lp.status,  # "optimal" only within 1e-9 of its certified bound
                "interaction_status": route.status,
            }
        )
    return pd.DataFrame(rows).set_index("n")


def _direct_lp_child(n: int, alpha: float, loss: str, queue: multiprocessing.Queue) -> None:
    problem = benchmark_problem(n, alpha, loss)
    dpopt.solve(benchmark_problem(5, alpha, loss), "lp")  # warm-up, as in the parent
    solution, seconds = wall_seconds(lambda: dpopt.solve(problem, "lp"))
    queue.put((solution.details["solver_objective"], seconds))
    del solution
    queue.put(peak_mib(lambda: dpopt.solve(problem, "lp"))[1])


def run_with_timeout(target: Callable[..., None], args: tuple[Any, ...], timeout: float, *, messages: int = 1) -> list[Any] | None:
    """Run ``target(*args, queue)`` in a child process and collect the first ``messages``
    items it queues, waiting up to ``timeout`` seconds for each (a child still running
    then is stopped). None if the first item is late; a later late item is None."""
    queue: multiprocessing.Queue = multiprocessing.Queue()
    child = multiprocessing.Process(target=target, args=(*args, queue))
    child.start()
    received: list[Any] = []
    try:
        while len(received) < messages:
            received.append(queue.get(timeout=timeout))
    except queue_module.Empty:
        pass
    finally:
        child.join(timeout=1.0)
        if child.is_alive():
            child.terminate()
            child.join()
    return received + [None] * (messages - len(received)) if received else None


def _direct_lp_with_timeout(n: int, alpha: float, loss: str, timeout: float) -> tuple[float, float, float] | None:
    """``(objective, seconds, peak MiB)`` of the direct GS LP in a child process, or None if
    its timed run does not finish within ``timeout``; the memory run gets its own
    ``timeout`` (its peak is NaN past it)."""
    outcome = run_with_timeout(_direct_lp_child, (n, alpha, loss), timeout, messages=2)
    if outcome is None:
        return None
    (objective, seconds), peak = outcome
    return objective, seconds, float("nan") if peak is None else peak


def table_loss_benchmark(
    sizes: list[int], alphas: list[float], losses: list[str], lp_limit: int, lp_timeout: float = 300.0, side_cut: float = 0.0,
    side_shape: str | None = None,
) -> pd.DataFrame:
    rows = []
    dpopt.solve(dpopt.CountQuery(n=5, alpha=0.5), "factored")  # imports and first-call caches
    for loss in losses:
        for alpha in alphas:
            for n in sizes:
                problem = benchmark_problem(n, alpha, loss, side_cut, side_shape)
                try:
                    fast, fast_s, fast_mb = measure(lambda: dpopt.solve(problem, "factored"))
                except dpopt.SolverError as exc:
                    print(f"{loss} {alpha} {n} factored FAILED: {exc}", flush=True)
                    continue
                row = {
                    "loss": loss, "alpha": alpha, "n": n,
                    "factored_s": fast_s, "factored_MiB": fast_mb,
                    "objective": fast.objective, "relative_gap": fast.details["relative_gap"],
                    "rounds": fast.details["rounds"], "remap_nnz": fast.details["remap_nonzeros"],
                    "lp_s": float("nan"), "lp_MiB": float("nan"), "speedup": float("nan"), "lp_rel_diff": float("nan"),
                }
                if n <= lp_limit:
                    outcome = _direct_lp_with_timeout(n, alpha, loss, lp_timeout)
                    if outcome is None:
                        row.update(lp_s=float("inf"))  # did not finish within the limit
                    else:
                        lp_objective, lp_s, lp_mb = outcome
                        row.update(
                            lp_s=lp_s, lp_MiB=lp_mb, speedup=lp_s / fast_s,
                            lp_rel_diff=(lp_objective - fast.objective) / fast.objective,
                        )
                rows.append(row)
                print(pd.DataFrame([row]).to_string(index=False, header=len(rows) == 1, float_format="{:.4g}".format), flush=True)
    return pd.DataFrame(rows)


def scale_sweeps(sizes: list[int], alphas: list[float], losses: list[str], lp_limit: int, *, lp_timeout: float = 300.0,
                 factored_timeout: float = 3600.0, output: str | None = None) -> pd.DataFrame:
    """The ``--scale`` table for named losses as two sweeps: ``factored`` on every cell, ``lp`` on n <= lp_limit."""
    base = {"kind": "count_query", "n": sizes[0], "alpha": alphas[0], "loss": losses[0]}
    grid = {"loss": list(losses), "alpha": list(alphas), "n": list(sizes)}
    factored_spec = {"kind": "sweep", "methods": ["factored"], "base": base, "grid": grid,
                     "record": ["relative_gap", "rounds", "remap_nonzeros"]}
    stem = output[: -len(".parquet")] if output else None
    fast = dpopt.sweep(factored_spec, timeout=factored_timeout, memory=True, progress=False,
                       output=f"{stem}.factored.parquet" if stem else None)
    keys = ["loss", "alpha", "n"]
    table = fast[keys].copy()
    table["factored_s"], table["factored_MiB"] = fast["seconds"], fast["peak_mib"]
    table["objective"], table["relative_gap"] = fast["objective"], fast["relative_gap"]
    table["rounds"], table["remap_nnz"] = fast["rounds"], fast["remap_nonzeros"]
    table["factored_error"] = fast["error"]
    small = [n for n in sizes if n <= lp_limit]
    if small:
        lp_spec = {"kind": "sweep", "methods": ["lp"], "base": base, "grid": {**grid, "n": small}}
        lp = dpopt.sweep(lp_spec, timeout=lp_timeout, memory=True, progress=False, output=f"{stem}.lp.parquet" if stem else None)
        lp = lp.assign(lp_s=np.where(lp["status"] == "timeout", np.inf, lp["seconds"]), lp_MiB=lp["peak_mib"],
                       lp_objective=lp["objective"])[[*keys, "lp_s", "lp_MiB", "lp_objective"]]
        table = table.merge(lp, on=keys, how="left")
        table["speedup"] = table["lp_s"] / table["factored_s"]
        table["lp_rel_diff"] = (table["lp_objective"] - table["objective"]) / table["objective"]
        table = table.drop(columns="lp_objective")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=None)
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--loss", default="absolute")
    parser.add_argument("--scale", action="store_true", help="the large-n table (issue 3)")
    parser.add_argument("--alphas", type=float, nargs="+", default=[0.1, 0.5, 0.9])
    parser.add_argument(
        "--losses", nargs="+", default=["absolute", "squared", "zero_one"],
        help=f"named losses or user tables: {', '.join(TABLE_LOSSES)}",
    )
    parser.add_argument("--lp-limit", type=int, default=200)
    parser.add_argument("--output", default=None, metavar="X.parquet", help="keep the --scale sweeps' tables (a rerun resumes)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds a factored cell of --scale may take")
    parser.add_argument("--side-shape", choices=sorted(SIDE_SHAPES), default=None,
                        help="--scale with side information of this shape (SIDE_SHAPES), every loss measured in this process")
    parser.add_argument("--side-cut", type=float, default=0.0, metavar="F",
                        help="--scale with side information S = round(F n) .. n - round(F n), every loss measured in this process")
    args = parser.parse_args()
    if args.scale:
        sizes = args.n or [50, 100, 200, 400, 1000, 2000, 5000]
        if args.side_shape is not None:
            print(f"count_query, S = {args.side_shape} (SIDE_SHAPES); one process; MiB = peak growth")
            table_loss_benchmark(sizes, args.alphas, args.losses, 0, side_shape=args.side_shape)
            return
        if args.side_cut > 0:
            print(f"count_query, S = round({args.side_cut} n) .. n - round({args.side_cut} n); one process; MiB = peak growth")
            table_loss_benchmark(sizes, args.alphas, args.losses, 0, side_cut=args.side_cut)
            return
        print("count_query, S = all; factored = column generation; lp = direct GS LP (HiGHS); MiB = peak growth")
        named = [loss for loss in args.losses if loss not in TABLE_LOSSES]
        if named:
            table = scale_sweeps(sizes, args.alphas, named, args.lp_limit, factored_timeout=args.timeout, output=args.output)
            print(table.to_string(index=False, float_format="{:.4g}".format), flush=True)
        tables = [loss for loss in args.losses if loss in TABLE_LOSSES]
        if tables:
            table_loss_benchmark(sizes, args.alphas, tables, args.lp_limit)
        return
    table = benchmark(args.n or [10, 25, 50, 100], args.alpha, args.loss)
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.4g}".format):
        print(f"count_query, alpha={args.alpha}, loss={args.loss}, S = all")
        print(table)


if __name__ == "__main__":
    main()
