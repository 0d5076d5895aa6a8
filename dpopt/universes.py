"""Finite dataset universes: Wu-Xia-He's dataset metric space (D, d̄) with a query f on it.

A :class:`Universe` holds m datasets, the query value f(x) of each, and the dataset
metric d̄ as an m x m matrix: either the shortest-path distance of a neighbour graph
(edges), or a metric given directly. Neighbours are the pairs at distance <= 1
(Wu-Xia-He Definition 4: "neighbors of distance k if k - 1 < d̄(x, y) <= k").

Sources: inline lists (:meth:`Universe.from_edges`, :meth:`Universe.from_metric`), a
CSV file (:meth:`Universe.from_csv`), and :func:`graph_atlas`: every non-isomorphic
graph on k <= 7 nodes from networkx's graph atlas, with edge-DP between isomorphism
classes (two classes are neighbours iff representatives differ in one edge), the
setting of Wu-Xia-He Section 6.1 (triangle counting on seven-node graphs).
"""

from __future__ import annotations

import csv
import functools
import io
import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from dpopt.dx.metric import first_triangle_violation
from dpopt.limits import MAX_MAGNITUDE, MAX_UNIVERSE, check_memory
from dpopt.validation import check_array, check_choice, check_int, fail, read_text_file

__all__ = ["Universe", "atlas_class", "graph_atlas", "GRAPH_STATISTICS", "hop_distances", "neighbour_graph", "universe_from_spec"]

OWNER = "universe"


