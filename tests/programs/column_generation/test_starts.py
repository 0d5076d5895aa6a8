"""First masters that hold (nearly) the optimal support: coarse start, predicted basis, gap edges."""

import highspy
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

import dpopt
from dpopt.losses import loss_table
from dpopt.mechanisms.geometric import geometric_matrix
from dpopt.programs.column_generation import forms, master as masters, solve as loop, solve_by_column_generation, starts
from tests.programs.column_generation.examples import random_remap
from tests.conftest import examples


def _rounded(t):
    """Each row of t replaced by the randomized rounding of its mean (mass on floor and ceil)."""
    n = t.shape[0] - 1
    phi = t @ np.arange(n + 1)
    out = np.zeros_like(t)
    low = np.floor(phi).astype(int)
    frac = phi - low
    out[np.arange(n + 1), low] += 1 - frac
    out[np.arange(n + 1), np.minimum(low + 1, n)] += frac
    return out


@settings(max_examples=examples(40))
@given(st.integers(2, 15), st.floats(0.05, 0.99), st.sampled_from(["absolute", "squared"]), st.integers(0, 2**32 - 1))
def test_rounding_each_row_to_its_mean_never_raises_a_rows_loss(n, alpha, loss, seed):
    # why the coarse start predicts only the row means: for losses convex in the output,
    # G R(T) is never worse than G T on any input row (Jensen), so an optimal T exists with
    # every row on the two integers around its mean
    t = random_remap(n, np.random.default_rng(seed), width=n)
    g = geometric_matrix(n, alpha)
    table = loss_table(loss, n)
    before = ((g @ t) * table).sum(axis=1)
    after = ((g @ _rounded(t)) * table).sum(axis=1)
    assert np.all(after <= before + 1e-9 * np.maximum(1.0, before))


def test_predicted_means_scale_the_coarse_solution():
    # identity at the coarse level is identity at the fine level; the end rows keep their boundary layer
    m, k = 50, 4
    phi = starts.predicted_means(np.arange(m + 1, dtype=float), m * k, k)
    np.testing.assert_allclose(phi, np.arange(m * k + 1))
    r = np.arange(m + 1, dtype=float)
    coarse = r + 3.0 * (1 - 2 * r / m)  # pulled towards the middle, linearly
    coarse[0], coarse[m] = 2.0, m - 2.0
    n = m * k
    phi = starts.predicted_means(coarse, n, k)
    assert phi[0] == 8.0 and phi[n] == n - 8.0
    fine = np.arange(n + 1, dtype=float)
    np.testing.assert_allclose(phi[1:n], (fine + 3.0 * k * (1 - 2 * fine / n))[1:n], rtol=1e-12)
    assert starts.coarse_factor(1000, 0.9) == 1 and starts.coarse_factor(300, 0.99) == 1  # not used there
    assert starts.coarse_factor(1000, 0.99) == 10 and starts.coarse_factor(400, 0.99) == 4


@pytest.mark.parametrize("loss", ["absolute", "squared"])
@pytest.mark.parametrize("side", [None, {"lower": 60, "upper": 390}])
def test_the_coarse_start_reaches_the_optimum_of_the_band_start(loss, side):
    problem = dpopt.CountQuery(n=400, alpha=0.99, loss=loss, side_information=side)
    assert starts.coarse_start(problem) is not None
    # hull=False: the full problem, so that the coarse start itself meets side information
    coarse = solve_by_column_generation(problem, hull=False)
    plain = solve_by_column_generation(problem, coarse=False, hull=False)
    for result in (coarse, plain):
        assert result.relative_gap <= 1e-9
    assert coarse.upper_bound == pytest.approx(plain.upper_bound, rel=2e-9)
    assert coarse.rounds < plain.rounds


def test_a_long_path_widens_the_absolute_window_so_the_first_master_certifies():
    """n = 17,000 at alpha = 0.99 (170 noise scales): some interior means sit a whole count
    beyond the continuum prediction; with one column each side the run took 9 rounds (45 s)."""
    problem = dpopt.CountQuery(n=17_000, alpha=0.99)
    result = solve_by_column_generation(problem)
    assert result.rounds == 1 and result.relative_gap <= 1e-9
    alpha = problem.alpha
    assert result.upper_bound < 2 * alpha / (1 - alpha**2)  # below the geometric mechanism's interior rows


