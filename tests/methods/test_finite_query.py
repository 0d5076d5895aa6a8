"""finite_query: the LP against the GS count-query optimum, the constructions against the LP.

Independent routes: the GS LP and the factored route of ``count_query`` on path universes;
two solvers (HiGHS on the LP, Clarabel on the cvxpy program); the certificate measured on
every returned matrix; the constructions' index rules against Lemmas 1-2.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpopt
from dpopt.export import read_solution
from dpopt.problem_files import problem_from_dict
from dpopt.mechanisms import set_sequences as seq
from dpopt.mechanisms.ladder import ladders_from_universe
from dpopt.methods.finite_query import certify_finite
from dpopt.programs.finite_query import loss_classes
from dpopt.universes import Universe
from tests.conftest import examples

LOSSES = ["absolute", "squared", "zero_one"]


def path(n: int) -> dict:
    return {"type": "explicit", "values": list(range(n + 1)), "neighbours": [[i, i + 1] for i in range(n)]}


@given(n=st.integers(1, 12), alpha=st.floats(0.05, 0.95), loss=st.sampled_from(LOSSES), data=st.data())
def test_lp_on_a_path_is_the_gs_optimum(n, alpha, loss, data):
    support = sorted(set(data.draw(st.lists(st.integers(0, n), min_size=1, max_size=n + 1))))
    finite = dpopt.solve(dpopt.FiniteQuery(universe=path(n), alpha=alpha, loss=loss, side_information=support), "lp")
    count = dpopt.solve(dpopt.CountQuery(n=n, alpha=alpha, loss=loss, side_information=support))
    assert finite.certificate.ok
    assert finite.objective == pytest.approx(count.objective, rel=1e-7, abs=1e-9)


@given(n=st.integers(1, 8), alpha=st.floats(0.1, 0.9), loss=st.sampled_from(LOSSES))
def test_average_objective_against_the_cvxpy_program_on_clarabel(n, alpha, loss):
    problem = dpopt.FiniteQuery(universe=path(n), alpha=alpha, loss=loss, objective="average", prior=list(range(1, n + 2)))
    highs = dpopt.solve(problem, "lp")
    clarabel = dpopt.solve(problem, "lp", solver="CLARABEL")
    assert highs.certificate.ok and clarabel.certificate.ok
    assert highs.objective == pytest.approx(clarabel.objective, rel=1e-5, abs=1e-7)


@st.composite
def universes(draw):
    """A random connected universe: a random spanning tree plus extra edges, random values
    (integers, or reals with halves and quarters: the ladder's rungs are real jumps then)."""
    m = draw(st.integers(2, 9))
    parents = [draw(st.integers(0, i - 1)) for i in range(1, m)]
    edges = {(p, i) for i, p in enumerate(parents, start=1)}
    for _ in range(draw(st.integers(0, m))):
        a, b = draw(st.integers(0, m - 1)), draw(st.integers(0, m - 1))
        if a != b:
            edges.add((min(a, b), max(a, b)))
    values = draw(st.lists(st.one_of(st.integers(0, 6), st.sampled_from([0.5, 1.25, 2.75, 4.5])), min_size=m, max_size=m))
    return {"type": "explicit", "values": values, "neighbours": sorted(edges)}


@st.composite
def metric_universes(draw):
    """A random metric universe: points on a quarter grid of [0, 3]^2 with the L1 distance
    (exact in floats), the second within 1 of the first so that some pair are neighbours;
    the neighbours (distance <= 1) need not connect every dataset."""
    m = draw(st.integers(2, 8))
    coordinate = st.integers(0, 12).map(lambda k: k / 4)
    points = [(draw(coordinate), draw(coordinate))]
    points.append((points[0][0], min(3.0, points[0][1] + draw(st.sampled_from([0.0, 0.5, 1.0])))))
    points += [(draw(coordinate), draw(coordinate)) for _ in range(m - 2)]
    metric = [[abs(p[0] - q[0]) + abs(p[1] - q[1]) for q in points] for p in points]
    values = draw(st.lists(st.one_of(st.integers(0, 6), st.sampled_from([0.5, 2.75])), min_size=m, max_size=m))
    return {"type": "explicit", "values": values, "metric": metric}


def _indices(problem):
    u = problem.universe
    f, r = u.values, problem.outputs
    return {
        "privacy_first": seq.privacy_first_index(u.hops, f, r),
        "compositional": seq.compositional_index(u.hops, f, r, problem.delta),
        "utility_first": seq.utility_first_index(u.hops, f, r, problem.sensitivity, problem.delta),
        "staircase": seq.staircase_index(f, r, problem.sensitivity),
    }


@given(universe=universes(), delta=st.integers(0, 3))
def test_lemmas_1_and_2_indices_partition_and_neighbours_differ_by_at_most_one(universe, delta):
    """Every output has exactly one index per dataset (a partition); neighbours' indices differ by <= 1."""
    problem = dpopt.FiniteQuery(universe=universe, epsilon=1.0, delta=float(delta))
    a, b = problem.universe.neighbours.T
    for name, index in _indices(problem).items():
        assert (index < seq.UNREACHABLE).all(), name  # outputs are values of f: every one is reached
        assert np.abs(index[a] - index[b]).max() <= 1, name
    own = _indices(problem)["privacy_first"]
    rows = np.arange(problem.universe.size)
    columns = np.searchsorted(problem.outputs, problem.universe.values)
    assert (own[rows, columns] == 0).all()  # f(x) is in I_0^x


@given(universe=universes(), data=st.data())
def test_index_rules_against_their_definitions_written_as_loops(universe, data):
    """Theorem 3's index (a radius per dataset) and the ladder's first rung, computed by the
    definitions entry by entry, equal the grouped and binary-searched routes."""
    problem = dpopt.FiniteQuery(universe=universe, epsilon=1.0)
    u = problem.universe
    m, f, r, hops = u.size, u.values, problem.outputs, u.hops
    delta = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5]), min_size=m, max_size=m)))
    literal = np.array([[min((hops[x, y] for y in range(m) if abs(f[y] - out) <= delta[y]), default=seq.UNREACHABLE)
                         for out in r] for x in range(m)])
    np.testing.assert_array_equal(seq.compositional_index(hops, f, r, delta), literal)
    ladders = ladders_from_universe(f, u.neighbours)
    reach = np.cumsum(ladders, axis=1)
    rung = seq.ladder_index(f, r, u.neighbours)
    for x in range(m):
        for j, out in enumerate(r):
            within = [i for i in range(reach.shape[1]) if abs(f[x] - out) <= reach[x, i]]
            if within:
                assert rung[x, j] == within[0]
            else:  # past the ladder's end the last rung repeats: the first i with gap <= reach_D + (i - D) last
                assert reach[x, -1] + (rung[x, j] - reach.shape[1] + 1) * ladders[x, -1] >= abs(f[x] - out)
                assert reach[x, -1] + (rung[x, j] - reach.shape[1]) * ladders[x, -1] < abs(f[x] - out)


