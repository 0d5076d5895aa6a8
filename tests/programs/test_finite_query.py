"""Claims of :mod:`dpopt.programs.finite_query`'s docstring: routes tried and not used, and
the relaxation (lower bounds) and quotients (upper bounds) the ``lp`` route uses.

They are facts about the finite-universe LP that decide what a faster route could look
like, so they are pinned here against independent computations (scipy's LP solver, all
subsets by enumeration, non-negative least squares, the full LP beside its quotient).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse
from scipy.optimize import linprog, nnls

import dpopt
from dpopt.programs import finite_query
from dpopt.programs.highs_child import ChildSolve
from dpopt.programs.finite_query import (DatasetQuotient, DatasetRelaxation, DualLP, build_dual_lp, certified_lower_bound,
                                         distance_classes, dual_weights, relaxation_lower_bound)
from dpopt.solvers import SOLVER_OPTIONS, new_highs
from dpopt.universes import Universe, graph_atlas
from tests.conftest import examples


#: scipy's HiGHS at dpopt's tolerances (its defaults are 1e-7) for the oracle LPs below.
TIGHT = {"dual_feasibility_tolerance": 1e-10, "primal_feasibility_tolerance": 1e-10}


@st.composite
def connected_universes(draw) -> Universe:
    m = draw(st.integers(2, 7))
    tree = [(draw(st.integers(0, i - 1)), i) for i in range(1, m)]
    extra = draw(st.lists(st.tuples(st.integers(0, m - 1), st.integers(0, m - 1)), max_size=2 * m))
    edges = tree + [e for e in extra if e[0] != e[1]]
    return Universe.from_edges(np.zeros(m), edges)


def pinned_exponents(universe: Universe) -> np.ndarray:
    """Every integer g >= 0 with a zero, |g_a - g_b| <= 1 across edges, and every dataset joined to
    a zero of g along edges where g changes by exactly 1 (one row per g): the exponents of the
    vertices ``alpha^g`` of one output's privacy polytope, enumerated along a spanning tree."""
    m = universe.size
    edges = universe.neighbours
    order, parent = [0], {0: None}
    while len(order) < m:  # breadth-first spanning tree
        for a, b in edges:
            for u, w in ((a, b), (b, a)):
                if u in parent and w not in parent:
                    parent[w] = u
                    order.append(w)
    steps = np.array(list(itertools.product((-1, 0, 1), repeat=m - 1)), dtype=np.int64).reshape(-1, m - 1)
    g = np.zeros((len(steps), m), dtype=np.int64)
    for i, node in enumerate(order[1:]):
        g[:, node] = g[:, parent[node]] + steps[:, i]
    g = np.vstack([g + root for root in range(m)])
    g = g - g.min(axis=1, keepdims=True)
    g = np.unique(g, axis=0)
    change = np.abs(g[:, edges[:, 0]] - g[:, edges[:, 1]])
    g, change = g[(change <= 1).all(axis=1)], change[(change <= 1).all(axis=1)]
    reached, tight = g == 0, change == 1
    for _ in range(m):  # m sweeps reach every dataset a tight path can
        for e, (a, b) in enumerate(edges):
            reached[:, a] |= tight[:, e] & reached[:, b]
            reached[:, b] |= tight[:, e] & reached[:, a]
    return g[reached.all(axis=1)]


def one_output_price(universe: Universe, epsilon: float, c: np.ndarray) -> float:
    """min c.v over one output's privacy polytope {v in [0,1]^m : v_a <= e^eps v_b (neighbours)}, by scipy's LP."""
    m = universe.size
    pairs = np.vstack([universe.neighbours, universe.neighbours[:, ::-1]])
    rows = np.zeros((len(pairs), m))
    rows[np.arange(len(pairs)), pairs[:, 0]] = 1.0
    rows[np.arange(len(pairs)), pairs[:, 1]] = -np.exp(epsilon)
    # tolerances below HiGHS's 1e-7 defaults: a cost of 1e-7 on one entry is otherwise dual-feasible noise
    lp = linprog(c, A_ub=rows, b_ub=np.zeros(len(pairs)), bounds=[(0.0, 1.0)] * m, method="highs", options=TIGHT)
    assert lp.status == 0
    return lp.fun


@settings(max_examples=examples(60), deadline=None)
@given(universe=connected_universes(), epsilon=st.floats(0.1, 3.0),
       costs=st.lists(st.floats(-1.0, 1.0, allow_subnormal=False), min_size=7, max_size=7))
