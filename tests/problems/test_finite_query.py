"""FiniteQuery's privacy pairs: which metric rows a program needs (group privacy along shortest paths)."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csgraph, csr_array

import dpopt
from dpopt.problem_files import read_problem_file
from dpopt.problems.finite_query import unimplied_pairs
from dpopt.universes import graph_atlas
from tests.conftest import examples


@st.composite
def weighted_metrics(draw: st.DrawFn) -> np.ndarray:
    """The shortest-path metric of a random connected graph with weights in {0.5, 1, 1.5, 2, 3}."""
    m = draw(st.integers(2, 12))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    graph = nx.gnp_random_graph(m, draw(st.floats(0.1, 0.9)), seed=seed)
    graph.add_edges_from(zip(range(m - 1), range(1, m)))  # connected
    weights = np.array([0.5, 1.0, 1.5, 2.0, 3.0])
    matrix = np.zeros((m, m))
    for a, b in graph.edges:
        matrix[a, b] = matrix[b, a] = weights[rng.integers(weights.size)]
    return csgraph.shortest_path(csr_array(matrix), directed=False)


@settings(max_examples=examples(60), deadline=None)
@given(weighted_metrics())
def test_kept_pairs_imply_every_distance(d):
    """Soundness: shortest paths over the kept pairs alone give back every d(a, b), so every
    dropped row is a product of kept rows. Minimality: no kept pair is implied by the others."""
    kept = unimplied_pairs(d)
    m = len(d)
    graph = csr_array((d[kept[:, 0], kept[:, 1]], (kept[:, 0], kept[:, 1])), shape=(m, m))
    np.testing.assert_allclose(csgraph.shortest_path(graph, directed=False), d, rtol=1e-12, atol=1e-12)
    for a, b in kept:
        others = [c for c in range(m) if c not in (a, b)]
        assert all(d[a, c] + d[c, b] > d[a, b] for c in others)


def test_on_a_hop_metric_only_neighbours_are_kept():
    universe = graph_atlas(6, "triangles")
    kept = {tuple(sorted(p)) for p in unimplied_pairs(universe.distances).tolist()}
    assert kept == {tuple(sorted(p)) for p in universe.neighbours.tolist()}


def test_a_zero_distance_pair_does_not_drop_itself():
    """Two datasets at distance 0 (a pseudo-metric) must not imply each other's rows in a circle."""
    d = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    assert {tuple(p) for p in unimplied_pairs(d).tolist()} == {(0, 1), (0, 2), (1, 2)}


@pytest.mark.parametrize("tiny", [1e-17, 1e-13])
def test_a_leg_below_the_last_digit_does_not_drop_two_rows_that_imply_each_other(tiny):
    """d(0, 1) = tiny beside d(0, 2) = d(1, 2) = 2: in floats (1e-17) or with the relaxation's slack
    (1e-13), (0, 2) via 1 and (1, 2) via 0 each pass the sum test, and both rows were dropped, so
    nothing bounded dataset 2 against the others. A detour counts only through shorter parts."""
    from dpopt.privacy import not_implied

    d = np.array([[0.0, tiny, 2.0], [tiny, 0.0, 2.0], [2.0, 2.0, 0.0]])
    for slack in (0.0, 1e-12):
        keep = not_implied(d, slack=slack)
        assert keep[0, 1] and keep[0, 2] and keep[1, 2]


@pytest.mark.parametrize("m", [40, 60])
def test_metric_privacy_on_a_long_path_is_the_neighbour_lp(m):
    """A path of 40 datasets with metric privacy at epsilon = 1 wrote e^39 into the LP, above
    the largest coefficient HiGHS accepts, and every solve failed (status 'Empty'). Group
    privacy makes it the same LP as neighbour privacy on the path."""
    values = np.arange(float(m))
    metric = dpopt.FiniteQuery(universe={"type": "explicit", "values": values.tolist(),
                                         "metric": np.abs(values[:, None] - values[None, :]).tolist()},
                               epsilon=1.0, privacy="metric")
    path = dpopt.FiniteQuery(universe={"type": "explicit", "values": values.tolist(),
                                       "neighbours": [[i, i + 1] for i in range(m - 1)]}, epsilon=1.0)
    solved = dpopt.solve(metric, "lp")
    assert solved.certificate.ok and solved.exact
    assert solved.objective == pytest.approx(dpopt.solve(path, "lp").objective, rel=1e-7)
    assert len(metric.privacy_pairs()[0]) == 2 * (m - 1)
    assert len(metric.privacy_pairs(implied=True)[0]) == m * (m - 1)


def test_at_an_epsilon_past_the_largest_coefficient_auto_takes_a_construction():
    problem = dpopt.FiniteQuery(universe={"type": "graph_atlas", "nodes": 5}, epsilon=40.0)
    names = [m.name for m in dpopt.registry.methods_for(problem)]
    assert "lp" not in names and "value_lp" not in names and names
    solved = dpopt.solve(problem)
    assert solved.method in names and solved.certificate.ok


