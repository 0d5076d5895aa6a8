import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import sparse, stats

import dpopt
from dpopt.mechanisms.factored import FactoredMechanism
from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.validation import InvalidParameterError
from tests.conftest import examples


def _remap(n, seed):
    rng = np.random.default_rng(seed)
    t = sparse.random_array((n + 1, n + 1), density=0.05, rng=rng).tolil()
    t.setdiag(1.0)
    return t.tocsr()


def test_dense_is_g_times_t():
    f = FactoredMechanism.from_remap(40, 0.6, _remap(40, 0))
    np.testing.assert_allclose(f.dense(), geometric_matrix(40, 0.6) @ f.remap.toarray(), atol=1e-15)
    assert np.allclose(f.remap.sum(axis=1), 1)


def test_certificate_in_log_space_survives_underflow():
    """alpha^600 underflows to subnormals; the dense ratio test would fail, the log one is exact."""
    f = FactoredMechanism.from_remap(600, 0.3, sparse.eye_array(601, format="csr"))
    assert not dpopt.certify(f.dense(), -np.log(0.3)).ok  # float ratios of subnormals are wrong
    cert = f.certificate(-np.log(0.3))
    assert cert.ok and cert.max_privacy_loss == pytest.approx(-np.log(0.3), rel=1e-12)


def test_certificate_agrees_with_dense_measurement_where_representable():
    f = FactoredMechanism.from_remap(60, 0.7, _remap(60, 3))
    assert f.certificate(-np.log(0.7)).max_privacy_loss == pytest.approx(
        dpopt.certify(f.dense(), -np.log(0.7)).max_privacy_loss, rel=1e-12
    )


@st.composite
def remaps(draw: st.DrawFn) -> FactoredMechanism:
    """Random sparse remaps: wide and narrow column spans, empty columns, any alpha."""
    n = draw(st.integers(1, 40))
    alpha = draw(st.floats(0.05, 0.95))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    density = draw(st.floats(0.0, 0.3))
    t = sparse.random_array((n + 1, n + 1), density=density, rng=rng).tolil()
    targets = rng.integers(0, n + 1, size=n + 1) if draw(st.booleans()) else np.arange(n + 1)
    t[np.arange(n + 1), targets] = 1.0  # every row needs mass; random targets leave columns empty
    return FactoredMechanism.from_remap(n, alpha, t.tocsr())


@settings(max_examples=examples(80))
@given(remaps())
def test_the_certificate_from_the_entries_equals_the_dense_measurement(f):
    """Four values a gap between a column's entries and two a column (the ratio rises
    across a gap; ln x is convex in it); the dense matrix measures every pair."""
    epsilon = -np.log(f.alpha)
    cert, dense = f.certificate(epsilon), dpopt.certify(f.dense(), epsilon)
    _same_measurement(f, cert, dense)


def _same_measurement(f, cert, dense):
    assert cert.max_privacy_loss == pytest.approx(dense.max_privacy_loss, rel=1e-10, abs=1e-13)
    assert cert.min_entry == pytest.approx(dense.min_entry, rel=1e-9, abs=1e-300)
    assert cert.max_row_sum_error < 1e-12 and cert.ok == dense.ok
    i, j, c = cert.worst_pair
    x = f.dense()
    assert abs(np.log(x[i, c]) - np.log(x[j, c])) == pytest.approx(cert.max_privacy_loss, rel=1e-10, abs=1e-13)


@settings(max_examples=examples(25), deadline=None)
@given(st.integers(50, 400), st.floats(0.9, 0.999), st.integers(0, 2**32 - 1))
def test_long_gaps_between_entries_are_measured_at_their_ends_and_centre(n, alpha, seed):
    # each row sent to one or two far targets: columns with few entries and long gaps, where
    # the least entry lies inside a gap and the worst ratio at its ends
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n + 1), 2)
    targets = rng.integers(0, n + 1, size=rows.size)
    remap = sparse.csr_array((rng.uniform(0.1, 1.0, size=rows.size), (rows, targets)), shape=(n + 1, n + 1))
    f = FactoredMechanism.from_remap(n, alpha, remap)
    _same_measurement(f, f.certificate(-np.log(alpha)), dpopt.certify(f.dense(), -np.log(alpha)))


