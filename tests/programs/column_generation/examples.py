"""Inputs shared by the column-generation tests."""

import numpy as np

from dpopt.losses import loss_table

#: The named losses column generation has master forms for.
NAMED = ["absolute", "squared", "zero_one"]


def random_remap(n: int, rng: np.random.Generator, width: int = 3) -> np.ndarray:
    """A row-stochastic (n+1) x (n+1) remap with three random entries within ``width`` of each diagonal."""
    t = np.zeros((n + 1, n + 1))
    for r in range(n + 1):
        cols = np.clip(r + rng.integers(-width, width + 1, size=3), 0, n)
        t[r, cols] += rng.random(3)
    return t / t.sum(axis=1, keepdims=True)


def capped_table(n: int) -> np.ndarray:
    """A monotone loss that is flat beyond distance 4 and differs from row to row."""
    return (1.0 + np.arange(n + 1)[:, None] / n) * np.minimum(loss_table("absolute", n), 4.0) ** 1.5
