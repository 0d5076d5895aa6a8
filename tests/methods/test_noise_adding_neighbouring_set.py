"""noise_adding with a neighbouring set V: the grid LP against the staircase and the constructions."""

import numpy as np
import pytest

import dpopt
from dpopt.export import ExportFileError, read_solution
from dpopt.mechanisms.neighbouring_sets import staircase_noise, symmetric_shifts
from dpopt.mechanisms.staircase import StaircaseMechanism
from dpopt.problem_files import load_problem
from dpopt.validation import InvalidParameterError
from tests.conftest import PROBLEMS


def problem(v, epsilon=1.0, **kw):
    return dpopt.NeighbouringSetNoise(neighbouring_set=v, epsilon=epsilon, **kw)


@pytest.mark.parametrize("cost", ["absolute", "squared"])
@pytest.mark.parametrize("v", [[[0, 10]], [[0, 1], [8, 10]], [[0, 3], [9, 10]]])
def test_grid_lp_is_never_worse_than_any_staircase_on_its_grid(v, cost):
    """Every staircase whose step gamma Delta is a whole number of cells is a point of the grid LP."""
    p = problem(v, 0.8, cost=cost, grid=20, window=3)
    lp = dpopt.solve(p, "lp")
    assert lp.certificate.ok and not lp.exact
    on_grid = min(staircase_noise(p.sensitivity, p.epsilon, r / p.grid).moment(p.power) for r in range(p.grid + 1))
    assert lp.objective <= on_grid * (1 + 1e-9)


@pytest.mark.parametrize("cost", ["absolute", "squared"])
def test_grid_lp_never_beats_the_optimal_staircase_on_one_interval(cost):
    """Geng-Viswanath: for V = [0, Delta] the staircase is optimal over all densities, so it bounds the grid LP below."""
    p = problem([[0, 10]], 1.3, cost=cost, grid=40, window=3)
    lp, staircase = dpopt.solve(p, "lp"), dpopt.solve(p, "staircase")
    assert staircase.exact and staircase.objective == pytest.approx(
        StaircaseMechanism(sensitivity=10.0, epsilon=1.3, cost=cost).expected_absolute_error() if cost == "absolute"
        else StaircaseMechanism(sensitivity=10.0, epsilon=1.3, cost=cost).variance(), rel=1e-12)
    assert staircase.objective <= lp.objective * (1 + 1e-9) <= staircase.objective * 1.01


def test_grid_lp_falls_as_the_grid_is_refined():
    """Cells of width h/2 hold every density constant on cells of width h: the optimum cannot rise."""
    values = [dpopt.solve(problem([[0, 1], [9, 10]], 1.0, grid=g, window=3), "lp").objective for g in (5, 10, 20, 40)]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(values, values[1:]))
    assert values[-1] < values[0]


def test_lp_density_is_private_for_every_real_shift_not_only_grid_ones():
    """The certificate measures the density on the real line, so a coarse grid's LP is still checked for shifts in V."""
    solution = dpopt.solve(problem([[0, 1], [9, 10]], 1.0, grid=7, window=3), "lp")
    noise = solution.details["noise"]
    loss, _, _ = noise.privacy_loss(symmetric_shifts(np.array([[0.0, 1.0], [9.0, 10.0]])))
    assert loss <= 1.0 + 1e-9 and solution.certificate.max_privacy_loss == loss
    assert noise.privacy_loss(np.array([[-20.0, 20.0]]))[0] > 1.0 + 1e-6  # and the check can fail


def test_constructions_and_staircase_on_the_paper_set():
    p = load_problem(PROBLEMS / "noise_adding_neighbouring_set.toml")
    first, comp, stair = (dpopt.solve(p, m) for m in ("privacy_first", "compositional", "staircase"))
    for s in (first, comp, stair):
        assert s.certificate.ok and s.certificate.max_privacy_loss == pytest.approx(p.epsilon)  # Corollary 1
        assert not s.exact  # V1 has a gap: no method is known optimal
    assert first.parameters["converged_at"] == 1000
    assert comp.objective < stair.objective < first.objective  # Theorem 3 beats the staircase on V1 at delta = 10


def test_auto_takes_the_cheapest_method_when_none_is_exact():
    p = problem([[0, 1], [8, 10]])
    assert dpopt.solve(p).method == "staircase"
    assert dpopt.solve(problem([[0, 10]])).exact


@pytest.mark.parametrize("method", ["lp", "compositional"])
def test_exports_round_trip_and_edits_are_refused(tmp_path, method):
    p = problem([[0, 1], [8, 10]], 0.9, delta=0.5, grid=10, window=3)
    solution = dpopt.solve(p, method)
    path = tmp_path / "noise.json"
    solution.export(path)
    back = read_solution(path)
    assert back.certificate.ok and back.objective == pytest.approx(solution.objective, rel=1e-12)
    np.testing.assert_array_equal(back.sample(0.0, 50, rng=4, exact=False), solution.sample(0.0, 50, rng=4, exact=False))
    path.write_text(path.read_text().replace('"delta": 0.5', '"delta": 0.25'))
    with pytest.raises(ExportFileError):
        read_solution(path)


