"""The GS LP against independent routes: the interaction route, exact fractions, a second solver."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpopt
from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.methods.count_query import worst_case_loss
from dpopt.programs.count_query import build_gs_program, build_interaction_program
from tests.strategies import monotone_losses, side_information
from tests.conftest import examples

TABLE1_OPTIMUM = 168 / 415  # stated in the issue; derived by hand below


def test_table1_optimum_by_both_routes():
    problem = dpopt.CountQuery(n=3, alpha=0.25, loss="absolute")
    for method in ("lp", "interaction"):
        solution = dpopt.solve(problem, method)
        assert solution.objective == pytest.approx(TABLE1_OPTIMUM, abs=1e-9)
        assert solution.certificate.ok
        x = solution.mechanism.to_numpy()
        assert np.abs(x.sum(axis=1) - 1).max() <= solution.certificate.max_row_sum_error + 1e-15
        assert (0.25 * x[:-1] <= x[1:] * (1 + 1e-12)).all() and (0.25 * x[1:] <= x[:-1] * (1 + 1e-12)).all()


def test_table1_optimum_in_exact_arithmetic():
    """G_{3,1/4} T* with T*[0] = (68/83, 15/83, 0, 0) attains exactly 168/415.

    Equating the losses of rows 0 and 1 (21/80 + 63q/80 = 9/20 - q/4) gives q = 15/83;
    the paper's printed remap (9/11, 2/11) is a rounding of it.
    """
    q = Fraction(15, 83)
    remap = np.array(
        [[1 - q, q, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, q, 1 - q]], dtype=object
    ) + Fraction(0)
    x = geometric_matrix(3, Fraction(1, 4)) @ remap
    losses = [sum(abs(i - r) * x[i, r] for r in range(4)) for i in range(4)]
    assert max(losses) == Fraction(168, 415)
    assert dpopt.solve(dpopt.CountQuery(n=3, alpha=0.25)).objective == pytest.approx(float(Fraction(168, 415)), rel=1e-12)


def test_printed_table1_is_not_the_optimum():
    printed = np.array([[2 / 3, 5 / 17, 1 / 25, 1 / 98], [1 / 6, 7 / 11, 7 / 44, 2 / 49]])
    assert abs(printed[0].sum() - 1) > 0.01  # row 0 of the printed table does not sum to 1
    exact_row0 = geometric_matrix(3, Fraction(1, 4))[0] @ np.array(
        [[Fraction(68, 83), Fraction(15, 83), 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, Fraction(15, 83), Fraction(68, 83)]], dtype=object
    )
    assert abs(float(exact_row0[0]) - printed[0, 0]) > 0.01  # 272/415 = 0.655, printed 2/3


@settings(max_examples=examples(200))
@given(
    st.integers(1, 12).flatmap(
        lambda n: st.tuples(st.just(n), st.floats(0.05, 0.95), monotone_losses(n), side_information(n))
    )
)
def test_gs_lp_equals_geometric_plus_interaction(case):
    """Theorem 1: the consumer's optimal remap of G reaches the GS optimum, for any loss and S."""
    n, alpha, loss, s = case
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss=loss, side_information=s)
    lp = dpopt.solve(problem, "lp")
    route = dpopt.solve(problem, "interaction")
    assert lp.certificate.ok and route.certificate.ok
    scale = max(abs(lp.objective), 1e-9)
    assert abs(lp.objective - route.objective) <= 1e-7 * scale + 1e-10


@pytest.mark.parametrize("loss", ["absolute", "squared", "zero_one"])
def test_two_solvers_agree(loss):
    problem = dpopt.CountQuery(n=6, alpha=0.6, loss=loss, side_information={"lower": 1, "upper": 5})
    highs = dpopt.solve(problem, "lp", solver="HIGHS")
    clarabel = dpopt.solve(problem, "lp", solver="CLARABEL")
    assert clarabel.objective == pytest.approx(highs.objective, rel=1e-6)
    assert clarabel.certificate.ok


def test_programs_are_inspectable_cvxpy_problems():
    problem = dpopt.CountQuery(n=4, alpha=0.5)
    gs = build_gs_program(problem)
    assert gs.x.shape == (5, 5) and gs.program.is_dcp()
    inter = build_interaction_program(problem, geometric_matrix(4, 0.5))
    assert inter.remap.shape == (5, 5)


def test_interaction_for_any_deployed_mechanism():
    """Remapping a mechanism that is not G can only do as well as the optimum (here worse)."""
    problem = dpopt.CountQuery(n=4, alpha=0.5)
    uniform = np.full((5, 5), 0.2)
    program = build_interaction_program(problem, uniform)
    program.program.solve(solver="HIGHS")
    induced = uniform @ program.remap.value
    assert worst_case_loss(problem, induced) == pytest.approx(program.d.value, rel=1e-9)
    assert program.d.value > dpopt.solve(problem).objective