def test_one_outputs_privacy_polytope_has_vertices_zero_and_alpha_to_pinned_exponents(universe, epsilon, costs):
    """min c.v over the polytope = min(0, min_g c.alpha^g) over :func:`pinned_exponents`."""
    c = np.array(costs[:universe.size])
    vertices = np.exp(-epsilon) ** pinned_exponents(universe)
    assert one_output_price(universe, epsilon, c) == pytest.approx(min(0.0, (vertices @ c).min()), abs=1e-9)


def test_distances_to_sets_miss_vertices_of_the_privacy_polytope():
    """The docstring's claim until 2026-11-28 (vertices alpha^d̄(., A) for sets A) misses a vertex:
    on the tree 4-2-0-1, 0-3 the price of c below is reached only at g = (2, 1, 1, 3, 0)."""
    universe = Universe.from_edges(np.zeros(5), [(0, 1), (0, 2), (0, 3), (2, 4)])
    epsilon, c = 0.5, np.array([1.0, -0.5, 0.0, 0.0, -1.0])
    alpha = np.exp(-epsilon)
    set_distances = [alpha ** universe.distances[:, list(subset)].min(axis=1)
                     for size in range(1, 6) for subset in itertools.combinations(range(5), size)]
    price = one_output_price(universe, epsilon, c)
    assert price == pytest.approx(c @ alpha ** np.array([2, 1, 1, 3, 0]), abs=1e-12)  # alpha^2 - alpha/2 - 1
    assert min(c @ v for v in set_distances) > price + 0.04
    assert [2, 1, 1, 3, 0] in pinned_exponents(universe).tolist()


def test_no_graph_geometric_mechanism_at_small_epsilon():
    """E z = 1 with E = alpha^d̄ has no z >= 0 on 5 and 6 nodes at eps = 1 (nor on 7 at eps = 2)."""
    for nodes, epsilon in [(5, 1.0), (6, 1.0), (6, 0.5)]:
        kernel = np.exp(-epsilon * graph_atlas(nodes, "triangles").distances)
        assert nnls(kernel, np.ones(len(kernel)))[1] > 1e-2
    kernel = np.exp(-2.0 * graph_atlas(7, "triangles").distances)
    assert np.linalg.solve(kernel, np.ones(len(kernel))).min() < 0  # E is invertible: its only solution is negative


@pytest.mark.parametrize("nodes, epsilon", [(5, 2.0), (5, 4.0)])
def test_the_best_graph_geometric_factorisation_is_above_the_lp_optimum(nodes, epsilon):
    """Where x = E Y (Y >= 0) can be stochastic, its best minimax loss is >= 10% above the LP's."""
    problem = dpopt.FiniteQuery(universe=graph_atlas(nodes, "triangles"), epsilon=epsilon)
    m, k = problem.size
    kernel = np.exp(-epsilon * problem.universe.distances)
    loss = problem.loss_matrix
    # variables: Y (m x k, row-major), then t; rows of E Y sum to 1; sum_r L[a, r] (E Y)[a, r] <= t
    sums = np.kron(kernel, np.ones((1, k)))
    expected = (kernel[:, :, None] * loss[:, None, :]).reshape(m, m * k)
    lp = linprog(np.r_[np.zeros(m * k), 1.0], A_ub=np.c_[expected, -np.ones(m)], b_ub=np.zeros(m),
                 A_eq=np.c_[sums, np.zeros(m)], b_eq=np.ones(m), bounds=[(0, None)] * (m * k) + [(None, None)], method="highs")
    assert lp.status == 0
    optimum = dpopt.solve(problem, "lp")
    assert optimum.details["lower_bound"] <= optimum.objective
    assert lp.fun >= 1.1 * optimum.objective


def _minimax_optimum(loss: np.ndarray, pairs: np.ndarray, log_bounds: np.ndarray) -> float:
    """The minimax LP in its primal form (x row-major, then t), every row written out, by scipy."""
    return _minimax_solution(loss, pairs, log_bounds)[0]


