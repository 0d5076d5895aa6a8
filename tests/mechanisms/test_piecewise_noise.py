"""Exact releases of piecewise-constant noise on a grid (PiecewiseNoise.grid_release)."""

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dpopt
from dpopt.cli import main
from dpopt.mechanisms.neighbouring_sets import check_neighbouring_set, ring_noise, staircase_noise
from dpopt.mechanisms import piecewise_noise
from dpopt.mechanisms.piecewise_noise import GRID_SAMPLER, PiecewiseNoise, _decided_cells
from dpopt.problems.noise_adding import NeighbouringSetNoise
from dpopt.validation import InvalidParameterError
from tests.distributions import integer_fit_pvalue
from tests.conftest import examples


def _rounded_law(noise: PiecewiseNoise, x: float, grid: float, cells: np.ndarray) -> np.ndarray:
    """P(release = j g) = P(x + Z in [(j - 1/2) g, (j + 1/2) g)), from the cdf (an independent route)."""
    return noise.cdf(cells * grid + grid / 2 - x) - noise.cdf(cells * grid - grid / 2 - x)


@pytest.mark.parametrize("noise, x, grid", [
    (staircase_noise(1.0, 0.3, 0.4), 0.3, 0.37),  # a heavy tail: many draws go past the cutoff
    (ring_noise(check_neighbouring_set([[0, 4], [9, 10]]), 0.7, 2.0)[0], -12.5, 3.0),
    (ring_noise(check_neighbouring_set([[0, 1], [5, 6]]), 1.2, 0.0)[0], 1e-3, 0.5),
])
def test_grid_release_follows_the_rounded_law(noise, x, grid):
    draws = noise.grid_release(x, grid, 30_000, np.random.default_rng(11))
    cells = np.rint(draws / grid).astype(np.int64)
    assert np.allclose(cells * grid, draws, rtol=1e-12, atol=0)  # every release is a grid point
    assert integer_fit_pvalue(cells, lambda j: _rounded_law(noise, x, grid, j)) > 1e-3
    if noise.decay > 0.7:
        assert np.abs(draws).max() > noise.cutoff + noise.period  # tail periods were drawn


def test_the_exact_fallback_alone_follows_the_rounded_law(monkeypatch):
    # with no draw decided in float64, every cell comes from the rational path on its word's interval
    monkeypatch.setattr(piecewise_noise, "FAST_CELLS", 0.0)
    noise = staircase_noise(1.0, 0.3, 0.4)
    draws = noise.grid_release(0.3, 0.37, 20_000, np.random.default_rng(5))
    cells = np.rint(draws / 0.37).astype(np.int64)
    assert integer_fit_pvalue(cells, lambda j: _rounded_law(noise, 0.3, 0.37, j)) > 1e-3


_WORDS = st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 1, 2**63, 2**64 - 2, 2**64 - 1]))


@st.composite
def _pieces(draw):
    """x, g, lo, hi as floats, often with a cell boundary (j - 1/2) g landing on or next to x + lo or x + hi."""
    g = draw(st.floats(1e-6, 1e3))
    x = draw(st.floats(-1e6, 1e6))
    lo = draw(st.floats(-1e6, 1e6))
    hi = lo + draw(st.floats(1e-9, 1e4))
    if draw(st.booleans()):  # put lo (or hi) at a float next to a cell boundary
        j = round((x + lo) / g)
        target = (j - 0.5) * g - x
        lo = float(np.nextafter(target, draw(st.sampled_from([-np.inf, np.inf])))) if draw(st.booleans()) else target
        if draw(st.booleans()):
            hi, lo = lo, lo - draw(st.floats(1e-9, 1e4))
    return x, g, lo, hi


