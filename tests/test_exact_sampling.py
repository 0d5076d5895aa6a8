"""Exact sampling from finite mechanisms (dpopt.exact_sampling): what is sampled is what is certified."""

import math
from bisect import bisect_right
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dpopt
import dpopt.exact_sampling as es
from dpopt.exact_sampling import BlockedDiscrete, ExactDiscrete, exact_choice
from dpopt.sampling import SecureRandom
from dpopt.validation import InvalidParameterError
from tests.distributions import geometric_fit_pvalue
from tests.conftest import examples

weights = st.lists(st.one_of(st.just(0.0), st.floats(1e-300, 1e3), st.floats(1e-320, 1e-300)), min_size=1, max_size=12).filter(
    lambda w: any(v > 0 for v in w))


@settings(max_examples=examples(60), deadline=None)
@given(w=weights)
def test_probabilities_are_the_float_entries_as_exact_rationals(w):
    """P(j) = w_j / sum w exactly, every w_j read as the dyadic rational it is; zeros and only zeros
    are outside the support, however small the positive entries (subnormals included)."""
    d = ExactDiscrete(w)
    total = sum(Fraction(v) for v in w)
    for j, v in enumerate(w):
        numerator, denominator = d.probability(j)
        assert Fraction(numerator, denominator) == Fraction(v) / total
    np.testing.assert_array_equal(d.support(), np.flatnonzero(np.array(w) > 0))


@settings(max_examples=examples(40), deadline=None)
@given(w=weights, seed=st.integers(0, 2**32))
def test_the_top_64_bits_decide_exactly_when_they_say_so(w, seed):
    """Whenever the fast path decides from R's top 64 bits, every completion of R's low bits gives
    the same index by exact integer search (and a rejection is a rejection for all of them)."""
    d = ExactDiscrete(w)
    words = np.random.default_rng(seed).integers(0, 2**64, size=200, dtype=np.uint64)
    if d.shift == 0:
        r = words >> np.uint64(64 - d.bits) if d.bits < 64 else words
        for value in r[:50]:
            expected = bisect_right(d.cumulative, int(value)) if int(value) < d.total else None
            got = np.searchsorted(d.high, np.array([value]), side="right")[0] if int(value) < d.total else None
            assert got == expected
        return
    index = np.searchsorted(d.high, words, side="left")
    for word, i in zip(words, index):
        if i < d.size and d.high[i] == word:
            continue  # a tie: resolved by exact comparison (tested below)
        for low in (0, (1 << d.shift) - 1):
            r = (int(word) << d.shift) | low
            assert (r >= d.total) == (i == d.size)
            if r < d.total:
                assert bisect_right(d.cumulative, r) == i


def test_a_tie_on_the_top_bits_is_resolved_in_exact_arithmetic(monkeypatch):
    """Weights (1 - tiny, tiny): force R's top 64 bits onto the boundary between them; the low bits then
    decide, so the tiny entry is drawn exactly when R's low bits fall below its share."""
    tiny = 2.0**-80
    d = ExactDiscrete([1.0 - tiny, tiny])
    assert d.shift > 0
    boundary_high = int(d.high[0])
    calls = []

    def words(source, size):
        calls.append(size)
        if len(calls) == 1:
            return np.full(size, boundary_high, dtype=np.uint64)  # every draw ties with boundary 0
        return np.zeros(size, dtype=np.uint64)  # low bits all zero

    monkeypatch.setattr(es, "random_words", words)
    drawn = d._attempt(4, source=None)
    low_of_boundary = d.cumulative[0] & ((1 << d.shift) - 1)
    expected = 0 if 0 < low_of_boundary else 1
    assert drawn.tolist() == [expected] * 4


