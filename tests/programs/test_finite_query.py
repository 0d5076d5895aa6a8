"""Claims of :mod:`dpopt.programs.finite_query`'s docstring about routes tried and not used.

Both are facts about the finite-universe LP that decide what a faster route could look
like, so they are pinned here against independent computations (scipy's LP solver, all
subsets by enumeration, non-negative least squares).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog, nnls

import dpopt
from dpopt.universes import Universe, graph_atlas


@st.composite
def connected_universes(draw) -> Universe:
    m = draw(st.integers(2, 7))
    tree = [(draw(st.integers(0, i - 1)), i) for i in range(1, m)]
    extra = draw(st.lists(st.tuples(st.integers(0, m - 1), st.integers(0, m - 1)), max_size=2 * m))
    edges = tree + [e for e in extra if e[0] != e[1]]
    return Universe.from_edges(np.zeros(m), edges)


@settings(max_examples=60, deadline=None)
@given(universe=connected_universes(), epsilon=st.floats(0.1, 3.0),
       costs=st.lists(st.floats(-1.0, 1.0, allow_subnormal=False), min_size=7, max_size=7))
def test_one_outputs_privacy_polytope_has_vertices_zero_and_alpha_to_the_distance_to_a_set(universe, epsilon, costs):
    """min c.v over {v in [0,1]^m : v_a <= e^eps v_b (neighbours)} = min(0, min_A c.alpha^d(., A))."""
    m = universe.size
    c = np.array(costs[:m])
    pairs = np.vstack([universe.neighbours, universe.neighbours[:, ::-1]])
    rows = np.zeros((len(pairs), m))
    rows[np.arange(len(pairs)), pairs[:, 0]] = 1.0
    rows[np.arange(len(pairs)), pairs[:, 1]] = -np.exp(epsilon)
    lp = linprog(c, A_ub=rows, b_ub=np.zeros(len(pairs)), bounds=[(0.0, 1.0)] * m, method="highs")
    assert lp.status == 0
    alpha = np.exp(-epsilon)
    vertices = [alpha ** universe.distances[:, list(subset)].min(axis=1)
                for size in range(1, m + 1) for subset in itertools.combinations(range(m), size)]
    assert lp.fun == pytest.approx(min(0.0, min(c @ v for v in vertices)), abs=1e-9)


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