def test_the_papers_sphere_b_is_not_a_partition_and_the_ball_is():
    """Theorem 3 as printed (B_(i-1) over the sphere N_(i-1)) double-counts; the ball does not."""
    # a path 0-1-2-3 with values 5, 0, 0, 5: value 5 is reached at distance 0 and again at 3 from x = 0
    u = Universe.from_edges([5, 0, 0, 5], [[0, 1], [1, 2], [2, 3]])
    hops, values, outputs = u.hops, u.values, np.array([0.0, 5.0])
    sphere_sets = []
    for i in range(4):
        reached = {float(values[y]) for y in range(4) if hops[0, y] == i}
        previous_sphere = {float(values[y]) for y in range(4) if hops[0, y] == i - 1}
        sphere_sets.append(reached - previous_sphere)
    assert 5.0 in sphere_sets[0] and 5.0 in sphere_sets[3]  # the printed definition puts 5 in two sets
    index = seq.compositional_index(hops, values, outputs, np.zeros(4))
    assert index[0].tolist() == [1, 0]  # the ball version: 5 only at its first index


@given(universe=universes(), epsilon=st.floats(0.1, 3.0), delta=st.integers(0, 2))
def test_proof_calibration_never_exceeds_two_epsilon_prime(universe, epsilon, delta):
    """With calibrate_shortcuts = "proof" the parameter is eps / 2 and the measured loss is <= eps (2 x eps / 2)."""
    problem = dpopt.FiniteQuery(universe=universe, epsilon=epsilon, calibrate_shortcuts="proof", delta=float(delta))
    for method in dpopt.methods_for(problem):
        if method.name not in seq.CONSTRUCTIONS:
            continue
        solution = dpopt.solve(problem, method.name)
        assert solution.details["parameter"] == pytest.approx(epsilon / 2)
        assert solution.details["measured_loss"] <= epsilon + 1e-9, method.name
        assert solution.certificate.ok, method.name


@settings(max_examples=examples(40))  # nine methods per example, each calibrated by bisection: 16 s at the default 100
@given(universe=universes(), epsilon=st.floats(0.1, 3.0))
def test_lp_is_below_every_construction_at_the_same_measured_privacy(universe, epsilon):
    problem = dpopt.FiniteQuery(universe=universe, epsilon=epsilon)
    solutions = {s.method: s for s in dpopt.compare(problem)}
    optimum = solutions.pop("lp")
    assert optimum.certificate.ok and optimum.exact
    for name, solution in solutions.items():
        x = solution.mechanism.to_numpy()
        assert solution.certificate.ok and np.allclose(x.sum(axis=1), 1.0) and (x >= 0).all(), name
        assert certify_finite(problem, x).max_privacy_loss <= epsilon + 1e-9, name
        assert optimum.objective <= solution.objective + 1e-9, name


@settings(max_examples=examples(10), deadline=None)
@given(universe=universes(), epsilon=st.sampled_from([200.0, 500.0, 745.0]))
def test_every_construction_is_certified_up_to_the_largest_epsilon(universe, epsilon):
    # e^(-eps' I) underflows to 0 where eps' I > ~745, so the proof's parameter eps / 2 measured
    # an infinite loss at epsilon = 500 on a universe of diameter 5 (privacy_first, compositional,
    # exponential: refused, exit 4); the measured calibration now searches below it
    problem = dpopt.FiniteQuery(universe=universe, epsilon=epsilon)
    for method in dpopt.methods_for(problem):
        if method.name not in seq.CONSTRUCTIONS:
            continue
        solution = dpopt.solve(problem, method.name)
        assert solution.certificate.ok and solution.certificate.max_privacy_loss <= epsilon, method.name


def test_a_construction_on_a_long_path_spends_its_whole_budget_and_matches_exact_arithmetic():
    """On a path of 300 at epsilon = 5, e^(-eps' |x - r|) underflowed past eps' = 2.49, so until
    2026-11-29 every construction stopped there (measured loss about 2.6 of the 5 allowed). The
    clamped weights calibrate to the whole budget, and the objective is the paper's unclamped
    mechanism at that parameter, computed here in 60-digit decimal arithmetic."""
    from decimal import Decimal, localcontext

    m = 300
    problem = dpopt.FiniteQuery(universe={"type": "explicit", "values": list(range(m)),
                                          "neighbours": [[i, i + 1] for i in range(m - 1)]}, epsilon=5.0)
    solution = dpopt.solve(problem, "exponential")
    assert solution.certificate.ok and solution.details["measured_loss"] >= 0.999 * 5.0
    eps = solution.details["parameter"]
    assert eps * (m - 1) > 745  # the clamp is in use
    with localcontext() as context:
        context.prec = 60
        weight = [(-Decimal(eps) * k).exp() for k in range(m)]  # e^(-eps' k), k = |x - r|
        worst = max(sum(abs(x - r) * weight[abs(x - r)] for r in range(m)) / sum(weight[abs(x - r)] for r in range(m))
                    for x in range(m))
    assert solution.objective == pytest.approx(float(worst), rel=1e-12)


@settings(deadline=None)
@given(first=st.lists(st.integers(0, 3000), min_size=2, max_size=12), steps=st.data(),
       eps=st.floats(0.01, 1e4), penalty=st.sampled_from([0.0, 1.0, 25.0]))
def test_clamped_weights_keep_the_two_epsilon_prime_bound_and_no_entry_underflows(first, steps, eps, penalty):
    """Two neighbours' indices differ by at most one per output (Lemmas 1-2): the clamped
    mechanism's loss stays within 2 eps', and no reachable entry is zero or subnormal."""
    second = [i + steps.draw(st.integers(-1 if i else 0, 1)) for i in first]
    penalties = np.array([penalty if j % 2 else 0.0 for j in range(len(first))])
    x = seq.index_mechanism(np.array([first, second]), eps, penalty=penalties)
    assert x.min() >= np.finfo(float).tiny
    assert seq.measured_loss(x, np.array([[0, 1]])) <= 2 * eps * (1 + 1e-12) + 1e-9


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet", ".npz"])
def test_a_mechanism_read_back_has_the_very_objective_it_was_exported_with(tmp_path, suffix):
    """A matrix read from a file is column-major, and einsum sums in layout order: until
    2026-11-29 the path of 30 read back 1 ulp away (1.1638255747419841 for 1.163825574741984)."""
    m = 30
    problem = dpopt.FiniteQuery(universe={"type": "explicit", "values": list(range(m)),
                                          "neighbours": [[i, i + 1] for i in range(m - 1)]}, epsilon=1.0)
    solution = dpopt.solve(problem, "exponential")
    solution.export(str(tmp_path / f"m{suffix}"))
    back = read_solution(str(tmp_path / f"m{suffix}"))
    assert back.objective == solution.objective
    assert problem.objective_of(np.asfortranarray(solution.mechanism.to_numpy())) == solution.objective


def test_the_lp_at_tiny_epsilon_stays_exact_through_its_repair():
    # the interior point's rows break privacy by more than epsilon's slack; mixed with the uniform
    # row (weight 3.2e-5) the objective sat 6.6e-5 above the certified bound ("gap_above_tolerance");
    # the rows' column means cost what the rows do
    problem = dpopt.FiniteQuery(universe={"type": "graph_atlas", "nodes": 6, "statistic": "triangles"}, epsilon=1e-6)
    solution = dpopt.solve(problem, "lp")
    assert solution.certificate.ok and solution.exact
    assert solution.objective - solution.details["lower_bound"] <= 1e-7 * solution.objective