def test_an_entry_far_below_double_precision_is_drawn_with_its_exact_probability(monkeypatch):
    """The float inverse CDF cannot draw an entry of 1e-30 after 1 at all (its cumulative sum rounds to 1);
    the exact sampler gives it probability exactly 1e-30 / (1 + 1e-30), and draws it for exactly the R in
    [C_0, C_1): here R = C_0 is forced (its top word, then its low bits) and index 1 comes out."""
    d = ExactDiscrete([1.0, 1e-30])
    numerator, denominator = d.probability(1)
    assert Fraction(numerator, denominator) == Fraction(1e-30) / (1 + Fraction(1e-30))
    assert np.cumsum([1.0, 1e-30])[0] == np.cumsum([1.0, 1e-30])[1]  # what the float path sees
    boundary = d.cumulative[0]
    monkeypatch.setattr(es, "random_words", lambda source, size: np.full(size, boundary >> d.shift, dtype=np.uint64))
    monkeypatch.setattr(es, "_random_bits", lambda source, bits: boundary & ((1 << bits) - 1))
    assert d._attempt(3, source=None).tolist() == [1, 1, 1]
    monkeypatch.setattr(es, "_random_bits", lambda source, bits: 0)  # R = the top word's first integer
    r = (boundary >> d.shift) << d.shift
    assert d._attempt(3, source=None).tolist() == [bisect_right(d.cumulative, r)] * 3


@pytest.mark.parametrize("source", ["seeded", "secure"])
def test_draws_follow_the_exact_pmf_and_a_wrong_pmf_is_rejected(source):
    p = np.array([0.05, 0.3, 0.0, 0.15, 0.5])
    rng = np.random.default_rng(12) if source == "seeded" else SecureRandom()
    count = 200_000 if source == "seeded" else 20_000
    draws = exact_choice(p, count, rng)
    observed = np.bincount(draws, minlength=p.size)
    assert observed[2] == 0
    keep = p > 0
    assert stats.chisquare(observed[keep], count * p[keep]).pvalue > 1e-4
    wrong = np.array([0.06, 0.29, 0.0, 0.15, 0.5])  # the control: one point of mass moved
    if source == "seeded":
        assert stats.chisquare(observed[keep], count * wrong[keep]).pvalue < 1e-6


def test_bad_weights_are_refused():
    for bad in ([], [0.0, 0.0], [1.0, -0.1], [1.0, np.nan], [np.inf]):
        for sampler in (ExactDiscrete, BlockedDiscrete):
            with pytest.raises(InvalidParameterError, match="weights"):
                sampler(bad)


@settings(max_examples=examples(25), deadline=None)
@given(w=st.lists(st.one_of(st.just(0.0), st.floats(1e-300, 1e300), st.floats(5e-324, 1e-300)), min_size=1, max_size=3000).filter(
    lambda w: any(v > 0 for v in w)), block=st.sampled_from([3, 16, es.BLOCK]))
