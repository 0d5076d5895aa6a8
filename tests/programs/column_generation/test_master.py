"""The restricted master: HiGHS's basis solved exactly, Clarabel's interior point, the fallbacks."""

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

import dpopt
from dpopt.programs.column_generation import form_for, forms, master as masters, solve as loop, solve_by_column_generation
from tests.programs.column_generation.examples import NAMED, capped_table
from tests.conftest import examples


@pytest.mark.parametrize("loss", NAMED + ["table"])
def test_the_basis_solution_satisfies_the_master_and_matches_highs(loss):
    """basic_solution re-solves B x_B = b and B^T y = c_B: rows hold to ~1e-12, duals agree with HiGHS."""

    n = 40
    spec = capped_table(n) if loss == "table" else loss
    problem = dpopt.CountQuery(n=n, alpha=0.8, loss=spec, side_information={"lower": 2, "upper": 35})
    master = masters.Master(form_for(problem))
    r = np.repeat(np.arange(n + 1), 3)
    rp = np.clip(r + np.tile([-1, 0, 1], n + 1), 0, n)
    master.add_remap_columns(r, rp)
    master.start_from_identity()
    _, highs_values, highs_duals = master.solve()
    values, duals = master.basic_solution()
    np.testing.assert_allclose(values, highs_values, atol=1e-7)
    np.testing.assert_allclose(duals, highs_duals, atol=1e-7)
    remap = master.remap(values).toarray()
    np.testing.assert_allclose(remap.sum(axis=1), 1.0, atol=1e-12)
    assert remap.min() >= -1e-12


@pytest.mark.parametrize("loss", NAMED + ["table"])
def test_the_kept_matrix_is_the_one_highs_solves(loss):
    """basic_solution reads the master's own copy of the constraint matrix and costs."""
    n = 12
    spec = capped_table(n) if loss == "table" else loss
    master = masters.Master(form_for(dpopt.CountQuery(n=n, alpha=0.3, loss=spec)))
    master.add_remap_columns(np.arange(n + 1), np.arange(n + 1))
    master.add_remap_columns(np.array([0, 5, 12]), np.array([3, 1, 7]))
    matrix, costs = master.matrix()
    np.testing.assert_array_equal(matrix.toarray(), _highs_matrix(master).toarray())
    np.testing.assert_array_equal(costs, np.asarray(master.h.getLp().col_cost_))


def test_the_start_is_the_middle_of_the_rows_tied_for_the_worst_loss():
    support = np.array([0, 2, 3, 5, 8, 9])
    losses = np.array([0.5, 1.0, 1.0 - 1e-15, 0.9, 1.0, 1.0])
    assert masters._tight_row(support, losses) == 8  # tied: 2, 3, 8, 9 (3 within 1e-13)
    assert masters._tight_row(support, np.array([0.5, 1.0, 0.9, 0.9, 0.8, 0.7])) == 2


def test_master_columns_are_added_once():
    problem = dpopt.CountQuery(n=6, alpha=0.5, loss="absolute")
    master = masters.Master(form_for(problem))
    assert master.add_remap_columns(np.array([0, 0, 3, 3]), np.array([1, 1, 2, 4])) == 3  # one repeat in the batch
    assert master.add_remap_columns(np.array([3, 5]), np.array([2, 5])) == 1  # (3, 2) is already there
    assert master.h.getNumCol() - master.first_t == len(master.t_rows) == 4
    assert sorted(zip(master.t_rows, master.t_cols)) == [(0, 1), (3, 2), (3, 4), (5, 5)]


def _banded_master(loss: str, n: int = 60) -> masters.Master:
    """A master over the columns |r' - r| <= 2 at alpha = 0.85, started from T = I."""
    problem = dpopt.CountQuery(n=n, alpha=0.85, loss=loss, side_information={"lower": 3, "upper": 55})
    master = masters.Master(form_for(problem))
    r = np.repeat(np.arange(n + 1), 5)
    master.add_remap_columns(r, np.clip(r + np.tile([-2, -1, 0, 1, 2], n + 1), 0, n))
    master.start_from_identity()
    return master