@given(universe=universes(), epsilon=st.floats(1e-6, 3.0), seed=st.integers(0, 2**32 - 1))
def test_the_repair_is_certified_and_never_worse_than_mixing_with_the_uniform_row(universe, epsilon, seed):
    from dpopt.methods.finite_query import _least_mix, graph_majorant, mix_until_certified

    problem = dpopt.FiniteQuery(universe=universe, epsilon=epsilon)
    x = np.random.default_rng(seed).dirichlet(np.ones(problem.size[1]), size=problem.size[0])
    repaired, certificate = mix_until_certified(problem, x)
    assert certificate.ok and certify_finite(problem, repaired).ok
    y = graph_majorant(problem, x / x.sum(axis=1, keepdims=True))  # the steps the repair takes before mixing
    y /= y.sum(axis=1, keepdims=True)
    if not certify_finite(problem, y).ok:
        uniform, _ = _least_mix(problem, y, np.full_like(y, 1.0 / y.shape[1]), "uniform")
        assert problem.objective_of(repaired) <= problem.objective_of(uniform) * (1 + 1e-12)


def test_a_metric_whose_neighbours_leave_a_dataset_alone_has_no_ladder():
    """Neighbours are the pairs at distance <= 1; here dataset 2 has none. The ladder's rungs are
    hops in that graph, so it does not apply: compare leaves it out and asking for it is refused."""
    universe = {"type": "explicit", "values": [0, 1, 2], "metric": [[0, 1, 3], [1, 0, 2.5], [3, 2.5, 0]]}
    problem = dpopt.FiniteQuery(universe=universe, epsilon=1.0)
    assert not problem.universe.neighbours_connected
    solutions = dpopt.compare(problem)
    assert "ladder" not in {s.method for s in solutions} and "privacy_first" in {s.method for s in solutions}
    assert all(s.certificate.ok for s in solutions)
    with pytest.raises(dpopt.InvalidParameterError, match="connecting every dataset"):
        dpopt.solve(problem, "ladder")


def test_a_ladder_never_reaches_outputs_beyond_rungs_of_width_zero_or_too_far_to_count():
    """Until 2026-11-29 the rungs past the ladder's end were (gap - reach) / max(width, 1e-300)
    cast to int64: for a constant query (width 0) and for 1e15 over a width of 1e-10 that was
    int64's minimum, the far outputs got the smallest index, and the ladder put all its mass
    there (a constant query 2 released 0 or 5; values near 0 released 1e15)."""
    chain = [(0, 1), (1, 2), (2, 3)]
    constant = dpopt.FiniteQuery(universe=Universe.from_edges([2, 2, 2, 2], chain), epsilon=1.0, outputs=[0, 2, 5])
    index = seq.ladder_index(constant.universe.values, constant.outputs, constant.universe.neighbours)
    assert (index[:, 1] == 0).all() and (index[:, [0, 2]] == seq.UNREACHABLE).all()
    solution = dpopt.solve(constant, "ladder")
    assert solution.objective == 0.0 and (solution.mechanism[2] == 1.0).all() and solution.certificate.ok
    nowhere = dpopt.FiniteQuery(universe=Universe.from_edges([2, 2, 2, 2], chain), epsilon=1.0, outputs=[0, 5])
    assert "ladder" not in {m.name for m in dpopt.methods_for(nowhere)}
    with pytest.raises(dpopt.InvalidParameterError, match="for a constant query an output equal to its value"):
        dpopt.solve(nowhere, "ladder")
    far = dpopt.FiniteQuery(universe=Universe.from_edges([0, 1e-10, 2e-10], chain[:2]), epsilon=1.0, outputs=[0, 1e-10, 2e-10, 1e15])
    index = seq.ladder_index(far.universe.values, far.outputs, far.universe.neighbours)
    assert (index[:, 3] == seq.UNREACHABLE).all() and (index[:, :3] < 10).all()
    solution = dpopt.solve(far, "ladder")
    assert (solution.mechanism[1e15] == 0.0).all() and solution.objective < 1e-9 and solution.certificate.ok


def test_constructions_that_cannot_count_the_steps_to_any_output_are_refused():
    """Theorem 1's and 4's indices and the ladder's rungs count sensitivities as int64 below
    seq.UNREACHABLE. With the only output at 1e15 and a sensitivity of 1e-10 no dataset reaches
    it, and until 2026-11-29 those constructions ended in a ValueError ("no output in its set
    sequence"); now their applies rule refuses them and the others still run."""
    problem = dpopt.FiniteQuery(universe=Universe.from_edges([0, 1e-10, 2e-10, 0], [(1, 0), (2, 1), (3, 2)]), epsilon=1.0, outputs=[1e15])
    counted = {"staircase", "utility_first", "weighted_utility_first", "ladder"}
    assert counted.isdisjoint(m.name for m in dpopt.methods_for(problem))
    for name in counted:
        with pytest.raises(dpopt.InvalidParameterError, match="within 2\\^60 sensitivities of its nearest output"):
            dpopt.solve(problem, name)
    solutions = dpopt.compare(problem)
    assert solutions and all(s.certificate.ok and s.objective == 1e15 for s in solutions)


@given(index=st.lists(st.lists(st.integers(0, 40), min_size=4, max_size=4), min_size=1, max_size=5),
       penalty=st.lists(st.sampled_from([0.0, 0.3, 1.0, 7.5]), min_size=4, max_size=4),
       eps=st.sampled_from([0.5, 30.0, 1e4, 31457280.0]))
def test_index_mechanism_rows_sum_to_one_whatever_the_penalty_and_parameter(index, penalty, eps):
    # Theorem 5 with E empty (every output pays the penalty) at epsilon = 30 calibrates eps' to
    # 3e7: until 2026-11-29 the logits sat at -3e7 and the rows summed to 1 + 1.8e-9 (uncertified)
    x = seq.index_mechanism(np.array(index), eps, penalty=np.array(penalty))
    assert np.all(np.abs(x.sum(axis=1) - 1.0) <= 4 * np.finfo(float).eps)


def test_theorems_5_and_6_with_no_important_output_certify_at_large_epsilon():
    universe = Universe.from_edges([1, 1], [(1, 0)])
    for name in ("weighted_utility_first", "weighted_privacy_first"):
        solution = dpopt.solve(dpopt.FiniteQuery(universe=universe, epsilon=30.0, outputs=[0.0, 2.0, 3.0], loss="squared"), name)
        assert solution.certificate.ok and solution.certificate.max_row_sum_error <= 4 * np.finfo(float).eps


