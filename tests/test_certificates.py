import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpopt
from dpopt.certificates import Certificate, certify, repair
from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.validation import InvalidParameterError


def test_zero_over_zero_is_no_loss_and_zero_beside_mass_is_infinite():
    both_zero = np.array([[0.5, 0.5, 0.0], [0.4, 0.6, 0.0]])
    assert certify(both_zero, 1.0).ok
    one_zero = np.array([[0.5, 0.5, 0.0], [0.4, 0.5, 0.1]])
    cert = certify(one_zero, 5.0)
    assert cert.max_privacy_loss == np.inf and not cert.ok and cert.worst_pair == (0, 1, 2)


def test_measured_loss_and_worst_pair():
    x = np.array([[0.8, 0.2], [0.4, 0.6]])
    cert = certify(x, np.log(3))
    assert cert.max_privacy_loss == pytest.approx(np.log(3)) and cert.ok and cert.worst_pair[2] == 1
    assert not certify(x, np.log(2.9)).ok


def test_row_sums_and_negative_entries_fail():
    assert not certify(np.array([[0.5, 0.6], [0.5, 0.5]]), 10).ok
    assert not certify(np.array([[1.1, -0.1], [1.0, 0.0]]), 10).ok


def test_custom_neighbour_pairs():
    x = np.array([[0.9, 0.1], [0.5, 0.5], [0.1, 0.9]])
    assert certify(x, np.log(9) + 1e-9, pairs=np.array([[0, 2]])).ok
    assert not certify(x, np.log(5), pairs=np.array([[0, 2]])).ok


@given(st.integers(2, 15), st.floats(0.1, 0.9), st.floats(1e-9, 1e-3), st.integers(0, 2**32 - 1))
def test_repair_restores_privacy_of_perturbed_mechanisms(n, alpha, size, seed):
    rng = np.random.default_rng(seed)
    noisy = geometric_matrix(n, alpha) + size * rng.standard_normal((n + 1, n + 1))
    epsilon = -np.log(alpha)
    fixed, cert = repair(noisy, epsilon)
    assert cert.ok and certify(fixed, epsilon).ok
    assert cert.mixing_weight <= 1.0
    # the repair moves the matrix by no more than the perturbation needs
    assert np.abs(fixed - geometric_matrix(n, alpha)).max() <= 50 * size * (n + 1) / (1 - alpha)


def test_repair_leaves_feasible_matrices_alone():
    g = geometric_matrix(5, 0.5)
    fixed, cert = repair(g, np.log(2))
    np.testing.assert_allclose(fixed, g)
    assert cert.mixing_weight == 0.0


def test_solver_near_feasibility_is_repaired_in_solutions():
    solution = dpopt.solve(dpopt.CountQuery(n=12, alpha=0.9, loss="squared"), "lp")
    assert solution.certificate.ok
    assert solution.objective == pytest.approx(solution.details["solver_objective"], rel=1e-8)


def test_certificate_round_trips_through_dict():
    cert = certify(np.array([[1.0, 0.0], [0.0, 1.0]]), 1.0)
    again = Certificate.from_dict(cert.to_dict())
    assert again == cert and cert.to_dict()["max_privacy_loss"] is None


GOOD = geometric_matrix(3, 0.5)


@pytest.mark.parametrize("function", [certify, repair])
@pytest.mark.parametrize(("args", "field"), [
    (("x", 1.0), "matrix"), ((None, 1.0), "matrix"), (([[1], [1, 2]], 1.0), "matrix"), ((np.zeros((0, 0)), 1.0), "matrix"),
    ((np.ones(3), 1.0), "matrix"), ((np.array([["a"]]), 1.0), "matrix"),
    ((GOOD, "1"), "epsilon"), ((GOOD, None), "epsilon"), ((GOOD, -1.0), "epsilon"), ((GOOD, np.nan), "epsilon"), ((GOOD, np.inf), "epsilon"),
])
def test_certify_and_repair_refuse_what_they_cannot_measure(function, args, field):
    with pytest.raises(InvalidParameterError, match=f"'{field}'"):
        function(*args)


@pytest.mark.parametrize("function", [certify, repair])
@pytest.mark.parametrize("pairs", [[[0, 4]], [[-1, 0]], [0, 1], [[0.5, 1]], "01", [[0, 1, 2]]])
def test_certify_and_repair_refuse_pairs_outside_the_rows(function, pairs):
    with pytest.raises(InvalidParameterError, match="'pairs'"):
        function(GOOD, 1.0, pairs=pairs)


def test_a_nan_entry_is_measured_as_not_private_but_not_repaired():
    x = GOOD.copy()
    x[1, 1] = np.nan
    assert not certify(x, 10.0).ok
    with pytest.raises(InvalidParameterError, match="'matrix'"):
        repair(x, 1.0)


def test_repair_at_epsilon_zero_makes_every_row_the_same():
    repaired, cert = repair(GOOD, 0.0)
    assert cert.ok and cert.max_privacy_loss == 0.0 and np.allclose(repaired, repaired[0])


