"""Sweep overhead per cell and the speed-up of local worker processes (issue 17).

    python benchmarks/sweep.py [--cells 200] [--dask]

Baseline, run in this process: ``dpopt.solve`` called in a loop over the same cells.
Rows: the in-process sweep (goal: <= 5 ms overhead per cell), the same sweep writing
Parquet incrementally, 2 local worker processes (goal: >= 1.7x over serial on 2 cores),
and with ``--dask`` a 2-worker ``dask.distributed.LocalCluster`` (goal: <= 50 ms overhead
per cell). The cells are count queries (absolute loss, ``factored``) over a grid of n and
alpha, each a few milliseconds to a few tenths of a second.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import dpopt
from dpopt.problem_files import problem_from_dict
from dpopt.sweeps import run_sweep, sweep_from_dict


def spec(cells: int) -> dict:
    ns = [20, 40, 60, 80, 100, 120, 140, 160, 180, 200]
    alphas = list(np.round(np.linspace(0.1, 0.9, max(1, cells // len(ns))), 4))
    return {"kind": "sweep", "methods": ["factored"], "base": {"kind": "count_query", "loss": "absolute", "n": 10},
            "grid": {"n": ns, "alpha": [float(a) for a in alphas]}}


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=200)
    parser.add_argument("--dask", action="store_true")
    args = parser.parse_args()
    sweep = sweep_from_dict(spec(args.cells))
    cells = len(sweep.cells)

    def loop() -> None:
        for cell in sweep.cells:
            dpopt.solve(problem_from_dict(cell.problem), cell.method)

    loop()  # warm imports and caches once for every row alike
    baseline = timed(loop)
    rows = [{"run": "dpopt.solve loop (baseline)", "seconds": baseline}]
    rows.append({"run": "sweep, in-process", "seconds": timed(lambda: run_sweep(sweep, progress=False))})
    with tempfile.TemporaryDirectory() as folder:
        rows.append({"run": "sweep, in-process, Parquet", "seconds": timed(lambda: run_sweep(sweep, output=Path(folder) / "r.parquet", progress=False))})
    rows.append({"run": "sweep, 2 worker processes", "seconds": timed(lambda: run_sweep(sweep, workers=2, progress=False))})
    if args.dask:
        from dask.distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, Client(cluster) as client:
            run_sweep(sweep, scheduler=client, progress=False)  # workers import dpopt once
            rows.append({"run": "sweep, Dask LocalCluster (2 workers)", "seconds": timed(lambda: run_sweep(sweep, scheduler=client, progress=False))})
    table = pd.DataFrame(rows).set_index("run")
    table["cells"] = cells
    table["overhead_ms_per_cell"] = (table["seconds"] - baseline) / cells * 1e3
    table["speedup_over_serial_sweep"] = table.loc["sweep, in-process", "seconds"] / table["seconds"]
    pd.set_option("display.width", 160)
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