def test_outputs_that_are_no_value_of_f_leave_theorem_2_without_rows():
    """I_i^x and -d̄(x, f^-1(r)) reach values of f only: with none among the outputs those two
    constructions are refused (they used to return NaN rows); the others cover any R."""
    problem = dpopt.FiniteQuery(universe={"type": "explicit", "values": [6, 7, 11], "neighbours": [[0, 1], [0, 2]]},
                                alpha=0.01, outputs=[-4, 2, 4, 8, 9, 12])
    solutions = dpopt.compare(problem)
    assert {s.method for s in solutions}.isdisjoint({"privacy_first", "exponential"})
    assert all(s.certificate.ok and np.isfinite(s.objective) for s in solutions)
    for name in ("privacy_first", "exponential"):
        with pytest.raises(dpopt.InvalidParameterError, match="an output that is a value of f"):
            dpopt.solve(problem, name)
    with pytest.raises(ValueError, match="no output"):
        seq.index_mechanism(np.full((2, 3), seq.UNREACHABLE), 1.0)
    # Theorem 3 reaches outputs within delta^y of f(y): none of 5, 6 is within 1 of 22.8..46
    far = dpopt.FiniteQuery(universe={"type": "explicit", "values": [46.0, 41.0, 22.838, 43.0, 37.0],
                                      "neighbours": [[2, 1], [1, 3], [2, 4], [4, 0]]}, epsilon=0.1, outputs=[5, 6])
    assert {s.method for s in dpopt.compare(far)}.isdisjoint({"privacy_first", "compositional", "weighted_privacy_first"})
    with pytest.raises(dpopt.InvalidParameterError, match="within delta"):
        dpopt.solve(far, "compositional")
    near = dpopt.FiniteQuery(universe=far.universe.spec, epsilon=0.1, outputs=[5, 6], delta=[0, 0, 17, 0, 0])
    assert dpopt.solve(near, "compositional").certificate.ok  # 22.838 - 17 = 5.838 <= 6


def test_zero_sensitivity_releases_the_nearest_outputs(recwarn):
    """Neighbours that share their value (dataset 2 has none at all) make Delta = 0: the staircase
    steps are infinitely fine, so each dataset releases its nearest outputs (an int64 overflow
    before); a tiny Delta against a large gap is capped, not overflowed."""
    universe = {"type": "explicit", "values": [1, 1, 0], "metric": [[0, 0, 1.25], [0, 0, 1.25], [1.25, 1.25, 0]]}
    problem = dpopt.FiniteQuery(universe=universe, epsilon=0.5, outputs=[0.5, 1, 3])
    assert problem.sensitivity == 0
    np.testing.assert_array_equal(seq.staircase_index(problem.universe.values, problem.outputs, 0.0),
                                  [[seq.UNREACHABLE, 0, seq.UNREACHABLE]] * 2 + [[0, seq.UNREACHABLE, seq.UNREACHABLE]])
    for solution in dpopt.compare(problem):
        assert solution.certificate.ok and np.isfinite(solution.objective), solution.method
    assert dpopt.solve(problem, "staircase").objective == 0.5  # 0, 0 and |0 - 0.5|
    assert seq.staircase_index(np.array([0.0]), np.array([1e12]), 1e-12)[0, 0] == seq.UNREACHABLE
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_exponential_mechanism_is_theorem_2_on_a_finite_universe():
    problem = dpopt.FiniteQuery(universe={"type": "graph_atlas", "nodes": 5, "statistic": "triangles"}, epsilon=1.0)
    a, b = dpopt.solve(problem, "exponential"), dpopt.solve(problem, "privacy_first")
    np.testing.assert_array_equal(a.mechanism.to_numpy(), b.mechanism.to_numpy())


def test_atlas_lp_and_constructions_on_five_nodes():
    problem = dpopt.FiniteQuery(universe={"type": "graph_atlas", "nodes": 5, "statistic": "triangles"}, epsilon=1.0)
    optimum = dpopt.solve(problem, "lp")
    # an independent route: the same LP written in cvxpy, solved by Clarabel
    assert optimum.objective == pytest.approx(dpopt.solve(problem, "lp", solver="CLARABEL").objective, rel=1e-6)
    for method in dpopt.methods_for(problem):
        assert dpopt.solve(problem, method.name).objective >= optimum.objective - 1e-9


def test_the_lp_beyond_its_limit_is_refused_before_work_and_constructions_run():
    m = 600  # a path with 600 distinct values: 2 x 599 x 600 = 718,800 privacy rows
    universe = {"type": "explicit", "values": list(range(m)), "neighbours": [[i, i + 1] for i in range(m - 1)]}
    problem = dpopt.FiniteQuery(universe=universe, epsilon=1.0)
    assert "lp" not in {m.name for m in dpopt.methods_for(problem)}
    with pytest.raises(dpopt.InvalidParameterError, match="'method'.*lp"):
        dpopt.solve(problem, "lp")
    solution = dpopt.solve(problem, "privacy_first")
    assert solution.certificate.ok and solution.mechanism.shape == (m, m)


def test_the_lp_carries_a_certified_lower_bound():
    """The dual's values, made exactly feasible, bound the optimum from below; the repaired mechanism from above."""
    for objective in ("minimax", "average"):
        problem = dpopt.FiniteQuery(universe={"type": "graph_atlas", "nodes": 5, "statistic": "triangles"}, epsilon=1.5,
                                    loss="squared", objective=objective)
        solution = dpopt.solve(problem, "lp")
        bound = solution.details["lower_bound"]
        assert bound <= solution.objective and solution.details["optimality_gap"] < 1e-9
        # and the bound is a bound: no construction beats it
        assert all(dpopt.solve(problem, name).objective >= bound for name in ("privacy_first", "ladder", "staircase"))


def test_the_1044_graph_lp_at_small_epsilon_comes_from_a_certified_quotient():
    """Wu-Xia-He Section 6.1's universe at eps = 0.5: the LP on 286 classes of datasets (reach 2),
    lifted and repaired, is certified within 1e-7 by the relaxation to a few datasets."""
    problem = dpopt.FiniteQuery(universe={"type": "graph_atlas", "nodes": 7, "statistic": "triangles"}, epsilon=0.5)
    optimum = dpopt.solve(problem, "lp")
    assert optimum.certificate.ok and optimum.exact
    assert optimum.details["quotient_classes"] == 286 and 0 < optimum.details["lower_bound_datasets"] < 100
    assert optimum.details["lower_bound"] <= optimum.objective and optimum.details["optimality_gap"] <= 1e-7


@pytest.mark.slow
def test_the_1044_graph_lp_is_solved_certified_and_below_every_construction():
    """Wu-Xia-He Section 6.1's universe: 29,232 variables, 367,248 privacy rows (through quotients: about 35 s on two cores, 50 s on one)."""
    problem = dpopt.FiniteQuery(universe={"type": "graph_atlas", "nodes": 7, "statistic": "triangles"}, epsilon=1.0)
    optimum = dpopt.solve(problem, "lp")
    assert optimum.certificate.ok and optimum.exact and optimum.details["optimality_gap"] < 1e-7
    assert optimum.details["quotient_classes"] > 0
    for name in ("staircase", "privacy_first", "compositional", "ladder"):
        assert dpopt.solve(problem, name).objective >= optimum.details["lower_bound"]


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet", ".npz"])
def test_export_round_trip(tmp_path, suffix):
    problem = dpopt.FiniteQuery(universe={"type": "explicit", "values": [0, 1, 3], "neighbours": [[0, 1], [1, 2]]}, epsilon=0.5)
    solution = dpopt.solve(problem, "lp")
    solution.export(str(tmp_path / f"m{suffix}"))
    back = read_solution(tmp_path / f"m{suffix}")
    assert back.objective == pytest.approx(solution.objective, rel=1e-12) and back.certificate.ok
    np.testing.assert_array_equal(back.sample(2, 10, rng=4), solution.sample(2, 10, rng=4))


@settings(max_examples=examples(40), deadline=None)
@given(universe=st.one_of(universes(), metric_universes()), outputs=st.none() | st.lists(st.integers(-3, 9), min_size=1, max_size=5, unique=True),
       data=st.data())
