"""Wu-Xia-He Section 6.2: ring densities of Theorems 2 and 3 for sum queries with a neighbouring set V."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

import dpopt
from dpopt.mechanisms.neighbouring_sets import (
    check_neighbouring_set,
    merge_intervals,
    minkowski_sum,
    ring_noise,
    staircase_noise,
    subtract_intervals,
    symmetric_shifts,
)
from dpopt.mechanisms.staircase import StaircaseMechanism, optimal_gamma
from dpopt.validation import InvalidParameterError
from tests.conftest import examples

PAPER_SETS = {  # Wu-Xia-He Section 6.2, Fig. 7 (a)-(d)
    "V1": [[0, 1], [1000, 1001]],
    "V2": [[0, 100], [1000, 1001]],
    "V3": [[0, 500], [1000, 1001]],
    "V4": [[0, 1001]],
}


@st.composite
def neighbouring_sets(draw):
    """1-2 intervals with integer ends in [0, 12], at least one of positive length."""
    count = draw(st.integers(1, 2))
    intervals = []
    for _ in range(count):
        lo = draw(st.integers(0, 11))
        intervals.append([lo, draw(st.integers(lo, 12))])
    top = max(range(count), key=lambda k: intervals[k][1])
    lo, hi = intervals[top]
    if lo == hi:  # Delta must lie in an interval of positive length (Proposition 3)
        intervals[top] = [max(hi - 1, 0), max(hi, 1)]
    return check_neighbouring_set(intervals)


def _in_sum(z: float, w: np.ndarray, steps: int) -> bool:
    """Is z a sum of at most ``steps`` elements of W (brute force over how many of each interval)?

    Sums of single points of W only (a point interval such as {3} in V = {3} U [4, 5]) are
    left out: they are null sets, where a density may take any value (hypothesis found z = 3
    there, level 1 by the points and 3 by the density)."""
    for counts in itertools.product(range(steps + 1), repeat=len(w)):
        if sum(counts) <= steps:
            lo, hi = float(np.dot(counts, w[:, 0])), float(np.dot(counts, w[:, 1]))
            if hi - lo > 1e-9 and lo - 1e-9 <= z <= hi + 1e-9:
                return True
    return False


@settings(max_examples=examples(25), deadline=None)
@given(v=neighbouring_sets(), epsilon=st.floats(0.2, 3.0), data=st.data())
def test_ring_levels_are_the_fewest_steps_that_reach_a_value(v, epsilon, data):
    """Theorem 2's density at z is e^(-i eps) for the least i with z in the i-fold sum of W, checked by brute force."""
    noise, _ = ring_noise(v, epsilon, 0.0)
    w = symmetric_shifts(v)
    for _ in range(6):
        z = data.draw(st.floats(0.0, 2 * float(v.max())))
        if np.any(np.isclose(z, noise.breaks, atol=1e-6)):
            continue  # at a breakpoint either side's level is right
        # the density is stored relative to its largest value, level 1 (level 0 is the point 0)
        level = 1 + round(-np.log(noise.pdf(z) * noise.mass) / epsilon)
        if level > 6:
            continue  # the brute force grows as level^|W|
        assert _in_sum(z, w, level) and not _in_sum(z, w, level - 1)


@settings(max_examples=examples(30), deadline=None)
@given(v=neighbouring_sets(), epsilon=st.floats(0.05, 5.0), delta=st.sampled_from([0.0, 0.5, 1.0, 3.0]))
def test_corollary_1_measured_loss_is_epsilon(v, epsilon, delta):
    """Corollary 1: for a linear query Theorems 2 and 3 are eps-DP (not only 2 eps), and eps is attained."""
    noise, _ = ring_noise(v, epsilon, delta)
    loss, _, _ = noise.privacy_loss(symmetric_shifts(v))
    assert loss == pytest.approx(epsilon, rel=1e-9)


