"""Samples per second of every sampler, and the time to calibrate the analytic Gaussian.

    python benchmarks/samplers.py [--draws 1000000] [--calls 2000]

Each sampler draws ``--draws`` releases (seeded, through dpopt's uniform-based
inverse-CDF samplers, so the same code runs on the OS secure source). The baseline,
run in the same process, is numpy's own ``Generator.laplace`` for the same number of
draws: ``ratio`` is the sampler's time over the baseline's. Peak memory is the
tracemalloc peak of a second, traced run. The last table times
:func:`dpopt.mechanisms.gaussian.analytic_sigma` per call (goal: <= 1 ms) over a grid
of (epsilon, delta), beside the classic closed form.

The exact-sampler table (issue 15) times every exact path against, in the same process,
the floating-point path it replaced (``ratio_to_float``: the same distribution by a float
inverse CDF / ``log`` of a uniform) and OpenDP's exact samplers when the ``opendp`` package
is installed (``ratio_to_opendp``; ``pip install opendp``: it is not a dependency of
dpopt). Goals: >= 1M exact draws/s for count mechanisms and discrete Laplace, >= 100k/s
for the discrete Gaussian. Two rows compare an exact path with the exact path over float64
weights that it replaced where those weights underflow (``ratio_to_float`` there): G's row
drawn as the two-sided geometric, and an exponential mechanism drawn from its logits. The
last rows time the exact grid releases against the float samplers they replace: the
rounded Laplace of the d_X routes, and a neighbouring-set density. The multi-level row times
the factored chain (keep-or-redraw, no matrices) at n = 10^6 against the dense chain's exact
sampler at n = 500, the largest n the dense chain takes at alpha_1 = 0.25.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from fractions import Fraction
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
        "laplace": lambda n, s: lap.sample(0.0, n, rng=s, exact=False),
        "truncated_laplace": lambda n, s: trunc.sample(5.0, n, rng=s, exact=False),
        "thresholded_laplace": lambda n, s: thresh.sample(5.0, n, rng=s, exact=False),
        "two_sided_geometric": lambda n, s: geometric.sample(n, rng=s),
        "staircase": lambda n, s: stair.sample(0.0, n, rng=s, exact=False),
        "discrete_staircase": lambda n, s: dstair.sample(0, n, rng=s),
        "gaussian": lambda n, s: gauss.sample(0.0, n, rng=s, exact=False),
        "generalized_gaussian_p3": lambda n, s: gg.sample(0.0, n, rng=s, exact=False),
        "truncated_gg_p2": lambda n, s: tgg.sample(5.0, n, rng=s, exact=False),
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


def _float_geometric(b: float) -> Callable[[int, int], Any]:
    """The replaced float path for two-sided geometric noise: a sign and log(U) / log(b)."""
    def draw(n: int, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        sign = np.where(rng.random(n) < 0.5, -1, 1)
        magnitude = np.floor(np.log(rng.random(n) + 2.0**-54) / np.log(b)).astype(np.int64)
        return sign * magnitude
    return draw


def _opendp() -> dict[str, Callable[[int, int], Any]]:
    try:
        import opendp.prelude as dp
    except ImportError:
        return {}
    dp.enable_features("contrib")
    laplace = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=1.0)
    gaussian = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int), scale=1.0)
    return {"discrete_laplace": lambda n, s: laplace([0] * n), "discrete_gaussian": lambda n, s: gaussian([0] * n)}


#: The grid release of a neighbouring-set density (Theorem 3 for V1: 481,202 pieces), against
#: its float sampler.
GRID_CASE = "grid release of Theorem 3 noise (V1, delta=10, eps=1; grid 0.01)"


def exact_table(draws: int) -> pd.DataFrame:
    """Exact samplers: draws per second, against the float path and OpenDP in this process."""
    import dpopt
    from dpopt.exact_sampling import exact_choice, exact_choice_logits
    from dpopt.mechanisms.geometric import geometric_rows
    from dpopt.mechanisms.discrete_gaussian import DiscreteGaussian, DiscreteLaplace
    from dpopt.mechanisms.grid_release import rounded_laplace
    from dpopt.mechanisms.integer_noise import PeriodicNoise
    from dpopt.mechanisms.multilevel import FactoredChain
    from dpopt.mechanisms.neighbouring_sets import check_neighbouring_set, ring_noise
    from dpopt.sampling import inverse_cdf

    row = dpopt.solve(dpopt.CountQuery(n=100, alpha=0.9), "lp").mechanism.to_numpy()[50]
    factored = dpopt.solve(dpopt.CountQuery(n=2000, alpha=0.5), "factored")
    geometric = PeriodicNoise.geometric(1, float(np.exp(-1.0)))
    near_one = PeriodicNoise.geometric(1, float(np.exp(-0.001)))
    logits = -np.linspace(0.0, 50.0, 500)
    ring = ring_noise(check_neighbouring_set([[0, 1], [1000, 1001]]), 1.0, 10.0)[0]
    chain = FactoredChain(10**6, (0.25, 0.5, 0.8))
    dense_chain = dpopt.solve(dpopt.MultiLevelRelease(n=500, alphas=[0.25, 0.5, 0.8]), "closed_form")
    opendp = _opendp()
    cases = {
        "count_mechanism_row (GS LP, n=100, alpha=0.9)": (
            lambda n, s: exact_choice(row, n, np.random.default_rng(s)),
            lambda n, s: inverse_cdf(row, np.random.default_rng(s).random(n)), None),
        "factored G.T (n=2000, alpha=0.5)": (
            lambda n, s: factored.sample(1000, n, rng=s), None, None),
        "factored G.T row 0 (n=2000, alpha=0.5: float row underflows, two-sided geometric)": (
            lambda n, s: factored.factored.sample(0, n, np.random.default_rng(s)),
            lambda n, s: exact_choice(geometric_rows(2000, 0.5, np.array([0]))[0], n, np.random.default_rng(s)), None),
        "exponential from logits (500 outputs, logits 0..-50)": (
            lambda n, s: exact_choice_logits(logits, n, np.random.default_rng(s)),
            lambda n, s: exact_choice(np.exp(logits), n, np.random.default_rng(s)), None),
        "two_sided_geometric (PeriodicNoise, eps=1)": (
            lambda n, s: geometric.sample(n, rng=s), _float_geometric(float(np.exp(-1.0))), opendp.get("discrete_laplace")),
        "two_sided_geometric (PeriodicNoise, eps=0.001: by binary digits)": (
            lambda n, s: near_one.sample(n, rng=s), _float_geometric(float(np.exp(-0.001))), None),
        "discrete_laplace CKS (scale 1)": (
            lambda n, s: DiscreteLaplace(1).sample(n, rng=s), _float_geometric(float(np.exp(-1.0))), opendp.get("discrete_laplace")),
        "discrete_gaussian CKS (sigma^2 = 1)": (
            lambda n, s: DiscreteGaussian(1).sample(n, rng=s), None, opendp.get("discrete_gaussian")),
        "rounded Laplace (scale 1.5 on a grid of 0.01: the d_X release_grid)": (
            lambda n, s: rounded_laplace(Fraction(1, 3), 1.5, 0.01, n, np.random.default_rng(s)),
            lambda n, s: np.rint((1 / 3 + np.random.default_rng(s).laplace(0.0, 1.5, n)) / 0.01), None),
        "multi-level chain, 3 levels: factored at n=10^6 (ratio_to_float: the dense chain at n=500)": (
            lambda n, s: chain.sample(500_000, n, np.random.default_rng(s)),
            lambda n, s: dense_chain.sample(250, n, rng=s), None),
        GRID_CASE: (
            lambda n, s: ring.grid_release(5.0, 0.01, n, np.random.default_rng(s)),
            lambda n, s: 5.0 + ring.sample_from(np.random.default_rng(s), n), None),
    }
    rows = []
    for name, (exact, floating, other) in cases.items():
        seconds = min(_timed(lambda: exact(draws, 1)) for _ in range(3))
        entry = {"sampler": name, "draws": draws, "exact_draws_per_second": draws / seconds}
        if floating is not None:
            entry["ratio_to_float"] = seconds / min(_timed(lambda: floating(draws, 1)) for _ in range(3))
        if other is not None:
            small = min(draws, 200_000)  # OpenDP takes a Python list: keep its run short
            entry["opendp_draws_per_second"] = small / min(_timed(lambda: other(small, 1)) for _ in range(2))
            entry["ratio_to_opendp"] = entry["opendp_draws_per_second"] / entry["exact_draws_per_second"]
        rows.append(entry)
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
    print("exact samplers (ratio_to_float, ratio_to_opendp: this exact path's time per draw over the other's)")
    print(exact_table(args.draws).to_string(float_format=lambda v: f"{v:.4g}"))
    print()
    table = calibration_table(args.calls)
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))
    print(f"\nanalytic Gaussian calibration: worst {table['analytic_ms_per_call'].max():.3f} ms per call (goal <= 1 ms)")


if __name__ == "__main__":
    main()
