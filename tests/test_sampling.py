import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpopt
from dpopt.certificates import certify
from dpopt.sampling import SecureRandom, resolve_rng, sample_row
from dpopt.validation import InvalidParameterError


@pytest.fixture(scope="module")
def table1():
    return dpopt.solve(dpopt.CountQuery(n=3, alpha=0.25))


def test_seeded_samples_repeat(table1):
    a = table1.sample(2, 50, rng=123)
    b = table1.sample(2, 50, rng=np.random.default_rng(123))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, table1.sample(2, 50, rng=124))


def test_samples_follow_the_true_row(table1):
    draws = table1.sample(1, 80_000, rng=5)
    observed = np.bincount(draws, minlength=4)
    expected = table1.mechanism.loc[1].to_numpy() * draws.size
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    wrong = table1.mechanism.loc[0].to_numpy() * draws.size
    assert stats.chisquare(observed, wrong).pvalue < 1e-6


def test_secure_source(table1):
    draws = table1.sample(0, 200, secure=True)
    assert draws.min() >= 0 and draws.max() <= 3
    u = SecureRandom().random(1000)
    assert ((0 <= u) & (u < 1)).all() and u.std() > 0.2
    with pytest.raises(InvalidParameterError):
        resolve_rng(3, secure=True)


def test_secure_uniforms_are_53_bit_multiples_spread_over_the_unit_interval():
    u = SecureRandom().random(200_000)
    assert u.dtype == float and np.all(u * 2.0**53 == np.floor(u * 2.0**53)) and ((0 <= u) & (u < 1)).all()
    assert stats.kstest(u, "uniform").pvalue > 1e-4 and np.unique(u).size > 199_990


def test_draws_without_a_seed_come_from_the_secure_source(table1, monkeypatch):
    """Until 2026-11-29 no seed meant a PCG64 Generator seeded from the OS: not a cryptographic
    source for a release. Now every draw without a seed reads secrets; a seed still does not."""
    assert isinstance(resolve_rng(None), SecureRandom) and isinstance(resolve_rng(7), np.random.Generator)
    import secrets

    def no_secrets(*args):
        raise RuntimeError("read the OS secure source")

    monkeypatch.setattr(secrets, "token_bytes", no_secrets)
    with pytest.raises(RuntimeError, match="secure source"):
        table1.sample(0, 3)
    with pytest.raises(RuntimeError, match="secure source"):
        dpopt.solve(dpopt.Calibration(mechanism="laplace", epsilon=1.0, sensitivity=1.0)).sample(0.0, 3, exact=False)
    assert table1.sample(0, 3, rng=1).tolist() == table1.sample(0, 3, rng=1).tolist()


def test_zero_probability_outputs_are_never_drawn():
    x = np.array([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    draws = sample_row(x, 0, 1000, certify(x, 1.0), np.random.default_rng(0))
    assert (draws == 1).all()


def test_refuses_uncertified_mechanism():
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(InvalidParameterError, match="certificate"):
        sample_row(x, 0, 1, certify(x, 1.0), np.random.default_rng(0))


@pytest.mark.parametrize("value", [-1, 4, 1.5, True, np.True_, np.array([[1, 2], [3, 4]]), np.array([1]), [1], pd.NA, pd.Series([1])])
def test_bad_true_value(table1, value):
    with pytest.raises(InvalidParameterError, match="'true_value'"):
        table1.sample(value, 1, rng=0)


@pytest.mark.parametrize("rng", [-1, 1.5, "seed"])
def test_bad_seed(table1, rng):
    with pytest.raises(InvalidParameterError):
        table1.sample(0, 1, rng=rng)


def test_a_parametric_solution_has_no_inputs_to_list():
    solution = dpopt.solve(dpopt.Calibration(mechanism="laplace", epsilon=1.0))
    with pytest.raises(InvalidParameterError, match="'inputs'"):
        solution.inputs


@pytest.mark.parametrize("problem,both_cells", [
    (dpopt.Calibration(mechanism="discrete_laplace", epsilon=30.0, sensitivity=1.0, grid=2.0), False),
    (dpopt.Calibration(mechanism="discrete_gaussian", epsilon=30.0, delta=1e-3, sensitivity=1.0, grid=2.0), False),
    (dpopt.Calibration(mechanism="laplace", epsilon=30.0, sensitivity=1.0, grid=2.0), True),
    (dpopt.Calibration(mechanism="staircase", epsilon=30.0, sensitivity=1.0, grid=2.0), True),
    (dpopt.NeighbouringSetNoise(neighbouring_set=[[0, 1]], epsilon=30.0, release_grid=2.0), True),
], ids=["discrete_laplace", "discrete_gaussian", "laplace", "staircase", "neighbouring_set"])
def test_an_integer_true_value_is_placed_on_the_grid_exactly(problem, both_cells):
    """2**53 + 1 is no double: as one (2**53) it sat at the centre of the grid cell of 2**53 and
    every nearly noiseless release was 2**53 (until 2026-11-28). Exactly, it is the boundary
    between the cells of 2**53 and 2**53 + 2: the discrete noises (rounded half up) release
    2**53 + 2, the continuous ones either, about half the time each."""
    releases = dpopt.solve(problem).sample(2**53 + 1, 60, rng=1)
    offsets = {int(v) - 2**53 for v in releases}
    assert offsets == ({0, 2} if both_cells else {2})


@pytest.mark.parametrize("secure", [None, [], 0, "yes"])
def test_secure_must_be_a_bool(table1, secure):
    """None, [] and 0 drew from a seeded numpy source as if secure=False until 2026-11-29."""
    with pytest.raises(InvalidParameterError, match="'secure'"):
        table1.sample(1, 2, secure=secure)


def test_a_decimal_true_value_releases_as_its_fraction():
    from decimal import Decimal
    from fractions import Fraction

    from dpopt.problem_files import load_problem
    from tests.conftest import PROBLEMS

    solution = dpopt.solve(load_problem(PROBLEMS / "calibration_discrete_gaussian.toml"))
    assert solution.sample(Decimal("0.05"), 200, rng=4).tolist() == solution.sample(Fraction(1, 20), 200, rng=4).tolist()