PATH4 = {"type": "explicit", "values": [0, 1, 2, 3], "neighbours": [[0, 1], [1, 2], [2, 3]]}


def test_side_information_takes_a_range_of_indices_as_count_queries_do():
    """``{lower, upper}`` (count queries' form, either end optional) is the inclusive range of
    dataset indices; until 2026-11-29 it was read as the list ["lower", "upper"] and refused."""
    ranged = dpopt.FiniteQuery(universe=PATH4, epsilon=1.0, side_information={"lower": 1, "upper": 2})
    listed = dpopt.FiniteQuery(universe=PATH4, epsilon=1.0, side_information=[2, 1, 2])
    assert ranged.side_information == listed.side_information == (1, 2)
    assert dpopt.FiniteQuery(universe=PATH4, epsilon=1.0, side_information={"upper": 1}).side_information == (0, 1)
    assert dpopt.solve(ranged, "lp").objective == dpopt.solve(listed, "lp").objective


@pytest.mark.parametrize(("spec", "field"), [({"lower": 2, "upper": 1}, "side_information.upper"),
                                              ({"lower": -1}, "side_information.lower"), ({"low": 0}, "side_information"),
                                              ([], "side_information"), ([4], "side_information"), ("0,1", "side_information")])
def test_a_bad_side_information_is_refused_naming_the_field(spec, field):
    with pytest.raises(dpopt.InvalidParameterError, match=rf"'{field}' parameter of finite_query"):
        dpopt.FiniteQuery(universe=PATH4, epsilon=1.0, side_information=spec)


def test_the_average_objective_weighs_the_prior_given_the_side_information():
    """The Bayesian consumer who also knows the dataset is in S averages over the prior
    restricted to S; until 2026-11-29 the side information was silently ignored there."""
    prior = [0.1, 0.2, 0.3, 0.4]
    given = dpopt.FiniteQuery(universe=PATH4, epsilon=1.0, objective="average", prior=prior, side_information=[1, 3])
    solution = dpopt.solve(given, "lp")
    x = solution.mechanism.to_numpy()
    expected = (given.loss_matrix * x).sum(axis=1)
    assert solution.objective == pytest.approx((0.2 * expected[1] + 0.4 * expected[3]) / 0.6, rel=1e-12)
    conditioned = dpopt.FiniteQuery(universe=PATH4, epsilon=1.0, objective="average", prior=[0, 0.2, 0, 0.4])
    assert solution.objective == pytest.approx(dpopt.solve(conditioned, "lp").objective, rel=1e-9)
    ignored = dpopt.solve(dpopt.FiniteQuery(universe=PATH4, epsilon=1.0, objective="average", prior=prior), "lp")
    assert abs(ignored.objective - solution.objective) > 1e-3
    uniform = dpopt.FiniteQuery(universe=PATH4, epsilon=1.0, objective="average", side_information={"lower": 2})
    np.testing.assert_array_equal(uniform.weights, [0, 0, 0.5, 0.5])


def test_a_side_information_the_prior_does_not_weigh_is_refused():
    with pytest.raises(dpopt.InvalidParameterError, match="'side_information' parameter of finite_query"):
        dpopt.FiniteQuery(universe=PATH4, epsilon=1.0, objective="average", prior=[1, 1, 0, 0], side_information=[2, 3])


def test_a_universe_table_may_hold_the_output_set(tmp_path):
    """Issue 13's file format puts an explicit universe's optional ``outputs`` in its
    ``[universe]`` table; until 2026-11-29 that was refused ("the explicit universe takes
    values, neighbours, metric") and only the top-level key was read. Both places give the
    same problem; both at once, or a bad list, is refused naming ``universe.outputs``."""
    inside = dpopt.FiniteQuery(universe={**PATH4, "outputs": [0, 1.5, 3]}, epsilon=1.0)
    above = dpopt.FiniteQuery(universe=PATH4, outputs=[0, 1.5, 3], epsilon=1.0)
    np.testing.assert_array_equal(inside.outputs, [0, 1.5, 3])
    np.testing.assert_array_equal(inside.loss_matrix, above.loss_matrix)
    assert inside.to_dict() == above.to_dict()
    path = tmp_path / "p.toml"
    path.write_text('kind = "finite_query"\nepsilon = 1.0\n[universe]\ntype = "explicit"\nvalues = [0, 1, 2, 3]\n'
                    'neighbours = [[0, 1], [1, 2], [2, 3]]\noutputs = [0, 1.5, 3]\n')
    np.testing.assert_array_equal(read_problem_file(path).problem.outputs, [0, 1.5, 3])
    for spec, outputs in (({**PATH4, "outputs": [0, 1]}, [0, 1]), ({**PATH4, "outputs": [1, 1]}, None),
                          ({**PATH4, "outputs": []}, None)):
        with pytest.raises(dpopt.InvalidParameterError, match="'universe.outputs' parameter of finite_query"):
            dpopt.FiniteQuery(universe=spec, outputs=outputs, epsilon=1.0)