def test_the_blocked_sampler_has_the_exact_probabilities(w, block):
    """Block first, then the index within it: P(j) = w_j / sum w exactly (spans of 2,100 binades,
    subnormals, zeros, blocks of 3 and 16 weights as well as the real size)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(es, "BLOCK", block)
        blocked, total = BlockedDiscrete(w), sum(Fraction(v) for v in w)
        for j in sorted({0, len(w) - 1, *range(0, len(w), 37)}):
            assert Fraction(*blocked.probability(j)) == Fraction(w[j]) / total


def test_exact_choice_draws_by_blocks_from_many_weights_and_follows_the_pmf():
    z = np.arange(-100_000, 100_001)
    p = np.exp(-np.abs(z) / 20_000.0)
    p[100_000 + 5000: 100_000 + 6000] = 0.0  # a hole: never drawn
    draws = exact_choice(p, 60_000, np.random.default_rng(4))
    assert not np.any((draws >= 105_000) & (draws < 106_000))
    edges = np.linspace(0, z.size, 41).astype(int)  # 40 cells of the index line
    observed = np.histogram(draws, bins=edges)[0]
    expected = np.add.reduceat(p, edges[:-1]) / p.sum() * draws.size
    assert stats.chisquare(observed, expected).pvalue > 1e-4
    shifted = np.roll(expected, 1)  # the control: the same cells one place over
    assert stats.chisquare(observed, shifted * observed.sum() / shifted.sum()).pvalue < 1e-6


def _neighbouring_rows(solution):
    if solution.kind == "finite_query":
        return [tuple(p) for p in solution.problem.privacy_pairs()[0]]
    m = len(solution.inputs)
    return [(i, i + 1) for i in range(m - 1)]


@pytest.mark.parametrize("problem", [
    dpopt.CountQuery(n=40, alpha=0.02, loss="absolute"),
    dpopt.CountQuery(n=6, alpha=0.5, loss="zero_one"),
    dpopt.MultiLevelRelease(n=8, alphas=[0.1, 0.7]),
    dpopt.FiniteQuery(universe={"type": "explicit", "values": [0, 1, 3, 3, 6], "neighbours": [[0, 1], [1, 2], [1, 3], [2, 4], [3, 4]]},
                      epsilon=0.8),
], ids=["count-tiny-alpha", "count-zero-one", "multi-level", "finite-universe"])
def test_neighbours_have_the_same_support_when_the_certificate_is_finite(problem):
    """The set of outputs sampled with positive probability (exactly the positive entries) is the same for
    neighbouring inputs: an output possible under one and impossible under the other would be an infinite loss."""
    solution = dpopt.solve(problem)
    assert solution.certificate.ok and np.isfinite(solution.certificate.max_privacy_loss)
    assert solution.summary()["sampler"] == (es.EXACT_SAMPLER if solution.factored is None else es.FACTORED_SAMPLER)
    matrix = solution.mechanism.to_numpy()
    supports = [ExactDiscrete(row).support() for row in matrix]
    for a, b in _neighbouring_rows(solution):
        np.testing.assert_array_equal(supports[a], supports[b])


def test_every_solution_release_reports_its_sampler_and_matrix_releases_are_exact():
    solution = dpopt.solve(dpopt.CountQuery(n=5, alpha=0.3))
    assert solution.summary()["sampler"].startswith("exact")
    laplace = dpopt.solve(dpopt.Calibration(mechanism="laplace", epsilon=1.0))
    assert laplace.summary()["sampler"].startswith("float64")


# --- exponential mechanisms: weights exp(logit) that float64 would flush to zero -------------------------

@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.floats(-1e5, 50.0), min_size=1, max_size=10))
def test_dyadic_exp_is_exp_to_a_few_ulps_and_never_zero(logits):
    """``mantissa 2**(exponent - 52)`` against exp(l - max) in 50-digit decimal arithmetic: relative error
    within a few ulps of the logit's own rounding (|l| 2**-53), and positive at every spread."""
    from decimal import Decimal, getcontext

    getcontext().prec = 50
    mantissa, exponent = es.dyadic_exp(logits)
    top = max(logits)
    for l, m, e in zip(logits, mantissa, exponent):
        exact = (Decimal(l) - Decimal(top)).exp()
        weight = Decimal(int(m)) * Decimal(2) ** int(e - 52)
        assert weight > 0 and abs(weight / exact - 1) <= Decimal(4 * 2.0**-53 * (2 + abs(l - top)))