def _minimax_solution(loss: np.ndarray, pairs: np.ndarray, log_bounds: np.ndarray) -> tuple[float, np.ndarray]:
    """:func:`_minimax_optimum` and an optimal mechanism (m x k)."""
    m, k = loss.shape
    n = m * k
    q, r = np.repeat(np.arange(len(pairs)), k), np.tile(np.arange(k), len(pairs))
    privacy = sparse.csr_array((np.r_[np.ones(q.size), -np.exp(log_bounds)[q]],
                                (np.r_[np.arange(q.size), np.arange(q.size)], np.r_[pairs[q, 0] * k + r, pairs[q, 1] * k + r])),
                               shape=(q.size, n + 1))
    worst = sparse.csr_array(np.c_[np.kron(np.eye(m), np.ones((1, k))) * loss.ravel(), -np.ones(m)])
    sums = sparse.csr_array(np.c_[np.kron(np.eye(m), np.ones((1, k))), np.zeros(m)])
    lp = linprog(np.r_[np.zeros(n), 1.0], A_ub=sparse.vstack([privacy, worst]), b_ub=np.zeros(q.size + m),
                 A_eq=sums, b_eq=np.ones(m), bounds=[(0, None)] * n + [(None, None)], method="highs",
                 options=TIGHT)  # HiGHS's 1e-7 defaults: two forms of one LP 1.7e-7 apart at eps = 3 (explore profile)
    assert lp.status == 0
    return float(lp.fun), lp.x[:n].reshape(m, k)


@st.composite
def universes_and_subsets(draw) -> tuple[Universe, np.ndarray]:
    m = draw(st.integers(3, 7))
    tree = [(draw(st.integers(0, i - 1)), i) for i in range(1, m)]
    extra = draw(st.lists(st.tuples(st.integers(0, m - 1), st.integers(0, m - 1)), max_size=m))
    values = draw(st.lists(st.integers(0, 4), min_size=m, max_size=m))
    subset = draw(st.sets(st.integers(0, m - 1), min_size=1, max_size=m))
    return Universe.from_edges(values, tree + [e for e in extra if e[0] != e[1]]), np.array(sorted(subset))


@settings(max_examples=examples(40), deadline=None)
@given(case=universes_and_subsets(), epsilon=st.floats(0.2, 3.0))
def test_the_lp_on_a_subset_of_datasets_bounds_the_optimum_and_its_pruned_pairs_lose_nothing(case, epsilon):
    """DatasetRelaxation: optimum <= the full LP's; leaving out implied pairs keeps its optimum."""
    universe, subset = case
    problem = dpopt.FiniteQuery(universe=universe, epsilon=epsilon)
    pairs, bounds = problem.privacy_pairs()
    full = _minimax_optimum(problem.loss_matrix, pairs, bounds)
    a, b = np.nonzero(~np.eye(len(subset), dtype=bool))  # every ordered pair of the subset, eps x hop distance
    every_pair = _minimax_optimum(problem.loss_matrix[subset], np.column_stack([a, b]),
                                  epsilon * universe.distances[np.ix_(subset, subset)][a, b])
    relaxation = DatasetRelaxation.of(problem, subset)
    assert len(relaxation.pairs) <= len(a)
    pruned = _minimax_optimum(relaxation.loss_matrix, relaxation.pairs, relaxation.bounds)
    assert pruned == pytest.approx(every_pair, abs=1e-9)
    assert every_pair <= full + 1e-9


def _dual_vertex(problem: dpopt.FiniteQuery, options: dict) -> tuple[DualLP, np.ndarray]:
    """The problem's dual LP and its column values at a vertex (HiGHS: interior point, crossover)."""
    dual = build_dual_lp(problem)
    h = new_highs({**options, "solver": "ipm", "run_crossover": "on"})
    h.passModel(dual.lp)
    h.run()
    return dual, np.asarray(h.getSolution().col_value)


def test_the_lp_on_the_support_of_an_optimal_dual_has_the_full_optimum():
    """6 nodes, eps = 1: the datasets where a vertex of the dual weighs give the full LP's optimum."""
    problem = dpopt.FiniteQuery(universe=graph_atlas(6, "triangles"), epsilon=1.0)
    m = problem.size[0]
    dual, columns = _dual_vertex(problem, {})
    weighs = np.abs(columns[:m]) > 1e-9
    weighs[list(problem.side_information)] |= columns[dual.mu_columns] > 1e-9
    subset = np.flatnonzero(weighs)
    assert len(subset) < m
    relaxation = DatasetRelaxation.of(problem, subset)
    full = _minimax_optimum(problem.loss_matrix, *problem.privacy_pairs())
    assert _minimax_optimum(relaxation.loss_matrix, relaxation.pairs, relaxation.bounds) == pytest.approx(full, rel=1e-9)