def test_a_long_column_is_measured_from_its_entries():
    n = 3000  # two counts far apart: each column of T holds 1500 entries over 1500 rows
    remap = sparse.csr_array((np.ones(n + 1), (np.arange(n + 1), np.where(np.arange(n + 1) <= n // 2, 0, n))), shape=(n + 1, n + 1))
    f = FactoredMechanism.from_remap(n, 0.99, remap)
    _same_measurement(f, f.certificate(0.0101), dpopt.certify(f.dense(), 0.0101))


def test_sampling_through_the_factors_matches_the_dense_row():
    f = FactoredMechanism.from_remap(12, 0.5, _remap(12, 5))
    draws = f.sample(4, 100_000, np.random.default_rng(8))
    observed = np.bincount(draws, minlength=13)
    expected = f.dense()[4] * draws.size
    keep = expected > 5
    assert stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()).pvalue > 1e-3


def test_sampling_never_draws_a_float_row_that_underflows(monkeypatch):
    """n = 600, alpha = 0.2: G's float rows hold zeros beside a neighbour's non-zeros (the
    certificate, in log space, is exact). Releases then come from the two-sided geometric
    itself, whose law is still G's row."""
    import dpopt.mechanisms.factored as factored

    f = FactoredMechanism.from_remap(600, 0.2, sparse.eye_array(601, format="csr"))
    assert f.certificate(-np.log(0.2)).ok
    real_choice = factored.exact_choice

    def refuse_rows_with_zeros(weights, count, source):
        assert np.min(weights) > 0, "sampled a float row of G that underflows"
        return real_choice(weights, count, source)

    monkeypatch.setattr(factored, "exact_choice", refuse_rows_with_zeros)
    for row in (0, 300, 600):  # 0.2^300 = e^-483: the middle row's floats are still faithful
        draws = f.sample(row, 60_000, np.random.default_rng(row))
        observed = np.bincount(draws, minlength=601)
        expected = geometric_matrix(600, 0.2)[row] * draws.size
        keep = expected > 5
        assert observed[~keep].sum() < 10
        assert stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()).pvalue > 1e-3


def test_negative_or_misshaped_remaps_rejected():
    with pytest.raises(InvalidParameterError):
        FactoredMechanism(n=2, alpha=0.5, remap=sparse.csr_array(-np.eye(3)))
    with pytest.raises(InvalidParameterError):
        FactoredMechanism(n=3, alpha=0.5, remap=sparse.csr_array(np.eye(3)))


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(1, 35), st.floats(0.02, 0.999), st.sampled_from(["absolute", "squared"]), st.integers(0, 2**32 - 1),
       st.sampled_from([1, 7, 1 << 22]))
def test_named_row_losses_equal_the_dense_expected_losses(n, alpha, loss, seed, budget):
    """The kernel recurrences (plus the absolute loss's corrections, cut into any budget)
    against sum_r' L[i, r'] (G T)[i, r'] with G T formed densely, for remaps with entries
    far from the diagonal in both directions."""
    rng = np.random.default_rng(seed)
    rows = np.r_[np.arange(n + 1), rng.integers(0, n + 1, 2 * n)]
    t = sparse.csr_array((rng.random(rows.size), (rows, rng.integers(0, n + 1, rows.size))), shape=(n + 1, n + 1))
    f = FactoredMechanism.from_remap(n, alpha, t)
    table = dpopt.CountQuery(n=n, alpha=alpha, loss=loss).loss_matrix
    dense = np.einsum("ij,ij->i", table, geometric_matrix(n, alpha) @ f.remap.toarray())
    wanted = np.sort(rng.choice(n + 1, size=rng.integers(1, n + 2), replace=False))
    np.testing.assert_allclose(f.named_row_losses(loss, wanted, budget=budget), dense[wanted], rtol=1e-12)


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(1, 35), st.one_of(st.floats(1e-9, 1e-3), st.floats(0.02, 0.99999)), st.integers(0, 2**32 - 1))
def test_zero_one_named_losses_equal_the_dense_ones(n, alpha, seed):
    """1 - x[i, i] plus the rows' rounding by recurrences, within a few ulps of the dense sum
    at any alpha; through expected_losses (small losses summed densely) within 1e-11 relative."""
    rng = np.random.default_rng(seed)
    rows = np.r_[np.arange(n + 1), rng.integers(0, n + 1, n)]
    t = sparse.csr_array((rng.random(rows.size) ** 4, (rows, np.r_[np.arange(n + 1), rng.integers(0, n + 1, n)])), shape=(n + 1, n + 1))
    f = FactoredMechanism.from_remap(n, alpha, t)
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss="zero_one")
    dense = np.einsum("ij,ij->i", problem.loss_matrix, geometric_matrix(n, alpha) @ f.remap.toarray())
    every = np.arange(n + 1)
    np.testing.assert_allclose(f.named_row_losses("zero_one", every), dense, rtol=0, atol=2e-15)
    np.testing.assert_allclose(f.expected_losses("zero_one", problem.loss_rows, every), dense, rtol=1e-11)


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(40, 400), st.floats(0.05, 0.5), st.sampled_from(["absolute", "squared"]), st.integers(0, 2**32 - 1),
       st.floats(0.0, 1e-13))