@settings(max_examples=examples(400), deadline=None)
@given(_pieces(), _WORDS)
def test_a_decided_cell_is_the_floor_of_both_ends_exactly(piece, word):
    x, g, lo, hi = piece
    cells, decided = _decided_cells(x, g, np.array([lo]), np.array([hi]), np.array([word], dtype=np.uint64))
    start = (Fraction(x) + Fraction(lo)) / Fraction(g) + Fraction(1, 2)
    width = (Fraction(hi) - Fraction(lo)) / Fraction(g)
    first, last = start + width * Fraction(word, 2**64), start + width * Fraction(word + 1, 2**64)
    if decided[0]:  # the word's whole interval lies in cell j: floor(first) = j and last <= j + 1
        assert math.floor(first) == int(cells[0]) and last <= int(cells[0]) + 1
    else:  # the float path gives up only beyond FAST_CELLS or with a cell boundary near the interval
        room = Fraction(2.0**-44) * ((abs(Fraction(x)) + max(abs(Fraction(lo)), abs(Fraction(hi)))) / Fraction(g) + 1)
        assert room >= Fraction(2.0**-44) * piecewise_noise.FAST_CELLS or math.floor(first - room) != math.floor(last + room)


def test_grid_release_is_reproducible_and_secure_draws_run():
    noise = staircase_noise(2.0, 1.0, 0.3)
    first = noise.grid_release(5.0, 0.1, 50, np.random.default_rng(3))
    np.testing.assert_array_equal(first, noise.grid_release(5.0, 0.1, 50, np.random.default_rng(3)))
    assert dpopt.sampling.resolve_rng(None, secure=True) is not None
    assert noise.grid_release(5.0, 0.1, 5, dpopt.sampling.resolve_rng(None, secure=True)).shape == (5,)


@settings(max_examples=examples(60), deadline=None)
@given(st.fractions(min_value=-50, max_value=50, max_denominator=64), st.fractions(min_value=Fraction(1, 64), max_value=20, max_denominator=64),
       st.integers(0, 2**32 - 1))
def test_cell_lies_under_the_interval(start, length, seed):
    j = PiecewiseNoise._cell(start, start + length, np.random.default_rng(seed))
    assert j <= start + length and j + 1 > start  # the cell [j, j + 1) meets [start, start + length)


def test_cell_weights_are_the_overlaps():
    # [0.3, 2.6): cells 0, 1, 2 with overlaps 0.7, 1, 0.6
    rng = np.random.default_rng(0)
    draws = np.array([PiecewiseNoise._cell(Fraction(3, 10), Fraction(26, 10), rng) for _ in range(20_000)])
    observed = np.bincount(draws, minlength=3)
    assert stats.chisquare(observed, np.array([0.7, 1.0, 0.6]) / 2.3 * draws.size).pvalue > 1e-3


def test_a_release_grid_makes_sample_exact(capsys, tmp_path):
    path = tmp_path / "v.toml"
    path.write_text('kind = "noise_adding"\nneighbouring_set = [[0, 1], [5, 6]]\nepsilon = 1.0\nrelease_grid = 0.25\n')
    assert main(["sample", str(path), "--method", "privacy_first", "--true-value", "3.3", "--count", "4", "--seed", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sampler"] == GRID_SAMPLER and out["certificate"]["ok"] and "release_grid" in out["certificate"]["covers"]
    assert all(abs(v / 0.25 - round(v / 0.25)) < 1e-9 for v in out["releases"])
    problem = NeighbouringSetNoise(neighbouring_set=[[0, 1], [5, 6]], epsilon=1.0)  # no grid: releases are refused
    with pytest.raises(InvalidParameterError, match="release_grid"):
        dpopt.solve(problem, "privacy_first").sample(3.3, 2, rng=0)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), "0.1", True, 1e-14, 1e300])
def test_bad_release_grids_are_refused_naming_the_field(bad):
    with pytest.raises(InvalidParameterError, match="release_grid"):
        NeighbouringSetNoise(neighbouring_set=[[0, 1], [5, 6]], epsilon=1.0, release_grid=bad)


def test_the_finest_grid_on_the_widest_piece_still_releases():
    # delta <= 1e6 Delta and release_grid >= 2**-40 Delta keep a piece under 2**60 cells
    problem = NeighbouringSetNoise(neighbouring_set=[[0, 1]], epsilon=1.0, delta=1e6, release_grid=2.0**-40)
    solution = dpopt.solve(problem, "compositional")
    noise = solution.details["noise"]
    assert 2**59 < noise.cells_per_piece(problem.release_grid) <= 2**60
    draws = solution.sample(0.5, 20, rng=0)
    assert np.all(np.abs(draws) <= noise.cutoff + 1) and len(np.unique(draws)) > 1
