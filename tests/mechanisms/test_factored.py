import numpy as np
import pytest
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