@settings(max_examples=examples(30), deadline=None)
@given(v=neighbouring_sets(), delta=st.sampled_from([0.0, 0.5, 2.0]))
def test_rings_partition_the_line(v, delta):
    """Lemma 2's partition: the rings tile [0, c) with no gap or overlap, levels rising by at most one per step."""
    noise, converged = ring_noise(v, 1.0, delta)
    assert noise.breaks[0] == 0 and np.all(np.diff(noise.breaks) > 0)
    top_level = 0 if delta > 0 else 1  # values are stored relative to the top level (level 0 is the point 0 when delta = 0)
    assert -noise.log_values.min() == pytest.approx(converged + 1 - top_level)


def test_paper_sets_converge_where_the_paper_says_and_beyond():
    """Proposition 3 bounds the outer interval's overlap (Delta / (c - b) = 1001 steps for V1); the rings
    converge once every gap has closed: V1 at 1000, V2 at 901, V3 at 501, V4 at 1."""
    converged = {name: ring_noise(check_neighbouring_set(v), 1.0)[1] for name, v in PAPER_SETS.items()}
    assert converged == {"V1": 1000, "V2": 901, "V3": 501, "V4": 1}


#: V2's 900 steps make quad slow (~27 s a case on 2 cores); V3 and V4 take the same code path.
@pytest.mark.parametrize("name", [pytest.param("V2", marks=pytest.mark.slow), "V3", "V4"])
@pytest.mark.parametrize("delta", [0.0, 10.0])
def test_exact_moments_match_numerical_integration(name, delta):
    v = check_neighbouring_set(PAPER_SETS[name])
    noise, _ = ring_noise(v, 1.0, delta)
    d, top = float(v.max()), 60 * float(v.max())

    def integral(power):
        total = 0.0
        for start in np.arange(0.0, top, d):
            inside = noise.breaks[(noise.breaks > start) & (noise.breaks < start + d)]
            total += integrate.quad(lambda z: z**power * noise.pdf(z), start, start + d, points=inside[:100], limit=400)[0]
        return 2 * total

    assert integral(0) == pytest.approx(1.0, rel=1e-7)
    assert integral(1) == pytest.approx(noise.moment(1), rel=1e-7)
    assert integral(2) == pytest.approx(noise.moment(2), rel=1e-7)


@pytest.mark.parametrize("name", list(PAPER_SETS))
def test_sampler_follows_the_cdf(name):
    noise, _ = ring_noise(check_neighbouring_set(PAPER_SETS[name]), 0.7, 5.0)
    draws = noise.sample(20_000, rng=3, exact=False)
    assert stats.kstest(draws, noise.cdf).pvalue > 1e-3
    np.testing.assert_array_equal(draws, noise.sample(20_000, rng=3, exact=False))


def test_sampler_when_the_tail_underflows():
    """V1 at epsilon = 1 with delta = 10 (problems/noise_adding_neighbouring_set.toml): the
    periodic tail sits at density e^-1001, which is 0.0 in floats. Drawing used to divide 0 by
    0 for the tail's pieces (a RuntimeWarning, an error under this suite's filter)."""
    noise, _ = ring_noise(check_neighbouring_set(PAPER_SETS["V1"]), 1.0, 10.0)
    assert not np.exp(noise.log_values[noise._first_of_period:]).any()
    draws = noise.sample(20_000, rng=5, exact=False)
    assert np.all(np.abs(draws) < noise.cutoff)
    assert stats.kstest(draws, noise.cdf).pvalue > 1e-3


