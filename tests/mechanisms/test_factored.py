import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import sparse, stats

import dpopt
from dpopt.mechanisms.factored import FactoredMechanism
from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.validation import InvalidParameterError


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


@settings(max_examples=60)
@given(remaps())
def test_span_certificate_equals_the_dense_measurement(f):
    """Only the row span of each column of T is computed; the dense matrix measures every pair."""
    epsilon = -np.log(f.alpha)
    cert, dense = f.certificate(epsilon), dpopt.certify(f.dense(), epsilon)
    assert cert.max_privacy_loss == pytest.approx(dense.max_privacy_loss, rel=1e-10)
    assert cert.min_entry == pytest.approx(dense.min_entry, rel=1e-9, abs=1e-300)
    assert cert.max_row_sum_error < 1e-12 and cert.ok
    i, j, c = cert.worst_pair
    x = f.dense()
    assert abs(np.log(x[i, c]) - np.log(x[j, c])) == pytest.approx(cert.max_privacy_loss, rel=1e-10)


@settings(max_examples=20)
@given(remaps(), st.integers(1, 50))
def test_column_log_values_are_the_dense_logs_in_any_budget(f, budget):
    x = f.dense()
    parts = list(f.column_log_values(budget=budget))
    column = np.concatenate([p.column for p in parts])
    row = np.concatenate([p.row for p in parts])
    np.testing.assert_allclose(np.concatenate([p.log_value for p in parts]), np.log(x[row, column]), rtol=1e-12, atol=1e-12)
    t = f.remap.tocsc()
    for c in np.flatnonzero(np.diff(t.indptr)):  # exactly each column's row span, once
        rows = t.indices[t.indptr[c] : t.indptr[c + 1]]
        assert sorted(row[column == c]) == list(range(rows.min(), rows.max() + 1))


def test_sampling_through_the_factors_matches_the_dense_row():
    f = FactoredMechanism.from_remap(12, 0.5, _remap(12, 5))
    draws = f.sample(4, 100_000, np.random.default_rng(8))
    observed = np.bincount(draws, minlength=13)
    expected = f.dense()[4] * draws.size
    keep = expected > 5
    assert stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()).pvalue > 1e-3


def test_negative_or_misshaped_remaps_rejected():
    with pytest.raises(InvalidParameterError):
        FactoredMechanism(n=2, alpha=0.5, remap=sparse.csr_array(-np.eye(3)))
    with pytest.raises(InvalidParameterError):
        FactoredMechanism(n=3, alpha=0.5, remap=sparse.csr_array(np.eye(3)))