@pytest.mark.parametrize("loss", ["absolute", "squared"])
def test_an_interior_master_agrees_with_highs_on_the_same_master(loss):
    master = _banded_master(loss)
    highs_objective, _, highs_duals = master.solve("primal")
    assert master.basic_solution() is not None
    objective, values, duals = master.solve("interior")
    assert master.basic_solution() is None  # no basis after an interior solve
    assert objective == pytest.approx(highs_objective, rel=1e-9)
    np.testing.assert_allclose(duals, highs_duals, atol=1e-6 * np.abs(highs_duals).max())
    remap = master.remap(values).toarray()
    assert remap.min() >= 0
    np.testing.assert_allclose(remap.sum(axis=1), 1.0, atol=1e-9)


def test_the_mirror_fold_pairs_each_column_with_its_mirror_after_closing_the_set():
    n = 10
    master = masters.Master(form_for(dpopt.CountQuery(n=n, alpha=0.9, loss="squared")))
    master.add_remap_columns(np.array([0, 2, 5, 7]), np.array([1, 2, 5, 9]))  # (5, 5) is its own mirror
    fold = master._mirror_fold()
    pairs = set(zip(master.t_rows.tolist(), master.t_cols.tolist()))
    assert pairs == {(0, 1), (10, 9), (2, 2), (8, 8), (5, 5), (7, 9), (3, 1)}  # closed under the mirror
    assert fold.shape == (7, 4)
    dense = fold.toarray()
    assert np.all(dense.sum(axis=1) == 1)  # each column in exactly one pair
    for j in range(dense.shape[1]):
        members = {(int(master.t_rows[k]), int(master.t_cols[k])) for k in np.flatnonzero(dense[:, j])}
        assert {(n - r, n - c) for r, c in members} == members  # a pair is its own mirror image
    assert sorted(dense.sum(axis=0).astype(int).tolist()) == [1, 2, 2, 2]
    asymmetric = masters.Master(form_for(dpopt.CountQuery(n=n, alpha=0.9, loss="squared", side_information=[0, 1, 2, 9])))
    asymmetric.add_remap_columns(np.array([0]), np.array([1]))
    assert asymmetric._mirror_fold() is None and asymmetric.t_rows.size == 1  # no fold, nothing added
    table = masters.Master(form_for(dpopt.CountQuery(n=n, alpha=0.9, loss=capped_table(n))))
    assert table._mirror_fold() is None  # user tables are not assumed symmetric