def test_a_problem_and_its_export_read_back_whatever_the_outputs(universe, outputs, data, tmp_path_factory):
    """The default important set was every watched value, outputs or not, and on reading back it
    was checked as given: an export with outputs that miss a value could not be read (a random
    probe). Now it is the watched values among the outputs, and every problem reads back."""
    m = len(universe["values"])
    side = data.draw(st.none() | st.lists(st.integers(0, m - 1), min_size=1, max_size=m, unique=True))
    problem = dpopt.FiniteQuery(universe=universe, epsilon=1.0, outputs=outputs, side_information=side)
    assert np.isin(problem.important, problem.outputs).all()
    again = problem_from_dict(problem.to_dict())
    np.testing.assert_array_equal(again.important, problem.important)
    solution = dpopt.solve(problem, "staircase")
    path = tmp_path_factory.mktemp("export") / "m.json"
    solution.export(str(path))
    back = read_solution(path)
    assert back.certificate.ok and back.objective == pytest.approx(solution.objective, rel=1e-12)


@given(universe=universes(), epsilon=st.floats(0.1, 3.0), data=st.data())
def test_graph_majorant_is_the_smallest_private_upper_bound(universe, epsilon, data):
    from dpopt.methods.finite_query import graph_majorant

    problem = dpopt.FiniteQuery(universe=universe, epsilon=epsilon)
    m, k = problem.size
    x = np.array(data.draw(st.lists(st.lists(st.floats(0.0, 1.0), min_size=k, max_size=k), min_size=m, max_size=m)))
    y = graph_majorant(problem, x)
    assert (y >= x).all()
    a, b = problem.universe.neighbours.T
    assert (y[a] <= np.exp(epsilon) * y[b] * (1 + 1e-12) + 1e-300).all() and (y[b] <= np.exp(epsilon) * y[a] * (1 + 1e-12) + 1e-300).all()
    # already private: unchanged up to rounding (e^-ea e^-eb may exceed e^-e(a+b) by an ulp), so it is the smallest
    np.testing.assert_allclose(graph_majorant(problem, y), y, rtol=1e-12, atol=0)


def _majorant_by_relaxation(problem, x):
    """The smallest private majorant by another route: raise entries along privacy rows until
    nothing moves (Bellman-Ford on the rows' log-bounds)."""
    pairs, bounds = problem.privacy_pairs(implied=True)
    y = x.copy()
    for _ in range(len(x) + 1):
        lifted = np.zeros_like(y)
        np.maximum.at(lifted, pairs[:, 1], y[pairs[:, 0]] * np.exp(-bounds)[:, None])  # y[b] >= e^-eps_ab y[a]
        if (lifted <= y).all():
            return y
        y = np.maximum(y, lifted)
    raise AssertionError("no fixed point")


@given(universe=st.one_of(universes(), metric_universes()), privacy=st.sampled_from(["neighbours", "metric"]),
       epsilon=st.floats(0.1, 6.0), data=st.data())
def test_graph_majorant_against_raising_along_the_rows(universe, privacy, epsilon, data):
    """On edge and metric universes, for both privacy modes: the majorant is the fixed point of
    raising entries along the privacy rows, so it is private and the smallest such y >= x (with
    d̄ in place of the neighbour graph's hops a metric universe's majorant was far larger)."""
    from dpopt.methods.finite_query import graph_majorant

    problem = dpopt.FiniteQuery(universe=universe, epsilon=epsilon, privacy=privacy)
    m, k = problem.size
    x = np.array(data.draw(st.lists(st.lists(st.floats(0.0, 1.0), min_size=k, max_size=k), min_size=m, max_size=m)))
    np.testing.assert_allclose(graph_majorant(problem, x), _majorant_by_relaxation(problem, x), rtol=1e-12, atol=1e-300)


@settings(max_examples=examples(40), deadline=None)
@given(universe=metric_universes(), epsilon=st.sampled_from([0.5, 2.0, 8.0]), loss=st.sampled_from(LOSSES),
       objective=st.sampled_from(["minimax", "average"]))
def test_lp_on_metric_universes_is_exact_and_below_every_construction(universe, epsilon, loss, objective):
    """A random probe found the lp 150 times above privacy_first on a metric universe (its repair
    raised non-neighbours' entries) while reporting itself exact."""
    problem = dpopt.FiniteQuery(universe=universe, epsilon=epsilon, loss=loss, objective=objective)
    solutions = {s.method: s for s in dpopt.compare(problem)}
    lp = solutions.pop("lp")
    assert lp.exact and lp.certificate.ok and lp.details["optimality_gap"] <= 1e-6
    assert all(s.objective >= lp.objective - 1e-7 * max(1.0, lp.objective) for s in solutions.values())


def test_lp_reports_a_costly_repair_as_an_upper_bound(monkeypatch):
    """Rows that the repair has to move far (here: a solver made to return the identity, which is
    not private) are certified and released, but not claimed optimal."""
    from dpopt.methods import finite_query as methods

    problem = dpopt.FiniteQuery(universe=path(4), epsilon=1.0)
    monkeypatch.setattr(methods, "_optimal_rows", lambda p, s: (np.eye(5), {"solver_objective": 0.0, "lower_bound": 0.0}, "HIGHS"))
    solution = dpopt.solve(problem, "lp")
    assert solution.certificate.ok and not solution.exact and solution.status == "gap_above_tolerance"
    assert solution.details["optimality_gap"] == pytest.approx(1.0)


def test_lp_with_an_optimum_near_zero_is_exact_by_the_absolute_gap():
    """At epsilon = 15 the watched datasets are 3-4 hops apart, so the optimum is of order alpha^4
    (1e-26): the solver's 2e-13 is 100% above its lower bound 0 but exact for every purpose
    (a random probe found it reported as an upper bound)."""
    values = [2.5, 2.5, 0, 2.5, 0, 1, 1, 2.5, 0, 0, 2.5, 1, 2.5]
    edges = [[2, 1], [1, 11], [11, 9], [1, 10], [1, 5], [5, 3], [1, 8], [3, 6], [2, 7], [1, 12], [11, 0], [7, 4]]
    problem = dpopt.FiniteQuery(universe={"type": "explicit", "values": values, "neighbours": edges}, epsilon=15,
                                side_information=[4, 6, 10, 12])
    solution = dpopt.solve(problem, "lp")
    assert solution.exact and solution.certificate.ok and 0 <= solution.objective < 1e-9


def _far_value(epsilon: float = 30.0) -> dpopt.FiniteQuery:
    return dpopt.FiniteQuery(universe=Universe.from_edges([0.5, 0.0, 1e6, 0.0, 0.5, 0.5], [(1, 0), (2, 0), (3, 1), (4, 1), (5, 2)]),
                             epsilon=epsilon, loss="squared")


def test_an_lp_mechanism_far_above_its_bound_is_not_exact_however_large_the_far_losses(monkeypatch):
    """A value of 1e6 beside 0 and 0.5 (squared loss, epsilon = 30): HiGHS, through the dual and
    through the primal alike, returns rows at 0.344 while the certified bound is 0.0936. Until
    2026-11-29 the gap (0.25) was judged in units of the best constant mechanism's loss (2.5e11)
    and the 0.344 mechanism was called exact."""
    from dpopt.methods import finite_query as methods

    monkeypatch.setattr(methods, "_value_lp_applies", lambda problem: False)  # the solver's own rows only
    lp = dpopt.solve(_far_value(), "lp")
    assert lp.certificate.ok and lp.objective > 0.3 and lp.details["lower_bound"] < 0.094
    assert not lp.exact and lp.status == "gap_above_tolerance"