@settings(max_examples=examples(80), deadline=None)
@given(st.integers(1, 2**200), st.integers(1, 2**200), st.lists(st.integers(0, 2**64 - 1), max_size=4))
def test_exact_bernoulli_fraction_decides_ties_by_the_exact_expansion(a, b, later):
    """Force U's first word onto p's (a tie), then U's next words from ``later`` and zeros after: with the
    k words consumed, U lies in [low, low + 2**-64k), and the draw must be True only if all of that
    interval is below p, False only if all of it is at least p."""
    numerator, denominator = min(a, b), max(a, b)
    if numerator == denominator:
        return
    drawn, consumed = _one_draw_on_words(lambda: es.exact_bernoulli_fraction(numerator, denominator, 1, None),
                                         [(numerator << 64) // denominator, *later])
    _assert_decided_by_the_words_read(drawn, consumed, Fraction(numerator, denominator))


def _one_draw_on_words(draw, words_):
    """``draw()`` (one Bernoulli) with the random words taken from ``words_`` and zeros after;
    returns the draw and the words it read."""
    stream = iter(words_)
    consumed: list[int] = []

    def words(source, size):
        consumed.extend(next(stream, 0) for _ in range(size))
        return np.array(consumed[-size:], dtype=np.uint64)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(es, "random_words", words)
        drawn = bool(draw()[0])
    return drawn, consumed


def _assert_decided_by_the_words_read(drawn, consumed, p):
    """With k words read, U lies in [low, low + 2**-64k): True only if all of it is below p,
    False only if all of it is at least p."""
    low = sum(Fraction(w, 2 ** (64 * (i + 1))) for i, w in enumerate(consumed))
    assert (drawn and low + Fraction(1, 2 ** (64 * len(consumed))) <= p) or (not drawn and low >= p)


@settings(max_examples=examples(80), deadline=None)
@given(st.integers(1, 2**300), st.integers(0, 2**300), st.sampled_from([64, 128]),
       st.lists(st.one_of(st.just(0), st.integers(0, 2**64 - 1)), max_size=6))
def test_an_unlikely_coin_reads_p_only_after_leading_zero_words_and_stays_exact(d, n, zeros, words_):
    """p < 2**-zeros: a draw is decided by U's first words unless they are all 0, and then by
    U's further words against p, in exact arithmetic: True only if the whole interval U lies in
    after the words consumed is below p, False only if all of it is at least p."""
    denominator = d
    numerator = n % max(denominator >> zeros, 1) if denominator >> zeros else 0
    built = []

    def fraction():
        built.append(True)
        return numerator, denominator

    drawn, consumed = _one_draw_on_words(lambda: es._unlikely_coin(fraction, zeros, 1, None), words_)
    _assert_decided_by_the_words_read(drawn, consumed, Fraction(numerator, denominator))
    assert bool(built) == (consumed[: zeros // 64] == [0] * (zeros // 64))  # p built only after leading zeros


def test_smalldb_on_a_trillion_records_releases_in_little_memory():
    """Logits 1e11 apart: until 2026-11-29 the tail's exact mass was built for every draw, an
    integer of 1e11 bits (a MemoryError); every release is one of the best candidates, which
    hold all but e^-1e9 of the mass."""
    import dataclasses
    import tracemalloc

    from dpopt.dx.smalldb import SmallDB
    from dpopt.problem_files import load_problem
    from tests.conftest import PROBLEMS

    base = load_problem(PROBLEMS / "dx_smalldb.toml")
    scale = 25_000_000_000
    problem = dataclasses.replace(base, n=40 * scale, histogram=[scale * v for v in base.histogram])
    solution = dpopt.solve(problem, "smalldb_preprocessing")
    db = SmallDB(solution.details["transformed"], solution.details["scale"], problem.metric, problem.synthetic_size)
    candidates, logits = db.logits(problem.histogram)
    best = logits == logits.max()
    assert logits.max() - logits[~best].max() > 1e9  # the rest hold at most e^-1e9 of the mass
    tracemalloc.start()
    try:
        releases = np.asarray(solution.sample(None, 20, rng=1))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20
    answers = db.answers(candidates[best], problem.n)  # a release is a synthetic database's answers
    assert releases.shape == (20, answers.shape[1])
    assert all((answers == row).all(axis=1).any() for row in releases)


def test_exact_bernoulli_fraction_frequencies_and_extremes():
    rng = np.random.default_rng(4)
    assert abs(es.exact_bernoulli_fraction(1, 3, 200_000, rng).mean() - 1 / 3) < 0.005
    assert not es.exact_bernoulli_fraction(1, 1 << 3000, 1000, rng).any()
    assert es.exact_bernoulli_fraction(7, 7, 5, rng).all() and not es.exact_bernoulli_fraction(0, 7, 5, rng).any()
    with pytest.raises(InvalidParameterError):
        es.exact_bernoulli_fraction(8, 7, 1, rng)


@pytest.mark.parametrize("depth", [es.LOG_WEIGHT_DEPTH, 2])
def test_exact_choice_logits_follows_the_softmax(monkeypatch, depth):
    """Depth 2 sends four of the five weights through the tail's exact coins, level by level."""
    monkeypatch.setattr(es, "LOG_WEIGHT_DEPTH", depth)
    logits = np.array([0.0, -1.5, -3.0, -4.5, -6.0])
    draws = es.exact_choice_logits(logits, 300_000, np.random.default_rng(depth))
    observed = np.bincount(draws, minlength=5)
    expected = np.exp(logits) / np.exp(logits).sum() * draws.size
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    assert stats.chisquare(observed, np.roll(expected, 1)).pvalue < 1e-6


def test_smalldb_never_samples_float_probabilities_that_underflow(monkeypatch):
    """SmallDB on 40,000 records: logits 5,833 apart, so the float64 probabilities of 106 of the 120
    candidates are exactly 0 (a neighbouring histogram's need not be); the release draws from the
    logits, where every candidate keeps a positive weight."""
    import dataclasses

    from dpopt.dx.smalldb import SmallDB
    from dpopt.problem_files import load_problem
    from tests.conftest import PROBLEMS

    base = load_problem(PROBLEMS / "dx_smalldb.toml")
    problem = dataclasses.replace(base, n=40_000, histogram=[1000 * v for v in base.histogram])
    solution = dpopt.solve(problem, "smalldb_preprocessing")
    db = SmallDB(solution.details["transformed"], solution.details["scale"], problem.metric, problem.synthetic_size)
    _, floats = db.probabilities(problem.histogram)
    assert (floats == 0).sum() > 100
    _, logits = db.logits(problem.histogram)
    assert (es.dyadic_exp(logits)[0] > 0).all()
    monkeypatch.setattr(es, "exact_choice", lambda *args: pytest.fail("sampled float64 probabilities"))
    releases = solution.sample(None, 50, rng=1)
    assert solution.summary()["sampler"] == es.LOGIT_SAMPLER and np.asarray(releases).shape[0] == 50


@pytest.mark.parametrize("steps", [0.3, 2.5, 1000.0])
def test_geometric_of_scale_follows_the_geometric_law(steps):
    k = es.geometric_of_scale(steps, 100_000, np.random.default_rng(21))
    assert geometric_fit_pvalue(k, np.exp(-1.0 / steps)) > 1e-3


def test_geometric_of_scale_keeps_an_underflowing_ratio_positive(monkeypatch):
    # steps = 1/800: r = e^-800 is 0.0 as a double; its coin must still be the positive M 2**e
    coins = []
    real = es.exact_bernoulli_fraction
    monkeypatch.setattr(es, "exact_bernoulli_fraction", lambda a, b, size, source: coins.append((a, b)) or real(a, b, size, source))
    assert np.all(es.geometric_of_scale(1 / 800, 10, np.random.default_rng(0)) == 0)
    numerator, denominator = coins[0]
    assert numerator > 0 and abs(math.log(numerator) - math.log(denominator) + 800) < 1e-12


@pytest.mark.parametrize("bad", [0.0, 1e-4, -1.0, float("nan"), 2.0**53])
def test_geometric_of_scale_refuses_scales_out_of_range(bad):
    with pytest.raises(InvalidParameterError, match="steps"):
        es.geometric_of_scale(bad, 1, np.random.default_rng(0))


@pytest.mark.parametrize("epsilon", [0.6, 0.01, 1e-9, 1e-15])
def test_exact_geometric_near_one_follows_its_law_in_few_rounds(epsilon):
    # by binary digits: before, b = e^-1e-9 took ~1e9 rounds (hours for one release)
    b = float(np.exp(-epsilon))
    k = es.exact_geometric(b, 50_000, np.random.default_rng(8))
    assert geometric_fit_pvalue(k, b) > 1e-3


@settings(max_examples=examples(60), deadline=None)
@given(st.floats(0.5, 1.0, exclude_min=True, exclude_max=True), st.integers(0, 9))
def test_power_bounds_hold_the_exact_power(b, digit):
    numerator, denominator = b.as_integer_ratio()
    power = (numerator, denominator.bit_length() - 1)
    precision = power[1] + 2 * digit + 2 + 128
    lo, hi = es._power_bounds(power, digit, precision)
    exact = Fraction(numerator, denominator) ** (2**digit) * 2**precision
    assert lo <= exact <= hi


@pytest.mark.parametrize("as_digit", [True, False])
@pytest.mark.parametrize("second", [0, 2**64 - 1])
def test_a_power_coin_undecided_by_its_first_word_is_decided_exactly(monkeypatch, as_digit, second):
    b = float(np.exp(-0.01))
    numerator, denominator = b.as_integer_ratio()
    digit = 3
    q = Fraction(numerator, denominator) ** (2**digit)
    p = q / (1 + q) if as_digit else q
    first = int(p * 2**64)  # inside the window of the first word's bounds: undecided there
    words = iter([first, second] + [0] * 8)
    monkeypatch.setattr(es, "random_words", lambda source, size: np.array([next(words) for _ in range(size)], dtype=np.uint64))
    drawn = es._power_coins((numerator, denominator.bit_length() - 1), digit, as_digit, 1, None)
    u = Fraction(first * 2**64 + second, 2**128)  # U is in [u, u + 2^-128): decided by p's second word
    assert bool(drawn[0]) == (u < p) and (u + Fraction(1, 2**128) <= p or u >= p)


@given(centre=st.integers(-(2**70), 2**70), offsets=st.lists(st.integers(-(2**62), 2**62), max_size=5), scale=st.integers(1, 2**12))
def test_offsets_are_added_in_exact_integer_arithmetic(centre, offsets, scale):
    """``offset_exactly`` is the sum in Python integers, whichever dtype holds it: int64
    arithmetic wrapped a true value of -2**63 plus noise to +9.2e18 (2026-11-28)."""
    got = es.offset_exactly(centre, np.array(offsets, dtype=np.int64), scale)
    assert [int(v) for v in got] == [centre + scale * o for o in offsets]
    if got.dtype != object:
        assert got.dtype == np.int64


@pytest.mark.parametrize("call", [
    lambda rng: es.uniform_below(np.array([-3]), rng),  # drew -9005301551473695489 until 2026-11-29
    lambda rng: es.uniform_below(np.array([0]), rng),
    lambda rng: es.uniform_below(np.array([2.5]), rng),
    lambda rng: es.exact_bernoulli_fraction(1, 1.5, 3, rng),  # sampled as if 1 / 1.5
    lambda rng: es.exact_bernoulli_fraction(True, 2, 3, rng),
    lambda rng: es.offset_exactly(1.5, [1, 2]),  # released 2, 3: the centre truncated to 1
    lambda rng: es.offset_exactly(4, [1, 2], scale=0.5),
], ids=["negative bound", "zero bound", "float bound", "float denominator", "bool numerator", "float centre", "float scale"])
def test_the_building_blocks_refuse_what_they_would_silently_misread(call):
    with pytest.raises(InvalidParameterError):
        call(np.random.default_rng(0))