def _symmetric_problem(n: int, alpha: float, loss: str, rng: np.random.Generator) -> dpopt.CountQuery:
    """A random S closed under i <-> n - i (None where it is all of 0..n)."""
    half = rng.choice(n // 2 + 1, size=rng.integers(1, n // 2 + 2), replace=False)
    side = sorted(set(half.tolist()) | {n - int(i) for i in half})
    return dpopt.CountQuery(n=n, alpha=alpha, loss=loss, side_information=side if len(side) < n + 1 else None)


def _band(n: int, band: int) -> tuple[np.ndarray, np.ndarray]:
    r = np.repeat(np.arange(n + 1), 2 * band + 1)
    return r, np.clip(r + np.tile(np.arange(-band, band + 1), n + 1), 0, n)


def _assert_mirror_symmetric(problem: dpopt.CountQuery, master: masters.Master, values: np.ndarray, duals: np.ndarray) -> None:
    """A stochastic remap equal to its mirror, and loss-row duals equal at i and n - i."""
    remap = master.remap(values).toarray()
    np.testing.assert_allclose(remap, remap[::-1, ::-1], atol=1e-12)
    np.testing.assert_allclose(remap.sum(axis=1), 1.0, atol=1e-8)
    support = np.array(problem.support)
    by_count = dict(zip(support.tolist(), duals.tolist()))
    np.testing.assert_allclose(duals, [by_count[problem.n - i] for i in support.tolist()])


def _highs_matrix(master: masters.Master) -> sparse.csc_array:
    """The constraint matrix HiGHS holds (read back through ``getLp``)."""
    lp = master.h.getLp()
    return sparse.csc_array((np.asarray(lp.a_matrix_.value_), np.asarray(lp.a_matrix_.index_), np.asarray(lp.a_matrix_.start_)),
                            shape=(lp.num_row_, lp.num_col_))


@settings(max_examples=examples(25), deadline=None)
@given(st.integers(6, 50), st.floats(0.5, 0.97), st.sampled_from(["absolute", "squared", "zero_one"]), st.integers(0, 2**32 - 1),
       st.integers(1, 3))
def test_the_folded_interior_master_has_the_full_masters_optimum(n, alpha, loss, seed, band):
    # the full master (its columns closed under the mirror) solved by HiGHS's simplex against
    # the folded one solved by Clarabel: the same optimum, a symmetric remap, symmetric duals
    rng = np.random.default_rng(seed)
    problem = _symmetric_problem(n, alpha, loss, rng)
    master = masters.Master(form_for(problem))
    master.add_remap_columns(*_band(n, band))
    extra = rng.integers(0, n + 1, size=(2, n))
    master.add_remap_columns(extra[0], extra[1])
    folded_objective, values, duals = master.solve_interior()  # closes the columns under the mirror first
    master.start_from_identity()
    full_objective, _, _ = master.solve("primal")
    assert folded_objective == pytest.approx(full_objective, rel=1e-8, abs=1e-9)
    _assert_mirror_symmetric(problem, master, values, duals)


def test_a_symmetric_gapped_s_reaches_the_same_optimum_by_folded_interior_masters(monkeypatch):
    # S = 10%..40% and 60%..90% of n (a gap of 1.2 noise scales), squared loss, coarse start
    n = 600
    side = list(range(60, 240)) + list(range(361, 541))
    problem = dpopt.CountQuery(n=n, alpha=0.99, loss="squared", side_information=side)
    strategies = []
    original = masters.Master.solve

    def recorded(master, strategy="primal", **kwargs):
        strategies.append(strategy)
        return original(master, strategy, **kwargs)

    with mock.patch.object(masters.Master, "solve", recorded):
        interior = solve_by_column_generation(problem, hull=False)
    assert "interior" in strategies
    monkeypatch.setattr(forms._SquaredForm, "INTERIOR_ON_SYMMETRIC_GAPS", False)
    highs = solve_by_column_generation(problem, hull=False)
    assert interior.relative_gap <= 1e-9 and highs.relative_gap <= 1e-9
    assert interior.upper_bound == pytest.approx(highs.upper_bound, rel=2e-9)
    remap = interior.mechanism.remap.toarray()
    assert interior.mechanism.certificate(problem.epsilon).ok and remap.min() >= 0


@settings(max_examples=examples(15), deadline=None)
@given(st.integers(20, 60), st.floats(0.8, 0.97), st.sampled_from(["absolute", "squared"]), st.integers(0, 8), st.integers(0, 8))
def test_interior_masters_reach_the_certified_optimum_of_the_simplex_route(n, alpha, loss, cut_low, cut_high):
    # S keeps at least 5 counts: with one or two, closed forms answer before any master (explore: n = 20, cuts 10 and 10)
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss=loss, side_information={"lower": cut_low, "upper": n - cut_high})
    simplex = solve_by_column_generation(problem)
    calls = []
    original = masters.Master.solve_interior

    def counted(master):
        calls.append(1)
        return original(master)

    with mock.patch.object(forms._ChainForm, "INTERIOR_BAND_RANGE", 0.0), mock.patch.object(masters.Master, "solve_interior", counted):
        interior = solve_by_column_generation(problem)
    assert calls  # the route under test ran
    assert interior.relative_gap <= 1e-9 and simplex.relative_gap <= 1e-9
    assert interior.upper_bound == pytest.approx(simplex.upper_bound, rel=2e-9)
    assert interior.mechanism.certificate(problem.epsilon).ok


@pytest.mark.parametrize("loss", ["absolute", "squared"])
def test_a_dualized_interior_point_master_agrees_with_primal_simplex_and_resets_its_option(loss):
    master = _banded_master(loss)
    primal_objective, _, _ = master.solve("primal")
    master.h.clearSolver()
    objective, _, _ = master.solve("dualized ipm")
    assert master.h.getOptionValue("ipx_dualize_strategy")[1] == 1
    assert objective == pytest.approx(primal_objective, rel=1e-9)
    assert master.basic_solution() is not None  # crossover leaves a basis
    master.solve("ipm")
    assert master.h.getOptionValue("ipx_dualize_strategy")[1] == master.dualize_strategy != 1