def test_small_absolute_and_squared_losses_are_the_dense_ones_and_never_negative(n, alpha, loss, seed, stray):
    """T maps far rows onto a few far counts, with stray entries of 1e-13 or less next to them (as
    a master solved to its tolerance leaves): the losses of those counts are ~1e-12 or far below,
    where the recurrences' rounding (~1e-14 absolute) is not small; expected_losses sums them
    densely, so they match the dense sums to 1e-11 relative and are never below 0."""
    rng = np.random.default_rng(seed)
    counts = np.array([3, n // 2, n - 3])
    nearest = counts[np.argmin(np.abs(np.arange(n + 1)[:, None] - counts[None, :]), axis=1)]
    strays = np.minimum(nearest + rng.integers(1, 20, n + 1), n)
    t = sparse.csr_array((np.r_[np.ones(n + 1), np.full(n + 1, stray)], (np.r_[np.arange(n + 1), np.arange(n + 1)], np.r_[nearest, strays])),
                         shape=(n + 1, n + 1))
    f = FactoredMechanism.from_remap(n, alpha, t)
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss=loss, side_information=counts.tolist())
    dense = np.einsum("ij,ij->i", problem.loss_matrix[counts], (geometric_matrix(n, alpha) @ f.remap.toarray())[counts])
    losses = f.expected_losses(loss, problem.loss_rows, counts)
    assert np.all(losses >= 0)
    np.testing.assert_allclose(losses, dense, rtol=1e-11, atol=1e-300)


def test_named_row_losses_refuse_other_losses():
    f = FactoredMechanism.from_remap(5, 0.5, sparse.eye_array(6, format="csr"))
    with pytest.raises(InvalidParameterError, match="loss"):
        f.named_row_losses("cubic", np.arange(6))


def test_named_work_counts_the_absolute_corrections():
    # row 0 -> 5 corrects rows 0..4; row 6 -> 2 corrects rows 3..5; the rest are diagonal
    t = sparse.eye_array(8, format="lil")
    t[0, 0], t[0, 5], t[6, 6], t[6, 2] = 0.0, 1.0, 0.0, 1.0
    f = FactoredMechanism.from_remap(7, 0.5, t.tocsr())
    assert f.named_work("squared") == 8 + 8
    assert f.named_work("absolute") == 8 + 8 + 5 + 3