@given(
    lo=st.floats(1e-300, 1e300),
    ratio_minus_one=st.one_of(st.floats(0.0, 1e-6), st.floats(0.0, 3.0), st.floats(0.0, 1e300)),
)
def test_log_ratios_are_accurate_to_a_few_ulps_of_the_loss(lo, ratio_minus_one):
    """Against 60-digit ``decimal`` arithmetic on the floats as stored: the difference of
    logarithms used until 2026-11-28 was off by an ulp of |ln x| (3e-15 beside a loss of 1e-12)."""
    from decimal import Decimal, getcontext

    from dpopt.certificates import log_ratios

    hi = lo * (1.0 + ratio_minus_one)
    if not np.isfinite(hi):
        return
    getcontext().prec = 60
    exact = float((Decimal(hi) / Decimal(lo)).ln())
    measured = float(log_ratios(np.array([lo]), np.array([hi]))[0])
    assert measured == float(log_ratios(np.array([hi]), np.array([lo]))[0])
    assert abs(measured - exact) <= 4 * np.spacing(exact) + 1e-300


def test_the_slack_on_the_loss_is_relative_at_tiny_epsilon():
    """Until 2026-11-28 the slack was 1e-12 whatever epsilon: a mechanism with 1.5 times the
    loss passed at epsilon = 1e-12. Geometric noise from the float exp(-epsilon) passes (its
    entries hold the ratio to about 1e-16), one built for 1.01 epsilon does not."""
    from dpopt.certificates import log_tolerance

    for epsilon in (1e-12, 1e-9, 1e-6):
        assert certify(geometric_matrix(8, np.exp(-epsilon)), epsilon).ok
        assert not certify(geometric_matrix(8, np.exp(-1.5 * epsilon)), epsilon).ok
        assert log_tolerance(epsilon) <= 2e-3 * epsilon
    assert not certify(geometric_matrix(8, np.exp(-1e-12 * 1.01)), 1e-12).ok
    assert log_tolerance(1.0) == 1e-12


def test_geometric_noise_at_tiny_epsilon_measures_the_loss_of_its_entries():
    """The window-and-tails measurement of integer noise at epsilon = 1e-12 read 1.0019e-12
    (a difference of logarithms of entries near 5e-13). Against 60-digit ``decimal``
    arithmetic on the entries it reads (the window extended by a period each side), every
    pair at most a period apart: the float entries hold their ratios to about 1e-16, so this
    loss is not the float decay's -ln(b) (1e-4 apart at 1e-12)."""
    from decimal import Decimal, localcontext

    from dpopt.mechanisms.integer_noise import PeriodicNoise

    for sensitivity in (1, 3):
        for epsilon in (1e-12, 1e-13):
            noise = PeriodicNoise.geometric(sensitivity, np.exp(-epsilon))
            m = noise.half_width
            entries = [Decimal(float(p)) for p in noise.pmf(np.arange(-m - sensitivity, m + sensitivity + 1))]
            with localcontext() as context:
                context.prec = 60
                exact = max(abs((entries[i] / entries[i + s]).ln())
                            for s in range(1, sensitivity + 1) for i in range(len(entries) - s))
            loss, _, _ = noise.worst_ratio()
            assert loss == pytest.approx(float(exact), rel=1e-9)


def test_a_loss_measured_in_log_space_gets_the_slack_of_its_logarithms():
    """The factored route measures G T as differences of ln x (entries underflow): at n = 200,
    epsilon = 1e-12 that reads 1.0019e-12 from logs near -5, four ulps of which the slack admits
    (refused once the slack became relative, 2026-11-28)."""
    solution = dpopt.solve(dpopt.CountQuery(n=200, epsilon=1e-12, loss="absolute"), "factored")
    assert solution.certificate.ok
    assert solution.certificate.max_privacy_loss <= 1e-12 * (1 + 3e-3)


def test_the_certificate_reports_the_slack_its_verdict_allowed():
    """At epsilon = 2e-16 float64 entries cannot hold the ratio e^epsilon (the nearest doubles
    below 1 are 1.1e-16 apart): geometric noise measures 2.2e-16 and the verdict rests on the
    1e-15 floor, which the certificate now states beside the target."""
    from dpopt.certificates import log_tolerance

    tiny = dpopt.solve(dpopt.CountQuery(n=5, epsilon=2e-16), "geometric").certificate
    assert tiny.ok and tiny.max_privacy_loss > tiny.target
    assert tiny.tolerance == log_tolerance(2e-16) and tiny.to_dict()["tolerance"] == pytest.approx(1e-15, rel=1e-3)
    assert dpopt.solve(dpopt.CountQuery(n=5, epsilon=1.0), "geometric").certificate.tolerance == 1e-12


@pytest.mark.parametrize("options,field", [
    ({"mixing_weight": float("nan")}, "'mixing_weight'"),
    ({"mixing_weight": -1}, "'mixing_weight'"),
    ({"mixing_weight": None}, "'mixing_weight'"),  # was a raw TypeError
    ({"mixing_weight": 10**400}, "'mixing_weight'"),  # was a raw OverflowError
    ({"repair_note": None}, "'repair_note'"),
    ({"method": b"x"}, "'method'"),
])
def test_certify_refuses_bad_notes_naming_the_field(options, field):
    """Until 2026-11-29 certify recorded any object as its notes (a NaN weight, bytes as the
    method) and failed later, in an export's JSON, or raised a raw TypeError."""
    with pytest.raises(InvalidParameterError, match=field):
        certify([[0.5, 0.5], [0.25, 0.75]], 1.0, **options)