def test_the_relaxation_tightens_the_certified_bound_at_large_epsilon():
    """6 nodes, eps = 4: the relaxation's bound beats the one from the dual values themselves, stays
    below the objective of the mechanism dpopt certifies (repaired to exact privacy), and is the one
    ``lp`` reports."""
    problem = dpopt.FiniteQuery(universe=graph_atlas(6, "triangles"), epsilon=4.0)
    dual, columns = _dual_vertex(problem, SOLVER_OPTIONS["HIGHS"])  # as lp runs it
    relaxed, datasets = relaxation_lower_bound(problem, dual_weights(problem, dual, columns))
    assert 0 < datasets < problem.size[0]
    assert relaxed > certified_lower_bound(problem, dual, columns)
    solution = dpopt.solve(problem, "lp")
    assert solution.certificate.ok
    assert solution.details["lower_bound"] == relaxed and solution.details["lower_bound_datasets"] == datasets
    assert relaxed <= solution.objective


@st.composite
def universes_and_classes(draw) -> tuple[Universe, np.ndarray]:
    """A connected universe and a random partition of it that keeps datasets of one value apart from others."""
    universe, _ = draw(universes_and_subsets())
    split = draw(st.lists(st.integers(0, 2), min_size=universe.size, max_size=universe.size))
    key = np.column_stack([universe.values, split])
    return universe, np.unique(key, axis=0, return_inverse=True)[1].ravel()


@settings(max_examples=examples(40), deadline=None)
@given(case=universes_and_classes(), epsilon=st.floats(0.2, 3.0))
def test_a_quotients_rows_lifted_are_private_and_bound_the_optimum_from_above(case, epsilon):
    """DatasetQuotient: its optimum >= the full LP's, and its optimal rows lifted to the datasets meet
    every privacy row of the full problem and have the quotient's objective (scipy on both LPs)."""
    universe, classes = case
    problem = dpopt.FiniteQuery(universe=universe, epsilon=epsilon)
    quotient = DatasetQuotient.of(problem, classes)
    assert quotient.size == (classes.max() + 1, problem.size[1])
    value, rows = _minimax_solution(quotient.loss_matrix, quotient.pairs, quotient.bounds)
    lifted = quotient.lift(rows)
    pairs, bounds = problem.privacy_pairs()
    assert np.all(lifted[pairs[:, 0]] <= np.exp(bounds)[:, None] * lifted[pairs[:, 1]] + 1e-9)
    assert problem.objective_of(lifted) == pytest.approx(value, abs=1e-9)
    assert value >= _minimax_optimum(problem.loss_matrix, pairs, bounds) - 1e-9


def test_distance_classes_merge_only_datasets_that_see_the_same_values_nearby():
    """6-node atlas: reach 1 is the partition by triangle count (16 values); each class's members
    have the same triangle count and the same capped hop distance to every count, checked by brute force."""
    universe = graph_atlas(6, "triangles")
    problem = dpopt.FiniteQuery(universe=universe, epsilon=1.0)
    values = np.unique(universe.values)
    assert distance_classes(problem, 1).max() + 1 == len(values)
    for reach in (2, 3):
        classes = distance_classes(problem, reach)
        seen = {}
        for a in range(universe.size):
            near = tuple(min(reach, min(int(universe.hops[a, b]) for b in range(universe.size) if universe.values[b] == v))
                         for v in values)
            seen.setdefault(classes[a], set()).add((universe.values[a], near))
        assert all(len(profiles) == 1 for profiles in seen.values())
        assert len({next(iter(p)) for p in seen.values()}) == classes.max() + 1  # and different profiles stay apart


@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_lp_through_quotients_is_certified_and_equals_the_full_lp(monkeypatch, epsilon):
    """6 nodes: with quotients tried at any size, lp keeps reach 2's 68 classes, certified within
    QUOTIENT_GAP, and its objective lies in the full LP's certified interval (a different LP:
    all 156 rows, solved without quotients)."""
    problem = dpopt.FiniteQuery(universe=graph_atlas(6, "triangles"), epsilon=epsilon)
    full = dpopt.solve(problem, "lp")
    assert full.details["quotient_classes"] == 0
    monkeypatch.setattr(finite_query, "QUOTIENT_ROWS", 0)
    solution = dpopt.solve(problem, "lp")
    assert solution.certificate.ok
    assert solution.details["quotient_classes"] == 68
    assert solution.details["optimality_gap"] <= finite_query.QUOTIENT_GAP
    assert full.details["lower_bound"] - 1e-12 <= solution.objective <= full.objective * (1 + 1e-9)
    assert solution.details["lower_bound"] <= full.objective