def test_an_lp_whose_rows_leave_a_gap_takes_the_value_rows_that_close_it():
    # value_lp is the LP restricted to rows shared by value: its certified rows are feasible for
    # the LP, and here they attain the certified bound (0.0936) that HiGHS's rows miss by 0.25
    lp, rows = dpopt.solve(_far_value(), "lp"), dpopt.solve(_far_value(), "value_lp")
    bound = lp.details["lower_bound"]
    assert lp.exact and lp.status == "optimal" and lp.certificate.ok and lp.details["rows_from"].startswith("value_lp")
    assert bound <= lp.objective <= bound * (1 + 1e-6) and lp.objective == rows.objective
    assert "rows_from" not in dpopt.solve(_far_value(1.0), "lp").details  # where the solver's rows close it, they stay


def test_an_lp_keeps_its_own_rows_when_the_value_rows_fail(monkeypatch):
    from dpopt.methods import finite_query as methods

    def failing(problem, solver, repair):
        raise dpopt.SolverError("HIGHS", "error", "(value_lp)")

    monkeypatch.setattr(methods, "solve_value_lp", failing)
    lp = dpopt.solve(_far_value(), "lp")
    assert lp.certificate.ok and not lp.exact and "rows_from" not in lp.details


def test_lp_repair_costs_almost_nothing():
    """The repaired mechanism's objective stays within 1e-9 of the solver's optimum (measured on
    the 6-node atlas at epsilon = 4: 1.1e-10 with the graph majorant, 5.1e-10 by mixing alone)."""
    problem = dpopt.FiniteQuery(universe={"type": "graph_atlas", "nodes": 5, "statistic": "triangles"}, epsilon=4.0)
    solution = dpopt.solve(problem, "lp")
    assert solution.certificate.ok
    assert solution.objective - solution.details["solver_objective"] <= 1e-9 * solution.objective


def test_constructions_scale_past_the_lp_limit_in_little_memory(monkeypatch):
    """A universe too large for the LP (600,000 privacy rows) gets every construction, certified,
    within a 512 MiB plan: their index rules never build the m x m x |R| array (1.2 million
    entries per output here; the rule as written needed 2.7 GiB), and ``auto`` returns one."""
    rng = np.random.default_rng(7)
    m = 1200
    tree = [(int(rng.integers(0, i)), i) for i in range(1, m)]
    extra = [tuple(e) for e in rng.integers(0, m, size=(m * 4, 2)) if e[0] != e[1]]
    universe = Universe.from_edges(rng.integers(0, 50, size=m), tree + extra)
    problem = dpopt.FiniteQuery(universe=universe, epsilon=1.0, outputs=list(range(50)))
    monkeypatch.setenv("DPOPT_MEMORY_LIMIT", str(512 * 2**20))
    with pytest.raises(dpopt.InvalidParameterError, match="'lp' does not"):
        dpopt.solve(problem, "lp")
    names = [method.name for method in dpopt.methods_for(problem)]
    assert "lp" not in names and sorted(names) == sorted([*seq.CONSTRUCTIONS, "value_lp"])
    tracemalloc.start()  # numpy's arrays are traced: the plan is checked against what is allocated
    try:
        chosen = dpopt.solve(problem)  # no exact method applies: auto takes the best mechanism of the value
        for name in seq.CONSTRUCTIONS:
            solution = dpopt.solve(problem, name)
            assert solution.certificate.ok and certify_finite(problem, solution.mechanism.to_numpy()).ok, name
            if name in VALUE_BASED:
                assert chosen.objective <= solution.objective * (1 + 1e-7), name
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 512 * 2**20
    assert chosen.method == "value_lp" and not chosen.exact and chosen.certificate.ok



#: Constructions whose row depends on a dataset only through f(x) (here with a radius per value):
#: feasible for the LP on value classes, so never better than its optimum.
VALUE_BASED = ("staircase", "utility_first", "weighted_utility_first")


def _value_based_optimum_by_cvxpy(problem) -> float:
    """The best mechanism constant on datasets with the same loss row and side-information
    membership, written directly: the full cvxpy program plus equal rows inside each class,
    solved by Clarabel (independent of :class:`ValueQuotient`'s class graph and prior sums)."""
    import cvxpy as cp

    from dpopt.programs.finite_query import build_finite_program

    program = build_finite_program(problem)
    watched = np.isin(np.arange(problem.size[0]), problem.side_information)
    keys = [tuple(row) + (flag,) for row, flag in zip(problem.loss_matrix.tolist(), watched)]
    first = {}
    ties = [program.x[i] == program.x[first.setdefault(key, i)] for i, key in enumerate(keys) if first.setdefault(key, i) != i]
    tied = cp.Problem(program.program.objective, program.program.constraints + ties)
    tied.solve(solver=cp.CLARABEL)
    return float(tied.value)


@settings(max_examples=examples(25))
@given(universe=universes(), epsilon=st.floats(0.2, 3.0), objective=st.sampled_from(["minimax", "average"]), data=st.data())
def test_value_lp_is_the_best_mechanism_of_the_value(universe, epsilon, objective, data):
    """lp <= value_lp <= every value-based construction at the same measured privacy, the rows are
    equal inside each class, and the optimum equals the program with those rows tied (Clarabel)."""
    m = len(universe["values"])
    extra = {}
    if objective == "average":
        extra["prior"] = data.draw(st.lists(st.floats(0.1, 5.0), min_size=m, max_size=m))
    elif data.draw(st.booleans()):
        extra["side_information"] = sorted(set(data.draw(st.lists(st.integers(0, m - 1), min_size=1, max_size=m))))
    problem = dpopt.FiniteQuery(universe=universe, epsilon=epsilon, objective=objective, **extra)
    value = dpopt.solve(problem, "value_lp")
    x = value.mechanism.to_numpy()
    assert value.certificate.ok and not value.exact and certify_finite(problem, x).max_privacy_loss <= epsilon + 1e-9
    classes = loss_classes(problem)
    for c in np.unique(classes):
        assert np.allclose(x[classes == c], x[classes == c][0], atol=1e-12)
    assert dpopt.solve(problem, "lp").objective <= value.objective + 1e-9
    for name in VALUE_BASED:
        assert value.objective <= dpopt.solve(problem, name).objective * (1 + 1e-7) + 1e-9, name
    assert value.objective == pytest.approx(_value_based_optimum_by_cvxpy(problem), rel=1e-5, abs=1e-7)


@given(n=st.integers(1, 10), alpha=st.floats(0.1, 0.9), loss=st.sampled_from(LOSSES))
def test_value_lp_is_the_lp_when_every_dataset_has_its_own_value(n, alpha, loss):
    problem = dpopt.FiniteQuery(universe=path(n), alpha=alpha, loss=loss)
    assert dpopt.solve(problem, "value_lp").objective == pytest.approx(dpopt.solve(problem, "lp").objective, rel=1e-7, abs=1e-9)


