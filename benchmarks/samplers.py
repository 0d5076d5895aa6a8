"""Samples per second of every sampler, and the time to calibrate the analytic Gaussian.

    python benchmarks/samplers.py [--draws 1000000] [--calls 2000]

Each sampler draws ``--draws`` releases (seeded, through dpopt's uniform-based
inverse-CDF samplers, so the same code runs on the OS secure source). The baseline,
run in the same process, is numpy's own ``Generator.laplace`` for the same number of
draws: ``ratio`` is the sampler's time over the baseline's. Peak memory is the
tracemalloc peak of a second, traced run. The last table times
:func:`dpopt.mechanisms.gaussian.analytic_sigma` per call (goal: <= 1 ms) over a grid
of (epsilon, delta), beside the classic closed form.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from typing import Any, Callable

import numpy as np
import pandas as pd

from dpopt.mechanisms.exponential import ExponentialMechanism
from dpopt.mechanisms.gaussian import GaussianMechanism, analytic_sigma, classic_sigma
from dpopt.mechanisms.generalized_gaussian import GeneralizedGaussianNoise, TruncatedGeneralizedGaussianMechanism
from dpopt.mechanisms.ladder import LadderMechanism
from dpopt.mechanisms.laplace import LaplaceMechanism, ThresholdedLaplaceMechanism, TruncatedLaplaceMechanism
from dpopt.mechanisms.randomized_response import RandomizedResponse
from dpopt.mechanisms.staircase import DiscreteStaircaseMechanism, StaircaseMechanism


def samplers() -> dict[str, Callable[[int, int], Any]]:
    """name -> draw(count, seed)."""
    lap = LaplaceMechanism(sensitivity=1.0, epsilon=1.0)
    trunc = TruncatedLaplaceMechanism(sensitivity=1.0, epsilon=1.0, lower=0.0, upper=10.0)
    thresh = ThresholdedLaplaceMechanism(sensitivity=1.0, epsilon=1.0, lower=0.0, upper=10.0)
    stair = StaircaseMechanism(sensitivity=1.0, epsilon=1.0)
    dstair = DiscreteStaircaseMechanism(sensitivity=3, epsilon=1.0)
    gauss = GaussianMechanism(sensitivity=1.0, epsilon=1.0, delta=1e-5)
    gg = GeneralizedGaussianNoise(scale=1.0, p=3)
    tgg = TruncatedGeneralizedGaussianMechanism(sensitivity=1.0, epsilon=1.0, p=2, lower=0.0, upper=10.0)
    expo = ExponentialMechanism(utility=[np.arange(100) % 7], epsilon=1.0)
    rr = RandomizedResponse(k=10, epsilon=1.0)
    ladder = LadderMechanism(ladder=(1, 2, 4, 8), epsilon=1.0)
    from dpopt.mechanisms.integer_noise import PeriodicNoise

    geometric = PeriodicNoise.geometric(1, float(np.exp(-1.0)))
    return {
        "laplace": lambda n, s: lap.sample(0.0, n, rng=s),
        "truncated_laplace": lambda n, s: trunc.sample(5.0, n, rng=s),
        "thresholded_laplace": lambda n, s: thresh.sample(5.0, n, rng=s),
        "two_sided_geometric": lambda n, s: geometric.sample(n, rng=s),
        "staircase": lambda n, s: stair.sample(0.0, n, rng=s),
        "discrete_staircase": lambda n, s: dstair.sample(0, n, rng=s),
        "gaussian": lambda n, s: gauss.sample(0.0, n, rng=s),
        "generalized_gaussian_p3": lambda n, s: gg.sample(0.0, n, rng=s),
        "truncated_gg_p2": lambda n, s: tgg.sample(5.0, n, rng=s),
        "exponential_100_outputs": lambda n, s: expo.sample(0, n, rng=s),
        "randomized_response_k10": lambda n, s: rr.sample(3, n, rng=s),
        "ladder": lambda n, s: ladder.sample(0, n, rng=s),
    }


def _timed(run: Callable[[], Any]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _peak_mib(run: Callable[[], Any]) -> float:
    tracemalloc.start()
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def sampler_table(draws: int) -> pd.DataFrame:
    baseline = lambda: np.random.default_rng(0).laplace(size=draws)  # noqa: E731
    base_seconds = min(_timed(baseline) for _ in range(3))
    base_mib = _peak_mib(baseline)
    rows = []
    for name, draw in samplers().items():
        seconds = min(_timed(lambda: draw(draws, 1)) for _ in range(3))
        mib = _peak_mib(lambda: draw(draws, 1))
        rows.append(
            {
                "sampler": name,
                "draws": draws,
                "seconds": seconds,
                "samples_per_second": draws / seconds,
                "ratio_to_numpy_laplace": seconds / base_seconds,
                "peak_mib": mib,
                "memory_ratio": mib / base_mib,
            }
        )
    return pd.DataFrame(rows).set_index("sampler")


def calibration_table(calls: int) -> pd.DataFrame:
    rows = []
    for eps in (0.1, 1.0, 5.0):
        for delta in (1e-10, 1e-5, 1e-2):
            start = time.perf_counter()
            for _ in range(calls):
                analytic_sigma(1.0, eps, delta)
            per_call = (time.perf_counter() - start) / calls
            start = time.perf_counter()
            for _ in range(calls):
                classic_sigma(1.0, min(eps, 0.99), delta)
            classic = (time.perf_counter() - start) / calls
            rows.append({"epsilon": eps, "delta": delta, "analytic_ms_per_call": per_call * 1e3, "ratio_to_classic": per_call / classic})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    pd.set_option("display.width", 160)
    print(sampler_table(args.draws).to_string(float_format=lambda v: f"{v:.4g}"))
    print()
    table = calibration_table(args.calls)
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))
    print(f"\nanalytic Gaussian calibration: worst {table['analytic_ms_per_call'].max():.3f} ms per call (goal <= 1 ms)")


if __name__ == "__main__":
    main()