def test_after_interior_masters_the_route_goes_on_with_a_dualized_interior_point():
    problem = dpopt.CountQuery(n=60, alpha=0.9, loss="squared", side_information={"lower": 2, "upper": 58})
    simplex = solve_by_column_generation(problem)
    strategies = []
    original = masters.Master.solve

    def recorded(master, strategy="primal", **kwargs):
        strategies.append(strategy)
        return original(master, strategy, **kwargs)

    with mock.patch.object(forms._ChainForm, "INTERIOR_BAND_RANGE", 0.0), mock.patch.object(loop, "INTERIOR_ROUNDS", 1), \
            mock.patch.object(masters.Master, "solve", recorded):
        interior = solve_by_column_generation(problem)
    assert strategies[:2] == ["interior", "dualized ipm"]
    assert interior.relative_gap <= 1e-9
    assert interior.upper_bound == pytest.approx(simplex.upper_bound, rel=2e-9)


def _member_fold(master: masters.Master) -> sparse.csc_array:
    """The 0/1 map from a folded master's remaps to its columns (remap k sums into column_of[k])."""
    k = master.t_rows.size
    return sparse.csc_array((np.ones(k), (np.arange(k), master.column_of)), shape=(k, master.h.getNumCol() - master.first_t))


@pytest.mark.parametrize("loss", NAMED)
def test_a_folded_master_holds_one_column_per_mirrored_pair_on_the_kept_rows(loss):
    n = 10
    problem = dpopt.CountQuery(n=n, alpha=0.9, loss=loss, side_information=[0, 1, 3, 5, 7, 9, 10])
    master = masters.Master(form_for(problem), folded=True)
    assert master.folded
    assert master.add_remap_columns(np.array([0, 2, 5, 7]), np.array([1, 2, 5, 9])) == 7  # closed under the mirror
    assert set(zip(master.t_rows.tolist(), master.t_cols.tolist())) == {(0, 1), (10, 9), (2, 2), (8, 8), (5, 5), (7, 9), (3, 1)}
    assert master.add_remap_columns(np.array([10]), np.array([9])) == 0  # (10, 9) is in already, with its mirror
    assert master.h.getNumCol() - master.first_t == 4
    # the same remaps unfolded: each folded column is the sum of its pair's columns on the kept rows
    full = masters.Master(form_for(problem))
    full.add_remap_columns(master.t_rows, master.t_cols)
    np.testing.assert_array_equal(full.t_rows, master.t_rows)
    full_matrix, folded_matrix = full.matrix()[0], master.matrix()[0]
    kept = master.row_of >= 0
    assert kept.sum() == folded_matrix.shape[0] < full_matrix.shape[0]
    # dropped: the convexity rows r > 5 and the loss rows of 7, 9, 10
    assert not kept[full.form.conv[6:]].any() and kept[full.form.conv[:6]].all()
    assert kept[full.form.loss].tolist() == [True, True, True, True, False, False, False]
    expected = (full_matrix[:, full.first_t :] @ _member_fold(master))[kept]
    np.testing.assert_allclose(folded_matrix[:, master.first_t :].toarray(), expected.toarray(), rtol=1e-15)
    np.testing.assert_array_equal(folded_matrix[:, : master.first_t].toarray(), full_matrix[:, : full.first_t][kept].toarray())
    np.testing.assert_array_equal(folded_matrix.toarray(), _highs_matrix(master).toarray())


def test_only_a_mirror_symmetric_problem_is_folded():
    n = 10
    asymmetric = masters.Master(form_for(dpopt.CountQuery(n=n, alpha=0.9, loss="absolute", side_information=[0, 1, 2, 9])), folded=True)
    table = masters.Master(form_for(dpopt.CountQuery(n=n, alpha=0.9, loss=capped_table(n))), folded=True)
    assert not asymmetric.folded and not table.folded
    asymmetric.add_remap_columns(np.array([0]), np.array([1]))
    assert asymmetric.t_rows.size == 1  # no mirror added
    symmetric = masters.Master(form_for(dpopt.CountQuery(n=n, alpha=0.9, loss="absolute")), folded=True)
    basis = masters.ExtendedBasis(rows=np.arange(n + 1), targets=np.arange(n + 1), slack_rows=np.arange(n))
    assert not symmetric.install_basis(basis)  # a predicted basis is not mirror-symmetric: refused


