"""Finite universes: the graph atlas against the issue's independent counts, and validation."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpopt.universes import Universe, atlas_class, graph_atlas, universe_from_spec
from dpopt.validation import InvalidParameterError
from tests.conftest import examples


def test_seven_node_atlas_has_the_published_structure():
    """1044 classes, 6558 neighbouring pairs, diameter 21, 28 distinct triangle counts (issue 13)."""
    u = graph_atlas(7, "triangles")
    assert u.size == 1044 and len(u.neighbours) == 6558
    assert int(u.distances.max()) == 21 and np.unique(u.values).size == 28
    assert np.isfinite(u.distances).all()  # connected


def test_atlas_neighbours_differ_in_exactly_one_edge():
    """Independent check of the class relation by brute force on 5 nodes (34 classes)."""
    u = graph_atlas(5, "edges")
    graphs = [g for g in nx.graph_atlas_g() if g.number_of_nodes() == 5]
    expected = set()
    for i, g in enumerate(graphs):
        for j, h in enumerate(graphs):
            if i < j and h.number_of_edges() == g.number_of_edges() + 1:
                if any(nx.is_isomorphic(_plus(g, e), h)
                       for e in nx.non_edges(g)):
                    expected.add((i, j))
    assert {tuple(p) for p in u.neighbours.tolist()} == expected
    # each pair changes the edge count by exactly one
    a, b = u.neighbours.T
    assert np.all(np.abs(u.values[a] - u.values[b]) == 1)


def _plus(g, edge):
    h = g.copy()
    h.add_edge(*edge)
    return h


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(values=[0, 1, 2], edges=[[0, 1]]), "universe"),  # disconnected
        (dict(values=[0, float("nan")], edges=[[0, 1]]), "universe.values"),
        (dict(values=[0, 1], edges=[[0, 0]]), "universe.neighbours"),
        (dict(values=[0, 1], edges=[[0, 5]]), "universe.neighbours"),
        (dict(values=["a", "b"], edges=[[0, 1]]), "universe.values"),
    ],
)
def test_bad_universes_name_the_field(kwargs, field):
    with pytest.raises(InvalidParameterError) as info:
        Universe.from_edges(kwargs["values"], kwargs["edges"])
    assert info.value.parameter == field


@pytest.mark.parametrize(
    "spec,got",
    [
        ({"type": "explicit", "values": [0, 1], "neighbours": [[0, 1]], "metric": [[0, 1], [1, 0]]}, "both"),
        ({"type": "explicit", "values": [0, 1]}, "neither"),
        ({"type": "explicit", "values": [5], "neighbours": [[0, 1]]}, "1 value"),
    ],
)
def test_universe_table_refusals_say_what_was_given(spec, got):
    with pytest.raises(InvalidParameterError) as info:
        universe_from_spec(spec)
    assert info.value.got == got


def test_metric_universe_checks_the_triangle_inequality():
    with pytest.raises(InvalidParameterError, match="triangle"):
        Universe.from_metric([0, 1, 2], [[0, 1, 5], [1, 0, 1], [5, 1, 0]])
    u = Universe.from_metric([0, 1, 2], [[0, 1, 2], [1, 0, 1], [2, 1, 0]])
    assert len(u.neighbours) == 2


def test_a_universe_whose_distances_would_not_fit_is_refused_before_they_are_built(monkeypatch):
    """m = 20,000 (the largest m) needs about 10 GB of distances: refused in one line under a
    smaller limit, before the shortest paths run (here m = 3000 under 100 MB: 216 MB planned)."""
    monkeypatch.setenv("DPOPT_MEMORY_LIMIT", str(100 * 2**20))
    m = 3000
    edges = [[i, i + 1] for i in range(m - 1)]
    with pytest.raises(InvalidParameterError, match="dataset distances") as info:
        Universe.from_edges(list(range(m)), edges)
    assert info.value.parameter == "universe.values"
    with pytest.raises(InvalidParameterError, match="dataset distances"):
        Universe.from_metric(list(range(m)), np.abs(np.subtract.outer(np.arange(m), np.arange(m))))
    monkeypatch.setenv("DPOPT_MEMORY_LIMIT", str(300 * 2**20))
    assert Universe.from_edges(list(range(m)), edges).size == m


def test_a_csv_universe_is_the_explicit_universe_it_writes_down(tmp_path):
    path = tmp_path / "u.csv"
    path.write_text("value,neighbours\n0,1\n1,0 2\n4,1\n")
    read = universe_from_spec({"type": "csv", "path": str(path)})
    written = universe_from_spec({"type": "explicit", "values": [0, 1, 4], "neighbours": [[0, 1], [1, 2]]})
    np.testing.assert_array_equal(read.values, written.values)
    np.testing.assert_array_equal(read.distances, written.distances)


@pytest.mark.parametrize("text,needle", [
    ("value,neighbours,value\n0,1,7\n1,0,8\n", "repeated: 'value'"),  # pandas reads the second as "value.1"
    ("value,neighbours,neighbours\n0,1,\n1,0,\n", "repeated: 'neighbours'"),
    ("value,links\n0,1\n1,0\n", "columns value, neighbours"),
    ("value,neighbours,prior\n0,1,0.5\n1,0,0.5\n", "no column 'prior'"),  # was read as if it were not there
    ("name,value,neighbours\na,0,1\nb,1,0\n", "no column 'name'"),
])
def test_a_csv_universe_with_a_repeated_or_missing_column_is_refused(tmp_path, text, needle):
    path = tmp_path / "u.csv"
    path.write_text(text)
    with pytest.raises(InvalidParameterError) as info:
        universe_from_spec({"type": "csv", "path": str(path)})
    assert info.value.parameter == "universe.path" and needle in str(info.value)


@settings(max_examples=examples(40), deadline=None)
@given(nodes=st.integers(2, 7), data=st.data())
def test_atlas_class_finds_the_atlas_graph_isomorphic_to_any_graph(nodes, data):
    """The index a release from a graph-atlas universe needs as its true value: checked against
    networkx's isomorphism test on the atlas graph it names, for a random graph given both as a
    networkx graph with other labels and as an edge list in shuffled order."""
    pairs = [(u, v) for u in range(nodes) for v in range(u + 1, nodes)]
    edges = data.draw(st.lists(st.sampled_from(pairs), unique=True)) if pairs else []
    graph = nx.Graph(edges)
    graph.add_nodes_from(range(data.draw(st.integers(max(graph.number_of_nodes(), 0), nodes))))
    index = atlas_class(nx.relabel_nodes(graph, {v: f"node {v}" for v in graph.nodes}), nodes)
    atlas = [g for g in nx.graph_atlas_g() if g.number_of_nodes() == nodes]
    padded = nx.Graph(edges)
    padded.add_nodes_from(range(nodes))
    assert nx.is_isomorphic(atlas[index], padded)
    assert atlas_class([list(e)[::-1] for e in reversed(edges)], nodes) == index
    assert atlas_class(np.array(edges, dtype=np.int64).reshape(-1, 2), nodes) == index  # a numpy array too (empty: (0, 2))
    assert graph_atlas(nodes).values[index] == sum(nx.triangles(padded).values()) / 3


def test_every_atlas_graph_is_its_own_class():
    atlas = [g for g in nx.graph_atlas_g() if g.number_of_nodes() == 6]
    assert [atlas_class(list(g.edges), 6) for g in atlas] == list(range(len(atlas)))


@pytest.mark.parametrize("graph", [[[0, 0]], [[0, 7]], [[0, 1, 2]], "0-1", [[0.5, 1]], [[True, 1]], None, {"edges": []}])
def test_atlas_class_refuses_what_is_not_a_simple_graph_on_its_nodes(graph):
    with pytest.raises(InvalidParameterError, match="'graph' parameter of atlas_class"):
        atlas_class(graph)


def test_atlas_class_refuses_directed_multi_and_too_large_networkx_graphs():
    for graph in (nx.DiGraph([(0, 1)]), nx.MultiGraph([(0, 1), (0, 1)]), nx.complete_graph(8), nx.Graph([(0, 0)])):
        with pytest.raises(InvalidParameterError, match="'graph' parameter of atlas_class"):
            atlas_class(graph)
    with pytest.raises(InvalidParameterError, match="'nodes'"):
        atlas_class([], nodes=8)
