"""The master forms reproduce the exact row losses; how the first master is solved and its band."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

import dpopt
from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.programs.column_generation import form_for, forms
from tests.programs.column_generation.examples import NAMED, capped_table, random_remap
from tests.conftest import examples


def assert_rows_are_the_exact_losses(problem: dpopt.CountQuery, form, t: np.ndarray) -> None:
    """Every master row is an identity: given T, solve the chain rows for the auxiliary
    variables, then the loss rows must read the exact row losses of G T on S."""
    exact = ((geometric_matrix(problem.n, problem.alpha) @ t) * problem.loss_matrix).sum(axis=1)[list(problem.support)]
    aux = form.auxiliary()
    starts, rows, values = aux.arrays()
    count = starts.size
    ends = np.append(starts[1:], rows.size)
    a_aux = np.zeros((len(form.row_lower), count))
    for j in range(count):
        a_aux[rows[starts[j] : ends[j]], j] = values[starts[j] : ends[j]]
    r, rp = np.nonzero(t)
    t_starts, t_rows, t_values = form.columns(r, rp).arrays()
    a_t = sparse.csc_array((t_values, t_rows, np.append(t_starts, t_rows.size)), shape=(len(form.row_lower), r.size))
    rhs = a_t @ t[r, rp]
    chain_rows = np.setdiff1d(np.arange(len(form.row_lower)), np.concatenate([form.conv, form.loss]))
    if count:
        z = np.linalg.solve(a_aux[chain_rows], np.array(form.row_lower)[chain_rows] - rhs[chain_rows])
        activity = a_aux @ z + rhs
    else:
        activity = rhs
    constants = -np.array(form.row_upper)[form.loss]
    np.testing.assert_allclose(activity[form.loss] + constants, exact, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("side", [[0, 2, 5, 9], [3, 4, 8], [6], [1, 9], list(range(10))])
@pytest.mark.parametrize("loss", NAMED + ["table"])
def test_master_forms_reproduce_the_exact_row_losses(loss, side):
    """At a random T, with chains on the counts of S only where S is sparse (so S with
    gaps, off the ends, or a single count)."""
    n, alpha = 9, 0.7
    spec = capped_table(n) if loss == "table" else loss
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss=spec, side_information=side)
    assert_rows_are_the_exact_losses(problem, form_for(problem), random_remap(n, np.random.default_rng(1)))


class _CumulativeOnS(forms._CumulativeAbsoluteForm):
    CHAINS_ALWAYS_ON_S = True  # chains on S whatever S is: every gap jumped in one step


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(1, 24).flatmap(lambda n: st.tuples(
    st.just(n), st.floats(0.05, 0.999), st.lists(st.integers(0, n), min_size=1, unique=True),
    st.booleans(), st.integers(0, 2**32 - 1))))
def test_the_cumulative_absolute_form_reproduces_the_exact_row_losses(case):
    """The four-chain form (:class:`_CumulativeAbsoluteForm`) at any S, with chains on S
    or (where S is not sparse) on every count, at a T whose entries move anywhere in 0..n (its gap entries)."""
    n, alpha, side, on_s, seed = case
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss="absolute", side_information=sorted(side))
    form = (_CumulativeOnS if on_s else forms._CumulativeAbsoluteForm)(problem)
    if on_s or not form.sparse_s:
        assert form.positions.tolist() == (sorted(side) if on_s else list(range(n + 1)))
    assert_rows_are_the_exact_losses(problem, form, random_remap(n, np.random.default_rng(seed), width=n))


def test_the_cumulative_absolute_form_has_few_entries_per_column_and_its_gate():
    problem = dpopt.CountQuery(n=2000, alpha=0.999, loss="absolute")
    assert isinstance(form_for(problem), forms._CumulativeAbsoluteForm)
    assert type(form_for(dpopt.CountQuery(n=2000, alpha=0.99, loss="absolute"))) is forms._AbsoluteForm
    r = np.arange(0, 2001, 10)
    rp = np.clip(r + 700 - r // 2, 0, 2000)  # moves of up to 700 counts
    cumulative = form_for(problem).columns(r, rp).arrays()[1].size
    assert cumulative <= 5 * r.size < forms._AbsoluteForm(problem).columns(r, rp).arrays()[1].size / 50


def test_the_first_master_is_interior_where_it_is_likely_optimal():
    def first(n, alpha, coarse_started=False):
        return form_for(dpopt.CountQuery(n=n, alpha=alpha, loss="absolute")).first_strategy(coarse_started)

    assert first(10_000, 0.9) == "interior" and first(2000, 0.8) == "interior"  # n (1 - alpha) >= 400
    assert first(3000, 0.9) == "ipm" and first(999, 0.5) == "primal"
    # below alpha = 0.8, S = all, from n = 1000: primal simplex's pivots grow like n^2 (INTERIOR_FROM_N)
    assert first(1000, 0.5) == "interior" and first(30_000, 0.1) == "interior"
    def every(k):
        return form_for(dpopt.CountQuery(n=3000, alpha=0.5, loss="squared", side_information=list(range(0, 3001, k)))).first_strategy()

    assert every(2) == "interior" and every(3) == "interior" and every(4) == "primal"  # a third of the counts or more
    # on the threshold exactly, although 4000 (1 - 0.9) and 8000 (1 - 0.9) fall short of it in floating point
    assert 4000 * (1 - 0.9) < 400 and first(4000, 0.9) == "interior" and first(8000, 0.9) == "interior"
    assert first(1000, 0.99, coarse_started=True) == "interior" and first(2000, 0.999, coarse_started=True) == "ipm"

    def gapped(n, alpha, side):
        return form_for(dpopt.CountQuery(n=n, alpha=alpha, loss="squared", side_information=side)).first_strategy(True)

    # a gap of INTERIOR_MAX_GAP noise scales (25 counts at alpha = 0.99) sends the first master to HiGHS
    assert gapped(1000, 0.99, list(range(0, 501)) + list(range(525, 1001))) == "ipm"
    assert gapped(1000, 0.99, list(range(0, 501)) + list(range(524, 1001))) == "interior"
    assert gapped(1000, 0.99, list(range(0, 1001, 2))) == "interior"  # the even counts
    # ... unless S is symmetric and the loss squared: the master is folded in half (Master.solve_interior)
    symmetric = list(range(100, 400)) + list(range(601, 901))
    assert gapped(1000, 0.99, symmetric) == "interior"
    assert gapped(1000, 0.99, symmetric[:-1]) == "ipm"
    assert form_for(dpopt.CountQuery(n=1000, alpha=0.99, loss="absolute", side_information=symmetric)).first_strategy(True) == "ipm"
    assert form_for(dpopt.CountQuery(n=1000, alpha=0.99, loss="squared", side_information=symmetric)).first_strategy(False) == "ipm"


@pytest.mark.parametrize(("side", "alpha", "band"), [
    (list(range(0, 41, 5)), 0.9, 1),  # 9 of 41 counts: sparse
    (list(range(0, 41, 2)), 0.9, 2),  # the even counts: not sparse
    (list(range(0, 41, 5)), 0.5, 2),  # primal simplex first: the band stays
])
def test_squared_first_band_narrows_where_s_is_sparse(side, alpha, band):
    problem = dpopt.CountQuery(n=40, alpha=alpha, loss="squared", side_information=side)
    form = form_for(problem)
    assert form.initial_band() == band
    assert form.positions.tolist() == side  # squared loss keeps its chains on S alone