def test_cdf_is_the_integral_of_the_pdf():
    """The cdf (cumulative sums and the tail's geometric series) against the pdf summed piece by piece."""
    noise, _ = ring_noise(check_neighbouring_set(PAPER_SETS["V2"]), 0.5, 3.0)
    d = noise.period
    tail_breaks = noise.breaks[noise.breaks >= noise.cutoff - d] - (noise.cutoff - d)
    line = np.unique(np.concatenate([noise.breaks] + [noise.cutoff + q * d + tail_breaks for q in range(40)]))
    for z in [-2500.0, -10.0, 0.0, 1.0, 777.7, 5005.0, 40000.0, noise.cutoff + 3.5 * d]:
        points = np.unique(np.concatenate([[0.0, abs(z)], line[line < abs(z)]]))
        half = float(np.sum(noise.pdf((points[1:] + points[:-1]) / 2) * np.diff(points)))
        assert noise.cdf(z) == pytest.approx(0.5 + np.sign(z) * half, abs=1e-12)


@pytest.mark.parametrize("cost", ["absolute", "squared"])
def test_staircase_as_pieces_is_the_staircase(cost):
    epsilon, d = 0.9, 7.0
    gamma = optimal_gamma(epsilon, cost)
    pieces, reference = staircase_noise(d, epsilon, gamma), StaircaseMechanism(sensitivity=d, epsilon=epsilon, cost=cost)
    z = np.linspace(-80, 80, 1001)
    np.testing.assert_allclose(pieces.pdf(z), reference.pdf(z), rtol=1e-12)
    np.testing.assert_allclose(pieces.cdf(z), reference.cdf(z), atol=1e-14)
    assert pieces.moment(1) == pytest.approx(reference.expected_absolute_error(), rel=1e-12)
    assert pieces.moment(2) == pytest.approx(reference.variance(), rel=1e-12)
    assert pieces.privacy_loss(np.array([[-d, d]]))[0] == pytest.approx(epsilon)
    assert pieces.privacy_loss(np.array([[-2 * d, 2 * d]]))[0] == pytest.approx(2 * epsilon)  # a wider shift is caught


def test_interval_algebra():
    a = merge_intervals([[3, 4], [0, 1], [1, 2], [6, 6]])
    np.testing.assert_array_equal(a, [[0, 2], [3, 4], [6, 6]])
    np.testing.assert_array_equal(minkowski_sum(np.array([[0.0, 1.0]]), np.array([[0.0, 0.0], [5.0, 5.5]])), [[0, 1], [5, 6.5]])
    np.testing.assert_array_equal(subtract_intervals(np.array([[0.0, 10.0]]), np.array([[2.0, 3.0], [5.0, 10.0]])), [[0, 2], [3, 5]])


@pytest.mark.parametrize("bad", [[[0, 0]], [[2, 1]], [[-1, 1]], [[0, float("nan")]], "0-1", [[0, 1, 2]], [], [[0, 1], [12, 12]], [[0, 1e-3], [1e6, 1e6 + 1e-3]]])
def test_bad_neighbouring_sets_are_refused_naming_the_field(bad):
    with pytest.raises(InvalidParameterError, match="neighbouring_set"):
        ring_noise(check_neighbouring_set(bad), 1.0)


@pytest.mark.parametrize("v", [[[0, 1e-200]], [[1e-300, 1e-299]], [[0, 9.9e-13]]])
def test_a_neighbouring_set_below_the_smallest_scale_is_refused(v):
    """Until 2026-11-29 V = [0, 1e-200] was taken and every method reported E|Z| = 0 (its
    moments underflow); the smallest largest element is 1e-12, mirroring the largest, 1e12."""
    with pytest.raises(InvalidParameterError, match="'neighbouring_set'.*at least 1e-12"):
        check_neighbouring_set(v)
    with pytest.raises(InvalidParameterError, match="'neighbouring_set'"):
        dpopt.NeighbouringSetNoise(neighbouring_set=v, epsilon=1.0)
    staircase = dpopt.solve(dpopt.NeighbouringSetNoise(neighbouring_set=[[0, 1e-12]], epsilon=1.0), "staircase")
    assert staircase.objective == pytest.approx(0.9595173756674719e-12, rel=1e-9)  # E|Z| scales with Delta