def test_the_end_rows_get_columns_further_inward_for_absolute_loss():
    # the prediction at the ends is extrapolated and falls short (n = 800: row 1 predicted 65.1, optimal 67.8)
    n, w = 800, starts.PREDICTED_WIDTH["absolute"]
    rows, targets = starts.coarse_start(dpopt.CountQuery(n=n, alpha=0.99, loss="absolute"))
    per_row = np.bincount(rows, minlength=n + 1)
    depth = starts.END_ROWS
    assert np.all(per_row[1:depth] == 2 * w + 2 + starts.END_EXTRA) and np.all(per_row[n + 1 - depth:n] == 2 * w + 2 + starts.END_EXTRA)
    assert per_row[n // 2] == 2 * w + 2
    first = targets[rows == 1]
    assert first.max() - first.min() == 2 * w + 1 + starts.END_EXTRA and first.max() >= 68  # reaches the optimal support
    last = targets[rows == n - 1]
    assert last.max() - last.min() == 2 * w + 1 + starts.END_EXTRA and last.min() <= n - 68  # mirrored: inward is down
    squared_rows, _ = starts.coarse_start(dpopt.CountQuery(n=n, alpha=0.99, loss="squared"))
    # squared loss widens its own way (n (1 - alpha) = 8 < WIDER_WITHIN_SCALES: w + 1 everywhere)
    assert np.bincount(squared_rows)[n // 2] == 2 * (starts.PREDICTED_WIDTH["squared"] + 1) + 2
    result = solve_by_column_generation(dpopt.CountQuery(n=n, alpha=0.99, loss="absolute"))
    assert result.rounds == 1 and result.relative_gap <= 1e-9  # four rounds without the inward columns


@settings(max_examples=examples(60))
@given(st.integers(1, 12), st.integers(0, 5), st.lists(st.floats(0, 60), min_size=3, max_size=3), st.integers(0, 4))
def test_columns_between_windows_cover_every_window_without_gaps(k, w, means, row):
    offsets = np.arange(-w, w + 2)
    rows, targets = starts._between(np.array([row]), [np.array([m]) for m in means], offsets)
    assert np.all(rows == row) and np.all(np.diff(targets) == 1)  # one contiguous run
    windows = np.concatenate([np.floor(m).astype(int) + offsets for m in means])
    assert targets.min() == windows.min() and targets.max() == windows.max()


def test_the_end_zones_reach_k_plus_2_outward_and_the_edge_rows_inward_too():
    n, alpha, k, w = 5000, 0.99, 10, 3
    phi = np.arange(n + 1) + 0.5
    predictions = starts._end_zones(n, alpha, k, w, phi)
    rows = np.concatenate([np.repeat(r, o.size) for r, _, o in predictions])
    targets = np.concatenate([(np.floor(p).astype(np.int64)[:, None] + o).ravel() for _, p, o in predictions])
    zone = min(int(np.ceil(starts.END_ZONE_SCALES * 100)), int(starts.END_ZONE_FRACTION * (n + 1)))
    assert set(np.unique(rows)) == set(range(zone)) | set(range(n + 1 - zone, n + 1))

    def reach(r):
        mine = targets[rows == r] - r  # with the window -w..w+1 around floor(phi) = r
        return np.union1d(mine, np.arange(-w, w + 2))

    middle_low, edge_low = zone // 2, 1
    np.testing.assert_array_equal(reach(middle_low), np.arange(-k - 2, w + 2 + starts.END_ZONE_INWARD))  # outward = down
    np.testing.assert_array_equal(reach(n - middle_low), np.arange(-w - starts.END_ZONE_INWARD, k + 4))
    np.testing.assert_array_equal(reach(edge_low), np.arange(-k - 2, k + 4))  # extrapolated rows: both ways
    np.testing.assert_array_equal(reach(n - edge_low), np.arange(-k - 2, k + 4))


@pytest.mark.parametrize("side", [None, list(range(0, 1001, 2))])
def test_the_widened_squared_start_certifies_in_one_master(monkeypatch, side):
    # alpha = 0.99, n = 1000: the previous windows missed a few dozen optimal entries near
    # the ends and one beyond the window in the middle, and needed a second interior master
    problem = dpopt.CountQuery(n=1000, alpha=0.99, loss="squared", side_information=side)
    assert starts.widened(problem, starts.coarse_factor(1000, 0.99))
    wide = solve_by_column_generation(problem)
    monkeypatch.setattr(starts, "widened", lambda problem, k: False)
    narrow = solve_by_column_generation(problem)
    assert wide.relative_gap <= 1e-9 and narrow.relative_gap <= 1e-9
    assert wide.upper_bound == pytest.approx(narrow.upper_bound, rel=2e-9)
    assert wide.rounds == 1 < narrow.rounds


def test_the_widened_start_is_kept_to_squared_loss_on_regular_s_at_its_target_factor():
    k = starts.coarse_factor(1000, 0.99)
    assert starts.widened(dpopt.CountQuery(n=1000, alpha=0.99, loss="squared"), k)
    assert not starts.widened(dpopt.CountQuery(n=1000, alpha=0.99, loss="absolute"), k)
    scattered = sorted(np.random.default_rng(0).choice(1001, size=100, replace=False).tolist())
    assert not starts.widened(dpopt.CountQuery(n=1000, alpha=0.99, loss="squared", side_information=scattered), k)
    # alpha = 0.999: k = 10 is capped below its target and the coarse problem is coarsened again
    assert not starts.widened(dpopt.CountQuery(n=10_000, alpha=0.999, loss="squared"), starts.coarse_factor(10_000, 0.999))


@pytest.mark.slow
@settings(max_examples=examples(8), deadline=None)
@given(st.integers(600, 900), st.floats(0.95, 0.995), st.sampled_from([1, 2]))
def test_the_widened_start_never_changes_the_certified_optimum(n, alpha, period):
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss="squared", side_information=list(range(0, n + 1, period)))
    coarse, plain = solve_by_column_generation(problem), solve_by_column_generation(problem, coarse=False)
    assert coarse.relative_gap <= 1e-9 and plain.relative_gap <= 1e-9
    assert coarse.upper_bound == pytest.approx(plain.upper_bound, rel=2e-9)


@pytest.mark.slow
@settings(max_examples=examples(8), deadline=None)
@given(st.integers(400, 700), st.floats(0.95, 0.995), st.sampled_from(["absolute", "squared"]), st.integers(0, 150), st.integers(0, 150))
def test_the_coarse_start_never_changes_the_certified_optimum(n, alpha, loss, cut_low, cut_high):
    problem = dpopt.CountQuery(n=n, alpha=alpha, loss=loss, side_information={"lower": cut_low, "upper": n - cut_high})
    coarse, plain = solve_by_column_generation(problem, hull=False), solve_by_column_generation(problem, coarse=False, hull=False)
    assert coarse.relative_gap <= 1e-9 and plain.relative_gap <= 1e-9
    assert coarse.upper_bound == pytest.approx(plain.upper_bound, rel=2e-9)


EVENS_800 = list(range(0, 801, 2))


# absolute loss on the even counts starts with HiGHS (_AbsoluteForm.INTERIOR_MAX_GAP): no
# interior master, no prediction
@pytest.mark.parametrize(("loss", "side"), [("absolute", None), ("squared", None), ("squared", EVENS_800)],
                         ids=["absolute", "squared", "squared-evens"])
def test_the_mirrored_extension_start_reaches_the_same_certified_optimum(monkeypatch, loss, side):
    """Force the interior first master (n = 800, alpha = 0.9) and predict the basis from
    n0 = 200 after it: the result must match the default route's certified optimum."""
    problem = dpopt.CountQuery(n=800, alpha=0.9, loss=loss, side_information=side)
    plain = solve_by_column_generation(problem)
    assert plain.within(1e-9)
    monkeypatch.setattr(forms._ChainForm, "INTERIOR_BAND_RANGE", 0.0)
    monkeypatch.setattr(starts, "EXTEND_RANGE", 20.0)
    installed, interior = [], []
    original, original_interior = masters.Master.install_basis, masters.Master.solve_interior

    def spy(self, basis, width=1):
        installed.append(original(self, basis, width))
        return installed[-1]

    def spy_interior(self):
        interior.append(self.form.n)
        return original_interior(self)

    monkeypatch.setattr(masters.Master, "install_basis", spy)
    monkeypatch.setattr(masters.Master, "solve_interior", spy_interior)
    extended = solve_by_column_generation(problem)
    # the interior master left a gap and the prediction was tried right after it, not after
    # INTERIOR_ROUNDS of them (n0 = 200 has interior masters of its own here)
    assert extended.rounds > 1 and installed == [True] and interior.count(800) == 1
    assert extended.within(1e-9)
    assert extended.upper_bound == pytest.approx(plain.upper_bound, rel=2e-9)
    assert extended.lower_bound <= plain.upper_bound + 1e-9 and plain.lower_bound <= extended.upper_bound + 1e-9


def test_a_predicted_basis_is_checked_exactly_and_refactorised_when_it_drifted(monkeypatch):
    """HiGHS's updated factors can drift on a predicted basis (n = 10,000: "optimal", and
    the basis's exact remap 1.9e-3 over on one row). Simulated here by corrupting the first
    exact solution read after that solve: the run must notice, re-solve the same master on
    fresh factors, and still certify."""
    problem = dpopt.CountQuery(n=800, alpha=0.9, loss="squared")
    monkeypatch.setattr(forms._ChainForm, "INTERIOR_BAND_RANGE", 0.0)
    monkeypatch.setattr(starts, "EXTEND_RANGE", 40.0)  # n0 = 400: the predicted master is the last
    strategies, corrupted = [], []
    original_solve, original_exact = masters.Master.solve, masters.Master.basic_solution

    def solve(self, strategy="primal", **kwargs):
        if self.form.n == problem.n:
            strategies.append(strategy)
        return original_solve(self, strategy, **kwargs)

    def basic_solution(self, refinement_steps=2):
        exact = original_exact(self, refinement_steps)
        if self.form.n == problem.n and strategies[-1:] == ["dual"] and not corrupted and exact is not None:
            values, duals = exact
            values = values.copy()
            diagonal = np.flatnonzero((self.t_rows == 400) & (self.t_cols == 400))
            far = np.flatnonzero((self.t_rows == 400) & (np.abs(self.t_cols - 400) >= 2))
            assert diagonal.size == 1 and far.size  # rows of the band hold +-2
            values[far[0]] += values[diagonal[0]]  # row 400 stays stochastic, its loss rises
            values[diagonal[0]] = 0.0
            corrupted.append(True)
            return values, duals
        return exact

    monkeypatch.setattr(masters.Master, "solve", solve)
    monkeypatch.setattr(masters.Master, "basic_solution", basic_solution)
    result = solve_by_column_generation(problem)
    assert corrupted == [True]
    assert strategies[:2] == ["interior", "dual"] and "refactored dual" in strategies
    assert result.within(1e-9)


def test_a_predicted_master_that_highs_marks_unknown_is_checked_exactly_not_solved_again(monkeypatch):
    """At n = 16,000 the fresh-factor dual simplex ended on a basis with no primal or dual
    infeasibility, which HiGHS marked "Unknown" (its primal and dual objectives differed),
    and the cold interior point that followed took 499 s. Simulated: the predicted
    master's simplex runs are reported "Unknown"; the run must keep the basis, check it
    exactly and certify, without an interior point from scratch."""
    problem = dpopt.CountQuery(n=800, alpha=0.9, loss="squared")
    monkeypatch.setattr(forms._ChainForm, "INTERIOR_BAND_RANGE", 0.0)
    monkeypatch.setattr(starts, "EXTEND_RANGE", 40.0)  # n0 = 400: the predicted master is the last
    configured, unknown = [], []
    original_configure = masters.Master._configure

    def configure(self, strategy):
        original_configure(self, strategy)
        if self.form.n != problem.n:
            return
        configured.append(strategy)
        if strategy == "dual" and not unknown:
            run = self.h.run

            def run_marked_unknown():
                status = run()
                if self.h.getInfo().num_primal_infeasibilities == 0 == self.h.getInfo().num_dual_infeasibilities:
                    unknown.append(True)
                    self.h.getModelStatus = lambda: highspy.HighsModelStatus.kUnknown
                return status

            self.h.run = run_marked_unknown
        else:
            self.h.__dict__.pop("getModelStatus", None)
            self.h.__dict__.pop("run", None)

    monkeypatch.setattr(masters.Master, "_configure", configure)
    result = solve_by_column_generation(problem)
    assert unknown == [True]
    after = configured[configured.index("dual"):]
    assert not any(strategy.endswith("ipm") for strategy in after), configured
    assert result.within(1e-9)
    # an unchecked solve does not accept the same status
    master = masters.Master(forms.form_for(problem))
    master.add_remap_columns(np.arange(801), np.arange(801))
    master.start_from_identity()
    configured.clear()
    unknown.clear()
    master.solve("dual")
    assert unknown == [True] and "ipm" in configured


def test_interior_masters_that_stall_go_to_the_predicted_basis_before_highs_from_scratch(monkeypatch):
    """At n = 16,000 (beyond EARLY_EXTENSION_MAX_N) the second interior master priced no
    column out and HiGHS's interior point from scratch took 499 s; the predicted basis,
    tried first, took the run to 112 s. Simulated: no column joins after an interior master."""
    problem = dpopt.CountQuery(n=800, alpha=0.9, loss="squared")
    monkeypatch.setattr(forms._ChainForm, "INTERIOR_BAND_RANGE", 0.0)
    monkeypatch.setattr(starts, "EXTEND_RANGE", 40.0)
    monkeypatch.setattr(loop, "EARLY_EXTENSION_MAX_N", 0)  # the prediction would wait for INTERIOR_ROUNDS masters
    strategies, stalled = [], {"on": False}
    original_solve, original_add, original_extended = masters.Master.solve, masters.Master.add_remap_columns, starts.extended_basis

    def solve(self, strategy="primal", **kwargs):
        if self.form.n == problem.n:
            strategies.append(strategy)
        out = original_solve(self, strategy, **kwargs)
        stalled["on"] = self.form.n == problem.n and strategy == "interior"
        return out

    def add_remap_columns(self, rows, targets):
        return 0 if stalled["on"] else original_add(self, rows, targets)

    def extended_basis(problem, **kwargs):
        stalled["on"] = False
        return original_extended(problem, **kwargs)

    monkeypatch.setattr(masters.Master, "solve", solve)
    monkeypatch.setattr(masters.Master, "add_remap_columns", add_remap_columns)
    monkeypatch.setattr(loop, "extended_basis", extended_basis)
    result = solve_by_column_generation(problem)
    assert strategies[:2] == ["interior", "dual"], strategies
    assert not any(strategy.endswith("ipm") for strategy in strategies)
    assert result.within(1e-9)


def test_the_mirrored_extension_applies_only_where_its_picture_holds(monkeypatch):
    monkeypatch.setattr(starts, "EXTEND_RANGE", 20.0)  # n0 = 200 at alpha = 0.9
    basis = starts.extended_basis(dpopt.CountQuery(n=800, alpha=0.9, loss="squared"))
    assert basis is not None
    rows = np.bincount(basis.rows, minlength=801)
    assert rows.min() >= 1 and rows.max() <= 2  # every row of T has one or two basic entries
    # one slack loss row per one-entry row, but for the one d stands for
    assert basis.slack_rows.size == np.count_nonzero(rows == 1) - 1
    assert np.all(np.abs(basis.targets - basis.rows) <= 10)
    # n0's optimum, its middle (rows 95..105) moved to n/2 and its ends to the two ends
    smaller = solve_by_column_generation(dpopt.CountQuery(n=200, alpha=0.9, loss="squared")).mechanism.remap
    predicted = sparse.csr_array((np.ones(basis.rows.size), (basis.rows, basis.targets)), shape=(801, 801))
    for rows0, shift in ((np.arange(0, 50), 0), (np.arange(95, 106), 300), (np.arange(151, 201), 600)):
        for r in rows0:
            assert set(smaller[[r]].indices) == {c - shift for c in predicted[[r + shift]].indices}, r
    # in between, two entries: toward n/2 on each side
    assert set(predicted[[300]].indices) == {300, 301} and set(predicted[[500]].indices) == {499, 500}
    assert starts.extended_basis(dpopt.CountQuery(n=800, alpha=0.9, loss="zero_one")) is None
    assert starts.extended_basis(dpopt.CountQuery(n=800, alpha=0.9, loss="squared", side_information=[0, 400, 800])) is None
    assert starts.extended_basis(dpopt.CountQuery(n=300, alpha=0.9, loss="squared")) is None  # n < 2 n0


def test_the_mirrored_extension_repeats_a_periodic_s(monkeypatch):
    """The even counts: n0's S is the even counts of 0..n0, its ends and middle move by
    even shifts, and the rows in between repeat a period of the rows next to its middle."""
    assert starts.side_period(dpopt.CountQuery(n=800, alpha=0.9, loss="squared")) == 1
    assert starts.side_period(dpopt.CountQuery(n=800, alpha=0.9, loss="squared", side_information=EVENS_800)) == 2
    assert starts.side_period(dpopt.CountQuery(n=9, alpha=0.9, loss="squared", side_information=[1, 4, 7])) == 3
    assert starts.side_period(dpopt.CountQuery(n=9, alpha=0.9, loss="squared", side_information=[1, 4, 8])) is None
    assert starts.side_period(dpopt.CountQuery(n=100, alpha=0.9, loss="squared", side_information=list(range(0, 101, 5)))) is None
    monkeypatch.setattr(starts, "EXTEND_RANGE", 20.0)  # n0 = 200 at alpha = 0.9
    problem = dpopt.CountQuery(n=800, alpha=0.9, loss="squared", side_information=EVENS_800)
    basis = starts.extended_basis(problem)
    assert basis is not None
    rows = np.bincount(basis.rows, minlength=801)
    assert rows.min() >= 1 and rows.max() <= 2
    # one basic variable per master row: T's entries plus the slack loss rows, all on S
    assert basis.rows.size + basis.slack_rows.size == 801 + len(EVENS_800) - 1
    assert np.all(basis.slack_rows % 2 == 0)
    predicted = sparse.csr_array((np.ones(basis.rows.size), (basis.rows, basis.targets)), shape=(801, 801))

    def offsets(r):
        return sorted(c - r for c in predicted[[r]].indices)

    for r in range(150, 340):  # between n0's left end and n/2's cluster: period 2
        assert offsets(r) == offsets(r + 2), r
    assert offsets(150) != offsets(151)  # a two-entry and a one-entry row in turn
    assert starts.extended_basis(dpopt.CountQuery(n=801, alpha=0.9, loss="squared", side_information=EVENS_800)) is None


def test_the_middle_cluster_is_the_run_of_special_rows_around_the_middle():
    special = np.array([0, 1, 2, 40, 47, 49, 50, 53, 57, 62, 90])
    assert starts._middle_cluster(special, 50) == 7  # 47..57 in steps of at most 4; 40 and 62 are too far
    assert starts._middle_cluster(special, 50, gap=10) == 12  # 40..62
    assert starts._middle_cluster(np.array([10, 90]), 50) == 0


# -- side information: the problem on the hull of S --------------------------------------------


def test_rows_deep_inside_a_long_gap_start_at_its_edges():
    problem = dpopt.CountQuery(n=1000, alpha=0.95, loss="absolute", side_information=list(range(401)) + list(range(600, 1001)))
    rows = np.repeat(np.arange(1001), 2)
    targets = np.clip(rows + np.tile([0, 1], 1001), 0, 1000)
    kept_rows, kept_targets = starts._gap_edges(problem, rows, targets)
    deep = (kept_rows > 420) & (kept_rows < 580)  # more than one noise scale (20) from S
    assert set(kept_targets[deep]) == {400, 600} and np.bincount(kept_rows[deep]).max() == 2
    outside = ~((kept_rows > 420) & (kept_rows < 580))
    assert sorted(zip(kept_rows[outside], kept_targets[outside])) == sorted(
        (r, t) for r, t in zip(rows, targets) if not 420 < r < 580)
    squared = dpopt.CountQuery(n=1000, alpha=0.95, loss="squared", side_information=problem.support)
    assert starts._gap_edges(squared, rows, targets)[0].size == rows.size  # squared keeps its prediction


def test_the_gap_edge_start_reaches_the_band_starts_optimum():
    problem = dpopt.CountQuery(n=1000, alpha=0.95, loss="absolute", side_information=list(range(401)) + list(range(600, 1001)))
    assert starts.coarse_start(problem) is not None  # the start under test applies here
    started = solve_by_column_generation(problem)
    band = solve_by_column_generation(problem, coarse=False)
    assert started.relative_gap <= 1e-9 and band.relative_gap <= 1e-9
    assert started.upper_bound == pytest.approx(band.upper_bound, rel=2e-9)