def test_value_lp_with_one_value_releases_it():
    problem = dpopt.FiniteQuery(universe={"type": "explicit", "values": [3, 3, 3], "neighbours": [[0, 1], [1, 2]]},
                                epsilon=1.0, outputs=[1, 3, 5])
    solution = dpopt.solve(problem, "value_lp")
    assert solution.certificate.ok and solution.objective == 0.0
    np.testing.assert_array_equal(solution.mechanism.to_numpy(), [[0, 1, 0]] * 3)


def test_a_zero_optimum_reports_a_zero_gap():
    """Datasets 0 and 1 (distance 0) share their value and dataset 2 has no neighbour: every dataset
    releases its value surely, at loss 0. The LP's bound came out a rounding below 0 and the
    gap relative to the objective 0 was reported as 8.9e284 (explore profile); the cheapest
    outputs' loss is a bound as well."""
    universe = {"type": "explicit", "values": [2.75, 2.75, 5], "metric": [[0.0, 0.0, 1.25], [0.0, 0.0, 1.25], [1.25, 1.25, 0.0]]}
    for objective in ("average", "minimax"):
        solution = dpopt.solve(dpopt.FiniteQuery(universe=universe, epsilon=0.5, loss="squared", objective=objective), "lp")
        assert solution.objective == pytest.approx(0.0, abs=1e-12)
        assert solution.details["lower_bound"] == 0.0 and solution.details["optimality_gap"] <= 1e-12
        assert solution.exact and solution.certificate.ok


@settings(max_examples=examples(25), deadline=None)
@given(universe=universes(), exponent=st.sampled_from([-60, -43, -30, 25, 40, 45]), loss=st.sampled_from(["absolute", "squared"]),
       objective=st.sampled_from(["minimax", "average"]), epsilon=st.floats(0.2, 3.0))
def test_the_lp_is_the_same_at_every_scale_of_the_values(universe, exponent, loss, objective, epsilon):
    """Values times 2^k scale the loss exactly by 2^k (absolute) or 4^k (squared), so the LP's
    optimum and bound scale with it. HiGHS refuses coefficients above 1e15 and drops those
    below 1e-12: at 2^40 squared loss ended in "Empty" (exit 3), and at 2^-43 the lp was
    three times the optimum ("gap_above_tolerance"), until the loss was solved scaled."""
    unit = dpopt.solve(dpopt.FiniteQuery(universe=universe, epsilon=epsilon, loss=loss, objective=objective), "lp")
    factor = 2.0 ** (exponent * (1 if loss == "absolute" else 2))
    scaled_universe = dict(universe, values=[v * 2.0**exponent for v in universe["values"]])
    scaled = dpopt.solve(dpopt.FiniteQuery(universe=scaled_universe, epsilon=epsilon, loss=loss, objective=objective), "lp")
    assert scaled.certificate.ok and scaled.exact == unit.exact
    assert scaled.objective / factor == pytest.approx(unit.objective, rel=1e-7, abs=1e-12)
    assert scaled.details["lower_bound"] / factor == pytest.approx(unit.details["lower_bound"], rel=1e-7, abs=1e-12)


def test_outputs_at_the_largest_magnitude_are_solved_by_the_lp():
    """Outputs at +-1e15 beside values 0..8: every loss entry of 1e15 was a coefficient HiGHS
    refuses (status "Empty", exit 3). Releasing 0 always is optimal (worst loss 8, the largest value)."""
    universe = {"type": "explicit", "values": [0, 1, 2, 4, 5, 8], "neighbours": [[0, 1], [1, 2], [2, 3], [1, 4], [4, 5], [3, 5]]}
    solution = dpopt.solve(dpopt.FiniteQuery(universe=universe, epsilon=0.7, outputs=[-1e15, 0, 1e15]), "lp")
    assert solution.exact and solution.certificate.ok
    assert solution.objective == pytest.approx(8.0, rel=1e-9) and solution.details["lower_bound"] == pytest.approx(8.0, rel=1e-9)


@pytest.mark.parametrize("far", [1e6, 1e15])
def test_constructions_with_far_outputs_match_those_with_near_ones(far):
    """Outputs at +-1e15 over a sensitivity of 4 have set indices near 2.5e14: eps I and its
    logsumexp differed by ulps of 0.016 and the staircase, utility-first and ladder rows summed
    to 1 +- 0.008 (certificate failed). The indices' differences are those of outputs at +-100,
    so the mechanisms must be the same."""
    universe = {"type": "explicit", "values": [0, 1, 2, 4, 5, 8], "neighbours": [[0, 1], [1, 2], [2, 3], [1, 4], [4, 5], [3, 5]]}
    near = dpopt.FiniteQuery(universe=universe, epsilon=0.7, outputs=[-100, 100])
    distant = dpopt.FiniteQuery(universe=universe, epsilon=0.7, outputs=[-far, far])
    names = {m.name for m in dpopt.methods_for(near)} - {"lp", "value_lp"}
    assert {"staircase", "utility_first", "ladder"} <= names == {m.name for m in dpopt.methods_for(distant)} - {"lp", "value_lp"}
    for name in sorted(names):
        a, b = dpopt.solve(near, name), dpopt.solve(distant, name)
        assert a.certificate.ok and b.certificate.ok, name
        np.testing.assert_allclose(b.mechanism.to_numpy(), a.mechanism.to_numpy(), atol=1e-12, err_msg=name)


def _explicit(objective: str, outputs=None) -> dpopt.FiniteQuery:
    spec = {"type": "explicit", "values": [0, 1, 2, 4, 5, 8], "neighbours": [[0, 1], [1, 2], [2, 3], [1, 4], [4, 5], [3, 5]]}
    prior = [4, 2, 1, 1, 1, 1] if objective == "average" else None
    return dpopt.FiniteQuery(universe=spec, epsilon=0.7, objective=objective, prior=prior, outputs=outputs)


@pytest.mark.parametrize("solver", [None, "CLARABEL", "SCS"])
@pytest.mark.parametrize("objective", ["minimax", "average"])
def test_outputs_far_outside_the_values_do_not_move_the_optimum(objective, solver):
    # Outputs at +-1e15 are dominated (every dataset loses less at 0 or 8) and leave the LP
    # exactly; until 2026-11-28 they stayed, with losses 15 orders apart, and HiGHS returned
    # 6.06 for a minimax optimum of 2.02, Clarabel 1512 and SCS 4.67, each reported exact.
    plain = dpopt.solve(_explicit(objective), "lp")
    wide = dpopt.solve(_explicit(objective, outputs=[-1e15, 0, 1, 2, 4, 5, 8, 1e15]), "lp", solver=solver)
    assert plain.exact and wide.exact and wide.certificate.ok and wide.details["dominated_outputs"] == 2
    assert wide.objective == pytest.approx(plain.objective, rel=1e-8)
    assert wide.details["lower_bound"] <= plain.objective * (1 + 1e-12)
    assert np.all(wide.mechanism.to_numpy()[:, [0, -1]] == 0)