def test_lp_falls_back_to_the_full_lp_when_no_quotient_is_certified(monkeypatch):
    """6 nodes, eps = 4: the quotients stay 6e-5 above the optimum, so lp solves the full LP and
    returns what it returns without quotients."""
    problem = dpopt.FiniteQuery(universe=graph_atlas(6, "triangles"), epsilon=4.0)
    direct = dpopt.solve(problem, "lp")
    monkeypatch.setattr(finite_query, "QUOTIENT_ROWS", 0)
    solution = dpopt.solve(problem, "lp")
    assert solution.certificate.ok and solution.details["quotient_classes"] == 0
    assert solution.objective == direct.objective and solution.details["lower_bound"] == direct.details["lower_bound"]
    assert solution.details["optimality_gap"] < 1e-7


def test_quotients_solved_in_child_processes_give_what_one_after_another_gives(monkeypatch):
    """6 nodes, eps = 1, quotients tried at any size: reach 2 and 4 start in two children, reach 2 is
    kept and the child solving reach 4 is killed; the answer is the same bits as solving the
    quotients one after another in this process. (When neither is kept, the test above shows the
    full LP's answer unchanged.)"""
    problem = dpopt.FiniteQuery(universe=graph_atlas(6, "triangles"), epsilon=1.0)
    monkeypatch.setattr(finite_query, "QUOTIENT_ROWS", 0)
    started = []
    monkeypatch.setattr(finite_query, "ChildSolve", lambda *a: started.append(1) or ChildSolve(*a))
    in_children = dpopt.solve(problem, "lp")
    assert len(started) == 2
    monkeypatch.setattr(finite_query, "QUOTIENT_CHILDREN", False)
    in_turn = dpopt.solve(problem, "lp")
    assert len(started) == 2
    assert in_children.details["quotient_classes"] == in_turn.details["quotient_classes"] == 68
    np.testing.assert_array_equal(in_children.mechanism.to_numpy(), in_turn.mechanism.to_numpy())
    assert in_children.details["lower_bound"] == in_turn.details["lower_bound"]


def _exact_dual_bound(problem, dual: DualLP, columns: np.ndarray):
    """The bound of :func:`certified_lower_bound`'s dual point in exact rational arithmetic on the
    LP as built (its stored float64 coefficients): what the bound must not exceed."""
    from fractions import Fraction

    m, k = problem.size
    z = np.asarray(columns, dtype=float).copy()  # the same float steps as the bound's
    z[m:] = np.clip(z[m:], 0.0, None)
    if dual.mu_columns.size:
        z[m:] /= z[dual.mu_columns].sum()
    z[:m] = 0.0
    matrix = dual.matrix.tocoo()
    rest = [Fraction(0)] * (m * k)
    for row, col, value in zip(matrix.row, matrix.col, matrix.data):
        if row >= m * k or z[col] == 0:
            continue
        rest[row] += Fraction(float(value)) * Fraction(float(z[col]))
    if dual.mu_columns.size:
        rhs = [Fraction(0)] * (m * k)
    else:
        rhs = [Fraction(float(w)) * Fraction(float(loss)) for w, row in zip(problem.weights, problem.loss_matrix) for loss in row]
    pi = [min(rhs[a * k + r] - rest[a * k + r] for r in range(k)) for a in range(m)]
    total = sum(pi, Fraction(0))
    return total / sum((Fraction(float(z[c])) for c in dual.mu_columns), Fraction(0)) if dual.mu_columns.size else total


@settings(max_examples=examples(60), deadline=None)
@given(universe=connected_universes(), epsilon=st.floats(0.05, 30.0), objective=st.sampled_from(["minimax", "average"]),
       seed=st.integers(0, 2**32 - 1), near=st.booleans())
def test_the_certified_bound_holds_in_exact_arithmetic(universe, epsilon, objective, seed, near):
    """Until 2026-11-29 the bound was summed in floats and could sit a rounding above what its
    dual point proves (a random probe: 5.1e-17 above an optimum of 0). Now each row carries a
    rounding allowance; the dual point is either random or the solver's own (``near``: where
    the bound is tight and a rounding decides; at epsilon up to 30, where terms of e^eps lam
    cancel)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 4, size=universe.size).astype(float)
    problem = dpopt.FiniteQuery(universe=Universe.from_edges(values, universe.neighbours), epsilon=epsilon, objective=objective)
    dual = build_dual_lp(problem)
    if near:
        columns = finite_query.solve_here(dual.arrays, finite_query._interior_point_options(True)).col_value
    else:
        columns = np.abs(rng.standard_normal(dual.matrix.shape[1])) * rng.random(dual.matrix.shape[1])
    bound = certified_lower_bound(problem, dual, columns)
    exact = _exact_dual_bound(problem, dual, columns)
    assert bound <= exact
    assert float(exact) - bound <= 1e-12 * max(1.0, abs(float(exact)))