def neighbour_graph(size: int, pairs: np.ndarray) -> sparse.csr_array:
    """The undirected graph on ``size`` datasets whose edges are ``pairs`` (k x 2 indices)."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return sparse.coo_array((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(size, size)).tocsr()


def hop_distances(size: int, pairs: np.ndarray) -> np.ndarray:
    """Shortest-path hop counts of :func:`neighbour_graph` (inf between its components)."""
    return csgraph.shortest_path(neighbour_graph(size, pairs), directed=False, unweighted=True)


@dataclass(frozen=True, eq=False)
class Universe:
    """m datasets with query values and a dataset metric.

    Attributes
    ----------
    values : array of shape (m,)
        f(x) for every dataset x.
    distances : array of shape (m, m)
        The dataset metric d̄ (symmetric, zero diagonal, finite: the relation is connected).
    source : str
        How the universe was built (for export and display).
    spec : dict
        A problem-file table that rebuilds it (``type`` first).
    """

    values: np.ndarray
    distances: np.ndarray
    source: str = "explicit"
    spec: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        f = check_array(self.values, "universe.values", OWNER, ndim=1, max_abs=MAX_MAGNITUDE)
        m = _check_universe_size(f.size)
        d = check_array(self.distances, "universe.distances", OWNER, ndim=2, low=0.0, allow_inf=True)
        if d.shape != (m, m) or not np.array_equal(d, d.T) or np.any(np.diag(d) != 0):
            raise fail("universe.distances", OWNER, f"a symmetric {m} x {m} metric with a zero diagonal", d.shape)
        if not np.isfinite(d).all():
            raise fail("universe", OWNER, "a connected neighbour relation (every dataset reachable from every other)", "disconnected")
        if not np.any((d <= 1) & ~np.eye(m, dtype=bool)):
            raise fail("universe", OWNER, "at least one pair of neighbours (distance <= 1)", "none")
        for array in (f, d):
            array.setflags(write=False)
        object.__setattr__(self, "values", f)
        object.__setattr__(self, "distances", d)

    @property
    def size(self) -> int:
        """m, the number of datasets."""
        return int(self.values.size)

    @functools.cached_property
    def neighbours(self) -> np.ndarray:
        """Neighbouring pairs (a, b), a < b, at distance <= 1: shape (pairs, 2)."""
        a, b = np.nonzero(np.triu(self.distances <= 1.0, 1))
        return np.column_stack([a, b])

    @functools.cached_property
    def neighbours_connected(self) -> bool:
        """Whether the neighbours (distance <= 1) connect every dataset: always for edges; a
        metric may leave datasets with no neighbour at all (the ladder needs them connected)."""
        graph = neighbour_graph(self.size, self.neighbours)
        return bool(csgraph.connected_components(graph, directed=False, return_labels=False) == 1)

    @functools.cached_property
    def neighbour_hops(self) -> np.ndarray:
        """Hop distances in the neighbour graph (inf between its components). For a universe
        given by edges that is d̄ itself; a metric's d̄ can be far shorter (a pair at distance
        1.5 may be many hops apart, or in different components)."""
        by_edges = "neighbours" in self.spec or self.spec.get("type") == "graph_atlas"
        return self.distances if by_edges else hop_distances(self.size, self.neighbours)

    @functools.cached_property
    def hops(self) -> np.ndarray:
        """``ceil(d̄)``: the index k of "neighbours of distance k" (Definition 4), as integers."""
        return np.ceil(self.distances - 1e-12).astype(np.int64)

    @classmethod
    def from_edges(cls, values: Any, edges: Any, *, source: str = "explicit") -> "Universe":
        """Datasets 0..m-1 with ``values`` and a neighbour graph; d̄ = shortest-path hops."""
        f = check_array(values, "universe.values", OWNER, ndim=1, max_abs=MAX_MAGNITUDE)
        m = _check_universe_size(f.size)
        pairs = check_array(edges, "universe.neighbours", OWNER, ndim=2, integer=True, low=0)
        if pairs.shape[1:] != (2,) or pairs.size == 0 or pairs.max() >= m or np.any(pairs[:, 0] == pairs[:, 1]):
            raise fail("universe.neighbours", OWNER, f"a non-empty list of [a, b] pairs of distinct datasets in 0..{m - 1}", edges)
        p = pairs.astype(np.int64)
        _check_distance_memory(m)
        distances = hop_distances(m, p)
        spec = {"type": "explicit", "values": f.tolist(), "neighbours": p.tolist()}
        return cls(f, distances, source=source, spec=spec)

    @classmethod
    def from_metric(cls, values: Any, metric: Any) -> "Universe":
        """Datasets with ``values`` and a dataset metric d̄ given as an m x m matrix."""
        d = check_array(metric, "universe.metric", OWNER, ndim=2, low=0.0, max_abs=MAX_MAGNITUDE)
        _check_distance_memory(d.shape[0])
        universe = cls(values, d, spec={"type": "explicit", "values": np.asarray(values, dtype=float).tolist(), "metric": d.tolist()})
        triple = first_triangle_violation(universe.distances)
        if triple is not None:
            i, j, k = triple
            raise fail("universe.metric", OWNER, f"a metric (the triangle inequality fails: d[{i},{j}] > d[{i},{k}] + d[{k},{j}])", d.shape)
        return universe

    @classmethod
    def from_csv(cls, path: str) -> "Universe":
        """A CSV file with columns ``value`` and ``neighbours`` (space-separated dataset indices), one row per dataset.

        Any other column is refused (until 2026-11-29 it was ignored, so a ``prior`` column
        weighed nothing)."""
        import pandas as pd

        text = read_text_file(path, "universe.path", OWNER, max_bytes=64 << 20, what="a CSV universe")
        header = next(csv.reader(io.StringIO(text)), [])
        repeated = sorted({name for name in header if header.count(name) > 1})
        if repeated:  # pandas would keep the first and rename the rest "value.1": silently ignored
            raise fail("universe.path", OWNER, f"a CSV file whose header names each column once (repeated: "
                       f"{', '.join(repr(name) for name in repeated)})", str(path))
        unknown = [name for name in header if name not in CSV_COLUMNS]
        if unknown:  # a "prior" or "outputs" column was read as nothing at all
            raise fail("universe.path", OWNER, f"a CSV file with only the columns {', '.join(CSV_COLUMNS)} (no column "
                       f"{', '.join(repr(name[:40]) for name in unknown[:3])}{', ...' if len(unknown) > 3 else ''}: "
                       "a prior or outputs belong in the problem)", str(path))
        try:
            table = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
            values = table["value"].to_numpy(dtype=float)
            edges = [(i, int(j)) for i, cell in enumerate(table["neighbours"]) for j in cell.split()]
        except (KeyError, ValueError, pd.errors.ParserError):  # messages may quote the file: not echoed
            raise fail("universe.path", OWNER, "a CSV file with columns value, neighbours (space-separated indices)", str(path)) from None
        # its spec is the explicit universe the file holds, not the path: an export then carries
        # the data it was solved on (until 2026-11-29 it named the file, and a file edited since
        # was read back as the universe of an "optimal" mechanism that was not optimal for it)
        return cls.from_edges(values, edges, source=f"csv:{path}")


#: The columns of a CSV universe (:meth:`Universe.from_csv`), each required, no others allowed.
CSV_COLUMNS = ("value", "neighbours")


def _check_universe_size(m: int) -> int:
    """Refuse fewer than two datasets or more than :data:`MAX_UNIVERSE`, naming the count."""
    if not 2 <= m <= MAX_UNIVERSE:
        raise fail("universe.values", OWNER, f"a list of 2 to {MAX_UNIVERSE:,} values (one per dataset)", f"{m:,} value{'' if m == 1 else 's'}")
    return m


def _check_distance_memory(m: int) -> None:
    """Refuse a universe whose m x m distances (float64), hop counts (int64) and their
    validation's temporaries would not fit in :func:`dpopt.limits.memory_limit`, before any
    is built (at the largest m, 20,000: about 10 GB)."""
    check_memory(8.0 * 3 * m * m, "universe.values", OWNER, f"{m:,} datasets", what=f"the {m:,} x {m:,} dataset distances")


# --- the graph atlas (Wu-Xia-He Section 6.1) ----------------------------------------------

def _triangles(graph: Any) -> float:
    import networkx as nx

    return sum(nx.triangles(graph).values()) / 3


def _components(graph: Any) -> float:
    import networkx as nx

    return float(nx.number_connected_components(graph))


#: statistic -> f(graph)
GRAPH_STATISTICS: dict[str, Callable[[Any], float]] = {
    "triangles": _triangles,
    "edges": lambda g: float(g.number_of_edges()),
    "max_degree": lambda g: float(max((d for _, d in g.degree()), default=0)),
    "components": _components,
}


def _invariant(adjacency: np.ndarray) -> tuple[tuple[int, int, int], ...]:
    """An isomorphism invariant: per node (degree, triangles, sum of neighbours' degrees), sorted."""
    degree = adjacency.sum(axis=1)
    triangles = np.diag(adjacency @ adjacency @ adjacency) // 2
    around = adjacency @ degree
    return tuple(sorted(zip(degree.tolist(), triangles.tolist(), around.tolist())))


class _AtlasIndex:
    """The atlas graphs on ``nodes`` nodes (networkx's order), and the class of any graph on them."""

    def __init__(self, nodes: int) -> None:
        import networkx as nx

        self.nodes = nodes
        self.graphs = tuple(g for g in nx.graph_atlas_g() if g.number_of_nodes() == nodes)
        self.adjacency = [nx.to_numpy_array(g, nodelist=range(nodes), dtype=np.int64) for g in self.graphs]
        self.buckets: dict[Any, list[int]] = defaultdict(list)
        for index, a in enumerate(self.adjacency):
            self.buckets[_invariant(a)].append(index)

    def class_of(self, adjacency: np.ndarray) -> int:
        """The index of the atlas graph isomorphic to the graph with this 0/1 ``adjacency``."""
        import networkx as nx

        candidates = self.buckets[_invariant(adjacency)]
        if len(candidates) == 1:
            return candidates[0]
        h = nx.from_numpy_array(adjacency)
        return next(c for c in candidates if nx.is_isomorphic(self.graphs[c], h))


@functools.cache
def _atlas_index(nodes: int) -> _AtlasIndex:
    return _AtlasIndex(nodes)


@functools.cache
def _atlas_classes(nodes: int) -> tuple[tuple[Any, ...], np.ndarray]:
    """The atlas graphs on ``nodes`` nodes and the edge-DP neighbour pairs between their classes."""
    atlas = _atlas_index(nodes)
    pairs = set()
    for index, a in enumerate(atlas.adjacency):
        for u, v in itertools.combinations(range(nodes), 2):
            if a[u, v]:
                continue  # removing an edge is the reverse of adding one: found from the other side
            b = a.copy()
            b[u, v] = b[v, u] = 1
            other = atlas.class_of(b)
            if other != index:
                pairs.add((min(index, other), max(index, other)))
    return atlas.graphs, np.array(sorted(pairs), dtype=np.int64)


def atlas_class(graph: Any, nodes: int = 7) -> int:
    """The dataset index of ``graph`` in :func:`graph_atlas` (``nodes``): its isomorphism class.

    What a release from a graph-atlas universe needs as its true value (``dpopt sample
    --true-value``, ``Solution.sample``): the index of the class the data's graph belongs to.

    Parameters
    ----------
    graph : networkx.Graph or list of [u, v] edges
        An undirected simple graph on at most ``nodes`` nodes: a networkx graph (any node
        labels; missing nodes are isolated), or its edges as pairs of node indices in
        ``0..nodes-1`` (an edge listed twice is one edge; ``[]`` is the empty graph).
    nodes : int
        The atlas universe's number of nodes, 2 to 7.
    """
    k = check_int(nodes, "nodes", "atlas_class", low=2, high=7)
    adjacency = np.zeros((k, k), dtype=np.int64)
    if hasattr(graph, "edges") and hasattr(graph, "nodes"):  # a networkx graph
        if graph.is_directed() or graph.is_multigraph() or graph.number_of_nodes() > k:
            raise fail("graph", "atlas_class", f"an undirected simple graph on at most {k} nodes", graph)
        label = {node: i for i, node in enumerate(graph.nodes)}
        edges = np.array([(label[u], label[v]) for u, v in graph.edges], dtype=np.int64).reshape(-1, 2)
    else:
        empty = isinstance(graph, (list, tuple)) and len(graph) == 0  # [] is 1-D to numpy
        edges = (np.zeros((0, 2), dtype=np.int64) if empty
                 else check_array(graph, "graph", "atlas_class", ndim=2, integer=True, low=0).astype(np.int64))
        if edges.shape[1:] != (2,) or (edges.size and edges.max() >= k):
            raise fail("graph", "atlas_class", f"a list of [u, v] edges between nodes 0..{k - 1}", graph)
    if np.any(edges[:, 0] == edges[:, 1]):
        raise fail("graph", "atlas_class", "a graph without self-loops (a simple graph)", graph)
    adjacency[edges[:, 0], edges[:, 1]] = adjacency[edges[:, 1], edges[:, 0]] = 1
    return _atlas_index(k).class_of(adjacency)


def graph_atlas(nodes: int = 7, statistic: str = "triangles") -> Universe:
    """All non-isomorphic graphs on ``nodes`` nodes (networkx's atlas order), edge-DP between classes.

    Two isomorphism classes are neighbours iff a representative of one becomes a
    representative of the other by adding or removing one edge; d̄ is the hop distance
    between classes. On 7 nodes: 1044 classes (Wu-Xia-He Section 6.1).
    """
    k = check_int(nodes, "universe.nodes", OWNER, low=2, high=7)
    name = check_choice(statistic, "universe.statistic", OWNER, tuple(GRAPH_STATISTICS))
    graphs, pairs = _atlas_classes(k)
    values = np.array([GRAPH_STATISTICS[name](g) for g in graphs])
    universe = Universe.from_edges(values, pairs, source=f"graph_atlas(nodes={k}, statistic={name})")
    return Universe(universe.values, universe.distances, source=universe.source,
                    spec={"type": "graph_atlas", "nodes": k, "statistic": name})


#: universe type -> the fields its table takes
UNIVERSE_TYPES: dict[str, tuple[str, ...]] = {
    "graph_atlas": ("nodes", "statistic"),
    "explicit": ("values", "neighbours", "metric"),
    "csv": ("path",),
}


def universe_from_spec(spec: Any) -> Universe:
    """Build a :class:`Universe` from a problem file's ``[universe]`` table (or pass one through)."""
    if isinstance(spec, Universe):
        return spec
    if not isinstance(spec, dict) or "type" not in spec:
        raise fail("universe", "finite_query", "a table with 'type' (" + ", ".join(UNIVERSE_TYPES) + ")", spec)
    kind = spec["type"]
    if not isinstance(kind, str) or kind not in UNIVERSE_TYPES:
        raise fail("universe.type", "finite_query", "one of " + ", ".join(repr(k) for k in UNIVERSE_TYPES), kind)
    unknown = sorted(set(spec) - {"type", *UNIVERSE_TYPES[kind]})
    if unknown:
        raise fail(f"universe.{unknown[0]}", "finite_query", f"absent: the {kind} universe takes " + ", ".join(UNIVERSE_TYPES[kind]), spec[unknown[0]])
    if kind == "graph_atlas":
        return graph_atlas(spec.get("nodes", 7), spec.get("statistic", "triangles"))
    if kind == "csv":
        return Universe.from_csv(spec.get("path"))
    if ("neighbours" in spec) == ("metric" in spec):
        given = "both" if "neighbours" in spec else "neither"
        raise fail("universe.neighbours", "finite_query", "given, or replaced by 'metric' (exactly one of the two)", given)
    if "values" not in spec:
        raise fail("universe.values", "finite_query", "given (f(x) for every dataset)", None)
    if "metric" in spec:
        return Universe.from_metric(spec["values"], spec["metric"])
    return Universe.from_edges(spec["values"], spec["neighbours"])