@pytest.mark.parametrize("field,value", [("grid", 0), ("window", -1), ("delta", -1.0), ("cost", "l3"), ("neighbouring_set", [[1, 0]])])
def test_bad_fields_are_refused_naming_them(field, value):
    kwargs = dict(neighbouring_set=[[0, 1], [8, 10]], epsilon=1.0) | {field: value}
    with pytest.raises(InvalidParameterError, match=field):
        dpopt.NeighbouringSetNoise(**kwargs)


def test_integer_only_methods_do_not_apply():
    with pytest.raises(InvalidParameterError, match="method"):
        dpopt.solve(problem([[0, 1], [8, 10]]), "geometric")


def test_grid_lp_up_to_its_largest_epsilon_and_refused_beyond():
    """Past e^eps = 1e15 HiGHS rejected the grid LP's matrix, and `dpopt compare` ended in a
    solver failure (exit 3) for every method; now the LP does not apply there, naming why."""
    from dpopt.solvers import MAX_COEFFICIENT_EXPONENT

    v = [[0, 1], [1000, 1001]]
    at_limit = dpopt.solve(problem(v, MAX_COEFFICIENT_EXPONENT, grid=10, window=2), "lp")
    assert at_limit.certificate.ok and at_limit.status == "optimal"
    beyond = problem(v, 40.0, grid=10, window=2)
    with pytest.raises(InvalidParameterError, match="epsilon <= 34") as info:
        dpopt.solve(beyond, "lp")
    assert info.value.parameter == "method"
    assert "lp" not in [s.method for s in dpopt.compare(beyond)]


@pytest.mark.parametrize("epsilon", [1e-10, 1e-9, 1e-7])
def test_the_grid_lp_at_tiny_epsilon_is_certified_and_refused_below_its_floor(epsilon):
    # its tail costs grow as 1 / (1 - alpha)^2: HiGHS read them as infinite at 1e-9 (exit 3)
    from dpopt.methods.noise_adding import GRID_LP_MIN_EPSILON

    problem = dpopt.NeighbouringSetNoise(neighbouring_set=[[0, 1001]], epsilon=epsilon, cost="absolute", grid=10, window=4)
    lp = dpopt.solve(problem, "lp")
    assert lp.certificate.ok
    assert lp.objective == pytest.approx(dpopt.solve(problem, "staircase").objective, rel=1e-6)
    below = dpopt.NeighbouringSetNoise(neighbouring_set=[[0, 1001]], epsilon=GRID_LP_MIN_EPSILON / 100, cost="absolute", grid=10, window=4)
    assert "lp" not in {m.name for m in dpopt.methods_for(below)}


@pytest.mark.parametrize("cost", ["absolute", "squared"])
@pytest.mark.parametrize("exponent", [-45, -30, 20, 28])
def test_the_grid_lp_is_the_same_at_every_scale_of_the_set(exponent, cost):
    """V1 times 2^k: the densities scale, E|Z|^p by 2^(k p), and the LP must follow.
    Written in the problem's own units it did not (HiGHS's absolute tolerances against a mass
    row of 1e-12 or 4e7): 3.6 times the optimum at 2^-45, 1.6 at 2^20, above every staircase on its grid."""
    power = 1 if cost == "absolute" else 2
    unit = dpopt.NeighbouringSetNoise(neighbouring_set=[[0, 1], [1000, 1001]], epsilon=1.0, cost=cost, grid=20, window=3)
    f = 2.0**exponent
    scaled = dpopt.NeighbouringSetNoise(neighbouring_set=[[0, f], [1000 * f, 1001 * f]], epsilon=1.0, cost=cost, grid=20, window=3)
    a, b = dpopt.solve(unit, "lp"), dpopt.solve(scaled, "lp")
    assert b.certificate.ok
    assert b.objective / f**power == pytest.approx(a.objective, rel=1e-7)
    on_grid = min(staircase_noise(scaled.sensitivity, 1.0, r / scaled.grid).moment(power) for r in range(scaled.grid + 1))
    assert b.objective <= on_grid * (1 + 1e-9)


@pytest.mark.parametrize("largest", [1e9, 1e12])
def test_the_grid_lp_keeps_every_offset_a_narrow_interval_reaches(largest):
    """V = [0, 1] U [D - 1, D]: in cells of D / 50 the far interval starts 50 / D cells short of
    50, which the snapping of rounding errors (absolute 1e-9) took for 50 at D = 1e12, dropping
    offset 49: the LP's density failed its certificate (exit 4). Every D of this shape has the
    same offsets, so the same optimum per unit of D."""
    reference = dpopt.solve(problem([[0, 1], [1e6 - 1, 1e6]]), "lp")
    solution = dpopt.solve(problem([[0, 1], [largest - 1, largest]]), "lp")
    assert solution.certificate.ok
    assert solution.objective / largest == pytest.approx(reference.objective / 1e6, rel=1e-7)


def test_a_delta_the_problem_accepts_the_construction_takes():
    """delta up to 1e6 max V (and 1e15) is accepted by the problem; Theorem 3's rings refused
    more than 1e12 after the problem had accepted it (exit 2 from `compositional`)."""
    solution = dpopt.solve(problem([[0, 1e12]], delta=1e13), "compositional")
    assert solution.certificate.ok and solution.objective >= dpopt.solve(problem([[0, 1e12]]), "staircase").objective