@pytest.mark.parametrize("solver", [None, "CLARABEL"])
def test_an_lp_far_from_its_bound_is_not_called_exact(monkeypatch, solver):
    # the same LP with the dominated outputs kept: whatever a solver makes of losses 15 orders
    # apart, exact means within EXACT_GAP of a certified lower bound in the problem's own unit
    # (the best constant mechanism's loss, 2.5 here), not the largest loss (1e15)
    from dpopt.methods import finite_query as methods

    monkeypatch.setattr(methods, "undominated_outputs", lambda loss: np.arange(loss.shape[1]))
    optimum = dpopt.solve(_explicit("minimax"), "lp").objective
    wide = dpopt.solve(_explicit("minimax", outputs=[-1e15, 0, 1, 2, 4, 5, 8, 1e15]), "lp", solver=solver)
    assert wide.certificate.ok and wide.details["lower_bound"] <= optimum * (1 + 1e-12)
    if wide.exact:
        assert wide.objective <= optimum * (1 + 2e-6)
    else:
        assert wide.status == "gap_above_tolerance"


@settings(max_examples=examples(25))
@given(universe=universes(), data=st.data())
def test_dominated_outputs_leave_the_lp_optimum_unchanged(universe, data):
    """The lp (on the undominated outputs) against the full cvxpy program on HiGHS (all outputs),
    with a loss table in which some columns copy or worsen others."""
    import cvxpy as cp

    from dpopt.programs.finite_query import build_finite_program, undominated_outputs

    m = len(universe["values"])
    base = np.array(data.draw(st.lists(st.lists(st.integers(0, 6), min_size=3, max_size=3), min_size=m, max_size=m)), dtype=float)
    extra = [base[:, data.draw(st.integers(0, 2))] + data.draw(st.sampled_from([0.0, 0.5, 3.0])) for _ in range(data.draw(st.integers(1, 3)))]
    table = np.column_stack([base, *extra])
    objective = data.draw(st.sampled_from(["minimax", "average"]))
    problem = dpopt.FiniteQuery(universe=universe, epsilon=data.draw(st.floats(0.2, 3.0)), loss=table.tolist(),
                                outputs=list(range(table.shape[1])), objective=objective)
    assert undominated_outputs(table).size <= 3
    program = build_finite_program(problem)
    program.program.solve(solver=cp.HIGHS)
    solution = dpopt.solve(problem, "lp")
    assert solution.certificate.ok
    assert solution.objective == pytest.approx(program.program.value, rel=1e-7, abs=1e-9)


@settings(max_examples=examples(20))
@given(universe=universes(), epsilon=st.floats(0.1, 4.0), objective=st.sampled_from(["minimax", "average"]),
       solver=st.sampled_from(["CLARABEL", "SCS"]))
def test_another_solvers_bound_from_its_own_duals_is_below_the_optimum(universe, epsilon, objective, solver):
    """The bound read from Clarabel's or SCS's duals (program_lower_bound) never passes the optimum
    that HiGHS certifies, and an exact claim through them sits within EXACT_GAP of it."""
    problem = dpopt.FiniteQuery(universe=universe, epsilon=epsilon, objective=objective)
    optimum = dpopt.solve(problem, "lp")
    other = dpopt.solve(problem, "lp", solver=solver)
    assert other.certificate.ok and other.details["lower_bound"] <= optimum.objective * (1 + 1e-12) + 1e-15
    if other.exact:
        assert other.objective <= optimum.objective * (1 + 2e-6) + 1e-12


def _minorant_by_lowering(problem, x):
    """The largest private minorant by another route: lower entries along privacy rows until
    nothing moves (Bellman-Ford on the rows' log-bounds)."""
    pairs, bounds = problem.privacy_pairs(implied=True)
    y = x.copy()
    for _ in range(len(x) + 1):
        lowered = y.copy()
        np.minimum.at(lowered, pairs[:, 0], y[pairs[:, 1]] * np.exp(bounds)[:, None])  # y[a] <= e^eps_ab y[b]
        if (lowered >= y).all():
            return y
        y = lowered
    raise AssertionError("no fixed point")


@given(universe=st.one_of(universes(), metric_universes()), privacy=st.sampled_from(["neighbours", "metric"]),
       epsilon=st.floats(0.1, 6.0), data=st.data())
def test_graph_minorant_is_the_largest_private_lower_bound(universe, privacy, epsilon, data):
    from dpopt.methods.finite_query import _graph_minorant

    problem = dpopt.FiniteQuery(universe=universe, epsilon=epsilon, privacy=privacy)
    m, k = problem.size
    x = np.array(data.draw(st.lists(st.lists(st.floats(0.0, 1.0), min_size=k, max_size=k), min_size=m, max_size=m)))
    np.testing.assert_allclose(_graph_minorant(problem, x), _minorant_by_lowering(problem, x), rtol=1e-12, atol=1e-300)


@given(universe=universes(), epsilon=st.floats(0.1, 4.0), seed=st.integers(0, 2**32 - 1))
def test_the_trusted_minorant_keeps_the_trusted_entries_and_is_private_before_renormalising(universe, epsilon, seed):
    from dpopt.methods.finite_query import TRUSTED, _graph_minorant, graph_majorant, trusted_minorant

    problem = dpopt.FiniteQuery(universe=universe, epsilon=epsilon)
    x = np.random.default_rng(seed).dirichlet(np.full(problem.size[1], 0.3), size=problem.size[0])
    big = x >= TRUSTED * x.max(axis=1, keepdims=True)
    unnormalised = _graph_minorant(problem, np.maximum(x, graph_majorant(problem, np.where(big, x, 0.0))))
    assert (unnormalised[big] >= x[big] * (1 - 1e-12)).all()
    assert certify_finite(problem, unnormalised).max_privacy_loss <= epsilon * (1 + 1e-9)
    y = trusted_minorant(problem, x)
    np.testing.assert_allclose(y, unnormalised / unnormalised.sum(axis=1, keepdims=True), rtol=1e-15)


@pytest.mark.parametrize("loss", ["absolute", "squared"])
def test_the_repair_lowers_an_interior_points_stray_ramp_instead_of_raising_its_basin(loss):
    """HiGHS's interior point on the path 0..200 (epsilon = 1) ended "imprecise" with rows like
    the optimum plus, in a far column, a ramp rising by e a row to 4.8e-8 beside an entry of
    6.6e-13, and a lone entry of 6.4e-7 between neighbours of 0 and 2e-10. One majorant and a mix
    left the objective 1.1e-3 (absolute) and 9.3e-3 (squared) above the optimum. Here the same
    two defects on the optimum of the path 0..40 may cost at most their own mass (the lone
    entry's row must be renormalised, and its neighbours follow), not their basin's: one
    majorant and a mix (until 2026-11-29) cost 53 and 1,300 times it; now 0.33 and 0.88."""
    n = 40
    problem = dpopt.FiniteQuery(universe=path(n), epsilon=1.0, loss=loss)
    optimum = dpopt.solve(dpopt.CountQuery(n=n, epsilon=1.0, loss=loss))
    x = optimum.mechanism.to_numpy().copy()
    x[3:12, n] = 4.8e-8 * np.exp(np.arange(-8, 1))  # rows 3..11 of the last column: a ramp up to row 11
    x[12, n] = 6.6e-13
    x[30, 0], x[29, 0], x[31, 0] = 6.4e-7, 0.0, 2e-10
    defects = x[3:12, n].sum() + 6.4e-7 + 2e-10
    x /= x.sum(axis=1, keepdims=True)
    assert not certify_finite(problem, x).ok
    from dpopt.methods.finite_query import mix_until_certified

    repaired, certificate = mix_until_certified(problem, x)
    assert certificate.ok and certify_finite(problem, repaired).ok
    assert problem.objective_of(repaired) - optimum.objective <= defects
