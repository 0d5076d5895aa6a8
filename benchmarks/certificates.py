"""Time and peak memory of measuring integer noise's privacy loss, against the per-shift loop.

    python benchmarks/certificates.py [--periods 100 1000 10000 100000] [--loop-limit 10000]

:meth:`dpopt.mechanisms.integer_noise.PeriodicNoise.worst_ratio` measures the largest
``|ln p(z) - ln p(z + s)|`` over every shift ``1 <= s <= Delta`` on a window of about
``4 Delta`` integers. It used one pass per shift (O(Delta^2): 160 s for geometric noise
with sensitivity 1e5, session 19); it now takes one sliding maximum and minimum
(:func:`~dpopt.mechanisms.integer_noise.forward_window_losses`, O(Delta)). The baseline,
run in the same process on the same noise, is that loop (``per_shift_loop`` below, the
old code), up to ``--loop-limit``; both must give the same loss to the last bit.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from typing import Any, Callable

import numpy as np
import pandas as pd

from dpopt.certificates import log_ratios
from dpopt.mechanisms.integer_noise import PeriodicNoise, forward_window_losses


def per_shift_loop(noise: PeriodicNoise) -> float:
    """The loss as measured before session 19: one pass of ``log_ratios`` per shift."""
    m, d = noise.half_width, noise.period
    ext = noise.pmf(np.arange(-m - d, m + d + 1))
    return max(float(log_ratios(ext[:-s], ext[s:]).max()) for s in range(1, d + 1))


def _measure(run: Callable[[], Any]) -> tuple[float, float, Any]:
    start = time.perf_counter()
    value = run()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    run()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak, value


def table(periods: list[int], loop_limit: int, epsilon: float = 1.0) -> pd.DataFrame:
    forward_window_losses(np.ones(3), 1)  # imports scipy.ndimage outside the timings
    rows = []
    for period in periods:
        noise = PeriodicNoise.geometric(period, float(np.exp(-epsilon)))
        seconds, mib, loss = _measure(lambda: noise.worst_ratio()[0])
        row = {"period": period, "window": noise.window.size, "seconds": seconds, "peak_MiB": mib, "loss": loss}
        if period <= loop_limit:
            base_seconds, base_mib, base_loss = _measure(lambda: per_shift_loop(noise))
            row |= {"loop_seconds": base_seconds, "loop_peak_MiB": base_mib, "speedup": base_seconds / seconds,
                    "memory_ratio": mib / base_mib, "same_loss": base_loss == loss}
        rows.append(row)
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--periods", type=int, nargs="+", default=[100, 1000, 10_000, 100_000])
    parser.add_argument("--loop-limit", type=int, default=10_000)
    args = parser.parse_args()
    pd.set_option("display.width", 160)
    print(table(args.periods, args.loop_limit).to_string(float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