@settings(max_examples=examples(25), deadline=None)
@given(st.integers(6, 50), st.floats(0.3, 0.97), st.sampled_from(NAMED), st.integers(0, 2**32 - 1), st.integers(0, 2),
       st.sampled_from(["primal", "ipm", "interior"]))
def test_a_folded_master_has_the_full_masters_optimum(n, alpha, loss, seed, band, strategy):
    # the full master (its columns closed under the mirror) by HiGHS's primal simplex against
    # the folded one by each strategy: the same optimum, a symmetric remap, duals symmetric
    # and priced to the same bound; the folded basis's exact solution holds every row
    rng = np.random.default_rng(seed)
    problem = _symmetric_problem(n, alpha, loss, rng)
    extra = rng.integers(0, n + 1, size=(2, n))
    folded = masters.Master(form_for(problem), folded=True)
    for rows, targets in (_band(n, band), (extra[0], extra[1])):
        folded.add_remap_columns(rows, targets)
    full = masters.Master(form_for(problem))
    full.add_remap_columns(folded.t_rows, folded.t_cols)
    full.start_from_identity()
    full_objective, _, full_duals = full.solve("primal")
    # its basis's exact duals: HiGHS's own summed 3.5e-6 off d's cost (explore: n = 42, alpha = 0.625, zero-one)
    full_duals = full.basic_solution()[1]
    folded.start_from_identity()
    objective, values, duals = folded.solve(strategy)
    if strategy == "interior":
        # Clarabel's own objective may sit below (explore: 1.1e-8 at n = 39, alpha = 0.3, squared,
        # "almost solved"); column generation takes the exact loss of the clipped remap, which is
        # a feasible point of the master: never below its optimum, and here within 2.7e-9 above
        from dpopt.programs.column_generation.result import evaluated

        padded = np.concatenate([values, np.zeros(folded.t_rows.size - values.size)])
        exact_loss = float(evaluated(problem, folded.remap(padded))[1].max())
        assert full_objective * (1 - 1e-12) - 1e-15 <= exact_loss <= full_objective * (1 + 1e-8) + 1e-9
        assert objective == pytest.approx(full_objective, rel=1e-7, abs=1e-9)
    else:
        assert objective == pytest.approx(full_objective, rel=1e-8, abs=1e-9)
    if strategy != "interior":
        # HiGHS's own values can miss rows where entries reach alpha^n ~ 1e-16: crossover's by
        # 1e-4 (explore: n = 45, alpha = 0.48, zero-one), primal simplex's by 9.3e-6 (n = 39,
        # alpha = 0.398, zero-one); the basis's exact solution, which is what column generation
        # returns (solve.py), holds them to 1e-16
        values = folded.basic_solution()[0]
    _assert_mirror_symmetric(problem, folded, values, duals)
    # d's reduced cost: the loss rows' duals sum to minus its cost, folded or not
    assert duals.sum() == pytest.approx(full_duals.sum(), rel=1e-6)
    if strategy != "interior":
        exact_values, exact_duals = folded.basic_solution()
        exact = folded.remap(exact_values).toarray()
        np.testing.assert_allclose(exact.sum(axis=1), 1.0, atol=1e-12)
        if alpha**n >= 1e-9:
            # Where entries reach alpha^n < 1e-9 the basis HiGHS calls optimal is so only on its
            # scaled LP: exactly, its values reach -1e-7 and its duals differ from HiGHS's by
            # 1.5e-5 (explore, zero-one: n = 25, alpha = 0.43; n = 42, alpha = 0.33). Column
            # generation clips and renormalises the remap and prices duals exactly, so its
            # answers stay certified; only this claim about HiGHS's basis needs the bound.
            assert exact.min() >= -1e-9  # to HiGHS's feasibility tolerance on its scaled LP (explore: -3.5e-10 at n = 43, alpha = 0.5)
            np.testing.assert_allclose(exact_duals, duals, atol=1e-7)
